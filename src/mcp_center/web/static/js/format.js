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

/** `reason — message` of an attributed error ({code, message, details: {reason}}). */
export function errorText(error) {
  if (!error) return "";
  const reason = error.reason || (error.details && error.details.reason);
  const head = reason ? `${reason}` : error.code;
  return `${head}: ${error.message}`;
}

/** The state badge of a server view: off / connecting / ready / error (with its attributed reason). */
export function stateBadge(view) {
  const status = view.status || {};
  let state = status.state || "disconnected";
  if (!view.enabled && state === "disconnected") state = "off";
  const labels = { off: "off", disconnected: "disconnected", connecting: "connecting", ready: "ready", error: "error" };
  const badge = h("span", { class: `badge state-${state}` }, labels[state] || state);
  if (state === "error" && status.error) {
    return h("span", { class: "state" }, badge, " ", h("span", { class: "state-error error-reason" }, errorText(status.error)));
  }
  return h("span", { class: "state" }, badge);
}

/** One line about the last test: "OK · 4 tools · 120 ms · 3 min ago" or "failed: reason: message". */
export function lastTestText(test) {
  if (!test) return "never tested";
  if (test.ok) {
    return `OK · ${test.tool_count ?? 0} tools · ${test.elapsed_ms} ms · ${ago(test.tested_at)}`;
  }
  return `failed (${ago(test.tested_at)}): ${errorText(test.error)}`;
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
