"""Reads, alters and resets a connector's offsets (KIP-875) and sets initial ones (KIP-995).

Source offsets live in the OffsetStore; sink offsets are the committed offsets of the
connector's consumer group. Every change is validated, then vetted by the plugin's
``alter_offsets`` hook, and only then written: a rejected request changes nothing.
The caller (the herder) checks that the connector is STOPPED and passes the stored config;
its config provider references are resolved before the plugin's hook sees it, as the
worker resolves them for the connector's tasks (reading offsets resolves nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import structlog

from connect_grpc.config_providers.transformer import ConfigTransformer
from connect_grpc.connectors.api import (
    AlterOffsetsUnsupportedError,
    Connector,
    SinkConnector,
    SourceConnector,
)
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.domain import ConnectorOffset
from connect_grpc.errors import (
    ConnectError,
    FailedPreconditionError,
    InvalidArgumentError,
    PreconditionViolation,
)
from connect_grpc.herder import offsets as rules
from connect_grpc.runtime.kafka_io import sink_group_id
from connect_grpc.storage.base import OffsetEntry, OffsetStore
from connect_grpc.storage.consumer_groups import ConsumerGroupOffsets

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class _Change:
    """A validated change: the parsed offsets in the plugin's shape, and whether it resets."""

    source: rules.SourceOffsets | None = None
    sink: rules.SinkOffsets | None = None


#: Writes a source connector's offsets: (connector, its config, entries; a None offset
#: resets).
SourceOffsetWriter = Callable[[str, Mapping[str, str], Sequence[OffsetEntry]], None]
#: The offset store of a source connector, given its config (its own offsets topic, if any).
OffsetStoreFor = Callable[[Mapping[str, str]], OffsetStore]


