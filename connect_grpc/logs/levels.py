"""The worker's log levels, read and set at run time (Kafka Connect's ``Loggers``, KIP-495).

Loggers are stdlib ``logging`` loggers: structlog hands every event to the stdlib logger
named after the module that logs it (``structlog.get_logger(__name__)``), and filters by
that logger's level, so a level set here takes effect on the next event.

Levels have Kafka's names (log4j's), mapped to Python's numbers:

    ALL 1 · TRACE 5 · DEBUG 10 · INFO 20 · WARN 30 (WARNING) · ERROR 40 · FATAL 50
    (CRITICAL) · OFF 60 (above CRITICAL: nothing is logged)

A level read back is the logger's *effective* level named by the highest Kafka level at
or below it (a logger at Python's 25 reads INFO; the root logger at NOTSET reads ALL).

Which loggers exist: the root logger (named ``root``), every stdlib logger created so far,
and the logger of every loaded ``connect_grpc`` module that has a module-level structlog
logger (structlog creates the stdlib one only on first use, so a module that has not
logged yet would otherwise be unknown). Only this process's loggers are listed; but the
levels set here reach the Python workers of Spark executors that host this worker's tasks
(``LEVELS_SET``: the driver sends the table with a hosted task's next call, and before a
new one starts), so that a task's DEBUG lines show wherever it runs.

Java loggers: when the worker hosts Java plugins, the Java loggers of its Spark driver's JVM
(``java.JAVA_LOGGERS``: Kafka Connect's runtime and clients, and those its plugins logged
through) are listed and read beside these (a name Python knows is Python's), and a set applies
to them too, the changed ones answered with the Python ones; the JVMs that host its Java
tasks get the same table (``LEVELS_SET``) over their connections, and the Java loggers they
report (``java.HOST_LOGGERS``: an executor's JVM is not the driver's) are listed too, at the
level that table gives them (``java.table_level``), and answered as changed by a set that
changes it.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping

import structlog

from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.logs.java import HOST_LOGGERS, JAVA_LOGGERS, table_level
from connect_grpc.logs.level_model import LoggerLevel as LoggerLevel
from connect_grpc.logs.level_model import LogLevelScope as LogLevelScope

ROOT_NAME = "root"
#: The project's package: its modules' loggers are known before they first log.
PROJECT_PACKAGE = "connect_grpc"

TRACE = 5
OFF = logging.CRITICAL + 10
#: Kafka's level names, lowest first, with the Python level each sets.
KAFKA_LEVELS: tuple[tuple[str, int], ...] = (
    ("ALL", 1),
    ("TRACE", TRACE),
    ("DEBUG", logging.DEBUG),
    ("INFO", logging.INFO),
    ("WARN", logging.WARNING),
    ("ERROR", logging.ERROR),
    ("FATAL", logging.CRITICAL),
    ("OFF", OFF),
)
_BY_NAME = dict(KAFKA_LEVELS)
VALID_LEVELS = ", ".join(name for name, _ in KAFKA_LEVELS)

logging.addLevelName(TRACE, "TRACE")
logging.addLevelName(OFF, "OFF")

#: The type of what ``structlog.get_logger`` returns before first use (a lazy proxy).
_LAZY_LOGGER = type(structlog.get_logger(PROJECT_PACKAGE))

log = structlog.get_logger(__name__)


def parse_level(text: str, field: str = "level") -> str:
    """The Kafka level name ``text`` names (any case, surrounding blanks ignored).

    Raises InvalidArgumentError naming ``field`` for a missing or unknown level."""
    name = text.strip().upper()
    if not name:
        raise InvalidArgumentError.for_field(
            field, f"a log level is required; valid levels: {VALID_LEVELS}"
        )
    if name not in _BY_NAME:
        raise InvalidArgumentError.for_field(
            field, f"invalid log level {text!r}; valid levels: {VALID_LEVELS}"
        )
    return name


def python_level(level: str) -> int:
    """The Python level of a Kafka level name (as :func:`parse_level` returns it)."""
    return _BY_NAME[level]


def kafka_level(python: int) -> str:
    """The name of the highest Kafka level at or below the Python level ``python``."""
    name = KAFKA_LEVELS[0][0]
    for candidate, number in KAFKA_LEVELS:
        if number <= python:
            name = candidate
    return name


def parse_logger_name(text: str, field: str = "name") -> str:
    """A logger name or namespace as given (``root``, any case, for the root logger);
    InvalidArgumentError naming ``field`` when it is empty."""
    name = text.strip()
    if not name:
        raise InvalidArgumentError.for_field(
            field, "a logger name is required ('root' for the root logger)"
        )
    return ROOT_NAME if is_root(name) else name


def is_root(name: str) -> bool:
    """Whether ``name`` names the root logger: ``root`` in any case."""
    return name.lower() == ROOT_NAME


def _now_ms() -> int:
    return int(time.time() * 1000)


class LoggerLevels:
    """Reads and sets this process's logger levels, and remembers when each was set.
    Thread-safe."""

    def __init__(self, clock: Callable[[], int] = _now_ms) -> None:
        """``clock``: ms since the epoch, for ``last_modified``."""
        self._clock = clock
        self._lock = threading.Lock()
        self._last_modified: dict[str, int] = {}

    def all_levels(self) -> dict[str, LoggerLevel]:
        """Every known logger whose level is not OFF, by name, sorted (``root`` first): the
        driver JVM's Java loggers too, when there are any, and those the JVMs hosting Java
        tasks reported."""
        java = _java_levels()
        with self._lock:
            levels = {
                name: self._level_of(name, logger) for name, logger in _current_loggers().items()
            }
            for name, level in java.items():
                if name not in levels:
                    levels[name] = LoggerLevel(level, self._last_modified.get(name))
            for name, level in _host_levels().items():
                if name not in levels:
                    levels[name] = LoggerLevel(level, self._last_modified.get(name))
        return {name: levels[name] for name in _sorted(levels) if levels[name].level != "OFF"}

    def level(self, name: str) -> LoggerLevel | None:
        """The logger's level, or None if no logger of that name is known."""
        loggers = _current_loggers()
        key = ROOT_NAME if is_root(name) else name
        logger = loggers.get(key)
        if logger is None:
            java = _java_levels().get(key)
            if java is None:
                java = _host_levels().get(key)
            if java is None:
                return None
            with self._lock:
                return LoggerLevel(java, self._last_modified.get(key))
        with self._lock:
            return self._level_of(key, logger)

    def set_level(self, namespace: str, level: str, at: int | None = None) -> list[str]:
        """Sets ``level`` (a Kafka name) on the namespace's logger and on every known logger
        whose name starts with ``namespace`` (a plain prefix, as Kafka Connect: ``a.b`` also
        matches ``a.bc``); ``root`` sets every logger. The namespace's logger is created if
        needed. ``at``: the time to record (default now).

        Returns the loggers whose effective level changed (a namespace logger created here
        counts as changed, as in Kafka Connect), sorted; only they get the new
        ``last_modified``. The driver JVM's Java loggers are set too (outside this object's
        lock: a JVM call), and those whose level changed are among the answer."""
        number = python_level(level)
        key = ROOT_NAME if is_root(namespace) else namespace
        with self._lock:
            before = {
                name: kafka_level(logger.getEffectiveLevel())
                for name, logger in _current_loggers().items()
            }
            targets = _namespace_loggers(key)
            for _, logger in targets:
                logger.setLevel(number)
            stamp = self._clock() if at is None else at
            changed = [name for name, _ in targets if before.get(name) != level]
            _, entries_before = LEVELS_SET.snapshot()
            LEVELS_SET.record(key, level)
            version, entries = LEVELS_SET.snapshot()
        java = JAVA_LOGGERS.current()
        if java is not None:
            known = set(changed)
            changed += [name for name in java.apply(version, entries, key) if name not in known]
        known = set(changed)
        changed += [
            name
            for name in HOST_LOGGERS.names()
            if name not in known
            and name not in before
            and table_level(name, entries_before) != table_level(name, entries)
        ]
        changed = _sorted(changed)
        with self._lock:
            for name in changed:
                self._last_modified[name] = stamp
        log.info("log_level_set", namespace=key, level=level, changed=len(changed))
        return changed

    def _level_of(self, name: str, logger: logging.Logger) -> LoggerLevel:
        return LoggerLevel(kafka_level(logger.getEffectiveLevel()), self._last_modified.get(name))


