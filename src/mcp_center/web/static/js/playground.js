// A tool's call playground (the Tools tab, tools.js): a form generated from the tool's input schema,
// a JSON editor for what the form cannot say, Call / Cancel / Reset, the call's progress and
// question from the live feed (R-12.1, R-6.1), and its result. Arguments are passed through as the
// user gave them; the server validates (R-5.1), the host first checks the tool's `required` (R-7.3).

import { RawJson, servers } from "./api.js";
import { progressBar } from "./debug.js";
import { clipped, h, ownValue, pretty, replace, setOwn, uid } from "./dom.js";

function mainType(schema) {
  const type = schema && schema.type;
  if (Array.isArray(type)) return type.find((t) => t !== "null") || "string";
  return type || (schema && schema.enum ? "enum" : "json");
}

/**
 * A field problem found in the page before anything is sent: `errors` are `{field, code, message}`
 * in the shape of the API's field errors (`arguments.NAME`), so both are shown the same way.
 */
export class ArgumentsInvalid extends Error {
  constructor(errors) {
    super(errors.map((e) => `${e.field.replace(/^arguments\./, "")}: ${e.message}`).join("; "));
    this.errors = errors;
  }
}

/** How a schema default reads in a hint or placeholder: as JSON (a string in quotes, so "" shows). */
function defaultText(value) {
  return JSON.stringify(value) ?? String(value);
}

/**
 * A form for a JSON schema of type object: one control per property (string, number, integer,
 * boolean, enum; objects, arrays and anything else as JSON).
 *
 * A field left empty is not sent, required or not, so the host's own check of the tool's
 * `required` names what is missing (R-7.3) instead of the server seeing a made-up value: an empty
 * text box is no argument (not `""`), an empty number box no number, "(not set)" in a boolean or
 * enum list no choice (a boolean is a list, never a checkbox, whose unchecked state would send
 * `false`), a blank JSON box no value. A real `""` is sent from the playground's JSON editor, or
 * an enum that lists `""` as a choice.
 *
 * A schema `default` is shown, never filled in: it is the server's to apply when the argument is
 * absent (R-5.1: the schema is passed through, the server validates), so the field starts empty
 * with the default as its placeholder and hint, and "Use default" puts it in the field for the
 * user to send. A `default: null` is therefore never sent unless chosen.
 *
 * Every property name round-trips exactly (`__proto__`, `constructor`, `toString`): arguments are
 * built with own properties (dom.js `setOwn`) and read with `Object.hasOwn`.
 *
 * Returns `{element, read, fill, showErrors}`: `read()` returns the arguments object, or throws
 * ArgumentsInvalid for a number box holding what is not a number or a JSON box that does not
 * parse (`read({lenient: true})` leaves such fields out instead); `fill(args)` shows `args` in the
 * fields (a name it lacks empties its field) and returns the names it could not show (a value the
 * field cannot hold, such as `""` in a text box, or a name the schema does not list);
 * `showErrors(errors)` puts field errors (`arguments.NAME`, the API's or ArgumentsInvalid's) next
 * to their fields, clears the others, and returns `{first, rest}`: the first invalid control and
 * the errors no field matched.
 */
