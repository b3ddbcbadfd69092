"""Standalone connector files: properties, flat JSON, and JSON create requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connect_grpc.config.connector_files import load_connector_file
from connect_grpc.kernel.domain import ConnectorOffset, TargetState
from connect_grpc.kernel.errors import InvalidArgumentError


def test_properties_file(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("# comment\nname=src\nconnector.class = FileStreamSource\ntasks.max: 1\n")
    request = load_connector_file(path)
    assert request.name == "src"
    assert request.config == {"name": "src", "connector.class": "FileStreamSource",
                              "tasks.max": "1"}
    assert request.initial_state is TargetState.STARTED


def test_flat_json_file(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"name": "src", "connector.class": "X", "tasks.max": 2,
                                "flag": True}))
    request = load_connector_file(path)
    assert request.config == {"name": "src", "connector.class": "X", "tasks.max": "2",
                              "flag": "true"}


def test_create_request_json_with_state_and_offsets(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({
        "name": "src", "config": {"connector.class": "X"}, "initial_state": "paused",
        "initial_offsets": [{"partition": {"filename": "/a"}, "offset": {"position": 2**63 - 1}}],
        "unknown_field": {"ignored": True},
    }))
    request = load_connector_file(path)
    assert request.name == "src"
    assert request.initial_state is TargetState.PAUSED
    assert request.initial_offsets == [
        ConnectorOffset({"filename": "/a"}, {"position": 2**63 - 1})
    ]


@pytest.mark.parametrize("state", ["STARTED", "", 3])
def test_bad_initial_state_names_the_field(tmp_path: Path, state: object) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"name": "s", "config": {}, "initial_state": state}))
    with pytest.raises(InvalidArgumentError) as excinfo:
        load_connector_file(path)
    assert "initial_state" in excinfo.value.violations[0].field


def test_nested_config_value_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"name": "s", "config": {"a": {"b": 1}}}))
    with pytest.raises(InvalidArgumentError, match=r"config\.a"):
        load_connector_file(path)
