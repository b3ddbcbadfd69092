"""Worker properties, with Kafka Connect's names.

``read_properties`` (the properties-file reader) lives in
:mod:`connect_grpc.kernel.properties` and is re-exported here for its existing callers.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from connect_grpc.config.override_policy import ClientOverridePolicy
from connect_grpc.config_providers.specs import ProviderSpec, provider_specs
from connect_grpc.config_providers.transformer import resolve_worker_properties
from connect_grpc.kernel.configdef import (
    INT_MAX,
    LONG_MAX,
    java_trim,
    parse_java_integer,
)
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.kernel.properties import read_properties as read_properties
from connect_grpc.security.config import SecurityConfig

DEFAULT_LISTENER = "grpc://127.0.0.1:8083"
MIB = 1024 * 1024
MAX_PORT = 65535


@dataclass(frozen=True, slots=True)
class Limits:
    """What one request or connector may ask of a worker (each a worker property)."""

    #: ``tasks.max.limit``: the most tasks a connector may ask for (its ``tasks.max``).
    tasks_max: int = 256
    #: ``connector.config.max.bytes``: the largest connector config, keys and values in
    #: UTF-8. Below Kafka's default 1 MB record limit, so any config fits the config topic.
    config_bytes: int = 512 * 1024
    #: ``grpc.max.receive.message.bytes`` / ``grpc.max.send.message.bytes``.
    grpc_receive_bytes: int = 4 * MIB
    grpc_send_bytes: int = 4 * MIB


#: The smallest ``health.liveness.timeout.ms``: above the longest a herder loop's round may
#: wait on Kafka (the leader's 30 s call deadline), so that a broker outage can make a
#: worker not ready but never not live.
LIVENESS_TIMEOUT_MIN_MS = 35_000


@dataclass(frozen=True, slots=True)
class Resilience:
    """How a worker rides out Kafka outages (each a worker property)."""

    #: ``task.retry.timeout.ms``: how long a task retries retriable errors before it fails;
    #: -1 retries forever.
    task_retry_timeout_ms: int = 600_000
    #: ``task.retry.backoff.max.ms``: the longest wait between two retries of a task's batch.
    task_retry_backoff_max_ms: int = 10_000
    #: ``health.kafka.unreachable.grace.ms``: how long Kafka may be unreachable before the
    #: worker's health turns NOT_SERVING.
    kafka_unreachable_grace_ms: int = 30_000
    #: ``health.liveness.timeout.ms``: how long a herder loop may go without a round
    #: before the worker is not live (``herder.liveness``).
    liveness_timeout_ms: int = 60_000


def int_property(
    props: Mapping[str, str], name: str, default: int, minimum: int, maximum: int = INT_MAX
) -> int:
    """A numeric worker property, parsed as Kafka's ConfigDef parses INT and LONG."""
    raw = props.get(name)
    if raw is None:
        return default
    try:
        return parse_java_integer(java_trim(raw), minimum, maximum)
    except ValueError:
        raise InvalidArgumentError.for_field(
            name, f"expected an integer in [{minimum}, {maximum}], got {raw!r}"
        ) from None


def _bool_property(props: Mapping[str, str], name: str, default: bool) -> bool:
    raw = props.get(name)
    if raw is None:
        return default
    text = java_trim(raw).lower()
    if text not in ("true", "false"):
        raise InvalidArgumentError.for_field(name, f"expected true or false, got {raw!r}")
    return text == "true"


def _choice_property(
    props: Mapping[str, str], name: str, options: tuple[str, ...], default: str
) -> str:
    """A STRING property with a ValidString, as Kafka parses it: trimmed, case-sensitive."""
    raw = props.get(name)
    if raw is None:
        return default
    text = java_trim(raw)
    if text not in options:
        raise InvalidArgumentError.for_field(
            name, f"expected one of {', '.join(options)}, got {raw!r}"
        )
    return text


