// The Tools tab: each tool with its annotations (hints only: they never lower approval, R-5.1), its
// input schema, a per-tool enable switch, the approval policy (ask / allow / deny, R-5.3), and a
// call playground whose form is generated from the input schema. Switching a tool or its policy is
// a tool-permission change, so it is high-risk: the page says so first, and afterwards the
// server needs a new confirmation, test and enable.

import { servers } from "./api.js";
import { quarantineNotice } from "./catalog.js";
import { clipped, confirmDialog, h, pretty, replace, toast, uid } from "./dom.js";
import { playground } from "./playground.js";

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
