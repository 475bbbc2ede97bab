// The Gateway page (#/gateway, R-8.1, R-7.1): where MCP clients connect (`/mcp`), which tools they
// see, the gateway tokens, and ready-to-copy client snippets (the same forms as README.md's
// "Connect Claude Code, Cursor or any MCP client").
//
// A new token is in the page exactly once: in the one-time panel drawn from the create answer. It
// lives only in that panel's DOM and closure — never in localStorage, the URL, the token list
// (which the API answers without tokens or hashes) or a later request — and the panel is removed
// when the user dismisses it, revokes that token or leaves the page. Snippets use the placeholder
// MCP_CENTER_GATEWAY_TOKEN; only the one-time panel offers them with the new token filled in.

import { ApiError, gateway } from "./api.js";
import { confirmDialog, h, replace, settledWithin, toast, uid } from "./dom.js";
import { copy } from "./exporter.js";

export const TOKEN_VARIABLE = "MCP_CENTER_GATEWAY_TOKEN";
export const SERVER_NAME = "mcp-center";
const BRIDGE_COMMAND = "/path/to/mcp-center/.venv/bin/mcp-center";

/**
 * The gateway URL as this browser reaches it: the page's origin and the path the host announces.
 * (The host's configured `url` may name 127.0.0.1 while the page was opened under another name.)
 */
export function gatewayUrl(info) {
  let path = "/mcp";
  try {
    path = new URL(info.url).pathname;
  } catch (err) {
    // keep /mcp
  }
  return new URL(path, window.location.origin).href;
}

/**
 * The three client snippets for `url`, with `token` or, when null, the placeholder in each
 * client's syntax. Forms as in README.md: Claude Code's `claude mcp add`, Cursor's mcp.json, the
 * stdio bridge for clients that only spawn (always with `--url`: without it the bridge looks for the
 * serve of its own data directory, which need not be this one).
 */
export function snippets(url, token = null, command = null) {
  const bridgeArgs = ["gateway", "--stdio", "--url", url];
  const json = (entry) => JSON.stringify({ mcpServers: { [SERVER_NAME]: entry } }, null, 2);
  return [
    {
      key: "claude-code",
      title: "Claude Code",
      where: "Run in a terminal:",
      text: `claude mcp add --transport http ${SERVER_NAME} ${url} --header "Authorization: Bearer ${token ?? `\${${TOKEN_VARIABLE}}`}"`,
      hint: token ? null : `Set ${TOKEN_VARIABLE} in that shell to a gateway token first; the shell fills it in.`,
    },
    {
      key: "cursor",
      title: "Cursor",
      where: "In .cursor/mcp.json (VS Code and other clients take the same URL and header):",
      text: json({ url, headers: { Authorization: `Bearer ${token ?? `\${env:${TOKEN_VARIABLE}}`}` } }),
      hint: token
        ? "Anyone who can read this file can use the token: prefer the environment variable in files you share or commit."
        : `Cursor reads ${TOKEN_VARIABLE} from its environment.`,
    },
    {
      key: "stdio",
      title: "Clients that only start a process (Claude Desktop): the stdio bridge",
      where: "In the client's configuration file; the bridge talks to this running host:",
      text: json({ command: command || BRIDGE_COMMAND, args: bridgeArgs, env: { [TOKEN_VARIABLE]: token ?? "mcpg_..." } }),
      hint: command
        ? "The command is this host's own mcp-center program: the client must run on this machine (elsewhere, use the URL and header above)."
        : "Replace /path/to/mcp-center/.venv/bin/mcp-center with the path of the mcp-center program in your installation.",
    },
  ];
}

/** One snippet: a labelled read-only text area and a Copy button. */
function snippetBlock(snippet) {
  const id = uid(`snippet-${snippet.key}`);
  const lines = snippet.text.split("\n").length;
  const area = h("textarea", { id, class: "json snippet", readonly: true, rows: String(Math.min(Math.max(lines, 2), 18)), spellcheck: "false", "data-snippet": snippet.key }, snippet.text);
  const button = h("button", { type: "button", "aria-label": `Copy the ${snippet.title} snippet` }, "Copy");
  button.addEventListener("click", () => copy(area.value, area, `${snippet.title} snippet`));
  return h(
    "div",
    { class: "field snippet-block" },
    h("label", { for: id }, snippet.title),
    h("p", { class: "hint" }, snippet.where),
    area,
    snippet.hint ? h("p", { class: "hint" }, snippet.hint) : null,
    h("div", { class: "actions" }, button),
  );
}

