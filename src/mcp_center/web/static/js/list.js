// The server list: name, transport, state badge with the attributed error, tool count, enabled
// switch, trust/test and the last test. Rows are keyed by server id and updated in place on every
// change the live feed reports, so keyboard focus on a switch survives the updates.

import { servers } from "./api.js";
import { authorizeLink } from "./auth.js";
import { h, replace, toast } from "./dom.js";
import { POLL_INTERVAL_MS } from "./feed.js";
import { lastTestText, needsText, stateBadge, transportLabel } from "./format.js";

const COLUMNS = ["Server", "Transport", "State", "Tools", "Trusted / tested", "Last test", "Enabled"];

const FEED_TEXT = {
  connecting: "Connecting to live updates…",
  live: "Live: changes appear as they happen.",
  polling: `Live updates are unavailable: refreshing every ${POLL_INTERVAL_MS / 1000} s and trying again.`,
};

/** A one-line indicator of how the page learns about changes (data-feed-mode says it to tests too). */
export function feedIndicator(feed) {
  const line = h("p", { class: "hint feed-state" });
  const off = feed.onMode((mode) => {
    line.dataset.feedMode = mode;
    line.textContent = FEED_TEXT[mode] || mode;
  });
  return { element: line, off };
}

/** Draw the list into `main` (with an optional `notice` on top); returns a cleanup function (unsubscribes from the feed). */
export function renderList(main, { feed, notice }) {
  const tbody = h("tbody");
  const empty = h(
    "div",
    { class: "empty", hidden: true },
    h("p", {}, "No servers yet. Every server starts untrusted and disabled: you review what it will run or contact, confirm, test, then enable it."),
    h("a", { class: "button primary", href: "#/new" }, "Add a server"),
  );
  const table = h(
    "table",
    { class: "servers" },
    h("caption", { class: "visually-hidden" }, "Registered MCP servers"),
    h("thead", {}, h("tr", {}, COLUMNS.map((c) => h("th", { scope: "col" }, c)))),
    tbody,
  );
  const indicator = feedIndicator(feed);
  replace(
    main,
    h(
      "div",
      { class: "page-head" },
      h("h1", { tabindex: "-1" }, "Servers"),
      h("a", { class: "button primary", href: "#/new" }, "Add server"),
    ),
    notice ? h("p", { class: "alert alert-info", role: "status" }, notice) : null,
    indicator.element,
    empty,
    h("div", { class: "table-wrap" }, table),
  );

  const rows = new Map();

  function update(list) {
    empty.hidden = list.length > 0;
    table.hidden = list.length === 0;
    const seen = new Set();
    for (const view of list) {
      seen.add(view.id);
      let row = rows.get(view.id);
      if (!row) {
        row = createRow(view.id, feed);
        rows.set(view.id, row);
      }
      fillRow(row, view);
      tbody.append(row.tr); // keeps sorted order (the API sorts by id); moving keeps focus
    }
    for (const [id, row] of rows) {
      if (!seen.has(id)) {
        row.tr.remove();
        rows.delete(id);
      }
    }
  }

  const unsubscribe = feed.subscribe(update);
  return () => {
    unsubscribe();
    indicator.off();
  };
}

function createRow(id, feed) {
  const link = h("a", { href: `#/servers/${encodeURIComponent(id)}` });
  const idText = h("span", { class: "server-id" });
  const cells = {
    name: h("td", { "data-label": "Server" }, h("span", {}, link, " ", idText)),
    transport: h("td", { "data-label": "Transport" }),
    state: h("td", { "data-label": "State" }),
    tools: h("td", { "data-label": "Tools" }),
    trust: h("td", { "data-label": "Trusted / tested" }),
    test: h("td", { "data-label": "Last test" }),
    enabled: h("td", { "data-label": "Enabled" }),
  };
  const toggle = h("button", { type: "button", role: "switch", class: "switch" }, h("span", { class: "switch-knob" }));
  const setup = h("a", { class: "setup-link", href: `#/servers/${encodeURIComponent(id)}` });
  cells.enabled.append(h("span", { class: "enabled-cell" }, toggle, " ", setup));
  const row = { tr: h("tr", { "data-server": id }, Object.values(cells)), cells, link, idText, toggle, setup, view: null };
  toggle.addEventListener("click", async () => {
    const view = row.view;
    if (!view || toggle.getAttribute("aria-disabled") === "true") return;
    toggle.setAttribute("aria-busy", "true");
    try {
      const after = view.enabled ? await servers.disable(view.id) : await servers.enable(view.id);
      toast(after.enabled ? `${after.name} enabled` : `${after.name} disabled`);
    } catch (err) {
      toast(`${view.name}: ${err.message}`);
    } finally {
      toggle.removeAttribute("aria-busy");
      feed.refresh();
    }
  });
  return row;
}

/** What "unconfined" means, where it is shown. */
export const UNCONFINED_MEANS = "unconfined: no sandbox; the server runs with the rights of mcp-center's user (its files, network and processes)";

/** " · sandboxed" / " · unconfined" for stdio servers, nothing for remote ones. */
function sandboxSuffix(view) {
  if (view.transport !== "stdio") return "";
  return view.sandbox ? ` · sandboxed (network ${view.sandbox.network})` : " · unconfined";
}

function fillRow(row, view) {
  row.view = view;
  row.link.textContent = view.name;
  row.idText.textContent = view.id;
  row.cells.transport.textContent = transportLabel(view.transport) + sandboxSuffix(view);
  // The word alone does not say what it means (ux35): the cell's tooltip does.
  row.cells.transport.title = view.transport === "stdio" && !view.sandbox ? UNCONFINED_MEANS : "";
  replace(row.cells.state, stateBadge(view), authorizeLink(view)); // "authorization required": Authorize
  const count = view.status && view.status.tool_count;
  row.cells.tools.textContent = count === null || count === undefined ? "–" : String(count);
  replace(
    row.cells.trust,
    h(
      "span",
      {},
      h("span", { class: view.trusted ? "ok" : "warn" }, view.trusted ? "trusted" : "not trusted"),
      " / ",
      h("span", { class: view.tested ? "ok" : "warn" }, view.tested ? "tested" : "not tested"),
    ),
  );
  // A failed test's message can be long (a path, a stderr line): one clipped line, the whole of it on hover.
  const testText = lastTestText(view.last_test);
  replace(row.cells.test, h("span", { class: "clip", title: testText }, testText));
  row.cells.test.className = view.last_test && !view.last_test.ok ? "bad" : "";
  const blocked = !view.enabled && view.needs.some((n) => n !== "enable");
  row.toggle.setAttribute("aria-checked", String(view.enabled));
  row.toggle.setAttribute("aria-label", `Enabled: ${view.name}`);
  row.toggle.setAttribute("aria-disabled", String(blocked));
  row.toggle.title = blocked ? `Needs ${needsText(view.needs)} first` : view.enabled ? "Disable" : "Enable";
  row.setup.textContent = blocked ? "Set up" : "";
  row.setup.hidden = !blocked;
}
