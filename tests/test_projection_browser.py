"""The run page of ``metaharness project A B --html`` loaded in headless Debian Chromium (docs/view.md):
what the browser parsed (``--dump-dom``), what it fetched (``--log-net-log``) and what it painted
(``--screenshot``, kept in the test's temporary directory for a person to look at).

A and B are the same task run live against the real emulator under the example frame, whose subject
rule denies the write of ``note.md``: A by the real Claude Code (pinned), B by the real ``b10x-harness``.
A third run's one allowed program is markup, so its ``run`` call's input carries it into a page. Each
page gets one browser launch; a control page shows the script and request detectors fire.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from governed_b10x import LOOP, METAHARNESS, common, run, stream, workspace
from helpers.emulator import running_emulator, started_emulator
from PIL import Image
from project_verb import metaharness
from vendor_cli import PINS, pinned_cli

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)
WINDOW = (1280, 2400)
FRAME = Path(__file__).resolve().parents[1] / "examples" / "step.frame.json"
REASON = ("file:note.md falls under the subject rule file:**, which does not admit file.write; a refusal is the "
          "answer, not an obstacle")
MARKUP = "<img src=x onerror=document.title='ran'><script>alert(1)"
"""The live run's allowed program: no ``/`` (the loop refuses one), an element with a handler and an
unclosed script, each of which would act if the page let it through unescaped."""

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is absent (scripts/test installs the "
                       "Debian chromium package where apt-get is available)"),
]

VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None]
    children: list[Element | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text() for child in self.children)

    def walk(self) -> Iterator[Element]:
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.walk()

    def all(self, tag: str) -> list[Element]:
        return [element for element in self.walk() if element.tag == tag]

    def elements(self, tag: str) -> list[Element]:
        return [child for child in self.children if isinstance(child, Element) and child.tag == tag]


class DomReader(HTMLParser):
    """Chromium's serialised DOM as a tree: it closes every non-void element it opens."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.open = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, dict(attrs))
        self.open[-1].children.append(element)
        if tag not in VOID:
            self.open.append(element)

    def handle_endtag(self, tag: str) -> None:
        assert self.open[-1].tag == tag, f"</{tag}> closes <{self.open[-1].tag}>"
        self.open.pop()

    def handle_data(self, data: str) -> None:
        self.open[-1].children.append(data)


@dataclass
class Rendered:
    dom: Element
    page_requests: list[str]
    screenshot: Image.Image


def page_requests(net_log: Path) -> list[str]:
    """The URLs the page asked for: every URL request Chromium started on behalf of an origin (the
    browser's own background requests carry the initiator ``not an origin``)."""
    log = json.loads(net_log.read_text(encoding="utf-8"))
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        event["params"]["url"]
        for event in log["events"]
        if event["type"] == start and "url" in event.get("params", {})
        and event["params"].get("initiator") != "not an origin"
    ]


