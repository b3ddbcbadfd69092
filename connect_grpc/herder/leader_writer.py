"""The leader's writer of the config topic: its term in office, and the two ways it writes.

Taking office opens a transactional writer under ``<group.id>-leader`` (which fences the
previous leader's), reads the config topic to its end and announces this worker with a new
term; that writer then serves the leadership it took office in, and no other. A write goes
either in one transaction (:meth:`LeaderWriter.write`) or unfenced, stamped with the term
(:meth:`LeaderWriter.write_in_term`: the readers do the fencing then).

Separate from the herder because every mutation, the leader's loop, the recorded answers and
the fencing of task generations write through it, and its office (the writer, its term, the
leadership it serves) must change in one place. It logs on the herder's logger (``log``),
so that ``SetLogLevel connect_grpc.herder.distributed DEBUG`` still shows its timings.

Lock: ``_writer_lock`` guards only the writer, its term and the leadership it serves; it is
never held across Kafka I/O (a writer is opened, used and closed outside it).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from connect_grpc.cluster.config import DistributedConfig
from connect_grpc.cluster.extension_records import LEADER_KEY, LeaderRecord
from connect_grpc.cluster.fenced_writer import FencedWriter, leader_transactional_id
from connect_grpc.cluster.membership import LeaderElection
from connect_grpc.herder.distributed_view import LEADER_CALL_TIMEOUT_S, ClusterView, now_ms
from connect_grpc.kernel import deadline
from connect_grpc.kernel.errors import NotLeaderError
from connect_grpc.security.session_key import SessionKey
from connect_grpc.storage.config_codec import (
    RawRecord,
    extension_record,
    session_key_record,
    term_marker_record,
)
from connect_grpc.storage.config_snapshot import ConfigSnapshot
from connect_grpc.storage.log_records import LogRecord

#: A check of a conditional write against the view as it stands right before the write:
#: raises (AbortedError, say) when the write must not be made.
Guard = Callable[[ConfigSnapshot], None]


class LeaderWriter:
    """The leader's config-topic writer while this worker is in office (thread-safe)."""

    def __init__(
        self,
        view: ClusterView,
        election: LeaderElection,
        wake: threading.Event,
        log: Any,
        *,
        client: dict[str, str],
        cluster: DistributedConfig,
        worker_id: str,
        refuse_while_kafka_unreachable: Callable[[], None],
        authenticates: bool = True,
    ) -> None:
        """``wake``: the leader loop's event, set after a write that may call for a new
        assignment; ``refuse_while_kafka_unreachable`` raises UnavailableError while the
        worker's Kafka monitor knows Kafka is unreachable; ``authenticates``: whether this
        worker authenticates its callers (said in its leader record)."""
        self._view = view
        self._configs = view.configs
        self._election = election
        self._leader_wake = wake
        self._log = log
        self._client = client
        self._cluster = cluster
        self._id = worker_id
        self._refuse_while_kafka_unreachable = refuse_while_kafka_unreachable
        self._authenticates = authenticates
        self._writer: FencedWriter | None = None
        #: The term the writer took office in (its unfenced writes carry it).
        self._term = 0
        #: The election's ``changes`` when the writer took office: a writer serves that
        #: leadership only, never one won again after a deposal (a new term then).
        self._office_changes = -1
        self._writer_lock = threading.Lock()

    def leads(self) -> bool:
        """Whether this worker carries out the leader's writes now."""
        return self.usable() is not None

    def usable(self) -> FencedWriter | None:
        """The writer, while the leadership it took office in lasts."""
        with self._writer_lock:
            writer, office = self._writer, self._office_changes
        if writer is None or not writer.usable:
            return None
        leadership = self._election.leadership()
        if not leadership.leader or leadership.changes != office:
            return None
        return writer

    def for_write(self) -> FencedWriter:
        """The leader's writer, for a write about to be made: NotLeaderError on any other
        worker (the call is forwarded), UNAVAILABLE at once while Kafka is unreachable.

        Kafka first: a worker cut off from Kafka loses its place in the group too, and
        forwarding to a leader it can no longer know would hold the caller to the end of
        its deadline."""
        self._refuse_while_kafka_unreachable()
        writer = self.usable()
        if writer is None:
            raise self.not_leader()
        return writer

    def refuse_while_kafka_unreachable(self) -> None:
        """UnavailableError at once while the worker knows Kafka is unreachable (a write
        any worker makes itself asks it too)."""
        self._refuse_while_kafka_unreachable()

    def not_leader(self) -> NotLeaderError:
        leader = self._view.leader_address()
        if leader is None or leader[0] == self._id:
            return NotLeaderError("this worker is not the leader; no leader is known yet")
        return NotLeaderError(
            f"this worker is not the leader ({leader[0]} is)",
            leader_id=leader[0],
            leader_address=leader[1],
        )

    def write(
        self,
        writer: FencedWriter,
        records: list[RawRecord],
        *,
        wake_leader: bool = True,
        guard: Guard | None = None,
    ) -> None:
        """One transaction, then waits until this worker's view shows it.

        With a ``guard`` (a conditional write), the transaction commits only if ``guard``
        passes on this view as it stands right before the transaction's first record (the
        open transaction holds every read_committed reader there): a pause or resume
        another worker wrote itself (not under this leader's connector lock) between the
        caller's check and the write aborts it, and ``guard``'s error reaches the caller."""
        started = time.perf_counter()
        before_commit = None if guard is None else functools.partial(self._just_before, guard)
        written = writer.send_all(
            records, deadline.remaining(LEADER_CALL_TIMEOUT_S), before_commit=before_commit
        )
        sent = time.perf_counter()
        self._configs.wait_for(written, deadline.remaining(LEADER_CALL_TIMEOUT_S))
        if wake_leader:
            self._leader_wake.set()
        # where a leader write's time goes (BENCHMARKS.md "Distributed mode"): off by
        # default, SetLogLevel connect_grpc.herder.distributed DEBUG shows it
        self._log.debug(
            "leader_write_timed",
            records=len(records),
            send_ms=round((sent - started) * 1000, 3),
            read_back_ms=round((time.perf_counter() - sent) * 1000, 3),
        )

    def _just_before(self, guard: Guard, written: list[LogRecord]) -> None:
        """Runs ``guard`` on the view once it has read every record before ``written`` (the
        open transaction's): not ``ClusterView.snapshot``, which may wait for a write owed
        past them, which the open transaction holds back."""
        if written:
            self._configs.wait_for_offset(
                written[0].offset, deadline.remaining(LEADER_CALL_TIMEOUT_S),
                before_listener=True,
            )
        guard(self._configs.snapshot())

    def write_in_term(
        self,
        records: list[RawRecord],
        answer: RawRecord | None,
        *,
        wake_leader: bool = False,
        change_index: int = -1,
        carried: Sequence[RawRecord] = (),
    ) -> None:
        """Writes without a transaction, stamped with this leader's term, the record at
        ``change_index`` (the change) carrying the call's ``answer`` and the extension
        records ``carried`` (applied with it or not at all), then waits until this
        worker's view shows the write (a transaction's commit was most of a write's time;
        Kafka Connect writes without one unless exactly-once is on). The write failed iff
        the change was refused: the records after it are cleanup whose refusal leaves the
        change done.

        Only for changes whose every prefix may be applied alone: the records before the
        change change nothing shown, those after it only clean up: a pause, a resume, an
        unconditional config of an existing connector, a new connector (the config is the
        change, last), a stop (the target state, first), a deletion (the connector
        tombstone, first), task configs (held back until their commit record, the last)
        while exactly-once source support is off, as Kafka Connect writes them then, an
        assignment and a flagged restart's request (one record each). Conditional (etag)
        writes and the other changes keep the transaction.

        Fencing moves to the readers: every worker ignores such a record when a later
        leader's term marker came before it, this one included, which is how a deposed
        leader learns its write failed: NotLeaderError, so that the call goes to the new
        leader. The leader loop is woken only for a ``wake_leader`` write: a target state
        or an existing connector's config changes no instance to assign (new task configs
        wake it when they are written).
        """
        term = self.office_term()
        if not self._election.is_leader():
            raise self.not_leader()
        started = time.perf_counter()
        mark = self._configs.applied_mark()
        written = self._configs.send_in_term(
            records, term, deadline.remaining(LEADER_CALL_TIMEOUT_S), carried=answer,
            also_carried=carried, carrier_index=change_index,
        )
        sent = time.perf_counter()
        read_back = not landed_next(mark, term, written, change_index)
        if read_back:
            # the view and the refusal are all the answer needs: woken before the reconciler
            # and the leader thread the change wakes (they would compete with the answer)
            self._configs.wait_for(
                written, deadline.remaining(LEADER_CALL_TIMEOUT_S), before_listener=True
            )
            if self._configs.refused([written[change_index]]):
                self._log.warning("leader_write_refused_as_deposed", term=term)
                raise self.not_leader()
        else:
            self._view.owe(written[-1].offset + 1)
        if wake_leader:
            self._leader_wake.set()
        self._log.debug(
            "leader_write_timed",
            records=len(records),
            transaction=False,
            send_ms=round((sent - started) * 1000, 3),
            read_back_ms=round((time.perf_counter() - sent) * 1000, 3) if read_back else None,
        )

    def office_term(self) -> int:
        """The term of the usable writer (checked just before by ``for_write``)."""
        with self._writer_lock:
            return self._term

    def take_office(self) -> FencedWriter:
        """The usable writer; when there is none, claims the leader's transactional id
        (fencing the previous leader), reads the config topic to its end and announces
        this worker as leader. A leadership won again after a deposal takes office anew,
        with a new term, even when this worker's loop did not see the deposal (it was busy
        with a Kafka call meanwhile): opening the writer again also aborts a transaction
        the old one left open, which would hold every read_committed reader back."""
        usable = self.usable()
        if usable is not None:
            return usable
        elected = self._election.leadership().changes
        self.close()
        writer = FencedWriter.open(
            self._client,
            self._cluster.config_topic,
            leader_transactional_id(self._cluster.group_id),
            deadline.remaining(LEADER_CALL_TIMEOUT_S),
            still_leader=self._election.is_leader,
            worker_id=self._id,
        )
        try:
            self._configs.refresh(deadline.remaining(LEADER_CALL_TIMEOUT_S))
            snapshot = self._view.snapshot()
            previous = LeaderRecord.from_json(snapshot.extensions.get(LEADER_KEY))
            term = max(previous.term if previous else 0, snapshot.term) + 1
            record = LeaderRecord(
                self._id, self._cluster.advertised_address, term, self._authenticates
            )
            # with a fresh session key in the same transaction: a worker that knows this
            # leader knows the key to sign the calls it forwards to it; and the term's
            # marker, after which every worker ignores a deposed leader's unfenced writes
            written = writer.send_all(
                [
                    extension_record(LEADER_KEY, record.to_json()),
                    term_marker_record(term),
                    session_key_record(SessionKey.generate(now_ms()).to_json()),
                ],
                deadline.remaining(LEADER_CALL_TIMEOUT_S),
            )
            self._configs.wait_for(written, deadline.remaining(LEADER_CALL_TIMEOUT_S))
        except BaseException:
            writer.close(0)
            raise
        with self._writer_lock:
            self._writer, self._term, self._office_changes = writer, term, elected
        self._log.info("leader_in_office", term=term)
        return writer

    def close(self) -> None:
        """Steps down: closes the writer, if any (outside the lock)."""
        with self._writer_lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.close(5.0)
            self._log.info("leader_writer_closed")


def landed_next(
    mark: tuple[int, int], term: int, written: Sequence[LogRecord], change_index: int
) -> bool:
    """Whether an unfenced write of ``term`` took effect, known without reading it back:
    the change and every record before it landed, one after another, right after the last
    record the view had applied when the write was sent (``mark``: that offset and the
    highest term read), and no marker read by then had ended ``term``. No later leader's
    marker can then come before them, so every reader applies them. Otherwise only the
    read-back tells (another writer's record, or a transaction's marker, came between)."""
    offset, term_read = mark
    if term_read > term or not written:
        return False
    change = written[: change_index % len(written) + 1]
    return all(record.offset == offset + n for n, record in enumerate(change))
