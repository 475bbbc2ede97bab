// The catalog facts of a server: items per category with their refresh generation,
// the items the host quarantined because the server sent them malformed (agents never see them),
// and the last refresh error of a category whose list is older than a failed refresh.
//
// The catalog lives in the server's session, so it is read only while the server is ready (reading
// it otherwise would start a connection just because someone looked); "Refresh catalog" re-lists
// every category on purpose. A `server.catalog` event for this server reloads it.

import { servers } from "./api.js";
import { h, replace } from "./dom.js";

export const CATEGORIES = [
  ["tools", "Tools", "tool"],
  ["prompts", "Prompts", "prompt"],
  ["resources", "Resources", "resource"],
  ["resource_templates", "Resource templates", "resource template"],
];

/** The quarantined items of a catalog as a warning box, or null when there are none. */
export function quarantineNotice(quarantined, { only } = {}) {
  const items = (quarantined || []).filter((q) => !only || q.category === only);
  if (!items.length) return null;
  const singular = Object.fromEntries(CATEGORIES.map(([key, , one]) => [key, one]));
  return h(
    "div",
    { class: "alert alert-warn quarantine", role: "note", "data-testid": "quarantined" },
    h(
      "p",
      {},
      h("strong", {}, `${items.length} ${items.length === 1 ? "item" : "items"} quarantined. `),
      "The server sent them malformed, so mcp-center dropped them: agents never see them. Fix the server, then refresh the catalog.",
    ),
    h(
      "ul",
      {},
      items.map((q) =>
        h(
          "li",
          { "data-name": q.name ?? "" },
          `${singular[q.category] || q.category} #${q.index + 1} `,
          q.name ? h("code", {}, q.name) : h("span", { class: "muted" }, "(no name)"),
          `: ${q.reason}`,
        ),
      ),
    ),
  );
}

function factsTable(catalog) {
  return h(
    "table",
    { class: "catalog-counts" },
    h("caption", { class: "visually-hidden" }, "Catalog items per category"),
    h("thead", {}, h("tr", {}, ["Category", "Items", "Quarantined", "Refreshes", "Last refresh"].map((c) => h("th", { scope: "col" }, c)))),
    h(
      "tbody",
      {},
      CATEGORIES.map(([key, label]) => {
        const error = catalog.errors && catalog.errors[key];
        const refreshes = (catalog.generation || {})[key] ?? 0;
        const kept = refreshes ? "the previous list is kept" : "no list yet";
        const dropped = (catalog.quarantined || []).filter((q) => q.category === key).length;
        return h(
          "tr",
          { "data-category": key },
          h("th", { scope: "row" }, label),
          h("td", { "data-label": "Items" }, String((catalog[key] || []).length)),
          h("td", { "data-label": "Quarantined", class: dropped ? "warn" : "" }, String(dropped)),
          h("td", { "data-label": "Refreshes" }, String(refreshes)),
          h(
            "td",
            { "data-label": "Last refresh" },
            error ? h("span", { class: "bad" }, `failed: ${error.code} (${kept})`) : h("span", { class: "ok" }, refreshes ? "ok" : "not listed"),
          ),
        );
      }),
    ),
  );
}

/**
 * The catalog card of a server page. `update(view)` is called with every fresh view (status
 * changes); it loads the catalog when the server becomes ready. Returns {element, update, off,
 * settled}: `settled` resolves once the first load (if the server is ready now) is drawn, answer or
 * error; it never rejects.
 */
export function catalogCard(initial, { feed }) {
  let view = initial;
  let wasReady = false;
  let loading = null;
  const body = h("div", { class: "catalog-body" });
  const refreshButton = h("button", { type: "button" }, "Refresh catalog");
  const element = h(
    "section",
    { "aria-labelledby": "catalog-title", class: "catalog" },
    h("h2", { id: "catalog-title" }, "Catalog"),
    h("div", { class: "card" }, body, h("div", { class: "actions" }, refreshButton)),
  );

  function waiting() {
    const state = (view.status && view.status.state) || "disconnected";
    refreshButton.hidden = !view.enabled;
    if (!view.enabled) {
      replace(body, h("p", { class: "muted" }, "The catalog is read from the live session: enable the server to see it."));
    } else if (state === "error") {
      replace(body, h("p", { class: "muted" }, "Not connected (see the error above). Refresh the catalog to connect again."));
    } else {
      replace(body, h("p", { class: "muted" }, state === "connecting" ? "Connecting…" : "Not connected yet: it connects on first use or when you refresh the catalog."));
    }
  }

  async function load({ refresh = false } = {}) {
    if (loading) return loading;
    refreshButton.setAttribute("aria-busy", "true");
    loading = servers
      .catalog(view.id, { refresh })
      .then((catalog) => {
        const errors = CATEGORIES.filter(([key]) => catalog.errors && catalog.errors[key]);
        replace(
          body,
          factsTable(catalog),
          quarantineNotice(catalog.quarantined),
          errors.length
            ? h(
                "div",
                { class: "alert alert-error", role: "note" },
                errors.map(([key, label]) =>
                  h(
                    "p",
                    {},
                    `${label}: the last refresh failed (${catalog.errors[key].code}: ${catalog.errors[key].message}); `,
                    (catalog.generation || {})[key] ? "agents see the previous list." : "agents see none until a refresh works.",
                  ),
                ),
              )
            : null,
        );
      })
      .catch((err) => {
        replace(body, h("p", { class: "alert alert-error", role: "alert" }, `${err.code}: ${err.message}`));
      })
      .finally(() => {
        loading = null;
        refreshButton.removeAttribute("aria-busy");
      });
    return loading;
  }

  refreshButton.addEventListener("click", () => load({ refresh: true }));

  function update(fresh) {
    view = fresh;
    const ready = Boolean(view.enabled && view.status && view.status.state === "ready");
    if (ready && !wasReady) load();
    else if (!ready && !loading) waiting();
    wasReady = ready;
  }

  let timer = null;
  const off = feed.onEvent((event) => {
    if (event.type === "server.catalog" && event.server_id === view.id) {
      clearTimeout(timer);
      timer = setTimeout(() => load(), 200);
    }
  });
  update(view);
  return {
    element,
    update,
    settled: loading || Promise.resolve(),
    off() {
      off();
      clearTimeout(timer);
    },
  };
}
