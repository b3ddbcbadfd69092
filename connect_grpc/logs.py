"""structlog setup: console lines in development, one JSON object per line in production."""

from __future__ import annotations

import logging
import sys

import structlog

from connect_grpc.config_providers.redaction import redact_secrets


def configure_logging(log_format: str = "console", level: str = "INFO") -> None:
    """Routes structlog (and stdlib logging, e.g. py4j's) to stderr in the chosen format,
    with the values resolved from config references masked (``config_providers.redaction``;
    in the console format, a traceback is rendered after masking and is not masked)."""
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        # Filtering first: a debug call below the level costs a method call, not the chain.
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info if log_format == "json" else _identity,
            redact_secrets,
            renderer,
        ],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("py4j", "py4j.clientserver", "py4j.java_gateway"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _identity(
    logger: object, method: str, event: structlog.typing.EventDict
) -> structlog.typing.EventDict:
    return event