class OffsetManager:
    def __init__(
        self,
        plugins: Plugins,
        stores: OffsetStoreFor,
        groups: ConsumerGroupOffsets,
        write_source_offsets: SourceOffsetWriter | None = None,
        transformer: ConfigTransformer | None = None,
    ) -> None:
        """``write_source_offsets`` writes a change of source offsets (default: the
        connector's store's ``put``; with exactly-once source support, a fenced
        transactional write). ``transformer`` resolves the config's references (a
        reference that does not resolve is a ConfigReferenceError)."""
        self._transformer = transformer or ConfigTransformer()
        self._plugins = plugins
        self._stores = stores
        self._groups = groups
        self._write_source = write_source_offsets or self._put

    def _put(self, name: str, config: Mapping[str, str], entries: Sequence[OffsetEntry]) -> None:
        self._stores(config).put(name, entries)

    def read(self, name: str, config: Mapping[str, str]) -> list[ConnectorOffset]:
        connector = self._plugins.new_connector(config["connector.class"])
        if isinstance(connector, SinkConnector):
            committed = self._groups.committed(sink_group_id(name, config))
            return rules.sink_offsets_to_connector_offsets(committed)
        return [ConnectorOffset(p, o) for p, o in self._stores(config).get_all(name)]

    def alter(
        self, name: str, config: Mapping[str, str], offsets: Sequence[ConnectorOffset]
    ) -> str:
        rules.require_offsets(offsets)
        config = self._transformer.resolve(config)
        connector = self._plugins.new_connector(config["connector.class"])
        change = self._parse(connector, offsets, "offsets")
        self._check_topics(change, offsets, "offsets")
        applied = self._vet(connector, config, change)
        self._write(name, config, change)
        log.info("offsets_altered", connector=name, partitions=len(offsets))
        return rules.success_message("altered", applied)

    def reset(self, name: str, config: Mapping[str, str]) -> str:
        config = self._transformer.resolve(config)
        connector = self._plugins.new_connector(config["connector.class"])
        if isinstance(connector, SinkConnector):
            group = sink_group_id(name, config)
            committed = self._groups.committed(group)
            applied = self._vet(connector, config, _Change(sink=dict.fromkeys(committed)))
            self._groups.delete_group(group)
        else:
            known = [(partition, None) for partition, _ in self._stores(config).get_all(name)]
            change = _Change(source=list(known))
            applied = self._vet(connector, config, change)
            self._write_source(name, config, known)
        log.info("offsets_reset", connector=name)
        return rules.success_message("reset", applied)

    def set_initial(
        self, name: str, config: Mapping[str, str], offsets: Sequence[ConnectorOffset]
    ) -> str:
        """KIP-995 steps 2-4: validate (with the plugin hook), wipe what is stored, write."""
        step = "validate initial offsets"
        try:
            rules.require_offsets(offsets, "initial_offsets.offsets")
            config = self._transformer.resolve(config)
            connector = self._plugins.new_connector(config["connector.class"])
            change = self._parse(connector, offsets, "initial_offsets.offsets")
            self._check_topics(change, offsets, "initial_offsets.offsets")
            applied = self._vet(connector, config, change)
            if isinstance(connector, SinkConnector):
                step = "wipe existing offsets"
                self._groups.delete_group(sink_group_id(name, config))
                step = "write initial offsets"
                self._write(name, config, change)
            else:
                step = "write initial offsets"
                replacing = self._replacing(name, config, change.source or [])
                self._write_source(name, config, replacing)
        except ConnectError as exc:
            raise exc.in_step(step) from exc
        log.info("initial_offsets_set", connector=name, partitions=len(offsets))
        return rules.success_message("set", applied)

    # steps

    @staticmethod
    def _parse(connector: Connector, offsets: Sequence[ConnectorOffset], field: str) -> _Change:
        if isinstance(connector, SinkConnector):
            return _Change(sink=rules.parse_sink_offsets(offsets, field))
        return _Change(source=rules.parse_source_offsets(offsets, field))

    def _check_topics(
        self, change: _Change, offsets: Sequence[ConnectorOffset], field: str
    ) -> None:
        """Sink offsets name topic partitions that must exist (Kafka would refuse them)."""
        if not change.sink:
            return
        topics = {topic for (topic, _), offset in change.sink.items() if offset is not None}
        if topics:
            rules.check_partitions_exist(offsets, self._groups.partition_counts(topics), field)

    @staticmethod
    def _vet(connector: Connector, config: Mapping[str, str], change: _Change) -> bool:
        """Calls the plugin's ``alter_offsets``; maps its refusals to errors."""
        try:
            if isinstance(connector, SinkConnector):
                return bool(connector.alter_offsets(config, change.sink or {}))
            if isinstance(connector, SourceConnector):
                return bool(connector.alter_offsets(config, change.source or []))
        except AlterOffsetsUnsupportedError as exc:
            raise FailedPreconditionError(
                f"Connector {config.get('name')} does not support external modification of "
                f"offsets: {exc}",
                [PreconditionViolation("PLUGIN", str(config.get("name")),
                                       "alter_offsets refused the change")],
            ) from None
        except ValueError as exc:
            raise InvalidArgumentError.for_field("offsets", str(exc)) from None
        except Exception as exc:
            log.exception("alter_offsets_hook_failed", connector=config.get("name"))
            raise ConnectError(
                f"The connector's alter_offsets failed: {type(exc).__name__}: {exc}"
            ) from exc
        return False

    def _replacing(
        self, name: str, config: Mapping[str, str], offsets: rules.SourceOffsets
    ) -> rules.SourceOffsets:
        """The stored partitions reset, then ``offsets``: one write that wipes and sets, so
        a failed write leaves the old offsets (KIP-995 steps 3 and 4 at once)."""
        given = [partition for partition, _ in offsets]
        stale = [(p, None) for p, _ in self._stores(config).get_all(name) if p not in given]
        return [*stale, *offsets]

    def _write(self, name: str, config: Mapping[str, str], change: _Change) -> None:
        if change.sink is not None:
            self._groups.alter(sink_group_id(name, config), change.sink)
        else:
            self._write_source(name, config, change.source or [])
