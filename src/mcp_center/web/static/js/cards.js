// The cards a human answers: an agent's tool call waiting for approval (R-5.3) and a server's
// elicitation request (R-6.1), with the form generated from the requested schema.
//
// Everything a card shows that came from a server or an agent (arguments, annotations, the
// elicitation message, field titles) is untrusted text: it is set with textContent (dom.js) and
// labelled as what it is. Answers are sent once and never kept in the page after the card closes.

import { cards } from "./api.js";
import { confirmDialog, h, ownValue, pretty, replace, setOwn, toast, uid } from "./dom.js";
import { HINTS, hintMeaning } from "./tools.js";

const HINT_LABELS = {
  readOnlyHint: "read-only",
  destructiveHint: "destructive",
  idempotentHint: "idempotent",
  openWorldHint: "open world",
};

/** "at 14:05 (in 9 min)" for an ISO time in the future, "expired" once it passed. */
export function expiresText(iso) {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return "";
  const seconds = Math.round((at - Date.now()) / 1000);
  const clock = new Date(at).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (seconds <= 0) return `expired at ${clock}`;
  const left = seconds < 90 ? `${seconds} s` : `${Math.round(seconds / 60)} min`;
  return `at ${clock} (in ${left})`;
}

function hintList(hints) {
  const entries = Object.entries(hints || {}).filter(([, value]) => value !== null && value !== undefined);
  if (!entries.length) return h("span", { class: "muted" }, "none");
  return h(
    "ul",
    { class: "badges" },
    entries.map(([key, value]) =>
      h(
        "li",
        { class: `hint-badge ${value === false ? "no" : "yes"}`, title: typeof value === "boolean" && Object.hasOwn(HINTS, key) ? hintMeaning(key, value) : null },
        typeof value === "boolean" ? `${value ? "" : "not "}${ownValue(HINT_LABELS, key) || key}` : `${key}: ${value}`,
      ),
    ),
  );
}

/** Who asked for an approval: the gateway token and the agent's clientInfo, or the REST API (R-5.3). */
export function callerText(caller) {
  if (!caller || caller.via === "library") return h("span", {}, "a program using the Python library");
  if (caller.via === "rest_api") return h("span", {}, "the REST API (POST /api/tools/…/call, with the admin token)");
  const token = caller.token_name ? ["gateway token ", h("strong", {}, caller.token_name)] : ["the gateway"];
  const id = caller.token_id ? h("span", { class: "muted" }, ` (id ${caller.token_id})`) : null;
  const client = caller.client
    ? [" · client ", h("code", {}, `${caller.client.name}${caller.client.version ? ` ${caller.client.version}` : ""}`), h("span", { class: "muted" }, " (as it names itself)")]
    : [h("span", { class: "muted" }, " · the client did not name itself")];
  return h("span", { "data-testid": "approval-caller" }, token, id, client);
}

function serverLink(serverId, section = "approvals") {
  return h("a", { href: `#/servers/${encodeURIComponent(serverId)}/${section}` }, serverId);
}

/** The message of a refused answer, in words for the card (409s: already answered, interrupted). */
function refusal(err) {
  const state = err.details && err.details.state;
  if (err.code === "MCP_APPROVAL_CLOSED") return `Already ${state || "closed"}: the decision was made elsewhere or the call ended. Nothing was changed.`;
  if (err.code === "MCP_APPROVAL_NOT_FOUND") return "This approval is gone (the host restarted or forgot it). Nothing was changed.";
  if (err.code === "MCP_INTERACTION_CLOSED") return `This request is ${state || "closed"}: it was answered elsewhere or its call ended. Your answer was not sent.`;
  if (err.code === "MCP_INTERACTION_NOT_DELIVERED") return "mcp-center restarted while this request was open: the server is no longer waiting, so the answer cannot be delivered and the call failed.";
  if (err.code === "MCP_INTERACTION_NOT_FOUND") return "This request is gone. Your answer was not sent.";
  return `${err.code}: ${err.message}`;
}

