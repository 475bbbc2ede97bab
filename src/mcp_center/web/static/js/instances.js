// Several instances: every live instance's state of a server (which instance answered is in
// the footer, from api.js).
// Behind a load balancer each `serve` runs its own connections; the shared state is in PostgreSQL.

import { api } from "./api.js";
import { h, replace } from "./dom.js";

/**
 * A card listing each live instance's connection state of server `id` (refreshed by the caller).
 * `settled` resolves once its first answer (or error) is drawn; it never rejects.
 */
export function instancesCard(id) {
  // Heading above its card, as the overview's other sections: a heading inside the card left no gap
  // between this card and the Status card above it.
  const body = h("div", { class: "card" }, h("p", { class: "muted" }, "Loading instances…"));
  const element = h("section", { class: "instances", "aria-labelledby": "instances-title" }, h("h2", { id: "instances-title" }, "Instances"), body);
  async function refresh() {
    let board;
    try {
      board = await api("GET", "/api/instances");
    } catch (err) {
      replace(body, h("p", { class: "muted" }, `Instances unavailable (${err.code}).`));
      return;
    }
    // This page's instance first, then the others by name (the API's order is not the reader's).
    const nameOf = (instance) => instance.name || instance.id;
    const ordered = [...board.instances].sort((a, b) => Number(b.here) - Number(a.here) || nameOf(a).localeCompare(nameOf(b)));
    const rows = ordered.map((instance) => {
      const line = instance.servers[id] || { state: "unknown" };
      const reason = line.reason ? ` (${line.reason})` : "";
      return h(
        "tr",
        {},
        h("td", {}, nameOf(instance), instance.here ? " (this page)" : ""),
        h("td", {}, h("span", { class: `badge state-${line.state}` }, line.state), reason),
        h("td", {}, instance.url || "–"),
      );
    });
    replace(
      body,
      rows.length
        ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Instance"), h("th", {}, "Connection"), h("th", {}, "Listens on"))), h("tbody", {}, rows))
        : h("p", { class: "muted" }, "No instance reports this server yet."),
    );
  }
  const settled = refresh();
  return { element, refresh, settled };
}
