"""``project`` in two passes (docs/cli.md#project): the document it streams is byte for byte the document
written whole, on every vector and under ``--from KIND``; an input read once (a FIFO, ``/dev/stdin``) is
copied into a memory file nobody else can name, sealed and checked before the second pass, so another
process writing or mapping it is refused; a refusal leaves ``--out`` and stdout untouched; the input's
bound is checked before its lines are."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest
from project_verb import metaharness

from metaharness.pure.adapter import ReplayRequest
from metaharness.pure.adapters import adapter_of
from metaharness.pure.bounds import INPUT_FILE_LIMIT
from metaharness.pure.kind import Kind
from metaharness.pure.projection import document_text, project_stream
from metaharness.pure.replays import replay_whole
from metaharness.shell.project import run_project

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
KINDS: tuple[Kind, ...] = get_args(Kind)
STREAMS = sorted(VECTORS.rglob("*.expected.jsonl"))
RECORDS = sorted(
    (kind, path)
    for kind in KINDS
    for path in (VECTORS / kind).rglob("*.jsonl")
    if not path.name.endswith(".expected.jsonl")
)


def _whole(name: str, data: bytes, kind: Kind | None = None) -> bytes:
    """The document as ``project`` wrote it when it held the input and the document whole."""
    if kind is None:
        return document_text(project_stream(name, data).unwrap()).encode("utf-8")
    mapped = replay_whole(kind, data, ReplayRequest(transcript_path=name)).stream
    projected = project_stream(name, mapped, source=adapter_of(kind).record_source, record=data)
    return document_text(projected.unwrap()).encode("utf-8")


@pytest.mark.parametrize("path", STREAMS, ids=lambda path: str(path.relative_to(VECTORS)))
def test_every_vector_stream_projects_byte_for_byte(path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert run_project([str(path)], target="trace-ir", out=None, html=None, source=None) == 0
    assert capsysbinary.readouterr().out == _whole(str(path), path.read_bytes())


@pytest.mark.parametrize(("kind", "path"), RECORDS, ids=lambda value: str(value).rsplit("vectors/", 1)[-1])
def test_every_vector_record_projects_from_its_kind_byte_for_byte(
    kind: Kind, path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "doc.json"
    assert run_project([str(path)], target="trace-ir", out=str(out), html=None, source=kind) == 0
    assert out.read_bytes() == _whole(str(path), path.read_bytes(), kind)


def _events(count: int) -> bytes:
    """A stream of ``count`` text events and its closing marker, longer than one read."""
    line = '{{"format":"metaharness.event/1","seq":{seq},"run":"r","event":"text","text":"{text}","request_id":null}}\n'
    body = "".join(line.format(seq=seq, text="é" * 40) for seq in range(1, count + 1))
    closing = (f'{{"format":"metaharness.event/1","seq":{count + 1},"run":"r","event":"stream.closed",'
               f'"events":{count},"reason":"completed","run_id":"r","process":{{"kind":"exited","code":0}}}}\n')  # fmt: skip
    return (body + closing).encode("utf-8")


def _copy_fd(pid: int, deadline: float) -> str:
    """The ``/proc`` path of ``pid``'s scratch copy, once it is open."""
    while True:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/memfd:metaharness-project"):
                    return f"/proc/{pid}/fd/{fd}"
            except FileNotFoundError:
                continue
        assert time.monotonic() < deadline, "the copy was never opened"
        time.sleep(0.01)


