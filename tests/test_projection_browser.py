"""``metaharness project A B --html`` loaded in headless Debian Chromium (spec 10 §9): what the browser
parsed (``--dump-dom``), what it fetched (``--log-net-log``) and what it painted (``--screenshot``).

A is spec 20 §10's example stream; B is a live ``metaharness run b10x`` of the real ``b10x-harness``
against the real emulator, whose one allowed program is markup, so the ``run`` call's input carries
it into the page. Each page gets one browser launch; a control page shows the script and request
detectors fire.
"""

from __future__ import annotations

import hashlib
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
from governed_b10x import LOOP, Emulator, common, run, stream, workspace
from PIL import Image
from project_verb import metaharness
from shared_tree import ABSENT, SPEC_EXAMPLE, spec_example_stream

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)
WINDOW = (1280, 1000)
MARKUP = "<img src=x onerror=document.title='ran'><script>alert(1)"
"""The live run's allowed program: no ``/`` (the loop refuses one), an element with a handler and an
unclosed script, each of which would act if the page let it through unescaped."""

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is absent (scripts/test installs the "
                       "Debian chromium package where apt-get is available)"),
    pytest.mark.skipif(not SPEC_EXAMPLE.exists(), reason=ABSENT),
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
    documents: list[dict[str, Any]]
    rendered: Rendered


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    base = tmp_path_factory.mktemp("browser")
    home = base / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    emulator = Emulator("flat-run")
    try:
        done = run(home, ["--decisions", "observe", "--allow-program", MARKUP, *common(emulator.base_url, workspace(base))])
    finally:
        emulator.stop()
    assert done.returncode == 0, done.stderr
    stream(done)
    inputs = [base / "example.jsonl", base / "live.jsonl"]
    inputs[0].write_bytes(spec_example_stream())
    inputs[1].write_bytes(done.stdout)
    documents = []
    for path in inputs:
        projected = metaharness(path.name, cwd=base)
        assert projected.returncode == 0, projected.stderr
        documents.append(json.loads(projected.stdout))
    written = metaharness(inputs[0].name, inputs[1].name, "--html", "page.html", cwd=base)
    assert written.returncode == 0 and written.stdout == b"" and written.stderr == b"", written.stderr
    return Pair(inputs, documents, render(base / "page.html", base / "chromium"))


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


def test_a_header_per_run(pair: Pair) -> None:
    sections = [s for s in pair.rendered.dom.all("section") if s.attrs.get("class") == "run"]
    assert [s.all("h2")[0].text() for s in sections] == [doc["run"] for doc in pair.documents]
    assert pair.documents[0]["run"] == "b10x-48213" and pair.documents[1]["run"].startswith("b10x-")
    for section, path, doc in zip(sections, pair.inputs, pair.documents, strict=True):
        terms = [dt.text() for dt in section.all("dt")]
        values = [dd.text() for dd in section.all("dd")]
        assert dict(zip(terms, values, strict=True)) == {
            "run": doc["run"],
            "source": "metaharness.event/1",
            "transcript digest": hashlib.sha256(path.read_bytes()).hexdigest(),
            "hermetic mode": "off",
            "stream": "complete",
        }
    assert pair.rendered.dom.all("title")[0].text() == f"trace-ir/1: {pair.documents[0]['run']} | {pair.documents[1]['run']}"


def test_one_row_per_node_index_one_column_per_run(pair: Pair) -> None:
    table = pair.rendered.dom.all("table")
    assert len(table) == 1
    heads = [th.text() for th in table[0].all("thead")[0].all("th")]
    assert heads == ["index", *(doc["run"] for doc in pair.documents)]
    rows = table[0].all("tbody")[0].elements("tr")
    lengths = [len(doc["nodes"]) for doc in pair.documents]
    assert lengths == [15, 12]
    assert len(rows) == max(lengths)
    for index, row in enumerate(rows):
        cells = row.elements("td")
        assert len(cells) == 1 + len(pair.documents)
        assert cells[0].text() == str(index)
        for cell, doc in zip(cells[1:], pair.documents, strict=True):
            if index >= len(doc["nodes"]):
                assert (cell.attrs, cell.children) == ({}, []), f"row {index}: a shorter run leaves an empty cell"
                continue
            node = doc["nodes"][index]
            assert cell.attrs["class"] == f"f-{node['family']}"
            spans = {span.attrs["class"]: span.text() for span in cell.elements("span")}
            assert spans == {"seq": str(node["seq"]), "event": node["event"], "family": node["family"]}
    live = [row.elements("td")[2] for row in rows[:lengths[1]]]
    assert [cell.attrs["class"] for cell in live].count("f-tool_call") == 1
    closed = rows[lengths[0] - 1].elements("td")[1].all("div")[0].text()
    assert closed == "completed events=14"


def test_markup_in_an_event_stays_text(pair: Pair) -> None:
    dom = pair.rendered.dom
    call = next(node for node in pair.documents[1]["nodes"] if node["family"] == "tool_call")
    assert call["data"]["input"] == {"argv": [MARKUP]}
    summaries = [div.text() for div in dom.all("div") if div.attrs.get("class") == "summary"]
    assert f'run {call["call_id"]} {{"argv":["{MARKUP}"]}}' in summaries
    assert not dom.all("img") and not dom.all("script")
    assert dom.all("title")[0].text().startswith("trace-ir/1: ")


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


def test_the_page_paints_a_non_blank_image(pair: Pair) -> None:
    shot = pair.rendered.screenshot
    assert shot.size == WINDOW
    colours = shot.getcolors(maxcolors=1 << 16)
    assert colours is not None
    assert len(colours) > 50, "text is antialiased into many shades"
    painted = sum(count for count, colour in colours if colour != (255, 255, 255))
    assert 0.02 < painted / (WINDOW[0] * WINDOW[1]) < 0.9
    tints = {colour for count, colour in colours if count > 500 and len(set(colour)) > 1}
    assert len(tints) >= 3, f"the family classes paint cell backgrounds: {sorted(tints)}"
