"""Commands that only read: ``get connectors``, ``describe connector``, ``describe plugin``,
``plugins``, ``cluster``."""

from __future__ import annotations

import re

import click
from rich.text import Text

from connect_grpc.ctl import documents
from connect_grpc.ctl.exit_codes import failure_of
from connect_grpc.ctl.follow import instances
from connect_grpc.ctl.render import (
    Output,
    auto_restart_text,
    compact_json,
    state_text,
    trace_summary,
)
from connect_grpc.ctl.session import (
    OUTPUTS,
    Session,
    complete_connector_names,
    output_option,
    pass_session,
    regex_option,
)
from connect_grpc.kernel.domain import (
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStatus,
)
from connect_grpc.kernel.errors import ConnectError


@click.group()
def get() -> None:
    """List resources."""


@get.command("connectors")
@output_option(("table", "wide", "json", "yaml"))
@regex_option("Only the connectors whose whole name matches this regular expression.")
@pass_session
def get_connectors(session: Session, output: str, pattern: re.Pattern[str] | None) -> None:
    """Every connector: name, type, state, tasks running/total, worker (wide: the
    auto-restart policy's count and next attempt when a listed connector has one, class,
    each task's state and the etag for --if-match too)."""
    entries = session.client.list_connectors(expand_status=True, expand_info=True)
    if pattern is not None:
        entries = [entry for entry in entries if pattern.fullmatch(entry.name)]
    rows = documents.listings(entries)
    if output in ("json", "yaml"):
        session.output.document(rows, output)
        return
    session.output.table(*listing_table(rows, wide=output == "wide"))


def listing_table(
    rows: documents.Document, *, wide: bool
) -> tuple[list[str], list[list[object]]]:
    """The headers and rows of ``get connectors``. Wide, ``RESTARTS`` and ``NEXT RESTART``
    come after ``WORKER`` only when a listed connector's status has an auto-restart policy,
    so that a listing without one keeps its columns where scripts read them."""
    listed = rows["connectors"]
    restarts = wide and any("auto_restart" in row for row in listed)
    headers = ["NAME", "TYPE", "STATE", "TASKS", "WORKER"]
    if restarts:
        headers += ["RESTARTS", "NEXT RESTART"]
    if wide:
        headers += ["CLASS", "TASK STATES", "ETAG"]
    table = []
    for row in listed:
        cells: list[object] = [row["name"], row["type"], state_text(row["state"]),
                               f"{row['tasks_running']}/{row['tasks_total']}", row["worker_id"]]
        if restarts:
            cells += restart_cells(row.get("auto_restart"))
        if wide:
            cells += [row["class"],
                      " ".join(f"{task['id']}:{task['state']}" for task in row["tasks"]),
                      row["etag"]]
        table.append(cells)
    return headers, table


def restart_cells(progress: documents.Document | None) -> list[str]:
    """The count, and the next attempt's time (``gave-up`` once the policy gave up); ``-``
    for a connector without a policy, or no attempt scheduled. No spaces: scripts split."""
    if progress is None:
        return ["-", "-"]
    upcoming = "gave-up" if progress["gave_up"] else progress["next_attempt"] or "-"
    return [str(progress["count"]), upcoming]


@click.group()
def describe() -> None:
    """Show one resource in detail."""


@describe.command("connector")
@click.argument("name", shell_complete=complete_connector_names)
@output_option()
@pass_session
def describe_connector(session: Session, name: str, output: str) -> None:
    """A connector's config, status (with traces), tasks, offsets and etag (for --if-match)."""
    client = session.client
    info = client.get_connector(name)
    status = client.get_connector_status(name)
    offsets: list[ConnectorOffset] | None = None
    offsets_error: str | None = None
    try:
        offsets = client.get_offsets(name)
    except ConnectError as error:  # the rest is still worth showing
        failure = failure_of(error)
        offsets_error = f"{failure.code.name}: {failure.message}"
    if output in ("json", "yaml"):
        session.output.document(documents.description(info, status, offsets, offsets_error),
                                output)
        return
    _show_description(session.output, info, status, offsets, offsets_error)


@describe.command("plugin")
@click.argument("name")
@output_option()
@pass_session
def describe_plugin(session: Session, name: str, output: str) -> None:
    """A plugin's config keys (KIP-769): name, type, default, importance, group and
    documentation (by its class name or an alias, as `plugins --all` lists them)."""
    found = documents.plugin_config(session.client.get_plugin_config(name))
    if output in ("json", "yaml"):
        session.output.document(found, output)
        return
    out = session.output
    out.line(Text(f"Class:      {found['class']}"))
    out.line(Text(f"Type:       {found['type']}"))
    out.line(Text(f"Version:    {found['version']}"))
    out.line(Text(f"Aliases:    {', '.join(found['aliases']) or '-'}"))
    out.table(
        ["KEY", "TYPE", "DEFAULT", "IMPORTANCE", "GROUP", "DOCUMENTATION"],
        [[key["name"], key["type"], _default_text(key), key["importance"], key["group"] or "-",
          key["documentation"]] for key in found["config"]],
    )


