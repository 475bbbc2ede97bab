// The Tools tab: each tool with its annotations (hints only: they never lower approval, R-5.1), its
// input schema, a per-tool enable switch, the approval policy (ask / allow / deny, R-5.3), and a
// call playground whose form is generated from the input schema. Switching a tool or its policy is
// a tool-permission change, so it is high-risk: the page says so first, and afterwards the
// server needs a new confirmation, test and enable.

import { servers } from "./api.js";
import { quarantineNotice } from "./catalog.js";
import { progressBar } from "./debug.js";
import { clipped, confirmDialog, h, pretty, replace, toast, uid } from "./dom.js";

/** Each annotation: its badge label, and what the server says with true and with false. */
export const HINTS = {
  readOnlyHint: ["read-only", "says it does not modify its environment", "says it may modify its environment"],
  destructiveHint: ["destructive", "says it may delete or overwrite", "says it only adds, never deletes or overwrites"],
  idempotentHint: ["idempotent", "says repeated calls have no extra effect", "says repeated calls may have more effect"],
  openWorldHint: ["open world", "says it reaches outside systems", "says it stays within a closed set of its own data"],
};

/** The tooltip of an annotation badge: what the server says with this value (hint only, never trusted). */
export function hintMeaning(key, value) {
  const [, yes, no] = HINTS[key];
  return `The server ${value ? yes : no} (hint only)`;
}

/** The annotation badges of a tool, labelled as the server's hints. */
function hintBadges(tool) {
  const annotations = tool.annotations || {};
  const badges = Object.entries(HINTS)
    .filter(([key]) => annotations[key] !== undefined)
    .map(([key, [label]]) =>
      h(
        "li",
        { class: `hint-badge ${annotations[key] ? "yes" : "no"}`, title: hintMeaning(key, Boolean(annotations[key])) },
        `${annotations[key] ? "" : "not "}${label}`,
      ),
    );
  if (!badges.length) return null;
  return h(
    "div",
    { class: "hints" },
    h("span", { class: "muted" }, "Server hints: "),
    h("ul", { class: "badges", "aria-label": "Annotations (hints from the server, never trusted for approval)" }, badges),
  );
}

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

/**
 * A form for a JSON schema of type object: one control per property (string, number, integer,
 * boolean, enum; objects, arrays and anything else as JSON).
 *
 * A field left empty is not sent, required or not, so the host's own check of the tool's
 * `required` names what is missing instead of the server seeing a made-up value: an empty
 * text box is no argument (not `""`), an empty number box no number, "(not set)" in a boolean or
 * enum list no choice (a boolean is a list, never a checkbox, whose unchecked state would send
 * `false`), a blank JSON box no value. A real `""` is sent from the playground's JSON editor, or
 * an enum that lists `""` as a choice.
 *
 * Returns `{element, read, showErrors}`: `read()` returns the arguments object, or throws
 * ArgumentsInvalid for a number box holding what is not a number or a JSON box that does not
 * parse (`read({lenient: true})` leaves such fields out instead); `showErrors(errors)` puts field
 * errors (`arguments.NAME`, the API's or ArgumentsInvalid's) next to their fields, clears the
 * others, and returns `{first, rest}`: the first invalid control and the errors no field matched.
 */
