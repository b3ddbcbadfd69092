"""What connect-grpc ctl prints: machine documents, plain tables, errors and exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import grpc
import pytest
import yaml

from connect_grpc.client.convert import ConnectorListing
from connect_grpc.config.connector_files import load_offsets_file, parse_offsets
from connect_grpc.ctl import documents
from connect_grpc.ctl.cmd_read import answered_by
from connect_grpc.ctl.exit_codes import (
    EXIT_CODE_TABLE,
    ExitCode,
    exit_code_for,
    failure_of,
    timed_out,
)
from connect_grpc.ctl.render import plain_table, trace_summary
from connect_grpc.kernel.domain import (
    ClusterInfo,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStatus,
    ConnectorType,
    InstanceStatus,
    PluginDesc,
    State,
    TaskId,
    TaskStatus,
    WorkerDesc,
)
from connect_grpc.kernel.errors import (
    AlreadyExistsError,
    ConnectError,
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
    NotFoundError,
    PreconditionViolation,
    UnavailableError,
)
from tests.documents import CTL, section_text

LONG_MAX = 2**63 - 1

OFFSETS = [
    ConnectorOffset({"task": 0}, {"seq": LONG_MAX}),
    ConnectorOffset({"kafka_topic": "t", "kafka_partition": 2}, {"kafka_offset": -0.5}),
    ConnectorOffset({"filename": "/in.txt"}, None),
]


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_offsets_document_round_trips_exactly(output: str, tmp_path: Path) -> None:
    text = documents.render(documents.offsets(OFFSETS), output)
    parsed = json.loads(text) if output == "json" else yaml.safe_load(text)
    assert parse_offsets("offsets", parsed["offsets"]) == OFFSETS
    if output == "json":  # what `offsets alter -f` reads
        path = tmp_path / "offsets.json"
        path.write_text(text)
        assert load_offsets_file(path) == OFFSETS


def test_offsets_file_may_be_the_bare_list_and_errors_name_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "o.json"
    path.write_text(json.dumps([{"partition": {"task": 1}, "offset": {"seq": 3}}]))
    assert load_offsets_file(path) == [ConnectorOffset({"task": 1}, {"seq": 3})]
    path.write_text(json.dumps({"offsets": [{"partition": {"task": [1]}}]}))
    with pytest.raises(InvalidArgumentError) as excinfo:
        load_offsets_file(path)
    assert excinfo.value.violations[0].field == f"{path}: offsets[0].partition.task"
    path.write_text(json.dumps({"offset": []}))
    with pytest.raises(InvalidArgumentError, match="offsets: required"):
        load_offsets_file(path)


def _status() -> ConnectorStatus:
    return ConnectorStatus(
        "c",
        InstanceStatus(State.RUNNING, "w1"),
        (TaskStatus(0, InstanceStatus(State.RUNNING, "w1")),
         TaskStatus(1, InstanceStatus(State.FAILED, "w2", "Traceback\n  boom\nValueError: x"),
                    transactional_id="g-c-1")),
        ConnectorType.SOURCE,
    )


def test_listing_document_has_the_table_columns_and_kafka_connect_statuses() -> None:
    info = ConnectorInfo("c", {"connector.class": "Seq", "name": "c"},
                         (TaskId("c", 0), TaskId("c", 1)), ConnectorType.SOURCE, "e7a1")
    [row] = documents.listings([ConnectorListing("c", info, _status())])["connectors"]
    assert row == {
        "name": "c", "type": "source", "class": "Seq", "state": "RUNNING", "worker_id": "w1",
        "tasks_running": 1, "tasks_total": 2,
        "tasks": [
            {"id": 0, "state": "RUNNING", "worker_id": "w1", "trace": ""},
            {"id": 1, "state": "FAILED", "worker_id": "w2",
             "trace": "Traceback\n  boom\nValueError: x", "transactional_id": "g-c-1"},
        ],
        "config": {"connector.class": "Seq", "name": "c"},
        "etag": "e7a1",
    }


def test_description_says_why_offsets_are_missing() -> None:
    info = ConnectorInfo("c", {}, (), ConnectorType.SINK)
    described = documents.description(info, _status(), None, "UNAVAILABLE: Kafka is down")
    assert described["offsets"] is None
    assert described["offsets_error"] == "UNAVAILABLE: Kafka is down"
    assert "offsets_error" not in documents.description(info, _status(), [], None)


def test_plain_table_aligns_columns_without_trailing_spaces() -> None:
    lines = plain_table(["NAME", "STATE", "ERROR"], [["a-long-name", "RUNNING", ""],
                                                      ["b", "FAILED", "boom"]])
    assert lines == ["NAME         STATE    ERROR", "a-long-name  RUNNING",
                     "b            FAILED   boom"]


@pytest.mark.parametrize(
    ("trace", "summary"),
    [
        ("", ""),
        ("Traceback (most recent call last):\n  File x\nValueError: bad\n", "ValueError: bad"),
        ("org.apache.kafka.ConnectException: bad\n\tat Foo.bar",
         "org.apache.kafka.ConnectException: bad"),
    ],
)
def test_trace_summary_is_the_line_naming_the_error(trace: str, summary: str) -> None:
    assert trace_summary(trace) == summary


@pytest.mark.parametrize(
    ("code", "exit_code"),
    [
        (grpc.StatusCode.OK, ExitCode.OK),
        (grpc.StatusCode.NOT_FOUND, 3),
        (grpc.StatusCode.INVALID_ARGUMENT, 4),
        (grpc.StatusCode.OUT_OF_RANGE, 4),
        (grpc.StatusCode.FAILED_PRECONDITION, 5),
        (grpc.StatusCode.ALREADY_EXISTS, 6),
        (grpc.StatusCode.UNAVAILABLE, 7),
        (grpc.StatusCode.DEADLINE_EXCEEDED, 7),
        (grpc.StatusCode.ABORTED, 10),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, 7),
        (grpc.StatusCode.PERMISSION_DENIED, 8),
        (grpc.StatusCode.UNAUTHENTICATED, 8),
        (grpc.StatusCode.INTERNAL, 1),
        (grpc.StatusCode.UNKNOWN, 1),
        (grpc.StatusCode.UNIMPLEMENTED, 1),
        (grpc.StatusCode.CANCELLED, 1),
    ],
)
def test_exit_code_follows_the_grpc_code(code: grpc.StatusCode, exit_code: int) -> None:
    assert exit_code_for(code) == exit_code


def test_failure_shows_code_message_and_every_violation() -> None:
    invalid = InvalidArgumentError("2 bad values", [
        FieldViolation("config.tasks.max", "not a number"),
        FieldViolation("config.topic", "required"),
    ])
    assert failure_of(invalid).lines() == [
        "Error: INVALID_ARGUMENT: 2 bad values",
        "  config.tasks.max: not a number",
        "  config.topic: required",
    ]
    assert failure_of(invalid).exit_code == 4
    precondition = FailedPreconditionError("stop it first", [
        PreconditionViolation("STATE", "c", "connector is not STOPPED")])
    assert failure_of(precondition).lines() == [
        "Error: FAILED_PRECONDITION: stop it first", "  STATE c: connector is not STOPPED"]
    assert failure_of(UnavailableError("no leader", 0.5)).lines() == [
        "Error: UNAVAILABLE: no leader",
        "  the worker asked to retry after 0.5 s: run the command again"]
    assert failure_of(NotFoundError("no c")).exit_code == 3
    assert failure_of(AlreadyExistsError("c exists")).exit_code == 6
    assert failure_of(ConnectError("?")).exit_code == 1
    assert timed_out("too slow").lines() == ["Error: DEADLINE_EXCEEDED: too slow"]
    assert timed_out("too slow").exit_code == 7


def test_a_violation_that_repeats_the_message_is_not_shown_twice() -> None:
    error = InvalidArgumentError.for_field("f.json: name", "required")
    assert failure_of(error).lines() == ["Error: INVALID_ARGUMENT: f.json: name: required"]


def test_readme_documents_the_exit_codes_help_prints() -> None:
    """docs/ctl.md's exit-code table is the one ``--help`` prints."""
    section = section_text(CTL, "# Command line: `connect-grpc ctl`")
    rows = re.findall(r"^\s*\| (\d+) \| (.+?) \|$", section, flags=re.MULTILINE)
    assert [(int(code), when) for code, when in rows] == [
        (int(code), when) for code, when in EXIT_CODE_TABLE
    ]


