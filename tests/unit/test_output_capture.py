"""What plugins print: ``logs.capture_output`` turns every line written to ``sys.stdout`` and
``sys.stderr`` into a masked ``plugin_output`` log event naming the connector and task."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import structlog

from connect_grpc.logs.output import _LoggingStream

SECRET = "s3cret-value-1234"

_CAPTURED_RUN = f"""
import os, sys, warnings
from connect_grpc.config_providers.redaction import SECRETS
from connect_grpc.logs.output import (
    capture_output, configure_logging, plugin_context, restore_output
)
configure_logging("json")
SECRETS.register([{SECRET!r}])
console = capture_output()
assert capture_output() == console  # idempotent
with plugin_context("orders", 3):
    print("password is {SECRET}")
    print("on stderr {SECRET}", file=sys.stderr)
    sys.stdout.write("no newline yet")
    sys.stdout.flush()
with plugin_context("orders"):
    print("from the connector")
print("outside any plugin")
console.stdout.write("the command's own output\\n")
console.stdout.flush()
restore_output()
print("after restore")
"""


def test_printed_lines_become_masked_log_events_with_their_connector_and_task() -> None:
    run = subprocess.run([sys.executable, "-c", _CAPTURED_RUN], capture_output=True,
                         text=True, timeout=60, check=True)
    assert SECRET not in run.stdout + run.stderr
    assert run.stdout.splitlines() == ["the command's own output", "after restore"]
    events = [json.loads(line) for line in run.stderr.splitlines()]
    shown = [(e["event"], e["stream"], e["line"], e.get("connector"), e.get("task"), e["level"])
             for e in events]
    assert shown == [
        ("plugin_output", "stdout", "password is [hidden]", "orders", 3, "info"),
        ("plugin_output", "stderr", "on stderr [hidden]", "orders", 3, "warning"),
        ("plugin_output", "stdout", "no newline yet", "orders", 3, "info"),
        ("plugin_output", "stdout", "from the connector", "orders", None, "info"),
        ("plugin_output", "stdout", "outside any plugin", None, None, "info"),
    ]


class _Sink:
    """A target stream that records what reaches it directly."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)


def test_each_thread_has_its_own_partial_line() -> None:
    stream = _LoggingStream("stdout", _Sink())  # type: ignore[arg-type]
    first_half_written = threading.Event()

    def other_thread() -> None:
        first_half_written.wait(5)
        stream.write("other ")
        stream.write("line\n")

    with structlog.testing.capture_logs() as logs:
        thread = threading.Thread(target=other_thread)
        thread.start()
        stream.write("main ")
        first_half_written.set()
        thread.join(5)
        stream.write("line\nand a half")
    assert [entry["line"] for entry in logs] == ["other line", "main line"]


def test_a_write_made_while_logging_goes_to_the_process_stream() -> None:
    target = _Sink()
    stream = _LoggingStream("stderr", target)  # type: ignore[arg-type]

    def handler_writing_to_stderr(
        logger: object, method: str, event: structlog.typing.EventDict
    ) -> structlog.typing.EventDict:
        stream.write("a handler's own complaint\n")
        return event

    with structlog.testing.capture_logs(processors=[handler_writing_to_stderr]) as logs:
        stream.write("plugin line\n")
    assert [entry["line"] for entry in logs] == ["plugin line"]
    assert target.text == "a handler's own complaint\n"
