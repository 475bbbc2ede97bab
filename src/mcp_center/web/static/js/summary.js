// The connection summary and the confirm → test → enable steps (R-2). The summary is what the
// server computed (never what the page thinks it saved); confirming sends back exactly the digest
// that was shown, so a summary that changed in between is refused (409) and shown again. The host's
// warnings (a command not on PATH, a secret without a value, a non-ASCII URL) are shown with the
// summary: they block nothing, but the test would fail. What a step did is said in the section itself
// (a status line above the steps), never in a toast that could cover the steps.

import { servers } from "./api.js";
import { h, replace } from "./dom.js";
import { counted, errorText, lastTestText, needsText, stateBadge, transportLabel, warningsBox } from "./format.js";

function row(term, ...value) {
  return [h("dt", {}, term), h("dd", {}, ...value)];
}

function code(text) {
  return h("code", {}, text);
}

function secretState(entry) {
  return entry && entry.configured
    ? h("span", { class: "ok" }, "configured")
    : h("span", { class: "warn" }, "not set");
}

function pairs(obj, render) {
  const keys = Object.keys(obj || {});
  if (!keys.length) return h("span", { class: "muted" }, "none");
  return h("ul", { class: "plain" }, keys.map((k) => h("li", {}, code(k), " ", render(obj[k]))));
}

const NETWORK = {
  none: "none — its own network namespace; not even the host's 127.0.0.1",
  egress: "egress — the host's network, its loopback included",
};

/**
 * The sandbox row (R-11.1): the policy from the summary, and what this host makes of it
 * (`host`, the view's `sandbox_host`: the uid it runs as, or what is missing).
 */
export function sandboxValue(policy, host) {
  if (!policy) {
    return h("span", { class: "warn", "data-testid": "sandbox-off" }, "off — runs unconfined, with the rights of mcp-center's user");
  }
  const limits = [
    `memory ${policy.memory_mb === null ? "no limit" : `${policy.memory_mb} MiB`}`,
    `${policy.max_processes} processes`,
    `${policy.max_open_files} open files`,
  ].join(" · ");
  const paths = policy.paths.length
    ? h(
        "ul",
        { class: "plain" },
        policy.paths.map((p) => h("li", {}, code(p.path), " ", h("span", { class: p.writable ? "warn" : "muted" }, p.writable ? "writable" : "read-only"))),
      )
    : h("span", { class: "muted" }, "no extra host paths");
  const runsAs = !host
    ? null
    : !host.available
      ? h("span", { class: "bad" }, `cannot run on this host: ${host.message}`)
      : host.mode === "setuid"
        ? `runs as uid ${host.uid} without capabilities (mcp-center runs as root)`
        : `runs as uid ${host.uid} in a user namespace`;
  return h(
    "ul",
    { class: "plain sandbox-policy", "data-testid": "sandbox-policy" },
    h("li", {}, "network ", h("strong", {}, NETWORK[policy.network] || policy.network)),
    h("li", {}, limits),
    h("li", {}, "private home and /tmp; read-only /usr and /etc; no view of mcp-center's data"),
    h("li", {}, paths),
    runsAs ? h("li", {}, runsAs) : null,
  );
}

/** The summary as a definition list (every security-relevant field, R-2.1); `host` is the view's
 * `sandbox_host` (optional). */
