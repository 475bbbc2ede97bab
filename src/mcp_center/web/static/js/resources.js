// The Resources tab (R-5.5): an `@` search over this server's resources and resource templates
// (`GET /api/resources?q=&server_id=`; typing `@foo` or `foo` searches the same, debounced), and a
// read (`POST /api/resources/read`) shown as an untrusted block with its provenance between the
// random delimiters the API chose (untrusted.js). A resource template gets a small form for the
// variables of its RFC 6570 URI template (with the server's completions when it declares them,
// debug.js, R-12.1); the URI it builds is shown, then read.

import { CALL, api } from "./api.js";
import { quarantineNotice } from "./catalog.js";
import { forgetCompletions, offerCompletions } from "./debug.js";
import { clipped, h, ownValue, replace, uid } from "./dom.js";
import { bytesText, emptyState, errorAlert, liveSession, untrustedBlock, whyEmpty } from "./untrusted.js";

const SEARCH_LIMIT = 100;
const DEBOUNCE_MS = 250;

const resourcesApi = {
  search: (serverId, q) => api("GET", `/api/resources?server_id=${encodeURIComponent(serverId)}&q=${encodeURIComponent(q)}&limit=${SEARCH_LIMIT}`),
  read: (serverId, uri) => api("POST", "/api/resources/read", { server_id: serverId, uri }, CALL),
};

/** The search text of the box: `@foo`, `foo` and `@<this server>:foo` (a mention) all search `foo`. */
export function searchText(value, serverId) {
  let q = value.trim();
  if (q.startsWith("@")) q = q.slice(1);
  const mention = `${serverId}:`;
  if (q.startsWith(mention)) q = q.slice(mention.length);
  return q.trim();
}

// RFC 6570 operators: [first, separator, named, allow reserved characters].
const OPERATORS = {
  "": ["", ",", false, false],
  "+": ["", ",", false, true],
  "#": ["#", ",", false, true],
  ".": [".", ".", false, false],
  "/": ["/", "/", false, false],
  ";": [";", ";", true, false],
  "?": ["?", "&", true, false],
  "&": ["&", "&", true, false],
};
const EXPRESSION = /\{([^{}]*)\}/g;
const VARSPEC = /^([A-Za-z0-9_%.]+)(?::(\d+))?(\*)?$/;

