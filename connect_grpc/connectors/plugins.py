"""Discovery and loading of connector plugins.

A connector class is found by any of these names, like Kafka Connect's plugin aliases:

* its fully qualified Python path, ``pkg.mod.Class`` or ``pkg.mod:Class``;
* for the known plugins (the built-ins, the entry points of the group
  ``connect_grpc.connectors`` and the classes an embedding program registers): the simple
  class name (``FileStreamSourceConnector``), the simple name without its ``Connector``
  suffix (``FileStreamSource``) and the entry point's name;
* Kafka Connect's class names of the FileStream connectors
  (``org.apache.kafka.connect.file.FileStreamSourceConnector``, ``…FileStreamSinkConnector``).

Only two kinds of class are loaded: a known plugin, and a class whose module lives under a
``plugin.path`` directory. Any other name is refused before anything is imported, so a
connector config cannot make the worker import an arbitrary module.

An alias claimed by two different classes is ambiguous and dropped (a warning is logged);
the full names still work. ``plugin.path`` directories are appended to ``sys.path``, so the
modules and the installed distributions (``pip install --target DIR``, whose entry points
are then discovered) in them can be loaded.
"""

from __future__ import annotations

import difflib
import enum
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import structlog

from connect_grpc import __version__
from connect_grpc.connectors.api import Connector, SinkConnector, SourceConnector
from connect_grpc.data.plugins import Converter, HeaderConverter, Predicate, Transformation
from connect_grpc.domain import ConnectorType, PluginDesc
from connect_grpc.errors import NotFoundError

__all__ = [
    "BUILTIN_CONNECTORS",
    "CONVERTERS_ENTRY_POINT_GROUP",
    "ENTRY_POINT_GROUP",
    "KAFKA_CLASS_ALIASES",
    "PREDICATES_ENTRY_POINT_GROUP",
    "TESTING_CONNECTORS",
    "TRANSFORMS_ENTRY_POINT_GROUP",
    "PipelinePluginRegistry",
    "PluginClassError",
    "PluginKind",
    "Plugins",
]

_log = structlog.get_logger(__name__)

#: The entry-point group third-party packages declare their connectors in.
ENTRY_POINT_GROUP = "connect_grpc.connectors"

_FILE_SOURCE = "connect_grpc.connectors.file.FileStreamSourceConnector"
_FILE_SINK = "connect_grpc.connectors.file.FileStreamSinkConnector"

#: Plugins that ship with the package.
BUILTIN_CONNECTORS: tuple[str, ...] = (
    _FILE_SOURCE,
    _FILE_SINK,
    "connect_grpc.connectors.sequence.SequenceSourceConnector",
)

#: The instrumented plugins of ``connect_grpc.testing``: known (listed, aliased, named in
#: "unknown class" errors) only when the worker property ``test.plugins.enabled`` is true.
TESTING_CONNECTORS: tuple[str, ...] = (
    "connect_grpc.testing.plugins.InstrumentedSourceConnector",
    "connect_grpc.testing.plugins.InstrumentedSinkConnector",
)

#: Kafka Connect's class names, accepted for the equivalent built-ins.
KAFKA_CLASS_ALIASES: dict[str, str] = {
    "org.apache.kafka.connect.file.FileStreamSourceConnector": _FILE_SOURCE,
    "org.apache.kafka.connect.file.FileStreamSinkConnector": _FILE_SINK,
}


