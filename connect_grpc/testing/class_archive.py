"""The test session's Spark driver JVM options, with the driver's class-data archive.

The archive (JDK CDS) is the product's, ``connect_grpc.runtime.class_archive``: dumped once
into the cache (``make install``, or the test session when it is missing), keyed by the
PySpark installation and the JDK, and mapped by the session's drivers through
``PYSPARK_SUBMIT_ARGS``, with ``-XX:TieredStopAtLevel=1`` (measured on the 2-core machine:
a driver's CPU at start 12.5-13 s → 6.1-6.5 s with both). The names below that come from
the runtime module are kept here for the tests that import them from this one.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from connect_grpc.runtime.class_archive import (
    DRIVER_OPTIONS_KEY,
    DUMP_TIMEOUT_S,
    archive_path,
    default_archive,
    ensure_archive,
)

__all__ = [
    "BASE_JAVA_OPTIONS",
    "DRIVER_OPTIONS_KEY",
    "DUMP_TIMEOUT_S",
    "SUBMIT_ARGS_ENV",
    "archive_path",
    "default_archive",
    "ensure_archive",
    "submit_args",
]

#: The variable through which PySpark's launcher takes spark-submit's arguments: the test
#: session sets it, so that every Spark driver it starts (test workers, README commands,
#: in-process runtimes) gets DRIVER_OPTIONS_KEY, and benchmarks, which do not, run the
#: product's own JVM settings (the archive included). spark-submit reads it after the
#: worker's settings, so its DRIVER_OPTIONS_KEY is the one a test worker's driver gets.
SUBMIT_ARGS_ENV = "PYSPARK_SUBMIT_ARGS"
#: The Spark driver JVM's options in tests: Spark's JVM only schedules there (records go
#: through Python and librdkafka), so it starts without the optimising compiler.
BASE_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


def submit_args(archive: Path | None) -> str:
    """``PYSPARK_SUBMIT_ARGS`` for tests' Spark drivers: the base options, and ``archive``
    when it is there."""
    options = BASE_JAVA_OPTIONS
    if archive is not None and archive.is_file():
        options += f" -XX:SharedArchiveFile={archive}"
    return f"--conf {shlex.quote(f'{DRIVER_OPTIONS_KEY}={options}')} pyspark-shell"
