// Add / edit a server: a form and a JSON mode over the same model, switchable without losing edits.
//
// The model is the server's editable configuration as the API reads it (R-1.1 names), with the
// secret names as lists (`secret_env`, `secret_headers`). Secret *values* never enter the model or
// the JSON editor: they live only in password inputs (and, while the user switches modes, in a
// variable of this module), are sent once in `secret_values` on submit, and are cleared at once,
// whatever the answer. Validation is the server's: its `details.errors[].field` is shown next to the
// field it names; a 409 version conflict is shown with a reload option and never overwritten.

import { ApiError, servers } from "./api.js";
import { h, ownValue, pretty, replace, setOwn, toast, uid } from "./dom.js";
import { TRANSPORTS } from "./format.js";

const COMMON = ["id", "name", "transport", "connect_on_startup", "call_timeout_s", "startup_timeout_s", "disabled_tools", "tool_policies"];
const STDIO = ["command", "args", "cwd", "env", "secret_env", "sandbox"];
/** A new sandbox's policy as the host's defaults (config/sandbox.py), shown when the box is ticked. */
const SANDBOX_DEFAULTS = { network: "none", memory_mb: 4096, max_processes: 256, max_open_files: 1024, paths: [] };
const REMOTE = ["url", "headers", "secret_headers", "auth"];

/** The client-side presets. They only fill the form; nothing is saved until "Save". */
export const TEMPLATES = [
  {
    key: "stdio",
    title: "Local program (uvx)",
    text: "A Python server from PyPI, pinned and isolated: uvx --isolated --from <package>==<version> <command>. Always give the exact version: what you confirm is what runs. Replace the example package, version and command with your server's.",
    model: {
      name: "Time",
      transport: "stdio",
      command: "uvx",
      args: ["--isolated", "--from", "mcp-server-time==2026.10.19", "mcp-server-time"],
      env: {},
      secret_env: [],
    },
  },
  {
    key: "npx",
    title: "Local program (npx)",
    text: "A Node.js server from npm, pinned: npx -y <package>@<version>. Always give the exact version (no @latest): what you confirm is what runs. Needs Node.js (npx) on the host.",
    model: {
      name: "Everything",
      transport: "stdio",
      command: "npx",
      args: ["-y", "@modelcontextprotocol/server-everything@2026.8.31"],
      env: {},
      secret_env: [],
    },
  },
  {
    key: "streamable_http",
    title: "Remote server (Streamable HTTP)",
    text: "The current MCP transport for servers on the network. https is required except for localhost.",
    model: { name: "", transport: "streamable_http", url: "https://", headers: {}, secret_headers: [], auth: { kind: "none" } },
  },
  {
    key: "sse",
    title: "Legacy HTTP+SSE (for old servers only)",
    text: "The 2024-11-05 transport. Use it only for a server that does not speak Streamable HTTP yet.",
    model: { name: "", transport: "sse", url: "https://", headers: {}, secret_headers: [], auth: { kind: "none" } },
  },
];

const isRemote = (transport) => transport === "streamable_http" || transport === "sse";

/** `model` with the fields of the other transport family removed and this one's defaults filled in. */
function forTransport(model, transport) {
  const out = { ...model, transport };
  for (const key of isRemote(transport) ? STDIO : REMOTE) delete out[key];
  if (isRemote(transport)) {
    out.url ??= "https://";
    out.headers ??= {};
    out.secret_headers ??= [];
    out.auth ??= { kind: "none" };
  } else {
    out.command ??= "";
    out.args ??= [];
    out.env ??= {};
    out.secret_env ??= [];
    out.sandbox ??= null;
  }
  return out;
}

/** The sandbox policy's extra paths as textarea lines: `/path` read-only, `rw /path` writable. */
function pathLines(paths) {
  return (paths || []).map((p) => (p.writable ? `rw ${p.path}` : p.path)).join("\n");
}

