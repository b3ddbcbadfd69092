"""Request ids on a cluster (``api.idempotency.SharedAnswers``): answers kept in the config
topic.

A mutation that carries a request id writes its answer with the change (one transaction, or
carried by the change's record when written unfenced), so that a retry reaching any later
leader replays it rather than running the change again; the leader tombstones the answers
older than the replay window now and then. Separate from the mutations because it is the
one part that turns a call's answer into records and back, shared by every mutation, the
idempotency layer and the leader's loop.
"""

from __future__ import annotations

import time
from typing import Any

from connect_grpc.cluster.extension_records import REQUEST_KEY_PREFIX, AnswerRecord, request_key
from connect_grpc.cluster.fenced_writer import FencedWriter
from connect_grpc.herder.distributed_view import LEADER_CALL_TIMEOUT_S, ClusterView
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.kernel import deadline, request_answer
from connect_grpc.storage.config_codec import RawRecord, extension_record

#: How long an answer to a request id is replayed (as the standalone RequestLog's default).
ANSWER_TTL_S = 600.0
#: How often the leader tombstones expired answers.
ANSWER_EXPIRY_INTERVAL_S = 60.0


def with_answer(records: list[RawRecord], result: object) -> list[RawRecord]:
    """The change's records and, when the call carries a request id, its answer: one
    transaction, so that no crash leaves the change written without its answer."""
    answer = answer_record(result)
    return records if answer is None else [*records, answer]


def answer_record(result: object) -> RawRecord | None:
    """The record of the call's answer when the call carries a request id."""
    answer = request_answer.take(result)
    if answer is None:
        return None
    record = AnswerRecord(answer.stored_at, answer.fingerprint, answer.payload)
    return extension_record(request_key(answer.request_id), record.to_json())


class RecordedAnswers:
    """The answers to request ids, as the config topic holds them."""

    def __init__(self, view: ClusterView, writer: LeaderWriter, log: Any) -> None:
        self._view = view
        self._writer = writer
        self._log = log

    def answer_for(self, request_id: str) -> tuple[float, bytes, bytes] | None:
        """The answer in the config topic, read to its end first: a retry that reaches a new
        leader before its view caught up with the old leader's last transaction would
        otherwise run the change again (e.g. ALREADY_EXISTS for a create) instead of
        replaying the answer written with it."""
        self._view.configs.refresh(deadline.remaining(LEADER_CALL_TIMEOUT_S))
        snapshot = self._view.snapshot()
        record = AnswerRecord.from_json(snapshot.extensions.get(request_key(request_id)))
        return None if record is None else (record.stored_at, record.fingerprint, record.payload)

    def remember(
        self, request_id: str, stored_at: float, fingerprint: bytes, payload: bytes
    ) -> None:
        record = AnswerRecord(stored_at, fingerprint, payload)
        self._writer.for_write()
        self._writer.write_in_term(
            [extension_record(request_key(request_id), record.to_json())], None
        )

    def expire(self, writer: FencedWriter) -> None:
        """Tombstones the answers older than the replay window (the leader, now and then)."""
        cutoff = time.time() - ANSWER_TTL_S
        expired = [
            key
            for key, value in self._view.snapshot().extensions.items()
            if key.startswith(REQUEST_KEY_PREFIX)
            and (record := AnswerRecord.from_json(value)) is not None
            and record.stored_at < cutoff
        ]
        if expired:
            self._writer.write(
                writer, [extension_record(k, None) for k in expired], wake_leader=False
            )
            self._log.info("request_answers_expired", count=len(expired))
