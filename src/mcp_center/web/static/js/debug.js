// The debugger of one server (R-12.1), side by side with what the MCP Inspector shows:
//
// - `serverInfoCard`: on the Overview, what the server said in `initialize` — name, version,
//   negotiated protocol version, capabilities and its `instructions` (untrusted text).
// - `renderActivity` (#/servers/<id>/activity): its log messages (`notifications/message`, with a
//   `logging/setLevel` control), its other notifications (list_changed, resources/updated,
//   cancelled, ...) and the progress of running calls, live from the event stream (`server.activity`),
//   redacted by the host like the logs drawer; the host keeps the last 200, the page as many.
// - `renderConsole` (#/servers/<id>/console): send any request (a picker offers the methods the
//   server's capabilities allow, with a params template), see the request and the answer with its
//   timing; "Ping" measures the round trip. Admin-only (the page's session), CSRF-protected like every
//   change, and recorded in the server's request log (the Logs drawer) like any call.
//
// Everything a server sent is set with textContent (dom.js), never as markup.

import { coalesced, debug, servers } from "./api.js";
import { h, pretty, replace, uid } from "./dom.js";
import { errorText } from "./format.js";

/** Entries the Activity tab keeps (the host keeps as many). */
const KEPT = 200;
/** Exchanges the console keeps in its history. */
const HISTORY = 20;

