// One server's page: a header with its state, section links (Overview, Configuration, Tools, and the
// sections other work will fill), and the section itself.

import { servers } from "./api.js";
import { confirmDialog, h, replace, toast } from "./dom.js";
import { renderEditor } from "./editor.js";
import { errorText, stateBadge, transportLabel } from "./format.js";
import { setupSteps } from "./summary.js";
import { renderTools } from "./tools.js";

/** Sections of a server page: [path segment, label]. */
export const SECTIONS = [
  ["", "Overview"],
  ["config", "Configuration"],
  ["tools", "Tools"],
  ["prompts", "Prompts"],
  ["resources", "Resources"],
  ["approvals", "Approvals"],
  ["logs", "Logs"],
  ["auth", "Authorization"],
];

/** What each section not built yet will do, and which work brings it. Shown as-is: nothing here pretends to work. */
export const NOT_YET = {
  prompts: ["Prompts", "Each prompt as /server:prompt with a form for its arguments and the returned block.", "the capabilities work (issue 5)"],
  resources: ["Resources", "Search resources and templates with @, read one and see where it came from.", "the capabilities work (issue 5)"],
  approvals: ["Approvals and elicitation", "Pending tool-call approvals and elicitation forms as cards with accept / decline / cancel, kept across page reloads; per-tool ask / allow / deny.", "the capabilities work (issue 5)"],
  logs: ["Logs", "The last 50 requests and responses of this server (method, timing, status, sizes, redacted), a filter, JSON export, and the stderr of stdio servers.", "the connection manager work (issue 3)"],
  auth: ["Authorization", "An Authorize button that shows the issuer and scopes, opens the OAuth flow in a new window and shows the result; clear states for 'authorization required' and 'more scopes required'.", "the OAuth work (issue 4)"],
  import: ["Import", "Paste a Claude Code, Cursor, Claude Desktop or VS Code configuration, see the preview (what is created, which values become secrets, what is rejected), supply variables and secrets, then apply.", "the import work (issue 6)"],
};

/** A clearly marked "not available yet" panel for a section another piece of work will build. */
export function notYet(key) {
  const [title, what, by] = NOT_YET[key];
  return h(
    "section",
    { class: "placeholder", "aria-labelledby": `placeholder-${key}` },
    h("h2", { id: `placeholder-${key}` }, `${title}: not available yet`),
    h("p", {}, what),
    h("p", { class: "muted" }, `This section arrives with ${by}. Until then use the REST API or the CLI where they offer it.`),
  );
}

function statusCard(view) {
  const status = view.status || {};
  const items = [
    ["State", stateBadge(view)],
    ["Tools", status.tool_count ?? "–"],
  ];
  if (status.server_name) items.push(["Server reports", `${status.server_name} ${status.server_version || ""} · protocol ${status.protocol_version || "?"}`]);
  if (status.state === "error" && status.error) items.push(["Last error", `${status.error.code} · ${errorText(status.error)}`]);
  return h("dl", { class: "status" }, items.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

/**
 * Draw the page of server `id`, section `section`, into `main`.
 * Returns a cleanup function. `flash` may carry a notice to show (why a confirmation is needed).
 */
export async function renderServer(main, { id, section, feed, navigate, flash }) {
  let view;
  try {
    view = await servers.get(id);
  } catch (err) {
    replace(main, h("h1", { tabindex: "-1" }, "Server not found"), h("p", { class: "alert alert-error", role: "alert" }, `${err.code}: ${err.message}`), h("a", { href: "#/" }, "Back to the servers"));
    return () => {};
  }
  const base = `#/servers/${encodeURIComponent(id)}`;
  const headState = h("span", { class: "head-state" }, stateBadge(view));
  const content = h("div", { class: "section" });
  const title = h("h1", { tabindex: "-1" }, view.name);
  replace(
    main,
    h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Servers"), " / ", view.id),
    h("div", { class: "page-head" }, title, headState),
    h("p", { class: "subtitle" }, `${view.id} · ${transportLabel(view.transport)}`),
    h(
      "nav",
      { class: "tabs", "aria-label": "Server sections" },
      SECTIONS.map(([key, label]) =>
        h("a", { href: key ? `${base}/${key}` : base, "aria-current": key === section ? "page" : null, class: NOT_YET[key] ? "later" : null }, label),
      ),
    ),
    content,
  );

  let statusBox = null;
  const unsubscribe = feed.subscribe((list) => {
    const fresh = list.find((s) => s.id === id);
    if (!fresh) return;
    replace(headState, stateBadge(fresh));
    if (statusBox) replace(statusBox, statusCard(fresh));
  });

  async function overview({ notice, focus } = {}) {
    statusBox = h("div", { class: "card" }, statusCard(view));
    const steps = setupSteps(view, {
      notice,
      reload: async (opts = {}) => {
        view = await servers.get(id);
        feed.refresh();
        await overview(opts);
      },
    });
    const del = h("button", { type: "button", class: "danger" }, "Delete server");
    del.addEventListener("click", async () => {
      const ok = await confirmDialog({
        title: `Delete ${view.name}?`,
        text: "Its configuration, secrets, trust and test result are deleted and its connection closes. This cannot be undone.",
        ok: "Delete",
      });
      if (!ok) return;
      try {
        await servers.remove(view.id, view.version);
        toast(`${view.name} deleted.`);
        feed.refresh();
        navigate("#/");
      } catch (err) {
        toast(`${err.code}: ${err.message}`);
        if (err.code === "MCP_SERVER_VERSION_CONFLICT") {
          view = await servers.get(id);
          await overview({ notice: "This server changed since you opened it; review it before deleting." });
        }
      }
    });
    replace(
      content,
      h("section", { "aria-labelledby": "status-title" }, h("h2", { id: "status-title" }, "Status"), statusBox),
      steps.element,
      h("section", { class: "danger-zone", "aria-labelledby": "danger-title" }, h("h2", { id: "danger-title" }, "Delete"), del),
    );
    if (focus) steps.focus(focus);
  }

  if (section === "") {
    await overview({ notice: flash && flash.notice });
    if (!view.trusted) content.querySelector(".setup")?.scrollIntoView({ block: "start" });
  } else if (section === "config") {
    statusBox = null;
    renderEditor(content, {
      mode: "edit",
      view,
      onSaved(saved) {
        feed.refresh();
        // Trust is invalidated exactly when the summary digest changed.
        if (!saved.trusted && saved.digest !== view.digest) {
          navigate(base, { notice: "This change touched something security-relevant: confirm the new summary, then test and enable again." });
        } else {
          toast("Saved.");
          navigate(`${base}/config`);
        }
      },
    });
  } else if (section === "tools") {
    await renderTools(content, view, {
      onPermissionsChanged() {
        navigate(base, { notice: "Tool permissions changed: confirm the new summary, then test and enable again." });
      },
    });
  } else if (NOT_YET[section]) {
    replace(content, notYet(section));
  } else {
    replace(content, h("p", { class: "alert alert-error" }, "No such section."));
  }
  return unsubscribe;
}
