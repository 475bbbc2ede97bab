// The Prompts tab: the server's prompts as `/server:prompt` commands, each with a form for
// its arguments (required ones marked, label and the server's description), and "Get prompt",
// which shows the answer as an untrusted context block with its provenance (untrusted.js).
//
// Arguments are checked by the API, not here: a missing required argument comes back as
// REQUEST_INVALID with `details.errors[].field = "arguments.<name>"`, shown next to that field.
// An empty field is left out of the request (MCP prompt arguments are strings; "not given" is absent).
// A server that declares `completions` suggests values as the user types (debug.js, R-12.1).

import { CALL, api } from "./api.js";
import { quarantineNotice } from "./catalog.js";
import { forgetCompletions, offerCompletions } from "./debug.js";
import { clipped, h, replace, setOwn, uid } from "./dom.js";
import { errorAlert, liveSession, untrustedBlock, whyEmpty } from "./untrusted.js";

/** `GET /api/prompts` (every ready server), and one prompt's `prompts/get` as an untrusted block. */
const promptsApi = {
  list: () => api("GET", "/api/prompts").then((r) => r.prompts),
  get: (name, args) => api("POST", `/api/prompts/${encodeURIComponent(name)}/get`, { arguments: args }, CALL),
};

function argumentField(arg) {
  const id = uid("prompt-arg");
  const hintId = arg.description ? uid("hint") : null;
  const errorId = uid("error");
  const input = h("input", { id, type: "text", name: arg.name, spellcheck: "false", "aria-required": arg.required ? "true" : null, "aria-describedby": hintId });
  const error = h("p", { class: "field-error", id: errorId, hidden: true });
  const label = h(
    "label",
    { for: id },
    arg.title && arg.title !== arg.name ? `${arg.title} ` : "",
    h("code", {}, arg.name),
    arg.required ? h("span", { class: "required" }, " * ", h("span", { class: "visually-hidden" }, "(required)")) : h("span", { class: "muted" }, " (optional)"),
  );
  return {
    name: arg.name,
    input,
    element: h("div", { class: "field", "data-argument": arg.name }, label, input, hintId ? h("p", { class: "hint", id: hintId }, arg.description) : null, error),
    showError(message) {
      error.textContent = message;
      error.hidden = false;
      input.setAttribute("aria-invalid", "true");
      input.setAttribute("aria-describedby", [errorId, hintId].filter(Boolean).join(" "));
    },
    clearError() {
      error.hidden = true;
      error.textContent = "";
      input.removeAttribute("aria-invalid");
      if (hintId) input.setAttribute("aria-describedby", hintId);
      else input.removeAttribute("aria-describedby");
    },
  };
}

function promptItem(prompt) {
  const fields = prompt.arguments.map(argumentField);
  // The server's suggestions for each argument (completion/complete, R-12.1), given the others' values.
  const others = (name) => Object.fromEntries(fields.filter((f) => f.name !== name && f.input.value !== "").map((f) => [f.name, f.input.value]));
  for (const field of fields) {
    field.element.append(
      offerCompletions(field.input, { serverId: prompt.server_id, ref: { type: "ref/prompt", name: prompt.prompt }, name: field.name, context: () => others(field.name) }),
    );
  }
  const output = h("div", { class: "prompt-output", "aria-live": "polite" });
  const submit = h("button", { type: "submit", class: "primary" }, "Get prompt");
  const headingId = uid("prompt");
  const form = h(
    "form",
    { class: "prompt-form", "aria-label": `Get ${prompt.command}`, novalidate: true },
    fields.length ? fields.map((f) => f.element) : h("p", { class: "muted" }, "This prompt takes no arguments."),
    fields.some((f) => f.input.getAttribute("aria-required")) ? h("p", { class: "hint" }, h("span", { class: "required" }, "*"), " required") : null,
    h("div", { class: "actions" }, submit),
    output,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const args = {};
    for (const field of fields) {
      field.clearError();
      if (field.input.value !== "") setOwn(args, field.name, field.input.value); // `__proto__` is a name too
    }
    submit.disabled = true;
    submit.setAttribute("aria-busy", "true");
    replace(output, h("p", { class: "muted" }, `Getting ${prompt.command}…`));
    try {
      const answer = await promptsApi.get(prompt.name, args);
      replace(output, untrustedBlock(answer, { label: `Untrusted context: ${prompt.command}` }));
    } catch (err) {
      // Field errors next to their fields, and the error with its code above the button.
      let first = null;
      for (const fe of err.fieldErrors || []) {
        const field = fields.find((f) => `arguments.${f.name}` === fe.field);
        if (!field) continue;
        field.showError(`${fe.code}: ${fe.message}`);
        first = first || field;
      }
      replace(output, errorAlert(err));
      if (first) first.input.focus();
    } finally {
      submit.disabled = false;
      submit.removeAttribute("aria-busy");
    }
  });
  return h(
    "li",
    { class: "prompt", "data-prompt": prompt.prompt },
    h(
      "article",
      { "aria-labelledby": headingId },
      h("h3", { id: headingId }, h("code", {}, prompt.command), prompt.title && prompt.title !== prompt.prompt ? ` ${prompt.title}` : ""),
      prompt.description ? clipped(prompt.description) : null,
      form,
    ),
  );
}

/** Draw the Prompts tab of `view` into `container`. */
export async function renderPrompts(container, view) {
  const again = () => renderPrompts(container, view);
  forgetCompletions(view.id);
  replace(container, h("p", { class: "muted" }, "Loading prompts…"));
  let prompts;
  try {
    // Listing first connects an enabled server that is not connected yet.
    prompts = view.enabled && !(view.needs && view.needs.length) ? (await promptsApi.list()).filter((p) => p.server_id === view.id) : [];
  } catch (err) {
    replace(container, errorAlert(err));
    return;
  }
  const live = await liveSession(container, view, "Prompts", { retry: again });
  if (!live) return;
  const quarantined = live.catalog ? quarantineNotice(live.catalog.quarantined, { only: "prompts" }) : null;
  if (!prompts.length) {
    replace(container, quarantined, whyEmpty(live.catalog, "prompts", "prompts"));
    return;
  }
  replace(
    container,
    h(
      "p",
      { class: "hint" },
      `${prompts.length} ${prompts.length === 1 ? "prompt" : "prompts"}. Agents see each as a /server:prompt command. What a prompt returns is the server's text: it comes back as untrusted context, never as instructions.`,
    ),
    quarantined,
    h("ul", { class: "prompts" }, prompts.map(promptItem)),
  );
}
