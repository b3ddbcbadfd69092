"""Discovery and loading of connector plugins.

A connector class is found by any of these names, like Kafka Connect's plugin aliases:

* its fully qualified Python path, ``pkg.mod.Class`` or ``pkg.mod:Class``;
* for the known plugins (the built-ins, the entry points of the group
  ``connect_grpc.connectors`` and the classes an embedding program registers): the simple
  class name (``FileStreamSourceConnector``), the simple name without its ``Connector``
  suffix (``FileStreamSource``) and the entry point's name;
* Kafka Connect's class names of the FileStream connectors
  (``org.apache.kafka.connect.file.FileStreamSourceConnector``, ``…FileStreamSinkConnector``).

A worker that hosts connectors outside Python (Kafka Connect's Java connectors of its
``plugin.path``) routes their names to them (:meth:`Plugins.route_connectors`): the router is
asked first, and a name it does not claim is the Python registry's.

Only two kinds of class are loaded: a known plugin, and a class whose module lives under a
``plugin.path`` directory. Any other name is refused before anything is imported, so a
connector config cannot make the worker import an arbitrary module.

An alias claimed by two different classes is ambiguous and dropped (a warning is logged);
the full names still work. ``plugin.path`` directories are appended to ``sys.path``, so the
modules and the installed distributions (``pip install --target DIR``, whose entry points
are then discovered) in them can be loaded.

Here: the connectors' registry (the built-ins, the entry points and the registered classes
with their aliases), resolving a name to a class, with the closest known name suggested for
an unknown one, and describing the known plugins for ListPlugins. The pipeline's plugins
(converters, transformations, predicates) have a registry of their own in
:mod:`.pipeline_plugins`, which :attr:`Plugins.pipeline` holds; both import classes with
:mod:`.plugin_loading`.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import structlog

from connect_grpc import __version__
from connect_grpc.connectors.api import Connector, SinkConnector, SourceConnector
from connect_grpc.connectors.pipeline_plugins import (
    PipelinePluginRegistry,
    PluginKind,
    builtin_pipeline_plugins,
    plugin_kinds,
)
from connect_grpc.connectors.plugin_loading import (
    ImportFailedError,
    copies_elsewhere,
    defining_file,
    import_object,
    qualified_name,
)
from connect_grpc.connectors.plugin_scan import ScannedClass, scan_plugin_path
from connect_grpc.connectors.plugin_versions import (
    PluginVersion,
    instance_version,
    select_version,
    version_requirement,
)
from connect_grpc.kernel.domain import ConnectorType, PluginDesc
from connect_grpc.kernel.errors import NotFoundError

__all__ = [
    "BUILTIN_CONNECTORS",
    "ENTRY_POINT_GROUP",
    "KAFKA_CLASS_ALIASES",
    "TESTING_CONNECTORS",
    "ConnectorRouter",
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


def _simple_aliases(full_name: str) -> set[str]:
    simple = full_name.rsplit(".", 1)[-1]
    aliases = {simple}
    if simple.endswith("Connector") and simple != "Connector":
        aliases.add(simple.removesuffix("Connector"))
    return aliases


class ConnectorRouter(Protocol):
    """Connectors hosted outside Python, asked before the Python registry: each answers
    None for a name that is not one of theirs."""

    def connector_class(self, name: str) -> type[Connector] | None:
        """The class standing for the connector ``name`` designates; never waits (a name
        it cannot tell yet is None: the Python registry answers it)."""
        ...

    def new_connector(self, name: str, version: str | None) -> Connector | None:
        """A new, uninitialized instance of the connector ``name`` designates, in the
        version ``version`` asks for (KIP-891); may wait, within the caller's deadline, to
        tell whose name it is."""
        ...


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
        self._router: ConnectorRouter | None = None
        self._add_to_sys_path(self._plugin_path)
        self._known: dict[str, set[str]] = {}
        self._aliases: dict[str, str] = {}
        self._versions: dict[str, list[type[Connector]]] = {}
        #: The plugin.path classes a listing looks at, scanned once (``plugin_scan``).
        self._scanned: list[ScannedClass] | None = None
        self._classes: dict[str, type[Connector]] = {
            qualified_name(cls): cls for cls in registered if issubclass(cls, Connector)
        }
        self._register_known()
        self.pipeline = PipelinePluginRegistry(
            pipeline_builtins,
            [cls for cls in registered if plugin_kinds(cls)],
            self._in_plugin_path,
            has_plugin_path=bool(self._plugin_dirs),
            plugin_dirs=self._plugin_dirs,
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

    def route_connectors(self, router: ConnectorRouter) -> None:
        """Asks ``router`` first, from now on, which connector a name designates (once, as
        the worker is built: lookups read it without a lock)."""
        self._router = router

    def __getstate__(self) -> dict[str, object]:
        """Pickled without the router: a hosted task's pipeline factory carries the
        registry into its Spark task, which needs the pipeline's plugins only, while the
        router holds the driver's handles of its JVM (locks, threads)."""
        state = dict(self.__dict__)
        state["_router"] = None
        return state

    def connector_class(self, name: str, version: str | None = None) -> type[Connector]:
        """The connector class ``name`` designates: the routed connectors' (see
        ``route_connectors``), else the Python registry's (``python_connector_class``)."""
        if self._router is not None:
            routed = self._router.connector_class(name)
            if routed is not None:
                return routed
        return self.python_connector_class(name, version)

    def python_connector_class(self, name: str, version: str | None = None) -> type[Connector]:
        """The Python connector class ``name`` designates (alias, ``pkg.mod.Class`` or
        ``pkg.mod:Class``).

        ``version``: a ``connector.plugin.version`` value, the Maven version range the
        class's ``version()`` must be in (KIP-891); the latest installed version without
        one. A plugin.path class found in several directories has one version each.

        Raises:
            NotFoundError: nothing by that name, not a concrete Connector subclass, or its
                import failed (the message includes the cause).
            VersionSpecError: ``version`` is not a version range.
            NoMatchingVersionError: no installed version is in the range.
        """
        wanted = version_requirement(version)
        path = self._resolve(name)
        versions = self._versions.get(path)
        if versions is None:
            versions = self._installed_versions(name, path)
            self._versions[path] = versions
        if wanted is None and len(versions) == 1:
            return versions[0]
        return select_version(path, self._with_versions(name, versions), wanted)[1]

    def connector_versions(self, name: str) -> list[str]:
        """The installed versions of the Python connector class ``name`` designates, oldest
        first.

        Raises:
            NotFoundError: as ``connector_class``.
        """
        self.python_connector_class(name)
        versions = self._with_versions(name, self._versions[self._resolve(name)])
        return sorted((version for version, _ in versions), key=PluginVersion)

    def _with_versions(
        self, name: str, classes: Sequence[type[Connector]]
    ) -> list[tuple[str, type[Connector]]]:
        """(version, class) of each; a copy that cannot be instantiated is logged and is
        no version (the class imported from ``sys.path`` raises, as it always did)."""
        versions = [(self._class_version(name, classes[0]), classes[0])]
        for copy in classes[1:]:
            try:
                versions.append((self._class_version(name, copy), copy))
            except NotFoundError as exc:
                _log.warning("plugin_load_failed", plugin=name, error=exc.message)
        return versions

    def _installed_versions(self, name: str, path: str) -> list[type[Connector]]:
        """The class imported from ``sys.path`` and, for a plugin.path class, its copies
        in the other plugin.path directories. Their versions are read only to choose among
        several, or for a version range: reading one makes an instance."""
        cls = self._classes.get(path)
        if cls is None:
            cls = self._load(name, path)
            self._classes[path] = cls
        versions = [cls]
        if path in self._known or not self._plugin_dirs:
            return versions
        for _, copy in copies_elsewhere(path, defining_file(cls), self._plugin_dirs):
            if (isinstance(copy, type) and issubclass(copy, Connector)
                    and not inspect.isabstract(copy)):
                versions.append(copy)
        return versions

    @staticmethod
    def _class_version(name: str, cls: type[Connector]) -> str:
        try:
            return instance_version(cls())
        except Exception as exc:
            raise NotFoundError(
                f"Failed to instantiate connector class {qualified_name(cls)}: {exc!r}"
            ) from exc

    def _load(self, name: str, path: str) -> type[Connector]:
        if not path or ("." not in path and ":" not in path):
            raise self._not_found(name, "not a known alias nor a fully qualified class name")
        known = path in self._known
        if not known:
            self._check_module_in_plugin_path(name, path)
        try:
            target = import_object(path)
        except ImportFailedError as exc:
            raise self._not_found(name, str(exc)) from exc
        if not (isinstance(target, type) and issubclass(target, Connector)):
            raise self._not_found(name, f"{path} is not a subclass of {qualified_name(Connector)}")
        if inspect.isabstract(target):
            raise self._not_found(name, f"{path} is abstract")
        if not known and not self._in_plugin_path(defining_file(target)):
            raise self._not_allowed(
                name, f"{qualified_name(target)} is defined outside plugin.path"
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

    def new_connector(self, name: str, version: str | None = None) -> Connector:
        """A new, uninitialized instance of the connector class ``name`` designates, in the
        version ``version`` asks for (see ``connector_class``): a routed connector's (see
        ``route_connectors``), else a Python plugin's.

        Raises:
            NotFoundError: as ``connector_class``, or when the constructor raised.
            VersionSpecError, NoMatchingVersionError: as ``connector_class``.
            UnavailableError: the router could not tell within the caller's deadline.
        """
        if self._router is not None:
            routed = self._router.new_connector(name, version)
            if routed is not None:
                return routed
        return self._new_python_connector(name, version)

    def _new_python_connector(self, name: str, version: str | None = None) -> Connector:
        cls = self.python_connector_class(name, version)
        try:
            return cls()
        except Exception as exc:
            raise NotFoundError(
                f"Failed to instantiate connector class {qualified_name(cls)}: {exc!r}"
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
        """The fully qualified ``module.Class`` name of the Python class ``name`` designates.

        Raises:
            NotFoundError: as ``connector_class``.
        """
        return qualified_name(self.python_connector_class(name))

    def describe(self, include_config_definitions: bool = False) -> list[PluginDesc]:
        """The known plugins (built-ins and entry points) and the connector classes found
        on ``plugin.path`` (one entry for each version, as Kafka Connect lists them),
        sorted by class name, then version.

        A plugin that fails to load is logged and left out.
        """
        descriptions: dict[tuple[str, str], PluginDesc] = {}
        for full_name in self._known:
            try:
                connector = self._new_python_connector(full_name)
            except NotFoundError as exc:
                _log.warning("plugin_load_failed", plugin=full_name, error=exc.message)
                continue
            desc = self._describe_one(full_name, connector, include_config_definitions)
            descriptions[desc.class_name, desc.version] = desc
        for scanned in self.scanned_plugin_path():
            if not scanned.connector or self._resolve(scanned.name) in self._known:
                continue
            for connector in self._each_version(scanned.name):
                desc = self._describe_one(scanned.name, connector, include_config_definitions)
                descriptions.setdefault((desc.class_name, desc.version), desc)
        return [descriptions[key] for key in sorted(
            descriptions, key=lambda key: (key[0], PluginVersion(key[1]))
        )]

    def scanned_plugin_path(self) -> list[ScannedClass]:
        """The candidate plugin classes of ``plugin.path``, read from its sources once (no
        module imported)."""
        if self._scanned is None:
            self._scanned = scan_plugin_path(self._plugin_dirs) if self._plugin_dirs else []
        return self._scanned

    def _each_version(self, name: str) -> list[Connector]:
        """An instance of each installed version of the plugin.path connector ``name``; a
        candidate of the scan that is no concrete Connector, or fails to load, is logged
        and gives none."""
        try:
            self.python_connector_class(name)
            versions = self._with_versions(name, self._versions[self._resolve(name)])
            return [cls() for _, cls in versions]
        except Exception as exc:  # a plugin's bug must not hide the others
            error = exc.message if isinstance(exc, NotFoundError) else repr(exc)
            _log.info("plugin_scan_candidate_left_out", plugin=name, error=error)
            return []

    def _describe_one(
        self, full_name: str, connector: Connector, include_config_definitions: bool
    ) -> PluginDesc:
        cls = type(connector)
        class_name = qualified_name(cls)
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
            found: list[tuple[str, object]] = []
            for name in sorted(n for n, cls in known.items() if issubclass(cls, kind.base)):
                try:
                    found.append((name, known[name]()))
                except Exception as exc:  # a plugin's bug must not hide the others
                    _log.warning("plugin_load_failed", plugin=name, error=repr(exc))
            found.extend(self._scanned_pipeline(kind, known))
            found.sort(key=lambda item: (item[0], PluginVersion(_plugin_version(item[1]))))
            for name, plugin in found:
                config_def = getattr(plugin, "config_def", None)
                definitions = (
                    tuple(config_def().describe())
                    if include_config_definitions and callable(config_def) else ()
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

    def _scanned_pipeline(
        self, kind: PluginKind, known: Mapping[str, type]
    ) -> list[tuple[str, object]]:
        """(name, instance) of each version of each plugin.path class of ``kind`` that is
        not a known plugin; a candidate of the scan that is not one, or fails to load, is
        logged and left out."""
        found: list[tuple[str, object]] = []
        for scanned in self.scanned_plugin_path():
            if scanned.connector or scanned.name in known:
                continue
            try:
                versions = self.pipeline.installed_versions(scanned.name)
                found.extend((scanned.name, cls()) for cls in versions
                             if issubclass(cls, kind.base) and not inspect.isabstract(cls))
            except Exception as exc:  # a plugin's bug must not hide the others
                _log.info("plugin_scan_candidate_left_out", plugin=scanned.name,
                          error=getattr(exc, "message", None) or repr(exc))
        return found


def _plugin_version(plugin: object) -> str:
    """A pipeline plugin's ``version()`` if it has one, else the package's version (Kafka
    Connect's built-ins report the Kafka version they ship with)."""
    version = getattr(plugin, "version", None)
    return str(version()) if callable(version) else __version__