def closest_name(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``name``, case aside, if one is close enough to suggest."""
    by_folded = {known.casefold(): known for known in sorted(candidates, reverse=True)}
    matches = difflib.get_close_matches(name.strip().casefold(), by_folded, n=1)
    return by_folded[matches[0]] if matches else None


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _simple_aliases(full_name: str) -> set[str]:
    simple = full_name.rsplit(".", 1)[-1]
    aliases = {simple}
    if simple.endswith("Connector") and simple != "Connector":
        aliases.add(simple.removesuffix("Connector"))
    return aliases


def _defining_file(cls: type) -> str:
    """The file of the module defining ``cls``; empty for a class without one."""
    try:
        return inspect.getfile(cls)
    except TypeError:
        return ""


class _ImportFailedError(Exception):
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
                raise _ImportFailedError(f"importing {module_name} failed: {exc!r}") from exc
        except Exception as exc:
            raise _ImportFailedError(f"importing {module_name} failed: {exc!r}") from exc
    raise _ImportFailedError(f"no module named {parts[0]!r}")


def import_object(path: str) -> object:
    """Imports ``pkg.mod.Attr`` or ``pkg.mod:Attr`` (nested attributes allowed); raises an
    exception that says why it could not."""
    if ":" in path:
        module_name, _, attr_path = path.partition(":")
        try:
            target: object = importlib.import_module(module_name)
        except Exception as exc:
            raise _ImportFailedError(f"importing {module_name} failed: {exc!r}") from exc
        attrs = attr_path.split(".")
    else:
        target, attrs = _import_module_prefix(path.split("."))
    for attr in attrs:
        try:
            target = getattr(target, attr)
        except AttributeError:
            raise _ImportFailedError(f"{path}: no attribute {attr!r}") from None
    return target


# ---------------------------------------------------------------------------------------
# The record pipeline's plugins: converters, header converters, transformations, predicates


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
    ) -> None:
        self._builtins = builtins
        self._registered = tuple(registered)
        self._in_plugin_path = in_plugin_path
        self._has_plugin_path = has_plugin_path
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
            known.setdefault(_class_name(cls), cls)
            names.setdefault(_class_name(cls), set())
        for group in PIPELINE_ENTRY_POINT_GROUPS:
            for entry_point in importlib.metadata.entry_points(group=group):
                try:
                    loaded = entry_point.load()
                except Exception as exc:  # a broken distribution must not stop the worker
                    _log.warning("plugin_load_failed", plugin=entry_point.value, error=repr(exc))
                    continue
                if isinstance(loaded, type) and plugin_kinds(loaded):
                    canonical = _class_name(loaded)
                    known.setdefault(canonical, loaded)
                    names.setdefault(canonical, set()).add(entry_point.name)
        return known, self._alias_table(known, names)

    @staticmethod
    def _alias_table(known: Mapping[str, type], names: Mapping[str, set[str]]) -> dict[str, str]:
        claims: dict[str, set[str]] = {}
        for canonical, cls in known.items():
            simple = _java_simple_name(canonical)
            aliases = {simple, _class_name(cls), *names.get(canonical, ())}
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

    def plugin_class(self, kind: PluginKind, name: str) -> type:
        """The concrete class of ``kind`` that ``name`` designates.

        Raises:
            PluginClassError: with Kafka Connect's message for an unknown class, a class of
                another kind, or an abstract one.
        """
        canonical = self.canonical_name(name)
        cls = self._tables()[0][canonical] if canonical else self._load(name.strip())
        if not issubclass(cls, kind.base):
            raise PluginClassError(
                f"Class class {_class_name(cls)} does not implement the {kind.interface} "
                "interface",
                about_value=False,
            )
        if inspect.isabstract(cls):
            raise PluginClassError(self._abstract_message(cls, kind), about_value=False)
        return cls

    def _abstract_message(self, cls: type, kind: PluginKind) -> str:
        concrete = sorted(
            _class_name(nested)
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
        except _ImportFailedError as exc:
            raise self._not_found(path, str(exc)) from exc
        if not isinstance(target, type):
            raise self._not_found(path, f"{path} is not a class")
        if not self._in_plugin_path(_defining_file(target)):
            raise self._not_found(path, f"{_class_name(target)} is defined outside plugin.path")
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


class Plugins:
    """Finds connector classes by name and describes the known ones.

    Thread-safe: lookups only read the alias table built at construction; the class cache
    tolerates concurrent fills.

    Args:
        plugin_path: directories appended to ``sys.path`` (the worker's ``plugin.path``).
        include_testing: also know the test plugins (the worker's ``test.plugins.enabled``).
        registered: connector, converter, header converter, transformation and predicate
            classes the embedding program registers (known like entry points, wherever
            their module lives).
        pipeline_builtins: the built-in converters, transformations and predicates by
            Kafka Connect's class names (default: ``builtin_pipeline_plugins()``).
    """

    def __init__(
        self,
        plugin_path: Sequence[Path] = (),
        include_testing: bool = False,
        registered: Sequence[type] = (),
        pipeline_builtins: Callable[[], Mapping[str, type]] = builtin_pipeline_plugins,
    ) -> None:
        self._plugin_path = tuple(plugin_path)
        self._plugin_dirs = tuple(
            Path(os.path.realpath(directory.expanduser())) for directory in self._plugin_path
        )
        self._builtins = BUILTIN_CONNECTORS + (TESTING_CONNECTORS if include_testing else ())
        self._add_to_sys_path(self._plugin_path)
        self._known: dict[str, set[str]] = {}
        self._aliases: dict[str, str] = {}
        self._classes: dict[str, type[Connector]] = {
            _class_name(cls): cls for cls in registered if issubclass(cls, Connector)
        }
        self._register_known()
        self.pipeline = PipelinePluginRegistry(
            pipeline_builtins,
            [cls for cls in registered if plugin_kinds(cls)],
            self._in_plugin_path,
            has_plugin_path=bool(self._plugin_dirs),
        )

    @staticmethod
    def _add_to_sys_path(directories: Iterable[Path]) -> None:
        added = False
        for directory in directories:
            entry = str(directory.expanduser().resolve())
            if entry not in sys.path:
                sys.path.append(entry)
                added = True
                _log.info("plugin_path_added", directory=entry)
        if added:
            importlib.invalidate_caches()

    def _register_known(self) -> None:
        for full_name in (*self._builtins, *self._classes):
            self._known.setdefault(full_name, set()).update(_simple_aliases(full_name))
        for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            full_name = f"{entry_point.module}.{entry_point.attr}"
            aliases = self._known.setdefault(full_name, set())
            aliases.update(_simple_aliases(full_name))
            aliases.add(entry_point.name)
        for kafka_name, full_name in KAFKA_CLASS_ALIASES.items():
            self._known.setdefault(full_name, set()).add(kafka_name)
        self._aliases = self._alias_table()

    def _alias_table(self) -> dict[str, str]:
        claims: dict[str, set[str]] = {}
        for full_name, aliases in self._known.items():
            for alias in aliases - {full_name}:
                claims.setdefault(alias, set()).add(full_name)
        table: dict[str, str] = {}
        for alias, owners in claims.items():
            if len(owners) > 1:
                _log.warning("plugin_alias_ambiguous", alias=alias, classes=sorted(owners))
                continue
            table[alias] = next(iter(owners))
        for full_name in self._known:
            table[full_name] = full_name
        return table

    def _aliases_of(self, full_name: str) -> tuple[str, ...]:
        return tuple(sorted(a for a, t in self._aliases.items() if t == full_name != a))

    def _resolve(self, name: str) -> str:
        key = name.strip()
        target = self._aliases.get(key) or self._aliases.get(key.replace(":", "."))
        return target or key

    def connector_class(self, name: str) -> type[Connector]:
        """The connector class ``name`` designates (alias, ``pkg.mod.Class`` or ``pkg.mod:Class``).

        Raises:
            NotFoundError: nothing by that name, not a concrete Connector subclass, or its
                import failed (the message includes the cause).
        """
        path = self._resolve(name)
        cached = self._classes.get(path)
        if cached is not None:
            return cached
        cls = self._load(name, path)
        self._classes[path] = cls
        return cls

    def _load(self, name: str, path: str) -> type[Connector]:
        if not path or ("." not in path and ":" not in path):
            raise self._not_found(name, "not a known alias nor a fully qualified class name")
        known = path in self._known
        if not known:
            self._check_module_in_plugin_path(name, path)
        try:
            target = import_object(path)
        except _ImportFailedError as exc:
            raise self._not_found(name, str(exc)) from exc
        if not (isinstance(target, type) and issubclass(target, Connector)):
            raise self._not_found(name, f"{path} is not a subclass of {_class_name(Connector)}")
        if inspect.isabstract(target):
            raise self._not_found(name, f"{path} is abstract")
        if not known and not self._in_plugin_path(_defining_file(target)):
            raise self._not_allowed(
                name, f"{_class_name(target)} is defined outside plugin.path"
            )
        return target

    def _check_module_in_plugin_path(self, name: str, path: str) -> None:
        """Refuses, before importing anything, a class that is not a known plugin and whose
        top-level package or module is not found under a ``plugin.path`` directory."""
        if not self._plugin_dirs:
            raise self._not_allowed(name, "it is not a registered plugin")
        top_level = path.replace(":", ".").split(".", 1)[0]
        try:
            spec = importlib.util.find_spec(top_level)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            raise self._not_found(name, f"no module named {top_level!r}")
        locations = list(spec.submodule_search_locations or ()) or [spec.origin or ""]
        if not all(self._in_plugin_path(location) for location in locations):
            raise self._not_allowed(name, f"module {top_level} is not under plugin.path")

    def _in_plugin_path(self, location: str) -> bool:
        if not location:
            return False
        real = Path(os.path.realpath(location))
        return any(real == d or d in real.parents for d in self._plugin_dirs)

    def _not_allowed(self, name: str, cause: str) -> NotFoundError:
        directories = ", ".join(str(d) for d in self._plugin_path) or "none: it is not set"
        return NotFoundError(
            f"Connector class {name.strip()!r} is not allowed ({cause}). A connector class "
            f"must be a registered plugin (a built-in or an entry point of the group "
            f"{ENTRY_POINT_GROUP}, by its class name or an alias) or a class whose module "
            f"lives under a plugin.path directory (plugin.path: {directories})"
            f"{self._available(name)}"
        )

    def _not_found(self, name: str, cause: str) -> NotFoundError:
        return NotFoundError(
            f"Failed to find any class that implements Connector and which name matches "
            f"{name.strip()!r} ({cause}){self._available(name)}"
        )

    def _available(self, name: str) -> str:
        """The end of an unknown-class message: the known name or alias closest to ``name``
        (if any is close), then each known class with its aliases."""
        listed = ", ".join(
            f"{full_name} ({', '.join(aliases)})" if (aliases := self._aliases_of(full_name))
            else full_name
            for full_name in sorted(self._known)
        )
        closest = self._closest(name)
        if closest is None:
            return f"; available connectors are: {listed}"
        return f"; did you mean {closest}? Available connectors are: {listed}"

    def _closest(self, name: str) -> str | None:
        return closest_name(name, self._aliases)

    def new_connector(self, name: str) -> Connector:
        """A new, uninitialized instance of the connector class ``name`` designates.

        Raises:
            NotFoundError: as ``connector_class``, or when the constructor raised.
        """
        cls = self.connector_class(name)
        try:
            return cls()
        except Exception as exc:
            raise NotFoundError(
                f"Failed to instantiate connector class {_class_name(cls)}: {exc!r}"
            ) from exc

    @staticmethod
    def connector_type(cls: type[Connector]) -> ConnectorType:
        """SOURCE or SINK by base class; UNKNOWN for anything else."""
        if issubclass(cls, SourceConnector):
            return ConnectorType.SOURCE
        if issubclass(cls, SinkConnector):
            return ConnectorType.SINK
        return ConnectorType.UNKNOWN

    def canonical_name(self, name: str) -> str:
        """The fully qualified ``module.Class`` name of the class ``name`` designates.

        Raises:
            NotFoundError: as ``connector_class``.
        """
        return _class_name(self.connector_class(name))

    def describe(self, include_config_definitions: bool = False) -> list[PluginDesc]:
        """The known plugins (built-ins and entry points), sorted by class name.

        A plugin that fails to load is logged and left out.
        """
        descriptions: dict[str, PluginDesc] = {}
        for full_name in self._known:
            try:
                connector = self.new_connector(full_name)
            except NotFoundError as exc:
                _log.warning("plugin_load_failed", plugin=full_name, error=exc.message)
                continue
            desc = self._describe_one(full_name, connector, include_config_definitions)
            descriptions[desc.class_name] = desc
        return [descriptions[name] for name in sorted(descriptions)]

    def _describe_one(
        self, full_name: str, connector: Connector, include_config_definitions: bool
    ) -> PluginDesc:
        cls = type(connector)
        class_name = _class_name(cls)
        aliases = set(self._aliases_of(full_name))
        if full_name != class_name:
            aliases.add(full_name)
        definitions = (
            tuple(connector.config_def().describe()) if include_config_definitions else ()
        )
        connector_type = self.connector_type(cls)
        return PluginDesc(
            class_name=class_name,
            type=connector_type,
            version=connector.version(),
            aliases=tuple(sorted(aliases)),
            config_definitions=definitions,
            plugin_type="" if connector_type is ConnectorType.UNKNOWN else connector_type.value,
        )

    def describe_pipeline(self, include_config_definitions: bool = False) -> list[PluginDesc]:
        """The transformations, predicates, converters and header converters, in Kafka
        Connect's order (by type in that order, then by class name). A class of two types
        (JsonConverter is a converter and a header converter) is listed under each; one
        that cannot be instantiated is logged and left out."""
        described: list[PluginDesc] = []
        known = self.pipeline.known()
        for kind in PluginKind:
            for name in sorted(n for n, cls in known.items() if issubclass(cls, kind.base)):
                try:
                    plugin = known[name]()
                except Exception as exc:  # a plugin's bug must not hide the others
                    _log.warning("plugin_load_failed", plugin=name, error=repr(exc))
                    continue
                definitions = (
                    tuple(plugin.config_def().describe()) if include_config_definitions else ()
                )
                described.append(
                    PluginDesc(
                        class_name=name,
                        type=ConnectorType.UNKNOWN,
                        version=_plugin_version(plugin),
                        aliases=self.pipeline.aliases_of(name),
                        config_definitions=definitions,
                        plugin_type=kind.value,
                    )
                )
        return described


def _plugin_version(plugin: object) -> str:
    """A pipeline plugin's ``version()`` if it has one, else the package's version (Kafka
    Connect's built-ins report the Kafka version they ship with)."""
    version = getattr(plugin, "version", None)
    return str(version()) if callable(version) else __version__
