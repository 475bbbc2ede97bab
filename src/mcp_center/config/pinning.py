"""A package runner's package without a version: `npx -y some-pkg` (issue 16, R-2.1).

`npx`, `bunx` and `uvx` fetch the newest release of an unpinned package at each start, so the
code a user trusted is not the code that runs next week. Adding or importing such a server is
not refused (many READMEs say it so); it gets a PACKAGE_NOT_PINNED warning naming the argument
and a pinned form to use instead. Pure: looks at the command and its arguments only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["UnpinnedPackage", "unpinned_package"]

_NODE_RUNNERS = frozenset({"npx", "bunx", "pnpx"})
_UV_RUNNERS = frozenset({"uvx", "uv tool run"})
_SUBCOMMANDS = {"pnpm": ("dlx",), "npm": ("exec",), "uv": ("tool", "run")}
"""Package managers that run a package through a subcommand: `pnpm dlx`, `npm exec`, `uv tool run`."""
_NODE_VALUE_OPTIONS = frozenset({"-p", "--package", "--registry", "--cache", "--userconfig", "-w", "--workspace"})
_NODE_FLAGS = frozenset(
    {"-y", "--yes", "--no", "-q", "--quiet", "-s", "--silent", "--no-install", "--ignore-existing", "--bun"}
    | {"--prefer-offline", "--prefer-online", "--offline", "--ws", "--workspaces", "--include-workspace-root"}
)
_UV_VALUE_OPTIONS = frozenset(
    {
        "--from",
        "--with",
        "--with-editable",
        "--with-requirements",
        "-p",
        "--python",
        "--index",
        "--index-url",
        "--extra-index-url",
        "--default-index",
        "--directory",
        "--project",
        "--env-file",
        "-c",
        "--constraints",
        "--overrides",
        "--build-constraints",
        "--cache-dir",
        "--config-file",
    }
)
_UV_FLAGS = frozenset(
    {"-q", "--quiet", "-v", "--verbose", "-n", "--no-cache", "--isolated", "--offline", "--refresh", "-U"}
    | {"--upgrade", "--no-config", "--native-tls", "--no-progress", "--no-python-downloads", "--reinstall"}
)
_MOVING_TAGS = frozenset({"latest", "next", "canary", "beta", "alpha", "dev", "nightly"})
_NOT_A_REGISTRY_NAME = re.compile(r"^(\.|/|~|[a-z][a-z0-9+.-]*:)", re.IGNORECASE)
"""A path, a URL, `git+https:`, `github:`, `file:`: not a name in a registry (pinned by what it names)."""
_GITHUB_SHORTHAND = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+(#.*)?$")
"""`npx user/repo`: npm reads it as `github:user/repo` (pinned by what it names, like that)."""
_NODE_NAME = re.compile(r"^(@[a-z0-9~-][a-z0-9._~-]*/)?[a-z0-9~-][a-z0-9._~-]*$")
"""An npm package name (lowercase); anything else (`sk-live-X`, `@`, `@scope`) is not read as one."""
_PYPI_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._,-]*\])?$")
_EXACT_NODE_VERSION = re.compile(r"^[v=]?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
"""`1.2.3`, `1.2.3-rc.1`: one release. A range (`^1`, `~1.2`, `>=1`, `1`, `1.x`, `*`) or a tag is not."""
_EXACT_PEP440 = re.compile(r"^={2,3}\s*[0-9A-Za-z][0-9A-Za-z.+!_-]*$")
"""`==1.2.3`, `===x`: one release; `==1.*`, `>=1`, `~=1.2` or a second specifier is not."""
_CREDENTIAL_SHAPE = re.compile(r"^(sk|pk|rk)-|^gh[pousr]_|^github_pat_|^xox[a-z]-|^(AKIA|ASIA)[0-9A-Z]{12}")
"""A value that looks like a token is never echoed as a package name (CREDENTIAL_IN_ARGS speaks of it)."""


@dataclass(frozen=True, slots=True)
class UnpinnedPackage:
    """The package argument of a package runner that names no version.

    Attributes:
        field: Where it is: `args.<i>` (0-based).
        package: The argument, e.g. `some-pkg` or `@scope/pkg@latest`.
        runner: `npx`, `bunx`, `pnpx`, `pnpm dlx`, `npm exec`, `uvx` or `uv tool run`.
    """

    field: str
    package: str
    runner: str

    @property
    def message(self) -> str:
        """The warning's text: what is wrong and a pinned form (`some-pkg@1.2.3`, `tool==1.2.3`)."""
        name = self._name()
        pinned = f"'{name}==1.2.3' (or '{name}@1.2.3')" if self.runner in _UV_RUNNERS else f"'{name}@1.2.3'"
        return (
            f"'{self.package}' names no fixed version: {self.runner} runs whatever release is newest at each start, "
            f"not the code you trusted; pin one, e.g. {pinned}"
        )

    def _name(self) -> str:
        if self.runner in _UV_RUNNERS:
            return re.split(r"[@=<>~!\[]", self.package, maxsplit=1)[0]
        at = self.package.find("@", 1)
        return self.package if at < 0 else self.package[:at]


