"""What ``connect-grpc ctl`` shows of the auto-restart policy: ``get connectors -o wide``
adds the count and the next attempt only when a listed connector has a policy (a listing
without one keeps its columns where scripts read them), ``-o json|yaml`` gain the
``auto_restart`` key, and ``watch`` prints a ``NAME restarts …`` line when the progress
moves (a RESTARTS column on a terminal)."""

from __future__ import annotations

import io
import queue

from rich.console import Console

from connect_grpc.client.convert import ConnectorListing
from connect_grpc.ctl import documents
from connect_grpc.ctl.cmd_live import _Event, _LineView, _LiveView, _watch_loop
from connect_grpc.ctl.cmd_read import listing_table
from connect_grpc.ctl.follow import RestartsChange, WatchBoard, restarts_change
from connect_grpc.ctl.render import Output, plain_table
from connect_grpc.kernel.domain import (
    AutoRestartStatus,
    ConnectorInfo,
    ConnectorStatus,
    ConnectorType,
    InstanceStatus,
    State,
    TaskId,
    TaskStatus,
)

#: 2023-11-14T22:13:20.123Z
NEXT_MS = 1_700_000_000_123
WIDE = ["NAME", "TYPE", "STATE", "TASKS", "WORKER", "CLASS", "TASK STATES", "ETAG"]


def _status(name: str, task: State = State.RUNNING,
            progress: AutoRestartStatus | None = None) -> ConnectorStatus:
    return ConnectorStatus(
        name, InstanceStatus(State.RUNNING, "w1"),
        (TaskStatus(0, InstanceStatus(task, "w1", "Boom: on purpose" if task is State.FAILED
                                      else "")),),
        ConnectorType.SOURCE, auto_restart=progress,
    )


def _listing(status: ConnectorStatus) -> ConnectorListing:
    info = ConnectorInfo(status.name, {"connector.class": "Seq"}, (TaskId(status.name, 0),),
                         ConnectorType.SOURCE, etag=f"etag-{status.name}")
    return ConnectorListing(status.name, info, status)


def _rows(*statuses: ConnectorStatus) -> documents.Document:
    return documents.listings([_listing(status) for status in statuses])


def test_json_listing_has_the_policy_only_where_the_status_has_it() -> None:
    rows = _rows(_status("a", State.FAILED, AutoRestartStatus(2, NEXT_MS, 0, False)),
                 _status("b"))["connectors"]
    assert rows[0]["auto_restart"] == {"count": 2, "next_attempt": "2023-11-14T22:13:20.123Z",
                                       "last_restart": None, "gave_up": False}
    assert "auto_restart" not in rows[1]


def test_wide_without_a_policy_keeps_its_columns() -> None:
    headers, table = listing_table(_rows(_status("a"), _status("b")), wide=True)
    assert headers == WIDE
    assert [str(cell) for cell in table[0]] == [
        "a", "source", "RUNNING", "1/1", "w1", "Seq", "0:RUNNING", "etag-a"]
    assert listing_table(_rows(_status("a")), wide=False)[0] == WIDE[:5]


def test_wide_shows_count_and_next_attempt_after_the_worker() -> None:
    rows = _rows(_status("a", State.FAILED, AutoRestartStatus(2, NEXT_MS, 0, False)),
                 _status("b"),
                 _status("c", State.FAILED, AutoRestartStatus(3, 0, 5, True)),
                 _status("d", progress=AutoRestartStatus()))
    headers, table = listing_table(rows, wide=True)
    assert headers == [*WIDE[:5], "RESTARTS", "NEXT RESTART", *WIDE[5:]]
    lines = plain_table(headers, table)
    cells = {line.split()[0]: line.split() for line in lines[1:]}
    assert cells["a"][5:] == ["2", "2023-11-14T22:13:20.123Z", "Seq", "0:FAILED", "etag-a"]
    assert cells["b"][5:7] == ["-", "-"]
    assert cells["c"][5:7] == ["3", "gave-up"]
    assert cells["d"][5:7] == ["0", "-"]
    # the table without -o wide stays as it is
    assert listing_table(rows, wide=False)[0] == WIDE[:5]


def test_a_restarts_change_is_new_or_changed_progress_only() -> None:
    with_policy = _status("a", progress=AutoRestartStatus())
    assert restarts_change("a", None, with_policy) == RestartsChange("a", AutoRestartStatus())
    assert restarts_change("a", with_policy, with_policy) is None
    moved = _status("a", State.FAILED, AutoRestartStatus(0, NEXT_MS, 0, False))
    assert restarts_change("a", with_policy, moved) == RestartsChange("a", moved.auto_restart)
    assert restarts_change("a", None, _status("a")) is None
    assert restarts_change("a", moved, None) is None


def _output() -> tuple[Output, io.StringIO]:
    output = Output()
    buffer = io.StringIO()
    output.out = Console(file=buffer, width=4096, highlight=False, soft_wrap=True)
    return output, buffer


def _watch(*statuses: ConnectorStatus) -> list[str]:
    """The lines ``watch a`` prints off a terminal for the stream's statuses."""
    output, buffer = _output()
    board = WatchBoard(["a"])
    events: queue.Queue[_Event] = queue.Queue()
    for status in statuses:
        events.put(_Event("a", status=status))
    events.put(_Event("a", ended=True))
    with _LineView(output, board) as view:
        assert _watch_loop(board, view, events, None, None) == "ended"
    return buffer.getvalue().splitlines()


def test_watch_prints_a_line_when_the_progress_moves() -> None:
    lines = _watch(
        _status("a", progress=AutoRestartStatus()),
        _status("a", State.FAILED, AutoRestartStatus(0, NEXT_MS, 0, False)),
        _status("a", State.FAILED, AutoRestartStatus(0, NEXT_MS, 0, False)),
        _status("a", progress=AutoRestartStatus(1, 0, NEXT_MS, False)),
    )
    assert lines == [
        "a connector RUNNING w1",
        "a task 0 RUNNING w1",
        "a restarts 0 automatic",
        "a task 0 FAILED w1: Boom: on purpose",
        "a restarts 0 automatic, next at 2023-11-14T22:13:20.123Z",
        "a task 0 RUNNING w1",
        "a restarts 1 automatic",
    ]


def test_watch_without_a_policy_prints_as_before() -> None:
    assert _watch(_status("a"), _status("a", State.FAILED)) == [
        "a connector RUNNING w1", "a task 0 RUNNING w1", "a task 0 FAILED w1: Boom: on purpose"]


def test_the_live_table_has_a_restarts_column_while_a_connector_has_a_policy() -> None:
    output, _ = _output()
    board = WatchBoard(["a", "b", "gone"])
    board.update("a", _status("a", State.FAILED, AutoRestartStatus(1, NEXT_MS, 0, False)))
    board.update("gone", None)
    table = _LiveView(output, board)._table()
    assert [str(column.header) for column in table.columns] == [
        "CONNECTOR", "INSTANCE", "STATE", "WORKER", "RESTARTS", "ERROR"]
    restarts = [str(cell) for cell in table.columns[4].cells]
    assert restarts == ["1 automatic, next at 2023-11-14T22:13:20.123Z", "", "", ""]
    board.update("a", _status("a"))
    plain = _LiveView(output, board)._table()
    assert "RESTARTS" not in [str(column.header) for column in plain.columns]
