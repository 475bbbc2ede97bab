// Small DOM helpers. Everything is built with textContent and attributes, never innerHTML, so text
// from servers (names, descriptions, error messages) can never become markup.

/**
 * Create an element: h("button", {class: "primary", onclick: fn}, "Save").
 * Attributes starting with "on" become listeners; `true`/`false`/null toggle boolean attributes;
 * children may be strings, nodes, arrays, or null (skipped).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** Replace an element's children. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let uniqueCounter = 0;
/** A page-unique id with a readable prefix (for label/for and aria-describedby). */
export function uid(prefix) {
  uniqueCounter += 1;
  return `${prefix}-${uniqueCounter}`;
}

/** Show a short message in the polite live region at the bottom of the page. */
export function toast(message) {
  const box = document.getElementById("toast");
  box.textContent = message;
  box.classList.add("visible");
  toast.shownAt = Date.now();
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => box.classList.remove("visible"), 5000);
}

/**
 * Hide a toast that belongs to the page being left (called on every navigation). A toast shown
 * within the last second stays: it reports what caused this navigation ("Deleted.", "Saved.").
 */
export function dismissStaleToast() {
  if (Date.now() - (toast.shownAt || 0) < 1000) return;
  clearTimeout(toast.timer);
  document.getElementById("toast").classList.remove("visible");
}

/**
 * Ask a yes/no question in the page's modal <dialog>; resolves true when confirmed.
 * Focus moves into the dialog and returns to the opener when it closes (native <dialog>).
 */
export function confirmDialog({ title, text, ok }) {
  const dialog = document.getElementById("confirm-dialog");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = ok;
  return new Promise((resolve) => {
    dialog.returnValue = "cancel";
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
  });
}

/**
 * Set `target[key] = value` as an own, enumerable data property, whatever `key` is: a plain
 * assignment with a name that came from a server or a user (`__proto__`) would change the object's
 * prototype instead, and the name would be lost from the JSON sent. Returns `target`.
 */
export function setOwn(target, key, value) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  return target;
}

/** `table[key]` when `key` is the table's own name, else undefined: `table["constructor"]` is not a label. */
export function ownValue(table, key) {
  return table !== null && table !== undefined && Object.hasOwn(table, key) ? table[key] : undefined;
}

/** JSON for humans: two-space indentation. */
export function pretty(value) {
  return JSON.stringify(value, null, 2);
}

/** "3 s ago" style time for an ISO timestamp. */
export function ago(iso) {
  if (!iso) return "";
  const seconds = Math.round((Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 60) return `${Math.max(seconds, 0)} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  return new Date(iso).toLocaleString();
}

/** Characters of a server's description shown before "Show all" (a server may send megabytes). */
export const CLIP_AT = 600;

/**
 * A paragraph of server text (a description) that shows at most `limit` characters; longer text
 * ends in "…" and a "Show all N characters" button that reveals the whole of it in a scrolling
 * box. Keeps a 1 MB description out of the layout of a page of thousands of tools.
 */
export function clipped(text, { limit = CLIP_AT, className = "description" } = {}) {
  if (text.length <= limit) return h("p", { class: className }, text);
  const more = h("button", { type: "button", class: "link-button" }, `Show all ${text.length.toLocaleString("en")} characters`);
  const box = h("div", { class: `${className} clipped` }, h("p", {}, text.slice(0, limit), "…"), more);
  more.addEventListener("click", () => {
    const whole = h("p", { class: "long-text", tabindex: "0", "aria-label": "Whole description" }, text);
    replace(box, whole);
    whole.focus();
  });
  return box;
}

/** How long a page waits for its first answers before drawing anyway (milliseconds). */
export const FIRST_DRAW_WAIT_MS = 3000;

/**
 * Resolves once every promise settled (answered, failed or threw) or after `ms`, whichever comes
 * first; never rejects. A page that draws its sections once their data has answered (so nothing moves
 * under the pointer) uses it so that a hung request or a card that throws never leaves it empty.
 */
export function settledWithin(promises, ms = FIRST_DRAW_WAIT_MS) {
  return Promise.race([Promise.allSettled(promises), new Promise((resolve) => setTimeout(resolve, ms))]);
}
