"""One-time builds some integration tests need (the pinned grpcurl, the Go client's test
binaries), started in the background at the lowest CPU priority when the session's first
integration test starts, so that they use the idle CPU of the tests before their users
(on a fresh machine each is a download and a compile of most of a minute).

A test that needs a build calls :func:`install_grpcurl` or :func:`warm_go_client`, which
wait for the background build (raising its priority, where allowed) or run it themselves.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

from connect_grpc.kafka.jars import cache_root

ROOT = Path(__file__).resolve().parents[2]
GO_CLIENT = ROOT / "clients" / "go"
GRPCURL_VERSION = "v1.9.4"
GRPCURL_MODULE = "github.com/fullstorydev/grpcurl/cmd/grpcurl"
GRPCURL_INSTALL = f"go install {GRPCURL_MODULE}@{GRPCURL_VERSION}"
BUILD_TIMEOUT_S = 900
#: The niceness of a build nobody waits for yet.
BACKGROUND_NICENESS = 19


class _Build:
    """A command run at most once per session, in the background or by whoever needs it."""

    def __init__(self, lock_path: Path) -> None:
        self._lock_path = lock_path
        self._process: subprocess.Popen[str] | None = None

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        self._lock_path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock_path.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def run(self, command: list[str], cwd: Path, env: dict[str, str], niceness: int) -> str:
        """Runs the command; returns its output if it failed, else ""."""
        if niceness:
            command = ["nice", "-n", str(niceness), *command]
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True,
        )
        self._process = process
        try:
            output, _ = process.communicate(timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        finally:
            self._process = None
        return "" if process.returncode == 0 else output or f"exit {process.returncode}"

    def hurry(self) -> None:
        """Someone waits: the background build gets the normal priority back, if allowed."""
        process = self._process
        if process is not None:
            with contextlib.suppress(OSError):
                for pid in _descendants(process.pid):  # go runs its compilers as children
                    os.setpriority(os.PRIO_PROCESS, pid, 0)


def _descendants(root: int) -> list[int]:
    """``root`` and the processes under it (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _go() -> str:
    go = shutil.which("go")
    assert go is not None, "Go is needed by the documented grpcurl and the Go client's tests"
    return go


_GRPCURL_DIR = cache_root() / "go-bin" / GRPCURL_VERSION
_grpcurl = _Build(_GRPCURL_DIR / ".lock")
_go_client = _Build(cache_root() / "go-client-warm-up.lock")
_go_client_warm = threading.Event()


def install_grpcurl(niceness: int = 0) -> Path:
    """The directory of the pinned grpcurl, installed with the documented command if missing
    (cached across sessions)."""
    binary = _GRPCURL_DIR / "grpcurl"
    if niceness == 0:
        _grpcurl.hurry()
    with _grpcurl.locked():
        if not os.access(binary, os.X_OK):
            failed = _grpcurl.run(
                [_go(), *GRPCURL_INSTALL.split()[1:]], ROOT,
                {**os.environ, "GOBIN": str(_GRPCURL_DIR)}, niceness,
            )
            assert not failed, f"{GRPCURL_INSTALL} failed:\n{failed[-3000:]}"
    return _GRPCURL_DIR


def warm_go_client(niceness: int = 0) -> None:
    """Compiles the Go client's packages and test binaries into Go's build cache (runs no
    test), once per session; a failure is left to the tests that run them to report."""
    if niceness == 0:
        _go_client.hurry()
    with _go_client.locked():
        if not _go_client_warm.is_set():
            _go_client.run([_go(), "test", "-count=1", "-run", "^$", "-exec", "/bin/true",
                            "./..."], GO_CLIENT, dict(os.environ), niceness)
            _go_client_warm.set()


_started = threading.Lock()


def start_in_background() -> None:
    """Starts both builds at the lowest priority (once per process)."""
    if not _started.acquire(blocking=False):
        return

    def build() -> None:
        with contextlib.suppress(Exception):  # a failure shows in the tests that need them
            warm_go_client(BACKGROUND_NICENESS)
            install_grpcurl(BACKGROUND_NICENESS)

    threading.Thread(target=build, name="warm-ups", daemon=True).start()
