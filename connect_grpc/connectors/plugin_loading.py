"""Importing a plugin class from its dotted name, and naming a class the way the plugin
registries list it.

Separate from the registries (:mod:`.plugins` for connectors, :mod:`.pipeline_plugins` for
converters, transformations and predicates), which both load classes this way and decide
first whether a name may be imported at all; the task hosts import their task classes
with it too.

Several versions of one plugin (KIP-891) live in different ``plugin.path`` directories under
the same module names. The first directory's modules are imported as they are; another
directory's are imported under a package of their own, ``connect_grpc_plugin_dirs.d<hex of
the directory>``, whose ``__path__`` is that directory (:func:`isolated_path`). Its modules
then import each other with relative imports; an absolute import of the plugin's own top
package reaches the first directory's copy. The hex name is the directory itself, so an
executor's Python worker imports the same class by the same name (:class:`_DirFinder`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import inspect
import os
import sys
import types
from collections.abc import Sequence
from pathlib import Path

import structlog

_log = structlog.get_logger(__name__)

#: The package the modules of a second copy of a plugin are imported under.
ISOLATED_ROOT = "connect_grpc_plugin_dirs"


def qualified_name(cls: type) -> str:
    """``module.QualifiedName`` of ``cls``: the name a registry lists it by (without the
    package a second copy of a plugin is imported under)."""
    return f"{listed_module(cls.__module__)}.{cls.__qualname__}"


def listed_module(module: str) -> str:
    """A module's name as users write it: without ``connect_grpc_plugin_dirs.d<hex>.``."""
    if module.startswith(ISOLATED_ROOT + "."):
        parts = module.split(".", 2)
        return parts[2] if len(parts) == 3 else module
    return module


def isolated_path(directory: Path, path: str) -> str:
    """The name ``path`` (``pkg.mod.Class`` or ``pkg.mod:Class``) is imported by from
    ``directory`` rather than from ``sys.path``."""
    _install_finder()
    return f"{ISOLATED_ROOT}.d{str(directory).encode().hex()}.{path}"


class _DirLoader(importlib.abc.Loader):
    """Creates the empty packages above an isolated plugin directory's modules."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _DirFinder(importlib.abc.MetaPathFinder):
    """Finds ``connect_grpc_plugin_dirs`` and its ``d<hex>`` packages: the latter's
    ``__path__`` is the directory the hex spells, so the path finder imports the modules
    below from it."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == ISOLATED_ROOT:
            spec = importlib.machinery.ModuleSpec(fullname, _DirLoader(), is_package=True)
            spec.submodule_search_locations = []
            return spec
        prefix, _, key = fullname.partition(".")
        if prefix != ISOLATED_ROOT or "." in key or not key.startswith("d"):
            return None
        try:
            directory = bytes.fromhex(key[1:]).decode()
        except ValueError:
            return None
        spec = importlib.machinery.ModuleSpec(fullname, _DirLoader(), is_package=True)
        spec.submodule_search_locations = [directory]
        return spec


def _install_finder() -> None:
    if not any(isinstance(finder, _DirFinder) for finder in sys.meta_path):
        sys.meta_path.append(_DirFinder())


# installed on import, so that unpickling a class of a second copy (a hosted task's
# pipeline factory holds the plugin registry) finds its module in a fresh Python worker
_install_finder()


def defining_file(cls: type) -> str:
    """The file of the module defining ``cls``; empty for a class without one."""
    try:
        return inspect.getfile(cls)
    except TypeError:
        return ""


class ImportFailedError(Exception):
    """A dotted path could not be imported; the message says why."""


def _import_module_prefix(parts: list[str]) -> tuple[object, list[str]]:
    """Imports the longest importable module prefix of ``parts``; returns it and the rest."""
    for end in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:end])
        try:
            return importlib.import_module(module_name), parts[end:]
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if module_name != missing and not module_name.startswith(missing + "."):
                raise ImportFailedError(f"importing {module_name} failed: {exc!r}") from exc
        except Exception as exc:
            raise ImportFailedError(f"importing {module_name} failed: {exc!r}") from exc
    raise ImportFailedError(f"no module named {parts[0]!r}")


def import_object(path: str) -> object:
    """Imports ``pkg.mod.Attr`` or ``pkg.mod:Attr`` (nested attributes allowed); raises an
    exception that says why it could not."""
    if path.startswith(ISOLATED_ROOT + "."):
        _install_finder()
    if ":" in path:
        module_name, _, attr_path = path.partition(":")
        try:
            target: object = importlib.import_module(module_name)
        except Exception as exc:
            raise ImportFailedError(f"importing {module_name} failed: {exc!r}") from exc
        attrs = attr_path.split(".")
    else:
        target, attrs = _import_module_prefix(path.split("."))
    for attr in attrs:
        try:
            target = getattr(target, attr)
        except AttributeError:
            raise ImportFailedError(f"{path}: no attribute {attr!r}") from None
    return target



def copies_elsewhere(
    path: str, loaded_from: str, directories: Sequence[Path]
) -> list[tuple[Path, object]]:
    """What ``path`` names in each of ``directories`` (real paths) other than the one
    ``loaded_from`` (the file of the copy imported from ``sys.path``) lies in: one entry a
    directory whose top level holds the module, imported under its own package. A copy
    that fails to import is logged and left out."""
    real = Path(os.path.realpath(loaded_from)) if loaded_from else None
    top_level = path.replace(":", ".").split(".", 1)[0]
    found: list[tuple[Path, object]] = []
    for directory in directories:
        if real is not None and (real == directory or directory in real.parents):
            continue
        try:
            spec = importlib.machinery.PathFinder.find_spec(top_level, [str(directory)])
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        try:
            found.append((directory, import_object(isolated_path(directory, path))))
        except ImportFailedError as exc:
            _log.warning("plugin_copy_load_failed", plugin=path, directory=str(directory),
                         error=str(exc))
    return found
