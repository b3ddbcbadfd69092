"""The record pipeline's plugins: converters, header converters, transformations and
predicates, found by Kafka Connect's class names, their aliases, entry points or
``plugin.path``.

Separate from the connectors' registry (:mod:`.plugins`): these plugins have kinds of
their own (a class may be of two: StringConverter is a Converter and a HeaderConverter),
Kafka Connect's alias rules for them (the simple name without the kind's interface name)
and Kafka Connect's messages for a class that cannot be used, reported per config key.
"""

from __future__ import annotations

import enum
import importlib
import importlib.metadata
import importlib.util
import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import structlog

from connect_grpc.connectors.plugin_loading import (
    ImportFailedError,
    copies_elsewhere,
    defining_file,
    import_object,
    qualified_name,
)
from connect_grpc.connectors.plugin_versions import (
    instance_version,
    select_version,
    version_requirement,
)
from connect_grpc.data.plugins import Converter, HeaderConverter, Predicate, Transformation

__all__ = [
    "CONVERTERS_ENTRY_POINT_GROUP",
    "PREDICATES_ENTRY_POINT_GROUP",
    "TRANSFORMS_ENTRY_POINT_GROUP",
    "PipelinePluginRegistry",
    "PluginClassError",
    "PluginKind",
]

_log = structlog.get_logger(__name__)


class PluginKind(enum.Enum):
    """A kind of pipeline plugin; the value is Kafka Connect's plugin type name."""

    TRANSFORMATION = "transformation"
    PREDICATE = "predicate"
    CONVERTER = "converter"
    HEADER_CONVERTER = "header_converter"

    @property
    def base(self) -> type:
        return _KIND_BASES[self]

    @property
    def interface(self) -> str:
        """Kafka Connect's interface name (``Converter``, ``HeaderConverter``, …): the
        suffix an alias drops, and the name in "does not implement" messages."""
        return self.base.__name__


_KIND_BASES: dict[PluginKind, type] = {
    PluginKind.TRANSFORMATION: Transformation,
    PluginKind.PREDICATE: Predicate,
    PluginKind.CONVERTER: Converter,
    PluginKind.HEADER_CONVERTER: HeaderConverter,
}

#: The entry-point groups third-party packages declare pipeline plugins in. A class in the
#: converters group may be a Converter, a HeaderConverter or both.
CONVERTERS_ENTRY_POINT_GROUP = "connect_grpc.converters"
TRANSFORMS_ENTRY_POINT_GROUP = "connect_grpc.transforms"
PREDICATES_ENTRY_POINT_GROUP = "connect_grpc.predicates"
PIPELINE_ENTRY_POINT_GROUPS = (
    CONVERTERS_ENTRY_POINT_GROUP,
    TRANSFORMS_ENTRY_POINT_GROUP,
    PREDICATES_ENTRY_POINT_GROUP,
)


def builtin_pipeline_plugins() -> dict[str, type]:
    """The built-in converters, transformations and predicates by Kafka Connect's class
    names (``org.apache.kafka.connect.json.JsonConverter``, ``…transforms.Cast$Value``)."""
    from connect_grpc.data.converters import BUILTIN_CONVERTERS
    from connect_grpc.data.predicates import BUILTIN_PREDICATES
    from connect_grpc.data.transforms import BUILTIN_TRANSFORMS

    return {**BUILTIN_CONVERTERS, **BUILTIN_TRANSFORMS, **BUILTIN_PREDICATES}


def _class_version(cls: type) -> str:
    """A pipeline plugin class's version (its ``version()``); "unknown" when it cannot be
    instantiated, which the use of the class reports."""
    try:
        return instance_version(cls())
    except Exception:
        return "unknown"


def plugin_kinds(cls: type) -> tuple[PluginKind, ...]:
    """The pipeline plugin kinds a class is (StringConverter is a Converter and a
    HeaderConverter, as in Kafka Connect)."""
    return tuple(kind for kind in PluginKind if issubclass(cls, kind.base))


def _java_simple_name(name: str) -> str:
    """Java's ``getSimpleName`` of a class name: ``Cast$Value`` → ``Value``."""
    return name.rsplit(".", 1)[-1].rsplit("$", 1)[-1]


def _pruned_name(simple: str, kind: PluginKind) -> str:
    """The simple name without the kind's interface name and what follows it, as Kafka
    Connect's ``PluginUtils.prunedName`` (``JsonConverter`` → ``Json``)."""
    position = simple.rfind(kind.interface)
    return simple[:position] if position > 0 else simple