export function summaryList(summary, host = null) {
  const items = [row("Transport", transportLabel(summary.transport))];
  if (summary.transport === "stdio") {
    items.push(
      row("Command", code(summary.command)),
      row(
        "Runs program",
        summary.command_path ? code(summary.command_path) : h("span", { class: "warn" }, "not found on PATH"),
      ),
      row(
        "Arguments",
        summary.args.length
          ? h("ol", { class: "plain args" }, summary.args.map((a) => h("li", {}, code(a))))
          : h("span", { class: "muted" }, "none"),
      ),
      row("Working directory", summary.cwd ? code(summary.cwd) : h("span", { class: "muted" }, "the host's")),
      row("Environment", pairs(summary.env, (v) => ["= ", code(v)])),
      row("Secret environment", pairs(summary.secret_env, secretState)),
      row("Sandbox", sandboxValue(summary.sandbox || null, host)),
    );
  } else {
    const auth = summary.auth || { kind: "none" };
    const authValue = [code(auth.kind)];
    if (auth.kind === "bearer") authValue.push(" · token ", secretState(auth.token));
    if (auth.kind === "oauth") {
      authValue.push(` · client id ${auth.client_id || "(registered on first use)"}`);
      if (auth.scopes && auth.scopes.length) authValue.push(` · scopes ${auth.scopes.join(" ")}`);
      if (auth.binding) authValue.push(` · issuer ${auth.binding.issuer}`);
    }
    items.push(
      row("URL", code(summary.url)),
      row("Origin", code(summary.origin)),
      row("Headers", pairs(summary.headers, (v) => [": ", code(v)])),
      row("Secret headers", pairs(summary.secret_headers, secretState)),
      row("Authorization", ...authValue),
    );
  }
  const tools = summary.tools || { disabled: [], policies: {} };
  items.push(
    row(
      "Disabled tools",
      tools.disabled.length ? tools.disabled.map((t) => [code(t), " "]) : h("span", { class: "muted" }, "none"),
    ),
  );
  if (Object.keys(tools.policies).length) items.push(row("Tool policies", pairs(tools.policies, (v) => [": ", v])));
  return h("dl", { class: "summary" }, items);
}

/**
 * The confirm → test → enable steps for `view`. `reload()` re-reads the server and redraws;
 * `notice` (optional) explains why a confirmation is needed now (a high-risk change).
 */
