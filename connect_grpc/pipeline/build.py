"""A connector's record pipeline, built from its config: converters, transformation stages
(each with its predicate) and error handling, as Kafka Connect's Worker builds them for a
task.

Which converter a task gets, for key, value and header independently (Kafka Connect's
rule): the connector config's own class key (``value.converter``) if it has one, configured
with only the connector's ``value.converter.*`` keys; else the worker's, configured with
only the worker's ``value.converter.*`` keys. A connector's ``value.converter.*`` keys
without its own ``value.converter`` are ignored.

Where this worker differs: Kafka Connect requires the worker's key and value converters; here
a side with neither the connector's nor the worker's converter passes its bytes through
unchanged (None), as before converters existed. The header converter defaults to
SimpleHeaderConverter, as Kafka Connect's worker does, for a connector that has a key or
value converter or a transformation; a connector with none of them and no header converter
set anywhere is all pass-through (``is_pass_through``), headers included.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import structlog

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.pipeline_plugins import PluginClassError, PluginKind
from connect_grpc.connectors.plugin_versions import NoMatchingVersionError, VersionSpecError
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.data.plugins import Converter, HeaderConverter, Predicate, Transformation
from connect_grpc.pipeline.config import (
    ErrorHandling,
    PipelineConfigError,
    aliases,
    configure_converter,
    predicate_keys,
    sub_config,
    transformation_keys,
)
from connect_grpc.pipeline.keys import (
    CONVERTER_KEYS,
    HEADER_CONVERTER,
    KEY_CONVERTER,
    PLUGIN_VERSION_SUFFIX,
    PREDICATES,
    TRANSFORMS,
    VALUE_CONVERTER,
)

__all__ = [
    "SIMPLE_HEADER_CONVERTER",
    "ConnectorPipeline",
    "PipelinePlugins",
    "TransformStage",
    "build_pipeline",
    "check_worker_converters",
]

_log = structlog.get_logger(__name__)

#: Kafka Connect's default header converter.
SIMPLE_HEADER_CONVERTER = "org.apache.kafka.connect.storage.SimpleHeaderConverter"


@dataclass(frozen=True)
class TransformStage:
    """One alias of ``transforms``: its transformation, applied when there is no predicate
    or when ``negate`` XOR the predicate's test is true."""

    alias: str
    transformation: Transformation[Any]
    predicate: Predicate[Any] | None
    negate: bool
    #: The predicate's alias in ``predicates`` ("" without a predicate).
    predicate_alias: str = ""


@dataclass
class PipelinePlugins:
    """What a task's records go through, every plugin created and configured."""

    key_converter: Converter | None
    value_converter: Converter | None
    header_converter: HeaderConverter | None
    stages: list[TransformStage]
    errors: ErrorHandling

    def is_pass_through(self) -> bool:
        """No converter and no stage: records move as bytes, untouched (the bytes path)."""
        return (
            self.key_converter is None
            and self.value_converter is None
            and self.header_converter is None
            and not self.stages
        )

    def close(self) -> None:
        """Closes every plugin, quietly (a failing close is logged). Idempotent as the
        plugins' own close is."""
        for stage in self.stages:
            _close_quietly(stage.transformation)
            if stage.predicate is not None:
                _close_quietly(stage.predicate)
        for converter in (self.key_converter, self.value_converter, self.header_converter):
            if converter is not None:
                _close_quietly(converter)


def build_pipeline(
    connector_config: Mapping[str, str],
    worker_config: WorkerConfig,
    plugins: Plugins,
    *,
    is_sink: bool,
) -> PipelinePlugins:
    """Creates and configures the pipeline plugins of a connector's tasks from its (resolved,
    validated) config, with the worker's converters where the connector sets none.

    ``is_sink`` only names the side in the log; both sides accept every key (a source's
    dead-letter queue goes beyond Kafka Connect).

    Raises:
        PipelineConfigError: a plugin is unknown, or failed to be created or configured
            (the plugins already created are closed).
    """
    errors = ErrorHandling.from_config(connector_config)
    with _closed_on_error() as created:
        stages = _stages(connector_config, plugins, created)
        key = _converter(KEY_CONVERTER, connector_config, worker_config, plugins, created)
        value = _converter(VALUE_CONVERTER, connector_config, worker_config, plugins, created)
        active = bool(stages) or key is not None or value is not None
        header = _converter(
            HEADER_CONVERTER,
            connector_config,
            worker_config,
            plugins,
            created,
            default=SIMPLE_HEADER_CONVERTER if active else None,
        )
    pipeline = PipelinePlugins(
        key_converter=cast(Converter | None, key),
        value_converter=cast(Converter | None, value),
        header_converter=cast(HeaderConverter | None, header),
        stages=stages,
        errors=errors,
    )
    _log.info(
        "pipeline_built",
        connector=connector_config.get("name"),
        side="sink" if is_sink else "source",
        stages=[stage.alias for stage in stages],
        pass_through=pipeline.is_pass_through(),
    )
    return pipeline


@dataclass(frozen=True)
class ConnectorPipeline:
    """The pipeline factory of a connector's tasks: ``build_pipeline`` on the connector's
    config. Picklable (a hosted task builds its own in its Spark task)."""

    connector_config: dict[str, str]
    worker_config: WorkerConfig
    plugins: Plugins
    is_sink: bool

    def __call__(self) -> PipelinePlugins:
        return build_pipeline(
            self.connector_config, self.worker_config, self.plugins, is_sink=self.is_sink
        )


