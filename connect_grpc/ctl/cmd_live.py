"""Commands that follow statuses live through WatchConnectorStatus: ``restart`` and
``watch``."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from types import TracebackType

import click
import grpc
from rich.live import Live
from rich.table import Table
from rich.text import Text

from connect_grpc.client import ConnectClient
from connect_grpc.ctl.exit_codes import ExitCode, failure_of, timed_out
from connect_grpc.ctl.follow import (
    Change,
    InstanceKey,
    RestartFollower,
    RestartsChange,
    WatchBoard,
    instances,
    label,
    restarts_change,
)
from connect_grpc.ctl.render import (
    Output,
    auto_restart_text,
    build_table,
    state_text,
    trace_summary,
)
from connect_grpc.ctl.session import Session, complete_connector_names, pass_session
from connect_grpc.kernel.domain import ConnectorStatus, State
from connect_grpc.kernel.errors import ConnectError, NotFoundError

#: How often the command wakes to check its deadline and Ctrl-C while a stream is quiet.
TICK_SECONDS = 0.25
INSTANCE_FAILED_REASON = "INSTANCE_FAILED"
POSITIVE_SECONDS = click.FloatRange(min=0, min_open=True)


# ---------------------------------------------------------------------------- restart


@click.command()
@click.argument("name", shell_complete=complete_connector_names)
@click.option("--include-tasks", is_flag=True, help="Also restart the connector's tasks.")
@click.option("--only-failed", is_flag=True,
              help="Restart only the instances (connector, tasks) that are FAILED.")
@click.option("--task", "task_id", type=click.IntRange(min=0),
              help="Restart this one task instead (RestartTask).")
@click.option("--timeout", type=POSITIVE_SECONDS, default=120.0, show_default=True,
              help="Seconds to follow the restarted instances before giving up (exit 7).")
@pass_session
def restart(
    session: Session,
    name: str,
    include_tasks: bool,
    only_failed: bool,
    task_id: int | None,
    timeout: float,
) -> None:
    """Restart a connector (KIP-745) and follow each restarted instance live from
    RESTARTING until it is RUNNING or FAILED; exits 9 if any ended FAILED.

    Without flags only the connector instance restarts, and the worker answers once it
    has (as Kafka Connect's plain restart).
    """
    if task_id is not None:
        if include_tasks or only_failed:
            raise click.UsageError("--task restarts one task; it takes no --include-tasks "
                                   "or --only-failed")
        _restart_synchronously(session, name, task_id)
    elif not include_tasks and not only_failed:
        _restart_synchronously(session, name, None)
    else:
        _restart_and_follow(session, name, include_tasks, only_failed, timeout)


def _restart_synchronously(session: Session, name: str, task_id: int | None) -> None:
    """A plain restart or RestartTask: done when the worker answers."""
    client = session.client
    session.output.line(f"restarting {name}: {label(task_id)}")
    try:
        if task_id is None:
            client.restart_connector(name)
        else:
            client.restart_task(name, task_id)
    except ConnectError as error:
        if failure_of(error).reason != INSTANCE_FAILED_REASON:
            raise
    status = instances(client.get_connector_status(name)).get(task_id)
    if status is None:
        raise NotFoundError(f"{name} has no {label(task_id)} any more")
    session.output.change(Change(name, task_id, status))
    if status.state is State.FAILED:
        _ended_failed(session, name, [task_id])


def _restart_and_follow(
    session: Session, name: str, include_tasks: bool, only_failed: bool, timeout: float
) -> None:
    client = session.client
    lagging_view = client.get_cluster_info().mode == "distributed"
    baseline = client.get_connector_status(name) if lagging_view else None
    answer = client.restart_connector(name, include_tasks, only_failed)
    if answer is None:
        raise ConnectError(f"the worker answered the restart of {name} without a status")
    follower = RestartFollower(name, answer, baseline)
    if follower.done:
        session.output.line(f"nothing to restart: no instance of {name} is FAILED")
        return
    session.output.line(f"restarting {name}: {_labels(follower.restarted)}")
    _follow(session, follower, timeout)
    if follower.failed:
        _ended_failed(session, name, follower.failed)


def _follow(session: Session, follower: RestartFollower, timeout: float) -> None:
    stream = session.client.watch_connector_status(follower.connector, timeout=timeout)
    try:
        for status in stream:
            if status is None:
                raise NotFoundError(
                    f"connector {follower.connector} was deleted while it restarted"
                )
            for change in follower.observe(status):
                session.output.change(change)
            if follower.done:
                return
    except ConnectError as error:
        if failure_of(error).code is not grpc.StatusCode.DEADLINE_EXCEEDED:
            raise
        raise click.exceptions.Exit(session.fail(timed_out(
            f"timed out after {timeout:g} s following the restart of {follower.connector}; "
            f"still waiting for: {_labels(follower.waiting)}"
        ))) from None
    finally:
        stream.close()
    raise ConnectError(f"the worker ended the status stream of {follower.connector} while "
                       f"{_labels(follower.waiting)} restarted")


def _labels(keys: list[int | None]) -> str:
    return ", ".join(label(key) for key in keys)


def _ended_failed(session: Session, name: str, keys: list[int | None]) -> None:
    session.output.problem(f"{name}: {_labels(keys)} ended FAILED")
    raise click.exceptions.Exit(ExitCode.INSTANCE_FAILED)


# ---------------------------------------------------------------------------- watch


@dataclass(frozen=True, slots=True)
class _Event:
    """What one connector's stream reported: a status, its deletion, an error, or its end."""

    name: str
    status: ConnectorStatus | None = None
    error: ConnectError | None = None
    ended: bool = False


def _read_stream(
    client: ConnectClient, name: str, timeout: float | None, events: queue.Queue[_Event]
) -> None:
    try:
        for status in client.watch_connector_status(name, timeout=timeout):
            events.put(_Event(name, status=status))
    except ConnectError as error:
        events.put(_Event(name, error=error))
    finally:
        events.put(_Event(name, ended=True))


class _LineView:
    """Off a terminal: one line per instance whose status changed, and one when a
    connector's auto-restart progress did (``NAME restarts …``)."""

    def __init__(self, output: Output, board: WatchBoard) -> None:
        self._output = output

    def show(self, changes: list[Change], restarts: RestartsChange | None = None) -> None:
        for change in changes:
            self._output.change(change)
        if restarts is not None:
            self._output.restarts(restarts)

    def __enter__(self) -> _LineView:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None


class _LiveView(_LineView):
    """On a terminal: one table of every watched instance, redrawn on each change."""

    def __init__(self, output: Output, board: WatchBoard) -> None:
        super().__init__(output, board)
        self._board = board
        self._live = Live(self._table(), console=output.out, auto_refresh=False)

    def show(self, changes: list[Change], restarts: RestartsChange | None = None) -> None:
        self._live.update(self._table(), refresh=True)

    def _table(self) -> Table:
        """A row per instance; a RESTARTS column (on the connector's row) while a watched
        connector has an auto-restart policy."""
        statuses = self._board.statuses
        policies = any(status is not None and status.auto_restart is not None
                       for status in statuses.values())
        rows: list[list[object]] = []
        for name in self._board.names:
            status = statuses.get(name)
            if status is None:
                shown = Text("waiting") if name not in statuses else Text("DELETED", style="bold")
                rows.append([name, "", shown, "", *([""] if policies else []), ""])
                continue
            for key, item in instances(status).items():
                restarts = [_restarts_cell(status, key)] if policies else []
                rows.append([name, label(key), state_text(item.state), item.worker_id,
                             *restarts, trace_summary(item.trace)])
        headers = ["CONNECTOR", "INSTANCE", "STATE", "WORKER",
                   *(["RESTARTS"] if policies else []), "ERROR"]
        return build_table(headers, rows)

    def __enter__(self) -> _LiveView:
        self._live.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._live.stop()


def _restarts_cell(status: ConnectorStatus, key: InstanceKey) -> str:
    """The policy's progress, on the connector's row only."""
    if key is not None or status.auto_restart is None:
        return ""
    return auto_restart_text(status.auto_restart)


@click.command()
@click.argument("names", nargs=-1, required=True, shell_complete=complete_connector_names)
@click.option("--until", type=click.Choice([s.value for s in State], case_sensitive=False),
              help="End (exit 0) once every named connector and all its tasks are in this "
                   "state; exit 9 if an instance is FAILED first (unless waiting for FAILED).")
@click.option("--timeout", type=POSITIVE_SECONDS,
              help="End after this many seconds (exit 7 if --until was not reached).")
@pass_session
def watch(session: Session, names: tuple[str, ...], until: str | None,
          timeout: float | None) -> None:
    """Show the connectors' statuses live, as the worker streams them (not polled), until
    Ctrl-C, --until or --timeout. On a terminal a table is redrawn; otherwise each change
    is one line: NAME connector|task N STATE WORKER[: error], and, for a connector with an
    auto-restart policy, NAME restarts COUNT automatic[, next at TIME] when it moves."""
    wanted = State(until.upper()) if until else None
    board = WatchBoard(list(dict.fromkeys(names)))
    events: queue.Queue[_Event] = queue.Queue()
    for name in board.names:
        threading.Thread(target=_read_stream, name=f"watch-{name}", daemon=True,
                         args=(session.client, name, timeout, events)).start()
    view_type = _LiveView if session.output.interactive else _LineView
    with view_type(session.output, board) as view:
        outcome = _watch_loop(board, view, events, wanted, timeout)
    session.close()  # cancels the streams still open
    _finish(session, board, wanted, outcome, timeout)


def _watch_loop(
    board: WatchBoard,
    view: _LineView,
    events: queue.Queue[_Event],
    wanted: State | None,
    timeout: float | None,
) -> str:
    """Feeds the view until the watch is over; returns why: reached, failed, timeout, ended."""
    deadline = None if timeout is None else time.monotonic() + timeout
    streaming = set(board.names)
    while streaming:
        if deadline is not None and time.monotonic() >= deadline:
            return "timeout"
        try:
            event = events.get(timeout=TICK_SECONDS)
        except queue.Empty:
            continue
        if event.ended:
            streaming.discard(event.name)
        elif event.error is not None:
            if failure_of(event.error).code is grpc.StatusCode.DEADLINE_EXCEEDED:
                return "timeout"
            raise event.error
        else:
            before = board.statuses.get(event.name)
            changed = board.update(event.name, event.status)
            view.show(changed, restarts_change(event.name, before, event.status))
            if wanted is not None and board.reached(wanted):
                return "reached"
            if wanted not in (None, State.FAILED) and board.failed():
                return "failed"
    return "ended"


def _finish(session: Session, board: WatchBoard, wanted: State | None, outcome: str,
            timeout: float | None) -> None:
    if wanted is None or outcome == "reached":
        return
    if outcome == "failed":
        failed = ", ".join(f"{name} {label(key)}" for name, key in board.failed())
        session.output.problem(f"{failed} FAILED before every connector was {wanted.value}")
        raise click.exceptions.Exit(ExitCode.INSTANCE_FAILED)
    if outcome == "timeout":
        raise click.exceptions.Exit(session.fail(timed_out(
            f"timed out after {timeout:g} s: not every connector is {wanted.value}"
        )))
    raise NotFoundError(
        f"{', '.join(board.deleted())} deleted before reaching {wanted.value}"
    )