export function schemaForm(schema) {
  const properties = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const readers = [];
  const slots = new Map();
  const fields = Object.entries(properties).map(([name, prop]) => {
    const id = uid("arg");
    const type = prop.enum ? "enum" : mainType(prop);
    const label = h("label", { for: id }, name, required.has(name) ? h("span", { class: "required", "aria-hidden": "true" }, " *") : null, h("span", { class: "muted" }, ` (${type === "json" ? "JSON" : type})`));
    const hint = prop.description ? clipped(prop.description, { className: "hint" }) : null;
    if (hint) hint.id = uid("hint");
    const error = h("p", { class: "field-error", id: `${id}-error`, hidden: true });
    let control;
    let read;
    const fallback = prop.default;
    const problem = (code, message) => new ArgumentsInvalid([{ field: `arguments.${name}`, code, message }]);
    if (type === "enum" || type === "boolean") {
      const choices = type === "enum" ? prop.enum : [true, false];
      const chosen = choices.findIndex((v) => JSON.stringify(v) === JSON.stringify(fallback));
      control = h(
        "select",
        { id },
        h("option", { value: "", selected: chosen < 0 }, "(not set)"),
        choices.map((v, i) => h("option", { value: String(i), selected: i === chosen }, type === "enum" ? JSON.stringify(v) : String(v))),
      );
      read = () => (control.value === "" ? undefined : choices[Number(control.value)]);
    } else if (type === "number" || type === "integer") {
      control = h("input", { id, type: "number", step: type === "integer" ? "1" : "any", value: fallback ?? "" });
      read = () => {
        // A box holding what is not a number reads as "": say so rather than leave the argument out.
        if (control.validity.badInput) throw problem("NUMBER_INVALID", `is not a number`);
        return control.value === "" ? undefined : Number(control.value);
      };
    } else if (type === "string") {
      control = h("input", { id, type: "text", value: fallback ?? "", spellcheck: "false" });
      read = () => (control.value === "" ? undefined : control.value);
    } else {
      control = h("textarea", { id, rows: "3", spellcheck: "false" }, fallback !== undefined ? pretty(fallback) : "");
      read = () => {
        if (control.value.trim() === "") return undefined;
        try {
          return JSON.parse(control.value);
        } catch (err) {
          throw problem("JSON_INVALID", `is not valid JSON (${err.message})`);
        }
      };
    }
    if (required.has(name)) control.setAttribute("aria-required", "true");
    control.setAttribute("aria-describedby", [hint ? hint.id : null, error.id].filter(Boolean).join(" "));
    readers.push([name, read]);
    slots.set(name, { control, error });
    return h("div", { class: "field", "data-argument": name }, label, control, hint, error);
  });
  return {
    element: fields.length ? h("div", { class: "schema-form" }, fields) : h("p", { class: "muted" }, "This tool takes no arguments."),
    read({ lenient = false } = {}) {
      const args = {};
      const errors = [];
      for (const [name, read] of readers) {
        try {
          const value = read();
          if (value !== undefined) args[name] = value;
        } catch (err) {
          if (!(err instanceof ArgumentsInvalid)) throw err;
          errors.push(...err.errors);
        }
      }
      if (errors.length && !lenient) throw new ArgumentsInvalid(errors);
      return args;
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
 * What a running call is doing, from the live feed: the server's progress for this call's
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
 * ArgumentsInvalid (`arguments`: not JSON, or not an object); `fill(args)` shows `args`.
 */
function argumentsEditor() {
  const id = uid("args-json");
  const area = h("textarea", { id, rows: "6", spellcheck: "false", class: "json" });
  const hint = h("p", { class: "hint", id: `${id}-hint` }, 'Sent exactly as written, e.g. {"text": ""} sends an empty string. The form keeps its own values.');
  const error = h("p", { class: "field-error", id: `${id}-error`, hidden: true });
  area.setAttribute("aria-describedby", `${hint.id} ${error.id}`);
  const problem = (message) => new ArgumentsInvalid([{ field: "arguments", code: "JSON_INVALID", message }]);
  return {
    element: h("div", { class: "field" }, h("label", { for: id }, "Arguments (JSON object)"), area, hint, error),
    fill(args) {
      area.value = pretty(args);
    },
    read() {
      let value;
      try {
        value = JSON.parse(area.value.trim() === "" ? "{}" : area.value);
      } catch (err) {
        throw problem(`is not valid JSON (${err.message})`);
      }
      if (value === null || typeof value !== "object" || Array.isArray(value)) throw problem("must be a JSON object, {...}");
      return value;
    },
    showErrors(errors) {
      const mine = errors.filter((e) => e.field === "arguments");
      error.hidden = !mine.length;
      error.textContent = mine.map((e) => `${e.message} (${e.code})`).join(" ");
      if (mine.length) area.setAttribute("aria-invalid", "true");
      else area.removeAttribute("aria-invalid");
      return { first: mine.length ? area : null, rest: errors.filter((e) => e.field !== "arguments") };
    },
  };
}

function playground(view, tool, feed) {
  const form = schemaForm(tool.inputSchema);
  const editor = argumentsEditor();
  editor.element.hidden = true;
  const asJson = h("button", { type: "button", class: "quiet", "aria-pressed": "false" }, "Edit as JSON");
  asJson.addEventListener("click", () => {
    const json = editor.element.hidden;
    if (json) {
      // A field the page cannot read is left out; its text stays in the form.
      editor.fill(form.read({ lenient: true }));
    }
    editor.element.hidden = !json;
    form.element.hidden = json;
    asJson.setAttribute("aria-pressed", String(json));
    (json ? editor.element.querySelector("textarea") : form.element.querySelector("input, select, textarea"))?.focus();
  });
  const current = () => (editor.element.hidden ? form : editor);
  const output = h("div", { class: "call-output", "aria-live": "polite" });
  const progressBox = h("div", { class: "call-progress" });
  const questionBox = h("div", { class: "call-question" });
  const callButton = h("button", { type: "submit", class: "primary" }, `Call ${tool.name}`);
  const cancelButton = h("button", { type: "button", hidden: true }, "Cancel call");
  let operationId = null;
  cancelButton.addEventListener("click", () => {
    if (operationId) servers.cancel(operationId).catch(() => {});
  });
  const el = h(
    "form",
    { class: "playground", "aria-label": `Call ${tool.name}`, novalidate: true },
    h("div", { class: "playground-head" }, h("h4", {}, "Try it"), asJson),
    form.element,
    editor.element,
    h("div", { class: "actions" }, callButton, cancelButton),
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
      args = current().read();
    } catch (err) {
      if (!(err instanceof ArgumentsInvalid)) throw err;
      showProblem(`Not sent: ${err.message}`, err.errors);
      return;
    }
    current().showErrors([]);
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

const POLICIES = [
  ["ask", "Ask", "every agent call waits for your approval (Inbox)"],
  ["allow", "Allow", "agents call it without asking"],
  ["deny", "Deny", "agent calls are refused"],
];

/**
 * The approval policy of one tool: ask / allow / deny, chosen only by the user (annotations
 * never change it, R-5.1). Saving is a tool-permission change, so it is high-risk like the enable
 * switch: the page says so first and the server then needs confirm, test and enable again.
 * The update carries the version this tab read: a 409 is shown with a reload, never retried.
 */
function policyPicker(view, tool, { onPermissionsChanged, onReload }) {
  const name = uid("policy");
  const legendId = uid("policy-legend");
  const save = h("button", { type: "button", disabled: true }, "Save policy");
  const status = h("div", { "aria-live": "polite" });
  const radios = POLICIES.map(([value, label, meaning]) => {
    const id = uid("policy-option");
    const input = h("input", { type: "radio", id, name, value, checked: tool.policy === value });
    input.addEventListener("change", () => {
      save.disabled = chosen() === tool.policy;
    });
    return [input, h("label", { class: "checkbox", for: id }, input, h("span", {}, h("strong", {}, label), h("span", { class: "muted" }, ` · ${meaning}`)))];
  });
  const chosen = () => radios.map(([input]) => input).find((input) => input.checked)?.value;
  save.addEventListener("click", async () => {
    const policy = chosen();
    if (!policy || policy === tool.policy) return;
    const ok = await confirmDialog({
      title: `Set ${tool.name} to ${policy}?`,
      text: "Tool permissions are part of the connection summary: after this change the server is disabled until you confirm the new summary, test it and enable it again.",
      ok: "Set policy",
    });
    if (!ok) return;
    save.disabled = true;
    try {
      const after = await servers.setPolicy(view.id, tool.name, policy, view.version);
      toast(`${tool.name}: policy ${policy}; confirm the new summary.`);
      onPermissionsChanged(after);
    } catch (err) {
      save.disabled = false;
      if (err.code === "MCP_SERVER_VERSION_CONFLICT") {
        const reload = h("button", { type: "button" }, "Reload");
        reload.addEventListener("click", onReload);
        replace(
          status,
          h("div", { class: "alert alert-error", role: "alert" }, "This server changed since this page read it (another page, the CLI or the API). Nothing was saved. Reload to see the current settings, then choose again. ", reload),
        );
        reload.focus();
      } else {
        replace(status, h("p", { class: "alert alert-error", role: "alert" }, `${err.code}: ${err.message}`));
      }
    }
  });
  return h(
    "fieldset",
    { class: "policy", "aria-labelledby": legendId, "data-policy": tool.policy },
    h("legend", { id: legendId }, `Approval policy for ${tool.name}`),
    h("div", { class: "policy-options" }, radios.map(([, label]) => label)),
    h("div", { class: "policy-save" }, save, h("span", { class: "hint" }, `Now: ${tool.policy}. Server hints never change this.`)),
    status,
  );
}

/** Redraw the tab from the server's current record (after a 409), focus back on `toolName`'s policy. */
async function reloadTools(container, id, toolName, options) {
  try {
    await renderTools(container, await servers.get(id), options);
  } catch (err) {
    replace(container, h("p", { class: "alert alert-error", role: "alert" }, `${err.code}: ${err.message}`));
    return;
  }
  toast("Reloaded: these are the current settings.");
  container.querySelector(`li.tool[data-tool="${CSS.escape(toolName)}"] .policy input:checked`)?.focus();
}

/**
 * Draw the Tools tab of `view` into `container`. `onPermissionsChanged(view)` is called after a
 * tool switch was saved (the server then needs a new confirmation).
 */
export async function renderTools(container, view, { onPermissionsChanged, feed = null }) {
  if (!view.enabled || view.needs.length) {
    replace(
      container,
      h(
        "p",
        { class: "alert alert-info" },
        "Tools are read from the server's live session: confirm, test and enable the server first (Overview tab).",
      ),
    );
    return;
  }
  replace(container, h("p", { class: "muted" }, "Loading tools…"));
  let tools;
  let catalog = null;
  try {
    tools = await servers.tools(view.id);
    // The session is up now; its catalog says which tools were dropped as malformed.
    catalog = await servers.catalog(view.id).catch(() => null);
  } catch (err) {
    replace(container, h("p", { class: "alert alert-error", role: "alert" }, `${err.code}: ${err.message}`));
    return;
  }
  const list = h("ul", { class: "tools" });
  const pager = toolPager(tools, list, (tool) => {
    const toggle = h(
      "button",
      { type: "button", role: "switch", class: "switch", "aria-checked": String(tool.enabled), "aria-label": `Enabled for agents: ${tool.name}` },
      h("span", { class: "switch-knob" }),
    );
    toggle.addEventListener("click", async () => {
      const enable = !tool.enabled;
      const ok = await confirmDialog({
        title: `${enable ? "Enable" : "Disable"} ${tool.name}?`,
        text: "Tool permissions are part of the connection summary: after this change the server is disabled until you confirm the new summary, test it and enable it again.",
        ok: enable ? "Enable tool" : "Disable tool",
      });
      if (!ok) return;
      const fresh = await servers.get(view.id);
      const disabled = new Set(fresh.disabled_tools);
      if (enable) disabled.delete(tool.name);
      else disabled.add(tool.name);
      try {
        const after = await servers.patch(view.id, { version: fresh.version, disabled_tools: [...disabled].sort() });
        toast(`${tool.name} ${enable ? "enabled" : "disabled"}; confirm the new summary.`);
        onPermissionsChanged(after);
      } catch (err) {
        toast(`${err.code}: ${err.message}`);
      }
    });
    const headingId = uid("tool");
    return h(
      "li",
      { class: "tool", "data-tool": tool.name },
      h(
        "article",
        { "aria-labelledby": headingId },
        h(
          "div",
          { class: "tool-head" },
          h("h3", { id: headingId }, tool.title && tool.title !== tool.name ? `${tool.title} ` : "", h("code", {}, tool.name)),
          h("span", { class: "switch-label" }, toggle, tool.enabled ? " enabled" : " disabled"),
        ),
        tool.description ? clipped(tool.description) : null,
        hintBadges(tool),
        policyPicker(view, tool, { onPermissionsChanged, onReload: () => reloadTools(container, view.id, tool.name, { onPermissionsChanged, feed }) }),
        lazyDetails({}, "Input schema", () => h("pre", {}, pretty(tool.inputSchema))),
        tool.enabled
          ? lazyDetails({ class: "try" }, "Call playground", () => playground(view, tool, feed))
          : h("p", { class: "muted" }, "Disabled: agents do not see it and calls are refused."),
      ),
    );
  });
  replace(
    container,
    h("p", { class: "hint" }, `${tools.length} tools. Annotations are the server's own hints: mcp-center shows them but treats every tool as able to change things.`),
    catalog ? quarantineNotice(catalog.quarantined, { only: "tools" }) : null,
    pager.filter,
    list,
    pager.more,
  );
}

/** Tools from which on the tab offers a filter box. */
const FILTER_FROM = 12;
/** Tools drawn at a time: more come with "Show more", or by filtering (a server may list thousands). */
const PAGE = 100;

/**
 * Paging and filtering for the tools list: `build(tool)` makes a tool's `<li>` the first time it is
 * shown. Returns `{filter, more}`: the filter box (null under FILTER_FROM tools) and the "Show
 * more" button; the list shows the first PAGE matches, and each click adds PAGE more.
 */
function toolPager(tools, list, build) {
  const built = new Map();
  const haystacks = tools.map((tool) => `${tool.name}\n${tool.title || ""}\n${tool.description || ""}`.toLowerCase());
  const more = h("button", { type: "button", class: "show-more" });
  const count = h("span", { class: "hint", "aria-live": "polite" });
  let matches = [];
  let shown = 0;
  const item = (i) => {
    if (!built.has(i)) built.set(i, build(tools[i]));
    return built.get(i);
  };
  const showUpTo = (limit) => {
    list.append(...matches.slice(shown, limit).map(item));
    shown = Math.min(limit, matches.length);
    more.hidden = shown >= matches.length;
    more.textContent = `Show ${Math.min(PAGE, matches.length - shown)} more (${(matches.length - shown).toLocaleString("en")} not shown)`;
  };
  const apply = (needle) => {
    matches = tools.flatMap((_, i) => (!needle || haystacks[i].includes(needle) ? [i] : []));
    list.replaceChildren();
    shown = 0;
    showUpTo(PAGE);
    count.textContent = needle ? `${matches.length} of ${tools.length} tools match.` : "";
  };
  more.addEventListener("click", () => {
    const first = shown;
    showUpTo(shown + PAGE);
    list.children[first]?.querySelector("h3")?.setAttribute("tabindex", "-1");
    list.children[first]?.querySelector("h3")?.focus();
  });
  apply("");
  if (tools.length <= FILTER_FROM) return { filter: null, more };
  const id = uid("tool-filter");
  const input = h("input", { id, type: "search", autocomplete: "off", spellcheck: "false", placeholder: "name, title or description" });
  let timer = null;
  // One filtering pass after typing pauses, not one per key.
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => apply(input.value.trim().toLowerCase()), 150);
  });
  return { filter: h("div", { class: "field tool-filter" }, h("label", { for: id }, "Filter tools"), input, count), more };
}

/**
 * A `<details>` whose body is built the first time it is opened: a server with thousands of tools
 * draws its list fast, and only the schemas and playgrounds the user opens exist in the page.
 */
function lazyDetails(attrs, summary, build) {
  const details = h("details", attrs, h("summary", {}, summary));
  details.addEventListener("toggle", () => {
    if (details.open && details.children.length === 1) details.append(build());
  });
  return details;
}
