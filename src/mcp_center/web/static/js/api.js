// The REST API client of the settings page. Authentication is the HttpOnly session cookie the
// browser sends by itself; every request also carries the page's CSRF token (required by the
// server for state-changing requests). No token is ever stored in the page, a URL or localStorage.

const CSRF_TOKEN = document.querySelector('meta[name="csrf-token"]')?.content ?? "";

/** Which instance answered (R-10.2): shown in the footer, updated from every API answer. */
function noteInstance(response) {
  const name = response.headers.get("X-MCP-Center-Instance");
  const slot = document.getElementById("instance-name");
  if (name && slot && slot.textContent !== name) slot.textContent = name;
}

/**
 * `run()` calls `load()` (which returns a promise) and returns its promise; a `run()` while one
 * is in flight makes it run once more afterwards, so a reload asked for meanwhile is never missed
 * and two never overlap. `load` may call `run()` itself to ask for that one more run. Failures
 * are swallowed: the next run tries again.
 */
export function coalesced(load) {
  let inflight = null;
  let again = false;
  function run() {
    if (inflight) {
      again = true;
      return inflight;
    }
    inflight = load()
      .catch(() => {})
      .finally(() => {
        inflight = null;
        if (again) {
          again = false;
          run();
        }
      });
    return inflight;
  }
  return run;
}

/** An error answer of the API: `status`, stable `code`, `message`, `details` (R-7.3 envelope). */
export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details || {};
  }

  /** `details.errors` as a list of {field, code, message}. */
  get fieldErrors() {
    return Array.isArray(this.details.errors) ? this.details.errors : [];
  }
}

/** How long a request may go unanswered before `api()` gives up on it (ms): the page's ordinary reads and writes. */
export const TIMEOUT_MS = 30_000;
/**
 * The calls that may start a server and wait for it by design (ms): a test, an enable, a catalog
 * (refreshed or not: it connects lazily), the debugger's info, log level and completion, an OAuth
 * start or completion; bounded on the host by a server's start-up timeout (at most 600 s) and a listing.
 */
export const SLOW_TIMEOUT_MS = 660_000;
/**
 * A request sent to a server for the user (ms): a tool call, a console request, a prompt's get, a
 * resource's read; bounded on the host by the server's call timeout (at most 3,600 s).
 */
export const CALL_TIMEOUT_MS = 3_660_000;
/** `api()` options of the two kinds above. */
export const SLOW = Object.freeze({ timeoutMs: SLOW_TIMEOUT_MS });
export const CALL = Object.freeze({ timeoutMs: CALL_TIMEOUT_MS });

/**
 * JSON text sent exactly as the user wrote it (the playground's JSON editor): `-0`, an integer past
 * 2^53 and the order of keys reach the host as written, where `JSON.parse` + `JSON.stringify` would
 * send `0`, a rounded number, and `null` for `1e400` (fixb36). `text` must be checked JSON already.
 */
export class RawJson {
  constructor(text) {
    this.text = text;
  }
}

/**
 * Call the API and return the parsed JSON body (null for 204). `body`: a value sent as
 * `JSON.stringify` writes it, or a `RawJson` sent as its text.
 * Throws ApiError for every non-2xx answer; a 401 sends the browser to the login page. When no
 * answer came (the network failed: NETWORK_ERROR), or none within `timeoutMs` (NETWORK_TIMEOUT;
 * the request is aborted), the ApiError has status 0 and a stable code, so a button waiting on it
 * stops and says so as for a network failure.
 */
export async function api(method, path, body, { timeoutMs = TIMEOUT_MS } = {}) {
  const abort = new AbortController();
  const init = {
    method,
    credentials: "same-origin",
    cache: "no-store",
    headers: { "X-CSRF-Token": CSRF_TOKEN, Accept: "application/json" },
    signal: abort.signal,
  };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = body instanceof RawJson ? body.text : JSON.stringify(body);
  }
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  try {
    return await answerOf(await fetch(path, init));
  } catch (err) {
    if (err instanceof ApiError) throw err;
    if (abort.signal.aborted) {
      const seconds = Math.round(timeoutMs / 1000);
      throw new ApiError(0, "NETWORK_TIMEOUT", `mcp-center did not answer within ${seconds} s (is it still running?)`, {});
    }
    throw new ApiError(0, "NETWORK_ERROR", "mcp-center did not answer (is it still running?)", {});
  } finally {
    clearTimeout(timer);
  }
}

/** The parsed body of `response` (null for 204), or the ApiError it answers (module doc of `api`). */
async function answerOf(response) {
  noteInstance(response);
  if (response.status === 204) return null;
  let data = null;
  try {
    data = await response.json();
  } catch (err) {
    if (err.name === "AbortError") throw err; // the body did not arrive in time either
    data = null;
  }
  if (!response.ok) {
    const error = data && data.error ? data.error : {};
    if (response.status === 401) {
      window.location.assign("/login");
    }
    throw new ApiError(
      response.status,
      error.code || `HTTP_${response.status}`,
      error.message || response.statusText,
      error.details,
    );
  }
  return data;
}

