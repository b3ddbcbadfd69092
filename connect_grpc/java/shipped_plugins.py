"""The Java plugins of ``plugin.path`` shipped to a Spark cluster's executors.

On a cluster master (anything but ``local``/``local[…]``) the executors that host Java tasks
run in JVMs of their own, possibly on other machines, where the worker's ``plugin.path`` may
not exist or may hold other jars than the ones the driver scanned. The worker therefore packs
each ``plugin.path`` entry that holds Java plugins into a zip and gives it to Spark
(``spark.archives``): Spark serves it from the driver and unpacks it into each executor's
``SparkFiles`` root, under a directory named by :func:`shipped_name` (the archive's ``#``
fragment). A JVM host in an executor finds the entry's copy there under the same name
(``io.connectgrpc.jvm.host.ShippedPluginPath`` computes it the same way) and points Kafka's
``plugin.path`` at it. Plugin directories keep their own layout, so that Kafka still gives each
plugin location a class loader of its own (``addJar`` would put them all on one classpath).

Public API
----------
``shipped_name(entry: str) -> str``
    The directory an entry's copy is unpacked into, under an executor's ``SparkFiles`` root.
``pack_plugin_entries(entries, into: Path) -> tuple[str, ...]``
    Packs each entry; returns the ``spark.archives`` items (``<zip>#<shipped name>``).
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Sequence
from pathlib import Path

#: The prefix of a shipped entry's directory name.
SHIPPED_PREFIX = "connect-plugins-"
#: How many hex digits of the entry's SHA-256 name its copy.
_DIGEST_CHARS = 16
#: Python's byte-code caches: nothing a JVM or another interpreter reads.
_SKIPPED_DIRS = frozenset({"__pycache__"})


def shipped_name(entry: str) -> str:
    """The directory that holds the copy of ``plugin.path`` entry ``entry`` (the string as the
    JVM's ``plugin.path`` has it) under an executor's ``SparkFiles`` root: its name is
    ``connect-plugins-`` and the first 16 hex digits of the SHA-256 of the entry's UTF-8
    bytes. It holds what the entry holds (its plugin locations), or, for an entry that is a
    jar, that jar under its own name."""
    digest = hashlib.sha256(entry.encode("utf-8")).hexdigest()[:_DIGEST_CHARS]
    return f"{SHIPPED_PREFIX}{digest}"


def pack_plugin_entries(entries: Sequence[str], into: Path) -> tuple[str, ...]:
    """Packs each ``plugin.path`` entry (a directory of plugin locations, or a jar) into a zip
    in ``into`` (a directory's content, or the jar under its own name) and returns the
    ``spark.archives`` items that ship them (``<zip path>#<shipped name>``). The jars are
    stored as they are (they are compressed already); symbolic links are followed (any link
    is shipped as the file it names)."""
    into.mkdir(parents=True, exist_ok=True)
    items = []
    for entry in entries:
        name = shipped_name(entry)
        archive = into / f"{name}.zip"
        source = Path(entry).expanduser()
        with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_STORED) as zipped:
            if source.is_file():
                zipped.write(source, source.name)
            else:
                _pack_directory(zipped, source)
        items.append(f"{archive}#{name}")
    return tuple(items)


def _pack_directory(zipped: zipfile.ZipFile, source: Path) -> None:
    for directory, subdirs, files in os.walk(source, followlinks=True):
        subdirs[:] = sorted(d for d in subdirs if d not in _SKIPPED_DIRS)
        relative = Path(directory).relative_to(source)
        for subdir in subdirs:
            zipped.write(Path(directory) / subdir, str(relative / subdir))
        for file in sorted(files):
            zipped.write(Path(directory) / file, str(relative / file))
