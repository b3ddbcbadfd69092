"""A connector's record pipeline as configured: its converters, its transformation stages
(each with its predicate) and its error handling (``errors.*``).

The contract's dataclasses (issue 24). ``build_pipeline``, which makes them from a
connector's config, belongs to branch pipe-config; this file is replaced by that branch's
at merge.
"""

from __future__ import annotations

from dataclasses import dataclass

from connect_grpc.data.plugins import Converter, HeaderConverter, Predicate, Transformation


@dataclass(frozen=True)
class ErrorHandling:
    """The connector's ``errors.*`` keys."""

    retry_timeout_ms: int  # -1 = retry for ever
    retry_delay_max_ms: int
    tolerate_all: bool
    log_enable: bool
    log_include_messages: bool
    dlq_topic: str  # "" = no dead-letter queue
    dlq_replication_factor: int
    dlq_context_headers: bool


@dataclass(frozen=True)
class TransformStage:
    """One alias of ``transforms``: its transformation, applied when its predicate (if any)
    matches, or does not match with ``negate``."""

    alias: str
    transformation: Transformation  # type: ignore[type-arg]
    predicate: Predicate | None  # type: ignore[type-arg]
    negate: bool


@dataclass
class PipelinePlugins:
    """A task's configured converters and transformation stages. A None converter is
    today's pass-through (bytes/str in, bytes out; bytes read handed on as bytes)."""

    key_converter: Converter | None
    value_converter: Converter | None
    header_converter: HeaderConverter | None
    stages: list[TransformStage]
    errors: ErrorHandling

    def is_pass_through(self) -> bool:
        """No converter and no stage: records move as bytes, untouched."""
        return (
            self.key_converter is None
            and self.value_converter is None
            and self.header_converter is None
            and not self.stages
        )

    def close(self) -> None:
        """Closes every plugin (a failure to close one does not keep the others open)."""
        plugins: list[object] = [self.key_converter, self.value_converter, self.header_converter]
        for stage in self.stages:
            plugins.extend((stage.transformation, stage.predicate))
        for plugin in plugins:
            close = getattr(plugin, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:
                    continue
