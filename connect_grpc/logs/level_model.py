"""The log-level values the API carries (KIP-495, KIP-976): a logger's level and where a
set applies.

Apart from :mod:`.levels` (which reads and sets this process's loggers, and imports
structlog) so that the typed client and ``ctl``, which only carry these values, import
neither structlog nor the worker's logger machinery.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class LogLevelScope(enum.Enum):
    """Where a level set through the API applies (KIP-976)."""

    WORKER = "worker"
    CLUSTER = "cluster"


@dataclass(frozen=True, slots=True)
class LoggerLevel:
    """A logger's effective level (a Kafka name) and when it was last set through the API
    (ms since the epoch; None if it never was)."""

    level: str
    last_modified: int | None = None