def parse_listener(
    listener: str, scheme: str = "grpc", property_name: str = "listeners"
) -> tuple[str, int]:
    """``grpc://host:port`` (or another ``scheme``) → (host, port). Port 0 means "any free
    port". Errors name ``property_name``."""
    expected = f"expected {scheme}://host:port, got {listener!r}"
    given_scheme, sep, rest = listener.partition("://")
    if not sep or given_scheme != scheme:
        raise InvalidArgumentError.for_field(property_name, expected)
    host, colon, port_text = rest.rpartition(":")
    if not colon or not port_text.isascii() or not port_text.isdigit():
        raise InvalidArgumentError.for_field(property_name, expected)
    port = int(port_text)
    if port > MAX_PORT:
        raise InvalidArgumentError.for_field(
            property_name, f"the port must be in [0, {MAX_PORT}], got {listener!r}"
        )
    return host.strip("[]") or "0.0.0.0", port


def parse_grpc_listener(listener: str, property_name: str = "listeners") -> tuple[str, int, bool]:
    """``grpc://host:port`` (plaintext) or ``grpcs://host:port`` (TLS) → (host, port, tls)."""
    scheme = listener.partition("://")[0]
    if scheme not in ("grpc", "grpcs"):
        raise InvalidArgumentError.for_field(
            property_name, f"expected grpc://host:port or grpcs://host:port, got {listener!r}"
        )
    host, port = parse_listener(listener, scheme, property_name)
    return host, port, scheme == "grpcs"


METRICS_LISTENER_PROPERTY = "metrics.listener"


def metrics_listener(props: Mapping[str, str]) -> tuple[str, int] | None:
    """``metrics.listener=http://host:port``: where the Prometheus endpoint listens; None
    (no endpoint) when unset or blank."""
    raw = java_trim(props.get(METRICS_LISTENER_PROPERTY, ""))
    if not raw:
        return None
    if "," in raw:
        raise InvalidArgumentError.for_field(
            METRICS_LISTENER_PROPERTY, f"expected one http://host:port, got {raw!r}"
        )
    return parse_listener(raw, "http", METRICS_LISTENER_PROPERTY)


#: ``task.batch.local.max.records`` by default: a small batch is moved in ≈ 1-10 ms by the
#: driver's own client, a Spark job costs ≈ 0.1-0.2 s on a small machine (DESIGN.md §5).
DEFAULT_LOCAL_BATCH_MAX_RECORDS = 1000


TASK_HOSTING_EXECUTOR = "executor"
TASK_HOSTING_DRIVER = "driver"

#: ``exactly.once.source.support``, with Kafka Connect's values and meaning: ``enabled``
#: writes source batches in transactions and fences task generations; ``preparing`` is the
#: step before it in a running cluster (every worker restarted with it, then one by one with
#: ``enabled``): its own tasks still write at-least-once, its validation already accepts
#: transaction boundaries, and as leader it fences for ``enabled`` workers. (Kafka
#: Connect's ``preparing`` switches the leader to a transactional producer; a connect-grpc
#: leader always writes the config topic through one.)
EXACTLY_ONCE_SOURCE_DISABLED = "disabled"
EXACTLY_ONCE_SOURCE_PREPARING = "preparing"
EXACTLY_ONCE_SOURCE_ENABLED = "enabled"
EXACTLY_ONCE_SOURCE_PROPERTY = "exactly.once.source.support"


TOPIC_CREATION_ENABLE_PROPERTY = "topic.creation.enable"
TOPIC_TRACKING_ENABLE_PROPERTY = "topic.tracking.enable"
TOPIC_TRACKING_ALLOW_RESET_PROPERTY = "topic.tracking.allow.reset"


#: The worker's converter properties (Kafka Connect's names). Each may carry its own keys
#: (``value.converter.schemas.enable``), which configure it and nothing else.
CONVERTER_PROPERTIES = ("key.converter", "value.converter", "header.converter")


