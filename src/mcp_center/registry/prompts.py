"""Prompts as slash commands: `/server:prompt` with their argument definitions (R-5.4).

Pure. A prompt's command name is `{serverId}:{prompt name}`; server ids never contain `:`, so the
first `:` separates the two and prompt names are kept exactly as the server spells them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types

__all__ = ["PromptEntry", "build_prompts", "split_prompt_name"]


@dataclass(frozen=True)
class PromptEntry:
    """One prompt of one ready server."""

    server_id: str
    server_name: str
    prompt: types.Prompt

    @property
    def name(self) -> str:
        """`{serverId}:{prompt}`: the name `POST /api/prompts/{name}/get` takes."""
        return f"{self.server_id}:{self.prompt.name}"

    @property
    def command(self) -> str:
        """`/{serverId}:{prompt}`: how a chat UI offers it."""
        return "/" + self.name

    @property
    def arguments(self) -> list[types.PromptArgument]:
        """The argument definitions (possibly empty)."""
        return list(self.prompt.arguments or [])

    def to_dict(self) -> dict[str, Any]:
        """`{"name", "command", "server_id", "server_name", "prompt", "title", "description",
        "arguments": [{"name", "title", "description", "required"}]}`: the REST API's JSON."""
        return {
            "name": self.name,
            "command": self.command,
            "server_id": self.server_id,
            "server_name": self.server_name,
            "prompt": self.prompt.name,
            "title": self.prompt.title,
            "description": self.prompt.description,
            "arguments": [
                {
                    "name": arg.name,
                    "title": arg.title,
                    "description": arg.description,
                    "required": bool(arg.required),
                }
                for arg in self.arguments
            ],
        }


def build_prompts(servers: Iterable[tuple[str, str, Sequence[types.Prompt]]]) -> list[PromptEntry]:
    """Entries for `(server id, server name, prompts)` triples, sorted by command name."""
    entries = [PromptEntry(sid, name, prompt) for sid, name, prompts in servers for prompt in prompts]
    return sorted(entries, key=lambda e: (e.server_id, e.prompt.name))


def split_prompt_name(name: str) -> tuple[str, str] | None:
    """`"srv:prompt"` (or `"/srv:prompt"`) → `("srv", "prompt")`; None when there is no `:`."""
    bare = name.removeprefix("/")
    server_id, sep, prompt = bare.partition(":")
    if not sep or not server_id or not prompt:
        return None
    return server_id, prompt
