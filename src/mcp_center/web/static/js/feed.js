// Live updates of the server list from GET /api/events (server-sent events, R-3.11).
//
// The stream carries `server.status` (a state change with the attributed error), `server.catalog`,
// the configuration events (`server.created`, `server.updated`, `server.deleted`, ...), `server.oauth`
// (an authorization was completed or forgotten: the view's `oauth` block changed),
// `events.dropped` (we fell behind), and the card events (`approval.created`, `approval.closed`,
// `interaction.created`, `interaction.closed`) and `server.activity` (a server's log message,
// notification or call progress) which only `onEvent` listeners use (the inbox, inbox.js, the
// Activity tab and the playground, debug.js and tools.js; they never reload the list). A status event patches the one server it names; a
// configuration event, a (re)connect and `events.dropped` reload the list once (a resync). Only
// when the stream fails repeatedly does the feed fall back to polling the list, and it keeps
// trying the stream again with a growing delay.
//
// A page load reads the list once: the first read waits for the stream to open (a read sent
// earlier could miss a change made before the host had subscribed the stream, so the open would
// read it again), or for the fallback to polling, or CONNECT_GRACE_MS when the stream neither opens
// nor fails. `onSync` listeners (the inbox) reload at the same moments. The EventSource is
// same-origin, so the browser sends the session cookie with it; nothing secret is ever put in its URL.

import { coalesced, servers } from "./api.js";

export const POLL_INTERVAL_MS = 3000;
/** Consecutive stream errors (without an open in between) before the feed polls instead. */
export const STREAM_FAILURES_BEFORE_POLLING = 3;
/** First and largest delay before trying the stream again while polling, in ms. */
export const STREAM_RETRY_MS = [5000, 60000];
/** Configuration events are coalesced for this long into one list reload, in ms. */
const RESYNC_DELAY_MS = 100;
/** How long the first read waits for the stream to open or fail before it reads the list anyway, in ms. */
export const CONNECT_GRACE_MS = 1000;

export const CONFIG_EVENTS = [
  "server.created",
  "server.updated",
  "server.deleted",
  "server.trusted",
  "server.tested",
  "server.enabled",
  "server.disabled",
  "server.secret_set",
  "server.secret_deleted",
  "server.oauth",
];
/** Approvals and elicitation cards coming and going: passed to `onEvent` listeners only. */
export const CARD_EVENTS = ["approval.created", "approval.closed", "interaction.created", "interaction.closed"];
/** A server's log message, notification or call progress: passed to `onEvent` listeners only. */
export const ACTIVITY_EVENTS = ["server.activity"];
const STREAM_EVENTS = ["server.status", "server.catalog", "events.dropped", ...CONFIG_EVENTS, ...CARD_EVENTS, ...ACTIVITY_EVENTS];

/**
 * A shared feed of the server list.
 *
 * - `subscribe(fn)`: fn(list) on every change; returns an unsubscribe function.
 * - `onEvent(fn)`: fn(event) for every event of the stream (parsed JSON); returns an unsubscribe function.
 * - `onMode(fn)`: fn(mode) now and on every change of "connecting" | "live" | "polling".
 * - `onSync(fn)`: fn() whenever whatever the page shows should be read again: the stream opened,
 *   the feed fell back to polling, or the first stream is still connecting after CONNECT_GRACE_MS.
 * - `refresh()`: reload the list now (after a change the page made itself).
 */
