"""The project's knowledge stays in the repository: citations and pointers in the code lead somewhere.

The code cites requirements as R-numbers (a requirement like `R-1.5`, or a whole group like `R-4`)
and points into the documentation as `docs/<page>.md#<anchor>`. In a clone, both must resolve:

- every R-number cited in `src/`, `tests/`, `scripts/`, README.md or a docs page has an anchor in
  `docs/requirements.md`, whose numbering has no gaps;
- every `docs/<page>.md` pointer names an existing page and, with `#anchor`, an anchor on it; links
  between docs pages resolve the same way;
- every repository path a docs page names in backticks exists;
- every relative Markdown link (`[text](path#anchor)`, images too) in README.md or a docs page points
  at an existing file and, into a Markdown page, an existing anchor;
- nothing points at the team's notes outside the repository, and a seed section cited in the code
  carries a `docs/decisions.md` pointer next to it.

Anchors are explicit `<a id="...">` tags (what our pages use) and GitHub's heading slugs. This file
is not scanned itself: it plants citations and pointers that must not resolve.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "mcp_center"
SCANNED = ("src", "tests", "scripts", "README.md", "docs")
"""Where citations and docs pointers are looked for (relative to the repository root)."""
CODE = ("src", "tests", "scripts", "README.md")
"""Where pointers outside the repository are not allowed."""
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})
TEXT_SUFFIXES = frozenset({"", ".py", ".js", ".css", ".html", ".md", ".toml", ".yml", ".yaml", ".txt", ".json", ".sh"})

CITATION = re.compile(r"(?<![A-Za-z0-9_])R-(\d+)(?:\.(\d+))?(?!\d)")
POINTER = re.compile(r"(?<![\w/.-])docs/([\w.-]+\.md)(?:#([\w.-]+))?")
DOCS_LINK = re.compile(r"\]\(([\w.-]+\.md)?(?:#([\w.-]+))?\)")
ANCHOR_TAG = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.MULTILINE | re.DOTALL)
BACKTICKED = re.compile(r"`([^`\s]+)`")
REPO_PATH = re.compile(
    r"^(?:(?:src|tests|scripts|docs|\.ci)/[\w./-]*|[\w.-]+(?:/[\w.-]+)+\.(?:py|js|css|html|yml|toml))$"
)
OUTSIDE_NOTES = re.compile(r"shared/notes|notes/sdk-2\.3|notes sdk-2\.3|notes\s+§", re.IGNORECASE)
SEED_SECTION = re.compile(r"\bseed 0\d\d\b", re.IGNORECASE)


@dataclass(frozen=True)
class Found:
    """One match in a scanned file: where (`path` relative to the root, 1-based `line`) and what."""

    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


def _files_under(start: Path) -> list[Path]:
    """Files under `start` (sorted), not descending into hidden or vendored dirs: a fresh clone's
    tests/e2e/node/node_modules alone holds ~11,000 files (issue 16: each scan walked them all)."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(start):
        dirs[:] = [name for name in dirs if name not in SKIPPED_DIRS and not name.startswith(".")]
        found += (Path(folder) / name for name in files)
    return sorted(found)


