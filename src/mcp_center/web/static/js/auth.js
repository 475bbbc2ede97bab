// The Authorization section of a server page (R-4.9, R-4.5, R-4.3, R-3.11), and the "Authorize"
// call to action the server list and the overview show for "authorization required" / "more scopes
// required".
//
// OAuth: "Authorize" first asks the host to start (POST .../oauth/start), then shows the issuer (the
// authorization server that will receive the login) and the scopes, and only then opens the sign-in
// page in a new window with `noopener` (the authorization server gets no handle on this page). The
// result arrives live: the callback page's message on a same-origin BroadcastChannel, the
// `server.oauth` event of /api/events, and, as a fallback, polling the server view. Machine grants
// (client_credentials) answer "authorized" at once. A pasted redirect URL completes a sign-in whose
// browser could not reach this host. Nothing here ever holds a token, a refresh token, a client
// secret or an authorization code: the view only says what is configured and granted.

import { SLOW, api, servers } from "./api.js";
import { confirmDialog, h, replace, toast } from "./dom.js";
import { errorReason, errorText } from "./format.js";

/** The channel the callback page (oauth-callback.js) announces its outcome on. */
export const CHANNEL = "mcp-center.oauth";
/** Polling of the server view while a sign-in is pending (fallback for the live signals), in ms. */
export const POLL_MS = 2000;

const one = (id) => `/api/mcp/servers/${encodeURIComponent(id)}`;
const oauthApi = {
  start: (id, issuer) => api("POST", `${one(id)}/oauth/start`, issuer ? { issuer } : undefined, SLOW),
  complete: (id, callbackUrl) => api("POST", `${one(id)}/oauth/complete`, { callback_url: callbackUrl }, SLOW),
  forget: (id) => api("DELETE", `${one(id)}/oauth`),
};

const CLIENT_SOURCES = {
  configured: "configured client id",
  registered: "dynamic client registration (RFC 7591)",
  cimd: "this host's client ID metadata document",
};
const GRANTS = {
  authorization_code: "authorization code: a person signs in in the browser",
  client_credentials: "client credentials: a machine grant, no browser",
  cross_app_access: "cross-app access: a token of the identity provider, no browser",
};
const NEEDS = {
  authorization: ["auth_required", "authorization required"],
  step_up: ["step_up_required", "more scopes required"],
  issuer_choice: ["issuer_choice", "choose the authorization server"],
};

/**
 * What the server needs from a user, or null: `{reason, text, scopes}`, from the live status error
 * (`auth_required` / `step_up_required`, R-3.1) or, for a trusted OAuth server, its `oauth.needs`.
 */
export function authNeed(view) {
  const error = view.status && view.status.state === "error" ? view.status.error : null;
  const reason = errorReason(error);
  if (reason === "auth_required") return { reason, text: "authorization required", scopes: [] };
  if (reason === "step_up_required") {
    const scopes = (error.details && error.details.scopes) || (view.oauth && view.oauth.step_up_scopes) || [];
    return { reason, text: "more scopes required", scopes };
  }
  const needs = view.oauth && view.oauth.needs;
  if (!needs || !view.trusted || !NEEDS[needs]) return null;
  const [code, text] = NEEDS[needs];
  return { reason: code, text, scopes: needs === "step_up" ? view.oauth.step_up_scopes || [] : [] };
}

function needText(need) {
  return need.scopes.length ? `${need.text}: ${need.scopes.join(" ")}` : need.text;
}

/** The list row's call to action: an "Authorize" link to the Authorization tab, or null. */
export function authorizeLink(view) {
  const need = authNeed(view);
  if (!need) return null;
  return h(
    "a",
    { class: "button auth-cta", href: `#/servers/${encodeURIComponent(view.id)}/auth`, "data-need": need.reason, title: needText(need) },
    "Authorize",
  );
}

/** The overview's call to action: what is needed and an "Authorize" link, or null. */
export function authCallout(view) {
  const need = authNeed(view);
  if (!need) return null;
  return h(
    "div",
    { class: "alert alert-warn auth-callout", role: "note", "data-need": need.reason },
    h("strong", {}, `${need.text[0].toUpperCase()}${need.text.slice(1)}`),
    need.scopes.length ? [" · scopes needed: ", need.scopes.map((s) => [h("code", {}, s), " "])] : null,
    " ",
    h("a", { class: "button primary", href: `#/servers/${encodeURIComponent(view.id)}/auth` }, "Authorize"),
  );
}

