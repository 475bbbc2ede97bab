"""The settings page's static files under a versioned path, and the modules a page script imports.

The pages name their styles and scripts under `/static/v-<version>/...`, where the version is a
digest of every file under `static/`: such an answer never changes, so browsers keep it
(`immutable`) and a reused profile loads the page without asking for any of them again; an
upgrade changes the version, hence every URL. The plain `/static/...` paths stay, revalidated on
every load (`no-cache`, ETag), for what links them directly (the OAuth callback page). A versioned
path with another version (a page from before an upgrade) is answered from the current files,
not cached.

The page shell also lists every module its script imports, transitively, as
`<link rel="modulepreload">`: the browser fetches them side by side from the start instead of
one level of imports after another.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

__all__ = ["STATIC_DIR", "VersionedStaticFiles", "module_imports", "static_prefix", "static_version"]

STATIC_DIR = Path(__file__).parent / "static"
IMMUTABLE = "public, max-age=31536000, immutable"
"""Cache-Control of a file under the current version: a year, never revalidated."""
REVALIDATE = "no-cache"
"""Cache-Control of every other static answer: kept, but revalidated (ETag) on each use."""

_IMPORT = re.compile(r"""^\s*(?:import|export)\s[^;]*?\bfrom\s+["'](\./[\w.-]+\.js)["']""", re.MULTILINE)


@functools.cache
def static_version() -> str:
    """A digest of every file under `static/` (names and bytes): 12 hex characters, read once per process."""
    digest = hashlib.sha256()
    for path in sorted(p for p in STATIC_DIR.rglob("*") if p.is_file()):
        digest.update(path.relative_to(STATIC_DIR).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def static_prefix() -> str:
    """The URL path the pages load their static files from: `/static/v-<version>` (no trailing slash)."""
    return f"/static/v-{static_version()}"


@functools.cache
def module_imports(entry: str) -> tuple[str, ...]:
    """The modules `static/js/<entry>` imports, transitively, as paths under `static/`
    (e.g. `js/dom.js`), in the order first found; `entry` itself is not among them.

    Only static `import ... from "./x.js"` (and `export ... from`) statements of the same folder count,
    the only kind the page's modules use. Read once per process.

    Raises:
        FileNotFoundError: `entry` or a module it imports does not exist.
    """
    found: list[str] = []
    todo = [entry]
    while todo:
        name = todo.pop(0)
        text = (STATIC_DIR / "js" / name).read_text(encoding="utf-8")
        for spec in _IMPORT.findall(text):
            imported = spec.removeprefix("./")
            if imported != entry and f"js/{imported}" not in found:
                found.append(f"js/{imported}")
                todo.append(imported)
    return tuple(found)


class VersionedStaticFiles(StaticFiles):
    """`static/` at `/static/<path>` (revalidated) and `/static/v-<version>/<path>` (immutable when the
    version is the current one); every answer says `nosniff`."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        cache = REVALIDATE
        first, _, rest = path.partition("/")
        if first.startswith("v-") and rest:
            path = rest
            if first == f"v-{static_version()}":
                cache = IMMUTABLE
        response = await super().get_response(path, scope)
        response.headers["Cache-Control"] = cache
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response
