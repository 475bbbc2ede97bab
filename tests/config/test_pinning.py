"""A package runner's package without a version is found, with the argument and a pinned form (issue 16)."""

from __future__ import annotations

import pytest

from mcp_center.config.pinning import unpinned_package


@pytest.mark.parametrize(
    ("command", "args", "field", "package"),
    [
        ("npx", ["-y", "some-pkg"], "args.1", "some-pkg"),
        ("npx", ["-y", "@scope/pkg", "/srv/data"], "args.1", "@scope/pkg"),
        ("npx", ["@scope/pkg@latest"], "args.0", "@scope/pkg@latest"),
        ("/usr/local/bin/npx", ["--yes", "pkg"], "args.1", "pkg"),
        ("npx.cmd", ["-y", "pkg"], "args.1", "pkg"),
        ("npx", ["-p", "pkg", "pkg-bin", "--flag"], "args.1", "pkg"),
        ("npx", ["--package=pkg", "pkg-bin"], "args.0", "pkg"),
        ("npx", ["--registry", "https://r.example", "pkg"], "args.2", "pkg"),
        ("bunx", ["pkg"], "args.0", "pkg"),
        ("uvx", ["mcp-server-time"], "args.0", "mcp-server-time"),
        ("uvx", ["--python", "3.12", "mcp-server-time", "--local-timezone", "UTC"], "args.2", "mcp-server-time"),
        ("uvx", ["--from", "pkg", "tool"], "args.1", "pkg"),
        ("uvx", ["tool@latest"], "args.0", "tool@latest"),
        # Ranges and tags name no one release (breaker 31b, F5).
        ("npx", ["-y", "@scope/pkg@^1.4"], "args.1", "@scope/pkg@^1.4"),
        *(
            ("npx", ["-y", f"pkg@{r}"], "args.1", f"pkg@{r}")
            for r in ("*", "x", ">=1", "^1", "~1", "1", "1.x", "stable")
        ),
        ("uvx", ["tool==1.*"], "args.0", "tool==1.*"),
        ("uvx", ["tool>=1"], "args.0", "tool>=1"),
        ("uvx", ["tool~=1.2"], "args.0", "tool~=1.2"),
        # `--` ends the runner's options: the package is the next argument.
        ("npx", ["--", "pkg"], "args.1", "pkg"),
        ("npx", ["-y", "--", "pkg", "--flag"], "args.2", "pkg"),
        # An unknown option's value is not the package.
        ("npx", ["-y", "--api-key", "sk-live-X", "somepkg"], "args.3", "somepkg"),
        # Runners behind a package manager's subcommand.
        ("pnpm", ["dlx", "pkg"], "args.1", "pkg"),
        ("npm", ["exec", "--yes", "--", "pkg"], "args.3", "pkg"),
        ("npm", ["x", "pkg"], "args.1", "pkg"),
        ("uv", ["tool", "run", "mcp-server-time"], "args.2", "mcp-server-time"),
        ("uv", ["tool", "run", "--from", "pkg", "tool"], "args.3", "pkg"),
    ],
)
def test_an_unpinned_package_is_named(command: str, args: list[str], field: str, package: str) -> None:
    found = unpinned_package(command, args)
    assert found is not None
    assert (found.field, found.package) == (field, package)
    assert "names no fixed version" in found.message


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("npx", ["-y", "some-pkg@1.2.3"]),
        ("npx", ["-p", "pkg@2.0.0", "pkg-bin"]),
        ("npx", ["./local-package"]),
        ("npx", ["github:user/repo"]),
        ("npx", ["user/repo"]),
        ("npx", ["-y", "pkg@1.2.3-rc.1"]),
        ("npx", ["-y", "--api-key", "sk-live-X"]),  # no package named; the token is never echoed
        ("npx", ["-y", "sk-live-ABCDEF123456"]),
        ("npx", ["@"]),
        ("npx", ["@scope"]),
        ("pnpm", ["dlx", "pkg@1.2.3"]),
        ("pnpm", ["install"]),
        ("npm", ["exec", "--", "pkg@1.2.3"]),
        ("uv", ["tool", "run", "tool==1.2.3"]),
        ("uv", ["run", "server.py"]),
        ("uvx", ["tool[extra]==1"]),
        ("npx", ["-c", "pkg do-something"]),
        ("uvx", ["mcp-server-time==2025.1.0"]),
        ("uvx", ["mcp-server-time@2025.1.0"]),
        ("uvx", ["--from", "git+https://example.com/r.git", "tool"]),
        ("uvx", ["--from", "pkg==1.0", "tool"]),
        ("node", ["server.js"]),
        ("python", ["-m", "server"]),
        ("npx", []),
    ],
)
def test_a_pinned_package_a_path_or_another_command_is_not(command: str, args: list[str]) -> None:
    assert unpinned_package(command, args) is None


def test_the_message_suggests_the_pinned_form_of_each_runner() -> None:
    npx = unpinned_package("npx", ["-y", "@scope/pkg@latest"])
    uvx = unpinned_package("uvx", ["mcp-server-time"])
    assert npx is not None and "e.g. '@scope/pkg@1.2.3'" in npx.message
    assert uvx is not None and "e.g. 'mcp-server-time==1.2.3' (or 'mcp-server-time@1.2.3')" in uvx.message
