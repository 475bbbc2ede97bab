"""The OpenAPI description matches the API: schemathesis against a live `mcp-center serve` (R-7.3, issue 16).

A real serve (127.0.0.1, a temporary data directory, a known admin token) and schemathesis' own
command line over every operation of `/openapi.json`, with three checks:

- `not_a_server_error`: no 5xx for any input, valid or not;
- `status_code_conformance`: every status answered is documented for that operation;
- `response_schema_conformance`: every answer fits its documented schema (the error envelope for
  errors).

Bounded and seeded: a fixed seed, a few examples per operation in the examples, coverage and
fuzzing phases, no example database. `/api/events` is left out: it is a stream that ends only
when the host stops, so a fuzzer's read of it would never end (its shape is tested in
tests/e2e/test_event_stream.py).

The static half (no server needed) checks the description itself: the envelope on every error,
no FastAPI `{"detail"}` schema, the security schemes, the typed bodies.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mcp_center.api import create_api
from mcp_center.api.bodies import ImportApply, ImportPreview, TrustRequest
from mcp_center.config import Settings
from mcp_center.errors import RequestInvalid
from mcp_center.service import parse_apply_request, parse_preview_request
from mcp_center.web import CSRF_HEADER, SESSION_COOKIE, BrowserSessions
from tests.support.api import ADMIN_TOKEN as API_TOKEN
from tests.support.api import api_client
from tests.support.serve import ADMIN_TOKEN, VENV_BIN, Host, running_host

SEED = 160016
MAX_EXAMPLES = 4
CHECKS = "not_a_server_error,status_code_conformance,response_schema_conformance"


# The ready server is the hand-written raw_stdio (no SDK): it starts in ~0.05 s of CPU where the SDK's
# echo_stdio took ~1.9 s (importing the SDK's pydantic models), and the fuzzer starts it about a dozen
# times (every POST .../test probes a fresh process; disable/enable restarts it). What the API answers
# is reached the same way (a ready stdio server with tools: echo, exit, and `broken`, which the host
# quarantines, so the catalog answers carry a quarantined entry too) (issue 16).
RAW_STDIO = Path(__file__).parents[1] / "servers" / "raw_stdio.py"
CONFIG = """
# Half of the generated server ids name the ready echo server, so the fuzzer reaches past 404:
# calls, catalog, info, the JSON-RPC console, completion, policies, secrets, trust, delete.
[dictionaries.servers]
values = ["echo"]

