"""A class-data archive (JDK CDS) of the Spark driver JVM, mapped by every worker's driver.

A worker's start is mostly its Spark driver JVM loading and verifying Spark's classes. A
dynamic archive of those classes, dumped once by a throwaway driver
(``-XX:ArchiveClassesAtExit``) and mapped by every later one (``-XX:SharedArchiveFile``),
halves that JVM's CPU time at start (decision 0131). ``make install`` dumps it into the
cache (``ARCHIVE_DIR``), keyed by the PySpark installation and the JDK; the test session's
drivers map the same file (``connect_grpc.testing.class_archive``). A JVM that cannot use it
(another JDK, another class path) starts as it would have without it, so the archive
changes speed, never behaviour.

``python -m connect_grpc.runtime.class_archive`` ensures the archive in the cache;
``python -m connect_grpc.runtime.class_archive TARGET`` dumps one to ``TARGET``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from connect_grpc.kafka.jars import cache_root

#: The cache's directory of archives (under ``cache_root()``), one per PySpark
#: installation and JDK.
ARCHIVE_DIR = "spark-jvm"
#: Spark's driver JVM options that come before any ``spark.driver.extraJavaOptions``.
DRIVER_OPTIONS_KEY = "spark.driver.defaultJavaOptions"
#: The JVM options, before the archive, of the throwaway driver that dumps it: without the
#: optimising compiler, which a start-up this short has no use for (the archive holds
#: classes, not compiled code: drivers with other compiler settings map it all the same).
DUMP_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
#: Seconds the dump may take (a driver's start, one job, and the dump at its exit).
DUMP_TIMEOUT_S = 300.0
#: With the archive: the JVM's CDS messages off. An archive it cannot use (another class
#: path, a JDK updated in place) makes it warn on stdout, the worker's log, at every start,
#: and it then starts as it would have without one; its other warnings stay on.
QUIET_CDS_OPTIONS = "-Xlog:cds*=off"
#: An option that says how the JVM shares classes (``-Xshare:off``, ``-Xshare:auto``,
#: ``-XX:SharedArchiveFile=…``, ``-XX:ArchiveClassesAtExit=…``, ``-XX:-UseSharedSpaces``…):
#: where the driver's options carry one, the worker adds no archive of its own.
_SHARING_OPTION = re.compile(
    r"(?:^|[\s='\"])-(?:Xshare:|XX:[+-]?\w*(?:Share|Archive)\w*)"
)
#: What Spark's launcher splits JVM options at or unquotes: a cache path with any of these
#: would break the driver's command line, so no archive is given there.
_NEEDS_QUOTING = re.compile(r"[\s'\"\\]")
#: This module, which ``ensure_archive`` runs to dump (``__name__`` is ``__main__`` when it
#: is run itself).
_MODULE = "connect_grpc.runtime.class_archive"
#: The environment variables whose JVM options also reach the driver's JVM.
_DRIVER_OPTIONS_ENV = ("SPARK_SUBMIT_OPTS", "PYSPARK_SUBMIT_ARGS", "JAVA_TOOL_OPTIONS",
                       "JDK_JAVA_OPTIONS")


def driver_archive_conf(
    conf: Mapping[str, str], environ: Mapping[str, str], archive: Path | None
) -> dict[str, str]:
    """The ``spark.driver.defaultJavaOptions`` that maps ``archive``: ``conf``'s (the
    worker's Spark settings, the Java plugins' host's included) after the archive's
    options, so that any option they repeat is theirs. Empty (nothing to change) when
    ``archive`` is None or not a file (a missing archive file turns the JVM's default
    sharing off), or its path has what Spark would split the options at, or when the
    driver's options in ``conf`` or ``environ`` (``_DRIVER_OPTIONS_ENV``) already say how
    the JVM shares classes."""
    if archive is None or _NEEDS_QUOTING.search(str(archive)) or not archive.is_file():
        return {}
    theirs = " ".join((conf.get(DRIVER_OPTIONS_KEY, ""),
                       conf.get("spark.driver.extraJavaOptions", ""),
                       *(environ.get(name, "") for name in _DRIVER_OPTIONS_ENV)))
    if _SHARING_OPTION.search(theirs):
        return {}
    options = " ".join(o for o in (f"-XX:SharedArchiveFile={archive}", QUIET_CDS_OPTIONS,
                                   conf.get(DRIVER_OPTIONS_KEY, "").strip()) if o)
    return {DRIVER_OPTIONS_KEY: options}


def default_archive() -> Path | None:
    """The cache's archive for this PySpark and JDK (made or not), or None when no JDK is
    found or the installation cannot be read."""
    try:
        return archive_path(cache_root() / ARCHIVE_DIR)
    except (OSError, ImportError):
        return None


def archive_path(cache: Path) -> Path | None:
    """Where the archive for this PySpark and JDK is kept in ``cache`` (made or not), or
    None when no JDK is found."""
    inputs = _archive_inputs()
    return None if inputs is None else cache / _archive_name(inputs)


def ensure_archive(archive: Path) -> bool:
    """Dumps the archive to ``archive`` unless it is there; whether it is there after.
    The file appears whole or not at all (for the workers and sessions that look for it
    meanwhile). After a dump, the directory's archives that no JVM can use any more (their
    PySpark installation or JDK changed or gone) are removed."""
    if archive.is_file():
        return True
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f"{archive.name}.{os.getpid()}")
    # The dumping driver takes no one else's driver options (an archive mapped there).
    environment = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    try:
        subprocess.run(
            ["nice", "-n", "5", sys.executable, "-m", _MODULE, str(partial)],
            check=True, timeout=DUMP_TIMEOUT_S, env=environment,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        if partial.is_file() and partial.stat().st_size > 0:
            inputs = _archive_inputs()
            if inputs is not None and archive.name == _archive_name(inputs):
                archive.with_suffix(".json").write_text(json.dumps(inputs), encoding="utf-8")
            os.replace(partial, archive)
            prune_stale(archive.parent)
    except (subprocess.SubprocessError, OSError):
        pass
    finally:
        partial.unlink(missing_ok=True)
    return archive.is_file()


def prune_stale(cache: Path) -> list[Path]:
    """Removes the archives of ``cache`` that no JVM can use any more: each archive's
    ``.json`` beside it records what it was dumped from (``_archive_inputs``), and one whose
    jars directory or JDK binary is gone or changed is never mapped again (a fresh clone's
    environment deleted, a PySpark reinstalled). Archives without that record are kept.
    Returns the archives removed."""
    removed = []
    for record in sorted(cache.glob("spark-driver-*.json")):
        try:
            inputs = json.loads(record.read_text(encoding="utf-8"))
            stale = _is_stale(inputs)
        except (OSError, ValueError, TypeError, KeyError):
            continue
        if stale:
            archive = record.with_suffix(".jsa")
            archive.unlink(missing_ok=True)
            record.unlink(missing_ok=True)
            removed.append(archive)
    return removed


def _is_stale(inputs: dict[str, object]) -> bool:
    jars, java = Path(str(inputs["jars"])), Path(str(inputs["java"]))
    try:
        installed = jars.stat().st_mtime_ns if jars.is_dir() else 0
        binary = java.stat()
    except FileNotFoundError:
        return True
    return (installed != inputs["installed"] or binary.st_size != inputs["java_size"]
            or binary.st_mtime_ns != inputs["java_mtime"] or installed == 0)


def _archive_name(inputs: dict[str, object]) -> str:
    """The archive's file name: what it depends on (:func:`_archive_inputs`), hashed."""
    return f"spark-driver-{_key(inputs)}.jsa"


