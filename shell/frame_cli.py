"""The ``metaharness-frame`` console script (docs/frames.md#5-the-metaharness-frame-tool): ``seal FILE``
prints the sealed document, ``check FILE`` names the first problem a run would refuse the frame over,
``explain FILE`` prints what each operation and subject rule admits. Refusals are one stderr line
``metaharness-frame: <code>: <message>``; never a traceback."""

from __future__ import annotations

import sys
from typing import NoReturn

import click
from returns.result import Failure

from metaharness.pure.bounds import FRAME_FILE_LIMIT
from metaharness.pure.frame_explain import explain_lines
from metaharness.pure.frames import decode_json, frame_document, frame_refusal, seal_frame
from metaharness.pure.refusal import Refusal
from metaharness.shell.bounded_reads import read_regular
from metaharness.shell.frame_file import read_frame_file
from metaharness.shell.parse_output import ClosedAtParse
from metaharness.shell.standard_streams import drop_stdout, stand_in_closed_streams

PROGRAM = "metaharness-frame"
FOUND_A_FAULT = 1
REFUSED = 2


def _refuse(refusal: Refusal, code: int = REFUSED) -> int:
    sys.stderr.write(f"{PROGRAM}: {refusal.code}: {refusal.message}\n")
    sys.stderr.flush()
    return code


def _write(lines: tuple[str, ...]) -> int:
    sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()
    return 0


class _FrameGroup(ClosedAtParse, click.Group):
    program = PROGRAM

    def invoke(self, ctx: click.Context) -> object:
        """A reader that closed stdout before the output was written whole is ``stdout-closed`` (click would exit 1)."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            drop_stdout()
            return _refuse(Refusal("stdout-closed", "stdout's reader closed it before the output was written whole"))


@click.group(cls=_FrameGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="metaharness", prog_name=PROGRAM, message="%(prog)s %(version)s")
def _command() -> None:
    """Seal, check and explain metaharness.frame/1 documents."""


@_command.command()
@click.argument("file", metavar="FILE")
def seal(file: str) -> int:
    """Print FILE's frame sealed: its digest computed, one line, digest last."""
    try:
        data = read_regular(file, FRAME_FILE_LIMIT)
    except OSError as error:
        return _refuse(Refusal("frame-unreadable", f"frame {file}: could not be read: {error.strerror or error}"))
    sealed = decode_json(data).alt(lambda detail: f"not a JSON object: {detail}")
    if isinstance(sealed, Failure) or not isinstance(sealed.unwrap(), dict):
        detail = sealed.failure() if isinstance(sealed, Failure) else "not a JSON object: the document is JSON but not an object"
        return _refuse(Refusal("frame-invalid", f"frame {file}: {detail}"))
    frame = seal_frame(sealed.unwrap())
    if isinstance(frame, Failure):
        return _refuse(frame_refusal(file, frame.failure()))
    sys.stdout.buffer.write(frame_document(frame.unwrap()) + b"\n")
    sys.stdout.flush()
    return 0


@_command.command()
@click.argument("file", metavar="FILE")
def check(file: str) -> int:
    """Check FILE as a run's --frame is checked: ok with its digest, or the first problem (exit 1)."""
    frame = read_frame_file(file)
    if isinstance(frame, Failure):
        refusal = frame.failure()
        return _refuse(refusal, REFUSED if refusal.code == "frame-unreadable" else FOUND_A_FAULT)
    return _write((f"frame {file}: ok, sealed {frame.unwrap().digest}",))


@_command.command()
@click.argument("file", metavar="FILE")
def explain(file: str) -> int:
    """Print what FILE's sealed frame admits: its operations, then each subject rule in order."""
    frame = read_frame_file(file)
    if isinstance(frame, Failure):
        return _refuse(frame.failure())
    return _write(explain_lines(frame.unwrap()))


def main() -> NoReturn:
    """The console script: parse errors are ``usage`` refusals, never a traceback."""
    stand_in_closed_streams()
    try:
        result = _command.main(sys.argv[1:], prog_name=PROGRAM, standalone_mode=False)
        code = result if isinstance(result, int) else 0
    except click.exceptions.ClickException as error:
        code = _refuse(Refusal("usage", error.format_message()))
    except (click.exceptions.Abort, KeyboardInterrupt):
        code = _refuse(Refusal("signalled", "SIGINT arrived before metaharness-frame finished"))
    except Exception as error:  # noqa: BLE001 - never a traceback, whatever failed
        code = _refuse(Refusal("internal-error", f"{type(error).__name__}: {error}"))
    sys.exit(code)
