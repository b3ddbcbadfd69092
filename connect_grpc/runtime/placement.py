"""Where a task's plugin lives, as its status says it: on the driver, or in a Spark
executor, named the way Spark names it (``executor 1 on node-7``, ``driver on node-1``).

A bare host name said neither which process nor which executor: on a one-machine Spark
cluster every executor and the driver share it. A hosted task's Python worker does not know
its executor's id from PySpark (``TaskContext`` has none), so the host reads it from the
command line of the executor's JVM (``--executor-id``, as every cluster manager starts
``CoarseGrainedExecutorBackend``), the nearest such ancestor of its own process; in local
mode the executor is the driver's own, which Spark names ``driver``.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from connect_grpc.kernel.domain import PlacementKind, TaskPlacement

__all__ = [
    "DRIVER_HOST",
    "LOCAL_EXECUTOR_ID",
    "driver_placement",
    "executor_id",
    "executor_placement",
]

#: The host of this worker's process, where a task that no executor hosts runs.
DRIVER_HOST = socket.gethostname()
#: Spark's id of the executor of a local master, which lives in the driver's JVM.
LOCAL_EXECUTOR_ID = "driver"
_EXECUTOR_ID_FLAG = "--executor-id"
#: Ancestors looked at, at most (Python worker → pyspark daemon → executor JVM).
_MAX_ANCESTORS = 8


def driver_placement(host: str = DRIVER_HOST) -> TaskPlacement:
    """A task that runs on the driver (a thread of the worker's process) of ``host``."""
    return TaskPlacement(PlacementKind.DRIVER, f"driver on {host}")


def executor_placement(executor: str, host: str) -> TaskPlacement:
    """A task hosted by executor ``executor`` (Spark's id; "" when not known) on ``host``."""
    named = f"executor {executor}" if executor else "an executor"
    return TaskPlacement(PlacementKind.SPARK_EXECUTOR, f"{named} on {host}")


def executor_id(proc: Path = Path("/proc"), pid: int | None = None) -> str:
    """The Spark id of the executor this process (a Python worker of it) runs under: the
    ``--executor-id`` of its nearest ancestor started with one, else ``SPARK_EXECUTOR_ID``
    (Kubernetes sets it), else the local executor's id (``driver``)."""
    current = os.getpid() if pid is None else pid
    for _ in range(_MAX_ANCESTORS):
        words = _cmdline(proc, current)
        if _EXECUTOR_ID_FLAG in words[:-1]:
            return words[words.index(_EXECUTOR_ID_FLAG) + 1]
        parent = _parent(proc, current)
        if parent is None or parent <= 1:
            break
        current = parent
    return os.environ.get("SPARK_EXECUTOR_ID") or LOCAL_EXECUTOR_ID


def _cmdline(proc: Path, pid: int) -> list[str]:
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:  # no /proc (not Linux), or the process is gone
        return []
    return raw.decode("utf-8", errors="replace").split("\0")


def _parent(proc: Path, pid: int) -> int | None:
    try:
        stat = (proc / str(pid) / "stat").read_text("utf-8", errors="replace")
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses
    fields = stat.rpartition(")")[2].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None