export function setupSteps(view, { reload, notice, said: saidText }) {
  const alert = h("p", { class: "alert alert-error", role: "alert", hidden: true });
  const fail = (err) => {
    alert.hidden = false;
    alert.textContent = `${err.code}: ${err.message}`;
  };
  const busy = (button, fn) => async () => {
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    alert.hidden = true;
    try {
      await fn();
    } catch (err) {
      fail(err);
      button.disabled = false;
      button.removeAttribute("aria-busy");
    }
  };

  // 1. confirm
  const confirmButton = h("button", { type: "button", class: "primary" }, "Confirm this summary");
  confirmButton.addEventListener(
    "click",
    busy(confirmButton, async () => {
      try {
        await servers.trust(view.id, view.digest);
      } catch (err) {
        if (err.code === "MCP_TRUST_DIGEST_MISMATCH") {
          await reload({ notice: "The configuration changed after the summary was shown: review this one." });
          return;
        }
        throw err;
      }
      await reload({ focus: "test", said: "Summary confirmed. Next: test." });
    }),
  );
  const summaryBlock = h(
    "div",
    { class: "summary-block" },
    warningsBox(view),
    summaryList(view.summary, view.sandbox_host),
    h("p", { class: "digest" }, "Digest ", h("code", { "data-testid": "digest" }, view.digest)),
  );
  const confirmStep = h(
    "li",
    { class: `step ${view.trusted ? "done" : "todo"}`, id: "step-confirm" },
    h("h3", {}, "1. Confirm the connection summary"),
    view.trusted
      ? [
          h("p", { class: "ok" }, "Confirmed. Changing any of these fields will ask again."),
          h("details", {}, h("summary", {}, "Show the confirmed summary"), summaryBlock),
        ]
      : [
          notice ? h("p", { class: "alert alert-warn", role: "status" }, notice) : null,
          h(
            "p",
            {},
            "Review what mcp-center will run or contact. Nothing runs before you confirm; secrets show only whether they are set.",
          ),
          summaryBlock,
          confirmButton,
        ],
  );

  // 2. test
  const testButton = h("button", { type: "button", id: "run-test", disabled: !view.trusted }, "Run test");
  const testResult = h(
    "p",
    { class: view.last_test && !view.last_test.ok ? "bad" : "", "data-testid": "last-test" },
    lastTestText(view.last_test),
  );
  testButton.addEventListener(
    "click",
    busy(testButton, async () => {
      testResult.textContent = "Testing: initialize, tools/list, close…";
      const result = await servers.test(view.id);
      await reload({ focus: result.ok ? "enable" : "test", said: result.ok ? `Test passed: ${counted(result.tool_count, "tool")}.` : `Test failed: ${errorText(result.error)}` });
    }),
  );
  const tail = view.last_test && view.last_test.error && view.last_test.error.details.stderr_tail;
  const testStep = h(
    "li",
    { class: `step ${view.tested ? "done" : "todo"}`, id: "step-test" },
    h("h3", {}, "2. Test"),
    h("p", { class: "hint" }, "A temporary connection runs initialize and tools/list, then closes."),
    testResult,
    Array.isArray(tail) && tail.length
      ? h("details", {}, h("summary", {}, "Server stderr (last lines)"), h("pre", {}, tail.join("\n")))
      : null,
    view.trusted ? null : h("p", { class: "hint" }, "Confirm the summary first."),
    testButton,
  );

  // 3. enable: the card follows the server's state as the live feed reports it (`update`), so
  // after Enable it says "Enabled" with the live badge (connecting → ready) at once, not when the
  // first connection attempt is over.
  const ready = view.trusted && view.tested;
  let shown = view;
  let pending = null; // "enable" | "disable" while the request runs
  const enableText = h("p", { "data-testid": "enable-state" });
  const enableButton = h("button", { type: "button", id: "enable-server" });
  const enableStep = h("li", { class: "step", id: "step-enable" }, h("h3", {}, "3. Enable"), enableText, enableButton);
  function drawEnable() {
    const enabled = pending === "enable" || (pending !== "disable" && shown.enabled);
    enableStep.className = `step ${enabled ? "done" : "todo"}`;
    enableButton.textContent = enabled ? "Disable" : "Enable";
    enableButton.className = enabled ? "" : "primary";
    const state = (shown.status && shown.status.state) || "disconnected";
    if (pending === "enable" && !shown.enabled) {
      replace(enableText, "Enabling: starting its long-lived session… ", stateBadge({ status: { state: "connecting" } }));
    } else if (pending === "disable") {
      replace(enableText, "Disabling: closing its session…");
    } else if (enabled) {
      const words = state === "ready" ? "Enabled: a long-lived session serves its tools. " : state === "connecting" ? "Enabled: connecting… " : "Enabled. ";
      replace(enableText, words, stateBadge(shown));
    } else {
      enableText.className = "hint";
      replace(enableText, ready ? "Ready to enable." : `Needs ${needsText(view.needs.filter((n) => n !== "enable"))} first.`);
      enableButton.disabled = !ready || pending !== null;
      return;
    }
    enableText.className = "";
    // While an Enable runs the user may already Disable (a slow start); not while a Disable runs.
    enableButton.disabled = pending === "disable";
  }
  enableButton.addEventListener("click", async () => {
    const enabling = !(pending === "enable" || shown.enabled);
    pending = enabling ? "enable" : "disable";
    alert.hidden = true;
    enableButton.setAttribute("aria-busy", "true");
    drawEnable();
    try {
      const after = enabling ? await servers.enable(view.id) : await servers.disable(view.id);
      pending = null;
      shown = after;
      await reload({ focus: "enable", said: after.enabled ? `${after.name} enabled.` : `${after.name} disabled.` });
    } catch (err) {
      pending = null;
      enableButton.removeAttribute("aria-busy");
      drawEnable();
      fail(err);
    }
  });
  drawEnable();

  const sandbox = view.needs.includes("sandbox")
    ? h(
        "p",
        { class: "alert alert-warn" },
        "The production profile does not start local stdio servers without a sandbox runner (MCP_SANDBOX_REQUIRED).",
      )
    : null;
  const list = h("ol", { class: "steps" }, confirmStep, testStep, enableStep);
  const said = h("p", { class: "step-said", role: "status", "data-testid": "step-said" }, saidText || "");
  return {
    element: h("section", { class: "setup", "aria-labelledby": "setup-title" }, h("h2", { id: "setup-title" }, "Confirm, test, enable"), sandbox, alert, said, list),
    focus(which) {
      const target = { test: testButton, enable: enableButton, confirm: confirmButton }[which];
      if (target && !target.disabled) target.focus();
    },
    /** A fresh view from the live feed: the enable step follows its state at once. */
    update(fresh) {
      if (fresh.id !== view.id) return;
      shown = fresh;
      drawEnable();
    },
  };
}
