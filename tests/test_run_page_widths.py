"""The run page read at a desktop's 1400 px and a phone's 390 px, in headless Debian Chromium
(docs/view.md#the-run-page-metaharness-project-a-b---html-file---report-file): at 390 px the two runs
stack and every column keeps a readable width, so the page grows a little taller rather than running
its text down one character per line; a truncated stream's line is red. The screenshots stay in the
test's temporary directory for a person to look at. The streams are a live b10x run against the real
emulator and the recorded ask run beside it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from governed_b10x import LOOP, METAHARNESS, common, workspace
from helpers.emulator import started_emulator
from PIL import Image

CHROMIUM = Path("/usr/bin/chromium")
RECORDED = Path(__file__).with_name("streams") / "b10x-ask-deny.jsonl"
FRAME = Path(__file__).resolve().parents[1] / "examples" / "step.frame.json"
TALL = 16000
TRUNCATED_RED = (248, 208, 208)

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is absent (scripts/test installs it)")


def screenshot(page: Path, width: int, shot: Path, profile: Path) -> Image.Image:
    subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--hide-scrollbars", f"--user-data-dir={profile}", f"--window-size={width},{TALL}",
                    f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120, check=True)  # fmt: skip
    return Image.open(shot).convert("RGB")


def content_height(image: Image.Image) -> int:
    """The last painted row: where the page's content ends."""
    grey = image.convert("L")
    width, height = grey.size
    return max(y for y in range(0, height, 2) if any(grey.getpixel((x, y)) < 200 for x in range(0, width, 3)))


def project(tmp_path: Path, *streams: Path) -> Path:
    page = tmp_path / f"page-{len(list(tmp_path.glob('page-*')))}.html"
    done = subprocess.run([str(METAHARNESS), "project", *map(str, streams), "--html", str(page)], capture_output=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    return page


def test_the_page_reads_at_1400_and_at_390_pixels(tmp_path: Path) -> None:
    home, events = tmp_path / "home", tmp_path / "live.jsonl"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    with started_emulator("flat-write", tmp_path / "emulator.jsonl") as emulator:
        argv = [str(METAHARNESS), "run", "b10x", "--frame", str(FRAME), "--events", str(events),
                *common(emulator.base_url, workspace(tmp_path))]  # fmt: skip
        subprocess.run(argv, env={"HOME": str(home), "PATH": os.environ["PATH"]}, stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=120, check=True)  # fmt: skip
    page = project(tmp_path, events, RECORDED)
    html = page.read_text(encoding="utf-8")
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    wide = screenshot(page, 1400, tmp_path / "page-1400.png", tmp_path / "profile")
    narrow = screenshot(page, 390, tmp_path / "page-390.png", tmp_path / "profile")
    ratio = content_height(narrow) / content_height(wide)
    assert ratio < 3.5, f"at 390 px the page is {ratio:.1f} times as tall as at 1400 px: its text runs down"


def test_a_truncated_stream_is_red(tmp_path: Path) -> None:
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(RECORDED.read_bytes().splitlines(keepends=True)[:6]))
    page = project(tmp_path, cut)
    assert '<dd class="s-truncated">TRUNCATED — no `stream.closed` marker' in page.read_text(encoding="utf-8")
    shot = screenshot(page, 390, tmp_path / "truncated-390.png", tmp_path / "profile")
    assert TRUNCATED_RED in {colour for _, colour in shot.getcolors(maxcolors=1 << 20) or ()}
