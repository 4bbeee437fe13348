"""``project`` in two passes (docs/cli.md#project): the document it streams is byte for byte the document
written whole, on every vector and under ``--from KIND``; an input read once (a FIFO, ``/dev/stdin``) is
copied into a private scratch file nobody else can name; a refusal leaves ``--out`` and stdout untouched;
the input's bound is checked before its lines are."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import get_args

import pytest
from project_verb import metaharness

from metaharness.pure.adapters import adapter_of
from metaharness.pure.bounds import INPUT_FILE_LIMIT
from metaharness.pure.kind import Kind
from metaharness.pure.projection import document_text, project_stream, replay_stream
from metaharness.shell.project import run_project, scratch_file

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
    mapped = replay_stream(kind, name, data)
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


def _scratch_links(pid: int, scratch: Path) -> list[str]:
    """Where ``pid``'s descriptors point that lie in ``scratch``."""
    links = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue
        if target.startswith(str(scratch)):
            links.append(target)
    return links


def test_a_fifo_is_copied_once_into_a_scratch_file_with_no_name(tmp_path: Path) -> None:
    """While the verb reads a FIFO its copy is open in the temporary directory, which lists nothing: no
    other process can open, replace or write the copy the second pass reads."""
    data = _events(3000)
    fifo = tmp_path / "events.fifo"
    os.mkfifo(fifo)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    script = Path(sys.executable).with_name("metaharness")
    env = {**os.environ, "TMPDIR": str(scratch)}
    with subprocess.Popen([str(script), "project", str(fifo)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env) as child:  # fmt: skip
        with fifo.open("wb") as writer:
            writer.write(data[: len(data) // 2])
            writer.flush()
            deadline = time.monotonic() + 30
            while not (links := _scratch_links(child.pid, scratch)):
                assert time.monotonic() < deadline, "the copy was never opened"
                time.sleep(0.01)
            assert os.listdir(scratch) == []
            assert all(link.endswith("(deleted)") for link in links)
            writer.write(data[len(data) // 2 :])
        out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert out == _whole(str(fifo), data)
    assert os.listdir(scratch) == []


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


def test_without_o_tmpfile_the_copy_is_an_unlinked_file_in_a_folder_already_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A temporary directory on a filesystem without ``O_TMPFILE`` (its ``open`` fails ``EOPNOTSUPP``, as
    the kernel's does there): the copy is made ``O_EXCL`` in a 0700 folder of its own, and both names are
    gone before the copy is used."""
    real_open = os.open

    def without_tmpfile(path: str, flags: int, *args: object, **kwargs: object) -> int:
        if flags & os.O_TMPFILE == os.O_TMPFILE:
            raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(os, "open", without_tmpfile)
    with scratch_file() as copy:
        assert os.listdir(tmp_path) == []
        assert os.fstat(copy.fileno()).st_nlink == 0
        copy.write(b"kept\n")
        copy.seek(0)
        assert copy.read() == b"kept\n"


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
