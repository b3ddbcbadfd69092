"""Finding the Python plugin classes a ``plugin.path`` directory holds, without running them.

Kafka Connect lists every plugin it finds on ``plugin.path``, each version of each class.
A Python class is only known for sure by importing its module, which runs the module's
code; so the scan reads the directories' Python sources instead (``ast``, nothing
imported): a top-level class is a candidate when one of its bases is named after a plugin
base class (``SourceConnector``, ``Transformation``, …) or after another candidate of the
scanned sources. Only the candidates are imported then, by the registries, which check the
real class (a concrete subclass of the right base) as for any class named in a config.

A name-based scan can miss a class (a base imported under another name, a class made at
run time) and can propose one that is not a plugin (the registries then leave it out); a
missed class still loads when a config names it. Separate from the registries because both
use it, and it touches no import machinery.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

_log = structlog.get_logger(__name__)

#: The plugin API's base classes a connector derives from, by name.
CONNECTOR_BASES = frozenset({"Connector", "SourceConnector", "SinkConnector"})
#: The pipeline plugins' base classes, by name.
PIPELINE_BASES = frozenset({"Converter", "HeaderConverter", "Transformation", "Predicate"})
#: A source file larger than this is not read (it is not a plugin's module).
MAX_SOURCE_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ScannedClass:
    """A candidate plugin class: ``name`` as users write it (``pkg.mod.Class``), and
    whether it derives (by name) from a connector base or a pipeline plugin base."""

    name: str
    connector: bool


@dataclass(slots=True)
class _Source:
    name: str
    bases: tuple[str, ...]


def scan_plugin_path(directories: Sequence[Path]) -> list[ScannedClass]:
    """The candidate plugin classes of ``directories`` (each a ``plugin.path`` entry whose
    top level holds modules and packages), sorted by name, each once however many
    directories hold it. A file that cannot be read or parsed is logged and skipped."""
    classes: dict[str, _Source] = {}
    for directory in directories:
        for module, path in _modules(directory):
            for source in _classes_of(module, path):
                classes.setdefault(source.name, source)
    connectors = _deriving(classes, CONNECTOR_BASES)
    pipeline = _deriving(classes, PIPELINE_BASES)
    return sorted(
        (ScannedClass(name, name in connectors) for name in connectors | pipeline),
        key=lambda scanned: scanned.name,
    )


def _deriving(classes: dict[str, _Source], bases: frozenset[str]) -> set[str]:
    """The classes deriving from ``bases`` by name, through other scanned classes too."""
    names = set(bases)
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for full_name, source in classes.items():
            if full_name not in found and names.intersection(source.bases):
                found.add(full_name)
                names.add(full_name.rsplit(".", 1)[-1])
                changed = True
    return found


def _modules(directory: Path) -> Iterator[tuple[str, Path]]:
    """(module name, file) of each importable ``.py`` file under ``directory``."""
    root = Path(os.path.realpath(directory.expanduser()))
    for current, dirs, files in os.walk(root):
        here = Path(current)
        # a package's name is an identifier: metadata (``*.dist-info``), hidden and cache
        # directories are not entered
        dirs[:] = sorted(d for d in dirs if d.isidentifier() and d != "__pycache__")
        parts = here.relative_to(root).parts
        for file in sorted(files):
            stem, suffix = os.path.splitext(file)
            if suffix != ".py" or not stem.isidentifier():
                continue
            module = [*parts] if stem == "__init__" else [*parts, stem]
            if module:
                yield ".".join(module), here / file


def _classes_of(module: str, path: Path) -> list[_Source]:
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:
            return []
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError) as exc:
        _log.info("plugin_scan_skipped", file=str(path), error=repr(exc))
        return []
    return [
        _Source(f"{module}.{node.name}", tuple(_base_name(base) for base in node.bases))
        for node in tree.body
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_")
    ]


def _base_name(base: ast.expr) -> str:
    """The last name of a base: ``api.SourceConnector`` and ``Transformation[R]`` give
    ``SourceConnector`` and ``Transformation``."""
    if isinstance(base, ast.Subscript):
        base = base.value
    if isinstance(base, ast.Attribute):
        return base.attr
    if isinstance(base, ast.Name):
        return base.id
    return ""