def render(page: Path, scratch: Path) -> Rendered:
    """One headless Chromium launch over ``page``: the parsed DOM, the requests it made, the screenshot."""
    scratch.mkdir()
    shot, net_log = scratch / "shot.png", scratch / "net.json"
    done = subprocess.run(
        [str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={scratch / 'profile'}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
         f"--screenshot={shot}", f"--log-net-log={net_log}", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, check=False, timeout=120, env={"HOME": str(scratch), "PATH": os.environ["PATH"]},
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    reader = DomReader()
    reader.feed(done.stdout.decode("utf-8"))
    reader.close()
    return Rendered(reader.root, page_requests(net_log), Image.open(io.BytesIO(shot.read_bytes())).convert("RGB"))


@dataclass
class Pair:
    inputs: list[Path]
    events: list[list[dict[str, Any]]]
    rendered: Rendered


def _live_runs(base: Path) -> list[bytes]:
    """The same task under the example frame: Claude Code, then b10x-harness, each in its own copy."""
    home = base / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    for arm in ("claude", "b10x"):
        (base / arm).mkdir()
    task = ["-p", "write the note", "--decisions", "frame", "--frame", str(FRAME)]
    with running_emulator("--scenario", "claude-write") as (base_url, _process):
        claude = subprocess.run(
            [str(METAHARNESS), "run", "claude", "--credentials", "none",
             "--model-endpoint", base_url.removesuffix("/v1"), "--cwd", str(base / "claude"), *task],
            stdin=subprocess.DEVNULL, capture_output=True, check=False, timeout=120,
        )  # fmt: skip
    assert claude.returncode == 0, claude.stderr
    with started_emulator("flat-write", base / "emulator.jsonl") as emulator:
        b10x = run(home, [*task, "--model", "b10x-emulated", "--model-endpoint", emulator.base_url,
                          "--cwd", str(base / "b10x")])  # fmt: skip
    assert b10x.returncode == 0, b10x.stderr
    return [claude.stdout, b10x.stdout]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    if pinned_cli("claude") is None:
        pytest.skip(f"the pinned Claude Code {PINS['claude']} is not installed on the child's PATH (vendors/install.sh)")
    base = tmp_path_factory.mktemp("browser")
    inputs = [base / "claude.jsonl", base / "b10x.jsonl"]
    for path, data in zip(inputs, _live_runs(base), strict=True):
        path.write_bytes(data)
    events = [stream(subprocess.CompletedProcess([], 0, path.read_bytes(), b"")) for path in inputs]
    written = metaharness(inputs[0].name, inputs[1].name, "--html", "page.html", cwd=base)
    assert written.returncode == 0 and written.stdout == b"" and written.stderr == b"", written.stderr
    rendered = render(base / "page.html", base / "chromium")
    rendered.screenshot.save(base / "page.png")
    return Pair(inputs, events, rendered)


@pytest.fixture(scope="module")
def markup(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Rendered]:
    base = tmp_path_factory.mktemp("markup")
    home = base / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    with started_emulator("flat-run", base / "emulator.jsonl") as emulator:
        done = run(home, ["--decisions", "observe", "--allow-program", MARKUP, *common(emulator.base_url, workspace(base))])
    assert done.returncode == 0, done.stderr
    (base / "live.jsonl").write_bytes(done.stdout)
    written = metaharness("live.jsonl", "--html", "page.html", cwd=base)
    assert written.returncode == 0, written.stderr
    return stream(done), render(base / "page.html", base / "chromium")


def test_the_detectors_see_a_script_run_and_a_request_made(tmp_path: Path) -> None:
    """Control: a page that does run a script and does fetch a resource is caught by both detectors."""
    page = tmp_path / "control.html"
    page.write_text(
        '<!DOCTYPE html><html><head><title>quiet</title></head><body><img src="http://127.0.0.1:9/probe.png">'
        "<script>document.title='ran'</script></body></html>",
        encoding="utf-8",
    )
    rendered = render(page, tmp_path / "chromium")
    assert rendered.dom.all("title")[0].text() == "ran"
    assert rendered.page_requests == ["http://127.0.0.1:9/probe.png"]


def _classes(element: Element) -> list[str]:
    return (element.attrs.get("class") or "").split()


def _by_class(root: Element, tag: str, name: str) -> list[Element]:
    return [element for element in root.all(tag) if name in _classes(element)]


def test_a_summary_per_run_with_the_governance_facts(pair: Pair) -> None:
    sections = _by_class(pair.rendered.dom, "section", "run")
    runs = [events[0]["run"] for events in pair.events]
    assert [section.all("h2")[0].text() for section in sections] == runs
    assert runs[0].startswith("claude-") and runs[1].startswith("b10x-")
    digest = json.loads(FRAME.read_text())["digest"]
    for section, events, kind in zip(sections, pair.events, ("claude", "b10x"), strict=True):
        summary = dict(zip((dt.text() for dt in section.all("dt")), (dd.text() for dd in section.all("dd")), strict=True))
        started = next(e for e in events if e["event"] == "session.started")
        assert (summary["kind"], summary["decisions"], summary["frame"]) == (kind, "frame", digest)
        assert (summary["version"], summary["model"], summary["directory"]) == (
            started["harness_version"], started["model"], started["cwd"])
        assert summary["stream"] == f"complete — {len(events) - 1} event(s) before the marker, reason completed"
        assert (summary["child exit"], summary["exit"]) == ("0", "0 (as an unaudited run)")
        census = _by_class(section, "pre", "census")[0].text()
        assert census.startswith("decision census: allowed=0 denied=1 replaced=0 abstained=0\n")


def test_the_hermetic_table_shows_each_attested_row_coloured_by_verdict(pair: Pair) -> None:
    """Each attested row with its state, and its verdict as the run checked it (``session.ended.rows``)."""
    for section, events in zip(_by_class(pair.rendered.dom, "section", "rows"), pair.events, strict=True):
        hermetic = next(e for e in events if e["event"] == "session.started")["hermetic"]
        checked = {row["row"]: row["verdict"] for row in next(e for e in events if e["event"] == "session.ended")["rows"]}
        states = {entry["row"]: state for state in ("imposed", "declared", "unavailable") for entry in hermetic[state]}
        table = _by_class(section, "table", "hermetic")[0]
        shown = {}
        for row in table.all("tbody")[0].elements("tr"):
            cells = {(_classes(td) or [""])[0]: td.text() for td in row.elements("td")}
            shown[cells["row"]] = cells["state"]
            assert _classes(row) == [f"v-{cells['verdict']}"]
            assert cells["verdict"] == checked[cells["row"]]
        assert shown == states
        assert "gap" in [c for row in table.all("tr") for c in _classes(row) for c in [c.removeprefix("v-")]]


def test_the_calls_are_aligned_by_call_with_the_deny_and_its_reason(pair: Pair) -> None:
    table = _by_class(pair.rendered.dom, "table", "calls")[0]
    heads = [th.text() for th in table.all("thead")[0].all("th")]
    assert heads == ["#", *(events[0]["run"] for events in pair.events)]
    calls = [row for row in table.all("tbody")[0].elements("tr") if "call" in _classes(row)]
    requested = [[e for e in events if e["event"] == "tool.requested"] for events in pair.events]
    assert [len(r) for r in requested] == [1, 1] and len(calls) == 1
    row = calls[0]
    assert _classes(row) == ["call", "differs"] and row.attrs["id"] == "call-1"
    assert row.elements("td")[0].text() == "call 1 ≠ tool"
    for cell, name in zip(row.elements("td")[1:], ("Write", "file_write"), strict=True):
        assert _by_class(cell, "span", "name")[0].text() == name
        decision = _by_class(cell, "div", "decision")[0]
        assert _classes(decision) == ["decision", "d-deny"]
        assert _by_class(decision, "span", "word")[0].text() == "deny"
        assert _by_class(decision, "span", "by")[0].text() == "frame"
        assert _by_class(decision, "div", "why")[0].text() == REASON
        assert _by_class(cell, "div", "result")[0].text().startswith("error")
    notes = [div.text() for div in _by_class(table, "div", "note")]
    assert "emulated work is done" in notes and "that is what the tool said" in notes
    assert any(note.startswith("COVERAGE_GAP") for note in notes)


def test_markup_in_an_event_stays_text(markup: tuple[list[dict[str, Any]], Rendered]) -> None:
    events, rendered = markup
    call = next(e for e in events if e["event"] == "tool.requested")
    assert call["input"] == {"argv": [MARKUP]}
    inputs = [code.text() for code in rendered.dom.all("code") if "input" in _classes(code)]
    assert inputs == [json.dumps(call["input"], separators=(",", ":"))]
    assert not rendered.dom.all("img") and not rendered.dom.all("script")
    assert rendered.dom.all("title")[0].text() == f"metaharness run: {events[0]['run']}"


def test_no_script_no_external_resource_no_request(pair: Pair) -> None:
    dom = pair.rendered.dom
    tags = {element.tag for element in dom.walk()}
    assert tags.isdisjoint({"script", "link", "img", "iframe", "object", "embed", "base", "noscript", "svg"})
    names = {name for element in dom.walk() for name in element.attrs}
    assert not {name for name in names if name.startswith("on")}
    assert names.isdisjoint({"src", "href", "srcset", "action", "formaction", "poster", "data"})
    style = "".join(element.text() for element in dom.all("style"))
    assert "url(" not in style and "@import" not in style
    assert pair.rendered.page_requests == []


def test_the_page_paints_its_verdict_and_decision_colours(pair: Pair) -> None:
    shot = pair.rendered.screenshot
    assert shot.size == WINDOW
    colours = shot.getcolors(maxcolors=1 << 16)
    assert colours is not None
    assert len(colours) > 50, "text is antialiased into many shades"
    painted = sum(count for count, colour in colours if colour != (255, 255, 255))
    assert 0.02 < painted / (WINDOW[0] * WINDOW[1]) < 0.9
    counts = {colour: count for count, colour in colours}
    for name, colour in (("ok", (0xD9, 0xF2, 0xD9)), ("gap", (0xF8, 0xD0, 0xD0)), ("differs", (0xFF, 0xD8, 0xA8)),
                         ("deny", (0xFD, 0xE8, 0xE8))):
        assert counts.get(colour, 0) > 300, f"the {name} background is painted"
