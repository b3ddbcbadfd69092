"""Kafka Connect's Java plugins of ``plugin.path`` beside the Python ones: which connector
class names designate a Java plugin, their listing and their validation in the API's terms.

The catalogue itself (Kafka's ``Plugins`` scanning the path, its herder validating) lives in a
JVM that the herder does not know: it is handed a :class:`JavaCatalogue` (the worker's is
``runtime.java_plugins.JvmPluginCatalogue``, in the Spark driver's JVM), which answers in
Kafka's REST JSON. Here that JSON becomes the domain's ``PluginDesc`` and ``ConfigInfos``,
exactly as a Python plugin's are shown.

Which plugin a ``connector.class`` designates: a name a Python plugin answers to stays
Python's, and asking it costs no JVM call; Kafka's class names of the Python FileStream
connectors are the exception, since with Kafka's ``connect-file`` jar on ``plugin.path`` the
user put those very classes there: Kafka's class name and Kafka's aliases (the simple name,
and without ``Connector``) of a Java connector designate it wherever no Python plugin has them.

A worker runs Java connectors when it hands :class:`JavaPlugins` the factory of their Python
stand-ins (:class:`JavaConnectorFactory`; the worker's is
``runtime.java_connectors.JvmConnectors``, whose instances live in the Spark driver's JVM), and
the Python registry then routes their names to it (``Plugins.route_connectors``), so that
everything that makes a connector instance (the worker, the offsets' KIP-875 hook, the
validator's type checks) gets the stand-in. Distributed and standalone workers both do; one
given no factory refuses to create a Java connector (or to update a connector to one) with
:func:`java_connector_refused`, before anything is written. PreviewPipeline of a Java
connector is refused everywhere (:func:`java_preview_refused`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from connect_grpc.config_providers.java import JavaConfigLookup
from connect_grpc.config_providers.redaction import HIDDEN, SECRETS
from connect_grpc.config_providers.transformer import ConfigTransformer, has_references
from connect_grpc.connectors.api import Connector, SourceConnector
from connect_grpc.connectors.pipeline_plugins import PluginKind
from connect_grpc.connectors.plugins import KAFKA_CLASS_ALIASES, Plugins
from connect_grpc.herder.framework_keys import EXACTLY_ONCE_SUPPORT, TRANSACTION_BOUNDARY
from connect_grpc.herder.validation import (
    ConfigValidator,
    _without_resolved_values,
    refuse_invalid,
)
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import (
    ConfigInfo,
    ConfigInfos,
    ConfigKeyInfo,
    ConfigValueInfo,
    ConnectorType,
    PluginDesc,
)
from connect_grpc.kernel.errors import (
    ConnectError,
    FailedPreconditionError,
    InvalidArgumentError,
    PreconditionViolation,
    UnavailableError,
)

CONNECTOR_CLASS = "connector.class"
#: Kafka's type name of a config provider; the API lists them after every other type.
CONFIG_PROVIDER = "configprovider"
#: Where Kafka's scan found a plugin of the runtime's own classpath (``JsonConverter``,
#: Kafka's transformations): the JVM host's, not the user's ``plugin.path``; not listed.
CLASSPATH = "classpath"
#: Kafka's REST API answers its ``BadRequestException`` with 400: a bad request here too.
_BAD_REQUEST = "org.apache.kafka.connect.runtime.rest.errors.BadRequestException"

_CONNECTOR_TYPES = {"source": ConnectorType.SOURCE, "sink": ConnectorType.SINK}
#: Kafka Connect's order of the connectors in ``GET /connector-plugins``: sinks, then sources.
_CONNECTOR_ORDER = {ConnectorType.SINK: 0, ConnectorType.SOURCE: 1, ConnectorType.UNKNOWN: 2}
#: Kafka Connect's order of the plugin types in a listing after the connectors.
_TYPE_ORDER = {kind.value: order for order, kind in enumerate(PluginKind)} | {
    CONFIG_PROVIDER: len(PluginKind)
}


class JavaCatalogue(JavaConfigLookup, Protocol):
    """The Java plugins of ``plugin.path``, in Kafka's REST JSON (parsed), and the worker's
    Java config providers.

    ``listing`` is ``{"plugin_path", "plugin_discovery", "plugins": [{"class", "type",
    "version", "location", "config"}]}``; ``validate`` Kafka's ``ConfigInfos`` or
    ``{"error": {"class", "message", "cause"}}``. Each call waits at most ``timeout_s``
    (UnavailableError past it: the work goes on, a retry gets it); a scan that failed is a
    FailedPreconditionError."""

    def listing(self, timeout_s: float) -> Mapping[str, Any]: ...

    def listing_if_ready(self) -> Mapping[str, Any] | None:
        """The listing if the scan is done; None (and the scan started) otherwise."""
        ...

    def validate(
        self, config: Mapping[str, str], timeout_s: float, errors_only: bool = False
    ) -> Mapping[str, Any]:
        """Kafka's ``ConfigInfos`` JSON of ``config``; ``errors_only``: each key's value only
        its name and errors, and no definitions (what a create or an update needs)."""
        ...


class JavaConnectorFactory(Protocol):
    """Makes the Python stand-ins of Java connectors (``connectors.api.Connector``
    subclasses that call the Java instance), by the Java class and its kind."""

    def connector_class(self, java_class: str, kind: ConnectorType) -> type[Connector]: ...

    def new_connector(
        self, java_class: str, kind: ConnectorType, version: str | None
    ) -> Connector: ...


def _given(name: str, java_class: str) -> str:
    return name if name == java_class else f"{name} (the Java class {java_class})"


def java_connector_refused(name: str, java_class: str) -> FailedPreconditionError:
    """The answer of a worker that runs no Java connectors (one given no factory) to
    creating a connector of a Java class (or updating one to it)."""
    message = (
        f"connector.class {_given(name, java_class)} is a Java connector found on "
        f"plugin.path, and this worker runs no Java connectors (it was given no host for "
        f"their instances); it is listed by ListPlugins and validated by ValidateConfig "
        f"here, and nothing was created"
    )
    return FailedPreconditionError(
        message, [PreconditionViolation("JAVA_CONNECTOR", f"config.{CONNECTOR_CLASS}", message)]
    )


def java_preview_refused(name: str, java_class: str) -> FailedPreconditionError:
    """The answer to PreviewPipeline of a Java connector's config."""
    message = (
        f"connector.class {_given(name, java_class)} is a Java connector: its records go "
        f"through Kafka's Java converters, transformations and predicates in its task's JVM, "
        f"and PreviewPipeline runs the Python record pipeline only, so it cannot preview them"
    )
    return FailedPreconditionError(
        message, [PreconditionViolation("JAVA_CONNECTOR", f"config.{CONNECTOR_CLASS}", message)]
    )


