"""FileOffsetStore: start-up checks that name the file, and a failed write that names it and
changes nothing in memory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from connect_grpc.errors import ConnectError, StartupError
from connect_grpc.storage.file_offsets import FileOffsetStore


def test_round_trip(tmp_path: Path) -> None:
    store = FileOffsetStore(tmp_path / "o.json")
    store.start()
    store.put("c", [({"f": "a"}, {"pos": 3})])
    reloaded = FileOffsetStore(tmp_path / "o.json")
    reloaded.start()
    assert reloaded.get("c", {"f": "a"}) == {"pos": 3}


@pytest.mark.parametrize(
    ("content", "text"),
    [("{", "not valid JSON"), (json.dumps([1]), "expected"),
     (json.dumps({"offsets": [[1, 2, 3]]}), "expected")],
)
def test_corrupt_file_is_a_startup_error_naming_it(tmp_path: Path, content: str, text: str) -> None:
    path = tmp_path / "o.json"
    path.write_text(content)
    with pytest.raises(StartupError, match=text) as caught:
        FileOffsetStore(path).start()
    assert caught.value.file == str(path)
    assert caught.value.property_name == "offset.storage.file.filename"
    assert str(path) in caught.value.message and caught.value.fix


def test_directory_at_the_path_is_a_startup_error(tmp_path: Path) -> None:
    (tmp_path / "o.json").mkdir()
    with pytest.raises(StartupError, match="cannot read the offsets file"):
        FileOffsetStore(tmp_path / "o.json").start()


def test_failed_write_names_the_file_and_keeps_memory_unchanged(tmp_path: Path) -> None:
    directory = tmp_path / "offsets"
    path = directory / "o.json"
    store = FileOffsetStore(path)
    store.start()
    store.put("c", [({"f": "a"}, {"pos": 1})])
    shutil.rmtree(directory)
    directory.write_text("a file where the directory was")  # nothing can be written there now
    with pytest.raises(ConnectError, match=f"Could not write the offsets file {path}"):
        store.put("c", [({"f": "a"}, {"pos": 2}), ({"f": "b"}, {"pos": 9})])
    assert store.get("c", {"f": "a"}) == {"pos": 1}
    assert store.get("c", {"f": "b"}) is None
