"""The project explains itself: no source or page cites a section of a document outside the repository
("spec 20 §8.3", "page 70 §5", a bare "§8.4"), every link between the pages of ``docs/`` lands on a file
and a heading that exist, and every page is reachable from ``docs/DEVELOPING.md``'s Reference list."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEARCHED = ("pure", "shell", "tests", "properties", "benchmarks", "docs", "vectors", "scripts", "vendors", "README.md")
THIS_FILE = Path(__file__).resolve()
SECTION_SIGN = "\N{SECTION SIGN}"
PUBLIC_STANDARD = re.compile(r"\b(?:RFC|POSIX|ISO)\s*[\d.:-]*\s*$")
"""A section of a public standard (``RFC 9110`` and the like) is not an outside document of this project."""
WRITTEN_ELSEWHERE = {"confinement.md", "eval.md", "view.md", "vendor-facts.md", "loop-extensions.md"}
"""Pages other branches write; a link to one is checked once it exists."""
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")


def text_files() -> list[Path]:
    found = []
    for name in SEARCHED:
        path = ROOT / name
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found += [
                sub
                for sub in sorted(path.rglob("*"))
                if sub.is_file()
                and not {"__pycache__", "node_modules"} & set(sub.parts)
                and sub.suffix not in {".pyc", ".sse", ".body"}
            ]
    return [path for path in found if path.resolve() != THIS_FILE]


def outside_references(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return []
    hits = []
    for number, line in enumerate(text.splitlines(), start=1):
        for found in re.finditer(SECTION_SIGN, line):
            if not PUBLIC_STANDARD.search(line[: found.start()]):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    return hits


def test_no_source_or_page_cites_a_section_of_an_outside_document() -> None:
    hits = [hit for path in text_files() for hit in outside_references(path)]
    first = "\n".join(hits[:20])
    assert len(hits) == 0, f"references to a document outside the repository; point into docs/ instead. First:\n{first}"


def test_the_reference_check_sees_what_it_must() -> None:
    sample = ROOT / "docs" / "DEVELOPING.md"
    assert sample in text_files()
    cited = f"the deadline rule (spec 20 {SECTION_SIGN}8.5) and a bare {SECTION_SIGN}8.4"
    assert len([found for found in re.finditer(SECTION_SIGN, cited) if not PUBLIC_STANDARD.search(cited[: found.start()])]) == 2
    standard = f"any content coding (RFC 9110 {SECTION_SIGN}12.5.3)"
    assert not [found for found in re.finditer(SECTION_SIGN, standard) if not PUBLIC_STANDARD.search(standard[: found.start()])]


def anchor_of(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, marks other than ``-`` and ``_`` dropped, spaces as ``-``."""
    text = heading.strip().lower().replace("`", "").replace("*", "")
    kept = "".join(char for char in text if char in " -_" or unicodedata.category(char)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        heading = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*$", line)
        if heading:
            base = anchor_of(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[tuple[str, str]]:
    """(target path, anchor) of each relative link on a page, outside code blocks and code spans."""
    out = []
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, fragment = target.partition("#")
            out.append((path, fragment))
    return out


PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_link_between_pages_lands_on_a_heading(page: Path) -> None:
    broken = []
    for path, fragment in links(page):
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            if target.name in WRITTEN_ELSEWHERE:
                continue
            broken.append(f"{path}: no such file")
        elif fragment and target.suffix == ".md" and fragment not in anchors(target):
            broken.append(f"{path}#{fragment}: no such heading")
    assert not broken, broken


def test_every_page_is_reachable_from_the_reference_list() -> None:
    start = ROOT / "docs" / "DEVELOPING.md"
    reached = {start}
    frontier = [start]
    while frontier:
        page = frontier.pop()
        for path, _ in links(page):
            target = (page.parent / path).resolve()
            if target.suffix == ".md" and target.exists() and target not in reached:
                reached.add(target)
                frontier.append(target)
    unreached = [str(page.relative_to(ROOT)) for page in (ROOT / "docs").rglob("*.md") if page.resolve() not in reached]
    assert not unreached, unreached


def test_anchors_follow_github() -> None:
    assert anchor_of("Claude's memory canary") == "claudes-memory-canary"
    assert anchor_of("`mcp-serve`") == "mcp-serve"
    assert anchor_of("1. Write the document") == "1-write-the-document"
    assert anchor_of("Catalogue (app-server)") == "catalogue-app-server"


POINTER = re.compile(r"\bdocs/([A-Za-z0-9_/-]+\.md)#([a-z0-9_-]+)")


def test_every_pointer_from_the_code_into_docs_lands_on_a_heading() -> None:
    """A docstring or comment that names ``docs/<page>.md#<anchor>`` names a heading that page has."""
    broken = []
    for path in text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for page, anchor in POINTER.findall(text):
            target = ROOT / "docs" / page
            if target.exists() and anchor not in anchors(target):
                broken.append(f"{path.relative_to(ROOT)}: docs/{page}#{anchor}")
    assert broken == []