def _key(inputs: dict[str, object]) -> str:
    text = "|".join(str(inputs[name]) for name in (
        "pyspark", "jars", "installed", "java", "java_size", "java_mtime"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _archive_inputs() -> dict[str, object] | None:
    """What the archive depends on: the PySpark release, where its jars are and when they
    were installed (the JVM refuses an archive dumped with another class path, or with
    jars of other times or sizes, so each checkout's environment, and each install of it,
    has its own), and the JDK's build; None when no JDK is found."""
    java = _java()
    if java is None:
        return None
    import pyspark

    stat = java.stat()
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    installed = jars.stat().st_mtime_ns if jars.is_dir() else 0
    return {"pyspark": pyspark.__version__, "jars": str(jars), "installed": installed,
            "java": str(java), "java_size": stat.st_size, "java_mtime": stat.st_mtime_ns}


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
                f"{DUMP_JAVA_OPTIONS} -XX:ArchiveClassesAtExit={target}")
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


def main(argv: list[str]) -> int:
    """With a target, dumps an archive there (what :func:`ensure_archive` runs); without,
    ensures the cache's archive (``make install``), saying so when it dumps one."""
    if argv:
        _dump(Path(argv[0]))
        return 0
    archive = default_archive()
    if archive is None:
        sys.stderr.write("no JDK found: no class-data archive for the Spark driver\n")
        return 0
    if not archive.is_file():
        sys.stdout.write("==> dumping the Spark driver's class-data archive (about 45 s,"
                         f" once per PySpark install and JDK) into {archive.parent}\n")
        sys.stdout.flush()
        if not ensure_archive(archive):
            sys.stderr.write("the class-data archive could not be dumped: workers start"
                             " without it (slower)\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