const GONE = new Set(["MCP_APPROVAL_CLOSED", "MCP_APPROVAL_NOT_FOUND", "MCP_INTERACTION_CLOSED", "MCP_INTERACTION_NOT_DELIVERED", "MCP_INTERACTION_NOT_FOUND"]);

/**
 * A pending approval (R-5.3): tool, server, arguments, the server's hints (untrusted), expiry,
 * and Approve / Deny. `onAnswered(id)` runs after the decision was taken (or found taken already).
 */
export function approvalCard(approval, { showServer, onAnswered }) {
  const headingId = uid("approval");
  const status = h("div", { class: "card-status", "aria-live": "polite" });
  const approve = h("button", { type: "button", class: "primary" }, "Approve");
  const deny = h("button", { type: "button", class: "danger" }, "Deny");
  const decide = async (decision) => {
    el.dataset.busy = "true"; // inbox.js moves the focus on when this card leaves
    approve.disabled = deny.disabled = true;
    try {
      await cards.decide(approval.id, decision);
      toast(decision === "approve" ? `Approved: ${approval.server_tool} is being sent to ${approval.server_id}.` : `Denied: ${approval.server_tool} was not sent.`);
      onAnswered(approval.id);
    } catch (err) {
      if (GONE.has(err.code)) {
        toast(refusal(err));
        onAnswered(approval.id);
      } else {
        replace(status, h("p", { class: "alert alert-error", role: "alert" }, `${err.code}: ${err.message}`));
        approve.disabled = deny.disabled = false;
        delete el.dataset.busy;
      }
    }
  };
  approve.addEventListener("click", () => decide("approve"));
  deny.addEventListener("click", () => decide("deny"));
  const el = h(
    "article",
    { class: "card inbox-card approval-card", "aria-labelledby": headingId, "data-approval": approval.id, "data-server": approval.server_id },
    h("h3", { id: headingId, tabindex: "-1" }, "Tool call: ", h("code", {}, approval.server_tool)),
    h(
      "dl",
      { class: "status" },
      showServer ? [h("dt", {}, "Server"), h("dd", {}, serverLink(approval.server_id))] : null,
      h("dt", {}, "Asked by"),
      h("dd", {}, callerText(approval.caller)),
      h("dt", {}, "Called as"),
      h("dd", {}, h("code", {}, approval.tool)),
      h("dt", {}, "Arguments"),
      h("dd", {}, h("pre", { class: "arguments" }, pretty(approval.arguments))),
      h("dt", {}, "Server hints"),
      h("dd", {}, h("p", { class: "hint" }, "Untrusted hints from the server: they never make a call safe."), hintList(approval.hints)),
      h("dt", {}, "Expires"),
      h("dd", {}, h("time", { datetime: approval.expires_at }, expiresText(approval.expires_at)), h("span", { class: "muted" }, " · then the call fails and is not sent")),
    ),
    h("div", { class: "actions" }, approve, deny),
    status,
  );
  return el;
}

// ----- elicitation form -------------------------------------------------------------------------

const FORMAT_INPUT = { email: "email", uri: "url", date: "date" };
const FORMAT_HINT = { email: "an email address", uri: "a URL such as https://example.com", date: "a date (YYYY-MM-DD)", "date-time": "a date and time such as 2025-01-31T09:30:00Z" };

/**
 * One control per field of the requested schema (the API's `fields`, parsed from
 * `requestedSchema` by the host: kind, title, options with their titles, limits, format,
 * default). Defaults are filled in. `read()` returns the content to send; a field left empty is
 * left out (the host then applies the schema's default, SEP-1034). `showErrors(list)` puts the
 * host's `details.errors` (`content.<name>`) next to their fields. Every field name round-trips
 * exactly (`__proto__`, `constructor`): the content is built with own properties (dom.js `setOwn`).
 */
