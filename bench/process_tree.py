"""What a process and its descendants use, for the benches that compare whole systems."""

from __future__ import annotations

import psutil


def tree_cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of ``pid`` and its live descendants (0 if gone or None)."""
    if pid is None:
        return 0.0
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total
