"""Standalone mode's offset store: a JSON snapshot plus an append-only journal.

A commit costs what it changes, not what the file holds: ``put`` appends one checksummed
line to ``<file>.journal`` and fsyncs it. The snapshot (``<file>``, the JSON users may
read) is rewritten atomically (temporary file, fsync, rename, fsync of the directory) at
start-up and whenever the journal has grown past the snapshot's size, then the journal is
emptied. A kill -9 at any point leaves the previous or the new offsets: a torn last line
fails its checksum and is dropped (its put was never acknowledged), and a journal replayed
over a snapshot that already holds it changes nothing.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

from connect_grpc.kernel.domain import OffsetMap, OffsetPrimitive
from connect_grpc.kernel.errors import StartupError, StorageError
from connect_grpc.storage import offsets_codec
from connect_grpc.storage.base import OffsetEntry, StoredOffset

log = structlog.get_logger(__name__)

#: The worker property naming the file.
OFFSET_FILE_PROPERTY = "offset.storage.file.filename"
#: The journal grows to at least this many bytes before the snapshot is rewritten.
MIN_JOURNAL_BYTES = 1 << 20


class FileOffsetStore:
    """Offsets in ``offset.storage.file.filename``.

    The file holds ``{"offsets": [[key, value], ...]}`` with keys and values in Kafka
    Connect's JSON form, so a reader can tell which connector and partition each is.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._journal = path.with_name(path.name + ".journal")
        self._lock = threading.Lock()
        self._data: dict[bytes, bytes] = {}
        self._journal_bytes = 0
        self._snapshot_bytes = 0

    def start(self) -> None:
        """Loads the snapshot and replays the journal, then writes them as one snapshot.

        Raises:
            StartupError: the file is not an offsets file, is not a regular file, or its
                directory cannot be written; the message names the path.
        """
        with self._lock:
            self._data = self._load()
            replayed = self._replay_journal(self._data)
            try:
                self._compact(self._data)
            except OSError as exc:
                raise self._startup_error(
                    f"cannot write the offsets file {self._path}: {self._why(exc)}",
                    f"make {self._path.parent} a writable directory, or point "
                    "offset.storage.file.filename somewhere writable",
                ) from None
        log.info(
            "offset_store_loaded",
            path=str(self._path),
            entries=len(self._data),
            journal_lines=replayed,
        )

    def stop(self) -> None:
        return None

    def refresh(self, timeout: float | None = None) -> None:
        """Nothing to wait for: this process is the file's only writer."""

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
        """Stores the entries (an offset of None removes its partition) in the journal
        first, then in memory: a write that fails changes neither.

        Raises:
            StorageError: the journal could not be written; it names the file.
        """
        changes = [
            (
                offsets_codec.encode_key(connector, partition),
                offsets_codec.encode_value(offset),
            )
            for partition, offset in entries
        ]
        with self._lock:
            self._save(_journal_line(changes))
            _apply(self._data, changes)
            if self._journal_bytes > max(MIN_JOURNAL_BYTES, self._snapshot_bytes):
                self._compact_quietly()

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

    def _save(self, line: bytes) -> None:
        """Appends ``line`` to the journal and fsyncs it; on failure, cuts the journal back
        to where it was, so that the next line does not follow a torn one.

        Raises:
            StorageError: the journal could not be written (the message names the offsets
                file and why); the offsets on disk are unchanged.
        """
        try:
            fd = os.open(self._journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise self._write_failed(exc) from None
        try:
            os.write(fd, line)
            os.fsync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, self._journal_bytes)
            except OSError:
                log.error("offsets_journal_not_cut_back", path=str(self._journal))
            raise self._write_failed(exc) from None
        finally:
            os.close(fd)
        self._journal_bytes += len(line)

    def _write_failed(self, exc: OSError) -> StorageError:
        log.error("offsets_file_write_failed", path=str(self._path), error=str(exc))
        return StorageError(
            f"Could not write the offsets file {self._path} "
            f"({OFFSET_FILE_PROPERTY}): {self._why(exc)}; nothing was changed"
        )

    def _replay_journal(self, data: dict[bytes, bytes]) -> int:
        """Applies the journal's whole lines to ``data``; returns how many. A line that
        fails its checksum (a write torn by a crash) ends the replay."""
        try:
            content = self._journal.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # none yet (or no directory: see _compact)
            return 0
        except OSError as exc:
            raise self._startup_error(
                f"cannot read the offsets journal {self._journal}: {exc.strerror or exc}",
                f"make {self._journal} readable, or move it away (the offsets committed "
                "since the last snapshot are then lost)",
            ) from None
        replayed = 0
        for raw in content.split(b"\n")[:-1]:
            changes = _parse_journal_line(raw)
            if changes is None:
                log.warning("offsets_journal_tail_dropped", path=str(self._journal),
                            after_lines=replayed)
                break
            _apply(data, changes)
            replayed += 1
        return replayed

    def _compact(self, data: dict[bytes, bytes]) -> None:
        """Writes ``data`` as the snapshot (atomically), then empties the journal."""
        self._snapshot_bytes = self._write_atomically(data)
        with self._journal.open("wb") as journal:
            journal.flush()
            os.fsync(journal.fileno())
        self._journal_bytes = 0

    def _compact_quietly(self) -> None:
        """Compacts after a put; the put is durable in the journal already, so a failure
        here is logged and compaction is tried again after the next put."""
        try:
            self._compact(self._data)
        except OSError as exc:
            log.warning("offsets_snapshot_not_written", path=str(self._path), error=str(exc))

    def _why(self, exc: OSError) -> str:
        """Why a write failed, saying so when the directory's path is taken by a file."""
        parent = self._path.parent
        if any(p.exists() and not p.is_dir() for p in (parent, *parent.parents)):
            return f"{parent} is not a directory (a file is in the way)"
        return exc.strerror or str(exc)

    def _write_atomically(self, data: dict[bytes, bytes]) -> int:
        """Replaces the snapshot with ``data``; returns its size in bytes."""
        document = {"offsets": [[json.loads(k), json.loads(v)] for k, v in data.items()]}
        encoded = json.dumps(document, indent=1).encode("utf-8")
        self._path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self._path.parent, prefix=self._path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(encoded)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self._path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _fsync_directory(self._path.parent)
        return len(encoded)


Change = tuple[bytes, bytes | None]


def _apply(data: dict[bytes, bytes], changes: Sequence[Change]) -> None:
    for key, value in changes:
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value


def _journal_line(changes: Sequence[Change]) -> bytes:
    """``<crc32 hex> [[key, value or null], ...]`` and a newline (key and value as JSON,
    which they already are)."""
    body = b"[%s]" % b",".join(b"[%s,%s]" % (k, b"null" if v is None else v) for k, v in changes)
    return b"%08x %s\n" % (zlib.crc32(body), body)


def _parse_journal_line(raw: bytes) -> list[Change] | None:
    """The changes of one journal line; None if it is torn or not a journal line."""
    checksum, _, body = raw.partition(b" ")
    try:
        if int(checksum, 16) != zlib.crc32(body):
            return None
        pairs = json.loads(body)
        return [
            (
                offsets_codec.encode_key(key[0], key[1]),
                offsets_codec.encode_value(None if value is None else dict(value)),
            )
            for key, value in pairs
        ]
    except (ValueError, TypeError, IndexError, KeyError):
        return None


def _fsync_directory(directory: Path) -> None:
    """Makes a rename in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