function row(term, ...value) {
  return [h("dt", {}, term), h("dd", {}, ...value)];
}

function scopeList(scopes, empty) {
  return scopes && scopes.length ? scopes.map((s) => [h("code", {}, s), " "]) : h("span", { class: "muted" }, empty);
}

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : null;
}

/** The OAuth state of a view as a definition list (never a token: only what is granted and when). */
function oauthState(view) {
  const o = view.oauth || {};
  let state;
  if (o.needs === "step_up") state = h("span", { class: "badge state-error" }, "more scopes required");
  else if (o.needs === "issuer_choice") state = h("span", { class: "badge state-error" }, "choose the authorization server");
  else if (o.authorized) state = h("span", { class: "badge state-ready" }, "Authorized");
  else state = h("span", { class: "badge state-error" }, "authorization required");
  const items = [row("State", state, o.pending ? h("span", { class: "muted" }, " · a sign-in is pending") : null)];
  items.push(row("Authorization server (issuer)", o.issuer ? h("code", {}, o.issuer) : h("span", { class: "muted" }, "found on the first authorization")));
  items.push(row("Granted scopes", o.authorized ? scopeList(o.scopes, "none named") : h("span", { class: "muted" }, "none")));
  if (o.step_up_scopes && o.step_up_scopes.length) items.push(row("Scopes needed", scopeList(o.step_up_scopes, "")));
  if (o.authorized_at) items.push(row("Authorized", when(o.authorized_at)));
  items.push(
    row(
      "Access token",
      o.access_token_in_memory
        ? `in memory${o.access_token_expires_at ? `, expires ${when(o.access_token_expires_at)}` : ""}`
        : h("span", { class: "muted" }, o.authorized ? "not in memory (renewed when needed)" : "none"),
    ),
  );
  const auth = view.auth || {};
  const source = o.client_id_source ? CLIENT_SOURCES[o.client_id_source] || o.client_id_source : "registered on the first authorization";
  items.push(row("Client", auth.client_id ? [h("code", {}, auth.client_id), " · "] : null, source, auth.client_secret && auth.client_secret.configured ? " · client secret configured" : null));
  items.push(row("Grant", GRANTS[o.grant] || o.grant || "authorization code"));
  if (o.resource) items.push(row("Resource", h("code", {}, o.resource)));
  if (o.last_error) items.push(row("Last error", h("span", { class: "bad", "data-testid": "oauth-last-error" }, `${o.last_error.code} · ${errorText(o.last_error)}`)));
  return h("dl", { class: "status oauth-state", "data-testid": "oauth-state" }, items);
}

/** The section for a server without OAuth: what is configured, and where to change it. */
function notOAuth(view, base) {
  const configLink = h("a", { href: `${base}/config` }, "Configuration");
  if (view.transport === "stdio") {
    return h("p", {}, "A local program is not authorized here: it gets its credentials from secret environment variables. See ", configLink, ".");
  }
  const auth = view.auth || { kind: "none" };
  if (auth.kind === "bearer") {
    const configured = auth.token && auth.token.configured;
    return [
      h("p", {}, "Authorization: ", h("strong", {}, "bearer token"), " · ", h("span", { class: configured ? "ok" : "warn" }, configured ? "configured" : "not set"), "."),
      h("p", { class: "hint" }, "The token is sent as Authorization: Bearer … and never shown. Replace it or switch to OAuth in ", configLink, "."),
    ];
  }
  return [
    h("p", {}, "Authorization: ", h("strong", {}, "none"), ". mcp-center contacts this server without credentials."),
    h("p", { class: "hint" }, "If the server asks for a token or OAuth (a 401 in the test), change Authorization in ", configLink, "."),
  ];
}

/**
 * Draw the Authorization section of `view` into `content`; returns a cleanup function.
 * `feed` is the live server feed; `base` the server page's address (#/servers/<id>).
 */