function parsePathLines(text) {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => (line.startsWith("rw ") ? { path: line.slice(3).trim(), writable: true } : { path: line, writable: false }));
}

/** The editable model of a server view, and which secrets are configured. */
export function modelFromView(view) {
  const model = {};
  for (const key of [...COMMON, ...(isRemote(view.transport) ? REMOTE : STDIO)]) {
    if (key in view) model[key] = structuredClone(view[key]);
  }
  const configured = { env: {}, headers: {}, bearer: false };
  if (!isRemote(view.transport)) {
    model.secret_env = Object.keys(view.secret_env || {});
    for (const [k, v] of Object.entries(view.secret_env || {})) setOwn(configured.env, k, v.configured);
  } else {
    model.secret_headers = Object.keys(view.secret_headers || {});
    for (const [k, v] of Object.entries(view.secret_headers || {})) setOwn(configured.headers, k, v.configured);
    if (model.auth && model.auth.kind === "bearer") {
      configured.bearer = Boolean(model.auth.token && model.auth.token.configured);
      model.auth = { kind: "bearer" };
    }
  }
  return { model, configured };
}

function field(path, labelText, control, hint) {
  const error = h("p", { class: "field-error", id: uid("err"), hidden: true });
  const hintEl = hint ? h("p", { class: "hint", id: uid("hint") }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  const id = control.id || uid("f");
  control.id = id;
  return h("div", { class: "field", "data-field": path }, h("label", { for: id }, labelText), control, hintEl, error);
}

/**
 * Draw the editor into `container`.
 *
 * @param {HTMLElement} container
 * @param {object} options
 * @param {"create"|"edit"} options.mode
 * @param {object} [options.view]  the server as read (edit mode)
 * @param {(view: object) => void} options.onSaved  called with the server as the API answered
 */
export function renderEditor(container, { mode, view, onSaved }) {
  let base = view ? modelFromView(view).model : forTransport(structuredClone(TEMPLATES.find((t) => t.key === "streamable_http").model), "streamable_http");
  let configured = view ? modelFromView(view).configured : { env: {}, headers: {}, bearer: false };
  let version = view ? view.version : null;
  let editing = "form";
  // The other servers' names, to say so when this one would look like one of them.
  let otherServers = [];
  const nameChecks = [];
  servers
    .list()
    .then((list) => {
      otherServers = list.filter((other) => !view || other.id !== view.id).map((other) => ({ id: other.id, name: other.name }));
      for (const check of nameChecks.splice(0)) check();
    })
    .catch(() => {});
  // Secret values typed but not yet sent, kept only while the user switches modes or transports.
  let pending = { env: {}, headers: {}, bearer: "" };

  const errorBox = h("div", { class: "alert alert-error", role: "alert", tabindex: "-1", hidden: true });
  const conflictBox = h("div", { class: "alert alert-warn", role: "alert", tabindex: "-1", hidden: true });
  const formFields = h("div", { class: "form-fields" });
  const jsonArea = h("textarea", { id: uid("json"), class: "json", rows: "22", spellcheck: "false", "aria-describedby": "json-hint" });
  const jsonError = h("p", { class: "field-error", role: "alert", hidden: true });
  const jsonPane = h(
    "div",
    { class: "json-pane", hidden: true },
    h("label", { for: jsonArea.id }, "Configuration (JSON)"),
    h(
      "p",
      { class: "hint", id: "json-hint" },
      "The same model as the form. Secret values are not part of it: list secret names in secret_env / secret_headers and type their values in form mode.",
    ),
    jsonArea,
    jsonError,
  );
  const formButton = h("button", { type: "button", "aria-pressed": "true" }, "Form");
  const jsonButton = h("button", { type: "button", "aria-pressed": "false" }, "JSON");
  const saveButton = h("button", { type: "submit", class: "primary" }, mode === "create" ? "Save and review" : "Save");
  const form = h(
    "form",
    { class: "editor", novalidate: true, "aria-label": mode === "create" ? "New server" : "Edit server" },
    h("div", { class: "mode-switch", role: "group", "aria-label": "Editing mode" }, formButton, jsonButton),
    errorBox,
    conflictBox,
    formFields,
    jsonPane,
    h(
      "div",
      { class: "actions" },
      saveButton,
      mode === "create" ? h("a", { href: "#/", class: "button quiet" }, "Cancel") : null,
    ),
  );

  // ----- form mode ------------------------------------------------------------------------------

  function kvRows(kind, obj, label) {
    const list = h("div", { class: "rows" });
    const add = (name = "", value = "") => {
      const nameInput = h("input", { type: "text", value: name, "aria-label": `${label} name`, class: "kv-name", spellcheck: "false" });
      const valueInput = h("input", { type: "text", value, "aria-label": `${label} value`, class: "kv-value", spellcheck: "false" });
      const rowEl = h("div", { class: "row kv", "data-field": `${kind}.${name}`, "data-kind": kind });
      nameInput.addEventListener("input", () => {
        rowEl.dataset.field = `${kind}.${nameInput.value}`;
      });
      const remove = h("button", { type: "button", class: "quiet", "aria-label": `Remove ${label.toLowerCase()}` }, "Remove");
      remove.addEventListener("click", () => rowEl.remove());
      replace(rowEl, nameInput, valueInput, remove, h("p", { class: "field-error", hidden: true }));
      list.append(rowEl);
      return nameInput;
    };
    for (const [k, v] of Object.entries(obj || {})) add(k, v);
    const addButton = h("button", { type: "button", class: "quiet" }, `Add ${label.toLowerCase()}`);
    addButton.addEventListener("click", () => add().focus());
    return h("fieldset", { class: "group", "data-field": kind }, h("legend", {}, label + "s"), list, addButton, h("p", { class: "field-error", hidden: true }));
  }

  function secretRows(kind, names, label, states, typed) {
    const list = h("div", { class: "rows" });
    const add = (name = "") => {
      const nameInput = h("input", { type: "text", value: name, "aria-label": `${label} name`, class: "secret-name", spellcheck: "false" });
      const valueInput = h("input", {
        type: "password",
        autocomplete: "new-password",
        "aria-label": `${label} value`,
        class: "secret-value",
        placeholder: ownValue(states, name) ? "configured · type to replace" : "value",
      });
      // Own names only: `typed["constructor"]` of a plain object is Object, not a typed secret.
      if (ownValue(typed, name)) valueInput.value = ownValue(typed, name);
      const state = h("span", { class: ownValue(states, name) ? "ok" : "warn" }, ownValue(states, name) ? "configured" : "not set");
      const rowEl = h("div", { class: "row secret", "data-field": `${kind}.${name}`, "data-kind": kind });
      nameInput.addEventListener("input", () => {
        rowEl.dataset.field = `${kind}.${nameInput.value}`;
      });
      const remove = h("button", { type: "button", class: "quiet", "aria-label": `Remove ${label.toLowerCase()}` }, "Remove");
      remove.addEventListener("click", () => rowEl.remove());
      replace(rowEl, nameInput, valueInput, state, remove, h("p", { class: "field-error", hidden: true }));
      list.append(rowEl);
      return nameInput;
    };
    for (const name of names || []) add(name);
    const addButton = h("button", { type: "button", class: "quiet" }, `Add ${label.toLowerCase()}`);
    addButton.addEventListener("click", () => add().focus());
    return h(
      "fieldset",
      { class: "group", "data-field": kind },
      h("legend", {}, label + "s"),
      h("p", { class: "hint" }, "Write-only: stored encrypted, never shown again. Leave a value empty to keep what is configured."),
      list,
      addButton,
      h("p", { class: "field-error", hidden: true }),
    );
  }

  /** The sandbox policy: off, or network, limits and extra host paths. */
  function sandboxFields(policy) {
    const on = h("input", { type: "checkbox", name: "sandbox.enabled", checked: Boolean(policy) });
    const p = policy || SANDBOX_DEFAULTS;
    const details = h(
      "div",
      { class: "sandbox-fields", hidden: !policy },
      field(
        "sandbox.network",
        "Network",
        h(
          "select",
          { name: "sandbox.network" },
          [["none", "None (not even the host's loopback)"], ["egress", "Egress (the host's network)"]].map(([v, l]) => h("option", { value: v, selected: v === p.network }, l)),
        ),
        "npx/uvx download packages on their first start: with no network, warm the sandbox up first (mcp-center sandbox warm-up).",
      ),
      field("sandbox.memory_mb", "Memory (MiB, optional)", h("input", { type: "number", name: "sandbox.memory_mb", min: "64", step: "1", value: p.memory_mb ?? "" }), "Private writable memory per process. Empty: no limit."),
      field("sandbox.max_processes", "Processes at most", h("input", { type: "number", name: "sandbox.max_processes", min: "8", step: "1", value: p.max_processes })),
      field("sandbox.max_open_files", "Open files at most", h("input", { type: "number", name: "sandbox.max_open_files", min: "32", step: "1", value: p.max_open_files })),
      field("sandbox.paths", "Host paths it may see (optional)", h("textarea", { name: "sandbox.paths", rows: "3", spellcheck: "false" }, pathLines(p.paths)), "One absolute path per line, read-only; start a line with 'rw ' to make it writable."),
    );
    on.addEventListener("change", () => {
      details.hidden = !on.checked;
    });
    return h(
      "fieldset",
      { class: "group", "data-field": "sandbox" },
      h("legend", {}, "Sandbox"),
      field("sandbox.enabled", "Run in a sandbox (bubblewrap): read-only system, a private home, no view of mcp-center's data", on),
      details,
      h("p", { class: "field-error", hidden: true }),
    );
  }

  function drawForm(model) {
    const controls = [];
    const name = h("input", { type: "text", name: "name", value: model.name ?? "", required: true, autocomplete: "off" });
    const nameField = field("name", "Name", name);
    const nameNote = h("p", { class: "name-note", role: "status", "data-testid": "name-taken" });
    nameField.insertBefore(nameNote, nameField.querySelector(".field-error"));
    const checkName = () => {
      const wanted = name.value.trim().toLowerCase();
      const same = wanted ? otherServers.filter((other) => other.name.trim().toLowerCase() === wanted) : [];
      nameNote.textContent = same.length
        ? `Another server is already named “${same[0].name}” (id ${same.map((o) => o.id).join(", ")}). Both would show the same name in the list, the inbox and approvals: pick a name that tells them apart, unless that is what you want.`
        : "";
    };
    name.addEventListener("input", checkName);
    nameChecks.push(checkName);
    checkName();
    controls.push(nameField);
    if (mode === "create") {
      controls.push(
        field("id", "Id (optional)", h("input", { type: "text", name: "id", value: model.id ?? "", autocomplete: "off", spellcheck: "false" }), "A short slug (a-z, 0-9, -). Derived from the name when empty; it cannot change later."),
      );
    }
    const transport = h(
      "select",
      { name: "transport" },
      Object.entries(TRANSPORTS).map(([value, label]) => h("option", { value, selected: value === model.transport }, label)),
    );
    transport.addEventListener("change", () => {
      const current = readForm();
      keepSecrets();
      drawForm(forTransport(current, transport.value));
      formFields.querySelector('[name="transport"]').focus();
    });
    controls.push(field("transport", "Transport", transport, model.transport === "sse" ? "Legacy HTTP+SSE is for old servers only." : null));

    if (!isRemote(model.transport)) {
      controls.push(
        field("command", "Command", h("input", { type: "text", name: "command", value: model.command ?? "", spellcheck: "false", required: true }), "One program (no shell): uvx, npx, node, python, or an absolute path."),
        field("args", "Arguments", h("textarea", { name: "args", rows: "4", spellcheck: "false" }, (model.args || []).join("\n")), "One argument per line, passed as is: no quoting, pipes or $VARIABLES (empty lines are dropped; use JSON mode for an empty argument)."),
        field("cwd", "Working directory (optional)", h("input", { type: "text", name: "cwd", value: model.cwd ?? "", spellcheck: "false" }), "An absolute path."),
        kvRows("env", model.env, "Environment variable"),
        secretRows("secret_env", model.secret_env, "Secret environment variable", configured.env, pending.env),
        sandboxFields(model.sandbox),
      );
    } else {
      const auth = model.auth || { kind: "none" };
      const authKind = h(
        "select",
        { name: "auth.kind" },
        [["none", "None"], ["bearer", "Bearer token"], ["oauth", "OAuth 2.1"]].map(([v, l]) => h("option", { value: v, selected: v === auth.kind }, l)),
      );
      authKind.addEventListener("change", () => {
        const current = readForm();
        keepSecrets();
        current.auth = { kind: authKind.value };
        drawForm(current);
        formFields.querySelector('[name="auth.kind"]').focus();
      });
      const authFields = [field("auth.kind", "Authorization", authKind)];
      if (auth.kind === "bearer") {
        const token = h("input", {
          type: "password",
          name: "bearer_token",
          autocomplete: "new-password",
          placeholder: configured.bearer ? "configured · type to replace" : "token",
        });
        if (pending.bearer) token.value = pending.bearer;
        authFields.push(field("auth.token", `Bearer token (${configured.bearer ? "configured" : "not set"})`, token, "Write-only: sent as Authorization: Bearer …, never shown again."));
      } else if (auth.kind === "oauth") {
        authFields.push(
          field("auth.client_id", "Client id (optional)", h("input", { type: "text", name: "auth.client_id", value: auth.client_id ?? "" }), "Empty: registered dynamically on first authorization."),
          field("auth.scopes", "Scopes (optional)", h("input", { type: "text", name: "auth.scopes", value: (auth.scopes || []).join(" ") }), "Space-separated."),
          h(
            "p",
            { class: "placeholder-note" },
            "After saving and confirming the summary, sign in on the server's Authorization tab: it shows the authorization server and the scopes first.",
          ),
        );
      }
      controls.push(
        field("url", "URL", h("input", { type: "url", name: "url", value: model.url ?? "", spellcheck: "false", required: true }), model.transport === "sse" ? "The SSE endpoint (often …/sse)." : "The MCP endpoint (often …/mcp). No credentials in it: use a secret header or auth."),
        kvRows("headers", model.headers, "Header"),
        secretRows("secret_headers", model.secret_headers, "Secret header", configured.headers, pending.headers),
        h("fieldset", { class: "group" }, h("legend", {}, "Authorization"), authFields),
      );
    }
    controls.push(
      h(
        "details",
        { class: "advanced" },
        h("summary", {}, "Advanced"),
        field("connect_on_startup", "Connect when mcp-center starts", h("input", { type: "checkbox", name: "connect_on_startup", checked: model.connect_on_startup !== false })),
        field("call_timeout_s", "Call timeout (seconds)", h("input", { type: "number", name: "call_timeout_s", min: "1", max: "3600", step: "any", value: model.call_timeout_s ?? 60 })),
        field("startup_timeout_s", "Start-up timeout (seconds, optional)", h("input", { type: "number", name: "startup_timeout_s", min: "1", max: "600", step: "any", value: model.startup_timeout_s ?? "" }), "Empty: 60 s for stdio, 30 s for remote servers."),
      ),
    );
    base = model;
    replace(formFields, controls);
  }

  const value = (name) => formFields.querySelector(`[name="${name}"]`);
  const numberOrRaw = (raw) => (raw.trim() === "" ? undefined : Number.isFinite(Number(raw)) ? Number(raw) : raw);

  /** The model as the form shows it (fields the form has no control for are kept from `base`). */
  function readForm() {
    const model = { ...base };
    model.name = value("name").value;
    if (mode === "create") {
      const id = value("id").value.trim();
      if (id) model.id = id;
      else delete model.id;
    }
    model.transport = value("transport").value;
    const rows = (kind) => [...formFields.querySelectorAll(`.row[data-kind="${kind}"]`)];
    if (!isRemote(model.transport)) {
      model.command = value("command").value;
      model.args = value("args").value.split("\n").filter((line) => line !== "");
      const cwd = value("cwd").value.trim();
      model.cwd = cwd || null;
      model.env = Object.fromEntries(rows("env").map((r) => [r.querySelector(".kv-name").value.trim(), r.querySelector(".kv-value").value]).filter(([k]) => k));
      model.secret_env = rows("secret_env").map((r) => r.querySelector(".secret-name").value.trim()).filter(Boolean);
      if (value("sandbox.enabled").checked) {
        const memory = numberOrRaw(value("sandbox.memory_mb").value);
        model.sandbox = {
          network: value("sandbox.network").value,
          memory_mb: memory === undefined ? null : memory,
          max_processes: numberOrRaw(value("sandbox.max_processes").value) ?? SANDBOX_DEFAULTS.max_processes,
          max_open_files: numberOrRaw(value("sandbox.max_open_files").value) ?? SANDBOX_DEFAULTS.max_open_files,
          paths: parsePathLines(value("sandbox.paths").value),
        };
      } else {
        model.sandbox = null;
      }
    } else {
      model.url = value("url").value.trim();
      model.headers = Object.fromEntries(rows("headers").map((r) => [r.querySelector(".kv-name").value.trim(), r.querySelector(".kv-value").value]).filter(([k]) => k));
      model.secret_headers = rows("secret_headers").map((r) => r.querySelector(".secret-name").value.trim()).filter(Boolean);
      const kind = value("auth.kind").value;
      const auth = { kind };
      if (kind === "oauth") {
        const previous = base.auth && base.auth.kind === "oauth" ? base.auth : {};
        // Settings the form has no control for (grant, client_metadata_url, ...) are kept as they are.
        Object.assign(auth, previous, { kind });
        delete auth.client_id;
        delete auth.scopes;
        // Right after switching the kind to OAuth its inputs are not drawn yet: keep what was there.
        const clientId = value("auth.client_id") ? value("auth.client_id").value.trim() : previous.client_id;
        const scopes = value("auth.scopes") ? value("auth.scopes").value.split(/\s+/).filter(Boolean) : previous.scopes || [];
        if (clientId) auth.client_id = clientId;
        if (scopes.length) auth.scopes = scopes;
        if (previous.binding) auth.binding = previous.binding;
      }
      model.auth = auth;
    }
    model.connect_on_startup = value("connect_on_startup").checked;
    const call = numberOrRaw(value("call_timeout_s").value);
    if (call === undefined) delete model.call_timeout_s;
    else model.call_timeout_s = call;
    model.startup_timeout_s = numberOrRaw(value("startup_timeout_s").value) ?? null;
    return model;
  }

  /** Move typed secret values from the password inputs into `pending` (before a redraw). */
  function keepSecrets() {
    for (const rowEl of formFields.querySelectorAll(".row.secret")) {
      const name = rowEl.querySelector(".secret-name").value.trim();
      const typed = rowEl.querySelector(".secret-value").value;
      if (name && typed) setOwn(pending[rowEl.dataset.kind === "secret_env" ? "env" : "headers"], name, typed);
    }
    const bearer = value("bearer_token");
    if (bearer && bearer.value) pending.bearer = bearer.value;
  }

  /** Forget every typed secret value: the variable and the password inputs. */
  function clearSecrets() {
    pending = { env: {}, headers: {}, bearer: "" };
    for (const input of form.querySelectorAll('input[type="password"]')) input.value = "";
  }

  // ----- JSON mode -----------------------------------------------------------------------------

  function parseJson() {
    jsonError.hidden = true;
    let parsed;
    try {
      parsed = JSON.parse(jsonArea.value);
    } catch (err) {
      return showJsonError(`Not valid JSON: ${err.message}`);
    }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return showJsonError("The configuration must be a JSON object.");
    if ("secret_values" in parsed || (parsed.auth && typeof parsed.auth.token === "string")) {
      return showJsonError("Secret values do not belong in the JSON: remove them and type them into the form's password fields.");
    }
    if (!(parsed.transport in TRANSPORTS)) return showJsonError(`"transport" must be one of: ${Object.keys(TRANSPORTS).join(", ")}.`);
    return parsed;
  }

  function showJsonError(message) {
    jsonError.textContent = message;
    jsonError.hidden = false;
    jsonArea.setAttribute("aria-invalid", "true");
    jsonArea.focus();
    return null;
  }

  function setMode(next) {
    if (next === editing) return;
    if (next === "json") {
      const model = readForm();
      keepSecrets();
      for (const input of formFields.querySelectorAll('input[type="password"]')) input.value = "";
      jsonArea.value = pretty(model);
      jsonArea.removeAttribute("aria-invalid");
      jsonError.hidden = true;
    } else {
      const model = parseJson();
      if (!model) return;
      drawForm(model);
    }
    editing = next;
    formFields.hidden = next !== "form";
    jsonPane.hidden = next !== "json";
    formButton.setAttribute("aria-pressed", String(next === "form"));
    jsonButton.setAttribute("aria-pressed", String(next === "json"));
    (next === "json" ? jsonArea : formFields.querySelector("input, select, textarea")).focus();
  }
  formButton.addEventListener("click", () => setMode("form"));
  jsonButton.addEventListener("click", () => setMode("json"));

  // ----- errors ----------------------------------------------------------------------------------

  function clearErrors() {
    errorBox.hidden = true;
    conflictBox.hidden = true;
    for (const el of form.querySelectorAll(".field-error")) {
      if (el !== jsonError) {
        el.hidden = true;
        el.textContent = "";
      }
    }
    for (const el of form.querySelectorAll('[aria-invalid="true"]')) el.removeAttribute("aria-invalid");
  }

  function targetOf(path) {
    const aliases = {
      "secret_values.env.": "secret_env.",
      "secret_values.headers.": "secret_headers.",
      "secret_values.bearer_token": "auth.token",
    };
    let candidate = path;
    for (const [from, to] of Object.entries(aliases)) if (candidate.startsWith(from)) candidate = to + candidate.slice(from.length);
    const parts = candidate.split(".");
    for (let n = parts.length; n > 0; n -= 1) {
      const key = parts.slice(0, n).join(".");
      const found = [...formFields.querySelectorAll("[data-field]")].find((el) => el.dataset.field === key);
      if (found) return found;
    }
    return null;
  }

  function showErrors(err) {
    clearErrors();
    const errors = err.fieldErrors.length ? err.fieldErrors : [{ field: "", code: err.code, message: err.message }];
    const inline = editing === "form";
    for (const e of errors) {
      const target = inline && e.field ? targetOf(e.field) : null;
      if (!target) continue;
      const slot = [...target.querySelectorAll(".field-error")].pop();
      slot.textContent = `${slot.textContent ? slot.textContent + " " : ""}${e.message} (${e.code})`;
      slot.hidden = false;
      // A secret's value (not its name) is what the server refused in `secret_values.*`.
      const input = (e.field.startsWith("secret_values.") && target.querySelector(".secret-value")) || target.querySelector("input, select, textarea");
      if (input) {
        input.setAttribute("aria-invalid", "true");
        if (!slot.id) slot.id = uid("err");
        input.setAttribute("aria-describedby", [input.getAttribute("aria-describedby"), slot.id].filter(Boolean).join(" "));
      }
    }
    replace(
      errorBox,
      h("p", {}, h("strong", {}, `${err.code}: `), err.fieldErrors.length ? `the server refused the change (${errors.length} problem${errors.length > 1 ? "s" : ""}). Nothing was saved.` : err.message),
      err.fieldErrors.length ? h("ul", {}, errors.map((e) => h("li", {}, h("code", {}, e.field || "body"), `: ${e.message} (${e.code})`))) : null,
    );
    errorBox.hidden = false;
    errorBox.focus();
  }

  function showConflict(err) {
    const details = err.details || {};
    const reload = h("button", { type: "button" }, "Load the current version (discards my edits)");
    reload.addEventListener("click", async () => {
      try {
        const fresh = await servers.get(view.id);
        view = fresh;
        ({ model: base, configured } = modelFromView(fresh));
        version = fresh.version;
        clearErrors();
        clearSecrets();
        if (editing === "json") jsonArea.value = pretty(base);
        else drawForm(base);
        toast(`Loaded version ${fresh.version}.`);
      } catch (loadErr) {
        showErrors(loadErr);
      }
    });
    replace(
      conflictBox,
      h("p", {}, h("strong", {}, "Changed elsewhere. "), `Someone changed this server since you opened it (you edited version ${details.your_version ?? version}; it is now ${details.current_version ?? "newer"}). Nothing was saved, and your edits are still here.`),
      reload,
    );
    conflictBox.hidden = false;
    conflictBox.focus();
  }

  // ----- submit -----------------------------------------------------------------------------------

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors();
    let model;
    if (editing === "json") {
      model = parseJson();
      if (!model) return;
    } else {
      model = readForm();
      keepSecrets();
    }
    const secretValues = {};
    const remote = isRemote(model.transport);
    const declaredEnv = remote ? [] : model.secret_env || [];
    const declaredHeaders = remote ? model.secret_headers || [] : [];
    const env = Object.fromEntries(Object.entries(pending.env).filter(([k]) => declaredEnv.includes(k)));
    const headers = Object.fromEntries(Object.entries(pending.headers).filter(([k]) => declaredHeaders.includes(k)));
    if (Object.keys(env).length) secretValues.env = env;
    if (Object.keys(headers).length) secretValues.headers = headers;
    if (remote && model.auth && model.auth.kind === "bearer" && pending.bearer) secretValues.bearer_token = pending.bearer;
    const body = { ...model };
    if (Object.keys(secretValues).length) body.secret_values = secretValues;
    if (mode === "edit") body.version = version;
    // The values are in `body` now; nothing else keeps them.
    clearSecrets();
    saveButton.disabled = true;
    saveButton.setAttribute("aria-busy", "true");
    try {
      const saved = mode === "create" ? await servers.create(body) : await servers.replace(view.id, body);
      onSaved(saved);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      if (err.code === "MCP_SERVER_VERSION_CONFLICT") showConflict(err);
      else showErrors(err);
    } finally {
      saveButton.disabled = false;
      saveButton.removeAttribute("aria-busy");
    }
  });

  drawForm(base);
  replace(container, form);
  return {
    /** Fill the form from a template (create mode). */
    applyTemplate(template) {
      clearErrors();
      clearSecrets();
      const model = forTransport(structuredClone(template.model), template.model.transport);
      if (editing === "json") jsonArea.value = pretty(model);
      drawForm(model);
      base = model;
    },
    focusFirst() {
      const first = editing === "json" ? jsonArea : formFields.querySelector("input, select, textarea");
      if (first) first.focus();
    },
  };
}
