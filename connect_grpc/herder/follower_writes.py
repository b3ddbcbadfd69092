"""An unconditional pause or resume written by the follower that takes the call, as Kafka
Connect's ``AbstractHerder.pauseConnector``/``resumeConnector`` write it on any worker
(decision 0100): one target-state record, unstamped, answered once the broker has it (the
leader writes its own under the connector's lock, ``distributed_mutations``).

A target state depends on no leader's view: the record names the connector, carries no term
(so a change of leader refuses it nowhere) and no request's answer (a call with a request id
goes to the leader, whose request log runs it once). Only while neither this worker nor the
leader (by its leader record) authenticates callers: otherwise the call goes to the leader,
whose roles judge it, as they judge every other write (a follower with laxer roles cannot
lend its callers more). What the leader's connector lock gave a forwarded pause, this worker
gets from the log itself:

- the connector must be in this view, else the call goes to the leader (this view may not
  have read a create the caller saw acknowledged);
- the record landed right after the last record this view had applied when it checked:
  nothing came between, so the connector existed when the record was applied everywhere,
  and the etag answered (config and offsets version of this view, the new state) is the
  connector's right after it; this view's reads wait for the record (read-your-writes);
- otherwise this view reads the record back first: a record that came after the connector's
  deletion set the state of no connector (NOT_FOUND; a create of the name writes its own
  target state first), and the etag is made from the view as it then stands.

Separate from the leader's mutations because it takes none of the leader's locks and
writes through the config store's own producer, not the leader's writer.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from connect_grpc.cluster.extension_records import LEADER_KEY, LeaderRecord
from connect_grpc.herder.distributed_view import LEADER_CALL_TIMEOUT_S, ClusterView
from connect_grpc.herder.etags import connector_etag, offsets_version_in
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import TargetState
from connect_grpc.kernel.errors import NotFoundError
from connect_grpc.storage.config_codec import target_state_records
from connect_grpc.storage.config_snapshot import ConfigSnapshot
from connect_grpc.storage.log_records import LogRecord


class FollowerWrites:
    """Target states this worker writes itself (thread-safe; no lock of its own)."""

    def __init__(
        self, view: ClusterView, writer: LeaderWriter, log: Any, *, authenticates: bool
    ) -> None:
        """``writer``: the leader's writer, asked only whether Kafka is known unreachable
        and who leads (a call this worker cannot judge goes there); ``authenticates``:
        whether this worker authenticates its callers."""
        self._view = view
        self._configs = view.configs
        self._writer = writer
        self._log = log
        self._authenticates = authenticates

    def target_state(self, name: str, state: TargetState) -> str:
        """Writes ``state`` (PAUSED or STARTED) as the connector's target state; returns
        the connector's etag after it.

        Raises:
            NotLeaderError: the connector is not in this view, or a worker authenticates
                callers (the leader judges the call).
            NotFoundError: the record came after the connector's deletion.
            UnavailableError: Kafka is unreachable, or the write or its read-back did not
                finish in time (the record may still be written: a retry writes the same
                state again).
        """
        self._writer.refuse_while_kafka_unreachable()
        before = self._view.snapshot()
        if not before.contains(name) or not self._judged_here(before):
            raise self._writer.not_leader()
        started = time.perf_counter()
        written = self._configs.send(
            target_state_records(name, state), deadline.remaining(LEADER_CALL_TIMEOUT_S)
        )
        sent = time.perf_counter()
        after = before
        read_back = not landed_right_after(before.offset, written)
        if read_back:
            self._configs.wait_for(
                written, deadline.remaining(LEADER_CALL_TIMEOUT_S), before_listener=True
            )
            if self._configs.orphaned(written):
                raise NotFoundError(f"Connector {name} not found")
            after = self._configs.snapshot()
        else:
            self._view.owe(written[-1].offset + 1)
        self._log.info(
            "connector_target_state_written", connector=name, state=state.value,
            by_leader=False,
        )
        self._log.debug(
            "follower_write_timed",
            send_ms=round((sent - started) * 1000, 3),
            read_back_ms=round((time.perf_counter() - sent) * 1000, 3) if read_back else None,
        )
        return _etag_after(name, state, before, after)

    def _judged_here(self, snapshot: ConfigSnapshot) -> bool:
        """Whether no roles but this worker's would judge the call: neither it nor the
        leader its view names authenticates callers (an older leader that does not say is
        taken to)."""
        if self._authenticates:
            return False
        leader = LeaderRecord.from_json(snapshot.extensions.get(LEADER_KEY))
        return leader is not None and leader.authenticates is False


def landed_right_after(offset: int, written: Sequence[LogRecord]) -> bool:
    """Whether ``written`` landed one after another right after the record before
    ``offset`` (the view's position when the write was checked): no other record came
    between, so the view then is exactly what the write follows."""
    return bool(written) and offset >= 0 and all(
        record.offset == offset + n for n, record in enumerate(written)
    )


def _etag_after(
    name: str, state: TargetState, before: ConfigSnapshot, after: ConfigSnapshot
) -> str:
    """The connector's etag with ``state``, by ``after`` (or ``before``, when the connector
    was deleted after the record: the state was set, then the connector went)."""
    snapshot = after if after.contains(name) else before
    config = snapshot.connectors[name]
    return connector_etag(name, config, state, str(offsets_version_in(snapshot.extensions, name)))