def check_worker_converters(worker_config: WorkerConfig, plugins: Plugins) -> None:
    """Creates and configures the worker's converters once, so that a worker whose
    ``key.converter``, ``value.converter`` or ``header.converter`` cannot be used refuses to
    start (as Kafka Connect's does) instead of failing every task.

    Raises:
        PipelineConfigError: naming the property and why.
    """
    for class_key, (kind, _) in CONVERTER_KEYS.items():
        class_name = worker_config.converter_class(class_key)
        if class_name is None:
            continue
        try:
            converter = _new_converter(
                plugins, kind, class_key, class_name, worker_config.prefixed(class_key + ".")
            )
        except PipelineConfigError as exc:
            raise PipelineConfigError(f"worker property {class_key}: {exc}") from exc
        _close_quietly(converter)


_Plugin = Converter | HeaderConverter | Transformation[Any] | Predicate[Any]


@contextmanager
def _closed_on_error() -> Iterator[list[_Plugin]]:
    """Collects the plugins created; closes them all if the block raises."""
    created: list[_Plugin] = []
    try:
        yield created
    except BaseException:
        for plugin in reversed(created):
            _close_quietly(plugin)
        raise


def _converter(
    class_key: str,
    connector_config: Mapping[str, str],
    worker_config: WorkerConfig,
    plugins: Plugins,
    created: list[_Plugin],
    default: str | None = None,
) -> Converter | HeaderConverter | None:
    kind, _ = CONVERTER_KEYS[class_key]
    prefix = class_key + "."
    version = None
    if class_key in connector_config:
        class_name, origin = connector_config[class_key], "connector config"
        sub = sub_config(connector_config, prefix)
        version = connector_config.get(prefix + PLUGIN_VERSION_SUFFIX)
    elif (worker_class := worker_config.converter_class(class_key) or default) is not None:
        class_name, origin, sub = worker_class, "worker config", worker_config.prefixed(prefix)
    else:
        return None
    converter = _new_converter(plugins, kind, class_key, class_name, sub, version)
    created.append(converter)
    _log.info(
        "converter_set_up",
        property=class_key,
        converter=type(converter).__qualname__,
        origin=origin,
        connector=connector_config.get("name"),
    )
    return converter


def _new_converter(
    plugins: Plugins,
    kind: PluginKind,
    class_key: str,
    class_name: str,
    sub: Mapping[str, str],
    version: str | None = None,
) -> Converter | HeaderConverter:
    cls = _plugin_class(plugins, kind, class_name, version)
    try:
        converter: Converter | HeaderConverter = cls()
        configure_converter(converter, kind, sub, class_key == KEY_CONVERTER)
    except Exception as exc:
        raise PipelineConfigError(
            f"Failed to create and configure the {class_key} {class_name.strip()}: {exc}"
        ) from exc
    return converter


def _plugin_class(
    plugins: Plugins, kind: PluginKind, name: str, version: str | None = None
) -> type:
    try:
        return plugins.pipeline.plugin_class(kind, name, version)
    except (VersionSpecError, NoMatchingVersionError) as exc:
        raise PipelineConfigError(str(exc)) from None
    except PluginClassError as exc:
        if not exc.about_value:
            raise PipelineConfigError(exc.message) from None
        available = ", ".join(
            sorted(n for n, cls in plugins.pipeline.known().items() if issubclass(cls, kind.base))
        )
        raise PipelineConfigError(
            f"Failed to find any class that implements {kind.interface} and which name matches "
            f"{name.strip()}, available {kind.value.replace('_', ' ')}s are: {available}"
        ) from None


def _stages(
    config: Mapping[str, str], plugins: Plugins, created: list[_Plugin]
) -> list[TransformStage]:
    defined_predicates = aliases(config, PREDICATES)
    stages: list[TransformStage] = []
    for alias in aliases(config, TRANSFORMS):
        keys = transformation_keys(config, alias)
        transformation = _configured(
            plugins, PluginKind.TRANSFORMATION, keys.type_key, config, keys.own, created
        )
        predicate = None
        predicate_alias = keys.predicate
        if predicate_alias is not None:
            if predicate_alias not in defined_predicates:
                raise PipelineConfigError(
                    f"Unknown configuration '{PREDICATES}.{predicate_alias}.type'"
                )
            predicate_of = predicate_keys(config, predicate_alias)
            predicate = _configured(
                plugins,
                PluginKind.PREDICATE,
                predicate_of.type_key,
                config,
                predicate_of.own,
                created,
            )
        stages.append(
            TransformStage(
                alias=alias,
                transformation=transformation,
                predicate=predicate,
                negate=keys.negate,
                predicate_alias=predicate_alias or "",
            )
        )
    return stages


def _configured(
    plugins: Plugins,
    kind: PluginKind,
    type_key: str,
    config: Mapping[str, str],
    sub: Mapping[str, str],
    created: list[_Plugin],
) -> Any:
    """A new transformation or predicate of the class ``type_key`` names, configured."""
    class_name = config.get(type_key)
    if class_name is None:
        raise PipelineConfigError(
            f'Missing required configuration "{type_key}" which has no default value.'
        )
    version = config.get(f"{type_key.removesuffix('.type')}.{PLUGIN_VERSION_SUFFIX}")
    cls = _plugin_class(plugins, kind, class_name, version)
    try:
        plugin = cls()
    except Exception as exc:
        raise PipelineConfigError(f"Failed to create {type_key} {class_name}: {exc}") from exc
    created.append(plugin)
    try:
        plugin.configure(sub)
    except Exception as exc:
        raise PipelineConfigError(
            f"Failed to configure {type_key.removesuffix('.type')}: {exc}"
        ) from exc
    return plugin


def _close_quietly(plugin: _Plugin) -> None:
    try:
        plugin.close()
    except Exception as exc:  # one plugin's failing close must not keep the others open
        _log.warning("plugin_close_failed", plugin=type(plugin).__qualname__, error=repr(exc))
