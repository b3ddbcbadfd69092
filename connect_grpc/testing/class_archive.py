"""A class-data archive (JDK CDS) of the Spark driver JVM, shared by test workers.

A test worker's start is mostly its Spark driver JVM loading and verifying Spark's classes.
A dynamic archive of those classes, dumped once by a throwaway driver
(``-XX:ArchiveClassesAtExit``) and mapped by every later one (``-XX:SharedArchiveFile``),
halves that JVM's CPU time (measured on the 2-core machine: 12.5-13 s → 6.1-6.5 s with
``-XX:TieredStopAtLevel=1``). The archive is kept in the cache, keyed by the PySpark
version and the JDK; a JVM that cannot use it (another JDK, another class path) warns and
starts as it would have without it, so the archive changes speed, never behaviour.

``python -m connect_grpc.testing.class_archive TARGET`` dumps an archive to ``TARGET``.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

#: The variable through which PySpark's launcher takes spark-submit's arguments: the test
#: session sets it, so that every Spark driver it starts (test workers, README commands,
#: in-process runtimes) gets DRIVER_OPTIONS_KEY, and benchmarks, which do not, run the
#: product's own JVM settings.
SUBMIT_ARGS_ENV = "PYSPARK_SUBMIT_ARGS"
#: Spark's driver JVM options that come before any ``spark.driver.extraJavaOptions``.
DRIVER_OPTIONS_KEY = "spark.driver.defaultJavaOptions"
#: The Spark driver JVM's options in tests: Spark's JVM only schedules there (records go
#: through Python and librdkafka), so it starts without the optimising compiler.
BASE_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
#: Seconds the dump may take (a driver's start, one job, and the dump at its exit).
DUMP_TIMEOUT_S = 300.0


def submit_args(archive: Path | None) -> str:
    """``PYSPARK_SUBMIT_ARGS`` for tests' Spark drivers: the base options, and ``archive``
    when it is there."""
    options = BASE_JAVA_OPTIONS
    if archive is not None and archive.is_file():
        options += f" -XX:SharedArchiveFile={archive}"
    return f"--conf {shlex.quote(f'{DRIVER_OPTIONS_KEY}={options}')} pyspark-shell"


def archive_path(cache: Path) -> Path | None:
    """Where the archive for this PySpark and JDK is kept in ``cache`` (made or not), or
    None when no JDK is found."""
    key = _archive_key()
    return None if key is None else cache / f"spark-driver-{key}.jsa"


def ensure_archive(archive: Path) -> bool:
    """Dumps the archive to ``archive`` unless it is there; whether it is there after.
    The file appears whole or not at all (for the workers and sessions that look for it
    meanwhile)."""
    if archive.is_file():
        return True
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f"{archive.name}.{os.getpid()}")
    try:
        subprocess.run(
            ["nice", "-n", "5", sys.executable, "-m", __name__, str(partial)],
            check=True, timeout=DUMP_TIMEOUT_S,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        if partial.is_file() and partial.stat().st_size > 0:
            os.replace(partial, archive)
    except (subprocess.SubprocessError, OSError):
        pass
    finally:
        partial.unlink(missing_ok=True)
    return archive.is_file()


def _archive_key() -> str | None:
    """What the archive depends on: the PySpark release, where its jars are and when they
    were installed (the JVM refuses an archive dumped with another class path, or with
    jars of other times or sizes, so each checkout's environment, and each install of it,
    has its own), and the JDK's build."""
    java = _java()
    if java is None:
        return None
    import pyspark

    stat = java.stat()
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    installed = jars.stat().st_mtime_ns if jars.is_dir() else 0
    text = (f"{pyspark.__version__}|{jars}|{installed}|{java}|{stat.st_size}|"
            f"{stat.st_mtime_ns}")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _java() -> Path | None:
    """The java binary PySpark launches: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not Path(found).is_file():
        return None
    return Path(found).resolve()


def _dump(target: Path) -> None:
    """Runs a driver that loads what a worker's driver loads (a session and a job), then
    ends its JVM normally, which writes the archive."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.scheduler.mode", "FAIR")
        .config("spark.driver.extraJavaOptions",
                f"{BASE_JAVA_OPTIONS} -XX:ArchiveClassesAtExit={target}")
        .getOrCreate()
    )
    context = session.sparkContext
    context.parallelize(range(4), 2).map(lambda value: value + 1).collect()
    gateway = context._gateway
    jvm = getattr(gateway, "proc", None)
    session.stop()
    if jvm is not None:  # the gateway ends its JVM when its stdin closes: the dump runs then
        jvm.stdin.close()
        jvm.wait(timeout=DUMP_TIMEOUT_S)


if __name__ == "__main__":
    _dump(Path(sys.argv[1]))