class LevelTable:
    """The levels set through the API in this process, in the order they were set, for the
    processes that host its tasks to apply (``apply_levels``). A set replaces the entries it
    covers (its namespace's and those under it as a plain prefix; ``root``'s covers every
    one), so the table stays as small as the namespaces set. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, str] = {}
        self._version = 0

    def record(self, namespace: str, level: str) -> None:
        with self._lock:
            self._entries = {
                name: current
                for name, current in self._entries.items()
                if namespace != ROOT_NAME and not name.startswith(namespace)
            }
            self._entries[namespace] = level
            self._version += 1

    @property
    def version(self) -> int:
        """Goes up with every set (0: nothing set yet)."""
        return self._version

    def snapshot(self) -> tuple[int, tuple[tuple[str, str], ...]]:
        """The version and the (namespace, level) entries, in the order to apply them."""
        with self._lock:
            return self._version, tuple(self._entries.items())


#: The levels this process's API set, which its task hosts apply.
LEVELS_SET = LevelTable()


def apply_levels(entries: tuple[tuple[str, str], ...]) -> None:
    """Sets each (namespace, Kafka level) in order, as ``LoggerLevels.set_level`` does but
    logging nothing (a task's host applies the worker's table before each call that
    follows a change)."""
    for namespace, level in entries:
        number = python_level(level)
        for _, logger in _namespace_loggers(namespace):
            logger.setLevel(number)


def _java_levels() -> Mapping[str, str]:
    """The driver JVM's Java loggers and their levels (none when it hosts no Java plugins)."""
    java = JAVA_LOGGERS.current()
    return {} if java is None else java.levels()


