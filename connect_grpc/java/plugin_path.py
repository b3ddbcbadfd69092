"""Which ``plugin.path`` entries hold Kafka Connect's Java plugins, and what a JVM that scans
them is given: the worker properties it reads and the jars of the built ``jvm/`` project.

Python and Java plugins share the worker's one ``plugin.path`` (Kafka Connect's key: a
comma-separated list of directories). Python imports from each entry (it is put on
``sys.path``); Kafka's ``Plugins`` reads each entry as a directory of plugin locations: a jar
or zip file (an uber jar), or a directory of jars or of classes. An entry holds Java plugins
when one of its locations holds a jar or a class file. Finding that out costs a few directory
listings, so a worker without Java plugins on its path starts no JVM side for them at all.

Public API
----------
``java_plugin_entries(plugin_path: Sequence[Path]) -> tuple[Path, ...]``
    The entries of ``plugin_path`` that hold Java plugins.
``host_worker_properties(props, entries) -> dict[str, str]``
    The worker properties the JVM's plugin host is opened with.
``driver_jars(repository: Path | None = None) -> tuple[Path, ...]``
    The jars a Spark driver is given (``spark.jars``) to host the plugin catalogue.
``unreadable_archives(entries: Sequence[Path]) -> list[tuple[Path, str]]``
    The jars and zips of the plugin locations that cannot be read, each with why.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from connect_grpc.java.jvm_build import built_jvm

#: Kafka Connect's worker properties the plugin host reads: where and how plugins are found
#: (KIP-898's discovery modes) and the client-override policy its validation applies. Every
#: other worker property is the Python worker's business (its converters may be Python
#: classes, which Kafka's worker config would refuse to load).
HOST_PROPERTIES = (
    "plugin.discovery",
    "connector.client.config.override.policy",
    "connector.client.config.override.allowlist",
)

#: How deep below a plugin location the search for a jar or a class file goes: plugin
#: directories keep their jars at the top, class directories a few packages down.
_MAX_DEPTH = 4
_JAVA_SUFFIXES = (".jar", ".class")


def java_plugin_entries(plugin_path: Sequence[Path]) -> tuple[Path, ...]:
    """The entries of ``plugin_path`` that hold at least one Java plugin location."""
    return tuple(entry for entry in plugin_path if _holds_java(entry.expanduser()))


def _holds_java(entry: Path) -> bool:
    if entry.is_file():
        return entry.suffix == ".jar"
    try:
        children = list(os.scandir(entry))
    except OSError:
        return False
    for child in children:
        if child.is_file() and child.name.endswith(".jar"):
            return True
        if child.is_dir() and _tree_holds_java(Path(child.path), _MAX_DEPTH):
            return True
    return False


def _tree_holds_java(directory: Path, depth: int) -> bool:
    """Whether ``directory`` holds a jar or a class file, at most ``depth`` levels down.

    A Python package (a directory with ``__init__.py``) or a distribution's metadata is no
    place for Java plugins: skipped, so that a large Python plugin tree costs little."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return False
    if any(e.name == "__init__.py" for e in entries) or directory.name.endswith(".dist-info"):
        return False
    if any(e.is_file() and e.name.endswith(_JAVA_SUFFIXES) for e in entries):
        return True
    return depth > 1 and any(
        e.is_dir() and _tree_holds_java(Path(e.path), depth - 1) for e in entries
    )


#: The files Kafka's plugin loader reads classes from.
_ARCHIVE_SUFFIXES = (".jar", ".zip")


def unreadable_archives(entries: Sequence[Path]) -> list[tuple[Path, str]]:
    """The jars and zips of the plugin locations under ``entries`` (an archive entry
    itself, or the archives a location holds at any depth) that cannot be opened as zip
    archives (truncated, corrupt, not an archive at all), each with why.

    Kafka's plugin loader puts such a jar on a plugin's class path and then finds nothing in
    it, without a word: a plugin it holds is neither listed nor loadable, and only this check
    says why. Reading an archive's directory costs a fraction of a millisecond."""
    unreadable: list[tuple[Path, str]] = []
    for archive in _archives(entries):
        try:
            with zipfile.ZipFile(archive):
                pass
        except (OSError, zipfile.BadZipFile) as exc:
            unreadable.append((archive, str(exc) or type(exc).__name__))
    return unreadable


def _archives(entries: Sequence[Path]) -> Iterator[Path]:
    seen: set[str] = set()
    for entry in entries:
        entry = entry.expanduser()
        if entry.is_file():
            if entry.name.endswith(_ARCHIVE_SUFFIXES):
                yield entry
            continue
        # Kafka's loader follows symbolic links; each real directory is read once
        for directory, dirs, files in os.walk(entry, followlinks=True):
            real = os.path.realpath(directory)
            if real in seen:
                dirs.clear()
                continue
            seen.add(real)
            for name in sorted(files):
                if name.endswith(_ARCHIVE_SUFFIXES):
                    yield Path(directory) / name


def host_worker_properties(props: Mapping[str, str], entries: Sequence[Path]) -> dict[str, str]:
    """The worker properties the JVM's plugin host is opened with: ``plugin.path`` made of
    the entries holding Java plugins (the others are Python's), and :data:`HOST_PROPERTIES`
    where the worker sets them."""
    host = {"plugin.path": ",".join(str(entry.expanduser()) for entry in entries)}
    host.update({key: props[key] for key in HOST_PROPERTIES if key in props})
    return host


def _is_logging_binding(jar: Path) -> bool:
    # slf4j's API and binding would shadow Spark's own (log4j 2): a driver given them loses
    # every log line of its own.
    return jar.name.startswith("slf4j-")


def driver_jars(repository: Path | None = None) -> tuple[Path, ...]:
    """The project's jar, then the runtime jars of ``jvm/target/lib`` but slf4j's: what a
    Spark driver is given through ``spark.jars`` to host the plugin catalogue.

    Raises:
        JvmNotBuiltError: ``jvm/`` has not been built.
    """
    jar, libs = built_jvm(repository)
    return (jar, *(lib for lib in sorted(libs.glob("*.jar")) if not _is_logging_binding(lib)))
