"""The two-step import over the store (R-1.8), export (R-1.9) and the round trip between them.

Apply re-checks the token, the input and the preview against the store inside one transaction;
every refusal leaves servers.json and secrets.json byte-for-byte as they were.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncGenerator, Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import anyio
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from mcp_center.config import Settings
from mcp_center.errors import (
    CenterError,
    ImportConflict,
    ImportInputChanged,
    ImportNothingToApply,
    ImportPreviewExpired,
    ImportPreviewStale,
    ImportPreviewUnknown,
    ImportValuesInvalid,
    StorageError,
)
from mcp_center.interchange import EXPORT_FORMATS
from mcp_center.secrets import SecretCipher, SecretKind, load_or_create_key, secret_id
from mcp_center.service import ApplyRequest, Importer, ImportPreview, ImportPreviews, McpCenter, ServerView
from mcp_center.service.servers import Servers
from mcp_center.store import JsonStore, StoreState

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parents[1] / "interchange" / "fixtures"
PROJECT = (FIXTURES / "claude_code_project.mcp.json").read_text(encoding="utf-8")
PROJECT_VALUES = {
    "GITHUB_PAT": "ghp_invented_0123456789",
    "ORBIT_API_KEY": "orbit-invented-abcdef",
    "WIKI_API_KEY": "wiki-invented-987654",
}
PROJECT_DEFAULTS = ("GITHUB_API_URL", "NOTES_ROOT")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def importer(center: McpCenter, clock: FakeClock) -> Importer:
    return Importer(center, ImportPreviews(clock=clock))


def files(settings: Settings) -> dict[str, bytes | None]:
    """The bytes of servers.json and secrets.json (None when absent)."""
    out: dict[str, bytes | None] = {}
    for name in ("servers.json", "secrets.json"):
        path = settings.mcp_dir / name
        out[name] = path.read_bytes() if path.exists() else None
    return out


def stored_secret(settings: Settings, kind: SecretKind, server_id: str, key: str) -> str | None:
    """Decrypt one stored secret with the host key (public APIs only)."""
    internal = secret_id(kind, server_id, key)
    token = JsonStore(settings.mcp_dir).read().secrets.get(internal)
    if token is None:
        return None
    cipher = SecretCipher(load_or_create_key(settings.data_dir, settings.secret_key))
    return cipher.open(token, associated_data=internal)


def request(preview: ImportPreview, content: str = PROJECT, **overrides: Any) -> ApplyRequest:
    fields: dict[str, Any] = {
        "token": preview.token,
        "digest": preview.digest,
        "content": content,
        "format": "auto",
        "values": PROJECT_VALUES,
        "use_defaults": PROJECT_DEFAULTS,
    }
    fields.update(overrides)
    return ApplyRequest(**fields)


async def test_apply_creates_every_server_untrusted_and_disabled_with_its_secrets(
    importer: Importer, center: McpCenter, settings: Settings
) -> None:
    preview = await importer.preview(PROJECT)
    assert preview.digest.startswith("sha256:") and preview.expires_at.tzinfo is not None
    assert [s.id for s in preview.plan.servers] == ["github", "orbit-tasks", "legacy-wiki", "local-notes"]
    assert [s["id"] for s in preview.to_dict()["servers"]] == [s.id for s in preview.plan.servers]
    views = await importer.apply(request(preview, PROJECT))
    assert all(isinstance(view, ServerView) for view in views)
    assert [v.id for v in views] == ["github", "orbit-tasks", "legacy-wiki", "local-notes"]
    for view in views:
        assert (view.enabled, view.trusted, view.tested) == (False, False, False)
        assert list(view.needs) == ["trust", "test", "enable"]
    github, orbit, wiki, notes = [view.to_dict() for view in views]
    assert github["env"] == {"GITHUB_API_URL": "https://api.github.com"}
    assert github["secret_env"] == {"GITHUB_PERSONAL_ACCESS_TOKEN": {"configured": True}}
    assert orbit["auth"] == {"kind": "bearer", "token": {"configured": True}}
    assert orbit["headers"] == {"X-Workspace": "acme-labs"}
    assert wiki["secret_headers"] == {"X-Api-Key": {"configured": True}}
    assert notes["args"][-1] == "/srv/notes"
    assert (
        stored_secret(settings, SecretKind.ENV, "github", "GITHUB_PERSONAL_ACCESS_TOKEN")
        == PROJECT_VALUES["GITHUB_PAT"]
    )
    assert stored_secret(settings, SecretKind.BEARER, "orbit-tasks", "token") == PROJECT_VALUES["ORBIT_API_KEY"]
    assert stored_secret(settings, SecretKind.HEADER, "legacy-wiki", "X-Api-Key") == PROJECT_VALUES["WIKI_API_KEY"]


async def test_a_literal_secret_from_the_file_is_stored_encrypted(importer: Importer, settings: Settings) -> None:
    content = (FIXTURES / "windsurf.json").read_text(encoding="utf-8")
    preview = await importer.preview(content)
    await importer.apply(request(preview, content, values={}, use_defaults=()))
    assert stored_secret(settings, SecretKind.BEARER, "context-hub", "token") == "ch_live_invented_9a8b7c6d"
    assert b"ch_live_invented_9a8b7c6d" not in (settings.mcp_dir / "servers.json").read_bytes()
    assert b"ch_live_invented_9a8b7c6d" not in (settings.mcp_dir / "secrets.json").read_bytes()


async def test_proposed_ids_avoid_the_servers_registered_at_preview_time(importer: Importer, center: McpCenter) -> None:
    """With `on_conflict="rename"` (the only behaviour before re-imports were safe)."""
    await center.create_server({"name": "github", "transport": "stdio", "command": "mcp-github"})
    preview = await importer.preview(PROJECT, on_conflict="rename")
    github = preview.plan.servers[0]
    assert (github.id, github.clash, github.slug) == ("github-2", "existing", "github")
    assert preview.to_dict()["servers"][0]["clash"] == {"with": "existing", "slug": "github"}
    created = await importer.apply(request(preview, PROJECT, on_conflict="rename"))
    assert created[0].id == "github-2"


async def test_a_re_import_skips_what_is_unchanged_and_refuses_a_changed_entry_unless_told(
    importer: Importer, center: McpCenter, settings: Settings
) -> None:
    """Importing the same file twice created `name-2` copies of every server (issue 16). The service
    owns the rule the REST API, the page and the CLI share (R-1.8): an identical entry is
    `unchanged`, a different one with an existing server's name is a `conflict` that apply refuses
    with IMPORT_CONFLICT naming it (nothing applied), unless `skip` or `rename` says otherwise; the
    preview's mode must be the apply's."""
    first = await importer.apply(request(await importer.preview(PROJECT)))
    ids = sorted(view.id for view in first)
    again = await importer.preview(PROJECT)
    assert (again.plan.servers, {e.outcome for e in again.plan.existing}) == ((), {"unchanged"})
    assert sorted(e["server_id"] for e in again.to_dict()["existing"]) == ids
    changed = PROJECT.replace("notes-mcp==0.4.2", "notes-mcp==0.5.0", 1)
    assert changed != PROJECT
    refused = await importer.preview(changed)
    [conflict] = refused.plan.conflicts
    before = files(settings)
    with pytest.raises(ImportConflict) as caught:
        await importer.apply(request(refused, changed))
    assert caught.value.details["conflicts"] == [
        {"name": conflict.name, "server_id": conflict.server_id, "fields": list(conflict.fields)}
    ]
    assert files(settings) == before
    skipped = await importer.preview(changed, on_conflict="skip")
    assert [e.outcome for e in skipped.plan.existing if e.server_id == conflict.server_id] == ["skipped"]
    with pytest.raises(ImportPreviewStale):
        await importer.apply(request(skipped, changed, on_conflict="rename"))
    renamed = await importer.preview(changed, on_conflict="rename")
    needed = {v.name for v in renamed.plan.variables}  # only the copy's: the identical entries are skipped
    values = {k: v for k, v in PROJECT_VALUES.items() if k in needed}
    defaults = tuple(d for d in PROJECT_DEFAULTS if d in needed)
    created = await importer.apply(
        request(renamed, changed, on_conflict="rename", values=values, use_defaults=defaults)
    )
    assert [view.id for view in created] == [f"{conflict.server_id}-2"]  # identical entries skipped
    assert {e.outcome for e in renamed.plan.existing} == {"unchanged"}


async def test_a_token_is_single_use(importer: Importer) -> None:
    preview = await importer.preview(PROJECT)
    await importer.apply(request(preview, PROJECT))
    with pytest.raises(ImportPreviewUnknown) as caught:
        await importer.apply(request(preview, PROJECT))
    assert caught.value.code == "IMPORT_PREVIEW_UNKNOWN"


async def test_an_expired_preview_is_refused_and_changes_nothing(
    importer: Importer, clock: FakeClock, settings: Settings
) -> None:
    preview = await importer.preview(PROJECT)
    before = files(settings)
    clock.now += 15 * 60
    with pytest.raises(ImportPreviewExpired) as caught:
        await importer.apply(request(preview, PROJECT))
    assert (caught.value.code, caught.value.http_status) == ("IMPORT_PREVIEW_EXPIRED", 409)
    assert files(settings) == before


async def test_an_unknown_token_is_refused(importer: Importer) -> None:
    preview = await importer.preview(PROJECT)
    with pytest.raises(ImportPreviewUnknown):
        await importer.apply(request(preview, PROJECT, token="not-a-token"))


async def test_a_token_is_applied_by_another_instance_with_the_same_key(center: McpCenter) -> None:
    """R-10.2: behind a balancer the preview and the apply reach different instances (another
    `ImportPreviews`, the same host key): the sealed token is applied there; replayed on a third,
    the servers it created make it stale."""
    preview = await Importer(center, ImportPreviews()).preview(PROJECT)
    created = await Importer(center, ImportPreviews()).apply(request(preview, PROJECT))
    assert [view.id for view in created] == [s.id for s in preview.plan.servers]
    with pytest.raises(ImportPreviewStale):
        await Importer(center, ImportPreviews()).apply(request(preview, PROJECT))


async def test_a_token_sealed_under_another_key_is_unknown(center: McpCenter, second_center: McpCenter) -> None:
    preview = await Importer(center, ImportPreviews()).preview(PROJECT)
    with pytest.raises(ImportPreviewUnknown):
        await Importer(second_center, ImportPreviews()).apply(request(preview, PROJECT))
    assert await second_center.server_configs() == []


@pytest.mark.parametrize(
    "change",
    [
        {"content": PROJECT.replace("acme-labs", "acme-lab5")},
        {"content": PROJECT + "\n"},
        {"format": "claude-code"},
    ],
    ids=["edited", "whitespace", "format"],
)
async def test_a_changed_input_is_refused_and_changes_nothing(
    importer: Importer, settings: Settings, change: dict[str, Any]
) -> None:
    preview = await importer.preview(PROJECT)
    before = files(settings)
    with pytest.raises(ImportInputChanged) as caught:
        await importer.apply(request(preview, **{"content": PROJECT, **change}))
    assert (caught.value.code, caught.value.http_status) == ("IMPORT_INPUT_CHANGED", 409)
    assert files(settings) == before


async def test_a_digest_other_than_the_previews_is_refused(importer: Importer, settings: Settings) -> None:
    preview = await importer.preview(PROJECT)
    before = files(settings)
    with pytest.raises(ImportPreviewStale) as caught:
        await importer.apply(request(preview, PROJECT, digest="sha256:" + "0" * 64))
    assert caught.value.details == {"reason": "digest_mismatch"}
    assert files(settings) == before


async def test_a_preview_made_stale_by_a_new_server_is_refused_and_changes_nothing(
    importer: Importer, center: McpCenter, settings: Settings
) -> None:
    preview = await importer.preview(PROJECT)
    await center.create_server({"name": "orbit-tasks", "transport": "stdio", "command": "mcp-orbit"})
    before = files(settings)
    with pytest.raises(ImportPreviewStale) as caught:
        await importer.apply(request(preview, PROJECT))
    assert (caught.value.code, caught.value.details) == ("IMPORT_PREVIEW_STALE", {"reason": "servers_changed"})
    assert files(settings) == before
    assert [c.id for c in await center.server_configs()] == ["orbit-tasks"]


async def test_missing_values_are_refused_and_the_token_stays_usable(importer: Importer, settings: Settings) -> None:
    preview = await importer.preview(PROJECT)
    before = files(settings)
    with pytest.raises(ImportValuesInvalid) as caught:
        await importer.apply(request(preview, PROJECT, values={"GITHUB_PAT": PROJECT_VALUES["GITHUB_PAT"]}))
    assert [(e["field"], e["code"]) for e in caught.value.details["errors"]] == [
        ("values.ORBIT_API_KEY", "VALUE_REQUIRED"),
        ("values.WIKI_API_KEY", "VALUE_REQUIRED"),
    ]
    assert files(settings) == before
    assert len(await importer.apply(request(preview, PROJECT))) == 4


async def test_a_value_that_breaks_a_rule_in_the_last_server_creates_none_of_them(
    importer: Importer, settings: Settings
) -> None:
    content = json.dumps(
        {
            "mcpServers": {
                "one": {"command": "mcp-one"},
                "two": {"command": "mcp-two", "env": {"TWO_TOKEN": "two-token-literal"}},
                "three": {"url": "https://${HOST}/mcp"},
            }
        }
    )
    preview = await importer.preview(content)
    before = files(settings)
    with pytest.raises(ImportValuesInvalid) as caught:
        await importer.apply(request(preview, content, values={"HOST": "u:p@h.example.com"}, use_defaults=()))
    assert [(e["field"], e["code"]) for e in caught.value.details["errors"]] == [
        ("servers.three.url", "URL_HAS_CREDENTIALS")
    ]
    assert files(settings) == before


async def test_a_preview_whose_entries_were_all_rejected_has_nothing_to_apply(importer: Importer) -> None:
    content = json.dumps({"mcpServers": {"bad": {"command": "x", "url": "https://a.example.com/mcp"}}})
    preview = await importer.preview(content)
    assert preview.plan.servers == ()
    with pytest.raises(ImportNothingToApply) as caught:
        await importer.apply(request(preview, content, values={}, use_defaults=()))
    assert caught.value.code == "IMPORT_NOTHING_TO_APPLY"


async def test_a_failure_midway_through_apply_leaves_the_store_unchanged(
    importer: Importer, center: McpCenter, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    await center.create_server({"name": "kept", "transport": "stdio", "command": "mcp-kept"})
    preview = await importer.preview(PROJECT)
    before = files(settings)
    original = Servers._add  # pyright: ignore[reportPrivateUsage]
    calls: list[str] = []

    def failing(self: Servers, state: StoreState, parsed: Any) -> str:
        calls.append(parsed.config["id"])
        if len(calls) == 3:
            raise StorageError("injected failure on the third server")
        return original(self, state, parsed)

    monkeypatch.setattr(Servers, "_add", failing)
    with pytest.raises(StorageError):
        await importer.apply(request(preview, PROJECT))
    assert calls == ["github", "orbit-tasks", "legacy-wiki"]
    assert files(settings) == before
    assert [c.id for c in await center.server_configs()] == ["kept"]


async def test_applied_tokens_remembered_are_bounded_and_a_forgotten_one_is_stale(center: McpCenter) -> None:
    importer = Importer(center, ImportPreviews(max_applied=1))
    first = await importer.preview(PROJECT)
    await importer.apply(request(first, PROJECT))
    with pytest.raises(ImportPreviewUnknown):  # remembered: applied here
        await importer.apply(request(first, PROJECT))
    other = json.dumps({"mcpServers": {"solo": {"command": "uvx", "args": ["solo-mcp"]}}})
    second = await importer.preview(other)
    await importer.apply(request(second, other, values={}, use_defaults=()))
    with pytest.raises(ImportPreviewStale):  # forgotten, but its servers exist now
        await importer.apply(request(first, PROJECT))


async def test_a_host_env_var_referenced_by_the_file_never_reaches_preview_or_servers(
    importer: Importer, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = "PLANTED-host-env-value-5f1e"
    monkeypatch.setenv("PLANTED_HOST_VAR", planted)
    content = json.dumps(
        {
            "mcpServers": {
                "leaky-stdio": {
                    "command": "mcp-leaky",
                    "args": ["--a", "${PLANTED_HOST_VAR}", "--b", "${env:PLANTED_HOST_VAR}"],
                    "env": {"PLAIN": "${PLANTED_HOST_VAR:-fallback}"},
                },
                "leaky-remote": {
                    "url": "https://collector.example.com/mcp",
                    "headers": {"X-Leak": "${PLANTED_HOST_VAR}"},
                },
            }
        }
    )
    preview = await importer.preview(content)
    assert planted not in json.dumps(preview.to_dict())
    (variable,) = preview.plan.variables
    assert (variable.name, variable.secret, variable.has_default) == ("PLANTED_HOST_VAR", True, False)
    created = await importer.apply(
        request(preview, content, values={"PLANTED_HOST_VAR": "user-supplied"}, use_defaults=())
    )
    assert planted not in json.dumps([view.to_dict() for view in created])
    assert created[0].to_dict()["args"] == ["--a", "user-supplied", "--b", "user-supplied"]
    assert created[0].to_dict()["env"] == {"PLAIN": "user-supplied"}
    assert stored_secret(settings, SecretKind.HEADER, "leaky-remote", "X-Leak") == "user-supplied"
    assert planted.encode() not in (settings.mcp_dir / "servers.json").read_bytes()


# ----- export and the round trip ---------------------------------------------------------


async def test_export_holds_no_secret_value_and_points_at_this_hosts_gateway(
    importer: Importer, settings: Settings
) -> None:
    preview = await importer.preview(PROJECT)
    await importer.apply(request(preview, PROJECT))
    for format in EXPORT_FORMATS:
        exported = await importer.export(format)
        text = json.dumps(exported.to_dict())
        assert [s for s in PROJECT_VALUES.values() if s in text] == []
        assert exported.to_dict()["gateway"]["url"] == f"{settings.base_url}/mcp"
        assert "MCP_CENTER_GATEWAY_TOKEN" in json.dumps(exported.to_dict()["gateway"]["config"])


@contextmanager
def other_data_dir() -> Generator[Settings]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Settings.load(data_dir=Path(tmp) / "data", environ={})


async def import_everything(importer: Importer, content: str, format: str = "auto") -> list[ServerView]:
    """Preview and apply, supplying a value for every variable."""
    preview = await importer.preview(content, format)
    values = {v.name: f"value-of-{v.name}" for v in preview.plan.variables}
    return await importer.apply(ApplyRequest(preview.token, preview.digest, content, format, values, ()))


@pytest.fixture
async def second_center() -> AsyncGenerator[McpCenter]:
    with other_data_dir() as settings:
        async with McpCenter.open(settings) as opened:
            yield opened


@pytest.mark.parametrize("format", EXPORT_FORMATS)
async def test_import_export_import_yields_the_same_servers(
    importer: Importer, center: McpCenter, second_center: McpCenter, format: str
) -> None:
    first = await importer.preview(PROJECT)
    await importer.apply(request(first, PROJECT))
    exported = await importer.export(format)
    again = Importer(second_center, ImportPreviews())
    await import_everything(again, json.dumps(exported.config, indent=2), format)
    original = [c.model_dump() for c in await center.server_configs()]
    if format == "claude-desktop":  # its file has only local servers (listed in the notes)
        original = [c for c in original if c["transport"] == "stdio"]
        assert [n["code"] for n in exported.to_dict()["notes"]] == ["REMOTE_NOT_SUPPORTED"] * 2
    assert [c.model_dump() for c in await second_center.server_configs()] == original


# ----- property: apply is all or nothing -------------------------------------------------


ENTRY_NAMES = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "Alpha", "epsilon"]), min_size=1, max_size=6)


@hypothesis_settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names=ENTRY_NAMES, fail_at=st.integers(0, 7), existing=st.lists(st.sampled_from(["alpha", "beta"]), max_size=2))
def test_apply_is_all_or_nothing_wherever_it_fails(names: list[str], fail_at: int, existing: list[str]) -> None:
    """Inject a failure at the `fail_at`-th server (or none past the end): the store is either
    unchanged or holds every planned server, never a part."""
    servers = {name: {"command": f"mcp-{name.lower()}", "env": {"API_TOKEN": f"token-of-{name}-123"}} for name in names}
    content = json.dumps({"mcpServers": servers})

    async def scenario(settings_: Settings) -> None:
        async with McpCenter.open(settings_, connect=False) as center:
            for server_id in dict.fromkeys(existing):
                await center.create_server({"id": server_id, "name": server_id, "transport": "stdio", "command": "x"})
            importer = Importer(center, ImportPreviews())
            preview = await importer.preview(content, on_conflict="rename")  # existing names: copies
            before = files(settings_)
            original = Servers._add  # pyright: ignore[reportPrivateUsage]
            calls: list[int] = []

            def failing(self: Servers, state: StoreState, parsed: Any) -> str:
                calls.append(1)
                if len(calls) == fail_at + 1:
                    raise StorageError("injected")
                return original(self, state, parsed)

            with mock.patch.object(Servers, "_add", failing):
                try:
                    await importer.apply(ApplyRequest(preview.token, preview.digest, content, on_conflict="rename"))
                except CenterError as exc:
                    assert exc.code == "STORAGE_ERROR"
                    assert files(settings_) == before
                    return
            ids = {c.id for c in await center.server_configs()}
            assert ids == set(dict.fromkeys(existing)) | {s.id for s in preview.plan.servers}
            assert fail_at >= len(preview.plan.servers)

    with other_data_dir() as settings_:
        anyio.run(scenario, settings_)