export function schemaForm(schema) {
  const properties = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const readers = [];
  const slots = new Map();
  const fields = Object.entries(properties).map(([name, raw]) => {
    const prop = raw !== null && typeof raw === "object" ? raw : {};
    const id = uid("arg");
    const type = prop.enum ? "enum" : mainType(prop);
    const label = h("label", { for: id }, name, required.has(name) ? h("span", { class: "required", "aria-hidden": "true" }, " *") : null, h("span", { class: "muted" }, ` (${type === "json" ? "JSON" : type})`));
    const hasDefault = Object.hasOwn(prop, "default");
    const shown = hasDefault ? defaultText(prop.default) : null;
    const hint = prop.description ? clipped(prop.description, { className: "hint" }) : null;
    if (hint) hint.id = uid("hint");
    const error = h("p", { class: "field-error", id: `${id}-error`, hidden: true });
    let control;
    let read;
    let set; // shows a value; false when the control cannot hold it (the field is then emptied)
    const problem = (code, message) => new ArgumentsInvalid([{ field: `arguments.${name}`, code, message }]);
    if (type === "enum" || type === "boolean") {
      const choices = type === "enum" ? prop.enum : [true, false];
      control = h(
        "select",
        { id },
        h("option", { value: "" }, hasDefault ? `(not set · default ${shown})` : "(not set)"),
        choices.map((v, i) => h("option", { value: String(i) }, type === "enum" ? JSON.stringify(v) : String(v))),
      );
      read = () => (control.value === "" ? undefined : choices[Number(control.value)]);
      set = (value) => {
        const i = value === undefined ? -1 : choices.findIndex((v) => JSON.stringify(v) === JSON.stringify(value));
        control.value = i < 0 ? "" : String(i);
        return value === undefined || i >= 0;
      };
    } else if (type === "number" || type === "integer") {
      control = h("input", { id, type: "number", step: type === "integer" ? "1" : "any", placeholder: hasDefault ? `default ${shown}` : null });
      read = () => {
        // A box holding what is not a number reads as "": say so rather than leave the argument out.
        if (control.validity.badInput) throw problem("NUMBER_INVALID", `is not a number`);
        if (control.value === "") return undefined;
        const number = Number(control.value);
        // A whole number past 2^53, which the page cannot hold exactly (99999999999999999999 would go
        // as 100000000000000000000, 10^21 as 1e+21), is refused here, never sent changed; the JSON
        // editor sends it as typed (fixb36). Fractions are doubles on every side, as JSON numbers usually are.
        if (/^-?\d+$/.test(control.value.trim()) && Math.abs(number) > 2 ** 53) {
          throw problem("NUMBER_INEXACT", "is a whole number too large to send exactly from the form (beyond 2^53); Edit as JSON sends it as typed");
        }
        return number;
      };
      set = (value) => {
        const fits = typeof value === "number" && Number.isFinite(value);
        control.value = fits ? String(value) : "";
        return value === undefined || fits;
      };
    } else if (type === "string") {
      control = h("input", { id, type: "text", spellcheck: "false", placeholder: hasDefault ? `default ${shown}` : null });
      read = () => (control.value === "" ? undefined : control.value);
      set = (value) => {
        const fits = typeof value === "string" && value !== "";
        control.value = fits ? value : "";
        return value === undefined || fits;
      };
    } else {
      control = h("textarea", { id, rows: "3", spellcheck: "false", placeholder: hasDefault ? `default ${pretty(prop.default)}` : null });
      read = () => {
        if (control.value.trim() === "") return undefined;
        try {
          return JSON.parse(control.value);
        } catch (err) {
          throw problem("JSON_INVALID", `is not valid JSON (${err.message})`);
        }
      };
      set = (value) => {
        control.value = value === undefined ? "" : pretty(value);
        return true;
      };
    }
    let useDefault = null;
    let defaultNote = null;
    if (hasDefault) {
      const fits = set(prop.default);
      set(undefined);
      defaultNote = h(
        "p",
        { class: "hint default-note", id: uid("default") },
        `Schema default ${shown}: not sent unless you enter it (left empty, the argument is absent and the server applies its default)`,
        fits ? "." : "; this field cannot hold it, Edit as JSON can.",
      );
      if (fits) {
        useDefault = h("button", { type: "button", class: "link-button use-default" }, "Use default");
        useDefault.addEventListener("click", () => {
          set(prop.default);
          control.dispatchEvent(new Event("input", { bubbles: true })); // the playground marks the field changed
          control.focus();
        });
      }
    }
    if (required.has(name)) control.setAttribute("aria-required", "true");
    control.setAttribute("aria-describedby", [hint ? hint.id : null, defaultNote ? defaultNote.id : null, error.id].filter(Boolean).join(" "));
    readers.push([name, read]);
    slots.set(name, { control, error, set });
    return h("div", { class: "field", "data-argument": name }, label, control, hint, defaultNote, useDefault, error);
  });
  return {
    element: fields.length ? h("div", { class: "schema-form" }, fields) : h("p", { class: "muted" }, "This tool takes no arguments."),
    read({ lenient = false } = {}) {
      const args = {};
      const errors = [];
      for (const [name, read] of readers) {
        try {
          const value = read();
          if (value !== undefined) setOwn(args, name, value);
        } catch (err) {
          if (!(err instanceof ArgumentsInvalid)) throw err;
          errors.push(...err.errors);
        }
      }
      if (errors.length && !lenient) throw new ArgumentsInvalid(errors);
      return args;
    },
    fill(args) {
      const left = Object.keys(args).filter((name) => !slots.has(name));
      for (const [name, { set }] of slots) {
        if (!set(ownValue(args, name)) && Object.hasOwn(args, name)) left.push(name);
      }
      return left;
    },
    showErrors(errors) {
      for (const { control, error } of slots.values()) {
        error.hidden = true;
        error.textContent = "";
        control.removeAttribute("aria-invalid");
      }
      let first = null;
      const rest = [];
      for (const item of errors) {
        const slot = slots.get(String(item.field || "").replace(/^arguments\./, ""));
        if (!slot || !String(item.field || "").startsWith("arguments.")) {
          rest.push(item);
          continue;
        }
        slot.error.textContent = `${item.message} (${item.code})`;
        slot.error.hidden = false;
        slot.control.setAttribute("aria-invalid", "true");
        first = first || slot.control;
      }
      return { first, rest };
    },
  };
}

