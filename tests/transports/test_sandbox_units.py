"""Pure parts of the sandbox (R-11.1): the host probe's verdicts, the bubblewrap command line, the
environment, the warm-up command line and the violation classifier. No sandbox runs here except
the probe's own trial (`test_sandbox.py` runs real ones)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_center.config import SandboxPath, SandboxPolicy
from mcp_center.errors import SandboxUnavailable
from mcp_center.transports.sandbox import (
    OFFLINE_ENV,
    SANDBOX_HOME,
    SANDBOX_TMP,
    SANDBOX_UID_BASE,
    SandboxSpec,
    SandboxSupport,
    build_sandbox_argv,
    probe_sandbox,
    sandbox_environment,
    sandbox_uid,
    userns_disabled,
)
from mcp_center.transports.violations import classify_violation
from mcp_center.transports.warmup import warm_up_argv

SETUID = SandboxSupport("setuid", "/usr/bin/bwrap", "/usr/bin/prlimit", "/usr/bin/setpriv")
USERNS = SandboxSupport("userns", "/usr/bin/bwrap", "/usr/bin/prlimit", None)


def argv_for(policy: SandboxPolicy, support: SandboxSupport, *, hidden: tuple[str, ...] = ()) -> list[str]:
    spec = SandboxSpec("srv", policy, Path("/data/sandbox/srv"), hidden=hidden)
    return build_sandbox_argv(spec, ["/usr/bin/node", "server.js"], cwd=None, support=support, passwd_fd=7, group_fd=8)


def pairs(argv: list[str], flag: str) -> list[str]:
    """The values following each occurrence of `flag`."""
    return [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == flag]


def test_a_host_without_bubblewrap_is_told_what_to_install() -> None:
    support = probe_sandbox(bwrap_candidates=("/nonexistent/bwrap",), search_path=False)
    assert not support.available and support.missing == "bubblewrap"
    with pytest.raises(SandboxUnavailable) as caught:
        support.require()
    assert caught.value.code == "MCP_SANDBOX_UNAVAILABLE"
    assert caught.value.details == {"reason": "sandbox_unavailable", "missing": "bubblewrap"}
    assert "apt-get install bubblewrap" in caught.value.message


def test_disabled_user_namespaces_are_named_from_the_sysctls(tmp_path: Path) -> None:
    (tmp_path / "user").mkdir()
    (tmp_path / "kernel").mkdir()
    (tmp_path / "user" / "max_user_namespaces").write_text("15000\n")
    assert userns_disabled(tmp_path) is None, "absent sysctls do not count as disabled"
    (tmp_path / "kernel" / "unprivileged_userns_clone").write_text("0\n")
    assert "kernel.unprivileged_userns_clone is 0" in (userns_disabled(tmp_path) or "")
    (tmp_path / "user" / "max_user_namespaces").write_text("0\n")
    assert "user.max_user_namespaces is 0" in (userns_disabled(tmp_path) or "")


def test_each_server_on_a_root_host_gets_a_stable_uid_of_its_own_range() -> None:
    uids = {sandbox_uid(f"server-{n}") for n in range(200)}
    assert all(SANDBOX_UID_BASE <= uid < SANDBOX_UID_BASE + 65536 for uid in uids)
    assert len(uids) >= 195, "ids spread over the range"
    assert sandbox_uid("server-1") == sandbox_uid("server-1")


def test_the_uid_follows_the_creation_stamp_too() -> None:
    """R-11.1 (inst36): one id, two creation stamps (deleted and added again): two uids, each stable,
    in the range; "" is the uid of the id alone (the one before the stamp counted)."""
    stamps = [f"20261206T0{n:05d}000000Z" for n in range(200)]
    uids = {sandbox_uid("srv", stamp) for stamp in stamps}
    assert all(SANDBOX_UID_BASE <= uid < SANDBOX_UID_BASE + 65536 for uid in uids)
    assert len(uids) >= 195
    assert sandbox_uid("srv", stamps[0]) == sandbox_uid("srv", stamps[0]) != sandbox_uid("srv", stamps[1])
    assert sandbox_uid("srv", stamps[0]) != sandbox_uid("srv", "")
    spec = SandboxSpec("srv", SandboxPolicy(), Path("/data/sandbox/srv"), stamp=stamps[0])
    argv = build_sandbox_argv(spec, ["/usr/bin/node", "server.js"], cwd=None, support=SETUID, passwd_fd=5, group_fd=6)
    assert f"--reuid={sandbox_uid('srv', stamps[0])}" in argv


def test_root_hosts_drop_to_the_servers_uid_with_four_capabilities_at_most_until_then() -> None:
    argv = argv_for(SandboxPolicy(), SETUID)
    assert argv[0] == "/usr/bin/bwrap"
    assert "--unshare-user" not in argv, "a user namespace would map the server to root"
    assert pairs(argv, "--cap-drop") == ["ALL"]
    assert sorted(pairs(argv, "--cap-add")) == ["CAP_DAC_READ_SEARCH", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID"]
    setpriv = argv.index("/usr/bin/setpriv")
    uid = sandbox_uid("srv")
    assert argv[setpriv + 1 : setpriv + 8] == [
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]
    assert argv.index("/usr/bin/prlimit") > setpriv
    assert argv[-2:] == ["/usr/bin/node", "server.js"]


def test_other_hosts_use_a_user_namespace_that_cannot_nest_another() -> None:
    argv = argv_for(SandboxPolicy(), USERNS)
    assert "--unshare-user" in argv and "--disable-userns" in argv
    assert "--cap-add" not in argv and "/usr/bin/setpriv" not in argv


def test_limits_namespaces_and_mounts_follow_the_policy() -> None:
    policy = SandboxPolicy(
        network="none",
        memory_mb=512,
        max_processes=40,
        max_open_files=100,
        paths=[SandboxPath(path="/srv/data/in"), SandboxPath(path="/srv/out", writable=True)],
    )
    argv = argv_for(policy, USERNS)
    prlimit = argv.index("/usr/bin/prlimit")
    limits = argv[prlimit + 1 : argv.index("--", prlimit)]
    assert "--nproc=40" in limits and "--nofile=100" in limits and "--core=0" in limits
    assert f"--data={512 * 1024 * 1024}" in limits
    for flag in ("--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"):
        assert flag in argv
    assert pairs(argv, "--ro-bind")[:2] == ["/usr", "/etc"], "system directories first, read-only"
    assert "/srv/data/in" in pairs(argv, "--ro-bind") and "/srv/out" in pairs(argv, "--bind")
    assert pairs(argv, "--dir")[:1] == ["/home"] and "/srv" in pairs(argv, "--dir")
    assert pairs(argv, "--chdir") == [SANDBOX_HOME]
    egress = argv_for(SandboxPolicy(network="egress", memory_mb=None), USERNS)
    assert "--unshare-net" not in egress
    assert not any(arg.startswith("--data=") for arg in egress)


def test_the_data_directory_is_covered_when_a_bind_would_show_it() -> None:
    hidden = ("/srv/mcp-data",)
    assert pairs(argv_for(SandboxPolicy(), USERNS, hidden=hidden), "--tmpfs") == []
    shown = argv_for(SandboxPolicy(paths=[SandboxPath(path="/srv")]), USERNS, hidden=hidden)
    assert pairs(shown, "--tmpfs") == ["/srv/mcp-data"]
    assert shown.index("--tmpfs") > shown.index("/srv"), "the tmpfs goes on top of the bind"
    in_etc = argv_for(SandboxPolicy(), USERNS, hidden=("/etc/mcp-center",))
    assert pairs(in_etc, "--tmpfs") == ["/etc/mcp-center"]


def test_the_environment_is_the_allowlist_the_sandbox_values_and_the_configured_env() -> None:
    base = {"PATH": "/usr/bin", "HOME": "/root", "USER": "root", "TMPDIR": "/srv/tmp", "LANG": "C.UTF-8"}
    env = sandbox_environment(base, {"API_URL": "http://x", "UV_OFFLINE": "0"}, SandboxPolicy(network="none"))
    assert (env["HOME"], env["USER"], env["TMPDIR"]) == (SANDBOX_HOME, "mcp", SANDBOX_TMP)
    assert env["PATH"] == "/usr/bin" and env["LANG"] == "C.UTF-8" and env["API_URL"] == "http://x"
    assert env["npm_config_offline"] == "true" and env["UV_OFFLINE"] == "0", "the configured env wins"
    online = sandbox_environment(base, {}, SandboxPolicy(network="egress"))
    assert not set(OFFLINE_ENV) & set(online)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["/usr/bin/npx", "-y", "@modelcontextprotocol/server-memory@1.0.0"],
            ["/usr/bin/npx", "--yes", "--package=@modelcontextprotocol/server-memory@1.0.0", "--", "true"],
        ),
        (
            ["/usr/bin/npx", "--registry=https://r.example", "-p", "a@1", "--package", "b@2", "bin-of-a", "x"],
            ["/usr/bin/npx", "--yes", "--registry=https://r.example", "--package=a@1", "--package=b@2", "--", "true"],
        ),
        (
            ["/v/bin/uvx", "--isolated", "--from", "mcp-server-time==1.0", "mcp-server-time", "--tz", "UTC"],
            ["/v/bin/uvx", "--isolated", "--from", "mcp-server-time==1.0", "python", "-c", "pass"],
        ),
        (
            ["/v/bin/uvx", "--offline", "--python=3.12", "markitdown-mcp@0.0.1a4"],
            ["/v/bin/uvx", "--python=3.12", "--from", "markitdown-mcp@0.0.1a4", "python", "-c", "pass"],
        ),
        (["/usr/bin/python3", "server.py"], None),
        (["/usr/bin/npx", "-y"], None),
    ],
)
def test_warm_up_installs_the_same_packages_without_starting_the_server(
    argv: list[str], expected: list[str] | None
) -> None:
    assert warm_up_argv(argv) == expected


@pytest.mark.parametrize(
    ("text", "kind", "errno"),
    [
        ("EACCES: Permission denied: /root/.ssh/id_rsa", "filesystem", "EACCES"),
        ("OSError: [Errno 30] Read-only file system: '/usr/x'", "filesystem", "EROFS"),
        ("Error: connect ENETUNREACH 192.0.2.1:443", "network", "ENETUNREACH"),
        ("getaddrinfo EAI_AGAIN registry.npmjs.org", "network", "EAI_AGAIN"),
        ("socket.gaierror: [Errno -3] Temporary failure in name resolution", "network", "EAI_AGAIN"),
        ("BlockingIOError: [Errno 11] Resource temporarily unavailable (fork)", "processes", "EAGAIN"),
        ("sh: 0: Cannot fork", "processes", "EAGAIN"),
        ("EAGAIN: Resource temporarily unavailable (after 60 forks)", "processes", "EAGAIN"),
        ("Error: spawn EAGAIN", "processes", "EAGAIN"),
        ("MemoryError", "memory", "ENOMEM"),
        ("Error: EMFILE: too many open files, open '/x'", "open_files", "EMFILE"),
        ("npm error code ENOTCACHED", "network", "OFFLINE"),
        ("hint: Packages were unavailable because the network was disabled.", "network", "OFFLINE"),
    ],
)
def test_sandbox_refusals_are_recognised_by_their_errno(text: str, kind: str, errno: str) -> None:
    found = classify_violation(text)
    assert found is not None and (found.kind, found.errno) == (kind, errno)


def test_ordinary_errors_are_not_violations() -> None:
    assert classify_violation("TypeError: cannot read property 'x' of undefined") is None
    assert classify_violation("connection refused by upstream API") is None


def test_without_network_a_refused_connection_is_the_sandboxs_doing() -> None:
    refused = classify_violation("ECONNREFUSED: Connection refused", network="none")
    assert refused is not None and (refused.kind, refused.errno) == ("network", "ECONNREFUSED")
    assert classify_violation("ECONNREFUSED: Connection refused", network="egress") is None
