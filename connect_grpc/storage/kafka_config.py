"""Distributed mode's config store: the config topic (``config.storage.topic``).

The topic has one partition and is compacted; its records are Kafka Connect's
(``KafkaConfigBackingStore``'s: :mod:`.config_codec`), so Kafka tooling and Kafka Connect
itself can read them, and each worker builds the same state from them
(:mod:`.config_snapshot`). This module is the store: :class:`KafkaConfigStore` tails the
topic with a :class:`~connect_grpc.storage.kafka_log.KafkaBasedLog`, applies every record
to its snapshot builder and tells its listener, and writes records.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence

import structlog

from connect_grpc.kernel.domain import RestartRequest, TargetState
from connect_grpc.kernel.errors import ConnectError, UnavailableError
from connect_grpc.storage.config_codec import (
    TARGET_STATE_PREFIX,
    TERM_HEADER,
    Config,
    RawRecord,
    carried_headers,
    carried_records,
    connector_config_records,
    removal_records,
    restart_records,
    target_state_records,
    task_config_records,
    task_count_records,
    written_term,
)
from connect_grpc.storage.config_snapshot import (
    ChangeKind,
    ConfigChange,
    ConfigSnapshot,
    SnapshotBuilder,
    _apply_extension,
    apply_record,
)
from connect_grpc.storage.kafka_log import KafkaBasedLog
from connect_grpc.storage.log_records import LogRecord
from connect_grpc.storage.log_settings import DEFAULT_TIMEOUT_S, ClientConfig
from connect_grpc.storage.log_topic import TopicSpec

log = structlog.get_logger(__name__)

DEFAULT_TOPIC = "connect-configs"
DEFAULT_REPLICATION_FACTOR = 1
#: How many refused offsets a store remembers for :meth:`KafkaConfigStore.refused`.
REFUSED_MEMORY = 1024

#: The listener: (kind, connector, the restart request for kind "restart", else None).
ConfigListener = Callable[[ChangeKind, str, RestartRequest | None], None]


class KafkaConfigStore:
    """Connector configs, task configs and target states in the config topic, mirrored here.

    ``start`` creates the topic if missing (compacted, one partition) and reads it to its
    end; a background thread then applies every record, in order, to the in-memory state,
    and :meth:`refresh` waits until all records present when called are applied. Every
    write returns once its records are acknowledged by all in-sync replicas (idempotent
    producer) and read back, so :meth:`snapshot` shows it at once. The listener is called
    on the tailing thread after each record that changed something, this store's own
    writes included. Thread-safe.

    The ``put_*`` methods write with the plain idempotent producer of
    :meth:`~connect_grpc.storage.kafka_log.KafkaBasedLog.send_all` (tools and tests); the
    distributed herder's leader writes the same records (the ``*_records`` functions)
    through its fenced transactional writer, or with :meth:`send_in_term` stamped with its
    term, and waits for them with :meth:`wait_for`. A stamped record whose term a later
    term marker ended is not applied (:meth:`refused` tells its writer). Any worker writes
    an unconditional pause or resume with :meth:`send`, unstamped, as Kafka Connect's
    workers write target states (:meth:`orphaned` tells it whether its record came after
    the connector's deletion).
    """

    def __init__(
        self,
        client_config: ClientConfig,
        topic: str = DEFAULT_TOPIC,
        replication_factor: int = DEFAULT_REPLICATION_FACTOR,
        *,
        on_change: ConfigListener | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self._lock = threading.Lock()
        self._builder = SnapshotBuilder()
        #: The frozen state, built on demand after records were applied.
        self._snapshot: ConfigSnapshot | None = None
        self._on_change = on_change
        self._timeout = timeout
        #: Offsets of the latest records ignored as a deposed leader's (newest last).
        self._refused: deque[int] = deque(maxlen=REFUSED_MEMORY)
        #: Offsets of the latest target states read for a connector without a config.
        self._orphaned: deque[int] = deque(maxlen=REFUSED_MEMORY)
        #: Changes applied on the tailing thread, told to the listener at the batch's end.
        self._untold: list[ConfigChange] = []
        spec = TopicSpec(topic, 1, replication_factor, compact=True)
        self._log = KafkaBasedLog(
            client_config, spec, self._apply, after_batch=self._tell_listener, timeout=timeout
        )

    def start(self) -> None:
        """Creates the topic if needed and reads it to its end. Call once."""
        self._log.start()
        snapshot = self.snapshot()
        log.info(
            "config_store_started",
            topic=self._log.topic,
            connectors=len(snapshot.connectors),
            offset=snapshot.offset,
        )

    def stop(self) -> None:
        """Stops following the topic. Idempotent."""
        self._log.stop()

    def refresh(self, timeout: float | None = None) -> None:
        """Blocks until every record in the topic when called is applied here.

        Raises UnavailableError after ``timeout`` seconds (default: the store's timeout).
        """
        self._log.read_to_end(timeout)

    def position(self) -> int:
        """The offset after the last record applied (a snapshot's ``offset``, without
        building one)."""
        with self._lock:
            return self._builder.offset

    def applied_mark(self) -> tuple[int, int]:
        """(the offset after the last record applied, the highest term read), together."""
        with self._lock:
            return self._builder.offset, self._builder.term

    def on_tail_thread(self) -> bool:
        """Whether the caller is the thread that applies records (and tells the listener)."""
        return self._log.on_tail_thread()

    def snapshot(self) -> ConfigSnapshot:
        """The current state (immutable)."""
        with self._lock:
            if self._snapshot is None:
                self._snapshot = self._builder.build()
            return self._snapshot

    def put_connector_config(
        self, name: str, config: Config, target_state: TargetState | None = None
    ) -> None:
        """Writes the connector's config, preceded by its target state when one is given."""
        self._write(connector_config_records(name, config, target_state))

    def remove_connector(self, name: str) -> None:
        """Deletes the connector: tombstones its config, task configs and target state."""
        self._write(removal_records(name, len(self.snapshot().task_configs(name))))

    def put_task_configs(self, name: str, configs: list[Config]) -> None:
        """Writes the connector's task configs, then the commit that makes them visible."""
        self._write(task_config_records(name, configs))

    def put_target_state(self, name: str, state: TargetState) -> None:
        """Writes the connector's target state."""
        self._write(target_state_records(name, state))

    def put_restart_request(self, request: RestartRequest) -> None:
        """Writes a restart request; every store's listener hears of it."""
        self._write(restart_records(request))

    def put_task_count_record(self, name: str, count: int) -> None:
        """Writes the connector's task count (``tasks-fencing-<name>``)."""
        self._write(task_count_records(name, count))

    def wait_for(
        self,
        written: list[LogRecord],
        timeout: float | None = None,
        *,
        before_listener: bool = False,
    ) -> None:
        """Blocks until records another writer wrote (a transaction) are applied here and,
        unless ``before_listener``, the listener has been told of them (a writer that only
        needs its write in :meth:`snapshot` and :meth:`refused` is answered before the
        threads the listener wakes compete with it).

        Raises UnavailableError after ``timeout`` seconds (default: the store's timeout).
        """
        self._log.read_past(written, timeout, before_batch_end=before_listener)

    def send_in_term(
        self,
        records: list[RawRecord],
        term: int,
        timeout: float,
        *,
        carried: RawRecord | None = None,
        also_carried: Sequence[RawRecord] = (),
        carrier_index: int = -1,
    ) -> list[LogRecord]:
        """Writes the records without a transaction, each stamped with the writer's leader
        ``term``, the one at ``carrier_index`` (the change; the last by default) carrying
        the extension records ``carried`` and ``also_carried`` (applied with it); returns
        once acknowledged (not yet read back: :meth:`wait_for`, then :meth:`refused`).
        Raises UnavailableError when that takes over ``timeout`` seconds."""
        carrier = carried_headers([*([] if carried is None else [carried]), *also_carried])
        try:
            return self._log.send_all(
                records,
                headers=((TERM_HEADER, str(term).encode()),),
                carrier_headers=carrier,
                carrier_index=carrier_index,
                timeout=timeout,
            )
        except UnavailableError:
            raise
        except ConnectError as exc:
            raise UnavailableError(str(exc)) from exc

    def send(self, records: list[RawRecord], timeout: float) -> list[LogRecord]:
        """Writes the records without a transaction and without a term (a record every
        reader applies, as it applies Kafka Connect's); returns once acknowledged, not yet
        read back. Raises UnavailableError when that takes over ``timeout`` seconds or the
        broker refused them."""
        try:
            return self._log.send_all(records, timeout=timeout)
        except UnavailableError:
            raise
        except ConnectError as exc:
            raise UnavailableError(str(exc)) from exc

    def orphaned(self, written: list[LogRecord]) -> bool:
        """Whether any of ``written`` (read back already) is a target state that came after
        its connector's config was deleted (or before any was written): it set the state
        of no connector."""
        with self._lock:
            return any(record.offset in self._orphaned for record in written)

    def refused(self, written: list[LogRecord]) -> bool:
        """Whether this store ignored any of ``written`` (read back already) as the write of
        a deposed leader."""
        with self._lock:
            return any(record.offset in self._refused for record in written)

    def wait_for_offset(
        self, offset: int, timeout: float | None = None, *, before_listener: bool = False
    ) -> None:
        """Blocks until the records before ``offset`` are applied here (read-your-writes
        after another worker's write) and, unless ``before_listener``, the listener has
        been told of them; raises UnavailableError after ``timeout``."""
        if offset > 0:
            self._log.read_until({0: offset}, timeout, before_batch_end=before_listener)

    def _write(self, records: list[RawRecord]) -> None:
        """Writes the records in order and waits until they are applied here."""
        self._log.send_all(records)
        self._log.read_to_end(self._timeout)
        log.debug("configs_written", count=len(records))

    def _apply(self, record: LogRecord) -> None:
        """Applies one record read from the topic (on the tailing thread)."""
        key = _decode_key(record.key)
        if key is None:
            log.warning("config_record_skipped", offset=record.offset)
            return
        with self._lock:
            try:
                change = self._apply_current(key, record)
            except ValueError as exc:
                change = None
                log.warning("config_record_skipped", key=key, offset=record.offset, error=str(exc))
            self._builder.offset = record.offset + 1
            self._snapshot = None
        if change is not None:
            self._untold.append(change)

    def _tell_listener(self) -> None:
        """Tells the listener of the batch's changes, in order (on the tailing thread, once
        the writers waiting only for their records to be applied were woken)."""
        changes, self._untold = self._untold, []
        for change in changes:
            self._notify(change)

    def _apply_current(self, key: str, record: LogRecord) -> ConfigChange | None:
        """Applies the record unless a leader wrote it in a term a later marker ended (it
        is remembered as refused then); the caller holds the lock."""
        term = written_term(record)
        if term is not None and term < self._builder.term:
            self._refused.append(record.offset)
            log.warning("config_record_of_a_deposed_leader_ignored", key=key,
                        offset=record.offset, term=term, current_term=self._builder.term)
            return None
        if (
            record.value is not None
            and key.startswith(TARGET_STATE_PREFIX)
            and key[len(TARGET_STATE_PREFIX):] not in self._builder.connectors
        ):
            self._orphaned.append(record.offset)
        carried = carried_records(record)
        change = apply_record(self._builder, key, record.value, record.timestamp_ms)
        for carried_key, carried_value in carried:
            _apply_extension(self._builder, carried_key, carried_value)
        return change

    def _notify(self, change: ConfigChange) -> None:
        if self._on_change is None:
            return
        try:
            self._on_change(change.kind, change.connector, change.restart)
        except Exception:
            log.exception("config_listener_failed", kind=change.kind, connector=change.connector)


def _decode_key(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return None
