// One server's page: a header with its live state and a "Logs" button (the logs drawer), section
// links (Overview, Configuration, Tools, Prompts, Resources, Activity, Console, Approvals,
// Authorization), and the section. Activity and Console are the debugger (debug.js, R-12.1).
// `#/servers/<id>/logs` opens the overview with the logs drawer open.

import { servers } from "./api.js";
import { authCallout, renderAuth } from "./auth.js";
import { catalogCard } from "./catalog.js";
import { renderActivity, renderConsole, serverInfoCard } from "./debug.js";
import { confirmDialog, h, replace, settledWithin, toast } from "./dom.js";
import { renderEditor } from "./editor.js";
import { errorText, stateBadge, transportLabel, usefulStderrLine, warningsBox } from "./format.js";
import { renderCards, sharedInbox } from "./inbox.js";
import { instancesCard } from "./instances.js";
import { openLogsDrawer } from "./logs.js";
import { renderPrompts } from "./prompts.js";
import { renderResources } from "./resources.js";
import { setupSteps } from "./summary.js";
import { renderTools } from "./tools.js";

/** Sections of a server page: [path segment, label]. */
export const SECTIONS = [
  ["", "Overview"],
  ["config", "Configuration"],
  ["tools", "Tools"],
  ["prompts", "Prompts"],
  ["resources", "Resources"],
  ["activity", "Activity"],
  ["console", "Console"],
  ["approvals", "Approvals"],
  ["auth", "Authorization"],
];

function statusCard(view) {
  const status = view.status || {};
  const items = [
    ["State", stateBadge(view)],
    ["Tools", status.tool_count ?? "–"],
  ];
  if (status.server_name) items.push(["Server reports", `${status.server_name} ${status.server_version || ""} · protocol ${status.protocol_version || "?"}`]);
  if (status.state === "error" && status.error) {
    items.push(["Last error", `${status.error.code} · ${errorText(status.error)}`]);
    const tail = status.error.details && status.error.details.stderr_tail;
    const line = usefulStderrLine(tail);
    if (line) items.push(["Server stderr says", h("code", { class: "stderr-line" }, line)]);
    if (Array.isArray(tail) && tail.length) {
      items.push(["Last stderr lines", h("details", {}, h("summary", {}, `Show all ${tail.length} lines`), h("pre", { class: "stderr-tail" }, tail.join("\n")))]);
    }
  }
  // A server the runtime never saw reads as "disconnected since now": only a real state has a since.
  if (status.since && status.state && status.state !== "disconnected") items.push(["Since", new Date(status.since).toLocaleString()]);
  if (status.state === "error" && status.next_attempt_at) {
    const when = new Date(status.next_attempt_at).toLocaleTimeString();
    items.push(["Next attempt", `${when} (by itself, attempt ${status.attempt + 1}; "Refresh catalog" tries now)`]);
  } else if (status.state === "error") {
    items.push(["Next attempt", "none: this needs you (see the error)"]);
  }
  // "authorization required" / "more scopes required": an Authorize call to action (R-4.9).
  return [authCallout(view), h("dl", { class: "status" }, items.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]))];
}

/**
 * Ids of the servers deleted from this tab. A page of one of them that is still in the history (Back
 * to its Tools tab) shows the server list with a notice instead of "Server not found", and never
 * the server as if it existed; an id leaves the set once a server of that id is read again.
 */
const deletedHere = new Set();

/**
 * Draw the page of server `id`, section `section`, into `main`.
 * Returns a cleanup function. `flash` may carry a notice to show (why a confirmation is needed).
 * `current()` says whether this render is still the page's latest route (app.js): once the server's
 * record arrives, a render that is no longer current leaves `main` alone and returns a no-op cleanup.
 */
