"""The child processes of the local broker manager, and how they fail.

mvn, Kafka's storage tool and the broker's JVM are child processes; so are, through the
same helpers, the JVMs of Spark's standalone cluster in tests and of Kafka Connect in the
benchmarks. Here: finding ``java``, starting a command in a process group of its own
(which can be made to die with its parent), signalling and stopping that group, and
reading what a process wrote, for the error messages of :class:`KafkaBrokerError`, which
every failure of the broker manager raises.

Public API
----------
``spawn_process_group(command, output, cwd, *, die_with_parent) -> Popen``,
``stop_process_group(process, timeout, what) -> None``,
``signal_group(pid, sig) -> None``, ``die_with_parent_signal() -> None``
    A process group of its own, its stdout/stderr appended to a file; SIGTERM to the group,
    SIGKILL after a timeout.
``java_executable() -> str``
    ``$JAVA_HOME/bin/java``, else ``java`` on PATH.
``read_log(path) -> str``, ``outputoutput_tail(text, limit=2000) -> str``
    A log file's text (empty if unreadable), and the end of a process's output to quote.
``KafkaBrokerError``
    Raised when fetching, formatting or starting the broker fails.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger(__name__)

_PR_SET_PDEATHSIG = 1


class KafkaBrokerError(RuntimeError):
    """Fetching, formatting, starting or stopping the local broker failed."""


def spawn_process_group(
    command: Sequence[str], output: Path, cwd: Path, *, die_with_parent: bool
) -> subprocess.Popen[bytes]:
    """Starts ``command`` in a process group of its own, stdout and stderr appended to
    ``output``; with ``die_with_parent``, it gets SIGTERM when this process dies."""
    with output.open("ab") as stdout:
        return subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=die_with_parent_signal if die_with_parent else None,
        )


def stop_process_group(process: subprocess.Popen[Any], timeout: float, what: str) -> None:
    """SIGTERM to ``process``'s group, SIGKILL after ``timeout`` seconds; logs
    ``<what>_stopped`` (and ``<what>_stop_timeout``)."""
    if process.poll() is not None:
        return
    signal_group(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        log.warning(f"{what}_stop_timeout", pid=process.pid, timeout=timeout)
        signal_group(process.pid, signal.SIGKILL)
        process.wait(10)
    log.info(f"{what}_stopped", pid=process.pid, exit_code=process.returncode)


def java_executable() -> str:
    """``$JAVA_HOME/bin/java`` when it exists, else the ``java`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise KafkaBrokerError("java not found (set JAVA_HOME or put java on PATH)")
    return java


def die_with_parent_signal() -> None:
    """Runs in the forked child: the kernel sends SIGTERM when the parent dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def signal_group(pid: int, sig: signal.Signals) -> None:
    """Signals the process group led by ``pid`` (the JVM's own session), or just ``pid``."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    except PermissionError:
        os.kill(pid, sig)


def read_log(path: Path) -> str:
    """The text of a process's log file; empty when it cannot be read."""
    try:
        return path.read_text("utf-8", errors="replace")
    except OSError:
        return ""


def output_tail(text: str, limit: int = 2000) -> str:
    """The last ``limit`` characters of a process's output, to quote in an error message."""
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]