export function elicitationForm(fields) {
  const controls = new Map();
  const elements = fields.map((field) => {
    const id = uid("field");
    const errorId = `${id}-error`;
    const hintId = `${id}-hint`;
    const title = field.title || field.name;
    const hasDefault = Object.prototype.hasOwnProperty.call(field, "default");
    const fallback = hasDefault ? field.default : undefined;
    const hintParts = [field.description, field.format ? `Expects ${ownValue(FORMAT_HINT, field.format) || field.format}.` : null, limitsText(field)].filter(Boolean);
    const hint = hintParts.length ? h("p", { class: "hint", id: hintId }, hintParts.join(" ")) : null;
    const error = h("p", { class: "field-error", id: errorId, hidden: true });
    const describedBy = [hint ? hintId : null, errorId].filter(Boolean).join(" ");
    const marker = field.required ? h("span", { class: "required", "aria-hidden": "true" }, " *") : null;
    const nameNote = title.toLowerCase() !== field.name.toLowerCase() ? h("span", { class: "muted" }, ` (${field.name})`) : null;
    let control;
    let focusable;
    let read;
    if (field.kind === "multi_enum") {
      const chosen = new Set(Array.isArray(fallback) ? fallback : []);
      const boxes = field.options.map((option) => {
        const boxId = uid("choice");
        const box = h("input", { type: "checkbox", id: boxId, value: option.value, checked: chosen.has(option.value) });
        return [box, h("label", { class: "checkbox", for: boxId }, box, option.label)];
      });
      control = h(
        "fieldset",
        { class: "choices", "aria-describedby": describedBy, "data-field": field.name },
        h("legend", {}, title, nameNote, marker),
        boxes.map(([, label]) => label),
      );
      focusable = boxes.length ? boxes[0][0] : control;
      read = () => {
        const values = boxes.filter(([box]) => box.checked).map(([box]) => box.value);
        return values.length || field.required || hasDefault ? values : undefined;
      };
      controls.set(field.name, { focusable, error, invalid: control, read });
      return h("div", { class: "field" }, control, hint, error);
    }
    const label = h("label", { for: id }, title, nameNote, marker);
    if (field.kind === "enum") {
      control = h(
        "select",
        { id, "data-field": field.name },
        field.required && hasDefault ? null : h("option", { value: "" }, "(not set)"),
        field.options.map((option) => h("option", { value: option.value, selected: fallback === option.value }, option.label)),
      );
      read = () => (control.value === "" ? undefined : control.value);
    } else if (field.kind === "boolean" && (field.required || hasDefault)) {
      control = h("input", { id, type: "checkbox", checked: fallback === true, "data-field": field.name });
      read = () => control.checked;
    } else if (field.kind === "boolean") {
      control = h(
        "select",
        { id, "data-field": field.name },
        [["", "(not set)"], ["true", "Yes"], ["false", "No"]].map(([v, l]) => h("option", { value: v }, l)),
      );
      read = () => (control.value === "" ? undefined : control.value === "true");
    } else if (field.kind === "number" || field.kind === "integer") {
      control = h("input", {
        id,
        type: "number",
        step: field.kind === "integer" ? "1" : "any",
        min: field.minimum ?? null,
        max: field.maximum ?? null,
        value: fallback ?? "",
        "data-field": field.name,
      });
      // A text the browser cannot read as a number is sent as text: the host names the field.
      read = () => (control.value === "" ? (control.validity.badInput ? "not a number" : undefined) : Number(control.value));
    } else {
      const type = field.secret ? "password" : ownValue(FORMAT_INPUT, field.format) || "text";
      control = h("input", {
        id,
        type,
        value: fallback ?? "",
        minlength: field.min_length ?? null,
        maxlength: field.max_length ?? null,
        autocomplete: field.secret ? "off" : null,
        spellcheck: "false",
        "data-field": field.name,
      });
      // Cleared on purpose: a field with a default sends "" (not the default); without one it is left out.
      read = () => (control.value === "" && !hasDefault ? undefined : control.value);
    }
    if (field.required && control.type !== "checkbox") control.setAttribute("aria-required", "true");
    control.setAttribute("aria-describedby", describedBy);
    controls.set(field.name, { focusable: control, error, invalid: control, read });
    return h("div", { class: "field" }, label, control, hint, error);
  });
  return {
    element: elements.length ? h("div", { class: "schema-form" }, elements) : h("p", { class: "muted" }, "The server asks for no fields: accept, decline or cancel."),
    read() {
      const content = {};
      for (const field of fields) {
        const value = controls.get(field.name).read();
        if (value !== undefined) setOwn(content, field.name, value);
      }
      return content;
    },
    /** Show the host's field errors; returns the first control to focus, or null. Clears old errors first. */
    showErrors(errors) {
      let first = null;
      for (const { error, invalid } of controls.values()) {
        error.hidden = true;
        error.textContent = "";
        invalid.removeAttribute("aria-invalid");
      }
      const rest = [];
      for (const item of errors) {
        const name = String(item.field || "").replace(/^content\./, "");
        const entry = controls.get(name);
        if (!entry || item.field === "content") {
          rest.push(item);
          continue;
        }
        entry.error.textContent = `${item.message} (${item.code})`;
        entry.error.hidden = false;
        entry.invalid.setAttribute("aria-invalid", "true");
        first = first || entry.focusable;
      }
      return { first, rest };
    },
  };
}

