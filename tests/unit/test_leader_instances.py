"""The leader's view of the instances to assign (issue 25): each connector's task ids,
kept as the same objects while its task count is, so that the leader's loop, which runs on
every config record, neither makes a thousand task ids each time nor compares them by value."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from connect_grpc.herder.leader_assignment import AssignmentPublisher
from connect_grpc.kernel.domain import TargetState, TaskId
from connect_grpc.storage.config_codec import (
    RawRecord,
    connector_config_records,
    extension_record,
    removal_records,
    target_state_records,
    task_config_records,
)
from connect_grpc.storage.config_snapshot import ConfigSnapshot, SnapshotBuilder, apply_record


@dataclass
class _Leader:
    _instances_of: Any = None

    _instances = AssignmentPublisher._instances


def _view(builder: SnapshotBuilder, records: list[RawRecord]) -> ConfigSnapshot:
    for key, value in records:
        apply_record(builder, key.decode(), value)
    return builder.build()


def _from_scratch(snapshot: ConfigSnapshot) -> dict[str, list[TaskId]]:
    return {
        name: [TaskId(name, n) for n in range(len(snapshot.task_configs(name)))]
        for name in snapshot.connectors
    }


def test_instances_follow_the_view_and_keep_their_task_ids_while_the_counts_hold() -> None:
    builder, leader = SnapshotBuilder(), _Leader()
    first = _view(builder, [
        *connector_config_records("a", {"k": "v"}),
        *task_config_records("a", [{"t": "0"}, {"t": "1"}]),
        *connector_config_records("b", {"k": "v"}),
        *task_config_records("b", [{"t": "0"}]),
        *connector_config_records("c", {"k": "v"}),
    ])
    instances = leader._instances(first)
    assert instances == _from_scratch(first)

    unchanged = _view(builder, [*target_state_records("a", TargetState.PAUSED),
                                extension_record("connect-grpc-x", 1)])
    assert leader._instances(unchanged) is instances

    changed = _view(builder, [
        *task_config_records("b", [{"t": "0"}, {"t": "1"}, {"t": "2"}]),
        *task_config_records("a", [{"t": "0"}, {"t": "changed"}]),
        *removal_records("c", 0),
        *connector_config_records("d", {"k": "v"}),
    ])
    again = leader._instances(changed)
    assert again == _from_scratch(changed)
    assert again["a"] is instances["a"]  # same count: the same task ids
    assert again["b"] == [TaskId("b", n) for n in range(3)]
