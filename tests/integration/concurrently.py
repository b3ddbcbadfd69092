"""Worker processes stopped together rather than one after the other: a worker's stop is
mostly its Spark session's (a second or more each on a busy machine), and a module that
stops a cluster at a time waits for every one of them in a row otherwise."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from connect_grpc.testing.cluster import WorkerProcess

__all__ = ["stop_together"]


def stop_together(workers: Sequence[WorkerProcess]) -> None:
    """Stops the workers at once (``WorkerProcess.stop`` on each, in a thread of its own) and
    returns when every one has exited; raises the first failure once all were tried."""
    if not workers:
        return
    with ThreadPoolExecutor(max_workers=len(workers)) as pool:
        stopped = [pool.submit(worker.stop) for worker in workers]
    for future in stopped:
        future.result()