def _text_files(root: Path, tops: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    """`(relative path, text)` of every text file under `tops`, skipping hidden and vendored dirs."""
    here = Path(__file__).resolve()
    for top in tops:
        start = root / top
        paths = [start] if start.is_file() else _files_under(start) if start.is_dir() else []
        for path in paths:
            if path.suffix not in TEXT_SUFFIXES or not path.is_file() or path.resolve() == here:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue  # a binary file cannot cite anything
            yield path.relative_to(root).as_posix(), text


def _matches(pattern: re.Pattern[str], path: str, text: str) -> Iterator[tuple[Found, re.Match[str]]]:
    for match in pattern.finditer(text):
        yield Found(path, text.count("\n", 0, match.start()) + 1, match.group(0)), match


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: tags and punctuation dropped, lower case, spaces to `-`."""
    text = re.sub(r"<[^>]+>", "", heading).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(markdown: str) -> set[str]:
    """Explicit `<a id>` / `<a name>` anchors and heading slugs (numbered like GitHub's) of a page."""
    text = FENCE.sub("", markdown)
    anchors = set(ANCHOR_TAG.findall(text))
    seen: dict[str, int] = {}
    for heading in HEADING.findall(text):
        slug = github_slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def missing_requirements(root: Path) -> list[Found]:
    """Citations of an R-number that `docs/requirements.md` has no anchor for."""
    documented = anchors_of((root / "docs" / "requirements.md").read_text(encoding="utf-8"))
    return [
        found
        for path, text in _text_files(root, SCANNED)
        for found, _match in _matches(CITATION, path, text)
        if found.text not in documented
    ]


def broken_pointers(root: Path) -> list[Found]:
    """`docs/<page>.md[#anchor]` pointers, and links between docs pages, that lead nowhere."""
    docs = root / "docs"
    pages = {page.name: anchors_of(page.read_text(encoding="utf-8")) for page in docs.glob("*.md")}
    broken: list[Found] = []
    for path, text in _text_files(root, SCANNED):
        for found, match in _matches(POINTER, path, text):
            page, anchor = match.group(1), match.group(2)
            if page not in pages or (anchor is not None and anchor not in pages[page]):
                broken.append(found)
        if path.startswith("docs/") and path.endswith(".md") and "/" not in path.removeprefix("docs/"):
            for found, match in _matches(DOCS_LINK, path, text):
                page = match.group(1) or path.removeprefix("docs/")
                anchor = match.group(2)
                if page not in pages or (anchor is not None and anchor not in pages[page]):
                    broken.append(found)
    return broken


def missing_paths(root: Path) -> list[Found]:
    """Repository paths named in backticks on a docs page that do not exist (from the root, or from
    `src/mcp_center/`, which the pages use as the base for module paths)."""
    missing: list[Found] = []
    for path, text in _text_files(root, ("docs",)):
        if not path.endswith(".md"):
            continue
        for found, match in _matches(BACKTICKED, path, FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)):
            named = match.group(1)
            if REPO_PATH.match(named) and not any(
                (base / named).exists() for base in (root, root / "src" / "mcp_center")
            ):
                missing.append(found)
    return missing


MARKDOWN_LINK = re.compile(r"!?\[[^\]\n]*\]\(([^()\s]+)\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def broken_links(root: Path) -> list[Found]:
    """Relative links of README.md and the docs pages (`[text](target)`, `![alt](image)`, outside code
    fences) whose file is missing, or whose `#anchor` the Markdown page they name lacks. A bare
    `#anchor` is on the page itself; `http(s):` and other schemes are not followed."""
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    broken: list[Found] = []
    for page in pages:
        if not page.is_file():
            continue
        text = page.read_text(encoding="utf-8")
        blanked = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        for found, match in _matches(MARKDOWN_LINK, page.relative_to(root).as_posix(), blanked):
            target = match.group(1)
            if EXTERNAL.match(target):
                continue
            path_part, _, anchor = target.partition("#")
            linked = (page.parent / path_part).resolve() if path_part else page
            if not linked.exists():
                broken.append(found)
                continue
            if anchor and linked.suffix == ".md" and anchor not in anchors_of(linked.read_text(encoding="utf-8")):
                broken.append(found)
    return broken


def test_every_relative_link_in_the_readme_and_docs_resolves() -> None:
    """readme40: README.md became a short page linking into docs/; each of those links (and the docs
    pages' links back, images included) must lead to a file and an anchor that exist."""
    broken = broken_links(ROOT)
    assert not broken, "links to a missing file or anchor:\n" + "\n".join(map(str, broken))


def test_the_link_check_reports_what_was_planted(tmp_path: Path) -> None:
    """The link check can fail: a missing page, a missing anchor, a missing image are reported; a link
    to an existing page, anchor, image or the web is not, nor a link inside a code fence."""
    (tmp_path / "docs" / "img").mkdir(parents=True)
    (tmp_path / "docs" / "img" / "a.png").write_bytes(b"png")
    (tmp_path / "README.md").write_text(
        '# Title\n\n## <a id="start"></a>Start here\n\n[ok](docs/guide.md#usage) [gone](docs/gone.md) '
        "[bad anchor](docs/guide.md#nowhere) [here](#start) [web](https://example.com/x#y)\n\n"
        "```md\n[fenced](docs/fenced.md)\n```\n",
        encoding="utf-8",
    )
    (tmp_path / "docs" / "guide.md").write_text(
        "# Guide\n\n## Usage\n\n![shot](img/a.png) ![missing](img/b.png) [back](../README.md#start) "
        "[back wrong](../README.md#usage)\n",
        encoding="utf-8",
    )
    assert [str(f) for f in broken_links(tmp_path)] == [
        "README.md:5: [gone](docs/gone.md)",
        "README.md:5: [bad anchor](docs/guide.md#nowhere)",
        "docs/guide.md:5: ![missing](img/b.png)",
        "docs/guide.md:5: [back wrong](../README.md#usage)",
    ]


def test_every_cited_requirement_has_an_entry_in_docs_requirements() -> None:
    missing = missing_requirements(ROOT)
    assert not missing, "add these to docs/requirements.md (or fix the citation):\n" + "\n".join(map(str, missing))


def test_every_docs_pointer_names_an_existing_page_and_anchor() -> None:
    broken = broken_pointers(ROOT)
    assert not broken, "pointers to a missing docs page or anchor:\n" + "\n".join(map(str, broken))


def test_every_path_a_docs_page_names_exists() -> None:
    missing = missing_paths(ROOT)
    assert not missing, "docs name paths that do not exist (moved or renamed?):\n" + "\n".join(map(str, missing))


def test_requirements_are_numbered_without_gaps() -> None:
    anchors = anchors_of((ROOT / "docs" / "requirements.md").read_text(encoding="utf-8"))
    numbers: dict[int, set[int]] = {}
    for anchor in anchors:
        match = re.fullmatch(r"R-(\d+)\.(\d+)", anchor)
        if match:
            numbers.setdefault(int(match.group(1)), set()).add(int(match.group(2)))
    assert sorted(numbers) == list(range(1, max(numbers) + 1))
    for group, items in numbers.items():
        assert f"R-{group}" in anchors, f"R-{group} has no group anchor"
        assert sorted(items) == list(range(1, max(items) + 1)), f"R-{group} has gaps: {sorted(items)}"


def test_the_code_does_not_point_at_notes_outside_the_repository() -> None:
    outside = [found for path, text in _text_files(ROOT, CODE) for found, _m in _matches(OUTSIDE_NOTES, path, text)]
    assert not outside, "point at docs/sdk-notes.md#<anchor> instead:\n" + "\n".join(map(str, outside))


def test_a_seed_section_cited_in_the_code_carries_a_decisions_pointer() -> None:
    bare: list[Found] = []
    for path, text in _text_files(ROOT, CODE):
        lines = text.splitlines()
        for found, _match in _matches(SEED_SECTION, path, text):
            nearby = " ".join(lines[found.line - 1 : found.line + 1])
            if "docs/decisions.md#" not in nearby:
                bare.append(found)
    assert not bare, "add a docs/decisions.md#seed-NNN-N pointer next to:\n" + "\n".join(map(str, bare))


def test_the_checks_report_what_was_planted(tmp_path: Path) -> None:
    """The checks above can fail: a tree with one planted fault of each kind gets exactly those reported."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "src" / "mcp_center").mkdir(parents=True)
    (tmp_path / "docs" / "requirements.md").write_text(
        '# Requirements\n\n## <a id="R-1"></a>R-1 Group\n\n### <a id="R-1.1"></a>R-1.1 First\n\n'
        "```\n## Fenced heading\n```\n\n## Plain heading\n\nSee `tests/gone.py`, not `src/`.\n",
        encoding="utf-8",
    )
    (tmp_path / "docs" / "notes.md").write_text(
        "# Notes\n\n[ok](requirements.md#R-1.1) [bad](requirements.md#nowhere) [here](#notes)\n", encoding="utf-8"
    )
    (tmp_path / "src" / "mcp_center" / "mod.py").write_text(
        '"""Cites R-1, R-1.1 and R-1.2 (docs/requirements.md#R-1.1, docs/requirements.md#plain-heading).\n\n'
        "Broken: docs/requirements.md#R-9.9, docs/missing.md, docs/requirements.md#fenced-heading, R-12.\n"
        'Not pointers: /api/servers/docs/x.md, R-1.1x.\n"""\n',
        encoding="utf-8",
    )
    assert [str(f) for f in missing_requirements(tmp_path)] == [
        "src/mcp_center/mod.py:1: R-1.2",
        "src/mcp_center/mod.py:3: R-9.9",
        "src/mcp_center/mod.py:3: R-12",
    ]
    assert [str(f) for f in broken_pointers(tmp_path)] == [
        "src/mcp_center/mod.py:3: docs/requirements.md#R-9.9",
        "src/mcp_center/mod.py:3: docs/missing.md",
        "src/mcp_center/mod.py:3: docs/requirements.md#fenced-heading",
        "docs/notes.md:3: ](requirements.md#nowhere)",
    ]
    assert [str(f) for f in missing_paths(tmp_path)] == ["docs/requirements.md:13: `tests/gone.py`"]


REQUIREMENT_OR_SECTION = re.compile(r"\bR-\d+(\.\d+)?\b|README: ")


def _strings_outside_docstrings(tree: ast.AST) -> Iterator[ast.Constant]:
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            docstrings.add(id(node.value))  # a docstring, or an attribute's docstring after it
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node


def test_no_user_facing_string_names_a_requirement_number_or_a_readme_section() -> None:
    """trial38: `list` ended with `(README: "Run a local server in a sandbox", R-11.1)`; messages, API
    summaries and hints say the command or doc path instead. Docstrings and comments keep them (ux39)."""
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value[:80]!r}"
        for path in sorted((ROOT / "src").rglob("*.py"))
        for node in _strings_outside_docstrings(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node.value, str) and REQUIREMENT_OR_SECTION.search(node.value)
    ]
    assert not found, "\n".join(found)