function limitsText(field) {
  const parts = [];
  if (field.minimum !== undefined && field.maximum !== undefined) parts.push(`From ${field.minimum} to ${field.maximum}.`);
  else if (field.minimum !== undefined) parts.push(`At least ${field.minimum}.`);
  else if (field.maximum !== undefined) parts.push(`At most ${field.maximum}.`);
  if (field.min_items !== undefined || field.max_items !== undefined) {
    parts.push(`Choose ${field.min_items ?? 0}${field.max_items !== undefined ? `–${field.max_items}` : " or more"}.`);
  }
  if (field.min_length !== undefined || field.max_length !== undefined) {
    parts.push(`${field.min_length ?? 0}–${field.max_length ?? "∞"} characters.`);
  }
  return parts.join(" ");
}

function callsText(calls) {
  if (!calls || !calls.length) return null;
  return h(
    "ul",
    { class: "plain" },
    calls.map((call) => h("li", {}, h("code", {}, call.tool), call.caller === "agent" ? " called by an agent" : " called by you (playground or CLI)")),
  );
}

function firstText(result) {
  const block = ((result && result.content) || []).find((b) => b.type === "text");
  if (!block) return "";
  return block.text.length > 160 ? `${block.text.slice(0, 160)}…` : block.text;
}

/**
 * An elicitation card (R-6.1): the server's message (untrusted), the call it belongs to, the form
 * generated from the requested schema with its defaults, Accept / Decline / Cancel; or, for a card
 * interrupted by a restart (R-6.3), what happened and a Retry that asks first.
 * `onAnswered(id)` runs once the card is closed (answered here, or found closed already);
 * `onRetried({tool, serverId, result})` gets the result of a re-sent call (the card itself closes).
 */