export function renderAuth(content, view, { feed, base }) {
  const heading = h("h2", { id: "auth-title" }, "Authorization");
  if (!(view.auth && view.auth.kind === "oauth")) {
    replace(content, h("section", { class: "auth", "aria-labelledby": "auth-title" }, heading, notOAuth(view, base)));
    return () => {};
  }
  const id = view.id;
  const stateBox = h("div", { class: "card" });
  const actions = h("div", { class: "auth-actions" });
  const result = h("div", { class: "auth-result", role: "status", "aria-live": "polite", tabindex: "-1" });
  const paste = pasteForm();
  const forgetButton = h("button", { type: "button", class: "danger" }, "Forget authorization");
  const forgetBox = h(
    "section",
    { class: "danger-zone", "aria-labelledby": "forget-title" },
    h("h3", { id: "forget-title" }, "Forget"),
    h("p", { class: "hint" }, "Deletes the refresh token, the client registration and the access token. The server stays configured and needs a new authorization to connect."),
    forgetButton,
  );
  const interactive = () => (view.oauth && view.oauth.grant ? view.oauth.grant === "authorization_code" : true);
  let phase = "idle"; // idle | confirm | waiting
  let waiting = null; // {before, expires, timer, channel}
  let issuerChoices = [];

  replace(
    content,
    h(
      "section",
      { class: "auth", "aria-labelledby": "auth-title" },
      heading,
      h("p", { class: "hint" }, "OAuth 2.1: mcp-center signs in at the server's authorization server and keeps the refresh token encrypted; tokens are never shown."),
      stateBox,
      result,
      actions,
      paste.element,
      forgetBox,
    ),
  );

  function showResult(kind, ...children) {
    replace(result, h("div", { class: `alert ${kind === "ok" ? "alert-info auth-ok" : "alert-error"}`, "data-result": kind }, ...children));
    result.focus();
  }

  function nextStepAfterAuthorization() {
    if (view.enabled) return " The server reconnects with the new authorization.";
    return [" Next: ", h("a", { href: base }, "test and enable the server on the Overview"), "."];
  }

  function showAuthorized(issuer, scopes) {
    showResult("ok", h("strong", {}, "Authorized"), issuer ? [" by ", h("code", {}, issuer)] : null, " · scopes: ", scopeList(scopes, "none named"), ".", nextStepAfterAuthorization());
  }

  function showError(err) {
    if (err.code === "MCP_SERVER_NOT_TRUSTED") {
      replace(result);
      drawActions({ untrusted: true });
      return;
    }
    if (err.code === "OAUTH_ISSUER_CHOICE_REQUIRED" && Array.isArray(err.details.issuers)) {
      issuerChoices = err.details.issuers;
      drawActions();
      showResult("error", "This server names several authorization servers: choose the one to sign in at.");
      return;
    }
    showResult("error", h("strong", {}, "Authorization failed"), ` · ${err.code}: ${err.message}`);
  }

  async function reload() {
    try {
      view = await servers.get(id);
    } catch (err) {
      return view;
    }
    drawState();
    if (phase === "idle") drawActions();
    feed.refresh();
    return view;
  }

  function drawState() {
    replace(stateBox, oauthState(view));
    forgetBox.hidden = !(view.oauth && (view.oauth.authorized || view.oauth.issuer || view.oauth.authorized_at));
    paste.element.hidden = !interactive() || phase !== "waiting";
  }

  // ----- actions ----------------------------------------------------------------------------------

  function drawActions({ untrusted = !view.trusted } = {}) {
    phase = "idle";
    stopWaiting();
    paste.element.hidden = true;
    if (untrusted) {
      replace(
        actions,
        h(
          "div",
          { class: "alert alert-warn next-step", "data-testid": "auth-next-step" },
          h("strong", {}, "Next step: confirm the connection summary."),
          " Authorization contacts the server and its authorization server with the configured client, so it starts only after you confirmed what will be contacted. ",
          h("a", { class: "button primary", href: base }, "Review and confirm the summary"),
        ),
      );
      return;
    }
    const choices = issuerChoices.length ? issuerChoices : (view.oauth && view.oauth.issuers) || [];
    let picker = null;
    if (choices.length) {
      picker = h(
        "fieldset",
        { class: "group issuer-choice" },
        h("legend", {}, "Authorization server"),
        h("p", { class: "hint" }, "This server names several authorization servers. mcp-center does not guess: choose where to sign in."),
        choices.map((issuer, index) =>
          h("label", { class: "checkbox" }, h("input", { type: "radio", name: "issuer", value: issuer, checked: index === 0 }), h("code", {}, issuer)),
        ),
      );
    }
    const o = view.oauth || {};
    const label = o.authorized && o.needs !== "step_up" ? "Authorize again" : "Authorize";
    const button = h("button", { type: "button", class: "primary", id: "authorize" }, label);
    button.addEventListener("click", async () => {
      const chosen = picker ? picker.querySelector("input[name=issuer]:checked") : null;
      button.disabled = true;
      button.setAttribute("aria-busy", "true");
      try {
        await begin(chosen ? chosen.value : null);
      } finally {
        button.disabled = false;
        button.removeAttribute("aria-busy");
      }
    });
    const what = interactive()
      ? "First you see which authorization server receives the sign-in and which scopes are asked for; then its sign-in page opens in a new window."
      : "A machine grant: mcp-center asks the authorization server for a token with the configured client, no browser needed.";
    replace(actions, picker, h("p", { class: "hint" }, what), h("div", { class: "actions" }, button));
  }

  async function begin(issuer) {
    replace(result);
    let started;
    try {
      started = await oauthApi.start(id, issuer);
    } catch (err) {
      await reload();
      showError(err);
      return;
    }
    issuerChoices = [];
    if (started.authorized) {
      await reload();
      showAuthorized(started.issuer, started.scopes);
      return;
    }
    confirmStart(started);
  }

  /** R-4.9: the issuer and scopes are shown before the browser opens. */
  function confirmStart(started) {
    phase = "confirm";
    const open = h("button", { type: "button", class: "primary" }, "Open the sign-in page");
    const cancel = h("button", { type: "button" }, "Cancel");
    cancel.addEventListener("click", () => drawActions());
    open.addEventListener("click", () => {
      window.open(started.authorization_url, "_blank", "noopener,noreferrer");
      wait(started);
    });
    replace(
      actions,
      h(
        "div",
        { class: "card auth-confirm", role: "group", "aria-labelledby": "auth-confirm-title" },
        h("h3", { id: "auth-confirm-title" }, started.step_up ? "Grant more scopes" : "Sign in at the authorization server"),
        h("p", {}, "The sign-in page of this authorization server opens in a new window. Check that you expect it:"),
        h(
          "dl",
          { class: "status" },
          row("Authorization server (issuer)", h("code", { "data-testid": "start-issuer" }, started.issuer)),
          row("Scopes you grant", h("span", { "data-testid": "start-scopes" }, scopeList(started.scopes, "none named (the authorization server decides)"))),
          row("For the server at", h("code", {}, started.resource)),
        ),
        started.previous_issuer
          ? h("p", { class: "alert alert-warn" }, `This replaces the authorization by ${started.previous_issuer}: afterwards confirm the summary and enable the server again.`)
          : null,
        h("div", { class: "actions" }, open, cancel),
      ),
    );
    open.focus();
  }

  function wait(started) {
    phase = "waiting";
    stopWaiting();
    const link = h("a", { href: started.authorization_url, target: "_blank", rel: "noopener noreferrer" }, "open the sign-in page");
    replace(
      actions,
      h(
        "div",
        { class: "card auth-waiting" },
        h("p", {}, h("strong", {}, "Waiting for the sign-in at "), h("code", {}, started.issuer), h("strong", {}, "…"), " This page shows the result by itself."),
        h("p", { class: "hint" }, "No window opened (a popup blocker)? ", link, "."),
        h("div", { class: "actions" }, h("button", { type: "button", onclick: () => drawActions() }, "Stop waiting")),
      ),
    );
    paste.element.hidden = false;
    const before = view.oauth ? view.oauth.authorized_at : null;
    const expires = started.expires_at ? Date.parse(started.expires_at) : Date.now() + 10 * 60 * 1000;
    const state = { before, expires, timer: null, channel: null };
    waiting = state;
    state.timer = setInterval(() => check(state, null), POLL_MS);
    if (typeof BroadcastChannel !== "undefined") {
      state.channel = new BroadcastChannel(CHANNEL);
      state.channel.addEventListener("message", (event) => {
        const message = event.data || {};
        if (message.type === "mcp-center.oauth" && message.server_id === id) check(state, message);
      });
    }
  }

  function stopWaiting() {
    if (!waiting) return;
    clearInterval(waiting.timer);
    if (waiting.channel) waiting.channel.close();
    waiting = null;
  }

  /** A live signal (or a poll) arrived while waiting: read the view and decide. */
  async function check(state, message) {
    if (waiting !== state) return;
    const fresh = await reload();
    if (waiting !== state) return;
    const o = fresh.oauth || {};
    if (o.authorized && o.authorized_at && o.authorized_at !== state.before) {
      drawActions();
      showAuthorized(o.issuer, o.scopes);
    } else if (message && !message.ok) {
      drawActions();
      showResult("error", h("strong", {}, "Authorization failed"), ` · ${message.code || "error"}`, o.last_error ? ` · ${errorText(o.last_error)}` : " · see the sign-in window for the reason.");
    } else if (!o.pending && !message) {
      drawActions();
      showResult("error", h("strong", {}, "The sign-in did not complete"), o.last_error ? ` · ${o.last_error.code}: ${errorText(o.last_error)}` : ". Authorize again.");
    } else if (Date.now() > state.expires) {
      drawActions();
      showResult("error", h("strong", {}, "The sign-in was not completed in time"), ". Authorize again.");
    }
  }

  // ----- paste fallback and forget ------------------------------------------------------------------

  function pasteForm() {
    const input = h("input", { type: "url", id: "auth-callback-url", name: "callback_url", autocomplete: "off", spellcheck: "false", required: true });
    const submit = h("button", { type: "submit" }, "Complete authorization");
    const form = h(
      "form",
      { class: "auth-paste", "aria-labelledby": "auth-paste-title" },
      h("h3", { id: "auth-paste-title" }, "The browser could not reach this host?"),
      h("p", { class: "hint" }, "If you signed in on another machine or the sign-in window ended on an error page, copy the full address it ended on and paste it here. It is sent once and cleared."),
      h("label", { for: "auth-callback-url" }, "Redirect URL"),
      input,
      h("div", { class: "actions" }, submit),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const value = input.value.trim();
      input.value = ""; // the address carries a one-time code: never kept in the page
      if (!value) return;
      submit.disabled = true;
      try {
        const done = await oauthApi.complete(id, value);
        await reload();
        drawActions();
        showAuthorized(done.issuer, done.scopes);
      } catch (err) {
        await reload();
        showError(err);
      } finally {
        submit.disabled = false;
      }
    });
    return { element: form };
  }

  forgetButton.addEventListener("click", async () => {
    const ok = await confirmDialog({
      title: `Forget the authorization of ${view.name}?`,
      text: "The refresh token, client registration and access token are deleted. The server cannot connect until someone authorizes it again.",
      ok: "Forget",
    });
    if (!ok) return;
    try {
      await oauthApi.forget(id);
      toast("Authorization forgotten.");
      await reload();
      drawActions();
      showResult("ok", "Authorization forgotten. Authorize again to connect.");
    } catch (err) {
      showError(err);
    }
  });

  drawState();
  drawActions();

  const unsubscribe = feed.subscribe((list) => {
    const fresh = list.find((s) => s.id === id);
    if (!fresh) return;
    const changed = JSON.stringify([fresh.oauth, fresh.trusted, fresh.enabled]) !== JSON.stringify([view.oauth, view.trusted, view.enabled]);
    view = fresh;
    if (!changed) return;
    drawState();
    if (phase === "idle") drawActions();
  });
  const offEvents = feed.onEvent((event) => {
    if (event.type === "server.oauth" && event.server_id === id && waiting) check(waiting, null);
  });
  return () => {
    stopWaiting();
    unsubscribe();
    offEvents();
  };
}
