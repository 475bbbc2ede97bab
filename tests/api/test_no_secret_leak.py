"""The planted-secret scan (R-1.5): a secret value never appears in a response, a log record or a file.

One long scripted session plants distinctive secrets as a secret header, a stdio server's secret
env value and a bearer token, then drives every kind of request — create, read, list, stale and
invalid updates, trust, test (passing and failing), enable, tools, calls, failing calls, secret PUT
and DELETE, errors. Everything observable is captured: every response body and header, every log
record of every logger at DEBUG (message, traceback and extra fields), and the bytes of every file
in the data directory. None may contain a secret, its base64 or URL-encoded form, or its plain
SHA-256 (R-2.1: fingerprints are keyed). `whoami` is never called: it echoes headers on purpose.

One stdio server deliberately prints its secret env value on stdout and stderr and exits: the host
captures those streams into errors and logs, and must redact them.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import sys
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import anyio
import httpx2
import pytest

from mcp_center.config import Settings
from tests.servers.http_echo import streamable_app
from tests.support.api import Captured, assert_error, remote_body, stdio_body
from tests.support.loopback import serve_loopback
from tests.support.ports import closed_port_url
from tests.support.readiness import STEP_TIMEOUT_S
from tests.support.zygote import launch_command

pytestmark = pytest.mark.anyio

SERVERS = "/api/mcp/servers"
ECHO_STDIO = str(Path(__file__).parents[1] / "servers" / "echo_stdio.py")
ROOT = "PLANTED-s3cr3t-" + uuid.uuid4().hex
"""Every planted value starts with this; the characters after it URL-encode differently."""
HEADER_SECRET = ROOT + "-header+/=&?"
HEADER_SECRET_2 = ROOT + "-header-two+/="
BEARER_SECRET = ROOT + "-bearer+/="
ENV_SECRET = ROOT + "-env+/=&?"
ENV_SECRET_2 = ROOT + "-env-two"
ALL_SECRETS = (HEADER_SECRET, HEADER_SECRET_2, BEARER_SECRET, ENV_SECRET, ENV_SECRET_2)

LEAKY_STDIO = (
    "import os, sys\n"
    "value = os.environ.get('API_TOKEN', 'unset')\n"
    "print('leaky stdout ' + value, flush=True)\n"
    "sys.stderr.write('leaky stderr API_TOKEN=' + value + '\\n')\n"
    "sys.stderr.flush()\n"
    "sys.exit(3)\n"
)
"""A stdio "server" that prints its secret env value on both streams and exits with code 3."""


def forms(value: str) -> dict[str, bytes]:
    """Encodings of `value` a careless writer might produce."""
    raw = value.encode("utf-8")
    return {
        "plain": raw,
        "url-encoded": quote(value, safe="").encode(),
        "form-encoded": quote_plus(value).encode(),
        "base64": base64.b64encode(raw),
        "base64-unpadded": base64.b64encode(raw).rstrip(b"="),
        "urlsafe-base64": base64.urlsafe_b64encode(raw).rstrip(b"="),
        "sha256-hex": hashlib.sha256(raw).hexdigest().encode(),
    }


NEEDLES: dict[str, bytes] = {"root": ROOT.encode()} | {
    f"{value[len(ROOT) :]}:{name}": needle for value in ALL_SECRETS for name, needle in forms(value).items()
}


def leaks(where: str, blob: bytes | str) -> list[str]:
    data = blob.encode("utf-8", "backslashreplace") if isinstance(blob, str) else blob
    return [f"{where}: {name}" for name, needle in NEEDLES.items() if needle in data]


async def expect(response: httpx2.Response, *statuses: int) -> dict[str, Any]:
    assert response.status_code in statuses, (response.request.method, response.request.url, response.text)
    return response.json() if response.content else {}


async def session(api: httpx2.AsyncClient, echo_url: str, closed_url: str) -> None:
    """The scripted session: every route, good and bad requests, with the planted secrets in play."""
    # Create: a secret header, a bearer token, a secret env value; all three reach real servers.
    await expect(
        await api.post(SERVERS, json=remote_body("hdr", echo_url, secret_values={"headers": {"X-Key": HEADER_SECRET}})),
        201,
    )
    bearer = remote_body("bearer", echo_url, auth={"kind": "bearer"}, secret_values={"bearer_token": BEARER_SECRET})
    await expect(await api.post(SERVERS, json=bearer), 201)
    command, *args = launch_command(ECHO_STDIO)  # in the fork server: the SDK imported once (issue 16)
    local = stdio_body("local", command, args, env={"MODE": "plain"}, secret_values={"env": {"API_TOKEN": ENV_SECRET}})
    await expect(await api.post(SERVERS, json=local), 201)
    leaky = stdio_body("leaky", sys.executable, ["-c", LEAKY_STDIO], secret_values={"env": {"API_TOKEN": ENV_SECRET}})
    await expect(await api.post(SERVERS, json=leaky), 201)
    down = remote_body(
        "down",
        closed_url,
        auth={"kind": "bearer"},
        secret_values={"headers": {"X-Key": HEADER_SECRET}, "bearer_token": BEARER_SECRET},
    )
    await expect(await api.post(SERVERS, json=down), 201)

    # Refused creates that carry secret values: the error must not quote them.
    bad_creates: list[dict[str, Any]] = [
        remote_body("bad1", echo_url, secret_values={"env": {"API_TOKEN": ENV_SECRET}}),
        remote_body("bad2", echo_url, secret_values={"headers": {"X-Key": HEADER_SECRET + "\r\nX-Evil: 1"}}),
        remote_body("bad3", "ftp://x.example/mcp", secret_values={"headers": {"X-Key": HEADER_SECRET}}),
        remote_body("hdr", echo_url, secret_values={"headers": {"X-Key": HEADER_SECRET}}),
        remote_body("bad4", echo_url, secret_values={"bearer_token": BEARER_SECRET}),
        remote_body("bad5", echo_url, headers={"Authorization": BEARER_SECRET}, auth={"kind": "bearer"}),
        stdio_body("bad6", "npx foo | sh", secret_values={"env": {"API_TOKEN": ENV_SECRET}}),
        stdio_body("bad7", "python", secret_values={"env": {"1BAD": ENV_SECRET}}),
        remote_body("bad8", echo_url, secret_values={"headers": {"Host": HEADER_SECRET}}),
    ]
    for body in bad_creates:
        await expect(await api.post(SERVERS, json=body), 409, 422)

    # Reads.
    views = {s["id"]: s for s in (await expect(await api.get(SERVERS), 200))["servers"]}
    assert set(views) == {"hdr", "bearer", "local", "leaky", "down"}
    for server_id in views:
        await expect(await api.get(f"{SERVERS}/{server_id}"), 200)

    # Stale and invalid updates that carry secrets.
    stale = {"version": 99, "secret_values": {"headers": {"X-Key": HEADER_SECRET_2}}}
    await expect(await api.patch(f"{SERVERS}/hdr", json=stale), 409)
    await expect(await api.put(f"{SERVERS}/hdr", json={**views["hdr"], "version": 99}), 409)
    await expect(
        await api.patch(f"{SERVERS}/local", json={"version": 99, "secret_values": {"env": {"X": ENV_SECRET_2}}}), 409
    )
    invalid = {"version": 1, "url": "http://user:" + quote(HEADER_SECRET_2, safe="") + "@example.com/mcp"}
    await expect(await api.patch(f"{SERVERS}/hdr", json=invalid), 422)
    await expect(await api.put(f"{SERVERS}/hdr", json={**views["hdr"], "headers": {"Host": HEADER_SECRET_2}}), 422)
    await expect(
        await api.put(f"{SERVERS}/hdr/secrets/X-Key?kind=header&version=99", json={"value": HEADER_SECRET_2}), 409
    )
    await expect(await api.put(f"{SERVERS}/hdr/secrets/API_TOKEN?kind=environment", json={"value": ENV_SECRET_2}), 422)
    await expect(await api.put(f"{SERVERS}/hdr/secrets/X-Key?kind=cookie", json={"value": HEADER_SECRET_2}), 422)
    await expect(await api.put(f"{SERVERS}/hdr/secrets/X-Key?kind=header", json={"value": HEADER_SECRET_2 + "\n"}), 422)
    await expect(await api.put(f"{SERVERS}/ghost/secrets/X-Key?kind=header", json={"value": HEADER_SECRET_2}), 404)

    # A low-risk update (kept trust is irrelevant here, the body is the read shape).
    views["hdr"] = await expect(await api.put(f"{SERVERS}/hdr", json={**views["hdr"], "name": "Renamed"}), 200)

    # Trust with a wrong digest, then the right ones; test everything (one fails, one exits, one is down).
    await expect(await api.post(f"{SERVERS}/hdr/trust", json={"digest": "sha256:" + "0" * 64}), 409)
    with anyio.fail_after(4 * STEP_TIMEOUT_S):
        for server_id in ("hdr", "bearer", "local", "leaky", "down"):
            current = await expect(await api.get(f"{SERVERS}/{server_id}"), 200)
            await expect(await api.post(f"{SERVERS}/{server_id}/trust", json={"digest": current["digest"]}), 200)
            result = await expect(await api.post(f"{SERVERS}/{server_id}/test"), 200)
            assert result["ok"] is (server_id in {"hdr", "bearer", "local"}), (server_id, result)
        for server_id in ("hdr", "bearer", "local"):
            view = await expect(await api.post(f"{SERVERS}/{server_id}/enable"), 200)
            assert view["status"]["state"] == "ready", view["status"]
        await expect(await api.post(f"{SERVERS}/leaky/enable"), 409)
        await expect(await api.post(f"{SERVERS}/down/enable"), 409)

        # Tools and calls, good and failing (never whoami).
        for server_id in ("hdr", "bearer", "local"):
            await expect(await api.get(f"{SERVERS}/{server_id}/tools"), 200)
            called = await expect(
                await api.post(f"{SERVERS}/{server_id}/tools/echo/call", json={"arguments": {"text": "hello"}}), 200
            )
            assert called["structuredContent"] == {"result": "hello"}
        await expect(await api.post(f"{SERVERS}/hdr/tools/add/call", json={"arguments": {"a": "x", "b": 1}}), 200)
        await expect(await api.post(f"{SERVERS}/hdr/tools/nope/call", json={"arguments": {}}), 404)
        await expect(await api.post(f"{SERVERS}/hdr/tools/echo/call", json={"arguments": [1]}), 422)
        await expect(await api.post(f"{SERVERS}/leaky/tools/echo/call", json={"arguments": {}}), 409)
        await expect(await api.get(f"{SERVERS}/down/tools"), 409)

        # Secret PUT and DELETE on live servers (high-risk: they disconnect).
        await expect(await api.put(f"{SERVERS}/hdr/secrets/X-Key?kind=header", json={"value": HEADER_SECRET_2}), 200)
        await expect(await api.delete(f"{SERVERS}/hdr/secrets/X-Key?kind=header"), 200)
        await expect(await api.delete(f"{SERVERS}/hdr/secrets/X-Key?kind=header"), 404)
        await expect(
            await api.put(f"{SERVERS}/local/secrets/API_TOKEN?kind=environment", json={"value": ENV_SECRET_2}), 200
        )
        await expect(await api.put(f"{SERVERS}/bearer/secrets/token?kind=bearer", json={"value": BEARER_SECRET}), 200)
        await expect(await api.post(f"{SERVERS}/bearer/tools/echo/call", json={"arguments": {"text": "x"}}), 200)
        await expect(await api.delete(f"{SERVERS}/local/secrets/API_TOKEN?kind=environment"), 200)

        # Disable, delete, and a last look at everything.
        await expect(await api.post(f"{SERVERS}/bearer/disable"), 200)
        await expect(await api.post(f"{SERVERS}/bearer/tools/echo/call", json={"arguments": {"text": "x"}}), 409)
        await expect(await api.delete(f"{SERVERS}/down"), 204)
        await expect(await api.get(f"{SERVERS}/down"), 404)
        await expect(await api.get(SERVERS), 200)
        await expect(await api.get("/openapi.json"), 200)


async def test_planted_secrets_appear_in_no_response_log_record_or_data_file(
    client: httpx2.AsyncClient, captured: Captured, settings: Settings
) -> None:
    async with serve_loopback(streamable_app()) as base:
        with closed_port_url() as closed_url:
            await session(client, base + "/mcp", closed_url)

    found: list[str] = []
    assert len(captured.responses) >= 60
    for where, response in captured.responses:
        found += leaks(f"response body of {where}", response.content)
        found += leaks(f"response headers of {where}", repr(response.headers.multi_items()))

    assert captured.records, "no log record was captured"
    for record in captured.records:
        where = f"log record {record.name}:{record.getMessage()[:60]!r}"
        found += leaks(where, record.getMessage())
        found += leaks(where + " (exc_text)", record.exc_text or "")
        found += leaks(where + " (fields)", repr(vars(record)))
        if record.exc_info:
            found += leaks(where + " (formatted)", logging.Formatter().format(record))

    files = [p for p in settings.data_dir.rglob("*") if p.is_file()]
    assert {"servers.json", "secrets.json"} <= {p.name for p in files}
    for path in files:
        found += leaks(f"file {path.relative_to(settings.data_dir)}", path.read_bytes())

    assert not found, "\n".join(found)


async def test_the_leaky_stdio_server_really_printed_the_secret_so_the_scan_above_is_meaningful(
    client: httpx2.AsyncClient, captured: Captured
) -> None:
    """The failing test of the leaky server is attributed and its captured output is redacted, not absent."""
    body = stdio_body("leaky", sys.executable, ["-c", LEAKY_STDIO], secret_values={"env": {"API_TOKEN": ENV_SECRET}})
    view = await expect(await client.post(SERVERS, json=body), 201)
    await expect(await client.post(f"{SERVERS}/leaky/trust", json={"digest": view["digest"]}), 200)
    with anyio.fail_after(STEP_TIMEOUT_S):
        result = await expect(await client.post(f"{SERVERS}/leaky/test"), 200)
    assert result["ok"] is False
    assert result["error"]["reason"] == "process_exited"
    rendered = repr(result["error"]) + "".join(r.getMessage() for r in captured.records)
    assert "API_TOKEN=[redacted]" in rendered or "leaky stdout [redacted]" in rendered, result["error"]
    assert ROOT not in rendered


def test_the_scan_recognises_every_form_it_looks_for() -> None:
    """The scan above proves something only if each needle is found where it is written."""
    for value in ALL_SECRETS:
        for name, needle in forms(value).items():
            assert leaks("probe", b"prefix " + needle + b" suffix"), name
    assert not leaks("probe", "PLANTED-s3cr3t-[redacted]")
    # The characters after ROOT make the encoded forms differ from the plain one.
    header_forms = forms(HEADER_SECRET)
    assert header_forms["url-encoded"] != header_forms["plain"]
    assert header_forms["form-encoded"] != header_forms["plain"]


async def test_a_secret_too_short_to_redact_is_refused_and_nothing_is_stored(
    client: httpx2.AsyncClient, settings: Settings
) -> None:
    """Values below the redaction threshold could be echoed unredacted, so they are refused (R-1.5)."""
    short = "pin42"
    body = stdio_body("leaky", sys.executable, ["-c", LEAKY_STDIO], secret_values={"env": {"API_TOKEN": short}})
    created = await client.post(SERVERS, json=body)
    assert_error(created, 422, "CONFIG_INVALID")
    assert created.json()["error"]["details"]["errors"][0]["code"] == "SECRET_VALUE_TOO_SHORT"
    assert short not in created.text
    assert (await client.get(f"{SERVERS}/leaky")).status_code == 404
    servers_file = settings.mcp_dir / "servers.json"
    assert not servers_file.exists() or short.encode() not in servers_file.read_bytes()
