"""FileOffsetStore: start-up checks that name the file, and a failed write that names it,
changes nothing (file or memory) and answers UNAVAILABLE."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pytest
from google.rpc import code_pb2

from connect_grpc.api.errors import to_status
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.domain import ConnectorOffset, TargetState
from connect_grpc.errors import StartupError, StorageError
from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.storage.file_offsets import FileOffsetStore
from connect_grpc.worker_config import WorkerConfig
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

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(StorageError, match="No space left on device"):
        store.put("c", [({"f": "a"}, {"pos": 2})])
    assert path.read_bytes() == before
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind
    assert store.get("c", {"f": "a"}) == {"pos": 1}


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
