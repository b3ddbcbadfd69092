"""Kafka Connect's Java plugins of ``plugin.path`` beside the Python ones: which connector
class names designate a Java plugin, their listing, their validation and their pipeline's
preview in the API's terms.

The catalogue itself (Kafka's ``Plugins`` scanning the path, its herder validating) lives in a
JVM that the herder does not know: it is handed a :class:`JavaCatalogue` (the worker's is
``runtime.java_plugins.JvmPluginCatalogue``, in the Spark driver's JVM), which answers in
Kafka's REST JSON. That JSON becomes the domain's ``PluginDesc`` and ``ConfigInfos``
(``herder.java_listing``), exactly as a Python plugin's are shown, and a preview's the
Python preview's ``PipelinePreview`` (``herder.java_preview``).

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
connector runs Kafka's Java pipeline in the JVM (:meth:`JavaPlugins.preview`) where Java
connectors run; elsewhere it is refused as a create is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from connect_grpc.config_providers.java import JavaConfigLookup
from connect_grpc.config_providers.transformer import ConfigTransformer, has_references
from connect_grpc.connectors.api import Connector, SinkRecord, SourceConnector, SourceRecord
from connect_grpc.connectors.plugins import KAFKA_CLASS_ALIASES, Plugins
from connect_grpc.herder.framework_keys import EXACTLY_ONCE_SUPPORT, TRANSACTION_BOUNDARY
from connect_grpc.herder.java_listing import (
    CONNECTOR_TYPES,
    config_infos_from_kafka,
    connector_aliases,
    connector_names,
    plugin_desc,
    plugin_path_entries,
    validation_error,
)
from connect_grpc.herder.java_preview import java_preview_request, preview_from_java
from connect_grpc.herder.validation import (
    ConfigValidator,
    _without_resolved_values,
    refuse_invalid,
)
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import (
    ConfigInfo,
    ConfigInfos,
    ConfigValueInfo,
    ConnectorType,
    PluginDesc,
)
from connect_grpc.kernel.errors import (
    ConnectError,
    FailedPreconditionError,
    PreconditionViolation,
    UnavailableError,
)
from connect_grpc.pipeline.preview_model import PipelinePreview, SampleRecord

CONNECTOR_CLASS = "connector.class"


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

    def preview(self, request: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        """PreviewPipeline of a Java connector in the JVM (``herder.java_preview`` says the
        JSON both ways): its records through Kafka's converters, transformations and
        predicates, built from the connector config (the worker's converters where it names
        none)."""
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


class JavaPlugins:
    """The Java side of a worker's plugins: routing, listing, validation and preview.

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
        return connector_names(listing).get(key)

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
        for plugin in plugin_path_entries(listing):
            if plugin["class"] == java_class and plugin["type"] in CONNECTOR_TYPES:
                return CONNECTOR_TYPES[plugin["type"]]
        return ConnectorType.UNKNOWN

    def refuse_to_run(self, config: Mapping[str, str]) -> None:
        """Raises :func:`java_connector_refused` for a config of a Java connector on a
        worker that does not run them. Never waits for the JVM: the caller may hold a
        herder lock."""
        if self.runs_connectors:
            return
        self._refuse_java(config, java_connector_refused)

    def java_class_of(self, config: Mapping[str, str], *, wait: bool) -> str | None:
        """The Java connector class ``config``'s ``connector.class`` designates, or None (a
        reference there is the Python validator's error: connector.class must be literal)."""
        name = (config.get(CONNECTOR_CLASS) or "").strip()
        if has_references(name):
            return None
        return self.java_connector(name, wait=wait)

    def _refuse_java(
        self,
        config: Mapping[str, str],
        refusal: Callable[[str, str], FailedPreconditionError],
        wait: bool = False,
    ) -> None:
        java_class = self.java_class_of(config, wait=wait)
        if java_class is not None:
            raise refusal((config.get(CONNECTOR_CLASS) or "").strip(), java_class)

    # preview

    def preview(
        self,
        config: Mapping[str, str],
        java_class: str,
        records: Sequence[SinkRecord] | Sequence[SourceRecord],
        samples: Sequence[SampleRecord] | None,
        config_field: str,
    ) -> PipelinePreview:
        """PreviewPipeline of a Java connector's config (resolved and valid): ``records``
        (a sink's consumed records, or a source's samples as polled records, ``samples``
        their JSON as given) through Kafka's Java pipeline in the JVM, within the caller's
        deadline. A plugin that cannot be built is an InvalidArgumentError on
        ``config_field``."""
        is_sink = self.connector_kind(java_class) is ConnectorType.SINK
        # by its class, as validation sends it: an alias is the Python side's to resolve
        request = java_preview_request(
            {**config, CONNECTOR_CLASS: java_class}, is_sink, records, samples
        )
        body = self._catalogue.preview(request, deadline.remaining())
        return preview_from_java(body, java_class, is_sink, config_field)

    # listing

    def describe(
        self, include_config_definitions: bool, all_plugin_types: bool
    ) -> tuple[list[PluginDesc], list[PluginDesc]]:
        """The Java connectors, and (with ``all_plugin_types``) the other Java plugins, of
        ``plugin.path``; waits for the scan as long as the caller's deadline allows."""
        listing = self._catalogue.listing(deadline.remaining())
        aliases = connector_aliases(listing)
        connectors: list[PluginDesc] = []
        others: list[PluginDesc] = []
        seen: set[tuple[str, str, str]] = set()
        for plugin in plugin_path_entries(listing):
            identity = (plugin["class"], plugin["type"], str(plugin.get("version")))
            if identity in seen:  # Kafka lists a class once per plugin location holding it
                continue
            seen.add(identity)
            desc = plugin_desc(plugin, aliases, include_config_definitions)
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
            for entry in plugin_path_entries(listing)
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
            raise validation_error(java_class, body["error"])
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