export function interactionCard(card, { showServer, onAnswered, onRetried }) {
  const headingId = uid("question");
  const status = h("div", { class: "card-status", "aria-live": "polite" });
  const interrupted = card.state === "interrupted";
  const head = h(
    "h3",
    { id: headingId, tabindex: "-1" },
    interrupted ? "Interrupted question" : "Question",
    " from ",
    showServer ? serverLink(card.server_id) : card.server_id,
  );
  const facts = h(
    "dl",
    { class: "status" },
    h("dt", {}, "Message from the server"),
    h("dd", {}, h("p", { class: "hint" }, "Untrusted text from the server: never type a secret it has no business asking for."), h("blockquote", { class: "server-message" }, card.message)),
    card.calls && card.calls.length ? [h("dt", {}, "During the call of"), h("dd", {}, callsText(card.calls))] : null,
    interrupted
      ? [h("dt", {}, "What happened"), h("dd", {}, `${card.reason || "mcp-center restarted"}. The answer can no longer reach the server and the call failed; nothing was delivered.`)]
      : [h("dt", {}, "Expires"), h("dd", {}, h("time", { datetime: card.expires_at }, expiresText(card.expires_at)), h("span", { class: "muted" }, " · then the server is told 'cancel'"))],
  );
  const schema = card.requested_schema ? h("details", {}, h("summary", {}, "Requested schema"), h("pre", {}, pretty(card.requested_schema))) : null;
  const shell = h("article", { class: "card inbox-card interaction-card", "aria-labelledby": headingId, "data-interaction": card.id, "data-server": card.server_id, "data-state": card.state }, head, facts);

  if (interrupted) {
    const retry = h("button", { type: "button", class: "primary" }, "Retry the call");
    const tool = card.calls && card.calls.length ? card.calls[0].tool : "the call";
    retry.addEventListener("click", async () => {
      const ok = await confirmDialog({
        title: `Re-send ${tool}?`,
        text: "The call is sent again with the same arguments, as your own call. Only do this if running it twice is safe: the server may have done part of the work already. It may ask its question again.",
        ok: "Re-send the call",
      });
      if (!ok) return;
      retry.disabled = true;
      shell.dataset.busy = "true";
      replace(status, h("p", { class: "muted" }, `Re-sending ${tool}… if the server asks again, a new card appears.`));
      try {
        const answer = await cards.answer(card.id, { action: "retry" });
        toast(`Re-sent ${tool}: ${answer.result && answer.result.isError ? "the tool reported an error" : "done"}. ${firstText(answer.result)}`);
        onAnswered(card.id);
        if (onRetried && answer.result) onRetried({ tool, serverId: card.server_id, result: answer.result });
      } catch (err) {
        replace(status, h("p", { class: "alert alert-error", role: "alert" }, refusal(err)));
        if (err.code === "MCP_INTERACTION_CLOSED" || err.code === "MCP_INTERACTION_NOT_FOUND") onAnswered(card.id);
      }
    });
    shell.append(card.actions.includes("retry") ? h("div", { class: "actions" }, retry) : h("p", { class: "muted" }, "No retry is offered (its arguments were not kept, or it was re-sent already)."), status);
    return shell;
  }

  if (!card.actions.includes("accept")) {
    shell.append(h("p", { class: "muted" }, "This card belongs to another running mcp-center process and cannot be answered here."), schema);
    return shell;
  }

  const form = elicitationForm(card.fields || []);
  const accept = h("button", { type: "submit", class: "primary" }, "Accept");
  const decline = h("button", { type: "button" }, "Decline");
  const cancel = h("button", { type: "button", class: "quiet" }, "Cancel");
  const buttons = [accept, decline, cancel];
  const el = h(
    "form",
    { class: "elicitation", novalidate: true, "aria-labelledby": headingId },
    form.element,
    h("p", { class: "hint" }, "Accept sends these answers; Decline tells the server you will not answer; Cancel dismisses the question without a decision."),
    h("div", { class: "actions" }, buttons),
  );
  const send = async (body, done) => {
    shell.dataset.busy = "true"; // inbox.js moves the focus on when this card leaves
    for (const b of buttons) b.disabled = true;
    replace(status);
    try {
      await cards.answer(card.id, body);
      toast(done);
      onAnswered(card.id);
    } catch (err) {
      if (GONE.has(err.code)) {
        toast(refusal(err));
        onAnswered(card.id);
        return;
      }
      for (const b of buttons) b.disabled = false;
      delete shell.dataset.busy;
      if (err.code === "ELICITATION_ANSWER_INVALID") {
        const { first, rest } = form.showErrors(err.fieldErrors);
        replace(
          status,
          h(
            "p",
            { class: "alert alert-error", role: "alert" },
            "Some answers do not fit what the server asked for; see the marked fields. Nothing was sent.",
            rest.length ? h("ul", {}, rest.map((e) => h("li", {}, `${e.field}: ${e.message}`))) : null,
          ),
        );
        (first || accept).focus();
        return;
      }
      replace(status, h("p", { class: "alert alert-error", role: "alert" }, `${err.code}: ${err.message}`));
    }
  };
  el.addEventListener("submit", (event) => {
    event.preventDefault();
    send({ action: "accept", content: form.read() }, `Answer sent to ${card.server_id}.`);
  });
  decline.addEventListener("click", () => send({ action: "decline" }, `Declined: ${card.server_id} was told you will not answer.`));
  cancel.addEventListener("click", () => send({ action: "cancel" }, `Cancelled: ${card.server_id} was told the question was dismissed.`));
  shell.append(el, schema, status);
  return shell;
}
