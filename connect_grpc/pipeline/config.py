"""The one parser of a connector config's pipeline keys (``pipeline.keys``): validation
(``pipeline.validation``, for ValidateConfig and every create or change) and tasks
(``pipeline.build``, where a task's plugins are made) both read the keys through it, so
that what is checked is what runs.

It reads; it creates no plugin. A transformation's or predicate's own keys and a
converter's are the keys under its prefix with the prefix removed (Kafka's
``originalsWithPrefix``), a transformation's ``predicate`` and ``negate`` taken out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from connect_grpc.connectors.pipeline_plugins import PluginKind
from connect_grpc.data.plugins import Converter, HeaderConverter
from connect_grpc.kernel.configdef import java_trim, parse_value
from connect_grpc.pipeline.keys import (
    CONVERTER_TYPE,
    DLQ_CONTEXT_HEADERS_ENABLE,
    DLQ_TOPIC_NAME,
    DLQ_TOPIC_REPLICATION_FACTOR,
    ERRORS_LOG_ENABLE,
    ERRORS_LOG_INCLUDE_MESSAGES,
    ERRORS_RETRY_DELAY_MAX_MS,
    ERRORS_RETRY_TIMEOUT,
    ERRORS_TOLERANCE,
    NEGATE,
    PIPELINE_CONFIG,
    PIPELINE_FRAMEWORK,
    PREDICATE,
    PREDICATES,
    TOLERANCE_ALL,
    TRANSFORMS,
)

__all__ = [
    "AliasKeys",
    "ErrorHandling",
    "PipelineConfigError",
    "aliases",
    "configure_converter",
    "predicate_keys",
    "sub_config",
    "transformation_keys",
]


class PipelineConfigError(ValueError):
    """A pipeline plugin could not be found, created or configured; the task cannot start
    (Kafka Connect's ConnectException at task start)."""


def aliases(config: Mapping[str, str], key: str) -> list[str]:
    """The parsed alias list of ``transforms`` or ``predicates`` (empty when unset)."""
    raw = config.get(key)
    return [] if raw is None else list(parse_value(PIPELINE_CONFIG.keys[key], raw))


def sub_config(config: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The keys under ``prefix``, with it removed (Kafka's ``originalsWithPrefix``)."""
    return {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix) and k != prefix}


@dataclass(frozen=True, slots=True)
class AliasKeys:
    """The keys of one alias of ``transforms`` or ``predicates``."""

    alias: str
    #: ``transforms.<a>.`` or ``predicates.<p>.``.
    prefix: str
    #: The plugin's own keys, prefix removed (``type`` included, as Kafka Connect hands it
    #: on); a transformation's ``predicate`` and ``negate`` taken out.
    own: dict[str, str]
    #: A transformation's ``predicate``, as written (None when unset).
    predicate_raw: str | None = None
    #: A transformation's ``negate``, as written (None when unset).
    negate_raw: str | None = None

    @property
    def type_key(self) -> str:
        return f"{self.prefix}type"

    @property
    def predicate(self) -> str | None:
        """The predicate's alias, trimmed as Kafka Connect trims it (None when unset)."""
        return None if self.predicate_raw is None else java_trim(self.predicate_raw)

    @property
    def negate(self) -> bool:
        """Kafka Connect's ``Boolean.parseBoolean``: "true" in any case, anything else false."""
        return self.negate_raw is not None and self.negate_raw.lower() == "true"


def transformation_keys(config: Mapping[str, str], alias: str) -> AliasKeys:
    """The keys of the transformation ``alias`` of ``transforms``."""
    prefix = f"{TRANSFORMS}.{alias}."
    own = sub_config(config, prefix)
    predicate, negate = own.pop(PREDICATE, None), own.pop(NEGATE, None)
    return AliasKeys(alias, prefix, own, predicate, negate)


def predicate_keys(config: Mapping[str, str], alias: str) -> AliasKeys:
    """The keys of the predicate ``alias`` of ``predicates``."""
    prefix = f"{PREDICATES}.{alias}."
    return AliasKeys(alias, prefix, sub_config(config, prefix))


def configure_converter(
    converter: Converter | HeaderConverter, kind: PluginKind, sub: Mapping[str, str], is_key: bool
) -> None:
    """Configures a converter as Kafka Connect does: a key or value converter with its keys
    and ``is_key`` (it adds ``converter.type`` itself), a header converter with its keys and
    ``converter.type=header``. A class of both kinds is configured as the kind it is used as."""
    if kind is PluginKind.HEADER_CONVERTER:
        cast(HeaderConverter, converter).configure({**sub, CONVERTER_TYPE: "header"})
    else:
        cast(Converter, converter).configure(sub, is_key)


@dataclass(frozen=True)
class ErrorHandling:
    """The ``errors.*`` settings of a connector (KIP-298, and the dead-letter queue of
    KIP-298/KIP-610, on sources too)."""

    #: ``errors.retry.timeout``: how long a failed operation is retried; -1 = forever.
    retry_timeout_ms: int
    #: ``errors.retry.delay.max.ms``.
    retry_delay_max_ms: int
    #: ``errors.tolerance=all`` (case-insensitive here, as Kafka Connect reads it).
    tolerate_all: bool
    log_enable: bool
    log_include_messages: bool
    #: ``errors.deadletterqueue.topic.name``, trimmed; "" = no dead-letter queue.
    dlq_topic: str
    dlq_replication_factor: int
    dlq_context_headers: bool

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> ErrorHandling:
        """The settings of a validated connector config (defaults filled in).

        Raises:
            PipelineConfigError: a value does not parse.
        """
        try:
            parsed = PIPELINE_FRAMEWORK.parse(config)
        except ValueError as exc:
            raise PipelineConfigError(str(exc)) from None
        return cls(
            retry_timeout_ms=parsed[ERRORS_RETRY_TIMEOUT],
            retry_delay_max_ms=parsed[ERRORS_RETRY_DELAY_MAX_MS],
            tolerate_all=str(parsed[ERRORS_TOLERANCE]).lower() == TOLERANCE_ALL,
            log_enable=parsed[ERRORS_LOG_ENABLE],
            log_include_messages=parsed[ERRORS_LOG_INCLUDE_MESSAGES],
            dlq_topic=java_trim(parsed[DLQ_TOPIC_NAME]),
            dlq_replication_factor=parsed[DLQ_TOPIC_REPLICATION_FACTOR],
            dlq_context_headers=parsed[DLQ_CONTEXT_HEADERS_ENABLE],
        )
