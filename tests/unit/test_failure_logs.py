"""What a failure writes to the log, through the worker's real log set-up (in a child
process: logging is process-wide): a record that failed a stage and was tolerated gives
one ERROR line in Kafka Connect's words, never the record's content unless
``errors.log.include.messages`` asks for it, and no renderer prints a frame's local
variables; py4j's DEBUG line of its authentication command hides the gateway's secret."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

RECORD_BYTES = "RECORD-BYTES-7f3a"
#: Looks like the Py4J gateway's secret (64 hex digits), as py4j's DEBUG line carries it.
TOKEN = "3f" * 32

_FAILED_RECORD = f"""
import logging, sys
from dataclasses import replace
from connect_grpc.connectors.api import SinkRecord
from connect_grpc.pipeline.config import ErrorHandling
from connect_grpc.kernel.domain import TaskId
from connect_grpc.logs.output import configure_logging
from connect_grpc.metrics.worker_metrics import ErrorCounts
from connect_grpc.pipeline.tolerance import (
    LogReporter, ProcessingContext, RetryWithToleranceOperator, Stage,
)
from connect_grpc.testing.pipeline_plugins import PickyBytesConverter

log_format, include_messages, debug = sys.argv[1], sys.argv[2] == "true", sys.argv[3] == "true"
configure_logging(log_format)
if debug:
    logging.getLogger("connect_grpc.pipeline.tolerance").setLevel(logging.DEBUG)
errors = ErrorHandling(
    retry_timeout_ms=0, retry_delay_max_ms=60000, tolerate_all=True, log_enable=True,
    log_include_messages=include_messages, dlq_topic="", dlq_replication_factor=3,
    dlq_context_headers=False,
)
counts = ErrorCounts()
reporter = LogReporter(TaskId("orders-sink", 3), errors, counts)
operator = RetryWithToleranceOperator(errors, [reporter], counts)
record = SinkRecord("orders", 1, 42, b"key", b"poison-{RECORD_BYTES}", 1_700_000_000_000)
converter = PickyBytesConverter()
context = ProcessingContext(record)
converted = operator.execute(
    context, lambda: converter.to_connect_data(record.topic, None, record.value),
    Stage.VALUE_CONVERTER, converter,
)
assert converted is None and counts.logged == 1 and counts.skipped == 1
"""


def _run(script: str, *args: str) -> str:
    run = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True, text=True, timeout=60, check=True,
    )
    assert run.stdout == ""
    return run.stderr


@pytest.mark.parametrize("log_format", ["console", "json"])
def test_a_tolerated_record_failure_is_one_short_line_without_the_record(log_format: str) -> None:
    logged = _run(_FAILED_RECORD, log_format, "false", "false")
    [line] = logged.splitlines()
    assert RECORD_BYTES not in logged
    assert "Traceback" not in logged
    assert (
        "Error encountered in task orders-sink-3. Executing stage 'VALUE_CONVERTER' with class "
        "'connect_grpc.testing.pipeline_plugins.PickyBytesConverter'." in line
    )
    # the exception, as the line's cause: its type and message
    assert (
        "connect_grpc.data.errors.DataError: PickyBytesConverter refuses a poisoned value"
        in line
    )
    if log_format == "json":
        event = json.loads(line)
        assert (event["event"], event["level"], event["connector"], event["task"]) == (
            "record_failed", "error", "orders-sink", 3,
        )
        assert event["stage"] == "VALUE_CONVERTER"


@pytest.mark.parametrize("log_format", ["console", "json"])
def test_include_messages_shows_the_record_as_kafka_connect_does(log_format: str) -> None:
    logged = _run(_FAILED_RECORD, log_format, "true", "false")
    [line] = logged.splitlines()
    assert (
        "where consumed record is {topic='orders', partition=1, offset=42, "
        "timestamp=1700000000000, timestampType=CreateTime}." in line
    )
    # Kafka Connect's line names where the record is, not its bytes
    assert RECORD_BYTES not in logged


@pytest.mark.parametrize("log_format", ["console", "json"])
def test_the_traceback_is_a_debug_event_and_shows_no_local_variables(log_format: str) -> None:
    """``rich`` is installed: structlog's console renderer would print every frame's locals
    (the record's bytes among them) unless told not to."""
    logged = _run(_FAILED_RECORD, log_format, "false", "true")
    assert "record_failure_traceback" in logged
    assert "Traceback (most recent call last)" in logged
    assert "PickyBytesConverter refuses a poisoned value" in logged
    assert RECORD_BYTES not in logged


_PLUGIN_EXCEPTION = f"""
import structlog
from connect_grpc.logs.output import configure_logging

configure_logging("console")

def put(records):
    payload = records[0]
    raise ValueError("the sink refused a record")

try:
    put([b"{RECORD_BYTES}"])
except ValueError:
    structlog.get_logger("plugin").exception("put_failed")
"""


def test_no_renderer_prints_local_variables_of_any_exception() -> None:
    logged = _run(_PLUGIN_EXCEPTION)
    assert "ValueError: the sink refused a record" in logged
    assert RECORD_BYTES not in logged


_PY4J_DEBUG = f"""
import logging, sys
from connect_grpc.logs.output import configure_logging

configure_logging(sys.argv[1])
for name in ("py4j", "py4j.clientserver", "py4j.java_gateway"):
    logging.getLogger(name).setLevel(logging.DEBUG)
command = "A\\n{TOKEN}\\n"
# py4j's own calls (clientserver.py, java_gateway.py)
logging.getLogger("py4j.clientserver").debug("Command to send: {{0}}".format(command))
logging.getLogger("py4j.java_gateway").debug("Command to send: %s", command)
logging.getLogger("py4j.clientserver").debug("Answer received: {{0}}".format("!yv"))
logging.getLogger("py4j.clientserver").debug("Command to send: c\\no0\\nhello\\ne\\n")
"""


@pytest.mark.parametrize("log_format", ["console", "json"])
def test_py4j_debug_lines_hide_the_gateway_secret(log_format: str) -> None:
    logged = _run(_PY4J_DEBUG, log_format)
    assert TOKEN not in logged
    assert logged.count("[hidden]") == 2
    # py4j's other commands and answers are shown as they are
    assert "Answer received: !yv" in logged
    assert "hello" in logged
