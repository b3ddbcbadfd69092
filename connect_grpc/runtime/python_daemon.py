"""The daemon that forks a local master's Python workers: PySpark's own (``pyspark.daemon``),
run after two things it would otherwise leave to every start and every worker.

- Spark puts the ``pyspark.zip`` and ``py4j-*-src.zip`` of its home first on the daemon's
  ``PYTHONPATH``. Modules imported from a zip are compiled from source on every import (the
  zip holds no bytecode, and none is cached for it), about 1 s of CPU per daemon and 0.2 s
  per worker. A pip-installed PySpark ships those zips inside its own package, beside the
  same modules installed and compiled once: those two zips are taken off the path, so the
  installed copies are imported instead. Zips of any other Spark home stay where they are.
- The task runtime (what the warm-up loads, ``warm_up._import_task_hosts``) is imported
  once, here, before the daemon forks its workers, which inherit it, rather than by each
  worker after its fork. PySpark imports its worker module after the fork because some
  modules start threads as they are imported, and a fork copies no thread; these modules
  start none (a unit test holds them to it).

Run as ``python -m connect_grpc.runtime.python_daemon pyspark.worker`` through
``spark.python.daemon.module`` (see ``runtime.spark.spark_conf``): local masters only,
where the workers run this worker's own interpreter and packages, as the daemon must.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

#: The pyspark archive Spark puts on its Python workers' path, under its home.
_PYSPARK_ZIP = Path("python", "lib", "pyspark.zip")


def without_bundled_zips(path: Sequence[str]) -> list[str]:
    """``path`` (``sys.path``) without the ``pyspark.zip`` and ``py4j-<version>-src.zip``
    that a pip-installed PySpark on ``path`` bundles: a zip is dropped only when the
    directory that holds its ``pyspark`` package is itself on ``path`` (the same modules,
    installed), and the py4j zip only when that directory also holds the installed py4j of
    the same version."""
    entries = list(path)
    plain = {os.path.normpath(entry) for entry in entries if entry and not entry.endswith(".zip")}
    dropped: set[str] = set()
    for entry in entries:
        zipped = Path(entry)
        if not entry.endswith(".zip") or len(zipped.parents) < 5:
            continue
        package = zipped.parents[2]  # <root>/pyspark, from <root>/pyspark/python/lib/x.zip
        root = package.parent
        if package.name != "pyspark" or os.path.normpath(root) not in plain:
            continue
        if zipped == package / _PYSPARK_ZIP and (package / "__init__.py").is_file():
            dropped.add(entry)
        elif zipped.parent == package / _PYSPARK_ZIP.parent and zipped.name.startswith("py4j-"):
            version = zipped.name.removeprefix("py4j-").removesuffix("-src.zip")
            if (root / f"py4j-{version}.dist-info").is_dir() and (root / "py4j").is_dir():
                dropped.add(entry)
    return [entry for entry in entries if entry not in dropped]


def preload(worker_module: str) -> None:
    """Imports what every worker would import after its fork: PySpark's worker module and
    the task runtime (as ``warm_up._import_task_hosts`` does)."""
    import importlib

    if worker_module.startswith("pyspark"):  # as pyspark.daemon imports it
        importlib.import_module(worker_module)
    from connect_grpc.runtime.hosting import sink_host, source_host  # noqa: F401 - preloaded


def main() -> None:
    sys.path[:] = without_bundled_zips(sys.path)
    preload(sys.argv[1] if len(sys.argv) > 1 else "pyspark.worker")
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()