def _converter_property(props: Mapping[str, str], name: str) -> str | None:
    """A worker converter class, trimmed; None when unset. A blank one, and Kafka Connect
    4.1's ``<name>.plugin.version`` (KIP-891: a connector's own converter key has it, the
    worker's converters have one version), are refused."""
    version_key = f"{name}.plugin.version"
    if version_key in props:
        raise InvalidArgumentError.for_field(
            version_key, "is not supported: the worker's converters are checked once at start "
            "and have one version (a connector chooses the version of its own converter with "
            f"its {version_key})",
        )
    raw = props.get(name)
    if raw is None:
        return None
    if not java_trim(raw):
        raise InvalidArgumentError.for_field(
            name, "must name a converter class, or be left out (no converter: record bytes "
            "pass through unchanged)",
        )
    return java_trim(raw)


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
    limits: Limits = field(default_factory=Limits)
    resilience: Resilience = field(default_factory=Resilience)
    #: ``task.batch.local.max.records``: a batch of at most this many records is moved by the
    #: task's own clients on the driver rather than by a Spark job (which costs ≈ 0.1-0.2 s
    #: however small the batch); 0 sends every batch through Spark.
    local_batch_max_records: int = DEFAULT_LOCAL_BATCH_MAX_RECORDS
    #: ``task.hosting``: ``executor`` runs each task in a Spark task of its own while the
    #: worker's hosted tasks hold fewer than Spark's task slots (else, and for a plugin an
    #: executor cannot import by name, on the driver, every batch in-process); ``driver``
    #: runs every task's loop on the driver, batches above ``local_batch_max_records`` as
    #: Spark jobs.
    task_hosting: str = TASK_HOSTING_EXECUTOR
    #: ``exactly.once.source.support``: disabled, preparing or enabled (distributed mode only).
    exactly_once_source: str = EXACTLY_ONCE_SOURCE_DISABLED
    #: ``test.plugins.enabled``: whether the instrumented plugins of ``connect_grpc.testing``
    #: are loadable and listed (tests set it; hidden from users by default).
    test_plugins_enabled: bool = False
    #: ``metrics.listener``: (host, port) of the Prometheus endpoint; None: no endpoint.
    metrics_listener: tuple[str, int] | None = None
    #: ``config.providers`` and their settings: what ``${provider:path:key}`` references in
    #: connector configs resolve with (``connect_grpc.config_providers``).
    config_providers: tuple[ProviderSpec, ...] = ()
    #: ``listeners=grpcs://…`` with ``listeners.https.ssl.*``, and ``auth.*``: the TLS
    #: listener and who may call (``connect_grpc.security.config``).
    security: SecurityConfig = field(default_factory=SecurityConfig)
    #: ``key.converter``, ``value.converter``, ``header.converter``: the converters of the
    #: connectors that set none of their own (None: unset; Kafka Connect requires the first
    #: two, here a side without a converter passes its bytes through).
    converters: Mapping[str, str | None] = field(default_factory=dict)
    #: ``topic.creation.enable``: whether source tasks create the missing topics they write
    #: to, with their connector's ``topic.creation.*`` settings (KIP-158). Off, those keys
    #: are accepted and ignored, as Kafka Connect ignores them.
    topic_creation_enabled: bool = True
    #: ``topic.tracking.enable``: whether tasks record the topics they use (KIP-558) and
    #: GetConnectorTopics answers; ``topic.tracking.allow.reset``: whether
    #: ResetConnectorTopics may forget them.
    topic_tracking_enabled: bool = True
    topic_tracking_reset_allowed: bool = True
    #: ``connector.client.config.override.policy`` (and, for ``Allowlist``,
    #: ``connector.client.config.override.allowlist``): which ``*.override.*`` client
    #: settings a connector may set (``connect_grpc.config.override_policy``).
    client_override_policy: ClientOverridePolicy = field(default_factory=ClientOverridePolicy)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> WorkerConfig:
        providers = provider_specs(props)
        props = resolve_worker_properties(props, providers)
        if not props.get("bootstrap.servers", "").strip():
            raise InvalidArgumentError.for_field("bootstrap.servers", "is required")
        listener = props.get("listeners", DEFAULT_LISTENER).split(",")[0].strip()
        host, port, tls = parse_grpc_listener(listener)
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
            limits=_limits(props),
            resilience=_resilience(props),
            local_batch_max_records=int_property(
                props, "task.batch.local.max.records", DEFAULT_LOCAL_BATCH_MAX_RECORDS, 0
            ),
            test_plugins_enabled=_bool_property(props, "test.plugins.enabled", False),
            metrics_listener=metrics_listener(props),
            config_providers=providers,
            security=SecurityConfig.from_properties(props, tls),
            task_hosting=_choice_property(
                props,
                "task.hosting",
                (TASK_HOSTING_EXECUTOR, TASK_HOSTING_DRIVER),
                TASK_HOSTING_EXECUTOR,
            ),
            converters={name: _converter_property(props, name) for name in CONVERTER_PROPERTIES},
            topic_creation_enabled=_bool_property(props, TOPIC_CREATION_ENABLE_PROPERTY, True),
            topic_tracking_enabled=_bool_property(props, TOPIC_TRACKING_ENABLE_PROPERTY, True),
            topic_tracking_reset_allowed=_bool_property(
                props, TOPIC_TRACKING_ALLOW_RESET_PROPERTY, True
            ),
            client_override_policy=ClientOverridePolicy.from_properties(props),
            exactly_once_source=_choice_property(
                props,
                EXACTLY_ONCE_SOURCE_PROPERTY,
                (
                    EXACTLY_ONCE_SOURCE_DISABLED,
                    EXACTLY_ONCE_SOURCE_PREPARING,
                    EXACTLY_ONCE_SOURCE_ENABLED,
                ),
                EXACTLY_ONCE_SOURCE_DISABLED,
            ),
        )

    @property
    def exactly_once_source_enabled(self) -> bool:
        """Whether source tasks write transactionally (``exactly.once.source.support=enabled``)."""
        return self.exactly_once_source == EXACTLY_ONCE_SOURCE_ENABLED

    def standalone_offset_file(self) -> Path:
        """The offsets file of a standalone worker. Rejects what a standalone worker cannot
        honour: no offsets file, and exactly-once source support (like Kafka Connect's, it
        needs the cluster's transactional offsets topic and the leader's fencing of task
        generations)."""
        if self.offset_file is None:
            raise InvalidArgumentError.for_field(
                "offset.storage.file.filename", "is required in standalone mode"
            )
        if self.exactly_once_source_enabled:
            raise InvalidArgumentError.for_field(
                EXACTLY_ONCE_SOURCE_PROPERTY,
                "exactly-once source support is available only in distributed mode "
                "(connect-grpc distributed), as in Kafka Connect; a standalone worker takes "
                f"{EXACTLY_ONCE_SOURCE_PROPERTY}={EXACTLY_ONCE_SOURCE_DISABLED}",
            )
        return self.offset_file

    def converter_class(self, name: str) -> str | None:
        """The worker's ``key.converter``, ``value.converter`` or ``header.converter``."""
        return self.converters.get(name)

    def prefixed(self, prefix: str) -> dict[str, str]:
        """Every property under ``prefix`` with the prefix removed (e.g. ``producer.``)."""
        return {k[len(prefix) :]: v for k, v in self.raw.items() if k.startswith(prefix)}