/** The result of a call: content blocks, structured content, and whether the tool said it failed. */
export function resultView(result) {
  const blocks = (result.content || []).map((block) => {
    if (block.type === "text") return h("pre", { class: "result-text" }, block.text);
    if (block.type === "image" && /^image\/(png|jpeg|gif|webp)$/.test(block.mimeType || "")) {
      return h("img", { src: `data:${block.mimeType};base64,${block.data}`, alt: "image returned by the tool" });
    }
    return h("pre", {}, pretty(block));
  });
  return h(
    "div",
    { class: `result ${result.isError ? "is-error" : ""}` },
    h("p", {}, h("strong", {}, result.isError ? "The tool reported an error:" : "Result:")),
    blocks,
    result.structuredContent !== undefined
      ? h("details", {}, h("summary", {}, "Structured content"), h("pre", {}, pretty(result.structuredContent)))
      : null,
  );
}

/**
 * What a running call is doing, from the live feed (R-12.1): the server's progress for this call's
 * operation id as a progress bar, and a question it asks (an elicitation card) with a link to that
 * card in the Inbox, until it is answered. Returns an unsubscribe function.
 */
function followCall(feed, operationId, { progressBox, questionBox }) {
  if (!feed) return () => {};
  const asked = new Set();
  return feed.onEvent((event) => {
    if (event.type === "server.activity" && event.entry && event.entry.kind === "progress" && event.entry.operation_id === operationId) {
      replace(progressBox, progressBar(event.entry, "Progress of this call"));
    } else if (event.type === "interaction.created" && event.interaction && (event.interaction.calls || []).some((c) => c.operation_id === operationId)) {
      const card = event.interaction;
      asked.add(card.id);
      replace(
        questionBox,
        h(
          "p",
          { class: "alert alert-warn", role: "status", "data-testid": "call-waits" },
          "The server asked a question and this call waits for your answer: ",
          h("a", { href: `#/inbox/${encodeURIComponent(card.id)}` }, "answer it in the Inbox"),
          ". The call's timeout is paused meanwhile.",
        ),
      );
    } else if (event.type === "interaction.closed" && event.interaction && asked.has(event.interaction.id)) {
      const state = event.interaction.state;
      replace(questionBox, h("p", { class: "hint", role: "status", "data-testid": "call-waits" }, `The question was ${state}; the call goes on…`));
    }
  });
}

/**
 * The arguments as one JSON object, sent exactly as written: for what the form cannot say (an empty
 * string `""`, `null`, a value beside the schema). `read()` returns the object or throws
 * ArgumentsInvalid (`arguments`: not JSON, or not an object); `fill(args)` shows `args`;
 * `onEdit(fn)` runs `fn` whenever the user changes the text.
 */