def _host_levels() -> dict[str, str]:
    """The Java loggers the JVMs hosting Java tasks reported, at the levels the worker's table
    gives them there."""
    _, entries = LEVELS_SET.snapshot()
    return {name: table_level(name, entries) for name in HOST_LOGGERS.names()}


def _sorted(names: list[str] | dict[str, LoggerLevel]) -> list[str]:
    """Names sorted, ``root`` first."""
    return sorted(names, key=lambda name: (name != ROOT_NAME, name))


def _current_loggers() -> dict[str, logging.Logger]:
    """Every known logger by name, the root logger as ``root``."""
    _create_project_loggers()
    loggers: dict[str, logging.Logger] = {ROOT_NAME: logging.getLogger()}
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and name != ROOT_NAME:
            loggers[name] = logger
    return loggers


def _namespace_loggers(namespace: str) -> list[tuple[str, logging.Logger]]:
    """The loggers a level set on ``namespace`` applies to, the namespace's own first."""
    loggers = _current_loggers()
    if namespace == ROOT_NAME:
        return list(loggers.items())
    own = (namespace, logging.getLogger(namespace))
    return [own] + [
        (name, logger)
        for name, logger in loggers.items()
        if name != namespace and name != ROOT_NAME and name.startswith(namespace)
    ]


def _create_project_loggers() -> None:
    """Creates the stdlib logger of every loaded project module that has a structlog
    logger (structlog would create it on the module's first event)."""
    existing = logging.Logger.manager.loggerDict
    for name, module in list(sys.modules.items()):
        if module is None or name.partition(".")[0] != PROJECT_PACKAGE:
            continue
        if isinstance(existing.get(name), logging.Logger):
            continue
        if any(isinstance(value, _LAZY_LOGGER) for value in list(vars(module).values())):
            logging.getLogger(name)
