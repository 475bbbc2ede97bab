// Text for server fields shared by the list and the server page.

import { ago, h } from "./dom.js";

export const TRANSPORTS = {
  stdio: "stdio (local program)",
  streamable_http: "Streamable HTTP",
  sse: "HTTP+SSE (legacy)",
};

/** The short transport label. */
export function transportLabel(transport) {
  return TRANSPORTS[transport] || transport;
}

/**
 * Each attributed reason (`details.reason`, models.ErrorReason) in plain words. The page shows these,
 * never the API word itself; the reason stays in the JSON and in the element's `data-reason`.
 */
const REASON_PHRASE = {
  dns: "host name not found",
  refused: "connection refused",
  tls: "TLS failed",
  http_status: "unexpected HTTP status",
  auth_required: "authorization required",
  step_up_required: "more scopes required",
  protocol: "protocol error",
  timeout: "timed out",
  process_exited: "process exited",
  spawn_failed: "could not start",
  sandbox_required: "needs a sandbox",
  sandbox_unavailable: "sandbox unavailable",
  network: "network error",
  session_expired: "session expired",
  closed: "connection closed",
};

/** The attributed reason of an error ({code, message, details: {reason}} or {reason}), or null. */
export function errorReason(error) {
  return (error && (error.reason || (error.details && error.details.reason))) || null;
}

/**
 * An attributed error ({code, message, details: {reason}}) in words: its message, led by the
 * reason's plain phrase when the message does not already say it ("authorization required: ...").
 */
export function errorText(error) {
  if (!error) return "";
  const phrase = REASON_PHRASE[errorReason(error)];
  const message = error.message || error.code || "";
  return phrase && !message.toLowerCase().includes(phrase) ? `${phrase}: ${message}` : message;
}

/** The state badge of a server view, in the API's words: disconnected / connecting / ready / error (with its attributed reason). */
export function stateBadge(view) {
  const status = view.status || {};
  const state = status.state || "disconnected";
  const badge = h("span", { class: `badge state-${state}` }, state);
  if (state === "error" && status.error) {
    const retry = status.next_attempt_at ? ` · retrying at ${new Date(status.next_attempt_at).toLocaleTimeString()}` : "";
    return h("span", { class: "state" }, badge, " ", h("span", { class: "state-error error-reason", "data-reason": errorReason(status.error) || status.error.code, title: errorText(status.error) + retry }, errorText(status.error) + retry));
  }
  return h("span", { class: "state" }, badge);
}

const STACK_FRAME = /^\s*(at\s|File\s"|\^+\s*$|~+\s*$|Traceback \(most recent call last\)|Node\.js v\d|\.\.\.|During handling|The above exception)/;
const TELLING = /error|exception|not found|no such|denied|refused|fatal|failed|cannot|can't|unable|invalid|missing|required|EACCES|ENOENT|ECONNREFUSED/i;

/**
 * The most useful line of a stderr tail: the last line that names a problem (stack frames and
 * decoration skipped), else the last non-empty line; null for an empty tail.
 */
export function usefulStderrLine(tail) {
  if (!Array.isArray(tail)) return null;
  const lines = tail.map((line) => String(line).trimEnd()).filter((line) => line.trim() !== "" && !STACK_FRAME.test(line));
  if (!lines.length) return null;
  const telling = lines.filter((line) => TELLING.test(line));
  return (telling.length ? telling[telling.length - 1] : lines[lines.length - 1]).trim();
}

/** "1 tool", "4 tools": a count and its noun, singular for one. */
export function counted(count, noun) {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/** One line about the last test: "OK · 4 tools · 120 ms · 3 min ago" or "failed: reason: message". */
export function lastTestText(test) {
  if (!test) return "never tested";
  if (test.ok) {
    return `OK · ${counted(test.tool_count ?? 0, "tool")} · ${test.elapsed_ms} ms · ${ago(test.tested_at)}`;
  }
  const line = usefulStderrLine(test.error && test.error.details && test.error.details.stderr_tail);
  return `failed (${ago(test.tested_at)}): ${errorText(test.error)}${line ? ` · stderr: ${line}` : ""}`;
}

/**
 * The view's `warnings` (COMMAND_NOT_FOUND, SECRET_NOT_SET, URL_NOT_ASCII, ...) as a warning box,
 * or null when there are none. They do not block anything, but the test would fail.
 */
export function warningsBox(view) {
  const warnings = view.warnings || [];
  if (!warnings.length) return null;
  return h(
    "div",
    { class: "alert alert-warn warnings", role: "note", "data-testid": "warnings" },
    h("p", {}, h("strong", {}, warnings.length === 1 ? "Check this before you go on:" : `Check these ${warnings.length} things before you go on:`)),
    h("ul", {}, warnings.map((w) => h("li", { "data-code": w.code }, h("code", {}, w.code), ` ${w.message}`))),
  );
}

/** What blocks a server from running, in words. */
export function needsText(needs) {
  const words = {
    sandbox: "a sandbox (production profile)",
    trust: "confirming its summary",
    test: "a successful test",
    enable: "enabling",
  };
  return needs.map((n) => words[n] || n).join(", then ");
}
