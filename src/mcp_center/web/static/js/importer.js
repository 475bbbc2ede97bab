// Import: paste a client configuration (or choose the file), see the preview the host
// computed — entries, proposed ids and clashes, transports, which fields become secrets, the
// variables to supply, rejected entries and why, entries already registered (unchanged, skipped,
// or a conflict that stops the import, R-1.8) — supply the values, and apply it all or nothing.
//
// Secrets follow the editor's rules: variable values the host marks secret go into password inputs,
// are sent once with the apply request and cleared at once, whatever the answer; none is ever put
// in localStorage, the URL or the page afterwards. The preview itself holds no secret value (the
// host leaves them out). A default is used only when its box is ticked: nothing is filled from the
// host's environment. The pasted text stays only in its text area, and goes when the import is done.

import { ApiError, interchange } from "./api.js";
import { h, replace, setOwn, toast, uid } from "./dom.js";
import { transportLabel } from "./format.js";

/** Accepted `format` values, in the host's spelling (IMPORT_FORMATS). */
export const IMPORT_FORMATS = [
  ["auto", "Detect automatically"],
  ["claude-code", "Claude Code (.mcp.json, ~/.claude.json)"],
  ["claude-desktop", "Claude Desktop (claude_desktop_config.json)"],
  ["cursor", "Cursor (.cursor/mcp.json)"],
  ["vscode", "VS Code (.vscode/mcp.json)"],
  ["windsurf", "Windsurf (mcp_config.json)"],
  ["bare", "A bare map of servers"],
];
const FORMAT_NAMES = Object.fromEntries(IMPORT_FORMATS.map(([key, label]) => [key, label.replace(/ \(.*\)$/, "")]));
const MAX_IMPORT_BYTES = 1024 * 1024;
const SECRET_KIND = { env: "secret environment variable", header: "secret header", bearer: "bearer token" };
const SECRET_SOURCE = {
  variables: "its value comes from the variables below",
  file: "its value is in the file and is stored encrypted",
  not_set: "the file leaves it empty: set it later",
};

/** A UTF-16 byte-order mark and the encoding it announces; anything else is read as UTF-8 (as the host does). */
const UTF16_BOMS = [
  [0xff, 0xfe, "utf-16le"],
  [0xfe, 0xff, "utf-16be"],
];

/**
 * The text of a chosen file, decoded as the host decodes an import: UTF-8 (a BOM dropped), or
 * UTF-16 after its BOM. `file.text()` turned bytes that are not UTF-8 into U+FFFD and the mangled text
 * was imported; here they are refused like the CLI and REST refuse them.
 *
 * @param {File} chosen
 * @returns {Promise<string>}
 * @throws {ApiError} IMPORT_JSON_INVALID (`details.reason` "encoding", `details.file_line` and
 *   `details.file_column`: 1-based, in characters, of the first bad byte) when the bytes do not decode.
 */
export async function readImportFile(chosen) {
  const bytes = new Uint8Array(await chosen.arrayBuffer());
  const bom = UTF16_BOMS.find(([first, second]) => bytes[0] === first && bytes[1] === second);
  const encoding = bom ? bom[2] : "utf-8";
  try {
    return new TextDecoder(encoding, { fatal: true }).decode(bytes);
  } catch {
    // The longest prefix that still decodes (a sequence cut at its end is not an error in stream
    // mode): the first bad byte follows it. Prefixes of good text are good, so a bisection finds it.
    let good = 0;
    let bad = bytes.length;
    while (bad - good > 1) {
      const middle = (good + bad) >> 1;
      try {
        new TextDecoder(encoding, { fatal: true }).decode(bytes.subarray(0, middle), { stream: true });
        good = middle;
      } catch {
        bad = middle;
      }
    }
    const before = new TextDecoder(encoding).decode(bytes.subarray(0, good), { stream: true });
    const lines = before.split("\n");
    const line = lines.length;
    const column = Array.from(lines[line - 1]).length + 1;
    const name = encoding === "utf-8" ? "UTF-8" : "UTF-16";
    throw new ApiError(
      0,
      "IMPORT_JSON_INVALID",
      `${chosen.name} is not valid ${name} text (line ${line}, column ${column}): save it as ${name} and choose it again. Nothing was loaded.`,
      { reason: "encoding", file_line: line, file_column: column },
    );
  }
}

function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

function row(term, ...value) {
  return [h("dt", {}, term), h("dd", {}, ...value)];
}

