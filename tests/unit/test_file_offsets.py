"""FileOffsetStore: start-up checks that name the file, and a failed write that names it,
changes nothing (file or memory) and answers UNAVAILABLE."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from google.rpc import code_pb2

from connect_grpc.api.errors import to_status
from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.kernel.domain import ConnectorOffset, TargetState
from connect_grpc.kernel.errors import StartupError, StorageError
from connect_grpc.storage.file_offsets import FileOffsetStore
from tests.unit.fake_worker import FakeWorker

SOURCE = "connect_grpc.testing.plugins.InstrumentedSourceConnector"


def _make_unwritable(directory: Path) -> None:
    """Replaces the directory with a plain file: nothing can be written under it, even as
    root (where a chmod would not stop a write)."""
    shutil.rmtree(directory)
    directory.write_text("a file where the directory was")


def test_round_trip(tmp_path: Path) -> None:
    store = FileOffsetStore(tmp_path / "o.json")
    store.start()
    store.put("c", [({"f": "a"}, {"pos": 3})])
    reloaded = FileOffsetStore(tmp_path / "o.json")
    reloaded.start()
    assert reloaded.get("c", {"f": "a"}) == {"pos": 3}
    assert reloaded.get_all("c") == [({"f": "a"}, {"pos": 3})]


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ("{", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (json.dumps([1]), "expected"),
        (json.dumps({"offsets": {"a": 1}}), "expected"),
        (json.dumps({"offsets": [[1, 2, 3]]}), "expected"),
        (json.dumps({"offsets": [[["c"], {"pos": 1}]]}), "expected"),
        (json.dumps({"offsets": [[[1, {"f": "a"}], {"pos": 1}]]}), "expected"),
        (json.dumps({"offsets": [[["c", {"f": "a"}], 7]]}), "expected"),
    ],
    ids=["truncated", "not utf-8", "a list", "offsets a map", "triple", "short key",
         "connector not a string", "offset not a map"],
)
def test_corrupt_file_is_a_startup_error_naming_it(
    tmp_path: Path, content: str | bytes, text: str
) -> None:
    path = tmp_path / "o.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(StartupError, match=text) as caught:
        FileOffsetStore(path).start()
    assert caught.value.file == str(path)
    assert caught.value.property_name == "offset.storage.file.filename"
    assert str(path) in caught.value.message and caught.value.fix
    assert caught.value.exit_code == 2


def test_directory_at_the_path_is_a_startup_error(tmp_path: Path) -> None:
    (tmp_path / "o.json").mkdir()
    with pytest.raises(StartupError, match="is a directory") as caught:
        FileOffsetStore(tmp_path / "o.json").start()
    assert caught.value.file == str(tmp_path / "o.json")


def test_unwritable_directory_is_a_startup_error(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    path = tmp_path / "plain" / "o.json"
    with pytest.raises(StartupError, match="plain is not a directory") as caught:
        FileOffsetStore(path).start()
    assert caught.value.file == str(path)


def test_failed_write_names_the_file_and_keeps_memory_and_file_unchanged(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "offsets"
    path = directory / "o.json"
    store = FileOffsetStore(path)
    store.start()
    store.put("c", [({"f": "a"}, {"pos": 1})])
    _make_unwritable(directory)
    with pytest.raises(StorageError, match=f"Could not write the offsets file {path}"):
        store.put("c", [({"f": "a"}, {"pos": 2}), ({"f": "b"}, {"pos": 9})])
    assert store.get("c", {"f": "a"}) == {"pos": 1}
    assert store.get("c", {"f": "b"}) is None
    assert store.get_all("c") == [({"f": "a"}, {"pos": 1})]


def test_disk_full_mid_write_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "o.json"
    store = FileOffsetStore(path)
    store.start()
    store.put("c", [({"f": "a"}, {"pos": 1})])
    before = path.read_bytes()

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    journal = tmp_path / "o.json.journal"
    journal_before = journal.read_bytes()
    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(StorageError, match="No space left on device"):
        store.put("c", [({"f": "a"}, {"pos": 2})])
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert journal.read_bytes() == journal_before  # the torn line was cut back
    assert sorted(tmp_path.iterdir()) == [path, journal]  # no temporary file left behind
    assert store.get("c", {"f": "a"}) == {"pos": 1}
    store.put("c", [({"f": "b"}, {"pos": 3})])
    reloaded = FileOffsetStore(path)
    reloaded.start()
    assert sorted(map(str, reloaded.get_all("c"))) == sorted(
        map(str, [({"f": "a"}, {"pos": 1}), ({"f": "b"}, {"pos": 3})])
    )


def test_storage_error_answers_unavailable_with_the_path() -> None:
    status = to_status(StorageError("Could not write the offsets file /x/o.json: Read-only"))
    assert status.code == code_pb2.UNAVAILABLE
    assert "/x/o.json" in status.message


def test_alter_offsets_on_an_unwritable_file_names_it_and_changes_nothing(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "store"
    path = directory / "offsets.json"
    config = WorkerConfig.from_properties(
        {"bootstrap.servers": "127.0.0.1:1", "listeners": "grpc://127.0.0.1:0", "worker.id": "w"}
    )
    herder = StandaloneHerder(
        config, Plugins(include_testing=True), FileOffsetStore(path), FakeWorker
    )
    herder.start()
    connector = {"connector.class": SOURCE, "tasks.max": "1",
                 "test.events.file": str(tmp_path / "events.jsonl")}
    herder.create_connector("c", connector, TargetState.STOPPED)
    herder.alter_offsets("c", [ConnectorOffset({"p": 0}, {"pos": 1})])
    _make_unwritable(directory)
    for change in (lambda: herder.alter_offsets("c", [ConnectorOffset({"p": 0}, {"pos": 5})]),
                   lambda: herder.reset_offsets("c")):
        with pytest.raises(StorageError, match=str(path)):
            change()
    assert herder.connector_offsets("c") == [ConnectorOffset({"p": 0}, {"pos": 1})]


def _reloaded(path: Path) -> FileOffsetStore:
    store = FileOffsetStore(path)
    store.start()
    return store


def test_a_commit_appends_what_it_changes_and_leaves_the_snapshot_alone(tmp_path: Path) -> None:
    path = tmp_path / "o.json"
    store = FileOffsetStore(path)
    store.start()
    store.put("c", [({"p": n}, {"pos": n}) for n in range(20_000)])
    store = _reloaded(path)  # start-up folds the journal into the snapshot
    snapshot = path.read_bytes()
    journal = tmp_path / "o.json.journal"
    assert journal.stat().st_size == 0
    store.put("c", [({"p": 7}, {"pos": 70})])
    assert path.read_bytes() == snapshot
    assert journal.stat().st_size < 100  # one line for one partition, not 20 000
    assert _reloaded(path).get("c", {"p": 7}) == {"pos": 70}


def test_a_torn_last_journal_line_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "o.json"
    store = FileOffsetStore(path)
    store.start()
    store.put("c", [({"p": 0}, {"pos": 1})])
    store.put("c", [({"p": 0}, {"pos": 2})])
    journal = tmp_path / "o.json.journal"
    whole = journal.read_bytes()
    journal.write_bytes(whole[: len(whole) - 5])  # the second line torn by a crash
    assert _reloaded(path).get("c", {"p": 0}) == {"pos": 1}
    journal.write_bytes(whole.replace(b'"pos":2', b'"pos":3'))  # bytes changed: bad checksum
    assert _reloaded(path).get("c", {"p": 0}) == {"pos": 1}


def test_the_snapshot_is_rewritten_once_the_journal_outgrows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("connect_grpc.storage.file_offsets.MIN_JOURNAL_BYTES", 200)
    path = tmp_path / "o.json"
    store = FileOffsetStore(path)
    store.start()
    for n in range(20):
        store.put("c", [({"p": n % 3}, {"pos": n})])
    journal = tmp_path / "o.json.journal"
    assert journal.stat().st_size <= 400
    assert json.loads(path.read_text())["offsets"]  # the snapshot holds folded commits
    reloaded = _reloaded(path)
    assert [reloaded.get("c", {"p": p}) for p in range(3)] == [
        {"pos": 18}, {"pos": 19}, {"pos": 17}
    ]


def test_a_journal_replayed_over_a_snapshot_that_holds_it_changes_nothing(
    tmp_path: Path,
) -> None:
    """A crash after the snapshot's rename but before the journal was emptied."""
    path = tmp_path / "o.json"
    store = FileOffsetStore(path)
    store.start()
    store.put("c", [({"p": 0}, {"pos": 1})])
    store.put("c", [({"p": 0}, None), ({"p": 1}, {"pos": 5})])
    journal = (tmp_path / "o.json.journal").read_bytes()
    store = _reloaded(path)  # folds the journal into the snapshot
    (tmp_path / "o.json.journal").write_bytes(journal)
    reloaded = _reloaded(path)
    assert reloaded.get_all("c") == [({"p": 1}, {"pos": 5})]