[parameters]
"path.server_id" = { dictionary = "servers", probability = 0.5 }
"""


def _ready_echo_server(host: Host) -> None:
    body = {"id": "echo", "name": "Echo", "transport": "stdio", "command": sys.executable, "args": [str(RAW_STDIO)]}
    created = host.client.post("/api/mcp/servers", json=body)
    assert created.status_code == 201, created.text
    trusted = host.client.post("/api/mcp/servers/echo/trust", json={"digest": created.json()["digest"]})
    assert trusted.status_code == 200, trusted.text
    tested = host.client.post("/api/mcp/servers/echo/test")
    assert tested.status_code == 200 and tested.json()["ok"], tested.text
    enabled = host.client.post("/api/mcp/servers/echo/enable")
    assert enabled.status_code == 200, enabled.text


@pytest.fixture(scope="session")
def hypothesis_storage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Hypothesis' storage directory for every schemathesis run of this test session (its workers').

    With no example database it holds caches only: the Unicode and codec tables hypothesis builds by
    walking all 1.1 million code points (~1.5 s of CPU per schemathesis process when each run has a
    directory of its own) and the constants it collects from source files. Neither changes what is
    generated. Under pytest-xdist the workers share the run's base directory (written atomically by
    hypothesis: a temporary file renamed)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "hypothesis-storage"


def test_schemathesis_finds_no_server_error_and_no_undocumented_status(
    tmp_path: Path, hypothesis_storage: Path
) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    with running_host(tmp_path) as host:
        _ready_echo_server(host)
        command = [
            str(VENV_BIN / "st"),
            "--config-file",
            str(config),
            "run",
            f"{host.url}/openapi.json",
            "--header",
            f"Authorization: Bearer {ADMIN_TOKEN}",
            "--checks",
            CHECKS,
            "--phases",
            "examples,coverage,fuzzing",
            "--max-examples",
            str(MAX_EXAMPLES),
            "--seed",
            str(SEED),
            "--generation-database",
            "none",
            "--exclude-path",
            "/api/events",
            "--request-timeout",
            "30",
            "--no-color",
        ]
        env = {**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": str(hypothesis_storage)}
        run = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp_path, env=env, check=False)
        report = run.stdout + run.stderr
        log = host.log()
    assert run.returncode == 0, report[-12000:]
    generated = re.search(r"(\d+) generated, (\d+) passed", report)
    assert generated is not None, report[-4000:]
    assert int(generated.group(1)) == int(generated.group(2)) > 500, generated.group(0)
    assert "Traceback" not in log, log[-4000:]


def _description() -> dict[str, Any]:
    app = create_api(Settings(data_dir=Path("/nonexistent")), "x" * 32, sessions=BrowserSessions())
    return app.openapi()


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, ops in doc["paths"].items() for method, op in ops.items()]


def test_every_error_status_is_the_envelope_never_fastapis_detail() -> None:
    doc = _description()
    schemas = doc["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    assert "ValidationError" not in schemas
    assert schemas["ErrorEnvelope"]["required"] == ["error"]
    assert schemas["ErrorObject"]["required"] == ["code", "message", "details"]
    checked = 0
    for path, method, op in _operations(doc):
        for status, response in op["responses"].items():
            if int(status) < 400 or (path, status) == ("/oauth/callback", "400"):  # the callback's page
                continue
            # Errors are JSON whatever the route's own answer is (the event stream, the callback
            # page): the envelope is documented under application/json only, as it is sent.
            assert response["content"] == {
                "application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}
            }, (method, path, status)
            checked += 1
    assert checked > 200


def test_every_api_route_declares_the_statuses_every_request_can_get() -> None:
    doc = _description()
    for path, method, op in _operations(doc):
        if path.startswith("/api/"):
            assert {"401", "403", "413", "422", "500", "503"} <= set(op["responses"]), (method, path)
        if "{" in path and path.startswith("/api/") and not path.startswith("/api/operations/"):
            assert "404" in op["responses"], (method, path)


def test_the_security_schemes_are_the_admin_token_or_the_session_cookie_with_csrf() -> None:
    doc = _description()
    schemes = doc["components"]["securitySchemes"]
    assert schemes["adminToken"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schemes["adminToken"]["description"],
    }
    assert (schemes["settingsSession"]["in"], schemes["settingsSession"]["name"]) == ("cookie", SESSION_COOKIE)
    assert (schemes["csrfToken"]["in"], schemes["csrfToken"]["name"]) == ("header", CSRF_HEADER)
    for path, method, op in _operations(doc):
        if path.startswith("/api/"):
            cookie: dict[str, list[str]] = (
                {"settingsSession": []} if method == "get" else {"settingsSession": [], "csrfToken": []}
            )
            assert op["security"] == [{"adminToken": []}, cookie], (method, path)
        else:
            assert "security" not in op, (method, path)


def test_request_bodies_are_typed_by_the_models_the_handlers_validate_with() -> None:
    doc = _description()
    schemas = doc["components"]["schemas"]
    bodies = {
        (method, path): op["requestBody"]["content"]["application/json"]["schema"]
        for path, method, op in _operations(doc)
        if "requestBody" in op
    }
    untyped = [
        key
        for key, schema in bodies.items()
        if schema in ({}, {"type": "object"}, {"additionalProperties": True, "type": "object"})
    ]
    assert not untyped
    trust = bodies[("post", "/api/mcp/servers/{server_id}/trust")]
    assert trust == {"$ref": "#/components/schemas/TrustRequest"}
    assert schemas["TrustRequest"]["required"] == list(TrustRequest.model_json_schema()["required"])
    server = schemas["ServerBody"]
    assert server["discriminator"]["propertyName"] == "transport"
    stdio = schemas["StdioServerConfig"]
    assert {"command", "version", "secret_values"} <= set(stdio["properties"])
    assert stdio["additionalProperties"] is False


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "body", "field", "code"),
    [
        ("/api/mcp/servers/x/trust", {}, "digest", "FIELD_REQUIRED"),
        ("/api/approvals/x", {"decision": "approve", "why": 1}, "why", "FIELD_UNKNOWN"),
        ("/api/approvals/x", {"decision": "maybe"}, "decision", "FIELD_INVALID"),
    ],
)
async def test_a_body_that_breaks_its_model_answers_the_envelope(
    path: str, body: dict[str, Any], field: str, code: str
) -> None:
    """FastAPI validates with the model before the handler runs (no center is needed to refuse it)."""
    async with api_client(create_api(Settings(data_dir=Path("/nonexistent")), API_TOKEN)) as client:
        response = await client.post(path, json=body)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "REQUEST_INVALID"
    assert [(e["field"], e["code"]) for e in error["details"]["errors"]] == [(field, code)]


@pytest.mark.parametrize(
    "body",
    [
        {"content": "{}"},
        {"content": "{}", "format": "cursor"},
        {"content": "{}", "format": "notepad"},
        {"content": "{}", "extra": 1},
        {"content": 5},
        {"format": "auto"},
        [],
    ],
)
def test_the_import_preview_model_and_the_parser_agree(body: object) -> None:
    """The description of a body the route parses itself accepts what the parser accepts (R-1.8)."""
    assert _accepts(lambda: ImportPreview.model_validate(body)) == _accepts(lambda: parse_preview_request(body))


@pytest.mark.parametrize(
    "body",
    [
        {"token": "t", "digest": "d", "content": "{}"},
        {"token": "t", "digest": "d", "content": "{}", "values": {"A": "b"}, "use_defaults": ["C"]},
        {"token": "t", "digest": "d", "content": "{}", "values": None, "use_defaults": None},
        {"token": "t", "digest": "d", "content": "{}", "values": {"A": 1}},
        {"token": "t", "digest": "d", "content": "{}", "use_defaults": "C"},
        {"token": "", "digest": "d", "content": "{}"},
        {"token": "t" * 201, "digest": "d", "content": "{}"},
        {"token": "t", "content": "{}"},
        {"token": "t", "digest": "d", "content": "{}", "format": "vscode"},
        {"token": "t", "digest": "d", "content": "{}", "format": "word"},
        {"token": "t", "digest": "d", "content": "{}", "surprise": True},
    ],
)
def test_the_import_apply_model_and_the_parser_agree(body: object) -> None:
    assert _accepts(lambda: ImportApply.model_validate(body)) == _accepts(lambda: parse_apply_request(body))


def _accepts(parse: Callable[[], object]) -> bool:
    try:
        parse()
    except (ValidationError, RequestInvalid):
        return False
    return True