const SERVERS = "/api/mcp/servers";
const one = (id) => `${SERVERS}/${encodeURIComponent(id)}`;

/** The REST endpoints the page uses, one function each. */
export const servers = {
  list: () => api("GET", SERVERS).then((r) => r.servers),
  get: (id) => api("GET", one(id)),
  create: (body) => api("POST", SERVERS, body),
  replace: (id, body) => api("PUT", one(id), body),
  patch: (id, body) => api("PATCH", one(id), body),
  remove: (id, version) => api("DELETE", `${one(id)}?version=${encodeURIComponent(version)}`),
  trust: (id, digest) => api("POST", `${one(id)}/trust`, { digest }),
  test: (id) => api("POST", `${one(id)}/test`, undefined, SLOW),
  enable: (id) => api("POST", `${one(id)}/enable`, undefined, SLOW),
  disable: (id) => api("POST", `${one(id)}/disable`),
  tools: (id) => api("GET", `${one(id)}/tools`, undefined, SLOW).then((r) => r.tools),
  /** A tool's approval policy, "ask" | "allow" | "deny": a versioned, high-risk change (R-1.3, R-1.4, R-5.3). */
  setPolicy: (id, tool, policy, version) => api("PUT", `${one(id)}/tools/${encodeURIComponent(tool)}/policy`, { policy, version }),
  /** `args`: an object, or a `RawJson` of one (the editor's text, spliced into the body as written). */
  call: (id, tool, args, operationId) =>
    api(
      "POST",
      `${one(id)}/tools/${encodeURIComponent(tool)}/call`,
      args instanceof RawJson
        ? new RawJson(`{"arguments":${args.text},"operation_id":${JSON.stringify(operationId)}}`)
        : { arguments: args, operation_id: operationId },
      CALL,
    ),
  cancel: (operationId) => api("POST", `/api/operations/${encodeURIComponent(operationId)}/cancel`),
  logs: (id) => api("GET", `${one(id)}/logs`),
  /** The logs as a JSON file download (Content-Disposition: attachment); a same-origin GET with the cookie. */
  logsDownloadUrl: (id) => `${one(id)}/logs?download=true`,
  catalog: (id, { refresh = false } = {}) => api("GET", `${one(id)}/catalog${refresh ? "?refresh=true" : ""}`, undefined, SLOW),
};

/** The debugger of one server (R-12.1): info, live activity, log level, the JSON-RPC console, completion. */
export const debug = {
  info: (id) => api("GET", `${one(id)}/info`, undefined, SLOW),
  activity: (id, after) => api("GET", `${one(id)}/activity${after ? `?after=${encodeURIComponent(after)}` : ""}`).then((r) => r.entries),
  clearActivity: (id) => api("DELETE", `${one(id)}/activity`),
  setLevel: (id, level) => api("PUT", `${one(id)}/logging/level`, { level }, SLOW),
  /** `{method, params?}` sent on the live session; answers `{request, response: {result}|{error}, elapsed_ms, ...}`. */
  send: (id, method, params, operationId) =>
    api("POST", `${one(id)}/rpc`, { method, params, operation_id: operationId }, CALL),
  /** `completion/complete` for a prompt (`{type: "ref/prompt", name}`) or resource template (`{type: "ref/resource", uri}`). */
  complete: (id, ref, argument, context) => api("POST", `${one(id)}/complete`, { ref, argument, context }, SLOW),
};

/** Pending approvals of agent calls (R-5.3) and elicitation cards (R-6), answered by the user. */
export const cards = {
  approvals: () => api("GET", "/api/approvals").then((r) => r.approvals),
  decide: (approvalId, decision) => api("POST", `/api/approvals/${encodeURIComponent(approvalId)}`, { decision }),
  interactions: (state) => api("GET", `/api/interactions?state=${encodeURIComponent(state)}`).then((r) => r.interactions),
  /** `body`: {action: "accept", content} | {action: "decline"} | {action: "cancel"} | {action: "retry"}. */
  // A retry re-sends the interrupted call and answers when it has run (it may start the server and
  // ask its question again): it waits as long as a call does.
  answer: (interactionId, body) =>
    api("POST", `/api/interactions/${encodeURIComponent(interactionId)}`, body, body && body.action === "retry" ? CALL : undefined),
};

/** Import (two steps: preview, then apply the confirmed preview) and export of client configurations. */
export const interchange = {
  preview: (content, format, onConflict = "refuse") => api("POST", "/api/mcp/import/preview", { content, format, on_conflict: onConflict }),
  apply: (body) => api("POST", "/api/mcp/import/apply", body).then((r) => r.servers),
  exportAs: (format) => api("GET", `/api/mcp/export?format=${encodeURIComponent(format)}`),
};

/** The gateway (R-8.1): its endpoint, the tools it exposes, and its tokens (a token only in the create answer). */
export const gateway = {
  info: () => api("GET", "/api/gateway"),
  tools: () => api("GET", "/api/tools"),
  tokens: () => api("GET", "/api/gateway/tokens"),
  create: (name) => api("POST", "/api/gateway/tokens", { name }),
  revoke: (id) => api("DELETE", `/api/gateway/tokens/${encodeURIComponent(id)}`),
};