def test_plugins_document_shows_kafkas_plugin_type() -> None:
    found = documents.plugins([
        PluginDesc("a.Source", ConnectorType.SOURCE, "1", ("Source",), plugin_type="source"),
        PluginDesc("org.apache.kafka.connect.json.JsonConverter", ConnectorType.UNKNOWN, "1",
                   ("Json",), plugin_type="header_converter"),
    ])
    assert [p["type"] for p in found["plugins"]] == ["source", "header_converter"]


@pytest.mark.parametrize(
    ("joined", "line"),
    [(True, "w2"), (False, "w2 (not in the group yet: the last assignment it read)")],
)
def test_the_cluster_document_says_whether_the_answering_worker_has_joined(
    joined: bool, line: str
) -> None:
    info = ClusterInfo(
        version="1", mode="distributed", kafka_cluster_id="k", leader_id="w1",
        leader_address="h:1", workers=(WorkerDesc("w1", "h:1"),), generation=3,
        worker_id="w2", joined=joined,
    )
    found = documents.cluster(info)
    assert found["joined"] is joined
    assert answered_by(found) == line


def test_a_refused_create_lists_each_error_once() -> None:
    """The worker's message (Kafka Connect's text) already has a ``key: message`` line per
    error; the violations that repeat them are not printed again."""
    message = ("Connector configuration is invalid and contains the following 2 error(s):\n"
               "tasks.max: not a number\nvalue.converter: no converter\n"
               "You can also find the above list of errors by calling ValidateConfig")
    error = InvalidArgumentError(message, [
        FieldViolation("config.tasks.max", "not a number"),
        FieldViolation("config.value.converter", "no converter"),
        FieldViolation("config.topic", "required"),  # not in the message: shown
    ])
    assert failure_of(error).lines() == [
        "Error: INVALID_ARGUMENT: Connector configuration is invalid and contains the "
        "following 2 error(s):",
        "  config.tasks.max: not a number",
        "  config.value.converter: no converter",
        "  config.topic: required",
        "  You can also find the above list of errors by calling ValidateConfig",
    ]
