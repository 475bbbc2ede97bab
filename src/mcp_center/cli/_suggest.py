"""Commands the CLI suggests, with the options that chose the host (issue 16, R-9.2).

A newcomer copies "next: mcp-center trust time" literally; without the `--data-dir` they gave,
that acts on the default data directory, where the server does not exist. Every hint, notice and
error detail that names a `mcp-center ...` command renders it with `suggested`, which appends the
options of the running command that chose the host: `--data-dir` when it is not the directory a
command without it would use, `--url` when it is not `$MCP_CENTER_URL` and the suggested verb
takes it (`URL_VERBS`). The state is per command
(`remember`, called by `settings_for` and `host_request`; `forget` at each start of the root group).

The program is `mcp-center` when that name on PATH is this program; otherwise (the README's set-up
leaves it in `.venv/bin`, not on PATH) the console script next to this Python (`program`), so a
suggestion runs as printed.

A database URL (`serve --database-url`) is never repeated: it holds a password (secrets never in
output), and the suggested verbs find the serve from the data directory's `serve.json`; nor is a
`--url`'s userinfo or credential query value (`display_url`, R-1.5).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from mcp_center.config import Settings
from mcp_center.interchange.display import display_url

__all__ = ["URL_VERBS", "forget", "program", "remember", "suggested"]

URL_VERBS = frozenset({"approvals", "auth", "list", "logs"})
"""The verbs whose `--url` names the running host: only these get the remembered `--url`."""


@dataclass(frozen=True, slots=True)
class _Chosen:
    data_dir: Path | None
    url: str | None


_NONE: Final = _Chosen(None, None)
_chosen: ContextVar[_Chosen] = ContextVar("mcp_center_cli_chosen", default=_NONE)


def _default_data_dir() -> Path:
    import platformdirs

    raw = os.environ.get("MCP_CENTER_DATA_DIR")
    path = Path(raw).expanduser() if raw else Path(platformdirs.user_data_dir("mcp-center"))
    return path.resolve()


def program() -> str:
    """How to run this program from a shell: `mcp-center` when the `mcp-center` on PATH
    (`shutil.which`) is the console script next to this Python (`sys.executable`) or none is found
    there either, else that script's path, shell-quoted (`.venv/bin/mcp-center` when `.venv/bin` is
    not on PATH, or when another mcp-center comes first)."""
    script = Path(sys.executable).parent / "mcp-center"
    if not script.is_file():
        return "mcp-center"  # not a console-script install (python -m, a test harness): the name it has
    found = shutil.which("mcp-center")
    if found is not None and Path(found).resolve() == script.resolve():
        return "mcp-center"
    return shlex.quote(str(script))


def _platform_default_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("mcp-center")).resolve()


def forget() -> None:
    """Start a command with no host options remembered (the in-process CLI runs several commands)."""
    _chosen.set(_NONE)


def remember(settings: Settings | None = None, url: str | None = None) -> None:
    """Remember what chose the host of this command: `settings.data_dir`, and the `--url` given.

    A data directory that a command without `--data-dir` would also use (the
    `$MCP_CENTER_DATA_DIR` or platform default) is not remembered; neither is a URL equal to
    `$MCP_CENTER_URL`. Either argument None keeps what was remembered before.
    """
    before = _chosen.get()
    data_dir = before.data_dir
    if settings is not None:
        data_dir = None if settings.data_dir == _default_data_dir() else settings.data_dir
    chosen_url = before.url
    if url is not None:
        chosen_url = None if url == os.environ.get("MCP_CENTER_URL") else url
    _chosen.set(_Chosen(data_dir, chosen_url))


def suggested(*words: str, settings: Settings | None = None) -> str:
    """`mcp-center WORDS... [--data-dir DIR] [--url URL]`, shell-quoted (`shlex.join`), ready to copy;
    `mcp-center` is `program()` (the path of this program's script when the name is not on PATH).

    Args:
        words: The verb and its arguments, e.g. `("trust", "time")`; a placeholder such as `NAME`
            is passed as it is.
        settings: The data directory to name even when this command's environment chose it
            (`MCP_CENTER_DATA_DIR`): for a message about that directory ("no serve runs on X; start
            one with ..."), whose command is often run in another shell, without this one's
            variable. The platform's default directory is left out when no variable is set (any
            shell uses it then), as the README says.
    Returns:
        One command line: the options come after the words (before a `--`, which ends them), so
        they reach the verb itself.
    """
    chosen = _chosen.get()
    data_dir = chosen.data_dir
    if settings is not None:
        unset = not os.environ.get("MCP_CENTER_DATA_DIR")
        data_dir = None if unset and settings.data_dir == _platform_default_data_dir() else settings.data_dir
    options: list[str] = []
    if data_dir is not None:
        options += ["--data-dir", str(data_dir)]
    if chosen.url is not None and words and words[0] in URL_VERBS:
        options += ["--url", display_url(chosen.url)]  # no password or token in output (break36)
    argv = list(words)
    end = argv.index("--") if "--" in argv else len(argv)
    rest = [*argv[:end], *options, *argv[end:]]
    return f"{program()} {shlex.join(rest)}" if rest else program()
