"""Reads, alters and resets a connector's offsets (KIP-875) and sets initial ones (KIP-995).

Source offsets live in the OffsetStore; sink offsets are the committed offsets of the
connector's consumer group. Every change is validated, then vetted by the plugin's
``alter_offsets`` hook, and only then written: a rejected request changes nothing.
A sink may also be rewound by time: a partition given a record time (or every partition of
its topics, given one time for all) is set to its first record at or after that time, or
to its end, looked up with a consumer (``RecordTimes``) before the plugin's hook sees the
offsets; the answer says what each time resolved to.
The caller (the herder) checks that the connector is STOPPED and passes the stored config;
its config provider references are resolved before the plugin's hook sees it, as the
worker resolves them for the connector's tasks (reading offsets resolves nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import structlog

from connect_grpc.config_providers.transformer import ConfigTransformer
from connect_grpc.connectors.api import (
    AlterOffsetsUnsupportedError,
    Connector,
    SinkConnector,
    SourceConnector,
)
from connect_grpc.connectors.plugin_versions import CONNECTOR_VERSION
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder import offsets as rules
from connect_grpc.kernel.domain import ConnectorOffset, OffsetsChange
from connect_grpc.kernel.errors import (
    ConnectError,
    FailedPreconditionError,
    InvalidArgumentError,
    PreconditionViolation,
)
from connect_grpc.kernel.traces import CarriesTrace, first_line
from connect_grpc.runtime.client_settings import sink_group_id
from connect_grpc.runtime.record_times import RecordTimes
from connect_grpc.runtime.sink_task import subscription
from connect_grpc.storage.base import OffsetEntry, OffsetStore
from connect_grpc.storage.consumer_groups import ConsumerGroupOffsets

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class _Change:
    """A validated change: the parsed offsets in the plugin's shape, and whether it resets."""

    source: rules.SourceOffsets | None = None
    sink: rules.SinkOffsets | None = None
    #: The sink partitions given a record time, not resolved yet.
    times: rules.SinkTimes = field(default_factory=dict)
    #: The sink partitions set by record time: (time, resolved offset, at the end).
    resolved: dict[tuple[str, int], tuple[int, int, bool]] = field(default_factory=dict)

    def answer(self, message: str) -> OffsetsChange:
        """The answer: with record times, the message also says what they resolved to."""
        if not self.resolved:
            return OffsetsChange(message)
        offsets = rules.sink_offsets_to_connector_offsets(
            {tp: offset for tp, (_, offset, _) in self.resolved.items()}
        )
        return OffsetsChange(f"{message}. {rules.resolved_message(self.resolved)}",
                             tuple(offsets))


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
        *,
        record_times: RecordTimes,
    ) -> None:
        """``write_source_offsets`` writes a change of source offsets (default: the
        connector's store's ``put``; with exactly-once source support, a fenced
        transactional write). ``transformer`` resolves the config's references (a
        reference that does not resolve is a ConfigReferenceError). ``record_times`` looks
        sink offsets up by record time."""
        self._record_times = record_times
        self._transformer = transformer or ConfigTransformer()
        self._plugins = plugins
        self._stores = stores
        self._groups = groups
        self._write_source = write_source_offsets or self._put

    def _put(self, name: str, config: Mapping[str, str], entries: Sequence[OffsetEntry]) -> None:
        self._stores(config).put(name, entries)

    def read(self, name: str, config: Mapping[str, str]) -> list[ConnectorOffset]:
        connector = self._plugins.new_connector(
            config["connector.class"], config.get(CONNECTOR_VERSION)
        )
        if isinstance(connector, SinkConnector):
            committed = self._groups.committed(sink_group_id(name, config))
            return rules.sink_offsets_to_connector_offsets(committed)
        return [ConnectorOffset(p, o) for p, o in self._stores(config).get_all(name)]

    def alter(
        self,
        name: str,
        config: Mapping[str, str],
        offsets: Sequence[ConnectorOffset],
        all_partitions_time_ms: int | None = None,
    ) -> OffsetsChange:
        """Merges ``offsets`` in; or, with ``all_partitions_time_ms`` (a sink's), sets every
        partition of its topics by that record time."""
        fields = ("offsets", rules.ALL_PARTITIONS_RECORD_TIME)
        rules.require_offsets_or_time(offsets, all_partitions_time_ms, *fields)
        config = self._transformer.resolve(config)
        connector = self._plugins.new_connector(
            config["connector.class"], config.get(CONNECTOR_VERSION)
        )
        change = self._parse(name, connector, offsets, all_partitions_time_ms, fields)
        self._check_topics(change, offsets, "offsets")
        change = self._resolve_times(name, config, change, all_partitions_time_ms)
        applied = self._vet(connector, config, change)
        self._write(name, config, change)
        log.info("offsets_altered", connector=name,
                 partitions=len(change.sink if change.sink is not None else offsets),
                 by_time=len(change.resolved))
        return change.answer(rules.success_message("altered", applied))

    def reset(self, name: str, config: Mapping[str, str]) -> str:
        config = self._transformer.resolve(config)
        connector = self._plugins.new_connector(
            config["connector.class"], config.get(CONNECTOR_VERSION)
        )
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
        self,
        name: str,
        config: Mapping[str, str],
        offsets: Sequence[ConnectorOffset],
        all_partitions_time_ms: int | None = None,
    ) -> OffsetsChange:
        """KIP-995 steps 2-4: validate (with the plugin hook), wipe what is stored, write.
        Record times are resolved before the hook sees the offsets."""
        step = "validate initial offsets"
        fields = ("initial_offsets.offsets", f"initial_offsets.{rules.ALL_PARTITIONS_RECORD_TIME}")
        try:
            rules.require_offsets_or_time(offsets, all_partitions_time_ms, *fields)
            config = self._transformer.resolve(config)
            connector = self._plugins.new_connector(
                config["connector.class"], config.get(CONNECTOR_VERSION)
            )
            change = self._parse(name, connector, offsets, all_partitions_time_ms, fields)
            self._check_topics(change, offsets, "initial_offsets.offsets")
            step = "resolve record times"
            change = self._resolve_times(name, config, change, all_partitions_time_ms)
            step = "validate initial offsets"
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
        log.info("initial_offsets_set", connector=name,
                 partitions=len(change.sink if change.sink is not None else offsets),
                 by_time=len(change.resolved))
        return change.answer(rules.success_message("set", applied))

    # steps

    @staticmethod
    def _parse(
        name: str,
        connector: Connector,
        offsets: Sequence[ConnectorOffset],
        all_partitions_time_ms: int | None,
        fields: tuple[str, str],
    ) -> _Change:
        """The validated change; a sink's record times are parsed and checked here and
        resolved later (``_resolve_times``)."""
        offsets_field, all_partitions_field = fields
        if not isinstance(connector, SinkConnector):
            rules.refuse_times_for_source(
                offsets, all_partitions_time_ms, offsets_field, all_partitions_field, name
            )
            return _Change(source=rules.parse_source_offsets(offsets, offsets_field))
        return _Change(
            sink=rules.parse_sink_offsets(offsets, offsets_field),
            times=rules.parse_sink_times(offsets, offsets_field),
        )

    def _resolve_times(
        self,
        name: str,
        config: Mapping[str, str],
        change: _Change,
        all_partitions_time_ms: int | None,
    ) -> _Change:
        """The change with every record time replaced by the offset it resolves to."""
        if change.sink is None:
            return change
        times = change.times
        if all_partitions_time_ms is not None:
            partitions = self._record_times.partitions(name, config, subscription(config))
            times = dict.fromkeys(partitions, all_partitions_time_ms)
        if not times:
            return change
        found = self._record_times.resolve(name, config, times)
        resolved = {tp: (times[tp], r.offset, r.at_end) for tp, r in found.items()}
        sink: rules.SinkOffsets = {**change.sink, **{tp: r.offset for tp, r in found.items()}}
        return _Change(sink=sink, resolved=resolved)

    def _check_topics(
        self, change: _Change, offsets: Sequence[ConnectorOffset], field: str
    ) -> None:
        """Sink offsets and record times name topic partitions that must exist (Kafka would
        refuse them)."""
        if not change.sink and not change.times:
            return
        topics = {topic for (topic, _), offset in (change.sink or {}).items() if offset is not None}
        topics.update(topic for topic, _ in change.times)
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
            # a failure that carries its own trace (a Java connector's) is named by its
            # first line: the trace is in the log, not in the answer
            detail = first_line(exc) if isinstance(exc, CarriesTrace) else (
                f"{type(exc).__name__}: {exc}"
            )
            raise ConnectError(f"The connector's alter_offsets failed: {detail}") from exc
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
