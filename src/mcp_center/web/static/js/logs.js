// The logs drawer of one server: its last 50 requests/responses — method, direction,
// status, timing, sizes, error, connection; never parameters or results — and the last stderr
// lines of a stdio server, all redacted by the host before they reach the page. A filter narrows
// both; "Export JSON" downloads exactly what the API holds (GET .../logs?download=true).
//
// The drawer is a modal <dialog>: focus moves into it, Tab stays inside, Escape or "Close" shuts it
// and focus returns to the button that opened it. While it is open it refreshes itself when the
// server's status changes (a crash shows its last call at once), and on "Refresh".

import { servers } from "./api.js";
import { h, replace, uid } from "./dom.js";

const DIRECTIONS = { "client→server": "to server", "server→client": "from server" };
const COLUMNS = ["Time", "Method", "Direction", "Status", "Duration", "Sizes", "Connection", "Error"];

function clock(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso || "";
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

function bytes(n) {
  if (n === null || n === undefined) return "–";
  return n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KiB`;
}

/** The short name of a connection: "test" for the temporary test connection, else 8 hex digits. */
function connectionName(id) {
  if (!id) return "–";
  return id.startsWith("test-") ? "test" : id.slice(0, 8);
}

function errorOf(entry) {
  if (!entry.error) return "";
  return entry.error.code === null || entry.error.code === undefined
    ? entry.error.message
    : `${entry.error.code}: ${entry.error.message}`;
}

/** What the filter matches for a request entry: every visible field, lowercased. */
function haystack(entry) {
  return [
    entry.method,
    entry.status,
    entry.kind,
    entry.direction,
    DIRECTIONS[entry.direction],
    entry.request_id,
    entry.connection_id,
    connectionName(entry.connection_id),
    errorOf(entry),
    entry.violation ? `sandbox violation ${entry.violation.kind} ${entry.violation.errno}` : null,
  ]
    .filter((v) => v !== null && v !== undefined)
    .join(" ")
    .toLowerCase();
}

/** The badge of a sandbox violation: what the sandbox refused, by its errno. */
function violationBadge(violation) {
  if (!violation) return null;
  return h(
    "span",
    { class: "badge violation-badge", title: "The sandbox refused this (a path outside its view, the network, a limit)" },
    `sandbox: ${violation.kind} (${violation.errno})`,
  );
}

function matches(text, query) {
  return query.every((word) => text.includes(word));
}

/**
 * A method name that may wrap only after a "/" (`resources/<wbr>list`), never inside a word: the
 * table squeezes its columns, and `code` may otherwise break anywhere ("resources/lis t").
 */
function methodName(method) {
  const parts = method.split("/");
  return h("code", { class: "method" }, parts.map((part, i) => (i < parts.length - 1 ? [`${part}/`, h("wbr")] : part)));
}

function requestRow(entry) {
  const cell = (label, ...content) => h("td", { "data-label": label }, ...content);
  return h(
    "tr",
    { "data-method": entry.method || "", "data-status": entry.status },
    cell("Time", h("time", { datetime: entry.at }, clock(entry.at))),
    cell("Method", entry.method ? methodName(entry.method) : h("span", { class: "muted" }, entry.kind)),
    cell("Direction", DIRECTIONS[entry.direction] || entry.direction),
    cell("Status", h("span", { class: `log-status log-${entry.status}` }, entry.status)),
    cell("Duration", entry.duration_ms === null || entry.duration_ms === undefined ? "–" : `${entry.duration_ms} ms`),
    cell("Sizes", `${bytes(entry.request_bytes)} / ${bytes(entry.response_bytes)}`),
    cell("Connection", h("span", { title: entry.connection_id || "" }, connectionName(entry.connection_id))),
    cell("Error", entry.error ? h("span", { class: "bad" }, errorOf(entry)) : "", entry.error && entry.violation ? " " : "", violationBadge(entry.violation)),
  );
}

/**
 * Open the logs drawer of server `view`. `feed` (optional) lets it refresh on the server's status
 * events. Returns a function that closes it.
 */
export function openLogsDrawer(view, { feed, onClose } = {}) {
  const opener = document.activeElement;
  const titleId = uid("logs-title");
  const filterId = uid("logs-filter");
  const filterHintId = uid("logs-filter-hint");
  const stdio = view.transport === "stdio";
  let data = null;
  let loading = null;

  const filter = h("input", {
    type: "search",
    id: filterId,
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "e.g. tools/call, error, pending",
    "aria-describedby": filterHintId,
  });
  const refreshButton = h("button", { type: "button" }, "Refresh");
  const exportLink = h(
    "a",
    { class: "button", href: servers.logsDownloadUrl(view.id), download: `mcp-center-${view.id}-logs.json` },
    "Export JSON",
  );
  const closeButton = h("button", { type: "button", class: "quiet drawer-close" }, "Close");
  const count = h("p", { class: "hint", "aria-live": "polite", "data-testid": "logs-count" });
  const problem = h("p", { class: "alert alert-error", role: "alert", hidden: true });
  const tbody = h("tbody");
  const table = h(
    "table",
    { class: "logs" },
    h("caption", { class: "visually-hidden" }, `Requests and responses of ${view.name}, newest first`),
    h("thead", {}, h("tr", {}, COLUMNS.map((c) => h("th", { scope: "col" }, c)))),
    tbody,
  );
  const emptyRequests = h("p", { class: "muted", hidden: true });
  const stderrList = h("ol", { class: "stderr-lines", "aria-label": `stderr of ${view.name}, oldest first` });
  const emptyStderr = h("p", { class: "muted", hidden: true });
  const stderrSection = stdio
    ? h(
        "section",
        { class: "stderr", "aria-labelledby": `${titleId}-stderr` },
        h("h3", { id: `${titleId}-stderr` }, "stderr"),
        h("p", { class: "hint" }, "What the server process wrote to stderr (its own log), redacted; the last 200 lines."),
        emptyStderr,
        stderrList,
      )
    : null;

  const dialog = h(
    "dialog",
    { class: "drawer", "aria-labelledby": titleId, "data-testid": "logs-drawer" },
    h(
      "div",
      { class: "drawer-head" },
      h("h2", { id: titleId }, `Logs · ${view.name}`),
      closeButton,
    ),
    h(
      "p",
      { class: "hint" },
      "The last 50 requests and responses with this server: method, status, timing and sizes — never parameters or results. Secrets are redacted.",
    ),
    h(
      "div",
      { class: "logs-toolbar" },
      h(
        "div",
        { class: "field" },
        h("label", { for: filterId }, "Filter"),
        filter,
        h("p", { class: "hint", id: filterHintId }, `Matches method, status, direction, error or connection${stdio ? ", and stderr lines" : ""}.`),
      ),
      h("div", { class: "actions" }, refreshButton, exportLink),
    ),
    problem,
    count,
    h("div", { class: "table-wrap" }, table),
    emptyRequests,
    stderrSection,
  );

  function draw() {
    if (!data) return;
    const query = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    const entries = [...data.requests].reverse();
    const shown = entries.filter((entry) => matches(haystack(entry), query));
    replace(tbody, shown.map(requestRow));
    table.hidden = shown.length === 0;
    emptyRequests.hidden = shown.length > 0;
    emptyRequests.textContent = entries.length ? "No request matches the filter." : "No requests yet.";
    let text = `${shown.length} of ${entries.length} requests`;
    if (stdio) {
      const lineText = (line) => (line.violation ? `${line.line} sandbox violation ${line.violation.kind}` : line.line).toLowerCase();
      const lines = data.stderr.filter((line) => matches(lineText(line), query));
      replace(
        stderrList,
        lines.map((line) =>
          h(
            "li",
            { class: line.violation ? "violation" : null },
            h("time", { datetime: line.at }, clock(line.at)),
            " ",
            violationBadge(line.violation),
            line.violation ? " " : "",
            h("span", { class: "line" }, line.line),
          ),
        ),
      );
      stderrList.hidden = lines.length === 0;
      emptyStderr.hidden = lines.length > 0;
      emptyStderr.textContent = data.stderr.length ? "No stderr line matches the filter." : "No stderr lines yet.";
      text += ` · ${lines.length} of ${data.stderr.length} stderr lines`;
    }
    count.textContent = query.length ? `${text} (filtered)` : text;
  }

  async function load() {
    if (loading) return loading;
    refreshButton.setAttribute("aria-busy", "true");
    loading = servers
      .logs(view.id)
      .then((fresh) => {
        data = fresh;
        problem.hidden = true;
        draw();
      })
      .catch((err) => {
        problem.textContent = `${err.code}: ${err.message}`;
        problem.hidden = false;
      })
      .finally(() => {
        loading = null;
        refreshButton.removeAttribute("aria-busy");
      });
    return loading;
  }

  let refreshTimer = null;
  const off = feed
    ? feed.onEvent((event) => {
        if (event.server_id !== view.id || event.type !== "server.status") return;
        clearTimeout(refreshTimer);
        refreshTimer = setTimeout(load, 200);
      })
    : () => {};

  filter.addEventListener("input", draw);
  refreshButton.addEventListener("click", load);
  closeButton.addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => {
    off();
    clearTimeout(refreshTimer);
    dialog.remove();
    if (opener && opener.isConnected) opener.focus();
    if (onClose) onClose();
  });

  count.textContent = "Loading…";
  document.body.append(dialog);
  dialog.showModal();
  filter.focus();
  load();
  return () => {
    if (dialog.open) dialog.close();
  };
}
