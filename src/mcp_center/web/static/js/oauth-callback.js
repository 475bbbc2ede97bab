// The script of the OAuth callback page (GET /oauth/callback, R-4.9). The settings page opens the
// authorization server in a new window with `noopener` (the authorization server's pages get no
// handle on the settings page), so the outcome travels on a same-origin BroadcastChannel instead of
// window.opener. The message carries only the server id, ok and the stable error code: never the
// authorization code or state, which are also removed from the address bar and history at once.

export const CHANNEL = "mcp-center.oauth";

const data = document.body.dataset;
const outcome = { type: "mcp-center.oauth", server_id: data.server || null, ok: data.ok === "true", code: data.code || null };

history.replaceState(null, "", window.location.pathname);

if (typeof BroadcastChannel !== "undefined") {
  const channel = new BroadcastChannel(CHANNEL);
  channel.postMessage(outcome);
  channel.close();
}
// A window opened without noopener (another tool): tell its opener too, same origin only.
if (window.opener) {
  try {
    window.opener.postMessage(outcome, window.location.origin);
  } catch (err) {
    // the opener navigated elsewhere: nothing to tell
  }
}
// Success: the settings page shows the result, so the window goes away by itself. A failure stays
// open so its message can be read.
if (outcome.ok) setTimeout(() => window.close(), 1500);
