"""``loggers list|get|set``: the worker's log levels at run time (KIP-495, KIP-976)."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from connect_grpc.ctl import documents
from connect_grpc.ctl.session import OUTPUTS, Session, output_option, pass_session
from connect_grpc.logs.level_model import LoggerLevel, LogLevelScope

HEADERS = ["LOGGER", "LEVEL", "LAST MODIFIED"]


@click.group()
def loggers() -> None:
    """Read or set log levels: Kafka's names (ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL,
    OFF); loggers are Python module names, e.g. connect_grpc.runtime.task, or root."""


@loggers.command("list")
@output_option(OUTPUTS)
@pass_session
def loggers_list(session: Session, output: str) -> None:
    """The answering worker's loggers whose level is not OFF, root first."""
    found = session.client.list_loggers()
    if output in ("json", "yaml"):
        session.output.document(documents.loggers(found), output)
        return
    session.output.table(HEADERS, [_row(name, level) for name, level in found.items()])


@loggers.command("get")
@click.argument("name")
@output_option(OUTPUTS)
@pass_session
def loggers_get(session: Session, name: str, output: str) -> None:
    """One logger's level on the answering worker."""
    found = session.client.get_logger(name)
    if output in ("json", "yaml"):
        session.output.document(documents.logger(found), output)
        return
    session.output.table(HEADERS, [_row(name, found)])


@loggers.command("set")
@click.argument("name")
@click.argument("level")
@click.option("--scope", type=click.Choice([s.value for s in LogLevelScope],
                                           case_sensitive=False),
              default=LogLevelScope.WORKER.value, show_default=True,
              help="worker: the answering worker only. cluster: every worker, those that "
                   "join later too (standalone: the one worker).")
@pass_session
def loggers_set(session: Session, name: str, level: str, scope: str) -> None:
    """Set LEVEL on the logger NAME and every logger whose name starts with it; worker
    scope prints the loggers whose level changed."""
    chosen = LogLevelScope(scope.lower())
    changed = session.client.set_log_level(name, level, chosen)
    if chosen is LogLevelScope.CLUSTER:
        session.output.line(f"level {level.upper()} of {name} written for the cluster")
        return
    if not changed:
        session.output.line("no logger changed")
    for logger in changed:
        session.output.line(logger)


def _row(name: str, level: LoggerLevel) -> list[str]:
    return [name, level.level, _time(level.last_modified)]


def _time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