/** One planned server: what it will run or contact, its id (and clash), secrets, variables, warnings. */
function plannedServer(server) {
  const config = server.config || {};
  const where =
    server.transport === "stdio"
      ? h("code", {}, [config.command, ...(config.args || [])].join(" "))
      : h("code", {}, config.url || "");
  const items = [
    row("Id", h("code", {}, server.id), server.clash ? h("span", { class: "warn" }, ` (“${server.clash.slug}” is taken by ${server.clash.with === "existing" ? "a registered server" : "another entry of this file"})`) : null),
    row("Transport", transportLabel(server.transport)),
    row(server.transport === "stdio" ? "Runs" : "Contacts", where),
  ];
  if (server.secrets.length) {
    items.push(
      row(
        "Becomes secret",
        h(
          "ul",
          { class: "plain" },
          server.secrets.map((secret) => h("li", {}, h("code", {}, secret.key), ` — ${SECRET_KIND[secret.kind] || secret.kind}; ${SECRET_SOURCE[secret.value] || secret.value}`)),
        ),
      ),
    );
  }
  if (server.variables.length) items.push(row("Variables", server.variables.map((name, i) => [i ? ", " : "", h("code", {}, name)])));
  const errorSlot = h("p", { class: "field-error", hidden: true });
  return h(
    "li",
    { class: "card import-server", "data-server": server.id, "data-source": server.source },
    h("h4", {}, server.name, " ", h("span", { class: "muted" }, `from ${server.source}`)),
    h("dl", { class: "summary" }, items),
    server.warnings.length
      ? h("ul", { class: "alert alert-warn" }, server.warnings.map((w) => h("li", {}, h("code", {}, w.field), `: ${w.message} (${w.code})`)))
      : null,
    errorSlot,
  );
}

function rejectedEntry(entry) {
  return h(
    "li",
    { class: "card rejected", "data-source": entry.source },
    h("h4", {}, entry.name, " ", h("span", { class: "muted" }, `from ${entry.source}`)),
    h("ul", { class: "plain" }, entry.errors.map((e) => h("li", {}, h("code", {}, e.field || "entry"), `: ${e.message} `, h("span", { class: "bad" }, `(${e.code})`)))),
  );
}

/** The input of one variable; `read()` gives {value} or {useDefault}; `clear()` empties a typed secret. */
function variableField(variable) {
  const id = uid("var");
  const hintId = uid("hint");
  const input = h("input", {
    id,
    type: variable.secret ? "password" : "text",
    autocomplete: variable.secret ? "new-password" : "off",
    spellcheck: "false",
    "aria-describedby": hintId,
  });
  const uses = variable.used_in.map((u) => `${u.server}: ${u.field}`).join(", ");
  const hint = h(
    "p",
    { class: "hint", id: hintId },
    variable.description ? `${variable.description} · ` : "",
    variable.secret ? "Secret: hidden as you type, stored encrypted, never shown again. " : "",
    `Used in ${uses}.`,
  );
  let useDefault = null;
  if (variable.has_default) {
    const shown = variable.secret || variable.default === null ? "(hidden: it is a secret)" : variable.default === "" ? "(empty)" : variable.default;
    useDefault = h("input", { type: "checkbox", id: uid("default") });
    useDefault.addEventListener("change", () => {
      input.disabled = useDefault.checked;
    });
  }
  const error = h("p", { class: "field-error", id: uid("err"), hidden: true });
  const element = h(
    "div",
    { class: "field variable", "data-variable": variable.name },
    h("label", { for: id }, variable.name, variable.secret ? h("span", { class: "muted" }, " (secret)") : null),
    input,
    hint,
    useDefault
      ? h(
          "label",
          { class: "checkbox", for: useDefault.id },
          useDefault,
          " Use the file's default: ",
          variable.secret || variable.default === null ? h("span", { class: "muted" }, "(hidden: it is a secret)") : h("code", {}, variable.default === "" ? '""' : variable.default),
        )
      : null,
    error,
  );
  return {
    name: variable.name,
    element,
    input,
    read() {
      if (useDefault && useDefault.checked) return { useDefault: true };
      return input.value === "" ? {} : { value: input.value };
    },
    clear() {
      if (variable.secret) input.value = "";
    },
    showError(message) {
      error.textContent = message;
      error.hidden = false;
      input.setAttribute("aria-invalid", "true");
      input.setAttribute("aria-describedby", `${hintId} ${error.id}`);
    },
    clearError() {
      error.hidden = true;
      error.textContent = "";
      input.removeAttribute("aria-invalid");
      input.setAttribute("aria-describedby", hintId);
    },
  };
}

