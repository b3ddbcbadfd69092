"""Worker processes started and stopped together rather than one after the other: a
worker's start and stop wait on Spark and Kafka much of the time (a second or more each on a
busy machine), and a module that starts or stops a worker at a time waits for every one of
them in a row otherwise."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Protocol, TypeVar

import pytest

from connect_grpc.testing.cluster import WorkerProcess, start_together

__all__ = ["selected_params", "started_together", "stop_together"]


class _HasWorker(Protocol):
    @property
    def worker(self) -> WorkerProcess: ...


D = TypeVar("D", bound=_HasWorker)


def selected_params(request: pytest.FixtureRequest, fixture: str) -> set[object]:
    """The values of ``fixture``'s param that the session's selected tests of the requesting
    module use (so that a module-scoped fixture starts only the workers they need)."""
    return {
        item.callspec.params.get(fixture)
        for item in request.session.items
        if getattr(item, "module", None) is request.module and hasattr(item, "callspec")
    }


@contextmanager
def started_together(
    params: Iterable[str], selected: set[object], make: Callable[[str], D]
) -> Iterator[Mapping[str, D]]:
    """The deployment ``make`` makes for each of ``params`` that is ``selected``, in order,
    their workers started at once, and stopped together when the block ends."""
    deployments = {param: make(param) for param in params if param in selected}
    workers = [deployment.worker for deployment in deployments.values()]
    try:
        start_together(workers)
        yield deployments
    finally:
        stop_together(workers)


def stop_together(workers: Sequence[WorkerProcess]) -> None:
    """Stops the workers at once (``WorkerProcess.stop`` on each, in a thread of its own) and
    returns when every one has exited; raises the first failure once all were tried."""
    if not workers:
        return
    with ThreadPoolExecutor(max_workers=len(workers)) as pool:
        stopped = [pool.submit(worker.stop) for worker in workers]
    for future in stopped:
        future.result()
