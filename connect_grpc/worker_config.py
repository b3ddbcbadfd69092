"""Worker properties, with Kafka Connect's names, and the properties-file reader."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from connect_grpc.errors import InvalidArgumentError

DEFAULT_LISTENER = "grpc://127.0.0.1:8083"


def read_properties(path: Path) -> dict[str, str]:
    """Reads a Java-style .properties file (``key=value`` or ``key: value``, # and ! comments,
    backslash line continuations)."""
    result: dict[str, str] = {}
    pending = ""
    for raw_line in path.read_text(encoding="utf-8").splitlines():
        line = pending + raw_line.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        key, value = _split_property(line)
        result[key] = value
    if pending:
        key, value = _split_property(pending)
        result[key] = value
    return result


def _split_property(line: str) -> tuple[str, str]:
    for index, char in enumerate(line):
        if char in "=:" and (index == 0 or line[index - 1] != "\\"):
            return line[:index].strip(), line[index + 1 :].strip()
        if char.isspace():
            rest = line[index:].lstrip()
            if rest[:1] in ("=", ":"):
                rest = rest[1:]
            return line[:index].strip(), rest.strip()
    return line.strip(), ""


def parse_listener(listener: str) -> tuple[str, int]:
    """``grpc://host:port`` → (host, port). Port 0 means "any free port"."""
    scheme, sep, rest = listener.partition("://")
    if not sep or scheme != "grpc":
        raise InvalidArgumentError.for_field(
            "listeners", f"expected grpc://host:port, got {listener!r}"
        )
    host, colon, port_text = rest.rpartition(":")
    if not colon or not port_text.isdigit():
        raise InvalidArgumentError.for_field(
            "listeners", f"expected grpc://host:port, got {listener!r}"
        )
    return host.strip("[]") or "0.0.0.0", int(port_text)


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """A worker's settings. ``raw`` keeps every property, for pass-through (``spark.*``,
    ``producer.*``, ``consumer.*``)."""

    bootstrap_servers: str
    listener_host: str
    listener_port: int
    worker_id: str
    offset_file: Path | None
    plugin_path: tuple[Path, ...]
    log_format: str
    spark_conf: Mapping[str, str]
    raw: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> WorkerConfig:
        if not props.get("bootstrap.servers", "").strip():
            raise InvalidArgumentError.for_field("bootstrap.servers", "is required")
        listener = props.get("listeners", DEFAULT_LISTENER).split(",")[0].strip()
        host, port = parse_listener(listener)
        offset_file = props.get("offset.storage.file.filename")
        plugin_path = props.get("plugin.path", "")
        log_format = props.get("log.format", os.environ.get("CONNECT_LOG_FORMAT", "console"))
        if log_format not in ("console", "json"):
            raise InvalidArgumentError.for_field("log.format", "must be console or json")
        return cls(
            bootstrap_servers=props["bootstrap.servers"].strip(),
            listener_host=host,
            listener_port=port,
            worker_id=props.get("worker.id", f"{socket.gethostname()}:{port}"),
            offset_file=Path(offset_file) if offset_file else None,
            plugin_path=tuple(Path(p.strip()) for p in plugin_path.split(",") if p.strip()),
            log_format=log_format,
            spark_conf={k: v for k, v in props.items() if k.startswith("spark.")},
            raw=dict(props),
        )

    def prefixed(self, prefix: str) -> dict[str, str]:
        """Every property under ``prefix`` with the prefix removed (e.g. ``producer.``)."""
        return {k[len(prefix) :]: v for k, v in self.raw.items() if k.startswith(prefix)}
