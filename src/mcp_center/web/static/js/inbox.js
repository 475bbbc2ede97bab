// The inbox: every card waiting for the user — agent tool calls waiting for approval,
// elicitation requests and cards interrupted by a restart that offer a retry —
// across all servers at #/inbox, one server's at #/servers/<id>/approvals, and a live count on
// the main navigation.
//
// Cards come from the host (GET /api/approvals, GET /api/interactions), never from localStorage, so
// they survive a page reload. The shared feed (feed.js) passes on the stream's `approval.*` and
// `interaction.*` events: each one patches the list at once; a (re)connected stream reloads it
// (the feed's `onSync`, which also says when to read it first: once per page load);
// while the feed polls (the stream is down) the inbox polls too. A reload that was running while
// an event arrived is thrown away and run again, so an older answer never hides a newer card.

import { cards, coalesced } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { approvalCard, interactionCard } from "./cards.js";
import { resultView } from "./playground.js";

const POLL_MS = 3000;
let shared = null;

/** The page's one inbox over `feed` (created on first use). */
export function sharedInbox(feed) {
  if (!shared) shared = createInbox(feed);
  return shared;
}

/**
 * A live store of the open cards: `{approvals, questions, interrupted}`.
 *
 * - `subscribe(fn)`: fn(state) now (once loaded) and on every change; returns an unsubscribe function.
 * - `drop(kind, id)`: forget a card the page just closed (the host's event would say the same).
 * - `reload()`: ask the host again.
 */
export function createInbox(feed) {
  const listeners = new Set();
  let state = null;
  let changes = 0;
  let pollTimer = null;

  function publish() {
    for (const fn of listeners) fn(state);
  }

  const reload = coalesced(() => {
    const seen = changes;
    return Promise.all([cards.approvals(), cards.interactions("pending"), cards.interactions("interrupted")]).then(
      ([approvals, questions, interrupted]) => {
        if (seen !== changes) {
          reload(); // an event arrived meanwhile: this answer may be older than it
          return;
        }
        state = { approvals, questions, interrupted: interrupted.filter((card) => card.actions.includes("retry")) };
        publish();
      },
    );
  });

  function patch(kind, item, open) {
    changes += 1;
    if (!state) {
      reload();
      return;
    }
    const rest = state[kind].filter((other) => other.id !== item.id);
    state = { ...state, [kind]: open ? [...rest, item] : rest };
    publish();
  }

  function onEvent(event) {
    if (event.type === "approval.created" && event.approval) patch("approvals", event.approval, true);
    else if (event.type === "approval.closed" && event.approval) patch("approvals", event.approval, false);
    else if (event.type === "interaction.created" && event.interaction) patch("questions", event.interaction, true);
    else if (event.type === "interaction.closed" && event.interaction) {
      const card = event.interaction;
      patch("questions", card, false);
      patch("interrupted", card, card.state === "interrupted" && card.actions.includes("retry"));
    } else if (event.type === "events.dropped") reload();
  }

  function onMode(mode) {
    clearInterval(pollTimer);
    pollTimer = null;
    if (mode === "polling") {
      pollTimer = setInterval(() => {
        if (document.visibilityState === "visible") reload();
      }, POLL_MS);
    }
  }

  feed.onEvent(onEvent);
  feed.onMode(onMode);
  // The first read and every read after a (re)connect or a fallback: whatever happened while we were not listening.
  feed.onSync(reload);

  return {
    subscribe(fn) {
      listeners.add(fn);
      if (state) fn(state);
      return () => listeners.delete(fn);
    },
    drop(kind, id) {
      if (state) patch(kind, { id }, false);
      reload(); // e.g. a question found interrupted comes back as such
    },
    reload,
    get state() {
      return state;
    },
  };
}

/** How many cards wait for the user: approvals, questions, and interrupted calls that offer a retry. */
export function waitingCount(state, serverId = null) {
  if (!state) return 0;
  const mine = (item) => serverId === null || item.server_id === serverId;
  return state.approvals.filter(mine).length + state.questions.filter(mine).length + state.interrupted.filter(mine).length;
}

/** The one-line summary above the cards: what waits for an answer, and what can be retried. */
function summaryText(answerable, interrupted) {
  const parts = [];
  if (answerable) parts.push(`${answerable} ${answerable === 1 ? "card is" : "cards are"} waiting for your answer.`);
  if (interrupted) parts.push(`${interrupted} interrupted ${interrupted === 1 ? "call" : "calls"} can be retried.`);
  return parts.length ? parts.join(" ") : "Nothing is waiting for you.";
}

/** Keep the count badge of the main navigation's Inbox link up to date. */
export function bindInboxBadge(inbox, badge) {
  inbox.subscribe((state) => {
    const count = waitingCount(state);
    badge.hidden = count === 0;
    replace(badge, String(count), h("span", { class: "visually-hidden" }, count === 1 ? " card waiting" : " cards waiting"));
  });
}

/**
 * A keyed list of cards: a card already shown is never redrawn (a half-filled form survives other
 * cards coming and going). After the user closes a card, focus moves to the next card (or the
 * previous one, or `fallbackFocus`).
 */
