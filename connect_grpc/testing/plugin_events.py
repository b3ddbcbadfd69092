"""The events file the instrumented plugins (``connect_grpc.testing.plugins``) report
through, one JSON object a line, so that a test reads what happened in a worker's other
processes: written whole under a file lock, read back in write order."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["count", "read_events", "record_event"]

_write_lock = threading.Lock()


def _append_line(path: str, line: str) -> None:
    """Appends one line with a single O_APPEND write under an exclusive file lock."""
    data = (line + "\n").encode("utf-8")
    with _write_lock:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, data)
        finally:
            os.close(fd)  # closing releases the flock


def record_event(
    path: str,
    event: str,
    connector: str,
    instance: str,
    *,
    task: int | None = None,
    connector_deleted: bool | None = None,
    **extra: Any,
) -> None:
    """Appends one event to ``path`` (nothing when ``path`` is empty)."""
    if not path:
        return
    payload: dict[str, Any] = {
        "event": event,
        "connector": connector,
        "task": task,
        "connector_deleted": connector_deleted,
        "instance": instance,
        "pid": os.getpid(),
        "time": time.time(),
        **extra,
    }
    _append_line(path, json.dumps(payload, default=str))


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """Every complete event in the file, in write order ([] when it does not exist yet)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = text.split("\n")[:-1]  # the last item is "" or a line still being written
    return [json.loads(line) for line in lines if line]


def count(
    events: Iterable[Mapping[str, Any]],
    event: str,
    task: int | None = None,
    connector: str | None = None,
) -> int:
    """How many ``event`` events there are, optionally only of one task and/or connector."""
    return sum(
        1
        for item in events
        if item.get("event") == event
        and (task is None or item.get("task") == task)
        and (connector is None or item.get("connector") == connector)
    )