class JavaPlugins:
    """The Java side of a worker's plugins: routing, listing and validation.

    ``python``: the worker's Python plugins, which keep every name they answer to.
    ``connectors``: the factory of Java connectors' stand-ins, on a worker that runs them
    (a distributed one): ``python`` then routes their names to it."""

    def __init__(
        self,
        catalogue: JavaCatalogue,
        python: Plugins,
        connectors: JavaConnectorFactory | None = None,
    ) -> None:
        self._catalogue = catalogue
        self._python = python
        self._connectors = connectors
        if connectors is not None:
            python.route_connectors(_JavaConnectorRouter(self, connectors))

    @property
    def runs_connectors(self) -> bool:
        """Whether the worker runs Java connectors (else creating one is refused)."""
        return self._connectors is not None

    @property
    def config_lookup(self) -> JavaConfigLookup:
        """Where the worker's Java config providers are built and asked."""
        return self._catalogue

    def await_scan(self, timeout_s: float) -> None:
        """Returns once the scan of ``plugin.path`` is done; UnavailableError if it is not
        within ``timeout_s`` (a caller outside any call's deadline: a worker's start)."""
        self._catalogue.listing(timeout_s)

    # which plugin a name designates

    def java_connector(self, name: str, *, wait: bool) -> str | None:
        """The Java connector class ``name`` designates, or None (a Python plugin's name,
        or nobody's: the Python registry's answer stands).

        With ``wait``, waits for the scan as long as the caller's deadline allows; without,
        a scan still under way is an UnavailableError (retry) for a name that may be Java's.
        """
        key = name.strip()
        if not key or (key not in KAFKA_CLASS_ALIASES and self._python_knows(key)):
            return None
        listing = (
            self._catalogue.listing(deadline.remaining())
            if wait
            else self._catalogue.listing_if_ready()
        )
        if listing is None:
            raise UnavailableError(
                f"connector.class {key} may be a Java plugin of plugin.path, whose scan is "
                f"still under way: retry in a few seconds", retry_after_seconds=2.0,
            )
        return _connector_names(listing).get(key)

    def _python_knows(self, name: str) -> bool:
        try:
            self._python.python_connector_class(name)
        except ConnectError:
            return False
        return True

    def connector_kind(self, java_class: str) -> ConnectorType:
        """SOURCE or SINK: the kind of a Java connector ``java_connector`` named (a listing
        already made); UNKNOWN for any other class."""
        listing = self._catalogue.listing_if_ready() or {}
        for plugin in _plugin_path_entries(listing):
            if plugin["class"] == java_class and plugin["type"] in _CONNECTOR_TYPES:
                return _CONNECTOR_TYPES[plugin["type"]]
        return ConnectorType.UNKNOWN

    def refuse_to_run(self, config: Mapping[str, str]) -> None:
        """Raises :func:`java_connector_refused` for a config of a Java connector on a
        worker that does not run them. Never waits for the JVM: the caller may hold a
        herder lock."""
        if self.runs_connectors:
            return
        self._refuse_java(config, java_connector_refused)

    def refuse_preview(self, config: Mapping[str, str]) -> None:
        """Raises :func:`java_preview_refused` for a config of a Java connector (waits for
        the scan within the caller's deadline)."""
        self._refuse_java(config, java_preview_refused, wait=True)

    def _refuse_java(
        self,
        config: Mapping[str, str],
        refusal: Callable[[str, str], FailedPreconditionError],
        wait: bool = False,
    ) -> None:
        name = (config.get(CONNECTOR_CLASS) or "").strip()
        if has_references(name):
            return  # the Python validator's error: connector.class must be literal
        java_class = self.java_connector(name, wait=wait)
        if java_class is not None:
            raise refusal(name, java_class)

    # listing

    def describe(
        self, include_config_definitions: bool, all_plugin_types: bool
    ) -> tuple[list[PluginDesc], list[PluginDesc]]:
        """The Java connectors, and (with ``all_plugin_types``) the other Java plugins, of
        ``plugin.path``; waits for the scan as long as the caller's deadline allows."""
        listing = self._catalogue.listing(deadline.remaining())
        aliases = _connector_aliases(listing)
        connectors: list[PluginDesc] = []
        others: list[PluginDesc] = []
        seen: set[tuple[str, str, str]] = set()
        for plugin in _plugin_path_entries(listing):
            identity = (plugin["class"], plugin["type"], str(plugin.get("version")))
            if identity in seen:  # Kafka lists a class once per plugin location holding it
                continue
            seen.add(identity)
            desc = _plugin_desc(plugin, aliases, include_config_definitions)
            if desc.type is not ConnectorType.UNKNOWN:
                connectors.append(desc)
            elif all_plugin_types:
                others.append(desc)
        return connectors, others

    def describes(self, plugin: PluginDesc) -> bool:
        """Whether ``plugin`` is one of the Java plugins (a listing already made)."""
        listing = self._catalogue.listing_if_ready()
        if listing is None:
            return False
        return any(
            entry["class"] == plugin.class_name and entry["type"] == plugin.plugin_type
            for entry in _plugin_path_entries(listing)
        )

    # validation

    def validate(
        self,
        config: Mapping[str, str],
        java_class: str,
        transformer: ConfigTransformer,
        plugin: str | None = None,
        more_errors: Callable[[Mapping[str, str], dict[str, list[str]]], None] | None = None,
        errors_only: bool = False,
    ) -> ConfigInfos:
        """Kafka Connect's validation of a Java connector's config, as ValidateConfig shows a
        Python connector's: config provider references resolved for the plugin and shown
        unresolved, PASSWORD values hidden, no resolved value in a message.

        ``more_errors(resolved config, errors)``: adds the worker's own checks to the errors
        of the keys Kafka's validation answered (the catalogue's validation is a standalone
        herder's, which has no exactly-once checks), before their messages are cleaned.
        ``errors_only``: only the keys' names and errors come back (no definitions, no
        values), which is all a create or an update needs."""
        resolution = transformer.resolve_all(config)
        sent = dict(resolution.config)
        if plugin:
            sent[CONNECTOR_CLASS] = java_class
        body = self._catalogue.validate(sent, deadline.remaining(), errors_only=errors_only)
        if "error" in body:
            raise _validation_error(java_class, body["error"])
        infos = config_infos_from_kafka(body, config)
        errors = {info.value.name: list(info.value.errors) for info in infos.configs}
        if more_errors is not None:
            more_errors(resolution.config, errors)
        for key, problems in resolution.problems.items():
            errors[key] = problems  # its other errors would be about the unresolved text
        cleaned = _without_resolved_values(errors, config, resolution.config)
        configs = tuple(
            ConfigInfo(
                info.definition,
                ConfigValueInfo(
                    info.value.name,
                    info.value.value,
                    tuple(cleaned.get(info.value.name, ())),
                    info.value.recommended_values,
                    info.value.visible,
                ),
            )
            for info in infos.configs
        )
        # Named by its class, as a Python connector's are (Kafka's names it as it was given).
        return ConfigInfos(
            java_class, sum(len(c.value.errors) for c in configs), infos.groups, configs
        )