export async function renderServer(main, { id, section, feed, navigate, flash, current = () => true }) {
  let view;
  try {
    view = await servers.get(id);
  } catch (err) {
    if (!current()) return () => {};
    if (err.code === "MCP_SERVER_NOT_FOUND" && deletedHere.has(id)) {
      // Back (or a link) to a page of a server deleted in this tab: the list, in its place.
      navigate("#/", { notice: `${id} was deleted.` }, { replace: true });
      return () => {};
    }
    replace(main, h("h1", { tabindex: "-1" }, "Server not found"), h("p", { class: "alert alert-error", role: "alert" }, `${err.code}: ${err.message}`), h("a", { href: "#/" }, "Back to the servers"));
    return () => {};
  }
  deletedHere.delete(id); // created again since
  if (!current()) return () => {};
  const base = `#/servers/${encodeURIComponent(id)}`;
  const headState = h("span", { class: "head-state" }, stateBadge(view));
  const content = h("div", { class: "section" });
  const title = h("h1", { tabindex: "-1" }, view.name);
  const logsButton = h("button", { type: "button", "aria-haspopup": "dialog", class: "logs-button" }, "Logs");
  let closeLogs = null;
  const showLogs = () => {
    closeLogs = openLogsDrawer(view, {
      feed,
      onClose() {
        closeLogs = null;
        // Closing the drawer opened by a #/.../logs link leaves the overview's address (no redraw).
        if (window.location.hash === `${base}/logs`) history.replaceState(null, "", base);
      },
    });
  };
  logsButton.addEventListener("click", showLogs);
  replace(
    main,
    h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Servers"), " / ", view.id),
    h("div", { class: "page-head" }, title, h("span", { class: "head-tools" }, headState, logsButton)),
    h(
      "p",
      { class: "subtitle" },
      `${view.id} · ${transportLabel(view.transport)}`,
      view.transport === "stdio" ? ` · ${view.sandbox ? `sandboxed, network ${view.sandbox.network}` : "unconfined (no sandbox: it runs with the rights of mcp-center's user)"}` : "",
    ),
    h(
      "nav",
      { class: "tabs", "aria-label": "Server sections" },
      SECTIONS.map(([key, label]) =>
        h("a", { href: key ? `${base}/${key}` : base, "aria-current": key === (section === "logs" ? "" : section) ? "page" : null }, label),
      ),
    ),
    content,
  );

  let statusBox = null;
  let instances = null;
  let catalog = null;
  let infoCard = null;
  let steps = null;
  let cleanupSection = () => {};
  let overviews = 0;
  const unsubscribe = feed.subscribe((list) => {
    const fresh = list.find((s) => s.id === id);
    if (!fresh) return;
    replace(headState, stateBadge(fresh));
    if (statusBox) replace(statusBox, statusCard(fresh));
    if (instances) instances.refresh();
    if (catalog) catalog.update(fresh);
    if (infoCard) infoCard.update(fresh);
    if (steps) steps.update(fresh);
  });

  async function overview({ notice, focus, said } = {}) {
    overviews += 1;
    const mine = overviews;
    statusBox = h("div", { class: "card" }, statusCard(view));
    instances = instancesCard(id);
    if (catalog) catalog.off();
    catalog = catalogCard(view, { feed });
    infoCard = serverInfoCard(view);
    steps = setupSteps(view, {
      notice,
      said,
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
        deletedHere.add(view.id);
        // The list takes the deleted server's place in the history: Back goes where you were before it.
        navigate("#/", null, { replace: true });
      } catch (err) {
        toast(`${err.code}: ${err.message}`);
        if (err.code === "MCP_SERVER_VERSION_CONFLICT") {
          view = await servers.get(id);
          await overview({ notice: "This server changed since you opened it; review it before deleting." });
        }
      }
    });
    // The cards' first answers come before the overview is drawn: drawn half-loaded, each answer grew
    // a card and moved what is below it (the steps' buttons, Delete) under a pointer about to press
    // it, and a click whose press and release landed on different elements was lost (issue 16). A card
    // whose request hangs or that throws holds the page back FIRST_DRAW_WAIT_MS at most.
    await settledWithin([instances.settled, infoCard.settled, catalog.settled]);
    if (mine !== overviews || !current()) return; // a newer overview (or page) owns the section
    replace(
      content,
      h("section", { "aria-labelledby": "status-title" }, h("h2", { id: "status-title" }, "Status"), view.trusted ? warningsBox(view) : null, statusBox),
      instances.element,
      // A running server's catalog matters most; a server still being set up shows its next step first.
      view.enabled ? [infoCard.element, catalog.element, steps.element] : [steps.element, infoCard.element, catalog.element],
      h("section", { class: "danger-zone", "aria-labelledby": "danger-title" }, h("h2", { id: "danger-title" }, "Delete"), del),
    );
    if (focus) steps.focus(focus);
  }

  if (section === "" || section === "logs") {
    await overview({ notice: flash && flash.notice });
    if (section === "logs" && current()) showLogs();
    else if (!view.trusted) content.querySelector(".setup")?.scrollIntoView({ block: "start" });
  } else if (section === "config") {
    statusBox = null;
    instances = null;
    steps = null;
    renderEditor(content, {
      mode: "edit",
      view,
      onSaved(saved) {
        feed.refresh();
        // Trust is invalidated exactly when the summary digest changed (R-1.4).
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
      feed,
      onPermissionsChanged() {
        navigate(base, { notice: "Tool permissions changed: confirm the new summary, then test and enable again." });
      },
    });
  } else if (section === "prompts") {
    await renderPrompts(content, view);
  } else if (section === "resources") {
    await renderResources(content, view);
  } else if (section === "auth") {
    cleanupSection = renderAuth(content, view, { feed, base });
  } else if (section === "activity") {
    cleanupSection = await renderActivity(content, view, { feed });
  } else if (section === "console") {
    cleanupSection = await renderConsole(content, view);
  } else if (section === "approvals") {
    // This server's approvals and questions (inbox.js, R-5.3, R-6); policies are set on the Tools tab.
    const box = h("div");
    replace(
      content,
      h("p", { class: "hint" }, "Agent calls of tools whose policy is ask wait here; set ask / allow / deny per tool on the ", h("a", { href: `${base}/tools` }, "Tools tab"), "."),
      box,
    );
    cleanupSection = renderCards(box, { inbox: sharedInbox(feed), serverId: id });
  } else {
    replace(content, h("p", { class: "alert alert-error" }, "No such section."));
  }
  return () => {
    unsubscribe();
    cleanupSection();
    if (catalog) catalog.off();
    if (closeLogs) closeLogs();
  };
}