function cardList({ inbox, kind, make, empty, fallbackFocus }) {
  const list = h("ol", { class: "inbox-list" });
  const emptyNote = h("p", { class: "muted empty-note" }, empty);
  const element = h("div", {}, list, emptyNote);
  const shown = new Map();

  function update(items) {
    const wanted = new Set(items.map((item) => item.id));
    // Focus follows the user: a card leaving while it has the focus or is being answered here
    // hands the focus to the card that takes its place.
    let focusIndex = null;
    [...list.children].forEach((li, index) => {
      if (wanted.has(li.dataset.id)) return;
      if (focusIndex === null && (li.contains(document.activeElement) || li.querySelector("[data-busy]"))) focusIndex = index;
    });
    for (const [id, li] of shown) {
      if (!wanted.has(id)) {
        li.remove();
        shown.delete(id);
      }
    }
    items.forEach((item, index) => {
      let li = shown.get(item.id);
      if (!li) {
        li = h("li", { "data-id": item.id }, make(item, (id) => inbox.drop(kind, id)));
        shown.set(item.id, li);
      }
      // Only a card out of place moves (moving a node would take the focus out of it).
      if (list.children[index] !== li) list.insertBefore(li, list.children[index] || null);
    });
    emptyNote.hidden = items.length > 0;
    list.hidden = items.length === 0;
    if (focusIndex !== null) {
      const next = list.children[Math.min(focusIndex, list.children.length - 1)];
      const target = next ? next.querySelector("h3") : fallbackFocus();
      if (target) target.focus();
    }
  }

  return { element, update };
}

/**
 * Draw the cards of `serverId` (or of every server when null) into `container`: approvals,
 * questions and interrupted cards. Returns a cleanup function.
 */
export function renderCards(container, { inbox, serverId = null, headingLevel = "h2", focusId = null }) {
  const showServer = serverId === null;
  const mine = (item) => showServer || item.server_id === serverId;
  const headings = {
    approvals: h(headingLevel, { id: "cards-approvals", tabindex: "-1" }, "Tool calls waiting for approval"),
    questions: h(headingLevel, { id: "cards-questions", tabindex: "-1" }, "Questions from servers"),
    interrupted: h(headingLevel, { id: "cards-interrupted", tabindex: "-1" }, "Interrupted by a restart"),
  };
  const lists = {
    approvals: cardList({
      inbox,
      kind: "approvals",
      make: (item, onAnswered) => approvalCard(item, { showServer, onAnswered }),
      empty: "No tool call is waiting for approval.",
      fallbackFocus: () => headings.approvals,
    }),
    questions: cardList({
      inbox,
      kind: "questions",
      make: (item, onAnswered) => interactionCard(item, { showServer, onAnswered }),
      empty: "No server is asking anything.",
      fallbackFocus: () => headings.questions,
    }),
    interrupted: cardList({
      inbox,
      kind: "interrupted",
      make: (item, onAnswered) => interactionCard(item, { showServer, onAnswered, onRetried: showRetried }),
      empty: "",
      fallbackFocus: () => headings.approvals,
    }),
  };
  const summary = h("p", { class: "inbox-summary", role: "status", "data-testid": "inbox-summary" }, "Loading…");
  // Results of re-sent calls stay here (until dismissed) after their interrupted card has gone.
  const retried = h("div", { class: "retried" });
  function showRetried({ tool, serverId, result }) {
    const headingId = uid("retried");
    const dismiss = h("button", { type: "button", class: "quiet" }, "Dismiss");
    const block = h(
      "article",
      { class: "card retried-result", "aria-labelledby": headingId, "data-server": serverId },
      h("h3", { id: headingId, tabindex: "-1" }, `Result of the re-sent call ${tool}`, showServer ? ` (${serverId})` : ""),
      resultView(result),
      h("div", { class: "actions" }, dismiss),
    );
    dismiss.addEventListener("click", () => {
      block.remove();
      headings.approvals.focus();
    });
    retried.prepend(block);
    block.querySelector("h3").focus();
  }
  const interruptedSection = h(
    "section",
    { "aria-labelledby": "cards-interrupted", hidden: true },
    headings.interrupted,
    h("p", { class: "hint" }, "These questions were open when mcp-center stopped: their calls failed and nothing was delivered. A call is re-sent only if you ask."),
    lists.interrupted.element,
  );
  replace(
    container,
    summary,
    retried,
    h("section", { "aria-labelledby": "cards-approvals" }, headings.approvals, lists.approvals.element),
    h("section", { "aria-labelledby": "cards-questions" }, headings.questions, lists.questions.element),
    interruptedSection,
  );
  const unsubscribe = inbox.subscribe((state) => {
    const approvals = state.approvals.filter(mine);
    const questions = state.questions.filter(mine);
    const interrupted = state.interrupted.filter(mine);
    summary.textContent = summaryText(approvals.length + questions.length, interrupted.length);
    lists.approvals.update(approvals);
    lists.questions.update(questions);
    interruptedSection.hidden = interrupted.length === 0;
    lists.interrupted.update(interrupted);
    if (focusId) {
      // #/inbox/<card id> (the playground's link to the question its call waits on): that card.
      const card = container.querySelector(`[data-interaction="${CSS.escape(focusId)}"], [data-approval="${CSS.escape(focusId)}"]`);
      if (card) {
        focusId = null;
        card.classList.add("linked");
        card.scrollIntoView({ block: "start" });
        card.querySelector("h3")?.focus({ preventScroll: true });
      }
    }
  });
  return unsubscribe;
}

/** The #/inbox view: every server's cards. */
export function renderInbox(main, { inbox, focusId = null }) {
  const body = h("div", { class: "inbox" });
  replace(
    main,
    h("h1", { tabindex: "-1" }, "Inbox"),
    h(
      "p",
      { class: "lede" },
      "Agent tool calls wait here for your approval (set a tool to allow or deny on its server's Tools tab), and servers ask their questions here. Cards stay until answered, also across page reloads.",
    ),
    body,
  );
  return renderCards(body, { inbox, focusId });
}
