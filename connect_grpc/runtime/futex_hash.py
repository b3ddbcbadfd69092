"""Which futex hash table the worker process uses (Linux 6.16 and later).

Every lock hand-off between threads ends in a futex wake, which the kernel finds in a hash
table of waiting threads. Since Linux 6.16 a threaded process gets a table of its own, sized
for its CPUs, not for its threads (16 buckets on a 2-CPU machine, with 50 threads as with
2,000). A worker runs a thread per task, most of them waiting, so on 2 CPUs 330 idle tasks
put about 20 waiters in each bucket, and every wake walks its bucket. Measured in a bare
gRPC server on such a machine, a health check took 0.44 ms with no idle threads, 0.52 ms
with 1,000 and 0.62 ms with 2,000; with 2,000 on the global table, 0.44 ms. On 3 workers
with 1,000 idle connectors it was about a third of what a call paid more than with 10
(BENCHMARKS.md, "1,000 idle connectors").

:func:`use_global_futex_hash` moves the process to the global table, the one every process
used before 6.16 (sized by the kernel at boot for the whole machine: 256 buckets a CPU).
A kernel without per-process tables already uses it. The move is one-way and process-wide.
"""

from __future__ import annotations

import ctypes
import enum
import errno
import sys

import structlog

log = structlog.get_logger(__name__)

#: prctl(2) options from <linux/prctl.h> (Linux 6.16).
PR_FUTEX_HASH = 78
PR_FUTEX_HASH_SET_SLOTS = 1
PR_FUTEX_HASH_GET_SLOTS = 2
#: Slots that stand for "the global hash table".
GLOBAL_HASH = 0


class FutexHash(enum.Enum):
    """What :func:`use_global_futex_hash` found or did."""

    #: The process now uses the global table (or already did).
    GLOBAL = "global"
    #: The kernel has no per-process tables: every process uses the global one.
    NO_PRIVATE_TABLES = "no_private_tables"
    #: Not Linux: nothing to do.
    NOT_LINUX = "not_linux"
    #: The kernel refused the move; the process keeps its own table (logged).
    REFUSED = "refused"


def _prctl(option: int, arg2: int, arg3: int = 0) -> tuple[int, int]:
    """``prctl(option, arg2, arg3, 0, 0)``: its result and errno."""
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    result = prctl(option, arg2, arg3, 0, 0)
    return result, ctypes.get_errno()


def futex_hash_slots() -> int | None:
    """This process's futex hash slots (0: the global table, or no table yet before a second
    thread); None where the kernel has no per-process tables or this is not Linux."""
    if not sys.platform.startswith("linux"):
        return None
    slots, _ = _prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_GET_SLOTS)
    return None if slots < 0 else slots


def use_global_futex_hash() -> FutexHash:
    """Moves this process to the kernel's global futex hash table. Idempotent; never raises."""
    if not sys.platform.startswith("linux"):
        return FutexHash.NOT_LINUX
    try:
        result, error = _prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS, GLOBAL_HASH)
    except (OSError, AttributeError):  # a libc without prctl
        return FutexHash.NO_PRIVATE_TABLES
    if result < 0 and error == errno.EINVAL:
        return FutexHash.NO_PRIVATE_TABLES
    if result == 0 or futex_hash_slots() == GLOBAL_HASH:  # moved, or moved before (EBUSY)
        return FutexHash.GLOBAL
    log.warning("futex_hash_not_global", errno=errno.errorcode.get(error, error))
    return FutexHash.REFUSED
