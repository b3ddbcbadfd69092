"""connect-grpc ctl's contexts file: where it lives, its format, and which worker wins."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from connect_grpc.ctl.contexts import (
    CONFIG_DIR_ENV,
    DEFAULT_TARGET,
    ContextsFile,
    check_target,
    config_dir,
    resolve_target,
)
from connect_grpc.kernel.errors import InvalidArgumentError, NotFoundError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(CONFIG_DIR_ENV, raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_config_dir_is_under_the_home_config_dir_by_default(home: Path) -> None:
    assert config_dir() == home / ".config" / "connect-grpc"


def test_config_dir_follows_xdg_then_the_override(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
    assert config_dir() == home / "xdg" / "connect-grpc"
    monkeypatch.setenv(CONFIG_DIR_ENV, str(home / "mine"))
    assert config_dir() == home / "mine"


@pytest.mark.parametrize(
    "target", ["localhost:8083", "127.0.0.1:1", "[::1]:65535", " worker-2:8084 ", "unix:/tmp/s"]
)
def test_valid_targets(target: str) -> None:
    assert check_target(target) == target.strip()


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("localhost", "expected HOST:PORT"),
        (":8083", "expected HOST:PORT"),
        ("host:", "must be a number"),
        ("host:http", "must be a number"),
        ("host:0", "from 1 to 65535"),
        ("host:65536", "from 1 to 65535"),
        ("unix:", "expected HOST:PORT"),
    ],
)
def test_invalid_targets_name_the_option(target: str, why: str) -> None:
    with pytest.raises(InvalidArgumentError) as excinfo:
        check_target(target)
    [violation] = excinfo.value.violations
    assert violation.field == "--target"
    assert why in violation.description


def test_contexts_round_trip_through_the_file(tmp_path: Path) -> None:
    path = tmp_path / "dir" / "contexts.json"
    contexts = ContextsFile.load(path)
    assert contexts.list() == []
    assert contexts.set_context("local", "localhost:8083") is True
    assert contexts.set_context("prod", "prod:8083") is True
    assert contexts.current == "local"  # the first one
    contexts.save()

    again = ContextsFile.load(path)
    assert [(c.name, c.target, c.current) for c in again.list()] == [
        ("local", "localhost:8083", True), ("prod", "prod:8083", False)
    ]
    again.use("prod")
    assert again.set_context("prod", "prod:9083") is False
    again.save()
    assert ContextsFile.load(path).current_context() == again.get("prod")
    assert ContextsFile.load(path).get("prod").target == "prod:9083"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_settings_of_a_later_version_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "contexts.json"
    path.write_text(json.dumps({
        "version": 2,
        "current-context": "secure",
        "contexts": {"secure": {"target": "w:8083", "keepalive": {"time-s": 30}}},
        "defaults": {"output": "json"},
    }))
    contexts = ContextsFile.load(path)
    assert contexts.get("secure").settings == {"keepalive": {"time-s": 30}}
    contexts.set_context("secure", "w:9083")
    contexts.set_context("other", "o:1")
    contexts.save()
    document = json.loads(path.read_text())
    assert document["contexts"]["secure"] == {"target": "w:9083", "keepalive": {"time-s": 30}}
    assert document["defaults"] == {"output": "json"}
    assert document["current-context"] == "secure"


def test_deleting_the_current_context_leaves_none_current(tmp_path: Path) -> None:
    contexts = ContextsFile.load(tmp_path / "contexts.json")
    contexts.set_context("a", "a:1")
    contexts.delete("a")
    assert contexts.current_context() is None and contexts.list() == []


def test_unknown_context_is_not_found_and_lists_the_known_ones(tmp_path: Path) -> None:
    contexts = ContextsFile.load(tmp_path / "contexts.json")
    contexts.set_context("a", "a:1")
    for action in (contexts.use, contexts.delete, contexts.get):
        with pytest.raises(NotFoundError, match=r"no context 'b'.*known: a"):
            action("b")


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("{", "contexts.json"),
        ("[]", "contexts.json"),
        ('{"contexts": []}', "contexts.json: contexts"),
        ('{"contexts": {"a": "x:1"}}', "contexts.json: contexts.a"),
        ('{"contexts": {"a": {"target": 1}}}', "contexts.json: contexts.a.target"),
        ('{"current-context": 3}', "contexts.json: current-context"),
    ],
)
def test_a_malformed_file_names_the_field(tmp_path: Path, content: str, field: str) -> None:
    path = tmp_path / "contexts.json"
    path.write_text(content)
    with pytest.raises(InvalidArgumentError) as excinfo:
        ContextsFile.load(path)
    assert excinfo.value.violations[0].field == f"{tmp_path}/{field}"


def test_which_worker_wins(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONFIG_DIR_ENV, str(home / "cfg"))
    assert resolve_target(None, None) == DEFAULT_TARGET
    contexts = ContextsFile.load()
    contexts.set_context("one", "one:1")
    contexts.set_context("two", "two:2")
    contexts.save()
    assert resolve_target(None, None) == "one:1"
    assert resolve_target(None, "two") == "two:2"
    assert resolve_target("flag:3", "two") == "flag:3"
    with pytest.raises(NotFoundError):
        resolve_target(None, "three")