function clock(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso || "";
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

/** "3 of 5 · step two" for a progress entry; `total` may be absent. */
export function progressText(entry) {
  const amount = entry.total ? `${entry.progress} of ${entry.total}` : `${entry.progress}`;
  return entry.message ? `${amount} · ${entry.message}` : amount;
}

/** A `<progress>` bar with its text for a progress entry (indeterminate without a total). */
export function progressBar(entry, label) {
  const bar = h("progress", { max: entry.total || null, value: entry.total ? entry.progress : null, "aria-label": label });
  return h("div", { class: "progress-line" }, bar, h("span", { class: "progress-text" }, progressText(entry)));
}

/**
 * Why the debugger cannot use the server's live session now, or null when it is ready. A server that
 * is enabled but not connected (an error, or lazy) gets a "Connect now" button: `onConnected()`
 * runs once it is up (the tab draws itself again).
 */
function readyNote(view, noun, onConnected) {
  const status = view.status || {};
  if (!view.enabled || (view.needs && view.needs.length)) {
    return h("p", { class: "alert alert-info", "data-testid": "not-ready" }, `${noun} needs the server's live session: confirm, test and enable the server first (Overview tab).`);
  }
  if (status.state === "ready") return null;
  const state = status.state || "disconnected";
  const why = status.error ? `${state === "error" ? "error" : `${state} again after`}: ${errorText(status.error)}` : state;
  const connect = h("button", { type: "button" }, "Connect now");
  const said = h("span", { class: "hint", "aria-live": "polite" });
  connect.addEventListener("click", async () => {
    connect.disabled = true;
    connect.setAttribute("aria-busy", "true");
    said.textContent = " Connecting…";
    try {
      await debug.info(view.id); // connects (lazily, like the catalog) and answers once it is up
      onConnected();
    } catch (err) {
      said.textContent = ` ${err.code}: ${err.message}`;
      connect.disabled = false;
      connect.removeAttribute("aria-busy");
    }
  });
  return h(
    "div",
    { class: "alert alert-info", "data-testid": "not-ready" },
    h("p", {}, `This server is not connected (${why}). ${noun} uses its live session; the Overview and the Logs tell why it is down.`),
    h("div", { class: "inline-controls" }, connect, said),
  );
}

// ----- server info ------------------------------------------------------------------------------

/** The capabilities as a list: "tools (listChanged)", "resources (subscribe, listChanged)", ... */
function capabilityList(capabilities) {
  const names = Object.keys(capabilities || {}).sort();
  if (!names.length) return h("span", { class: "muted" }, "none declared");
  return h(
    "ul",
    { class: "badges capabilities", "aria-label": "Declared capabilities" },
    names.map((name) => {
      const value = capabilities[name];
      const flags = value && typeof value === "object" ? Object.entries(value).filter(([, v]) => v === true).map(([k]) => k) : [];
      return h("li", { class: "hint-badge yes", "data-capability": name }, flags.length ? `${name} (${flags.join(", ")})` : name);
    }),
  );
}

/** What the server said in `initialize`, as a definition list. */
export function serverInfoList(info) {
  const server = info.server_info || {};
  const rows = [
    ["Name", server.name ? h("code", {}, server.name) : h("span", { class: "muted" }, "not given")],
    ["Version", server.version || h("span", { class: "muted" }, "not given")],
  ];
  if (server.title) rows.push(["Title", server.title]);
  rows.push(["Protocol version", h("code", { "data-testid": "protocol-version" }, info.protocol_version || "?")]);
  rows.push(["Capabilities", capabilityList(info.capabilities)]);
  rows.push([
    "Instructions",
    info.instructions
      ? h("div", {}, h("p", { class: "hint" }, "The server's own text for the model (untrusted)."), h("blockquote", { class: "server-message instructions" }, info.instructions))
      : h("span", { class: "muted" }, "none"),
  ]);
  return h("dl", { class: "status server-info", "data-testid": "server-info" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

/**
 * The "Server info" card of the Overview. `update(view)` is called with every fresh view; it
 * reads `/info` when the server becomes ready (reading it otherwise would start a connection just
 * because someone looked). Returns {element, update, settled}: `settled` resolves once the first
 * read (if the server is ready now) is drawn, answer or error; it never rejects.
 */
export function serverInfoCard(initial) {
  let view = initial;
  let wasReady = false;
  let reading = null;
  const body = h("div", {});
  const element = h("section", { "aria-labelledby": "server-info-title", class: "server-info-card" }, h("h2", { id: "server-info-title" }, "Server info"), h("div", { class: "card" }, body));

  function update(fresh) {
    view = fresh;
    const ready = Boolean(view.enabled && view.status && view.status.state === "ready");
    if (ready && !wasReady) {
      replace(body, h("p", { class: "muted" }, "Reading…"));
      reading = debug
        .info(view.id)
        .then((info) => replace(body, serverInfoList(info)))
        .catch((err) => replace(body, h("p", { class: "alert alert-error", role: "alert" }, `${err.code}: ${err.message}`)));
    } else if (!ready) {
      replace(body, h("p", { class: "muted" }, "What the server says about itself (name, version, protocol, capabilities, instructions) is shown while it is connected."));
    }
    wasReady = ready;
  }
  update(view);
  return { element, update, settled: reading || Promise.resolve() };
}

// ----- activity ---------------------------------------------------------------------------------

const KINDS = [
  ["all", "Everything"],
  ["log", "Log messages"],
  ["notification", "Notifications"],
  ["progress", "Progress"],
];

function entryBody(entry) {
  if (entry.kind === "log") {
    const data = entry.data;
    return [
      entry.logger ? h("span", { class: "muted" }, `${entry.logger}: `) : null,
      typeof data === "string" ? h("span", { class: "activity-text" }, data) : h("pre", { class: "activity-data" }, pretty(data)),
    ];
  }
  if (entry.kind === "progress") {
    return [h("span", { class: "muted" }, `operation ${String(entry.operation_id || "").slice(0, 8)} · `), progressBar(entry, `Progress of operation ${entry.operation_id}`)];
  }
  return entry.params === null || entry.params === undefined ? h("span", { class: "muted" }, "no params") : h("pre", { class: "activity-data" }, pretty(entry.params));
}

function entryItem(entry) {
  const label = entry.kind === "log" ? entry.level : entry.kind === "progress" ? "progress" : "notification";
  return h(
    "li",
    { class: `activity-entry kind-${entry.kind}`, "data-kind": entry.kind, "data-level": entry.level || null, "data-seq": String(entry.seq) },
    h(
      "div",
      { class: "activity-head" },
      h("time", { datetime: entry.at }, clock(entry.at)),
      h("span", { class: `badge level-${label}` }, label),
      h("code", {}, entry.method),
      entry.truncated ? h("span", { class: "warn" }, "cut (longer than 4 KiB)") : null,
    ),
    h("div", { class: "activity-body" }, entryBody(entry)),
  );
}

function haystack(entry) {
  return [entry.kind, entry.method, entry.level, entry.logger, entry.operation_id, entry.message, JSON.stringify(entry.data ?? entry.params ?? "")]
    .filter((v) => v !== null && v !== undefined)
    .join(" ")
    .toLowerCase();
}

/** The log level control: `logging/setLevel`, only for a server that declares `logging`. */
function levelControl(view, info, onSet) {
  if (!info.capabilities || !("logging" in info.capabilities)) {
    return h("p", { class: "hint", "data-testid": "no-logging" }, "This server declares no logging capability: it sends no log messages (its stderr is in the Logs drawer).");
  }
  const id = uid("level");
  const select = h(
    "select",
    { id },
    (info.log_levels || []).map((level) => h("option", { value: level, selected: level === (info.log_level || "info") }, level)),
  );
  const button = h("button", { type: "button" }, "Set level");
  const now = h("span", { class: "hint", "aria-live": "polite", "data-testid": "log-level" }, info.log_level ? `Level: ${info.log_level}` : "Level: the server's default");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const answer = await debug.setLevel(view.id, select.value);
      now.textContent = `Level: ${answer.level}`;
      onSet(answer.level);
    } catch (err) {
      now.textContent = `${err.code}: ${err.message}`;
    } finally {
      button.disabled = false;
    }
  });
  return h(
    "div",
    { class: "level-control" },
    h("label", { for: id }, "Minimum log level"),
    h("div", { class: "inline-controls" }, select, button, now),
    h("p", { class: "hint" }, "Sent as logging/setLevel now and again whenever the server reconnects."),
  );
}

/** Draw the Activity tab of `view` into `container`; returns a cleanup function. */
export async function renderActivity(container, view, { feed }) {
  const fresh = await servers.get(view.id).catch(() => view);
  let cleanup = () => {};
  const again = async () => {
    cleanup();
    cleanup = await renderActivity(container, view, { feed });
  };
  const note = readyNote(fresh, "The level control", again);
  let info = null;
  if (!note) info = await debug.info(view.id).catch(() => null);

  const filterId = uid("activity-filter");
  const kindId = uid("activity-kind");
  const filter = h("input", { id: filterId, type: "search", autocomplete: "off", spellcheck: "false", placeholder: "e.g. error, list_changed, an operation id" });
  const kind = h("select", { id: kindId }, KINDS.map(([value, label]) => h("option", { value }, label)));
  const clearButton = h("button", { type: "button", class: "quiet" }, "Clear");
  const count = h("p", { class: "hint", "aria-live": "polite", "data-testid": "activity-count" });
  const list = h("ol", { class: "activity", "aria-label": `Activity of ${view.name}, newest first` });
  const empty = h("p", { class: "muted empty-note" });
  let entries = [];
  let lastSeq = 0;

  function draw() {
    const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    const shown = entries.filter((e) => (kind.value === "all" || e.kind === kind.value) && words.every((w) => haystack(e).includes(w)));
    replace(list, [...shown].reverse().map(entryItem));
    list.hidden = shown.length === 0;
    empty.hidden = shown.length > 0;
    empty.textContent = entries.length ? "Nothing matches the filter." : "Nothing yet: log messages, notifications and the progress of calls appear here as the server sends them.";
    count.textContent = `${shown.length} of ${entries.length} entries${words.length || kind.value !== "all" ? " (filtered)" : ""}`;
  }

  function take(batch) {
    for (const entry of batch) {
      if (entry.seq <= lastSeq) continue;
      entries.push(entry);
      lastSeq = entry.seq;
    }
    if (entries.length > KEPT) entries = entries.slice(entries.length - KEPT);
    draw();
  }

  // Entries not sent live (the host rate-limits a chatty server) leave a gap in `seq`: read them.
  const catchUp = coalesced(() => debug.activity(view.id, lastSeq).then(take));

  const off = feed.onEvent((event) => {
    if (event.type === "events.dropped") catchUp();
    // Back up while the tab shows why it was not: draw it again with the level control.
    if (note && event.type === "server.status" && event.server_id === view.id && event.status && event.status.state === "ready") again();
    if (event.type !== "server.activity" || event.server_id !== view.id || !event.entry) return;
    if (event.entry.seq > lastSeq + 1 && lastSeq > 0) catchUp();
    else take([event.entry]);
  });
  const offMode = feed.onMode((mode) => {
    if (mode === "live") catchUp();
  });

  filter.addEventListener("input", draw);
  kind.addEventListener("change", draw);
  clearButton.addEventListener("click", async () => {
    await debug.clearActivity(view.id).catch(() => {});
    entries = [];
    draw();
  });

  replace(
    container,
    h(
      "p",
      { class: "hint" },
      "What the server sends besides its answers: its log messages, its notifications (list changes, resource updates, cancellations) and the progress of calls — live, redacted by the host like the logs drawer. The host keeps the last 200, also while the server is down.",
      view.transport === "stdio" ? " A local server's own stderr is in the Logs drawer." : "",
    ),
    note,
    info ? levelControl(view, info, () => {}) : null,
    h(
      "div",
      { class: "logs-toolbar" },
      h("div", { class: "field" }, h("label", { for: filterId }, "Filter"), filter),
      h("div", { class: "field narrow" }, h("label", { for: kindId }, "Show"), kind),
      h("div", { class: "actions" }, clearButton),
    ),
    count,
    empty,
    list,
  );
  take(await debug.activity(view.id).catch(() => []));
  cleanup = () => {
    off();
    offMode();
  };
  return () => cleanup();
}

// ----- console ----------------------------------------------------------------------------------

/** Params templates of the methods a capability allows (filled in when the params box is untouched). */
const TEMPLATES = {
  ping: null,
  "tools/list": {},
  "tools/call": { name: "", arguments: {} },
  "prompts/list": {},
  "prompts/get": { name: "", arguments: {} },
  "resources/list": {},
  "resources/templates/list": {},
  "resources/read": { uri: "" },
  "resources/subscribe": { uri: "" },
  "resources/unsubscribe": { uri: "" },
  "completion/complete": { ref: { type: "ref/prompt", name: "" }, argument: { name: "", value: "" } },
  "logging/setLevel": { level: "debug" },
};

function exchangeItem(exchange) {
  const headingId = uid("exchange");
  const failed = "error" in exchange.response;
  return h(
    "li",
    { class: `exchange ${failed ? "is-error" : ""}`, "data-method": exchange.request.method },
    h(
      "article",
      { "aria-labelledby": headingId },
      h(
        "h3",
        { id: headingId },
        h("code", {}, exchange.request.method),
        " ",
        h("span", { class: failed ? "bad" : "ok" }, failed ? `error ${exchange.response.error.code}` : "ok"),
        h("span", { class: "muted" }, ` · ${exchange.elapsed_ms} ms · ${clock(exchange.at)}`),
      ),
      h("div", { class: "exchange-pair" }, h("div", {}, h("h4", {}, "Request"), h("pre", { class: "rpc-request" }, pretty(exchange.request))), h("div", {}, h("h4", {}, "Response"), h("pre", { class: "rpc-response" }, exchange.truncated ? `${exchange.response.result}\n… (cut: longer than 256 KiB)` : pretty(exchange.response)))),
    ),
  );
}

/** Draw the Console tab of `view` into `container`; returns a cleanup function. */
export async function renderConsole(container, view) {
  const fresh = await servers.get(view.id).catch(() => view);
  const note = readyNote(fresh, "The console", () => renderConsole(container, view));
  let info = null;
  if (!note) info = await debug.info(view.id).catch(() => null);
  const methods = (info && info.methods) || ["ping"];

  const methodId = uid("method");
  const paramsId = uid("params");
  const listId = uid("methods");
  const method = h("input", { id: methodId, type: "text", list: listId, value: "tools/list", spellcheck: "false", autocomplete: "off", "aria-describedby": `${methodId}-hint` });
  const datalist = h("datalist", { id: listId }, methods.map((m) => h("option", { value: m })));
  const params = h("textarea", { id: paramsId, class: "json", rows: "6", spellcheck: "false" }, "{}");
  const paramsError = h("p", { class: "field-error", role: "alert", hidden: true });
  const send = h("button", { type: "submit", class: "primary" }, "Send request");
  const ping = h("button", { type: "button" }, "Ping");
  const cancel = h("button", { type: "button", hidden: true }, "Cancel request");
  const latency = h("span", { class: "hint", "aria-live": "polite", "data-testid": "ping-latency" });
  const status = h("div", { "aria-live": "polite" });
  const history = h("ol", { class: "exchanges", "aria-label": "Requests sent, newest first" });
  let touched = false;
  let operationId = null;

  params.addEventListener("input", () => {
    touched = true;
  });
  // Choosing (or typing) a known method fills its params template while the params are untouched.
  method.addEventListener("input", () => {
    if (!touched && Object.hasOwn(TEMPLATES, method.value)) {
      const template = TEMPLATES[method.value];
      params.value = template === null ? "" : pretty(template);
    }
  });
  cancel.addEventListener("click", () => {
    if (operationId) servers.cancel(operationId).catch(() => {});
  });

  async function run(name, body) {
    operationId = crypto.randomUUID();
    send.disabled = ping.disabled = true;
    cancel.hidden = false;
    replace(status, h("p", { class: "muted" }, `Sending ${name}…`));
    try {
      const exchange = await debug.send(view.id, name, body, operationId);
      replace(status);
      history.prepend(exchangeItem(exchange));
      while (history.children.length > HISTORY) history.lastElementChild.remove();
      return exchange;
    } catch (err) {
      replace(status, h("p", { class: "alert alert-error", role: "alert" }, `${err.code}: ${err.message}`));
      return null;
    } finally {
      operationId = null;
      send.disabled = ping.disabled = false;
      cancel.hidden = true;
    }
  }

  const form = h(
    "form",
    { class: "console-form card", "aria-label": "Send a JSON-RPC request", novalidate: true },
    h("div", { class: "field" }, h("label", { for: methodId }, "Method"), method, datalist, h("p", { class: "hint", id: `${methodId}-hint` }, `Its capabilities allow: ${methods.join(", ")}. Any other method may be typed; initialize and notifications are refused.`)),
    h("div", { class: "field" }, h("label", { for: paramsId }, "Params (JSON object, or empty for none)"), params, paramsError),
    h("div", { class: "actions" }, send, ping, cancel, latency),
    status,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    paramsError.hidden = true;
    params.removeAttribute("aria-invalid");
    let body;
    try {
      body = params.value.trim() === "" ? undefined : JSON.parse(params.value);
    } catch (err) {
      paramsError.textContent = `Not valid JSON: ${err.message}`;
      paramsError.hidden = false;
      params.setAttribute("aria-invalid", "true");
      params.focus();
      return;
    }
    await run(method.value.trim(), body);
  });
  ping.addEventListener("click", async () => {
    const exchange = await run("ping");
    if (exchange) latency.textContent = "error" in exchange.response ? `ping failed: ${exchange.response.error.message}` : `ping: ${exchange.elapsed_ms} ms`;
  });

  replace(
    container,
    h("p", { class: "hint" }, "Send any request to this server's live session and see exactly what it answers. Requests go out as you (the admin), are recorded in the server's request log (Logs) like any call, and can change things on the server: a tools/call here runs the tool without an approval."),
    note,
    note ? null : form,
    note ? null : h("section", { "aria-labelledby": "history-title" }, h("h2", { id: "history-title" }, "History"), history),
  );
  return () => {
    if (operationId) servers.cancel(operationId).catch(() => {});
  };
}