function argumentsEditor() {
  const id = uid("args-json");
  const area = h("textarea", { id, rows: "6", spellcheck: "false", class: "json" });
  const hint = h(
    "p",
    { class: "hint", id: `${id}-hint` },
    'Sent exactly as written, e.g. {"text": ""} sends an empty string. What you write here is kept when you switch to the form and back (until Reset, or a call from the form); the form shows it.',
  );
  const error = h("p", { class: "field-error", id: `${id}-error`, hidden: true });
  area.setAttribute("aria-describedby", `${hint.id} ${error.id}`);
  const problem = (message) => new ArgumentsInvalid([{ field: "arguments", code: "JSON_INVALID", message }]);
  return {
    element: h("div", { class: "field" }, h("label", { for: id }, "Arguments (JSON object)"), area, hint, error),
    area,
    fill(args) {
      area.value = pretty(args);
    },
    onEdit(fn) {
      area.addEventListener("input", fn);
    },
    read() {
      let value;
      try {
        value = JSON.parse(this.text());
      } catch (err) {
        throw problem(`is not valid JSON (${err.message})`);
      }
      if (value === null || typeof value !== "object" || Array.isArray(value)) throw problem("must be a JSON object, {...}");
      return value;
    },
    /** The text to send: what `read()` accepts (one JSON object, nothing after it), as written. */
    text() {
      return area.value.trim() === "" ? "{}" : area.value;
    },
    /** `read()`'s check, then the text itself to send (`RawJson`): -0, 99999999999999999999, 1e400
     * and the order of keys reach the host as written, which refuses what JSON cannot carry. */
    readRaw() {
      this.read();
      return new RawJson(this.text());
    },
    showErrors(errors) {
      // The editor holds all the arguments: an error at any position in them shows here, with it.
      const ours = (e) => e.field === "arguments" || String(e.field || "").startsWith("arguments.");
      const mine = errors.filter(ours);
      error.hidden = !mine.length;
      error.textContent = mine.map((e) => `${e.field === "arguments" ? "" : `${e.field}: `}${e.message} (${e.code})`).join(" ");
      if (mine.length) area.setAttribute("aria-invalid", "true");
      else area.removeAttribute("aria-invalid");
      return { first: mine.length ? area : null, rest: errors.filter((e) => !ours(e)) };
    },
  };
}

/**
 * A tool's call playground: the schema form, or the JSON editor ("Edit as JSON"), and Call / Cancel
 * / Reset. The two views are one set of arguments: the editor starts from the form; text the user
 * wrote in it is kept exactly across switches (a switch back to the form fills the form from it;
 * JSON that does not parse keeps the editor open with the parse error, its text untouched); a field
 * then changed in the form replaces only its own name in that text. Reset empties both; a call from
 * the form lets the editor start from the form again, a call from the editor keeps its text.
 */
