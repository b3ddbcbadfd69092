"""Masks the values resolved from config references in log lines.

The worker never logs a connector's config, but plugins and their exceptions may print
what they were given. Every value a reference resolved to in this process is remembered
(``SECRETS``), and the logging pipeline replaces it with ``[hidden]`` in every line, as
Kafka prints a PASSWORD. Values shorter than ``MIN_MASKED_LENGTH`` are not masked: a short
value (``1``, ``true``) would garble unrelated text.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["HIDDEN", "MIN_MASKED_LENGTH", "SECRETS", "SecretRegistry", "redact_secrets"]

#: What a hidden value is shown as (Kafka's ``Password.HIDDEN``).
HIDDEN = "[hidden]"
MIN_MASKED_LENGTH = 6


class SecretRegistry:
    """The resolved values of this process. Thread-safe; values are never forgotten (a
    secret rotated away stays masked), except by ``replace``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def register(self, values: Iterable[str]) -> None:
        new = {value for value in values if len(value) >= MIN_MASKED_LENGTH}
        if new <= self._values:
            return
        with self._lock:
            self._values = self._values | new
            longest_first = sorted(self._values, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(value) for value in longest_first))

    def replace(self, values: Iterable[str]) -> None:
        """Forgets every value, then registers ``values``: a task's host that serves
        another task next masks that task's values, not the previous task's."""
        with self._lock:
            self._values = frozenset()
            self._pattern = None
        self.register(values)

    def among(self, texts: Iterable[str]) -> tuple[str, ...]:
        """The registered values that occur in any of ``texts``, sorted."""
        values = self._values
        found = {value for text in texts for value in values if value in text}
        return tuple(sorted(found))

    def redact(self, text: str) -> str:
        pattern = self._pattern
        return text if pattern is None else pattern.sub(HIDDEN, text)


#: The registry of this process: the config transformer fills it, the log pipeline reads it.
SECRETS = SecretRegistry()


def redact_secrets(logger: object, method: str, event: Mapping[str, Any]) -> dict[str, Any]:
    """A structlog processor: masks registered values in the event's strings (and in the
    strings of its lists, tuples and dicts, one level deep)."""
    if not SECRETS:
        return dict(event)
    return {key: _redacted(value, depth=1) for key, value in event.items()}


def _redacted(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return SECRETS.redact(value)
    if depth <= 0:
        return value
    if isinstance(value, list):
        return [_redacted(item, depth - 1) for item in value]
    if isinstance(value, tuple):
        return tuple(_redacted(item, depth - 1) for item in value)
    if isinstance(value, dict):
        return {key: _redacted(item, depth - 1) for key, item in value.items()}
    return value