def _limits(props: Mapping[str, str]) -> Limits:
    defaults = Limits()
    return Limits(
        tasks_max=int_property(props, "tasks.max.limit", defaults.tasks_max, 1),
        config_bytes=int_property(
            props, "connector.config.max.bytes", defaults.config_bytes, 1024
        ),
        grpc_receive_bytes=int_property(
            props, "grpc.max.receive.message.bytes", defaults.grpc_receive_bytes, 64 * 1024
        ),
        grpc_send_bytes=int_property(
            props, "grpc.max.send.message.bytes", defaults.grpc_send_bytes, 64 * 1024
        ),
    )


def _resilience(props: Mapping[str, str]) -> Resilience:
    defaults = Resilience()
    return Resilience(
        task_retry_timeout_ms=int_property(
            props, "task.retry.timeout.ms", defaults.task_retry_timeout_ms, -1, LONG_MAX
        ),
        task_retry_backoff_max_ms=int_property(
            props, "task.retry.backoff.max.ms", defaults.task_retry_backoff_max_ms, 1, LONG_MAX
        ),
        kafka_unreachable_grace_ms=int_property(
            props,
            "health.kafka.unreachable.grace.ms",
            defaults.kafka_unreachable_grace_ms,
            0,
            LONG_MAX,
        ),
        liveness_timeout_ms=int_property(
            props,
            "health.liveness.timeout.ms",
            defaults.liveness_timeout_ms,
            LIVENESS_TIMEOUT_MIN_MS,
            LONG_MAX,
        ),
    )