export function createServerFeed({
  eventsUrl = "/api/events",
  intervalMs = POLL_INTERVAL_MS,
  maxFailures = STREAM_FAILURES_BEFORE_POLLING,
  retryMs = STREAM_RETRY_MS,
} = {}) {
  const listeners = new Set();
  const eventListeners = new Set();
  const modeListeners = new Set();
  const syncListeners = new Set();
  /** server id → the newest status an event announced (a list answer may be older than it). */
  const announced = new Map();
  /** Ids deleted since the page loaded: their last status events must not bring them back. */
  const gone = new Set();
  let last = null;
  let mode = "connecting";
  let source = null;
  let failures = 0;
  let retryDelay = retryMs[0];
  let retryTimer = null;
  let pollTimer = null;
  let resyncTimer = null;
  let graceTimer = null;
  let started = false;

  function setMode(next) {
    if (next === mode) return;
    mode = next;
    for (const fn of modeListeners) fn(mode);
  }

  function publish(list) {
    last = list.map((view) => {
      const newer = announced.get(view.id);
      return newer && view.status && newer.since > view.status.since ? { ...view, status: newer } : view;
    });
    for (const fn of listeners) fn(last);
  }

  /** Reload the list; a reload asked for while one runs runs once more afterwards (nothing is missed). */
  let reading = false;
  const refresh = coalesced(() => {
    reading = true;
    return servers
      .list()
      .then(publish)
      .finally(() => {
        reading = false;
      });
  });

  /** Read the list and tell `onSync` listeners to read theirs (a (re)connect, a fallback, the grace). */
  function sync() {
    clearTimeout(graceTimer);
    graceTimer = null;
    refresh();
    for (const fn of syncListeners) fn();
  }

  function resyncSoon() {
    clearTimeout(resyncTimer);
    resyncTimer = setTimeout(refresh, RESYNC_DELAY_MS);
  }

  function applyStatus(serverId, status) {
    if (gone.has(serverId)) return;
    const known = announced.get(serverId);
    if (known && known.since > status.since) return;
    announced.set(serverId, status);
    if (!last || !last.some((view) => view.id === serverId)) {
      resyncSoon(); // a server this page has not seen yet (e.g. added by the CLI, which announces nothing else)
      return;
    }
    last = last.map((view) => (view.id === serverId ? { ...view, status } : view));
    for (const fn of listeners) fn(last);
  }

  function handle(type, data) {
    let event;
    try {
      event = JSON.parse(data);
    } catch (err) {
      return;
    }
    if (type === "server.deleted") gone.add(event.server_id);
    if (type === "server.created") gone.delete(event.server_id);
    if (type === "server.status" && event.server_id && event.status) applyStatus(event.server_id, event.status);
    else if (type === "events.dropped") resyncSoon();
    else if (CONFIG_EVENTS.includes(type)) resyncSoon();
    for (const fn of eventListeners) fn(event);
  }

  // ----- polling (only while the stream is down) -------------------------------------------------

  function schedulePolling() {
    clearInterval(pollTimer);
    pollTimer = null;
    if (mode === "polling" && listeners.size && document.visibilityState === "visible") {
      pollTimer = setInterval(refresh, intervalMs);
    }
  }

  document.addEventListener("visibilitychange", () => {
    schedulePolling();
    if (mode === "polling" && document.visibilityState === "visible" && listeners.size) refresh();
  });

  // ----- the stream --------------------------------------------------------------------------------

  function openStream() {
    clearTimeout(retryTimer);
    retryTimer = null;
    if (typeof EventSource === "undefined") {
      fallBack();
      return;
    }
    const stream = new EventSource(eventsUrl);
    source = stream;
    stream.addEventListener("open", () => {
      failures = 0;
      retryDelay = retryMs[0];
      setMode("live");
      schedulePolling();
      sync(); // whatever happened while we were not listening
    });
    stream.addEventListener("error", () => {
      if (source !== stream) return;
      failures += 1;
      // CLOSED: the browser gave up (an HTTP error, e.g. 401 or 503); otherwise it retries by itself.
      if (stream.readyState === EventSource.CLOSED || failures >= maxFailures) {
        stream.close();
        source = null;
        fallBack();
      } else if (mode !== "polling") {
        setMode("connecting");
      }
    });
    for (const type of STREAM_EVENTS) stream.addEventListener(type, (message) => handle(type, message.data));
  }

  function fallBack() {
    setMode("polling");
    schedulePolling();
    sync();
    if (typeof EventSource === "undefined") return;
    retryTimer = setTimeout(openStream, retryDelay);
    retryDelay = Math.min(retryDelay * 2, retryMs[1]);
  }

  function start() {
    if (started) return;
    started = true;
    openStream();
    graceTimer = setTimeout(() => {
      if (mode === "connecting") sync();
    }, CONNECT_GRACE_MS);
  }

  return {
    subscribe(fn) {
      listeners.add(fn);
      start();
      if (last) fn(last);
      schedulePolling();
      // Read now only when the first read is over and failed (a sync reads it otherwise).
      if (!last && mode !== "connecting" && !reading) refresh();
      return () => {
        listeners.delete(fn);
        schedulePolling();
      };
    },
    onEvent(fn) {
      eventListeners.add(fn);
      start();
      return () => eventListeners.delete(fn);
    },
    onMode(fn) {
      modeListeners.add(fn);
      fn(mode);
      return () => modeListeners.delete(fn);
    },
    onSync(fn) {
      syncListeners.add(fn);
      start();
      return () => syncListeners.delete(fn);
    },
    get mode() {
      return mode;
    },
    refresh,
  };
}
