"""Fencing out zombie task producers (exactly-once source support, Kafka Connect's KIP-618).

Before a new generation of a source connector's tasks may start, the leader makes sure no
task of an earlier generation can still commit a transaction: for each transactional id
``<group.id>-<connector>-<task>`` that generation used, it claims the id with a producer of
its own (``init_transactions``, what the admin client's ``fenceProducers`` does, which the
Python client lacks). The coordinator bumps the id's epoch, aborts the transaction a zombie
may have open and refuses the zombie's later writes. The leader's producers write nothing
and are closed at once; a task that starts later claims its id again.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog
from confluent_kafka import KafkaError, KafkaException, Producer

from connect_grpc.cluster.fenced_writer import Failure, classify
from connect_grpc.kernel.errors import ConnectError, FailedPreconditionError, UnavailableError
from connect_grpc.kernel.kafka_clients import kafka_error_of, with_client_log

log = structlog.get_logger(__name__)

#: Producers claiming ids at once; an id costs one round trip to its coordinator.
MAX_PARALLEL_FENCES = 8
#: Back-off between two attempts of a claim librdkafka says may be retried.
RETRY_BACKOFF_S = 0.1
#: Retry hint of an UnavailableError.
RETRY_AFTER_S = 1.0


def fence_producers(
    client_config: Mapping[str, Any], transactional_ids: Sequence[str], timeout: float
) -> None:
    """Claims every id, in parallel; returns once each earlier holder is fenced.

    Raises UnavailableError when a claim may succeed if tried again (the coordinator did not
    answer in ``timeout`` seconds, a coordinator moving), FailedPreconditionError when it
    cannot (not authorized, for one). Each error names the id.
    """
    if not transactional_ids:
        return
    deadline = time.monotonic() + timeout
    began = time.monotonic()
    workers = min(MAX_PARALLEL_FENCES, len(transactional_ids))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fence") as pool:
        futures = [
            pool.submit(_fence_one, client_config, tid, deadline) for tid in transactional_ids
        ]
    errors = [error for future in futures if (error := future.exception()) is not None]
    if errors:
        if all(isinstance(error, UnavailableError) for error in errors):
            raise errors[0]
        raise next(error for error in errors if not isinstance(error, UnavailableError))
    log.info(
        "producers_fenced",
        transactional_ids=list(transactional_ids),
        elapsed_ms=round((time.monotonic() - began) * 1000),
    )


def _fence_one(client_config: Mapping[str, Any], transactional_id: str, deadline: float) -> None:
    conf = {
        **client_config,
        "transactional.id": transactional_id,
        "enable.idempotence": True,
        "acks": "all",
    }
    producer = Producer(with_client_log(conf, f"fencer-{transactional_id}"))
    try:
        while True:
            try:
                producer.init_transactions(max(0.0, deadline - time.monotonic()))
                return
            except KafkaException as exc:
                error = kafka_error_of(exc)
                failure = classify(error)
                left = deadline - time.monotonic()
                if failure is Failure.RETRIABLE and left > RETRY_BACKOFF_S:
                    time.sleep(RETRY_BACKOFF_S)
                    continue
                raise _fence_error(transactional_id, error, failure) from exc
    finally:
        _close(producer)


def _fence_error(
    transactional_id: str, error: KafkaError | None, failure: Failure
) -> ConnectError:
    detail = "no error code" if error is None else f"{error.name()}: {error.str()}"
    message = f"could not fence the producers of transactional id {transactional_id}: {detail}"
    if failure in (Failure.RETRIABLE, Failure.ABORTABLE) or (
        error is not None and error.retriable()
    ):
        return UnavailableError(message, RETRY_AFTER_S)
    return FailedPreconditionError(message)


def _close(producer: Producer) -> None:
    try:
        producer.close()
    except (KafkaException, RuntimeError) as exc:
        log.debug("fencing_producer_close_failed", error=repr(exc))
