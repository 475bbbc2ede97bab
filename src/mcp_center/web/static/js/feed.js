// Live updates of the server list. Today this polls GET /api/mcp/servers every few seconds while
// the page is visible; when the host grows an `/api/events` stream, only this module changes
// (an EventSource that calls `publish` on each event), not the views that subscribe.

import { servers } from "./api.js";

export const POLL_INTERVAL_MS = 3000;

/**
 * A shared feed of the server list: `subscribe(fn)` calls fn(list) on every refresh and returns
 * an unsubscribe function; `refresh()` fetches now (after a change the page made itself).
 */
export function createServerFeed({ intervalMs = POLL_INTERVAL_MS } = {}) {
  const listeners = new Set();
  let timer = null;
  let inflight = null;
  let last = null;

  function publish(list) {
    last = list;
    for (const fn of listeners) fn(list);
  }

  async function refresh() {
    if (inflight) return inflight;
    inflight = servers
      .list()
      .then(publish)
      .catch(() => {})
      .finally(() => {
        inflight = null;
      });
    return inflight;
  }

  function schedule() {
    clearInterval(timer);
    timer = null;
    if (listeners.size && document.visibilityState === "visible") {
      timer = setInterval(refresh, intervalMs);
    }
  }

  document.addEventListener("visibilitychange", () => {
    schedule();
    if (document.visibilityState === "visible" && listeners.size) refresh();
  });

  return {
    subscribe(fn) {
      listeners.add(fn);
      if (last) fn(last);
      schedule();
      refresh();
      return () => {
        listeners.delete(fn);
        schedule();
      };
    },
    refresh,
  };
}
