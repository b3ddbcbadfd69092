"""Everything ``connect-grpc ctl`` shows: tables and lines for people (rich), JSON/YAML
documents for programs, errors on stderr.

On a terminal rich colours states and fits tables to the width; otherwise (a pipe, a file,
a test) it writes plain text with no colours and no wrapping, one line per row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import click
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from connect_grpc.ctl import documents
from connect_grpc.ctl.exit_codes import Failure
from connect_grpc.ctl.follow import Change, RestartsChange, label
from connect_grpc.kernel.domain import AutoRestartStatus, State

#: Width of output that goes to a pipe or a file: wide enough that no row is ever wrapped.
UNWRAPPED_WIDTH = 4096

STATE_STYLES = {
    State.RUNNING: "green",
    State.FAILED: "bold red",
    State.PAUSED: "yellow",
    State.STOPPED: "yellow",
    State.RESTARTING: "cyan",
    State.UNASSIGNED: "magenta",
    State.RETRYING: "magenta",
}


def _console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr, highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console = Console(stderr=stderr, highlight=False, soft_wrap=True,
                          width=UNWRAPPED_WIDTH)
    return console


def state_text(state: State | str) -> Text:
    value = state.value if isinstance(state, State) else state
    style = STATE_STYLES.get(state, "") if isinstance(state, State) else ""
    return Text(value, style=style)


def compact_json(values: object) -> str:
    """One-line JSON, keys sorted (offsets in tables)."""
    plain = dict(values) if isinstance(values, Mapping) else values
    return json.dumps(plain, separators=(",", ":"), sort_keys=True)


def auto_restart_text(progress: AutoRestartStatus) -> str:
    """``2 automatic, next at 2026-…Z`` (or ``gave up``): the auto-restart policy's say."""
    text = f"{progress.count} automatic"
    if progress.gave_up:
        return f"{text}, gave up (auto.restart.max.attempts): restart it by hand"
    if progress.next_attempt_ms:
        return f"{text}, next at {documents.rfc3339_ms(progress.next_attempt_ms)}"
    return text


def trace_summary(trace: str) -> str:
    """The line of a trace that says what went wrong: a Python traceback's last line (the
    exception), else the first (a Java-style trace starts with the exception)."""
    lines = [line.strip() for line in trace.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[-1] if lines[0].startswith("Traceback") else lines[0]


class Output:
    """Where a command writes: stdout for results, stderr for errors and notes."""

    def __init__(self) -> None:
        self.out = _console()
        self.err = _console(stderr=True)

    @property
    def interactive(self) -> bool:
        return self.out.is_terminal

    def document(self, document: documents.Document, output: str) -> None:
        """A JSON or YAML document, written as is (no styling, no wrapping)."""
        click.echo(documents.render(document, output), nl=False)

    def line(self, text: str | Text = "") -> None:
        self.out.print(text)

    def note(self, text: str) -> None:
        self.err.print(Text(text, style="yellow"))

    def problem(self, text: str) -> None:
        """``Error: text`` on stderr, for what is not a failed call."""
        self.err.print(Text(f"Error: {text}", style="bold red"))

    def failure(self, failure: Failure) -> None:
        head, *details = failure.lines()
        self.err.print(Text(head, style="bold red"))
        for detail in details:
            self.err.print(Text(detail))

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[Any]], indent: int = 0) -> None:
        """A borderless table (``kubectl get`` style): rich's on a terminal; elsewhere plain
        columns two spaces apart, one row per line, no trailing spaces."""
        rows = list(rows)
        if self.interactive:
            self.out.print(Padding(build_table(headers, rows), (0, 0, 0, indent)))
            return
        for line in plain_table(headers, rows):
            self.out.print(Text(" " * indent + line))

    def change(self, change: Change) -> None:
        """``NAME connector|task N STATE WORKER`` and, when FAILED, the trace's first line."""
        self.out.print(change_text(change))

    def restarts(self, change: RestartsChange) -> None:
        """``NAME restarts 2 automatic, next at …``: the auto-restart policy's progress."""
        self.out.print(Text(f"{change.connector} restarts {auto_restart_text(change.progress)}"))


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    cells = [list(headers), *([_plain(cell) for cell in row] for row in rows)]
    widths = [max(len(row[column]) for row in cells) for column in range(len(headers))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in cells]


def _plain(cell: Any) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def build_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> Table:
    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    for header in headers:
        table.add_column(header, no_wrap=True)
    for row in rows:
        table.add_row(*(cell if isinstance(cell, Text) else Text(str(cell)) for cell in row))
    return table


def change_text(change: Change) -> Text:
    text = Text(f"{change.connector} {label(change.instance)} ")
    if change.status is None:
        return text.append("gone")
    text.append_text(state_text(change.status.state))
    if change.status.worker_id:
        text.append(f" {change.status.worker_id}")
    reason = trace_summary(change.status.trace)
    if reason and change.status.state in (State.FAILED, State.RETRYING):
        text.append(f": {reason}")
    return text