_COMMIT_LOOP = """
import sys
from pathlib import Path
from connect_grpc.logs.output import configure_logging
from connect_grpc.storage import file_offsets
configure_logging()  # logs to stderr: stdout carries the acknowledged commits
file_offsets.MIN_JOURNAL_BYTES = 4096  # compactions happen during the loop too
store = file_offsets.FileOffsetStore(Path(sys.argv[1]))
store.start()
n = 0
while True:
    n += 1
    store.put("c", [({"p": p}, {"pos": n}) for p in range(50)])
    print(n, flush=True)
"""


@pytest.mark.parametrize("after_commits", [3, 40, 400])
def test_kill_9_mid_commit_leaves_the_previous_or_the_new_offsets(
    tmp_path: Path, after_commits: int
) -> None:
    path = tmp_path / "o.json"
    child = subprocess.Popen(
        [sys.executable, "-c", _COMMIT_LOOP, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    acknowledged = 0
    try:
        while acknowledged < after_commits:
            line = child.stdout.readline()
            assert line, "the committing process ended"
            acknowledged = int(line)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    acknowledged = max([acknowledged, *(int(n) for n in child.stdout.read().split())])
    child.stdout.close()
    offsets = {str(partition): offset["pos"] for partition, offset in _reloaded(path).get_all("c")}
    assert len(offsets) == 50
    assert len(set(offsets.values())) == 1, "a commit was applied in part"
    assert set(offsets.values()) <= {acknowledged, acknowledged + 1}
