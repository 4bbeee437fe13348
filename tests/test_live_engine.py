"""The one live engine over real descriptors and a real child: lines cut as they come (the last one as
it ended), handlers in the order their sources were added, signals handed over one by one, timers,
a child's exit, and what a pipe still holds read within a bound."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from metaharness.shell.live_engine import Engine, read_rest


def test_lines_arrive_in_order_cut_to_their_bound_and_the_unterminated_last_one_at_the_end() -> None:
    read, write = os.pipe()
    os.write(write, b"one\n" + b"x" * 20 + b"\ntw")
    seen: list[bytes] = []
    ended: list[bool] = []
    engine = Engine()
    try:
        engine.on_lines(read, 8, seen.append, lambda: ended.append(True))
        engine.run(until=lambda: len(seen) == 2)
        os.write(write, b"o\nthree")
        os.close(write)
        engine.run(until=lambda: bool(ended))
    finally:
        engine.close()
        os.close(read)
    assert seen == [b"one\n", b"x" * 8, b"two\n", b"three"]


def test_ready_sources_are_handled_in_the_order_they_were_added() -> None:
    first_read, first_write = os.pipe()
    second_read, second_write = os.pipe()
    order: list[str] = []
    engine = Engine()
    try:
        engine.on_lines(second_read, 64, lambda _line: order.append("second"), lambda: None)
        engine.on_lines(first_read, 64, lambda _line: order.append("first"), lambda: None)
        os.write(first_write, b"x\n")
        os.write(second_write, b"y\n")
        engine.run(until=lambda: len(order) == 2)
    finally:
        engine.close()
        for fd in (first_read, first_write, second_read, second_write):
            os.close(fd)
    assert order == ["second", "first"]


def test_a_paused_source_waits_and_comes_back_in_its_old_place_in_the_order() -> None:
    """While paused a ready source is not handled (nor spun on); resumed, it is handled before the sources
    added after it (gemini's doorbell while its version probe answers)."""
    paused_read, paused_write = os.pipe()
    later_read, later_write = os.pipe()
    order: list[str] = []
    engine = Engine()
    try:
        engine.on_lines(paused_read, 64, lambda _line: order.append("paused"), lambda: None)
        engine.on_lines(later_read, 64, lambda _line: order.append("later"), lambda: None)
        resume = engine.pause(paused_read)
        os.write(paused_write, b"x\n")
        os.write(later_write, b"y\n")
        engine.run(until=lambda: len(order) == 1)
        assert order == ["later"]
        resume()
        os.write(later_write, b"z\n")
        engine.run(until=lambda: len(order) == 3)
    finally:
        engine.close()
        for fd in (paused_read, paused_write, later_read, later_write):
            os.close(fd)
    assert order == ["later", "paused", "later"]


def test_each_signal_is_handed_over_once_and_the_previous_handler_comes_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    caught: list[int] = []
    engine = Engine()
    try:
        engine.on_signal(caught.append)
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        engine.run(until=lambda: len(caught) == 2)
    finally:
        engine.close()
    assert caught == [signal.SIGTERM, signal.SIGINT]
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_timer_fires_once_due_and_a_child_exit_is_seen() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"])
    due = time.monotonic() + 0.05
    fired: list[float] = []
    exited: list[int] = []
    engine = Engine()
    try:
        engine.timer(lambda: None if fired else due, lambda: fired.append(time.monotonic()))
        engine.on_exit(child.pid, lambda: exited.append(child.wait()))
        engine.run(until=lambda: bool(exited))
    finally:
        engine.close()
    assert len(fired) == 1 and fired[0] >= due
    assert exited == [0]


def test_read_rest_stops_at_the_bound_when_a_writer_keeps_the_pipe_open() -> None:
    read, write = os.pipe()
    os.write(write, b"left")
    started = time.monotonic()
    assert read_rest(read, 0.2) == b"left"
    assert time.monotonic() - started >= 0.2
    os.write(write, b"end")
    os.close(write)
    assert read_rest(read, 60) == b"end"
    os.close(read)
