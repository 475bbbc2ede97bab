// What the Prompts and Resources tabs share: the untrusted context block of a prompt or a resource
// read, and the empty states of a tab whose server has no live session or does not
// offer the category.
//
// The block is shown as the API returns it: provenance (outside the content), the block text with
// its random begin/end delimiters marked, the truncation marker when the content was cut, and a
// copy button that copies the text exactly (header and delimiters included), so it can be pasted
// into a context window as data. Binary content (images, audio, blobs) is described by the API and
// never inlined here either. Everything is rendered as text (dom.js never parses markup).

import { servers } from "./api.js";
import { h, replace, toast } from "./dom.js";
import { errorText } from "./format.js";

/** "12.3 KiB" for a byte count. */
export function bytesText(bytes) {
  if (typeof bytes !== "number") return "size unknown";
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** Copy `text` to the clipboard (the async API, else a selected hidden textarea). */
async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch (err) {
    const area = h("textarea", { class: "visually-hidden", "aria-hidden": "true", tabindex: "-1" }, text);
    document.body.append(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch (err2) {
      ok = false;
    }
    area.remove();
    return ok;
  }
}

/** The block text with its begin and end delimiter lines marked (the content between them as plain text). */
function blockText(answer) {
  const text = answer.text || "";
  const { begin, end } = answer.delimiters || {};
  // The header line names both markers too: the block's own markers are the lines `begin` and `end`.
  const at = begin ? text.indexOf(`\n${begin}\n`) : -1;
  const stop = end ? text.lastIndexOf(`\n${end}`) : -1;
  if (at < 0 || stop < at + begin.length + 1) return h("pre", { class: "untrusted-text" }, text);
  return h(
    "pre",
    { class: "untrusted-text" },
    h("span", { class: "untrusted-header" }, text.slice(0, at)),
    h("span", { class: "delimiter", "data-testid": "delimiter-begin" }, begin),
    h("span", { class: "untrusted-body", "data-testid": "untrusted-body" }, text.slice(at + begin.length + 2, stop)),
    h("span", { class: "delimiter", "data-testid": "delimiter-end" }, end),
    text.slice(stop + 1 + end.length),
  );
}

/** Provenance rows of a prompt or resource answer: who said it, what was asked. */
function provenanceRows(answer) {
  const p = answer.provenance || {};
  const rows = [["Server", `${p.server_name || p.server_id} (${p.server_id}) · MCP`]];
  if (p.kind === "prompt") {
    rows.push(["Prompt", h("code", {}, `/${p.server_id}:${p.prompt}`)]);
    const args = Object.entries(p.arguments || {});
    rows.push(["Arguments", args.length ? h("ul", { class: "plain" }, args.map(([k, v]) => h("li", {}, h("code", {}, k), " = ", JSON.stringify(v)))) : "none"]);
  } else {
    rows.push(["URI", h("code", {}, p.uri)]);
    rows.push(["MIME type", p.mime_type || "not given"]);
  }
  rows.push(["Block text", answer.truncated ? `${bytesText(answer.included_bytes)} of ${bytesText(answer.original_bytes)} shown` : bytesText(answer.original_bytes)]);
  return rows;
}

/** What the block holds, item by item: prompt messages (role, kind) or resource contents (URI, type, size). */
function partsList(answer) {
  if (Array.isArray(answer.messages)) {
    if (!answer.messages.length) return h("p", { class: "muted" }, "The server returned no messages.");
    return h(
      "ol",
      { class: "parts", "aria-label": "Messages" },
      answer.messages.map((m) =>
        h("li", { "data-kind": m.kind }, h("strong", {}, m.role), ": ", m.kind === "text" ? "text" : `${m.kind} — described in the block, not inlined`),
      ),
    );
  }
  const contents = answer.contents || [];
  if (!contents.length) return h("p", { class: "muted" }, "The server returned no contents.");
  return h(
    "ol",
    { class: "parts", "aria-label": "Contents" },
    contents.map((c) =>
      h(
        "li",
        { "data-kind": c.kind },
        h("code", {}, c.uri),
        ` · ${c.mime_type || "no MIME type"} · ${bytesText(c.bytes)}`,
        c.kind === "binary" ? h("strong", { class: "binary-note" }, " · binary — described, not inlined") : null,
      ),
    ),
  );
}

/**
 * The untrusted context block of a prompt (`POST /api/prompts/{name}/get`) or a resource read
 * (`POST /api/resources/read`), as an element. `label` names it for assistive technology.
 */
export function untrustedBlock(answer, { label }) {
  const copy = h("button", { type: "button", class: "copy-button" }, "Copy block");
  copy.addEventListener("click", async () => {
    toast((await copyText(answer.text || "")) ? "Block copied (header and delimiters included)." : "Could not copy: select the text and copy it yourself.");
  });
  return h(
    "section",
    { class: "untrusted", role: "region", "aria-label": label, "data-testid": "untrusted-block" },
    h(
      "div",
      { class: "untrusted-head" },
      h("span", { class: "badge untrusted-badge" }, "Untrusted context"),
      h("span", { class: "hint" }, "Content from the MCP server: treat it as data, never as instructions."),
      copy,
    ),
    h("dl", { class: "provenance", "aria-label": "Provenance" }, provenanceRows(answer).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    answer.description ? h("p", { class: "hint" }, "The server describes it as: ", h("q", {}, answer.description)) : null,
    answer.truncated
      ? h(
          "p",
          { class: "alert alert-warn truncated", role: "note", "data-testid": "truncated" },
          h("strong", {}, "Truncated. "),
          `Only the first ${bytesText(answer.included_bytes)} of ${bytesText(answer.original_bytes)} are included; the block ends with mcp-center's truncation marker.`,
        )
      : null,
    partsList(answer),
    h("p", { class: "hint" }, "The block, as an agent receives it. The content sits between the two marked delimiters, whose random nonce is new for every read:"),
    blockText(answer),
  );
}

/** An API error as an alert: `CODE: message`, with the attributed reason when there is one. */
export function errorAlert(err) {
  const reason = err.details && err.details.reason ? ` (${err.details.reason})` : "";
  return h("p", { class: "alert alert-error", role: "alert", "data-code": err.code }, h("strong", {}, err.code), `${reason}: ${err.message}`);
}

/** An empty state: not an error, a sentence saying why there is nothing, and optionally a retry button. */
export function emptyState(text, { retry } = {}) {
  const box = h("div", { class: "alert alert-info empty-state", role: "status", "data-testid": "empty-state" }, h("p", {}, text));
  if (retry) {
    const again = h("button", { type: "button" }, "Try again");
    again.addEventListener("click", retry);
    box.append(h("p", {}, again));
  }
  return box;
}

/**
 * Whether the tab can list `noun`s of `view` now. Returns `{catalog}` when the server is ready
 * (its live catalog, with which capabilities the server declared, or null if that read failed), or
 * draws the reason into `container` and returns null: not set up, or not ready with its state.
 */
export async function liveSession(container, view, noun, { retry }) {
  if (!view.enabled || (view.needs && view.needs.length)) {
    replace(container, emptyState(`${noun} come from the server's live session: confirm, test and enable the server first (Overview tab).`));
    return null;
  }
  let fresh;
  try {
    fresh = await servers.get(view.id);
  } catch (err) {
    replace(container, errorAlert(err));
    return null;
  }
  const status = fresh.status || {};
  if (status.state !== "ready") {
    const why = status.state === "error" && status.error ? `error: ${errorText(status.error)}` : status.state || "disconnected";
    replace(container, emptyState(`This server is not ready (${why}), so its ${noun.toLowerCase()} cannot be listed now. The Overview tab and the Logs show more.`, { retry }));
    return null;
  }
  const catalog = await servers.catalog(view.id).catch(() => null);
  return { catalog };
}

/**
 * Why a ready server lists no `category` (prompts / resources): it did not declare the capability,
 * the last list request failed, or it declares it with an empty list.
 */
export function whyEmpty(catalog, category, noun) {
  const errors = (catalog && catalog.errors) || {};
  const failed = errors[category] || (category === "resources" && errors.resource_templates);
  if (catalog && catalog.capabilities && catalog.capabilities[category] === false) {
    return emptyState(`This server offers no ${noun}: it did not declare the ${category} capability when it connected.`);
  }
  if (failed) {
    return h("p", { class: "alert alert-warn", role: "status", "data-testid": "empty-state" }, `Listing ${noun} failed: ${failed.code}: ${failed.message}. Refresh the catalog on the Overview tab.`);
  }
  return emptyState(`This server declares ${noun} but its list is empty.`);
}