class JavaAwareValidator(ConfigValidator):
    """The validator of a worker with Java plugins on ``plugin.path``: ValidateConfig of a
    Java connector is Kafka Connect's (never the Python validation's too), and on a worker
    that does not run Java connectors one is refused where a config is to run (create,
    update, preview), as :func:`java_connector_refused` says."""

    def __init__(self, java_plugins: JavaPlugins, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.java_plugins = java_plugins

    def validate(self, config: Mapping[str, str], plugin: str | None = None) -> ConfigInfos:
        return self._validated(config, plugin, errors_only=False)

    def _validated(
        self, config: Mapping[str, str], plugin: str | None, errors_only: bool
    ) -> ConfigInfos:
        name = (plugin or config.get(CONNECTOR_CLASS) or "").strip()
        # A reference in connector.class is the Python validator's error to report.
        java_class = (
            None if has_references(name) else self.java_plugins.java_connector(name, wait=True)
        )
        if java_class is None:
            return super().validate(config, plugin)
        return self.java_plugins.validate(
            config,
            java_class,
            self._transformer,
            plugin,
            lambda resolved, errors: self._java_exactly_once_errors(
                java_class, config, plugin, resolved, errors
            ),
            errors_only=errors_only,
        )

    def _java_exactly_once_errors(
        self,
        java_class: str,
        config: Mapping[str, str],
        plugin: str | None,
        resolved: Mapping[str, str],
        errors: dict[str, list[str]],
    ) -> None:
        """Kafka's distributed herder's checks of a source's ``exactly.once.support`` and
        ``transaction.boundary``, with the Java connector's own declarations
        (``exactlyOnceSupport``, ``canDefineTransactionBoundaries``, asked of a fresh instance
        in the JVM), as a Python source's are checked. Only where Java connectors run (a
        standalone worker has no exactly-once sources, and Kafka's standalone herder makes
        no such check either)."""
        if (
            not self.java_plugins.runs_connectors
            or self.java_plugins.connector_kind(java_class) is not ConnectorType.SOURCE
            or EXACTLY_ONCE_SUPPORT not in errors
            or TRANSACTION_BOUNDARY not in errors
        ):
            return
        connector = self.plugin_for(config, plugin)
        if isinstance(connector, SourceConnector):
            self._exactly_once_errors(connector, resolved, errors)

    def ensure_valid(self, config: Mapping[str, str]) -> ConfigInfos:
        """As the Python validator's; a Java connector's errors are asked of Kafka's
        validation without its definitions (the answer has only the keys' names and
        errors)."""
        # Its callers hold the connector's lock: the refusal never waits for the JVM.
        self.java_plugins.refuse_to_run(config)
        return refuse_invalid(self._validated(config, None, errors_only=True))


class _JavaConnectorRouter:
    """``connectors.plugins.ConnectorRouter`` of a worker that runs Java connectors: a name
    :meth:`JavaPlugins.java_connector` gives a Java class is made by the factory."""

    def __init__(self, java: JavaPlugins, factory: JavaConnectorFactory) -> None:
        self._java = java
        self._factory = factory

    def connector_class(self, name: str) -> type[Connector] | None:
        try:
            java_class = self._java.java_connector(name, wait=False)
        except UnavailableError:
            return None  # the scan is under way: the Python registry's answer stands
        if java_class is None:
            return None
        return self._factory.connector_class(java_class, self._java.connector_kind(java_class))

    def new_connector(self, name: str, version: str | None) -> Connector | None:
        java_class = self._java.java_connector(name, wait=True)
        if java_class is None:
            return None
        return self._factory.new_connector(
            java_class, self._java.connector_kind(java_class), version
        )


def config_validator(
    java_plugins: JavaPlugins | None, *args: Any, **kwargs: Any
) -> ConfigValidator:
    """A herder's validator (``ConfigValidator``'s arguments): Java-aware with Java plugins."""
    if java_plugins is None:
        return ConfigValidator(*args, **kwargs)
    return JavaAwareValidator(java_plugins, *args, **kwargs)


def merge_listing(
    python: Sequence[PluginDesc], java: Sequence[PluginDesc], connectors: bool
) -> list[PluginDesc]:
    """Python and Java plugins of one part of a listing in Kafka Connect's order: by type
    (sinks then sources; or transformations, predicates, converters, header converters, then
    config providers), then by class name; a Python plugin before a Java one of its name.

    A Java connector's class name is no longer a Python connector's alias (Kafka's names of
    the FileStream built-ins, once Kafka's jar is there): it designates the Java class."""
    if connectors:
        java_names = {plugin.class_name for plugin in java}
        python = [
            dataclasses.replace(p, aliases=tuple(a for a in p.aliases if a not in java_names))
            if java_names.intersection(p.aliases) else p
            for p in python
        ]
        return sorted(
            [*python, *java], key=lambda p: (_CONNECTOR_ORDER[p.type], p.class_name)
        )
    return sorted(
        [*python, *java],
        key=lambda p: (_TYPE_ORDER.get(p.plugin_type, len(_TYPE_ORDER)), p.class_name),
    )


def _plugin_path_entries(listing: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [p for p in listing.get("plugins") or () if p.get("location") != CLASSPATH]


def _simple_aliases(class_name: str) -> set[str]:
    """Kafka Connect's aliases of a connector: its simple name, and that without
    ``Connector``."""
    simple = class_name.rsplit(".", 1)[-1]
    aliases = {simple}
    if simple.endswith("Connector") and simple != "Connector":
        aliases.add(simple.removesuffix("Connector"))
    return aliases


def _connector_aliases(listing: Mapping[str, Any]) -> dict[str, set[str]]:
    """Each Java connector's aliases that no other Java connector claims (Kafka drops an
    ambiguous alias too)."""
    classes = {p["class"] for p in _plugin_path_entries(listing) if p["type"] in _CONNECTOR_TYPES}
    claims: dict[str, set[str]] = {}
    for class_name in classes:
        for alias in _simple_aliases(class_name):
            claims.setdefault(alias, set()).add(class_name)
    aliases: dict[str, set[str]] = {class_name: set() for class_name in classes}
    for alias, owners in claims.items():
        if len(owners) == 1:
            aliases[next(iter(owners))].add(alias)
    return aliases


def _connector_names(listing: Mapping[str, Any]) -> dict[str, str]:
    """Every name of a Java connector (its class name and its aliases) to its class."""
    names: dict[str, str] = {}
    for class_name, aliases in _connector_aliases(listing).items():
        names.update(dict.fromkeys(aliases, class_name))
        names[class_name] = class_name
    return names


def _text(value: Any, default: str = "") -> str:
    return default if value is None else str(value)


def config_key_from_kafka(key: Mapping[str, Any]) -> ConfigKeyInfo:
    """Kafka's ``ConfigKeyInfo`` JSON as the domain's."""
    default = key.get("default_value")
    return ConfigKeyInfo(
        name=_text(key.get("name")),
        type=_text(key.get("type")),
        required=bool(key.get("required")),
        default_value=None if default is None else str(default),
        importance=_text(key.get("importance")),
        documentation=_text(key.get("documentation")),
        group=_text(key.get("group")),
        order_in_group=int(key.get("order_in_group") or 0),
        width=_text(key.get("width"), "NONE"),
        display_name=_text(key.get("display_name")),
        dependents=tuple(str(d) for d in key.get("dependents") or ()),
    )


def _plugin_desc(
    plugin: Mapping[str, Any], aliases: Mapping[str, set[str]], include_config_definitions: bool
) -> PluginDesc:
    kind = str(plugin["type"])
    definitions = (
        tuple(config_key_from_kafka(key) for key in plugin.get("config") or ())
        if include_config_definitions
        else ()
    )
    return PluginDesc(
        class_name=str(plugin["class"]),
        type=_CONNECTOR_TYPES.get(kind, ConnectorType.UNKNOWN),
        version=_text(plugin.get("version")),
        aliases=tuple(sorted(aliases.get(plugin["class"], ()))) if kind in _CONNECTOR_TYPES
        else (),
        config_definitions=definitions,
        plugin_type=kind,
    )


def config_infos_from_kafka(body: Mapping[str, Any], raw: Mapping[str, str]) -> ConfigInfos:
    """Kafka's ``ConfigInfos`` JSON as the domain's, values shown as the user gave them: a
    PASSWORD as ``[hidden]``, a config provider reference unresolved."""
    configs: list[ConfigInfo] = []
    for entry in body.get("configs") or ():
        definition_json = entry.get("definition")
        definition = None if definition_json is None else config_key_from_kafka(definition_json)
        # Kafka answers a key its validation gave no value for with a null value.
        value = entry.get("value") or {}
        name = _text(value.get("name")) or (definition.name if definition is not None else "")
        shown = value.get("value")
        if definition is not None and definition.type == "PASSWORD":
            shown = HIDDEN if shown is not None or name in raw else None
        elif name in raw:
            shown = raw[name]
        configs.append(
            ConfigInfo(
                definition,
                ConfigValueInfo(
                    name=name,
                    value=None if shown is None else str(shown),
                    errors=tuple(str(e) for e in value.get("errors") or ()),
                    recommended_values=tuple(
                        str(v) for v in value.get("recommended_values") or ()
                    ),
                    visible=bool(value.get("visible", True)),
                ),
            )
        )
    return ConfigInfos(
        name=_text(body.get("name")),
        error_count=sum(len(c.value.errors) for c in configs),
        groups=tuple(str(g) for g in body.get("groups") or ()),
        configs=tuple(configs),
    )


def _validation_error(java_class: str, error: Mapping[str, Any]) -> ConnectError:
    """What Kafka's validation failed with outright, as its REST API would answer it: a bad
    request (400) as INVALID_ARGUMENT, anything else as an error of the plugin."""
    message = SECRETS.redact(_text(error.get("message"), "no message"))
    cause = error.get("cause")
    detail = f"{message} (caused by {SECRETS.redact(str(cause))})" if cause else message
    if error.get("class") == _BAD_REQUEST:
        return InvalidArgumentError(detail)
    return ConnectError(
        f"Kafka Connect's validation of the Java connector {java_class} failed: "
        f"{error.get('class')}: {detail}"
    )