class _Fifo:
    """``metaharness project FIFO`` started with ``TMPDIR`` an empty folder; ``feed`` writes the FIFO's first
    half and hands over the copy's ``/proc`` path while the verb still reads, then writes the rest."""

    def __init__(self, tmp_path: Path, data: bytes) -> None:
        self.data = data
        self.fifo = tmp_path / "events.fifo"
        os.mkfifo(self.fifo)
        self.scratch = tmp_path / "tmp"
        self.scratch.mkdir()
        script = Path(sys.executable).with_name("metaharness")
        self.child = subprocess.Popen([str(script), "project", str(self.fifo)], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": str(self.scratch)})  # fmt: skip

    def feed(self) -> Iterator[str]:
        with self.fifo.open("wb") as writer:
            writer.write(self.data[: len(self.data) // 2])
            writer.flush()
            yield _copy_fd(self.child.pid, time.monotonic() + 30)
            writer.write(self.data[len(self.data) // 2 :])


def test_a_fifo_is_copied_once_into_a_memory_file_with_no_name(tmp_path: Path) -> None:
    """While the verb reads a FIFO its copy is open, and no directory (the temporary one included) names it."""
    fed = _Fifo(tmp_path, _events(3000))
    with fed.child:
        for copy in fed.feed():
            assert os.readlink(copy) == "/memfd:metaharness-project (deleted)"
            assert os.listdir(fed.scratch) == []
        out, err = fed.child.communicate(timeout=60)
    assert fed.child.returncode == 0, err
    assert out == _whole(str(fed.fifo), fed.data)


def test_a_copy_written_through_proc_before_its_seal_is_refused(tmp_path: Path) -> None:
    """Hostile: another process of the same user opens the copy through ``/proc/<pid>/fd`` while the first
    pass reads and overwrites what was already copied. The copy is read back once sealed, so the verb
    refuses ``scratch-copy-changed`` and writes nothing."""
    fed = _Fifo(tmp_path, _events(3000))
    with fed.child:
        for copy in fed.feed():
            forged = os.open(copy, os.O_WRONLY)
            os.pwrite(forged, b'{"format":"metaharness.event/1","seq":1,"run":"forged"', 0)
            os.close(forged)
        out, err = fed.child.communicate(timeout=60)
    assert fed.child.returncode == 2 and out == b""
    assert err == (f"metaharness: scratch-copy-changed: {fed.fifo}: the scratch copy of its stream was written by "
                   "another process before it was sealed\n").encode()  # fmt: skip


def test_a_copy_mapped_for_writing_cannot_be_sealed_and_is_refused(tmp_path: Path) -> None:
    """Hostile: a shared writable mapping of the copy would let its holder change it after the check; the
    seal is then refused by the kernel (``EBUSY``) and so is the projection."""
    fed = _Fifo(tmp_path, _events(3000))
    with fed.child:
        mapped = []
        for copy in fed.feed():
            forged = os.open(copy, os.O_RDWR)
            mapped.append(mmap.mmap(forged, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE))
            os.close(forged)
        out, err = fed.child.communicate(timeout=60)
        mapped[0].close()
    assert fed.child.returncode == 2 and out == b""
    assert err.startswith(f"metaharness: scratch-copy-changed: {fed.fifo}: the scratch copy of its stream could "
                          "not be sealed: ".encode())  # fmt: skip


def test_a_sealed_copy_refuses_every_write(tmp_path: Path) -> None:
    """Hostile: a descriptor for writing opened on the copy before its seal can write nothing once the
    document is being written (the seal came first), and the document is the input's."""
    fed = _Fifo(tmp_path, _events(3000))
    with fed.child:
        held = []
        for copy in fed.feed():
            held.append(os.open(copy, os.O_WRONLY))
        assert fed.child.stdout is not None
        first = fed.child.stdout.read(1)
        with pytest.raises(PermissionError):
            os.pwrite(held[0], b"forged", 0)
        os.close(held[0])
        rest = fed.child.stdout.read()
        assert fed.child.wait(timeout=60) == 0
    assert first + rest == _whole(str(fed.fifo), fed.data)


def test_dev_stdin_is_read_once(tmp_path: Path) -> None:
    data = _events(2000)
    script = Path(sys.executable).with_name("metaharness")
    done = subprocess.run([str(script), "project", "/dev/stdin"], input=data, capture_output=True, check=False,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == _whole("/dev/stdin", data)


def test_a_bad_last_line_leaves_out_and_stdout_untouched(tmp_path: Path) -> None:
    """The first pass reads every line before a byte is written: a bad line past the first read refuses
    with ``--out``'s old bytes in place and nothing on stdout."""
    (tmp_path / "bad.jsonl").write_bytes(_events(2000) + b"[1]\n")
    (tmp_path / "doc.json").write_bytes(b"before\n")
    for args in (["bad.jsonl"], ["bad.jsonl", "--out", "doc.json"], ["bad.jsonl", "--out", "doc.json", "--html", "p.html"]):
        result = metaharness(*args, cwd=tmp_path)
        assert result.returncode == 2 and result.stdout == b""
        assert result.stderr.startswith(b"metaharness: projection-unreadable: bad.jsonl line 2002: ")
        assert (tmp_path / "doc.json").read_bytes() == b"before\n"
        assert not (tmp_path / "p.html").exists()


def test_the_input_bound_is_refused_before_a_bad_line(tmp_path: Path) -> None:
    """An input past 128 MiB is refused as too large even when its first line is already unreadable, as when
    the input was read whole before its lines."""
    big = tmp_path / "big.jsonl"
    with big.open("wb") as handle:
        handle.write(b"not an event\n")
        handle.truncate(INPUT_FILE_LIMIT + 1)
    result = metaharness("big.jsonl", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr == f"metaharness: projection-unreadable: big.jsonl: cannot be read: larger than {INPUT_FILE_LIMIT} bytes\n".encode()


def test_a_reader_closing_stdout_stops_the_projection_with_stdout_closed(tmp_path: Path) -> None:
    """``project … | head -c 10``: the document is written as it is made, so its reader can go away before its
    end; the verb then stops with ``stdout-closed`` and exit 2, never exit 0 for a document cut short."""
    (tmp_path / "a.jsonl").write_bytes(_events(20000))
    script = Path(sys.executable).with_name("metaharness")
    with subprocess.Popen([str(script), "project", "a.jsonl"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          cwd=tmp_path) as child:  # fmt: skip
        assert child.stdout is not None and child.stderr is not None
        assert child.stdout.read(10) == b'{\n  "forma'
        child.stdout.close()
        err = child.stderr.read()
        assert child.wait(timeout=60) == 2
    assert err == (b"metaharness: stdout-closed: the document's reader closed stdout before the document's end, so "
                   b"the projection stopped and the rest of the document was lost\n")  # fmt: skip