function encodeValue(value, reserved) {
  if (reserved) return encodeURI(value).replace(/%25([0-9A-Fa-f]{2})/g, "%$1");
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The variables of a URI template with whether each is optional (query-style expressions are). */
export function templateVariables(template) {
  const seen = new Map();
  for (const [, raw] of template.matchAll(EXPRESSION)) {
    const op = raw && "+#./;?&".includes(raw[0]) ? raw[0] : "";
    for (const spec of raw.slice(op.length).split(",")) {
      const m = VARSPEC.exec(spec.trim());
      if (m && !seen.has(m[1])) seen.set(m[1], { name: m[1], optional: op !== "" && "?&;#".includes(op) });
    }
  }
  return [...seen.values()];
}

/** Expand an RFC 6570 URI template (levels 1-3, prefix modifiers) with string `values`; empty values are left out. */
export function expandTemplate(template, values) {
  return template.replace(EXPRESSION, (whole, raw) => {
    const op = raw && "+#./;?&".includes(raw[0]) ? raw[0] : "";
    const [first, separator, named, reserved] = OPERATORS[op];
    const parts = [];
    for (const spec of raw.slice(op.length).split(",")) {
      const m = VARSPEC.exec(spec.trim());
      if (!m) continue;
      let value = ownValue(values, m[1]); // a variable named `constructor` is not Object
      if (value === undefined || value === null || value === "") continue;
      value = String(value);
      if (m[2]) value = value.slice(0, Number(m[2]));
      const encoded = encodeValue(value, reserved);
      parts.push(named ? `${m[1]}=${encoded}` : encoded);
    }
    return parts.length ? first + parts.join(separator) : "";
  });
}

function facts(entry) {
  const items = [];
  if (entry.mime_type) items.push(entry.mime_type);
  if (entry.kind === "resource") items.push(typeof entry.size === "number" ? bytesText(entry.size) : "size unknown");
  return items.join(" · ");
}

/** Draw the Resources tab of `view` into `container`. */
export async function renderResources(container, view) {
  const again = () => renderResources(container, view);
  forgetCompletions(view.id);
  replace(container, h("p", { class: "muted" }, "Loading resources…"));
  let first;
  try {
    // The first search also connects an enabled server that is not connected yet (R-3.2).
    first = view.enabled && !(view.needs && view.needs.length) ? await resourcesApi.search(view.id, "") : null;
  } catch (err) {
    replace(container, errorAlert(err));
    return;
  }
  const live = await liveSession(container, view, "Resources", { retry: again });
  if (!live) return;
  const catalog = live.catalog;
  const quarantined = catalog ? [quarantineNotice(catalog.quarantined, { only: "resources" }), quarantineNotice(catalog.quarantined, { only: "resource_templates" })] : null;
  if (!first.resources.length) {
    replace(container, quarantined, whyEmpty(catalog, "resources", "resources"));
    return;
  }

  const readHeading = h("h3", { id: uid("read"), tabindex: "-1" }, "Read");
  const readOutput = h("div", { class: "read-output", "aria-live": "polite" }, h("p", { class: "muted" }, "Choose Read on a resource, or fill a template, to see its content here."));
  const readSection = h("section", { class: "resource-read", "aria-labelledby": readHeading.id }, readHeading, readOutput);

  async function read(uri, button) {
    if (button) {
      button.disabled = true;
      button.setAttribute("aria-busy", "true");
    }
    replace(readOutput, h("p", { class: "muted" }, `Reading ${uri}…`));
    try {
      const answer = await resourcesApi.read(view.id, uri);
      replace(readOutput, untrustedBlock(answer, { label: `Untrusted context: ${uri}` }));
    } catch (err) {
      replace(readOutput, h("p", {}, "Reading ", h("code", {}, uri), " failed:"), errorAlert(err));
    } finally {
      if (button) {
        button.disabled = false;
        button.removeAttribute("aria-busy");
      }
    }
    readSection.scrollIntoView({ block: "start" });
    readHeading.focus({ preventScroll: true });
  }

  function templateForm(entry) {
    const variables = templateVariables(entry.uri_template);
    const built = h("code", { class: "built-uri" }, entry.uri_template);
    const error = h("p", { class: "field-error", role: "alert", hidden: true });
    const inputs = variables.map((v) => {
      const id = uid("template-var");
      const input = h("input", { id, type: "text", name: v.name, spellcheck: "false", "aria-required": v.optional ? null : "true" });
      input.addEventListener("input", () => update());
      return {
        ...v,
        input,
        element: h("div", { class: "field" }, h("label", { for: id }, h("code", {}, v.name), v.optional ? h("span", { class: "muted" }, " (optional)") : h("span", { class: "required" }, " * ", h("span", { class: "visually-hidden" }, "(required)"))), input),
      };
    });
    const values = () => Object.fromEntries(inputs.map((i) => [i.name, i.input.value]));
    // The server's suggestions for each variable (completion/complete on the template, R-12.1).
    for (const i of inputs) {
      const others = () => Object.fromEntries(inputs.filter((o) => o !== i && o.input.value !== "").map((o) => [o.name, o.input.value]));
      i.element.append(offerCompletions(i.input, { serverId: view.id, ref: { type: "ref/resource", uri: entry.uri_template }, name: i.name, context: others }));
    }
    const update = () => replace(built, expandTemplate(entry.uri_template, values()));
    const submit = h("button", { type: "submit", class: "primary" }, "Build URI and read");
    const form = h(
      "form",
      { class: "template-form", "aria-label": `Fill ${entry.uri_template}`, novalidate: true },
      inputs.map((i) => i.element),
      h("p", { class: "hint" }, "URI: ", built),
      error,
      h("div", { class: "actions" }, submit),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const missing = inputs.filter((i) => !i.optional && i.input.value === "");
      for (const i of inputs) i.input.removeAttribute("aria-invalid");
      if (missing.length) {
        for (const i of missing) i.input.setAttribute("aria-invalid", "true");
        error.textContent = `Fill in ${missing.map((i) => i.name).join(", ")} to build the URI.`;
        error.hidden = false;
        missing[0].input.focus();
        return;
      }
      error.hidden = true;
      read(expandTemplate(entry.uri_template, values()), submit);
    });
    return form;
  }

  function entryItem(entry) {
    const headingId = uid("resource");
    const uri = entry.kind === "resource" ? entry.uri : entry.uri_template;
    const title = entry.title && entry.title !== entry.name ? `${entry.title} ` : "";
    let action;
    if (entry.kind === "resource") {
      action = h("button", { type: "button", "aria-label": `Read ${entry.uri}` }, "Read");
      action.addEventListener("click", () => read(entry.uri, action));
    } else {
      action = h("details", { class: "try" }, h("summary", {}, "Fill the template"), templateForm(entry));
    }
    return h(
      "li",
      { class: `resource kind-${entry.kind}`, "data-uri": uri },
      h(
        "article",
        { "aria-labelledby": headingId },
        h(
          "div",
          { class: "resource-head" },
          h("h4", { id: headingId }, title, entry.name),
          h("span", { class: "badge kind-badge" }, entry.kind === "resource" ? "resource" : "template"),
        ),
        h("p", { class: "resource-uri" }, h("code", {}, uri)),
        facts(entry) ? h("p", { class: "hint" }, facts(entry)) : null,
        entry.description ? clipped(entry.description) : null,
        action,
      ),
    );
  }

  const results = h("div", { class: "resource-results", "aria-live": "polite" });
  function showResults(answer, q) {
    if (!answer.resources.length) {
      replace(results, emptyState(`No resource or resource template of this server matches “${q}”.`));
      return;
    }
    const count = answer.resources.length;
    replace(
      results,
      h("p", { class: "hint", "data-testid": "result-count" }, `${count}${count === SEARCH_LIMIT ? "+" : ""} ${count === 1 ? "match" : "matches"}${q ? ` for “${q}”` : ""}.`),
      h("ul", { class: "resources" }, answer.resources.map(entryItem)),
    );
  }

  const searchId = uid("resource-search");
  const hintId = uid("hint");
  const box = h("input", { id: searchId, type: "search", autocomplete: "off", spellcheck: "false", placeholder: "@name, URI or description", "aria-describedby": hintId });
  let timer = null;
  let sequence = 0;
  async function search() {
    const q = searchText(box.value, view.id);
    sequence += 1;
    const mine = sequence;
    try {
      const answer = await resourcesApi.search(view.id, q);
      if (mine === sequence) showResults(answer, q);
    } catch (err) {
      if (mine === sequence) replace(results, errorAlert(err));
    }
  }
  box.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(search, DEBOUNCE_MS);
  });
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      clearTimeout(timer);
      search();
    }
  });
  showResults(first, "");
  replace(
    container,
    h(
      "div",
      { class: "field resource-search", role: "search" },
      h("label", { for: searchId }, "Search resources (@)"),
      box,
      h("p", { class: "hint", id: hintId }, "Type @ and part of a name, title, URI or description; templates are included. Results are this server's only."),
    ),
    quarantined,
    results,
    readSection,
  );
}