def _runner(command: str, args: Sequence[str]) -> tuple[str, int] | None:
    """The runner `command args` is (`npx`, `pnpm dlx`, `uv tool run`, ...) and where its own
    arguments start, or None for another command."""
    name = command.replace("\\", "/").rsplit("/", 1)[-1].lower()
    for suffix in (".cmd", ".exe"):
        name = name.removesuffix(suffix)
    if name in _NODE_RUNNERS or name == "uvx":
        return name, 0
    sub = _SUBCOMMANDS.get(name)
    if sub is not None and tuple(args[: len(sub)]) == sub:
        return " ".join((name, *sub)), len(sub)
    if name == "npm" and args[:1] == ["x"]:
        return "npm exec", 1
    return None


def _node_pinned(spec: str) -> bool:
    at = spec.find("@", 1)  # `@scope/pkg`: the scope's `@` is not a version
    return at > 0 and bool(_EXACT_NODE_VERSION.match(spec[at + 1 :]))


def _uv_pinned(spec: str) -> bool:
    if "@" in spec:
        return bool(_EXACT_NODE_VERSION.match(spec.split("@", 1)[1]))
    name = re.split(r"[=<>~!]", spec, maxsplit=1)[0]
    return bool(_EXACT_PEP440.match(spec[len(name) :].strip()))


def _package_name(spec: str, node: bool) -> bool:
    """Whether `spec` (a version cut off) can name a registry package, and is not token-shaped."""
    if node:
        at = spec.find("@", 1)
        name = spec if at < 0 else spec[:at]
        return bool(_NODE_NAME.match(name)) and not _CREDENTIAL_SHAPE.match(name)
    name = re.split(r"[@=<>~!]", spec, maxsplit=1)[0]
    return bool(_PYPI_NAME.match(name)) and not _CREDENTIAL_SHAPE.match(name)


def _chosen(args: Sequence[str], start: int, node: bool) -> list[tuple[int, str]]:
    """The package arguments (index, spec): the `--package`/`--from` values, else the first
    argument that is no option nor an option's value (after `--` the next one)."""
    value_options = _NODE_VALUE_OPTIONS if node else _UV_VALUE_OPTIONS
    flags = _NODE_FLAGS if node else _UV_FLAGS
    named = {"-p", "--package"} if node else {"--from"}
    chosen: list[tuple[int, str]] = []
    i = start
    while i < len(args):
        arg = args[i]
        if arg == "--":
            if not chosen and i + 1 < len(args):
                chosen.append((i + 1, args[i + 1]))
            break
        option, eq, value = arg.partition("=")
        if arg.startswith("-") and option in named and eq:
            chosen.append((i, value))
        elif arg in value_options:
            if arg in named and i + 1 < len(args):
                chosen.append((i + 1, args[i + 1]))
            i += 2
            continue
        elif arg.startswith("--") and not eq and arg not in flags and i + 2 < len(args):
            # An option we do not know, followed by two more arguments: the first is its value
            # (`npx -y --api-key X pkg`: X is no package). Last but one, it is read as a flag.
            if not args[i + 1].startswith("-"):
                i += 2
                continue
        elif not arg.startswith("-"):
            if not chosen:
                chosen.append((i, arg))
            break
        i += 1
    return chosen


def unpinned_package(command: str, args: Sequence[str]) -> UnpinnedPackage | None:
    """The package `command args` runs without a fixed version, when `command` is a package runner:
    `npx`, `bunx`, `pnpx`, `pnpm dlx`, `npm exec` (`npm x`), `uvx` or `uv tool run` (R-2.1).

    Pinned means one release: an exact `x.y.z` (`pkg@1.2.3`, `pkg@1.2.3-rc.1`, `tool==1.2.3`,
    `tool@1.2.3`), or what a path, URL, `git+https:`, `github:` or GitHub shorthand (`user/repo`)
    names. A range or tag is not (`@^1`, `@~1.2`, `@>=1`, `@1`, `@*`, `@x`, `@latest`, `==1.*`).

    Args:
        command: The server's command (a path is fine: `/usr/bin/npx`, `npx.cmd`).
        args: Its arguments. Options are skipped (with their value where they take one, and an
            unknown `--option` with the next argument when more follow); for `npx --package X`
            and `uvx --from X` the package is X, after `--` the next argument, otherwise the first
            other argument.
    Returns:
        None when the command is no package runner, the package is pinned, a path or URL, or is no
        package name (a token-shaped value is never echoed); `npx -c` is not read.
    """
    found = _runner(command, args)
    if found is None:
        return None
    runner, start = found
    node = runner not in _UV_RUNNERS
    for arg in args[start:] if node else ():
        if arg in {"-c", "--call"}:
            return None
        if not arg.startswith("-"):
            break
    pinned = _node_pinned if node else _uv_pinned
    for index, spec in _chosen(args, start, node):
        if not spec or _NOT_A_REGISTRY_NAME.match(spec) or (node and _GITHUB_SHORTHAND.match(spec)):
            continue
        if _package_name(spec, node) and not pinned(spec):
            return UnpinnedPackage(f"args.{index}", spec, runner)
    return None
