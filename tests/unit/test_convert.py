"""Proto ⇄ domain conversion: exact offsets, states, enums."""

from __future__ import annotations

import pytest

from connect_grpc.api import convert
from connect_grpc.kernel.domain import (
    ConnectorOffset,
    ConnectorStatus,
    ConnectorType,
    InstanceStatus,
    State,
    TargetState,
    TaskStatus,
)
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.v1 import connect_pb2 as pb

MAX_LONG = 2**63 - 1


def test_offsets_round_trip_exactly_through_the_wire() -> None:
    offset = ConnectorOffset(
        partition={"filename": "/tmp/a", "shard": 3, "flag": True, "none": None},
        offset={"position": MAX_LONG, "ratio": 0.5, "neg": -(2**63)},
    )
    wire = convert.connector_offset_to_pb(offset).SerializeToString()
    parsed = pb.ConnectorOffset.FromString(wire)
    (back,) = convert.connector_offsets_from_pb([parsed], "offsets")
    assert back == offset
    assert back.offset is not None and isinstance(back.offset["position"], int)
    assert isinstance(back.partition and back.partition["flag"], bool)


def test_absent_offset_and_partition_stay_absent() -> None:
    (back,) = convert.connector_offsets_from_pb([pb.ConnectorOffset()], "offsets")
    assert back == ConnectorOffset(None, None)


def test_value_without_kind_names_the_field() -> None:
    message = pb.ConnectorOffset(partition=pb.OffsetFields(fields={"k": pb.OffsetValue()}))
    with pytest.raises(InvalidArgumentError) as excinfo:
        convert.connector_offsets_from_pb([message], "offsets")
    assert excinfo.value.violations[0].field == "offsets[0].partition.k"


def test_an_offset_value_without_kind_names_its_entry_and_map() -> None:
    good = pb.ConnectorOffset(
        partition=pb.OffsetFields(fields={"f": pb.OffsetValue(string_value="a")}),
        offset=pb.OffsetFields(fields={"position": pb.OffsetValue(integer_value=1)}),
    )
    bad = pb.ConnectorOffset(
        partition=pb.OffsetFields(fields={"f": pb.OffsetValue(string_value="b")}),
        offset=pb.OffsetFields(fields={"position": pb.OffsetValue()}),
    )
    with pytest.raises(InvalidArgumentError) as excinfo:
        convert.connector_offsets_from_pb([good, good, bad], "initial_offsets.offsets")
    violation = excinfo.value.violations[0]
    assert violation.field == "initial_offsets.offsets[2].offset.position"
    assert violation.description == "value has no kind set"


def test_one_offset_map_without_kind_names_the_field() -> None:
    message = pb.OffsetFields(fields={"a": pb.OffsetValue(bool_value=True), "b": pb.OffsetValue()})
    with pytest.raises(InvalidArgumentError) as excinfo:
        convert.offset_map_from_pb(message, "offset")
    assert excinfo.value.violations[0].field == "offset.b"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (pb.INITIAL_STATE_UNSPECIFIED, TargetState.STARTED),
        (pb.INITIAL_STATE_RUNNING, TargetState.STARTED),
        (pb.INITIAL_STATE_PAUSED, TargetState.PAUSED),
        (pb.INITIAL_STATE_STOPPED, TargetState.STOPPED),
    ],
)
def test_initial_state_from_pb(value: int, expected: TargetState) -> None:
    assert convert.initial_state_from_pb(value) is expected


def test_unknown_initial_state_number_is_invalid_argument() -> None:
    with pytest.raises(InvalidArgumentError) as excinfo:
        convert.initial_state_from_pb(42)
    assert excinfo.value.violations[0].field == "initial_state"


def test_every_state_has_a_distinct_proto_value() -> None:
    values = {convert.state_to_pb(state) for state in State}
    assert len(values) == len(State)
    for state in State:
        assert convert.state_from_pb(convert.state_to_pb(state)) is state


def test_connector_status_to_pb() -> None:
    status = ConnectorStatus(
        "c",
        InstanceStatus(State.RUNNING, "w1"),
        (TaskStatus(0, InstanceStatus(State.FAILED, "w1", "boom")),),
        ConnectorType.SINK,
    )
    message = convert.connector_status_to_pb(status)
    assert message.connector.state == pb.INSTANCE_STATE_RUNNING
    assert message.tasks[0].trace == "boom"
    assert message.tasks[0].state == pb.INSTANCE_STATE_FAILED
    assert message.type == pb.CONNECTOR_TYPE_SINK


@pytest.mark.parametrize(
    ("text", "expected"),
    [("running", TargetState.STARTED), ("Paused", TargetState.PAUSED),
     (" STOPPED ", TargetState.STOPPED)],
)
def test_initial_state_text_is_case_insensitive(text: str, expected: TargetState) -> None:
    assert TargetState.parse_initial(text) is expected


@pytest.mark.parametrize("text", ["STARTED", "", "run", "DELETED"])
def test_bad_initial_state_text_is_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="initial_state"):
        TargetState.parse_initial(text)