def _default_text(key: dict[str, object]) -> str:
    if key["required"]:
        return "(required)"
    default = key["default_value"]
    if default is None:
        return "null"
    return str(default) or '""'


def _show_description(
    out: Output,
    info: ConnectorInfo,
    status: ConnectorStatus,
    offsets: list[ConnectorOffset] | None,
    offsets_error: str | None,
) -> None:
    out.line(Text(f"Name:       {info.name}"))
    out.line(Text(f"Type:       {info.type.value}"))
    out.line(Text(f"Class:      {info.config.get('connector.class', '')}"))
    out.line(Text("State:      ").append_text(state_text(status.connector.state)))
    out.line(Text(f"Worker:     {status.connector.worker_id}"))
    if status.auto_restart is not None:
        out.line(Text(f"Restarts:   {auto_restart_text(status.auto_restart)}"))
    out.line(Text(f"Etag:       {info.etag}"))
    out.line(Text("Config:"))
    width = max((len(key) for key in info.config), default=0)
    for key in sorted(info.config):
        out.line(Text(f"  {key:<{width}}  {info.config[key]}"))
    out.line(Text("Tasks:"))
    if status.tasks:
        out.table(["TASK", "STATE", "WORKER", "RUNS ON", "ERROR"],
                  [[task.id, state_text(task.status.state), task.status.worker_id,
                    documents.placement_text(task.status.placement),
                    trace_summary(task.status.trace)] for task in status.tasks], indent=2)
    else:
        out.line(Text("  none"))
    _show_traces(out, status)
    out.line(Text("Offsets:"))
    if offsets_error is not None:
        out.line(Text(f"  not available: {offsets_error}"))
    elif not offsets:
        out.line(Text("  none committed"))
    else:
        out.table(["PARTITION", "OFFSET"],
                  [[compact_json(o.partition), compact_json(o.offset)] for o in offsets],
                  indent=2)


def _show_traces(out: Output, status: ConnectorStatus) -> None:
    for key, item in instances(status).items():
        if not trace_summary(item.trace):
            continue
        what = "Connector" if key is None else f"Task {key}"
        out.line(Text(f"{what} trace:", style="bold"))
        for line in item.trace.rstrip().splitlines():
            out.line(Text(f"  {line}"))


@click.command()
@output_option(OUTPUTS)
@click.option("--all", "all_types", is_flag=True,
              help="Also list transformations, predicates, converters and header converters.")
@pass_session
def plugins(session: Session, output: str, all_types: bool) -> None:
    """The plugins the worker has: class, type, version, aliases (connectors only, unless
    --all)."""
    found = documents.plugins(session.client.list_plugins(all_plugin_types=all_types))
    if output in ("json", "yaml"):
        session.output.document(found, output)
        return
    session.output.table(
        ["CLASS", "TYPE", "VERSION", "ALIASES"],
        [[p["class"], p["type"], p["version"], ", ".join(p["aliases"])]
         for p in found["plugins"]],
    )


@click.command()
@output_option(OUTPUTS)
@pass_session
def cluster(session: Session, output: str) -> None:
    """The cluster: mode, version, leader, generation, and each worker with what it runs."""
    found = documents.cluster(session.client.get_cluster_info())
    if output in ("json", "yaml"):
        session.output.document(found, output)
        return
    out = session.output
    out.line(Text(f"Mode:        {found['mode']}"))
    out.line(Text(f"Version:     {found['version']}"))
    out.line(Text(f"Kafka:       {found['kafka_cluster_id'] or '-'}"))
    out.line(Text(f"Answered by: {answered_by(found)}"))
    out.line(Text(f"Leader:      {found['leader_id'] or '-'} {found['leader_address']}".rstrip()))
    out.line(Text(f"Generation:  {found['generation']}"))
    out.table(
        ["WORKER", "ADDRESS", "CONNECTORS", "TASKS"],
        [[w["id"], w["address"], ", ".join(w["connectors"]), _placed_tasks(w)]
         for w in found["workers"]],
    )


def answered_by(found: documents.Document) -> str:
    """The worker that answered, and whether the view is its group's current one."""
    if found["joined"]:
        return str(found["worker_id"])
    return f"{found['worker_id']} (not in the group yet: the last assignment it read)"


def _placed_tasks(worker: documents.Document) -> str:
    """``orders-0 (spark-executor), orders-1 (driver)``: each task, and where it runs."""
    placements = worker["placements"]
    return ", ".join(
        f"{task} ({placements[task]['kind']})" if task in placements else task
        for task in worker["tasks"]
    )
