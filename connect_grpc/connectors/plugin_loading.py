"""Importing a plugin class from its dotted name, and naming a class the way the plugin
registries list it.

Separate from the registries (:mod:`.plugins` for connectors, :mod:`.pipeline_plugins` for
converters, transformations and predicates), which both load classes this way and decide
first whether a name may be imported at all; the task hosts import their task classes
with it too.
"""

from __future__ import annotations

import importlib
import inspect


def qualified_name(cls: type) -> str:
    """``module.QualifiedName`` of ``cls``: the name a registry lists it by."""
    return f"{cls.__module__}.{cls.__qualname__}"


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

