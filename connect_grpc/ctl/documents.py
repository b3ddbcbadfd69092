"""What ``-o json`` and ``-o yaml`` print: plain dicts and lists built from the domain types.

These shapes are the stable, machine-readable interface of ``connect-grpc ctl``: keys are
only ever added. Statuses and offsets follow Kafka Connect's REST bodies (``state``,
``worker_id``, ``trace``; ``{"offsets": [{"partition": …, "offset": …}]}``), so that the
output of ``offsets get -o json`` is an input of ``offsets alter -f``.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
from collections.abc import Iterable, Mapping
from typing import Any

from connect_grpc.client.convert import ConnectorListing
from connect_grpc.ctl.contexts import Context
from connect_grpc.kernel.domain import (
    AutoRestartStatus,
    ClusterInfo,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorStatus,
    InstanceStatus,
    PluginDesc,
    State,
    TaskPlacement,
)
from connect_grpc.logs.level_model import LoggerLevel
from connect_grpc.pipeline.preview_model import PipelinePreview

Document = dict[str, Any]


def render(document: Document, output: str) -> str:
    """The document as JSON (indented, integers exact) or YAML."""
    if output == "yaml":
        import yaml  # only for -o yaml: ctl starts without it

        return yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def instance(status: InstanceStatus) -> Document:
    return {"state": status.state.value, "worker_id": status.worker_id, "trace": status.trace}


def placement(where: TaskPlacement) -> Document:
    return {"kind": where.kind.value, "host": where.host}


def placement_text(where: TaskPlacement | None) -> str:
    """``executor 1 on node-7``, ``driver on node-1`` (as workers say it); a bare host name
    (an older worker's) with its kind, ``spark-executor on node-7``; empty when not known."""
    if where is None:
        return ""
    if " on " in where.host:
        return where.host
    return f"{where.kind.value} on {where.host}"


def status(connector: ConnectorStatus) -> Document:
    """Kafka Connect's ``GET /connectors/{name}/status`` body, with where each task runs
    and its transactional id when known."""
    return {
        "name": connector.name,
        "type": connector.type.value,
        "connector": instance(connector.connector),
        "tasks": [
            {"id": task.id, **instance(task.status),
             **({"placement": placement(task.status.placement)} if task.status.placement else {}),
             **({"transactional_id": task.transactional_id} if task.transactional_id else {})}
            for task in connector.tasks
        ],
        **({"auto_restart": auto_restart(connector.auto_restart)}
           if connector.auto_restart is not None else {}),
    }


def auto_restart(progress: AutoRestartStatus) -> Document:
    """The auto-restart policy's progress; times in RFC 3339 (UTC), null when unset."""
    return {
        "count": progress.count,
        "next_attempt": rfc3339_ms(progress.next_attempt_ms),
        "last_restart": rfc3339_ms(progress.last_restart_ms),
        "gave_up": progress.gave_up,
    }


def rfc3339_ms(epoch_ms: int) -> str | None:
    """``2026-11-29T11:02:03.456Z``; None for 0 (no time)."""
    if not epoch_ms:
        return None
    moment = datetime.datetime.fromtimestamp(epoch_ms / 1000, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def running_tasks(connector: ConnectorStatus) -> int:
    return sum(1 for task in connector.tasks if task.status.state is State.RUNNING)


def listing(entry: ConnectorListing) -> Document:
    """One row of ``get connectors``."""
    found = entry.status
    config: Mapping[str, str] = entry.info.config if entry.info is not None else {}
    return {
        "name": entry.name,
        "type": found.type.value if found is not None else "unknown",
        "class": config.get("connector.class", ""),
        "state": found.connector.state.value if found is not None else "UNKNOWN",
        "worker_id": found.connector.worker_id if found is not None else "",
        "tasks_running": running_tasks(found) if found is not None else 0,
        "tasks_total": len(found.tasks) if found is not None else 0,
        "tasks": status(found)["tasks"] if found is not None else [],
        "config": dict(config),
        "etag": entry.info.etag if entry.info is not None else "",
        **({"auto_restart": auto_restart(found.auto_restart)}
           if found is not None and found.auto_restart is not None else {}),
    }


def listings(entries: Iterable[ConnectorListing]) -> Document:
    return {"connectors": [listing(entry) for entry in entries]}


def offsets(entries: Iterable[ConnectorOffset]) -> Document:
    """Kafka Connect's ``GET /connectors/{name}/offsets`` body."""
    return {
        "offsets": [
            {"partition": _plain(entry.partition), "offset": _plain(entry.offset)}
            for entry in entries
        ]
    }


def _plain(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if values is None else dict(values)


def description(
    info: ConnectorInfo,
    connector: ConnectorStatus,
    found_offsets: list[ConnectorOffset] | None,
    offsets_error: str | None,
) -> Document:
    """``describe connector``: config, status with traces, offsets (or why they are missing)."""
    return {
        "name": info.name,
        "type": info.type.value,
        "etag": info.etag,
        "config": dict(info.config),
        "status": status(connector),
        "offsets": None if found_offsets is None else offsets(found_offsets)["offsets"],
        **({"offsets_error": offsets_error} if offsets_error else {}),
    }


def plugins(found: Iterable[PluginDesc]) -> Document:
    return {
        "plugins": [
            {"class": plugin.class_name, "type": plugin.plugin_type or plugin.type.value,
             "version": plugin.version, "aliases": list(plugin.aliases)}
            for plugin in found
        ]
    }


def plugin_config(plugin: PluginDesc) -> Document:
    """The plugin, and its config keys in Kafka Connect's shape of
    ``GET /connector-plugins/{plugin}/config``."""
    return {
        **plugins([plugin])["plugins"][0],
        "config": [
            {"name": key.name, "type": key.type, "required": key.required,
             "default_value": key.default_value, "importance": key.importance,
             "documentation": key.documentation, "group": key.group or None,
             "order": key.order_in_group, "width": key.width,
             "display_name": key.display_name, "dependents": list(key.dependents)}
            for key in plugin.config_definitions
        ],
    }


def cluster(info: ClusterInfo) -> Document:
    return {
        "mode": info.mode,
        "version": info.version,
        "kafka_cluster_id": info.kafka_cluster_id,
        "worker_id": info.worker_id,
        "leader_id": info.leader_id,
        "leader_address": info.leader_address,
        "generation": info.generation,
        "joined": info.joined,
        "workers": [
            {"id": worker.id, "address": worker.address,
             "connectors": list(worker.connectors),
             "tasks": [str(task) for task in worker.tasks],
             "placements": {str(task): placement(where)
                            for task, where in sorted(worker.placements.items())}}
            for worker in info.workers
        ],
    }


def contexts(found: Iterable[Context]) -> Document:
    found = list(found)
    current = next((context.name for context in found if context.current), None)
    return {
        "current-context": current,
        "contexts": [
            {"name": context.name, "target": context.target, "current": context.current,
             **context.settings}
            for context in found
        ],
    }


def logger(level: LoggerLevel) -> Document:
    """Kafka Connect's GET /admin/loggers/{name} body (``last_modified`` null if never set)."""
    return {"level": level.level, "last_modified": level.last_modified}


def loggers(found: Mapping[str, LoggerLevel]) -> Document:
    """Kafka Connect's GET /admin/loggers body: logger name → its level."""
    return {name: logger(level) for name, level in found.items()}

# ---- Pipeline preview ----


def preview(result: PipelinePreview) -> Document:
    """``ctl preview -o json``: the response's shape, enums by name, bytes as
    ``{"base64": …}``, Connect data as ``{"json": …, "schema": …}``, headers as
    ``[{"key": …, "value": …}]``."""
    document: Document = _plain_preview(result)
    return document


def _plain_preview(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        plain = {}
        for field in dataclasses.fields(value):
            found = getattr(value, field.name)
            if field.name in ("headers", "dead_letter_headers"):
                plain[field.name] = [
                    {"key": key, "value": _plain_preview(data)} for key, data in found
                ]
            else:
                plain[field.name] = _plain_preview(found)
        return plain
    if isinstance(value, tuple):
        return [_plain_preview(item) for item in value]
    return value
