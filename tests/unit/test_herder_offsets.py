"""Source offsets through the standalone herder (KIP-875/KIP-995): the STOPPED precondition,
merge, reset, the plugin hook's outcomes and create with initial offsets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from connect_grpc.herder.standalone import StandaloneHerder
from connect_grpc.kernel.domain import ConnectorOffset, TargetState
from connect_grpc.kernel.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    StorageError,
)
from connect_grpc.testing.plugins import read_events

SOURCE = "connect_grpc.testing.plugins.InstrumentedSourceConnector"
FRAMEWORK_ALTERED = "The Connect framework-managed offsets for this connector have been altered"


def _config(tmp_path: Path, hook: str = "true") -> dict[str, str]:
    return {"connector.class": SOURCE, "tasks.max": "1", "test.alter.offsets": hook,
            "test.events.file": str(tmp_path / "events.jsonl")}


def _offset(partition: int, position: int | None) -> ConnectorOffset:
    return ConnectorOffset({"p": partition}, None if position is None else {"pos": position})


def _stored(herder: StandaloneHerder, name: str) -> dict[object, object]:
    return {o.partition["p"]: dict(o.offset or {}) for o in herder.connector_offsets(name)
            if o.partition is not None}


@pytest.mark.parametrize("state", [TargetState.STARTED, TargetState.PAUSED])
def test_alter_and_reset_need_stopped(
    herder: StandaloneHerder, tmp_path: Path, state: TargetState
) -> None:
    herder.create_connector("c", _config(tmp_path), state)
    for call in (lambda: herder.alter_offsets("c", [_offset(0, 1)]),
                 lambda: herder.reset_offsets("c")):
        with pytest.raises(FailedPreconditionError, match="StopConnector"):
            call()
    assert herder.connector_offsets("c") == []


def test_alter_merges_and_absent_offset_resets_one_partition(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector("c", _config(tmp_path), TargetState.STOPPED)
    message = herder.alter_offsets("c", [_offset(0, 1), _offset(1, 2)]).message
    assert message == "The offsets for this connector have been altered successfully"
    herder.alter_offsets("c", [_offset(1, None), _offset(2, 2**63 - 1)])
    assert _stored(herder, "c") == {0: {"pos": 1}, 2: {"pos": 2**63 - 1}}


def test_reset_is_idempotent(herder: StandaloneHerder, tmp_path: Path) -> None:
    herder.create_connector("c", _config(tmp_path, hook="false"), TargetState.STOPPED)
    herder.alter_offsets("c", [_offset(0, 1)])
    for _ in range(2):
        message = herder.reset_offsets("c").message
        assert message.startswith("The Connect framework-managed offsets")
        assert "manually reset" in message
        assert herder.connector_offsets("c") == []


def test_hook_refusals_change_nothing(herder: StandaloneHerder, tmp_path: Path) -> None:
    herder.create_connector("c", _config(tmp_path, hook="unsupported"), TargetState.STOPPED)
    with pytest.raises(FailedPreconditionError, match="does not support external modification"):
        herder.alter_offsets("c", [_offset(0, 1)])
    herder.put_connector_config("c", _config(tmp_path, hook="invalid"))
    with pytest.raises(InvalidArgumentError):
        herder.alter_offsets("c", [_offset(0, 1)])
    assert herder.connector_offsets("c") == []
    hooks = [e for e in read_events(tmp_path / "events.jsonl") if e["event"] == "alter_offsets"]
    assert len(hooks) == 2


def test_hook_returning_false_gives_the_framework_message(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector("c", _config(tmp_path, hook="false"), TargetState.STOPPED)
    assert herder.alter_offsets("c", [_offset(0, 1)]).message.startswith(FRAMEWORK_ALTERED)


def test_empty_alter_is_invalid(herder: StandaloneHerder, tmp_path: Path) -> None:
    herder.create_connector("c", _config(tmp_path), TargetState.STOPPED)
    with pytest.raises(InvalidArgumentError, match="Partitions / offsets need to be provided"):
        herder.alter_offsets("c", [])


def test_create_with_initial_offsets_wipes_old_ones(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    herder.create_connector("c", _config(tmp_path), TargetState.STOPPED)
    herder.alter_offsets("c", [_offset(7, 7)])
    herder.delete_connector("c")
    result = herder.create_connector(
        "c", _config(tmp_path), TargetState.STOPPED, [_offset(0, 3)]
    )
    assert result.offsets_message == "The offsets for this connector have been set successfully"
    assert _stored(herder, "c") == {0: {"pos": 3}}


def test_initial_offsets_that_cannot_be_written_leave_the_old_ones(
    herder: StandaloneHerder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    herder.create_connector("c", _config(tmp_path), TargetState.STOPPED)
    herder.alter_offsets("c", [_offset(7, 7)])
    herder.delete_connector("c")

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(StorageError, match="write initial offsets"):
        herder.create_connector("c", _config(tmp_path), TargetState.STOPPED, [_offset(0, 3)])
    monkeypatch.undo()
    herder.create_connector("c", _config(tmp_path), TargetState.STOPPED)
    assert _stored(herder, "c") == {7: {"pos": 7}}


def test_create_with_rejected_initial_offsets_leaves_no_connector(
    herder: StandaloneHerder, tmp_path: Path
) -> None:
    with pytest.raises(FailedPreconditionError, match="validate initial offsets"):
        herder.create_connector(
            "c", _config(tmp_path, hook="unsupported"), TargetState.STOPPED, [_offset(0, 1)]
        )
    with pytest.raises(InvalidArgumentError, match="validate initial offsets"):
        herder.create_connector("c", _config(tmp_path), TargetState.STOPPED, [])
    bad_config = {**_config(tmp_path), "tasks.max": "0"}
    with pytest.raises(InvalidArgumentError, match="validate config"):
        herder.create_connector("c", bad_config, TargetState.STOPPED, [_offset(0, 1)])
    with pytest.raises(NotFoundError):
        herder.connector_config("c")
