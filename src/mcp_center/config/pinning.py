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

_NODE_RUNNERS = frozenset({"npx", "bunx"})
_NODE_VALUE_OPTIONS = frozenset({"-p", "--package", "--registry", "--cache", "--userconfig", "-w", "--workspace"})
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
_MOVING_TAGS = frozenset({"latest", "next", "canary", "beta", "alpha", "dev", "nightly"})
_NOT_A_REGISTRY_NAME = re.compile(r"^(\.|/|~|[a-z][a-z0-9+.-]*:)", re.IGNORECASE)
"""A path, a URL, `git+https:`, `github:`, `file:`: not a name in a registry (pinned by what it names)."""


@dataclass(frozen=True, slots=True)
class UnpinnedPackage:
    """The package argument of a package runner that names no version.

    Attributes:
        field: Where it is: `args.<i>` (0-based).
        package: The argument, e.g. `some-pkg` or `@scope/pkg@latest`.
        runner: `npx`, `bunx` or `uvx`.
    """

    field: str
    package: str
    runner: str

    @property
    def message(self) -> str:
        """The warning's text: what is wrong and a pinned form (`some-pkg@1.2.3`, `tool==1.2.3`)."""
        name = self._name()
        pinned = f"'{name}==1.2.3' (or '{name}@1.2.3')" if self.runner == "uvx" else f"'{name}@1.2.3'"
        return (
            f"'{self.package}' names no fixed version: {self.runner} runs whatever release is newest at each start, "
            f"not the code you trusted; pin one, e.g. {pinned}"
        )

    def _name(self) -> str:
        if self.runner == "uvx":
            return re.split(r"[@=<>~!\[]", self.package, maxsplit=1)[0]
        at = self.package.find("@", 1)
        return self.package if at < 0 else self.package[:at]


def _runner(command: str) -> str | None:
    name = command.replace("\\", "/").rsplit("/", 1)[-1].lower()
    for suffix in (".cmd", ".exe"):
        name = name.removesuffix(suffix)
    return name if name in _NODE_RUNNERS or name == "uvx" else None


def _node_pinned(spec: str) -> bool:
    at = spec.find("@", 1)  # `@scope/pkg`: the scope's `@` is not a version
    return at > 0 and spec[at + 1 :].lower() not in _MOVING_TAGS and spec[at + 1 :] != ""


def _uv_pinned(spec: str) -> bool:
    if "@" in spec:
        version = spec.split("@", 1)[1]
        return version.lower() not in _MOVING_TAGS and version != ""
    return bool(re.search(r"==|===", spec))


def unpinned_package(command: str, args: Sequence[str]) -> UnpinnedPackage | None:
    """The package `command args` runs without a version, when `command` is `npx`, `bunx` or `uvx`.

    Args:
        command: The server's command (a path is fine: `/usr/bin/npx`, `npx.cmd`).
        args: Its arguments. Options are skipped (with their value where they take one); for `npx
            --package X` and `uvx --from X` the package is X, otherwise the first other argument.
    Returns:
        None when the command is no package runner, the package is pinned (`pkg@1.2.3`,
        `@scope/pkg@^1`, `tool==1.2.3`, `tool@1.2.3`), or is a path or URL; `npx -c` is not read.
    """
    runner = _runner(command)
    if runner is None:
        return None
    node = runner in _NODE_RUNNERS
    value_options = _NODE_VALUE_OPTIONS if node else _UV_VALUE_OPTIONS
    named = {"-p", "--package"} if node else {"--from"}
    chosen: list[tuple[int, str]] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            break
        if node and arg in {"-c", "--call"}:
            return None
        option, eq, value = arg.partition("=")
        if arg.startswith("-") and option in named and eq:
            chosen.append((i, value))
        elif arg.startswith("-") and arg in value_options:
            if arg in named and i + 1 < len(args):
                chosen.append((i + 1, args[i + 1]))
            i += 2
            continue
        elif not arg.startswith("-"):
            if not chosen:
                chosen.append((i, arg))
            break
        i += 1
    pinned = _node_pinned if node else _uv_pinned
    for index, spec in chosen:
        if spec and not _NOT_A_REGISTRY_NAME.match(spec) and not pinned(spec):
            return UnpinnedPackage(f"args.{index}", spec, runner)
    return None