export function playground(view, tool, feed) {
  const form = schemaForm(tool.inputSchema);
  const editor = argumentsEditor();
  editor.element.hidden = true;
  /** True while the editor holds text the user wrote (not a copy of the form). */
  let written = false;
  /** Names of the fields changed in the form since it was filled from the editor's text. */
  const changed = new Set();
  editor.onEdit(() => {
    written = true;
  });
  const markChanged = (event) => {
    const name = event.target.closest("[data-argument]")?.dataset.argument;
    if (name !== undefined) changed.add(name);
  };
  form.element.addEventListener("input", markChanged);
  form.element.addEventListener("change", markChanged);
  const leftOut = h("p", { class: "alert alert-info left-out", role: "status", hidden: true });
  const showLeftOut = (names) => {
    leftOut.hidden = !names.length;
    leftOut.textContent = names.length
      ? `Not shown in the form, kept in the JSON: ${names.map((n) => JSON.stringify(n)).join(", ")} (a value its field cannot hold, or a name the schema does not list). A call from the form leaves them out; Edit as JSON sends them.`
      : "";
  };
  const formBox = h("div", { class: "form-view" }, leftOut, form.element);
  const asJson = h("button", { type: "button", class: "quiet", "aria-pressed": "false" }, "Edit as JSON");
  const show = (json) => {
    editor.element.hidden = !json;
    formBox.hidden = json;
    asJson.setAttribute("aria-pressed", String(json));
    (json ? editor.area : form.element.querySelector("input, select, textarea"))?.focus();
  };
  asJson.addEventListener("click", () => {
    if (editor.element.hidden) {
      let args = null;
      if (written && changed.size) {
        try {
          args = editor.read(); // it parsed when the form was filled from it, and is unchanged since
        } catch (err) {
          if (!(err instanceof ArgumentsInvalid)) throw err; // else: the text is left as written
        }
      }
      if (!written) {
        // A field the page cannot read is left out; its text stays in the form.
        editor.fill(form.read({ lenient: true }));
      } else if (args) {
        // The user's JSON, with what they changed in the form since put in (or taken out) by name.
        const fromForm = form.read({ lenient: true });
        for (const name of changed) {
          if (Object.hasOwn(fromForm, name)) setOwn(args, name, fromForm[name]);
          else delete args[name];
        }
        editor.fill(args);
      }
      changed.clear();
      editor.showErrors([]);
      show(true);
      return;
    }
    if (written) {
      let args;
      try {
        args = editor.read();
      } catch (err) {
        if (!(err instanceof ArgumentsInvalid)) throw err;
        // Never lose the text: stay here with the reason.
        editor.showErrors(err.errors).first?.focus();
        return;
      }
      editor.showErrors([]);
      form.showErrors([]);
      showLeftOut(form.fill(args));
      changed.clear();
    } else showLeftOut([]);
    show(false);
  });
  const current = () => (editor.element.hidden ? form : editor);
  const output = h("div", { class: "call-output", "aria-live": "polite" });
  const progressBox = h("div", { class: "call-progress" });
  const questionBox = h("div", { class: "call-question" });
  const callButton = h("button", { type: "submit", class: "primary" }, `Call ${tool.name}`);
  const cancelButton = h("button", { type: "button", hidden: true }, "Cancel call");
  const resetButton = h("button", { type: "button", class: "quiet" }, "Reset");
  let operationId = null;
  resetButton.addEventListener("click", () => {
    form.fill({});
    form.showErrors([]);
    editor.fill({});
    editor.showErrors([]);
    written = false;
    changed.clear();
    showLeftOut([]);
    replace(output);
    (editor.element.hidden ? form.element.querySelector("input, select, textarea") : editor.area)?.focus();
  });
  cancelButton.addEventListener("click", () => {
    if (operationId) servers.cancel(operationId).catch(() => {});
  });
  const el = h(
    "form",
    { class: "playground", "aria-label": `Call ${tool.name}`, novalidate: true },
    h("div", { class: "playground-head" }, h("h4", {}, "Try it"), asJson),
    formBox,
    editor.element,
    h("div", { class: "actions" }, callButton, cancelButton, resetButton),
    questionBox,
    progressBox,
    output,
  );
  /** Field errors next to their fields; the rest (and the summary) in the output. */
  const showProblem = (summary, errors) => {
    const { first, rest } = current().showErrors(errors);
    replace(
      output,
      h(
        "div",
        { class: "alert alert-error", role: "alert" },
        summary,
        rest.length ? h("ul", {}, rest.map((e) => h("li", {}, h("code", {}, e.field || "arguments"), `: ${e.message} (${e.code})`))) : null,
      ),
    );
    first?.focus();
  };
  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    let args;
    try {
      args = current() === editor ? editor.readRaw() : form.read();
    } catch (err) {
      if (!(err instanceof ArgumentsInvalid)) throw err;
      showProblem(`Not sent: ${err.message}`, err.errors);
      return;
    }
    current().showErrors([]);
    if (current() === form) {
      // The editor starts from the form again; the JSON only it held was not part of this call.
      written = false;
      changed.clear();
      showLeftOut([]);
    }
    operationId = crypto.randomUUID();
    callButton.disabled = true;
    cancelButton.hidden = false;
    replace(output, h("p", { class: "muted" }, `Calling ${tool.name}…`));
    replace(progressBox);
    replace(questionBox);
    const unfollow = followCall(feed, operationId, { progressBox, questionBox });
    try {
      replace(output, resultView(await servers.call(view.id, tool.name, args, operationId)));
    } catch (err) {
      showProblem(`${err.code}: ${err.message}`, err.fieldErrors || []);
    } finally {
      unfollow();
      replace(questionBox);
      operationId = null;
      callButton.disabled = false;
      cancelButton.hidden = true;
    }
  });
  return el;
}