function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return h("time", { datetime: iso }, Number.isNaN(date.getTime()) ? iso : date.toLocaleString());
}

/** Draw the Gateway page into `main`; returns the cleanup the router calls when the user leaves. */
export function renderGateway(main) {
  let alive = true;
  let url = gatewayUrl({ url: `${window.location.origin}/mcp` });
  let bridge = null; // this host's mcp-center program, once GET /api/gateway has said it

  const urlLine = h("code", { "data-testid": "gateway-url" }, url);
  const urlNote = h("p", { class: "hint", hidden: true });
  const toolsLine = h("p", { "data-testid": "gateway-tools" }, "Loading the tools…");
  const toolsList = h("ul", { class: "plain gateway-tools" });
  const toolsDetails = h("details", { hidden: true }, h("summary", {}, "Show their names"), toolsList);

  // ----- tokens -----
  const nameId = uid("token-name");
  const nameError = h("p", { class: "field-error", id: uid("err"), role: "alert", hidden: true });
  const nameInput = h("input", { type: "text", id: nameId, name: "name", maxlength: "64", autocomplete: "off", "aria-describedby": `${nameId}-hint` });
  const createButton = h("button", { type: "submit", class: "primary" }, "Create token");
  const createForm = h(
    "form",
    { class: "card token-form", "aria-label": "Create a gateway token" },
    h(
      "div",
      { class: "field" },
      h("label", { for: nameId }, "Name"),
      h("p", { class: "hint", id: `${nameId}-hint` }, "Which client or agent will use it, e.g. claude-code or laptop-cursor (1-64 characters)."),
      nameInput,
      nameError,
    ),
    h("div", { class: "actions" }, createButton),
  );
  const oneTimeSlot = h("div");
  const tokensBody = h("tbody");
  const tokensTable = h(
    "table",
    { class: "servers tokens" },
    h("caption", { class: "visually-hidden" }, "Gateway tokens"),
    h("thead", {}, h("tr", {}, ["Name", "Created", "Id", ""].map((c) => h("th", { scope: "col" }, c || h("span", { class: "visually-hidden" }, "Actions"))))),
    tokensBody,
  );
  const tokensEmpty = h("p", { class: "empty", hidden: true }, "No gateway tokens yet: create one for each client, so you can revoke one without the others.");
  const tokensError = h("p", { class: "alert alert-error", role: "alert", hidden: true });
  const tokensHeading = h("h2", { id: uid("tokens"), tabindex: "-1" }, "Tokens");

  // ----- the one-time view -----
  let oneTime = null; // {id, close} of the panel that holds the new token, or null

  function closeOneTime({ focus = false } = {}) {
    if (!oneTime) return;
    oneTime.panel.remove();
    oneTime = null; // the token string is only referenced by the removed panel now
    if (focus) nameInput.focus();
  }

  function showOneTime(created) {
    closeOneTime();
    const tokenId = uid("new-token");
    const field = h("input", { type: "text", id: tokenId, readonly: true, autocomplete: "off", spellcheck: "false", class: "token-value", value: created.token });
    const copyButton = h("button", { type: "button", class: "primary" }, "Copy token");
    copyButton.addEventListener("click", () => copy(field.value, field, "Token"));
    const fillId = uid("fill");
    const fill = h("input", { type: "checkbox", id: fillId });
    const filled = h("div", { class: "filled-snippets", hidden: true });
    fill.addEventListener("change", () => {
      if (fill.checked) replace(filled, snippets(url, field.value, bridge).map(snippetBlock));
      else replace(filled);
      filled.hidden = !fill.checked;
    });
    const done = h("button", { type: "button" }, "Done, I saved it");
    const panel = h(
      "section",
      { class: "alert alert-warn one-time", "aria-labelledby": `${tokenId}-title`, "data-token-id": created.id },
      h("h3", { id: `${tokenId}-title`, tabindex: "-1" }, `New token “${created.name}”`),
      h("p", {}, h("strong", {}, "Copy it now: you will not see it again."), " mcp-center keeps only a hash of it. If you lose it, revoke it and create another."),
      h("label", { for: tokenId }, "Gateway token"),
      field,
      h("div", { class: "actions" }, copyButton, done),
      h("label", { class: "checkbox", for: fillId }, fill, "Fill this token into the client snippets (shown only here)"),
      filled,
    );
    done.addEventListener("click", () => closeOneTime({ focus: true }));
    panel.addEventListener("keydown", (event) => {
      if (event.key === "Escape") closeOneTime({ focus: true });
    });
    oneTime = { id: created.id, panel };
    oneTimeSlot.append(panel);
    field.focus();
    field.select();
  }

  // ----- token list -----
  async function loadTokens() {
    let tokens;
    try {
      tokens = (await gateway.tokens()).tokens;
    } catch (err) {
      if (!alive) return;
      tokensError.textContent = `${err.code}: ${err.message}`;
      tokensError.hidden = false;
      return;
    }
    if (!alive) return;
    tokensError.hidden = true;
    tokensEmpty.hidden = tokens.length > 0;
    tokensTable.hidden = tokens.length === 0;
    replace(tokensBody, tokens.map(tokenRow));
  }

  function tokenRow(token) {
    const revoke = h("button", { type: "button", class: "danger", "aria-label": `Revoke ${token.name}` }, "Revoke");
    revoke.addEventListener("click", () => revokeToken(token, revoke));
    return h(
      "tr",
      { "data-token-id": token.id },
      h("td", { "data-label": "Name" }, token.name),
      h("td", { "data-label": "Created" }, when(token.created_at)),
      h("td", { "data-label": "Id" }, h("code", {}, token.id)),
      h("td", { "data-label": "" }, revoke),
    );
  }

  async function revokeToken(token, button) {
    const confirmed = await confirmDialog({
      title: `Revoke “${token.name}”?`,
      text: "Every client that uses this token is refused from its next request. This cannot be undone; you can create a new token.",
      ok: "Revoke token",
    });
    if (!confirmed || !alive) return;
    button.setAttribute("aria-busy", "true");
    try {
      await gateway.revoke(token.id);
    } catch (err) {
      button.removeAttribute("aria-busy");
      if (!(err instanceof ApiError) || err.code !== "GATEWAY_TOKEN_NOT_FOUND") {
        toast(`Not revoked: ${err.code}: ${err.message}`);
        return;
      }
    }
    if (!alive) return;
    if (oneTime && oneTime.id === token.id) closeOneTime();
    toast(`Token “${token.name}” revoked: clients using it are refused from their next request.`);
    await loadTokens();
    tokensHeading.focus();
  }

  // ----- create -----
  function showNameError(message) {
    nameError.textContent = message;
    nameError.hidden = false;
    nameInput.setAttribute("aria-invalid", "true");
    nameInput.setAttribute("aria-describedby", `${nameId}-hint ${nameError.id}`);
  }

  function clearNameError() {
    nameError.hidden = true;
    nameError.textContent = "";
    nameInput.removeAttribute("aria-invalid");
    nameInput.setAttribute("aria-describedby", `${nameId}-hint`);
  }

  createForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (createButton.getAttribute("aria-busy") === "true") return;
    clearNameError();
    createButton.setAttribute("aria-busy", "true");
    let created;
    try {
      created = await gateway.create(nameInput.value);
    } catch (err) {
      if (!alive) return;
      const field = err.fieldErrors.find((e) => e.field === "name");
      showNameError(`${err.code}: ${err.message}${field && field.code !== err.code ? ` (${field.code})` : ""}`);
      nameInput.focus();
      return;
    } finally {
      createButton.removeAttribute("aria-busy");
    }
    if (!alive) return;
    nameInput.value = "";
    showOneTime(created);
    loadTokens();
  });

  // ----- the endpoint and its tools -----
  async function loadInfo() {
    try {
      const info = await gateway.info();
      if (!alive) return;
      url = gatewayUrl(info);
      bridge = info.bridge_command || null;
      urlLine.textContent = url;
      if (info.url !== url) {
        replace(urlNote, "mcp-center's configured address is ", h("code", {}, info.url), ": give clients the address they can reach.");
        urlNote.hidden = false;
      }
      drawSnippets();
    } catch (err) {
      if (!alive) return;
      toast(`The gateway's address could not be loaded: ${err.code}`);
      drawSnippets(); // with this page's own address and the placeholder program
    }
  }

  async function loadTools() {
    let tools;
    try {
      tools = (await gateway.tools()).tools.filter((tool) => tool.enabled !== false);
    } catch (err) {
      if (alive) toolsLine.textContent = `The tools could not be listed: ${err.code}: ${err.message}`;
      return;
    }
    if (!alive) return;
    const count = tools.length;
    replace(
      toolsLine,
      h("strong", { "data-testid": "gateway-tool-count" }, String(count)),
      count === 1 ? " tool is " : " tools are ",
      "exposed now: those of every ready, enabled server, minus the tools you switched off. ",
      h("a", { href: "#/" }, count ? "Manage the servers" : "Add and enable a server"),
      ".",
    );
    replace(toolsList, tools.map((tool) => h("li", {}, h("code", {}, tool.name))));
    toolsDetails.hidden = count === 0;
  }

  // Drawn once GET /api/gateway has answered (or failed): drawn earlier, the stdio snippet would show
  // the placeholder program and then change under a user who had already copied it.
  const snippetsBox = h("div", { class: "snippets", "aria-busy": "true" }, h("p", { class: "muted" }, "Loading the snippets…"));
  function drawSnippets() {
    snippetsBox.removeAttribute("aria-busy");
    replace(snippetsBox, snippets(url, null, bridge).map(snippetBlock));
  }

  replace(
    main,
    h("h1", { tabindex: "-1" }, "Gateway"),
    h(
      "p",
      { class: "lede" },
      "The gateway is one MCP endpoint (Streamable HTTP) through which Claude Code, Cursor or any MCP client uses the tools, prompts and resources of all your enabled servers — every call goes through your approval policy.",
    ),
  );
  const body = [
    h(
      "section",
      { class: "card gateway-endpoint", "aria-label": "Endpoint" },
      h("dl", { class: "status" }, h("dt", {}, "URL"), h("dd", {}, urlLine, urlNote), h("dt", {}, "Tools"), h("dd", {}, toolsLine, toolsDetails)),
    ),
    h(
      "section",
      { "aria-labelledby": tokensHeading.id },
      tokensHeading,
      h(
        "p",
        { class: "hint" },
        "Clients present a gateway token as ",
        h("code", {}, "Authorization: Bearer <token>"),
        ". It can only use tools (never the admin token's powers). mcp-center does not record when a token was last used; a token set in ",
        h("code", {}, "MCP_CENTER_SERVE_GATEWAY_TOKEN"),
        " where serve runs is accepted too and is not listed here.",
      ),
      createForm,
      oneTimeSlot,
      tokensError,
      tokensEmpty,
      h("div", { class: "table-wrap" }, tokensTable),
    ),
    h(
      "section",
      { "aria-labelledby": "connect-heading" },
      h("h2", { id: "connect-heading" }, "Connect a client"),
      h("p", { class: "hint" }, "The token is a placeholder: set ", h("code", {}, TOKEN_VARIABLE), " to one of your gateway tokens, or fill a new one in right after creating it."),
      snippetsBox,
    ),
  ];

  // The sections come once the endpoint's address and tools have answered (or failed): drawn before,
  // the tools line grew (its "Show their names") and moved the token form under a pointer about to
  // press "Create token", and a click whose press and release landed on different elements was lost
  // (issue 16). The token list below the form is drawn when it comes. A request that hangs holds the
  // sections back FIRST_DRAW_WAIT_MS at most.
  settledWithin([loadInfo(), loadTools()]).then(() => {
    if (alive) main.append(...body);
  });
  loadTokens();

  return () => {
    alive = false;
    closeOneTime();
  };
}
