// Export (R-1.9): every registered server in a client's configuration format, to copy or download.
// The host never exports a secret value: each one is a placeholder (`${VAR}`, `${env:VAR}` for
// Cursor, `${input:...}` for VS Code) that the user fills in the client. The gateway snippet points a
// client at this host instead.

import { interchange } from "./api.js";
import { h, pretty, replace, toast, uid } from "./dom.js";

export const EXPORT_FORMATS = [
  ["claude-code", "Claude Code"],
  ["cursor", "Cursor"],
  ["vscode", "VS Code"],
  ["claude-desktop", "Claude Desktop"],
];

/** Copy `text` to the clipboard; when the browser refuses, select it in `fallback` for Ctrl+C. */
export async function copy(text, fallback, what) {
  try {
    await navigator.clipboard.writeText(text);
    toast(`${what} copied.`);
  } catch (err) {
    fallback.focus();
    fallback.select();
    toast("The browser did not allow copying: the text is selected, press Ctrl+C.");
  }
}

/** Offer `text` as a file download named `filename` (a Blob URL, released right after). */
function download(text, filename) {
  const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  const link = h("a", { href: url, download: filename, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function codeBlock(label, text, filename) {
  const id = uid("export");
  const area = h("textarea", { id, class: "json", readonly: true, rows: String(Math.min(Math.max(text.split("\n").length, 4), 24)), spellcheck: "false" }, text);
  const copyButton = h("button", { type: "button" }, "Copy");
  copyButton.addEventListener("click", () => copy(area.value, area, label));
  const downloadButton = filename ? h("button", { type: "button" }, "Download") : null;
  if (downloadButton) downloadButton.addEventListener("click", () => download(area.value + "\n", filename.split("/").pop()));
  return h("div", { class: "field" }, h("label", { for: id }, label), area, h("div", { class: "actions" }, copyButton, downloadButton));
}

/** Draw the export page into `main`. */
export function renderExport(main) {
  const formatId = uid("export-format");
  const select = h("select", { id: formatId }, EXPORT_FORMATS.map(([value, label]) => h("option", { value }, label)));
  const output = h("div", { class: "export-output", "aria-live": "polite" });
  replace(
    main,
    h("h1", { tabindex: "-1" }, "Export"),
    h(
      "p",
      { class: "lede" },
      "Your servers in a client's configuration format. Secret values never leave mcp-center: each is a placeholder that you fill in the client (an environment variable, or an input in VS Code).",
    ),
    h("div", { class: "card" }, h("div", { class: "field" }, h("label", { for: formatId }, "Client"), select)),
    output,
  );

  let asked = 0;
  async function load() {
    const format = select.value;
    const mine = ++asked;
    replace(output, h("p", { class: "muted" }, "Loading…"));
    let doc;
    try {
      doc = await interchange.exportAs(format);
    } catch (err) {
      if (mine === asked) replace(output, h("p", { class: "alert alert-error", role: "alert" }, `${err.code}: ${err.message}`));
      return;
    }
    if (mine !== asked) return;
    const text = pretty(doc.config);
    replace(
      output,
      h("h2", {}, "Configuration file"),
      h("p", { class: "hint" }, "Save it as ", h("code", {}, doc.filename), "."),
      codeBlock(`Exported configuration (${doc.filename})`, text, doc.filename),
      doc.placeholders.length
        ? [
            h("h3", {}, "Placeholders to fill"),
            h("p", { class: "hint" }, "Set these in the client (its environment or its prompts) to the secrets you configured here."),
            h(
              "table",
              { class: "placeholders" },
              h("thead", {}, h("tr", {}, ["Placeholder", "Server", "Secret"].map((c) => h("th", { scope: "col" }, c)))),
              h(
                "tbody",
                {},
                doc.placeholders.map((p) =>
                  h("tr", {}, h("td", { "data-label": "Placeholder" }, h("code", {}, p.name)), h("td", { "data-label": "Server" }, p.server_id), h("td", { "data-label": "Secret" }, `${p.kind} ${p.key}`)),
                ),
              ),
            ),
          ]
        : h("p", { class: "muted" }, "No secrets: nothing to fill in."),
      doc.notes.length
        ? [
            h("h3", {}, "Left out, or to check"),
            h("ul", { class: "alert alert-warn" }, doc.notes.map((n) => h("li", {}, h("strong", {}, n.server_id), ` ${n.field ? `(${n.field})` : ""}: ${n.message} (${n.code})`))),
          ]
        : null,
      h(
        "details",
        { class: "gateway" },
        h("summary", {}, "Point the client at this host's gateway instead"),
        h(
          "p",
          { class: "hint" },
          `The gateway (${doc.gateway.url}) gives the client the tools of all your enabled servers. Set MCP_CENTER_GATEWAY_TOKEN to a gateway token: `,
          h("a", { href: "#/gateway" }, "create one on the Gateway page"),
          ".",
        ),
        codeBlock("Gateway snippet", pretty(doc.gateway.config), null),
      ),
    );
  }
  select.addEventListener("change", load);
  load();
  return () => {
    asked += 1;
  };
}