class PluginClassError(Exception):
    """A pipeline plugin class that cannot be used, with Kafka Connect's message.

    ``about_value``: Kafka reports the message as ``Invalid value <v> for configuration
    <key>: <message>`` (else the message stands alone).
    """

    def __init__(self, message: str, about_value: bool) -> None:
        super().__init__(message)
        self.message = message
        self.about_value = about_value

    def for_key(self, key: str, raw: str) -> str:
        if self.about_value:
            return f"Invalid value {raw} for configuration {key}: {self.message}"
        return self.message


class PipelinePluginRegistry:
    """Finds converters, header converters, transformations and predicates by name.

    A class is found by Kafka Connect's class name (built-ins), by the Python path of a
    known class, by the alias Kafka Connect computes (the simple class name, and the simple
    name without ``Converter``/``HeaderConverter``/``Transformation``/``Predicate`` when that
    is unambiguous across every pipeline plugin; nested ``Cast$Value`` has none, since
    ``Value`` is everyone's), by an entry point's name, or, for a class whose module lives
    under a ``plugin.path`` directory, by ``pkg.mod.Class`` or ``pkg.mod:Class``. The table
    is built on first use (entry points are loaded then).
    """

    def __init__(
        self,
        builtins: Callable[[], Mapping[str, type]],
        registered: Sequence[type],
        in_plugin_path: Callable[[str], bool],
        has_plugin_path: bool,
        plugin_dirs: Sequence[Path] = (),
    ) -> None:
        self._builtins = builtins
        self._registered = tuple(registered)
        self._in_plugin_path = in_plugin_path
        self._has_plugin_path = has_plugin_path
        self._plugin_dirs = tuple(plugin_dirs)
        self._versions: dict[str, list[type]] = {}
        self._table: tuple[dict[str, type], dict[str, str]] | None = None

    def _tables(self) -> tuple[dict[str, type], dict[str, str]]:
        """(canonical name → class, alias → canonical name), built once."""
        if self._table is None:
            self._table = self._build_tables()
        return self._table

    def _build_tables(self) -> tuple[dict[str, type], dict[str, str]]:
        known: dict[str, type] = dict(self._builtins())
        names: dict[str, set[str]] = {name: set() for name in known}
        for cls in self._registered:
            known.setdefault(qualified_name(cls), cls)
            names.setdefault(qualified_name(cls), set())
        for group in PIPELINE_ENTRY_POINT_GROUPS:
            for entry_point in importlib.metadata.entry_points(group=group):
                try:
                    loaded = entry_point.load()
                except Exception as exc:  # a broken distribution must not stop the worker
                    _log.warning("plugin_load_failed", plugin=entry_point.value, error=repr(exc))
                    continue
                if isinstance(loaded, type) and plugin_kinds(loaded):
                    canonical = qualified_name(loaded)
                    known.setdefault(canonical, loaded)
                    names.setdefault(canonical, set()).add(entry_point.name)
        return known, self._alias_table(known, names)

    @staticmethod
    def _alias_table(known: Mapping[str, type], names: Mapping[str, set[str]]) -> dict[str, str]:
        claims: dict[str, set[str]] = {}
        for canonical, cls in known.items():
            simple = _java_simple_name(canonical)
            aliases = {simple, qualified_name(cls), *names.get(canonical, ())}
            aliases.update(_pruned_name(simple, kind) for kind in plugin_kinds(cls))
            for alias in aliases - {canonical}:
                claims.setdefault(alias, set()).add(canonical)
        table = {alias: next(iter(owners)) for alias, owners in claims.items() if len(owners) == 1}
        table.update((canonical, canonical) for canonical in known)
        return table

    def known(self) -> dict[str, type]:
        """Every known pipeline plugin: canonical name → class."""
        return dict(self._tables()[0])

    def aliases_of(self, canonical: str) -> tuple[str, ...]:
        aliases = self._tables()[1]
        return tuple(sorted(a for a, t in aliases.items() if t == canonical != a))

    def canonical_name(self, name: str) -> str | None:
        """The canonical name a known plugin is listed by, or None for an unknown name."""
        aliases = self._tables()[1]
        key = name.strip()
        return aliases.get(key) or aliases.get(key.replace(":", "."))

    def installed_versions(self, name: str) -> list[type]:
        """Each installed copy of the class ``name`` designates (one for a known plugin;
        a plugin.path class's copy in each directory that holds it), unchecked for kind.

        Raises:
            PluginClassError: as ``plugin_class`` for a class that cannot be loaded.
        """
        canonical = self.canonical_name(name)
        path = canonical or name.strip()
        versions = self._versions.get(path)
        if versions is None:
            versions = self._installed_versions(canonical, path)
            self._versions[path] = versions
        return list(versions)

    def plugin_class(self, kind: PluginKind, name: str, version: str | None = None) -> type:
        """The concrete class of ``kind`` that ``name`` designates, in the version
        ``version`` (a ``*.plugin.version`` value: a Maven version range; the latest
        installed version without one) asks for.

        Raises:
            PluginClassError: with Kafka Connect's message for an unknown class, a class of
                another kind, or an abstract one.
            VersionSpecError: ``version`` is not a version range.
            NoMatchingVersionError: no installed version is in the range.
        """
        wanted = version_requirement(version)
        path = self.canonical_name(name) or name.strip()
        versions = self.installed_versions(name)
        cls: type = (
            versions[0] if wanted is None and len(versions) == 1
            else select_version(path, [(_class_version(c), c) for c in versions], wanted)[1]
        )
        if not issubclass(cls, kind.base):
            raise PluginClassError(
                f"Class class {qualified_name(cls)} does not implement the {kind.interface} "
                "interface",
                about_value=False,
            )
        if inspect.isabstract(cls):
            raise PluginClassError(self._abstract_message(cls, kind), about_value=False)
        return cls

    def _installed_versions(self, canonical: str | None, path: str) -> list[type]:
        """A known class, or a plugin.path class and its copies in the other plugin.path
        directories (one version each). Their versions are read only to choose among
        several, or for a version range: reading one makes an instance."""
        if canonical:
            return [self._tables()[0][canonical]]
        cls = self._load(path)
        versions = [cls]
        for _, copy in copies_elsewhere(path, defining_file(cls), self._plugin_dirs):
            if isinstance(copy, type) and plugin_kinds(copy):
                versions.append(copy)
        return versions

    def _abstract_message(self, cls: type, kind: PluginKind) -> str:
        concrete = sorted(
            qualified_name(nested)
            for nested in vars(cls).values()
            if isinstance(nested, type) and issubclass(nested, kind.base)
            and not inspect.isabstract(nested)
        )
        hint = f" Did you mean {', '.join(concrete)}?" if concrete else ""
        return f"This class is abstract and cannot be created.{hint}"

    def _load(self, path: str) -> type:
        if not path or ("." not in path and ":" not in path):
            raise self._not_found(path)
        self._check_importable(path)
        try:
            target = import_object(path)
        except ImportFailedError as exc:
            raise self._not_found(path, str(exc)) from exc
        if not isinstance(target, type):
            raise self._not_found(path, f"{path} is not a class")
        if not self._in_plugin_path(defining_file(target)):
            raise self._not_found(path, f"{qualified_name(target)} is defined outside plugin.path")
        return target

    def _check_importable(self, path: str) -> None:
        """Refuses, before importing anything, a path whose top-level module does not exist
        or is not under a ``plugin.path`` directory."""
        top_level = path.replace(":", ".").split(".", 1)[0]
        try:
            spec = importlib.util.find_spec(top_level)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            raise self._not_found(path)
        locations = list(spec.submodule_search_locations or ()) or [spec.origin or ""]
        if not self._has_plugin_path or not all(map(self._in_plugin_path, locations)):
            raise self._not_found(
                path, f"module {top_level} is neither a known plugin nor under plugin.path"
            )

    def _not_found(self, name: str, cause: str = "") -> PluginClassError:
        """Kafka Connect's message, with our reason when there is more to say than that the
        name is unknown; the abstract-class message for Kafka's abstract SMT names
        (``org.apache.kafka.connect.transforms.Cast``), whose variants are the plugins."""
        variants = [
            f"{name}${variant}" for variant in ("Key", "Value")
            if f"{name}${variant}" in self._tables()[0]
        ]
        if variants:
            return PluginClassError(
                f"This class is abstract and cannot be created. Did you mean "
                f"{', '.join(variants)}?", about_value=False
            )
        message = f"Class {name} could not be found."
        return PluginClassError(f"{message} ({cause})" if cause else message, about_value=True)
