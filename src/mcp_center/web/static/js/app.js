// The settings page's router: #/ (servers), #/new (add from a template), #/import, #/export, #/gateway,
// #/inbox[/<card id>] (approvals and questions waiting for the user, inbox.js; with an id, that
// card gets the focus), and
// #/servers/<id>[/<section>]. Routes live in the fragment, which never reaches the server; no
// secret or token is ever put in it.

import { dismissStaleToast, h, replace } from "./dom.js";
import { renderEditor, TEMPLATES } from "./editor.js";
import { renderExport } from "./exporter.js";
import { createServerFeed } from "./feed.js";
import { renderGateway } from "./gateway.js";
import { renderImport } from "./importer.js";
import { bindInboxBadge, renderInbox, sharedInbox } from "./inbox.js";
import { renderList } from "./list.js";
import { renderServer } from "./server.js";

const main = document.getElementById("main");
const feed = createServerFeed();
const inbox = sharedInbox(feed);
bindInboxBadge(inbox, document.getElementById("inbox-count"));
bindInboxBadge(inbox, document.getElementById("menu-inbox-count"));

// A narrow window folds the main navigation behind a "Menu" button instead of wrapping it over
// several rows; choosing a link folds it again. Wide windows always show it (CSS).
const topbar = document.querySelector(".topbar");
const menuButton = document.querySelector(".menu-toggle");
function setMenu(open) {
  topbar.dataset.menu = open ? "open" : "closed";
  menuButton.setAttribute("aria-expanded", String(open));
}
menuButton.addEventListener("click", () => setMenu(topbar.dataset.menu !== "open"));
document.getElementById("mainnav").addEventListener("click", (event) => {
  if (event.target.closest("a")) setMenu(false);
});
topbar.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && topbar.dataset.menu === "open") {
    setMenu(false);
    menuButton.focus();
  }
});
let cleanup = () => {};
let flash = null;

/**
 * Go to `hash`, carrying `state` (e.g. a notice) to the next view; the same hash redraws it. With
 * `replace`, `hash` takes the place of the current history entry (no hashchange: drawn here), so
 * Back skips the page left: after "Save and review" the add form's `#/new` becomes the new
 * server's address, and Back or a reload never shows an empty add form for a server that exists.
 */
function navigate(hash, state = null, { replace: replacing = false } = {}) {
  flash = state;
  if (window.location.hash === hash) route();
  else if (replacing) {
    history.replaceState(history.state, "", hash);
    route();
  } else window.location.hash = hash;
}

function renderAdd() {
  const editorBox = h("div");
  const chooser = h(
    "fieldset",
    { class: "templates" },
    h("legend", {}, "Start from a template"),
    TEMPLATES.map((template) => {
      const button = h(
        "button",
        { type: "button", class: "template", "data-template": template.key, "aria-pressed": String(template.key === "streamable_http") },
        h("strong", {}, template.title),
        h("span", {}, template.text),
      );
      button.addEventListener("click", () => {
        for (const other of chooser.querySelectorAll(".template")) other.setAttribute("aria-pressed", String(other === button));
        editor.applyTemplate(template);
        editor.focusFirst();
      });
      return button;
    }),
  );
  replace(
    main,
    h("h1", { tabindex: "-1" }, "Add a server"),
    h("p", { class: "lede" }, "A new server starts untrusted and disabled. After saving you review its connection summary, confirm it, test it, and then enable it."),
    chooser,
    editorBox,
  );
  const editor = renderEditor(editorBox, {
    mode: "create",
    onSaved(view) {
      feed.refresh();
      navigate(
        `#/servers/${encodeURIComponent(view.id)}`,
        { notice: "New server: review what it will run or contact, then confirm, test and enable it." },
        { replace: true },
      );
    },
  });
  return () => {};
}

// Each route() call is one generation. A server page waits for the server's record before drawing,
// so two routes can overlap (two quick clicks, a redraw after saving while a link is followed): a
// render whose generation is no longer the latest never writes the page, and its subscriptions end.
let generation = 0;

async function route() {
  generation += 1;
  const mine = generation;
  const current = () => mine === generation;
  dismissStaleToast();
  cleanup();
  cleanup = () => {};
  const state = flash;
  flash = null;
  const path = (window.location.hash || "#/").slice(1);
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  for (const link of document.querySelectorAll("[data-nav]")) {
    const current = (parts[0] || "servers") === link.dataset.nav || (parts[0] === "servers" && link.dataset.nav === "servers");
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (parts.length === 0) {
    document.title = "Servers · mcp-center";
    cleanup = renderList(main, { feed, notice: state && state.notice });
  } else if (parts[0] === "new") {
    document.title = "Add a server · mcp-center";
    cleanup = renderAdd();
  } else if (parts[0] === "import") {
    document.title = "Import · mcp-center";
    cleanup = renderImport(main, { feed, navigate });
  } else if (parts[0] === "inbox") {
    document.title = "Inbox · mcp-center";
    cleanup = renderInbox(main, { inbox, focusId: parts[1] || null });
  } else if (parts[0] === "export") {
    document.title = "Export · mcp-center";
    cleanup = renderExport(main);
  } else if (parts[0] === "gateway") {
    document.title = "Gateway · mcp-center";
    cleanup = renderGateway(main);
  } else if (parts[0] === "servers" && parts[1]) {
    document.title = `${parts[1]} · mcp-center`;
    const drawn = await renderServer(main, { id: parts[1], section: parts[2] || "", feed, navigate, flash: state, current });
    if (!current()) {
      drawn(); // a newer route owns the page now (and has already run the cleanup it found)
      return;
    }
    cleanup = drawn;
  } else {
    replace(main, h("h1", { tabindex: "-1" }, "Not found"), h("a", { href: "#/" }, "Back to the servers"));
  }
  // Move focus to the new view's heading (screen readers announce it) unless a control took it.
  if (!main.contains(document.activeElement) || document.activeElement === main) {
    main.querySelector("h1")?.focus({ preventScroll: false });
  }
}

window.addEventListener("hashchange", route);
route();
