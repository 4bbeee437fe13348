"""The two ways the runs of a plan are carried out, with the same results: a local pool of threads
each waiting on one governed run's process, or Ray tasks on a cluster. Both keep at most ``jobs``
runs in flight and pack a run's inputs only when it is about to start, so the driver holds the
bytes of those runs only (docs/eval.md "Executors")."""

from __future__ import annotations

import itertools
import logging
import socket
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any

import msgspec

from metaharness.pure.budgets import RAY_CONNECT_S
from metaharness.pure.refusal import Refusal
from metaharness.shell.eval.governed_run import RunOutput, govern_run
from metaharness.shell.eval.packing import RunInputs

ATTEMPTS = 2
"""A run whose worker died is run once more; lost on the second death."""


class PendingRun(msgspec.Struct, frozen=True):
    """A planned run not yet packed: its identity and how to pack its inputs."""

    identity: tuple[str, str, int]
    pack: Callable[[], RunInputs]


class Outcome(msgspec.Struct, frozen=True):
    """How a run ended for the driver: its files, or None when it was lost (``error`` says why)."""

    identity: tuple[str, str, int]
    output: RunOutput | None
    attempts: int
    error: str


def run_locally(pending: Iterable[PendingRun], jobs: int) -> Iterator[Outcome]:
    """Each run in a pool thread of ``jobs``, outcomes as they finish; a finished run's place is
    filled before its outcome is handed on, so writing it never leaves a slot idle."""

    def one(run: PendingRun) -> Outcome:
        return Outcome(identity=run.identity, output=govern_run(run.pack()), attempts=1, error="")

    runs = iter(pending)
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="metaharness-eval") as pool:
        running = {pool.submit(one, run) for run in itertools.islice(runs, jobs)}
        while running:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            running |= {pool.submit(one, run) for run in itertools.islice(runs, len(done))}
            yield from (future.result() for future in done)


def ray_module() -> Any | Refusal:
    """The ``ray`` package, or ``ray-unavailable`` when the extra is not installed."""
    try:
        import ray
    except ImportError:
        return Refusal("ray-unavailable", "--ray needs the ray package: pip install 'metaharness[ray]'")
    return ray


def host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` when ``address`` is ``HOST:PORT``: a running cluster's, which Ray only connects to."""
    host, colon, port = address.rpartition(":")
    return (host.strip("[]"), int(port)) if colon and port.isdigit() else None


def ray_reachable(address: str) -> Refusal | None:
    """``ray-unreachable`` when ``address`` is ``HOST:PORT`` and nothing accepts a connection there
    (``ray.init`` would wait for it for minutes); ``auto`` is left to Ray."""
    cluster = host_port(address)
    if cluster is None:
        return None
    try:
        socket.create_connection(cluster, timeout=RAY_CONNECT_S).close()
    except OSError as error:
        return Refusal("ray-unreachable", f"--ray {address}: no Ray cluster answers there ({error.strerror or error})")
    return None


def run_on_ray(ray: Any, address: str, pending: Iterable[PendingRun], jobs: int) -> Iterator[Outcome]:
    """Each run as one Ray task (one CPU) on the cluster at ``address``, its inputs shipped by value;
    a task whose worker died is submitted once more, then the run is lost. What Ray prints for the
    driver (a worker's death, published whenever the raylet sees it, while the driver stays connected)
    goes to stderr for the rest of the driver's life: stdout is the table's, written to the stream
    ``_carried_out`` held before Ray was loaded (a late death's line printed above the table while a
    ``HOST:PORT`` driver, which never disconnects, ended). A driver connected to a running
    cluster at ``HOST:PORT`` does not shut down: its process ends at once (``_end`` in
    ``shell/eval/command.py``), and the raylet, seeing it gone, ends its job's workers as
    ``ray.shutdown`` would have; any other address may have started a cluster here, which the driver
    stops, and waits for, before it ends (docs/eval.md "Executors")."""
    sys.stdout = sys.stderr
    yield from _ray_outcomes(ray, address, pending, jobs)


def _ray_outcomes(ray: Any, address: str, pending: Iterable[PendingRun], jobs: int) -> Iterator[Outcome]:
    ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR, configure_logging=False)
    remote = ray.remote(num_cpus=1, max_retries=0)(govern_run)
    in_flight: dict[Any, tuple[PendingRun, Any, int]] = {}
    runs = iter(pending)

    def submit(run: PendingRun, inputs: Any, attempt: int) -> None:
        in_flight[remote.remote(inputs, attempt)] = (run, inputs, attempt)

    def refill() -> None:
        for run in itertools.islice(runs, jobs - len(in_flight)):
            submit(run, ray.put(run.pack()), 1)

    def collect() -> list[Outcome]:
        """The runs that ended, their places filled first (a died worker's run resubmitted once)."""
        ready, _ = ray.wait(list(in_flight), num_returns=1)
        outcomes = []
        for reference in ready:
            run, inputs, attempt = in_flight.pop(reference)
            try:
                output = ray.get(reference)
            except ray.exceptions.RayError as error:
                if attempt < ATTEMPTS:
                    submit(run, inputs, attempt + 1)
                    continue
                outcomes.append(Outcome(identity=run.identity, output=None, attempts=attempt, error=type(error).__name__))
                continue
            outcomes.append(Outcome(identity=run.identity, output=output, attempts=attempt, error=""))
        refill()
        return outcomes

    try:
        refill()
        while in_flight:
            yield from collect()
    finally:
        if host_port(address) is None:
            ray.shutdown(wait_for_processes=True)
