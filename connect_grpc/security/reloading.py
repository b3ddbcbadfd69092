"""Files re-read when they change, so that certificates, tokens and principals can be
replaced without restarting the worker."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Generic, TypeVar

import structlog

from connect_grpc.kernel.errors import ConnectError

log = structlog.get_logger(__name__)

T = TypeVar("T")

#: What identifies one version of a file: (inode, size, modification time in ns).
_Stamp = tuple[int, int, int] | None


def _stamp(path: Path) -> _Stamp:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


class ReloadingFiles(Generic[T]):
    """What ``load`` makes of some files, made again whenever one of them changes.

    A change is seen at the next :meth:`refresh` (a ``stat`` of each file: cheap enough to
    do on every new connection or call). When the new files cannot be loaded (a
    certificate replaced before its key, a typo in a tokens file), the last good value
    stays in use and the failure is logged once per change. Thread-safe.
    """

    def __init__(self, paths: Sequence[Path], load: Callable[[], T], what: str) -> None:
        """Loads the files once; a failure then is raised (the worker must not start)."""
        self._paths = tuple(paths)
        self._load = load
        self._what = what
        self._lock = threading.Lock()
        self._stamps = self._current_stamps()
        self._value = load()
        self._version = 0

    @property
    def value(self) -> T:
        """The last good value (without checking the files)."""
        with self._lock:
            return self._value

    @property
    def version(self) -> int:
        """How many times the value was replaced since the first load."""
        with self._lock:
            return self._version

    def refresh(self) -> bool:
        """Re-loads when a file changed since the last look; True when the value changed."""
        stamps = self._current_stamps()
        with self._lock:
            if stamps == self._stamps:
                return False
            self._stamps = stamps
            try:
                value = self._load()
            except (ConnectError, OSError, ValueError) as exc:
                log.error("reload_failed", files=self._what, error=str(exc))
                return False
            self._value = value
            self._version += 1
        log.info("files_reloaded", files=self._what, version=self._version)
        return True

    def current(self) -> T:
        """:meth:`refresh`, then the value."""
        self.refresh()
        return self.value

    def _current_stamps(self) -> tuple[_Stamp, ...]:
        return tuple(_stamp(path) for path in self._paths)