/** What the import does with an entry whose name a registered server has, with another definition (`on_conflict`). */
const ON_CONFLICT = [
  ["refuse", "Stop: import nothing"],
  ["skip", "Skip it: keep the registered server"],
  ["rename", "Add a copy (name-2)"],
];
const OUTCOMES = { unchanged: "already registered, unchanged", skipped: "differs, skipped", conflict: "differs from the registered server" };

const SECRET_SET_KIND = { env: "environment", header: "header", bearer: "bearer" };

/** Secret values are never compared: say the file's ones were NOT applied, and how to change them. */
function secretsNotUpdated(entry) {
  const kept = entry.secrets_not_updated || [];
  if (!kept.length) return null;
  const first = kept[0];
  return h(
    "p",
    { class: "hint", "data-secrets-not-updated": entry.server_id },
    "Secret values NOT updated (",
    kept.map((s, i) => [i ? ", " : "", h("code", {}, s.key)]),
    "): the stored ones stay. To change one: ",
    h("code", {}, `mcp-center secret set ${entry.server_id} ${first.key} --kind ${SECRET_SET_KIND[first.kind]}`),
    " or the server's settings page.",
  );
}

/** An entry a registered server already has: not created again (unchanged, skipped, or a conflict). */
function existingEntry(entry) {
  const differs = entry.fields.length ? [" · differs in ", entry.fields.map((f, i) => [i ? ", " : "", h("code", {}, f)])] : null;
  return h(
    "li",
    { "data-existing": entry.server_id, "data-outcome": entry.outcome, class: entry.outcome === "conflict" ? "warn" : null },
    h("strong", {}, entry.name),
    " → ",
    h("code", {}, entry.server_id),
    `: ${OUTCOMES[entry.outcome] || entry.outcome}`,
    differs,
    secretsNotUpdated(entry),
  );
}