// ----- argument completion ----------------------------------------------------------------------

const completionsOf = new Map();

/** Whether the server declared `completions` (asked once per page load and server). */
function completionsDeclared(serverId) {
  if (!completionsOf.has(serverId)) {
    completionsOf.set(
      serverId,
      debug
        .info(serverId)
        .then((info) => "completions" in (info.capabilities || {}))
        .catch(() => false),
    );
  }
  return completionsOf.get(serverId);
}

/** Forget what was learnt about a server's completions (its tab is drawn again). */
export function forgetCompletions(serverId) {
  completionsOf.delete(serverId);
}

/**
 * Offer the server's completions (`completion/complete`, R-12.1) for one argument `name` of a
 * prompt or resource template (`ref`) as the input's suggestions (a `<datalist>`), asked when the
 * field gets the focus and as the user types (debounced). `context()` gives the other arguments'
 * values. Nothing is asked of a server that declares no `completions`. Returns the datalist, for
 * the caller to put next to the input.
 */
export function offerCompletions(input, { serverId, ref, name, context = () => ({}) }) {
  const list = h("datalist", { id: uid("completions"), "data-completions": name });
  let timer = null;
  let asked = 0;
  async function ask() {
    if (!(await completionsDeclared(serverId))) return;
    asked += 1;
    const mine = asked;
    try {
      const answer = await debug.complete(serverId, ref, { name, value: input.value }, { arguments: context() });
      if (mine !== asked) return;
      replace(list, answer.values.map((value) => h("option", { value })));
      input.setAttribute("list", list.id);
      input.setAttribute("autocomplete", "off");
    } catch (err) {
      // A server that fails to complete leaves the field as it is: typing still works.
    }
  }
  input.addEventListener("focus", ask);
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(ask, 150);
  });
  return list;
}
