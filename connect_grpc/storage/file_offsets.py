"""Standalone mode's offset store: a JSON file, rewritten atomically on every put."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

from connect_grpc.domain import OffsetMap, OffsetPrimitive
from connect_grpc.errors import StartupError, StorageError
from connect_grpc.storage import offsets_codec
from connect_grpc.storage.base import OffsetEntry, StoredOffset

log = structlog.get_logger(__name__)

#: The worker property naming the file.
OFFSET_FILE_PROPERTY = "offset.storage.file.filename"


class FileOffsetStore:
    """Offsets in ``offset.storage.file.filename``.

    The file holds ``{"offsets": [[key, value], ...]}`` with keys and values in Kafka
    Connect's JSON form, so a reader can tell which connector and partition each is.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._data: dict[bytes, bytes] = {}

    def start(self) -> None:
        """Loads the file and checks that it can be written.

        Raises:
            StartupError: the file is not an offsets file, is not a regular file, or its
                directory cannot be written; the message names the path.
        """
        with self._lock:
            self._data = self._load()
        self._check_writable()
        log.info("offset_store_loaded", path=str(self._path), entries=len(self._data))

    def stop(self) -> None:
        return None

    def get(self, connector: str, partition: OffsetMap) -> dict[str, OffsetPrimitive] | None:
        with self._lock:
            raw = self._data.get(offsets_codec.encode_key(connector, partition))
        return offsets_codec.decode_value(raw)

    def get_all(self, connector: str) -> list[StoredOffset]:
        result: list[StoredOffset] = []
        with self._lock:
            items = list(self._data.items())
        for key, value in items:
            decoded = offsets_codec.decode_key(key)
            offset = offsets_codec.decode_value(value)
            if decoded is not None and decoded[0] == connector and offset is not None:
                result.append((decoded[1], offset))
        return result

    def put(self, connector: str, entries: Sequence[OffsetEntry]) -> None:
        """Stores the entries (an offset of None removes its partition) in the file first,
        then in memory: a write that fails changes neither.

        Raises:
            StorageError: the file could not be written; it names the file.
        """
        with self._lock:
            updated = dict(self._data)
            for partition, offset in entries:
                key = offsets_codec.encode_key(connector, partition)
                value = offsets_codec.encode_value(offset)
                if value is None:
                    updated.pop(key, None)
                else:
                    updated[key] = value
            self._save(updated)
            self._data = updated

    def _load(self) -> dict[bytes, bytes]:
        if self._path.is_dir():
            raise self._startup_error(
                f"the offsets file {self._path} is a directory",
                "point offset.storage.file.filename at a file (or at a path that does not "
                "exist yet), or move the directory away",
            )
        if not self._path.exists():
            return {}
        try:
            document: Any = json.loads(self._path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise self._startup_error(
                f"cannot read the offsets file {self._path}: {exc.strerror or exc}",
                "point offset.storage.file.filename at a readable file (or at a path that "
                "does not exist yet)",
            ) from None
        except ValueError as exc:  # UnicodeDecodeError included
            raise self._corrupt(f"not valid JSON ({exc})") from None
        pairs = document.get("offsets") if isinstance(document, dict) else None
        if not isinstance(pairs, list) or not all(map(_is_entry, pairs)):
            raise self._corrupt(
                'expected {"offsets": [[["<connector>", {partition}], {offset}], ...]}'
            )
        return {
            offsets_codec.encode_key(key[0], key[1]): json.dumps(
                value, separators=(",", ":")
            ).encode()
            for key, value in pairs
        }

    def _check_writable(self) -> None:
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=self._path.parent):
                pass
        except OSError as exc:
            raise self._startup_error(
                f"cannot write offsets next to {self._path}: {self._why(exc)}",
                f"make {self._path.parent} a writable directory, or point "
                "offset.storage.file.filename somewhere writable",
            ) from None

    def _corrupt(self, why: str) -> StartupError:
        return self._startup_error(
            f"the offsets file {self._path} is not an offsets file: {why}",
            "restore it from a backup, or move it away to start with no source offsets "
            "(sources then start from the beginning)",
        )

    def _startup_error(self, message: str, fix: str) -> StartupError:
        return StartupError(
            message, fix=fix, file=str(self._path), property_name=OFFSET_FILE_PROPERTY
        )

    def _save(self, data: dict[bytes, bytes]) -> None:
        """Writes a temporary file and renames it over the offsets file.

        Raises:
            StorageError: the file could not be written (the message names it and why); the
                file on disk is unchanged.
        """
        try:
            self._write_atomically(data)
        except OSError as exc:
            log.error("offsets_file_write_failed", path=str(self._path), error=str(exc))
            raise StorageError(
                f"Could not write the offsets file {self._path} "
                f"({OFFSET_FILE_PROPERTY}): {self._why(exc)}; nothing was changed"
            ) from None

    def _why(self, exc: OSError) -> str:
        """Why a write failed, saying so when the directory's path is taken by a file."""
        parent = self._path.parent
        if any(p.exists() and not p.is_dir() for p in (parent, *parent.parents)):
            return f"{parent} is not a directory (a file is in the way)"
        return exc.strerror or str(exc)

    def _write_atomically(self, data: dict[bytes, bytes]) -> None:
        document = {"offsets": [[json.loads(k), json.loads(v)] for k, v in data.items()]}
        self._path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self._path.parent, prefix=self._path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(document, handle, indent=1)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self._path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _is_entry(pair: Any) -> bool:
    """Whether ``pair`` is ``[["<connector>", {partition}], {offset}]``, as ``put`` writes."""
    return (
        isinstance(pair, list)
        and len(pair) == 2
        and isinstance(pair[0], list)
        and len(pair[0]) == 2
        and isinstance(pair[0][0], str)
        and isinstance(pair[0][1], dict)
        and isinstance(pair[1], dict)
    )