/** Draw the import page into `main`. `navigate(hash, state, {replace})` moves on after a successful apply. */
export function renderImport(main, { feed, navigate }) {
  const contentId = uid("import-content");
  const content = h("textarea", {
    id: contentId,
    class: "json",
    rows: "14",
    spellcheck: "false",
    autocomplete: "off",
    "aria-describedby": "import-content-hint",
  });
  const file = h("input", { type: "file", id: uid("import-file"), accept: ".json,.jsonc,application/json,text/plain" });
  const format = h("select", { id: uid("import-format") }, IMPORT_FORMATS.map(([value, label]) => h("option", { value }, label)));
  const onConflict = h("select", { id: uid("import-on-conflict") }, ON_CONFLICT.map(([value, label]) => h("option", { value }, label)));
  const previewButton = h("button", { type: "submit", class: "primary" }, "Preview");
  const inputError = h("div", { class: "alert alert-error", role: "alert", tabindex: "-1", hidden: true });
  const previewBox = h("section", { class: "import-preview", "aria-labelledby": "import-preview-title", tabindex: "-1", hidden: true });

  const form = h(
    "form",
    { class: "card import-form", novalidate: true, "aria-label": "Configuration to import" },
    h(
      "div",
      { class: "field" },
      h("label", { for: contentId }, "Configuration (JSON)"),
      h(
        "p",
        { class: "hint", id: "import-content-hint" },
        "Paste the whole file. Comments, trailing commas and a byte-order mark are fine. ${VAR} placeholders are never filled from this host's environment: you supply them after the preview.",
      ),
      content,
    ),
    h("div", { class: "field" }, h("label", { for: file.id }, "Or choose a file"), file),
    h("div", { class: "field" }, h("label", { for: format.id }, "Format"), format),
    h(
      "div",
      { class: "field" },
      h("label", { for: onConflict.id }, "A server of the same name, defined differently"),
      onConflict,
      h("p", { class: "hint" }, "Importing the same file again is safe: a server already registered with the same definition is left as it is."),
    ),
    inputError,
    h("div", { class: "actions" }, previewButton),
  );

  replace(
    main,
    h("h1", { tabindex: "-1" }, "Import"),
    h(
      "p",
      { class: "lede" },
      "Bring the servers you already configured in Claude Code, Claude Desktop, Cursor, VS Code or Windsurf. Nothing is created until you apply the preview, and every imported server starts untrusted and disabled: you review, confirm, test and enable each one.",
    ),
    form,
    previewBox,
  );

  let current = null; // {preview, content, format} of the preview on screen
  let fields = [];
  let markStale = () => {};
  content.addEventListener("input", () => markStale());
  format.addEventListener("change", () => markStale());
  onConflict.addEventListener("change", () => markStale());

  function showInputError(err) {
    const details = err.details || {};
    const where = details.line ? `Line ${details.line}, column ${details.column ?? "?"}: ` : "";
    // The position leads the line; the message's own "(line N, column M)" would say it twice.
    const said = details.line
      ? err.message.replace(` (line ${details.line}, column ${details.column})`, "")
      : err.message;
    replace(inputError, h("p", {}, h("strong", {}, `${err.code}: `), where, said));
    inputError.hidden = false;
    content.setAttribute("aria-invalid", "true");
    content.setAttribute("aria-describedby", "import-content-hint");
    if (details.line) {
      const lines = content.value.split("\n");
      const offset = lines.slice(0, details.line - 1).reduce((n, l) => n + l.length + 1, 0) + Math.max((details.column || 1) - 1, 0);
      content.focus();
      content.setSelectionRange(offset, offset);
    } else {
      inputError.focus();
    }
  }

  function clearSecrets() {
    for (const field of fields) field.clear();
  }

  function forget() {
    clearSecrets();
    fields = [];
    current = null;
    markStale = () => {};
    replace(previewBox);
    previewBox.hidden = true;
  }

  function drawPreview(preview) {
    fields = preview.variables.map(variableField);
    const staleNote = h("p", { class: "alert alert-warn", role: "status", hidden: true }, "The configuration changed since this preview: preview it again before applying.");
    const applyError = h("div", { class: "alert alert-error", role: "alert", tabindex: "-1", hidden: true });
    const count = preview.servers.length;
    const existing = preview.existing || [];
    const conflicts = existing.filter((e) => e.outcome === "conflict");
    const blocked = count === 0 || conflicts.length > 0;
    const applyButton = h("button", { type: "button", class: "primary", disabled: blocked }, count ? `Create ${plural(count, "server")}` : "Nothing to create");
    const cancelButton = h("button", { type: "button", class: "quiet" }, "Discard the preview");
    const servers = h("ul", { class: "import-servers" }, preview.servers.map(plannedServer));
    replace(
      previewBox,
      h("h2", { id: "import-preview-title" }, "Preview"),
      h(
        "p",
        { "data-testid": "import-summary" },
        `${FORMAT_NAMES[preview.format] || preview.format} format · ${plural(count, "server")} to create, untrusted and disabled`,
        existing.length ? ` · ${plural(existing.length, "entry", "entries")} already registered` : "",
        preview.rejected.length ? ` · ${plural(preview.rejected.length, "entry", "entries")} rejected` : "",
        preview.variables.length ? ` · ${plural(preview.variables.length, "value")} to supply` : "",
        ".",
      ),
      staleNote,
      conflicts.length
        ? h(
            "p",
            { class: "alert alert-error", role: "alert", "data-testid": "import-conflicts" },
            h("strong", {}, "IMPORT_CONFLICT: "),
            `${conflicts.map((c) => c.name).join(", ")} ${conflicts.length === 1 ? "has" : "have"} the name of a registered server with another definition. Nothing can be applied: choose to skip ${conflicts.length === 1 ? "it" : "them"} or add a copy above and preview again, or edit the registered server.`,
          )
        : null,
      count
        ? [h("h3", {}, "Servers to create"), servers]
        : h("p", { class: "alert alert-warn" }, existing.length ? "Nothing new to create: every entry is already registered (or rejected)." : "Every entry was rejected: there is nothing to create."),
      existing.length
        ? [
            h("h3", {}, "Already registered"),
            h("p", { class: "hint" }, "These are not created again; secrets are never compared (a registered server keeps its own)."),
            h("ul", { class: "import-existing" }, existing.map(existingEntry)),
          ]
        : null,
      fields.length
        ? h(
            "fieldset",
            { class: "group variables" },
            h("legend", {}, "Values to supply"),
            h("p", { class: "hint" }, "The file refers to these. They are never read from this host's environment."),
            fields.map((f) => f.element),
          )
        : null,
      preview.rejected.length
        ? [
            h("h3", {}, "Rejected entries"),
            h("p", { class: "hint" }, "These are not created. Fix them in the file and preview again, or add them by hand."),
            h("ul", { class: "import-rejected" }, preview.rejected.map(rejectedEntry)),
          ]
        : null,
      applyError,
      h("div", { class: "actions" }, applyButton, cancelButton),
    );
    previewBox.hidden = false;

    markStale = () => {
      if (!current) return;
      const stale = content.value !== current.content || format.value !== current.format || onConflict.value !== current.onConflict;
      staleNote.hidden = !stale;
      applyButton.disabled = stale || blocked;
    };
    cancelButton.addEventListener("click", () => {
      forget();
      content.focus();
    });

    function showApplyError(err) {
      for (const field of fields) field.clearError();
      for (const slot of servers.querySelectorAll(".field-error")) slot.hidden = true;
      const unplaced = [];
      for (const e of err.fieldErrors) {
        const [head, name, ...rest] = (e.field || "").split(".");
        const field = head === "values" ? fields.find((f) => f.name === [name, ...rest].join(".")) : null;
        const card = head === "servers" ? servers.querySelector(`[data-server="${CSS.escape(name)}"] .field-error`) : null;
        if (field) field.showError(`${e.message} (${e.code})`);
        else if (card) {
          card.textContent = `${rest.join(".")}: ${e.message} (${e.code})`;
          card.hidden = false;
        } else unplaced.push(e);
      }
      const conflict = err.status === 409;
      const again = h("button", { type: "button" }, "Preview again");
      again.addEventListener("click", () => form.requestSubmit());
      replace(
        applyError,
        h("p", {}, h("strong", {}, `${err.code}: `), err.fieldErrors.length ? "some values are missing or invalid; nothing was created." : err.message),
        unplaced.length ? h("ul", {}, unplaced.map((e) => h("li", {}, h("code", {}, e.field || "body"), `: ${e.message} (${e.code})`))) : null,
        conflict ? again : null,
      );
      applyError.hidden = false;
      const firstInvalid = previewBox.querySelector('[aria-invalid="true"]');
      (firstInvalid || applyError).focus();
    }

    applyButton.addEventListener("click", async () => {
      if (!current) return;
      applyError.hidden = true;
      const values = {};
      const useDefaults = [];
      for (const field of fields) {
        const read = field.read();
        if (read.useDefault) useDefaults.push(field.name);
        else if ("value" in read) setOwn(values, field.name, read.value);
      }
      const body = { token: current.preview.token, digest: current.preview.digest, content: current.content, format: current.format, values, use_defaults: useDefaults, on_conflict: current.onConflict };
      // The typed secrets are in `body` now; the inputs let go of them at once, whatever the answer.
      clearSecrets();
      applyButton.disabled = true;
      applyButton.setAttribute("aria-busy", "true");
      try {
        const created = await interchange.apply(body);
        content.value = "";
        forget();
        feed.refresh();
        toast(`Imported ${plural(created.length, "server")}.`);
        // The list takes the import page's place in the history: Back never returns to a preview applied already.
        navigate(
          "#/",
          {
            notice: `Imported ${plural(created.length, "server")} (${created.map((s) => s.id).join(", ")}). Each starts untrusted and disabled: open it to review its summary, then confirm, test and enable it.`,
          },
          { replace: true },
        );
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        showApplyError(err);
        applyButton.disabled = false;
      } finally {
        applyButton.removeAttribute("aria-busy");
      }
    });
  }

  file.addEventListener("change", async () => {
    const chosen = file.files && file.files[0];
    if (!chosen) return;
    if (chosen.size > MAX_IMPORT_BYTES) {
      showInputError(new ApiError(413, "IMPORT_TOO_LARGE", `${chosen.name} is over 1 MiB; import only its servers (see docs/import-export.md).`, {}));
      return;
    }
    let text;
    try {
      text = await readImportFile(chosen);
    } catch (err) {
      file.value = "";
      if (!(err instanceof ApiError)) throw err;
      showInputError(err);
      return;
    }
    if (!text.trim()) {
      file.value = "";
      showInputError(new ApiError(0, "IMPORT_EMPTY", `${chosen.name} is empty: nothing to import. Choose a client's configuration file.`, { reason: "empty" }));
      return;
    }
    inputError.hidden = true;
    content.removeAttribute("aria-invalid");
    content.value = text;
    content.dispatchEvent(new Event("input"));
    file.value = "";
    toast(`${chosen.name} loaded: preview it next.`);
    previewButton.focus();
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    inputError.hidden = true;
    content.removeAttribute("aria-invalid");
    if (!content.value.trim()) {
      // The host's IMPORT_EMPTY, said here without a round trip.
      showInputError(new ApiError(0, "IMPORT_EMPTY", "Nothing to import: paste a configuration or choose a file first.", { reason: "empty" }));
      content.focus();
      return;
    }
    forget();
    previewButton.disabled = true;
    previewButton.setAttribute("aria-busy", "true");
    const sent = { content: content.value, format: format.value, onConflict: onConflict.value };
    try {
      const preview = await interchange.preview(sent.content, sent.format, sent.onConflict);
      current = { preview, ...sent };
      drawPreview(preview);
      previewBox.focus();
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      showInputError(err);
    } finally {
      previewButton.disabled = false;
      previewButton.removeAttribute("aria-busy");
    }
  });

  return () => {
    clearSecrets();
  };
}
