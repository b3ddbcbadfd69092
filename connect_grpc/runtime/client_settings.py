"""The settings of a task's Kafka clients: its producer, its sink task's group member, the
consumer that only looks offsets up, and the plain assigned consumers that read its batches.

Each starts from the worker's ``producer.*`` or ``consumer.*`` properties and ends with the
connector's ``producer.override.*`` or ``consumer.override.*`` ones. A module of its own,
apart from the clients that use these settings (``produce``, ``range_reader``): the herder and
``connect-grpc dev`` need the names they derive (a sink's group, the lookup consumer's
settings) without the data plane's producing and reading.
"""

from __future__ import annotations

from collections.abc import Mapping

from connect_grpc.config.worker import WorkerConfig

#: A reader's ``fetch.wait.max.ms`` unless the worker's or connector's consumer settings
#: say otherwise (see :func:`reader_conf`).
READER_FETCH_WAIT_MS = "10"
#: A reader's ``fetch.queue.backoff.ms``: librdkafka (2.1+) stops fetching for a second by
#: default once its local queue holds ``queued.min.messages`` (100 000), which a reader
#: that consumes a batch at a time reaches at once; a bare consume loop here read 155k
#: messages/s with the default and 676k/s with 10 ms.
READER_FETCH_QUEUE_BACKOFF_MS = "10"

PRODUCER_OVERRIDE_PREFIX = "producer.override."
#: What a producer that writes each record in a request of its own adds to the task's
#: settings: a batch the broker refuses whole (librdkafka does not split a batch refused
#: as too large, as Java's producer does) is written again with it, so that each record
#: gets its own verdict.
ONE_RECORD_PER_REQUEST = {"batch.num.messages": "1", "linger.ms": "0"}
#: A producer setting the Python client takes as a bool, not a string.
ONLY_ERROR_REPORTS = "delivery.report.only.error"
CONSUMER_OVERRIDE_PREFIX = "consumer.override."


def _overrides(config: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix)}


def producer_conf(
    worker: WorkerConfig, connector_config: Mapping[str, str], client_id: str
) -> dict[str, str]:
    """Worker ``producer.*`` props, then the connector's ``producer.override.*`` ones."""
    conf = {
        "bootstrap.servers": worker.bootstrap_servers,
        "client.id": client_id,
        "enable.idempotence": "true",
        "linger.ms": "5",
        # Only failures call back into Python: a callback per delivered record costs more
        # than producing it.
        ONLY_ERROR_REPORTS: "true",
    }
    conf.update(worker.prefixed("producer."))
    conf.update(_overrides(connector_config, PRODUCER_OVERRIDE_PREFIX))
    return conf


def sink_group_id(connector: str, connector_config: Mapping[str, str]) -> str:
    """The sink connector's consumer group: ``connect-<connector>`` unless overridden."""
    return connector_config.get(f"{CONSUMER_OVERRIDE_PREFIX}group.id") or f"connect-{connector}"


def _consumer_base(worker: WorkerConfig, connector_config: Mapping[str, str]) -> dict[str, str]:
    conf = {"bootstrap.servers": worker.bootstrap_servers, "auto.offset.reset": "earliest"}
    conf.update(worker.prefixed("consumer."))
    conf.update(_overrides(connector_config, CONSUMER_OVERRIDE_PREFIX))
    return conf


#: An idle sink's group member fetches its partitions from their ends only to be woken by a
#: record (``sink_member.SinkMember.wait_for_records``). While a record waits in its queue,
#: its next fetch is held back (``queued.min.messages`` 1) for 50 ms, time for the member to
#: take what the fetch brought and pause its partitions again: else that next fetch, a long
#: poll the broker holds up to ``fetch.wait.max.ms`` (500 ms), would hold up any request the
#: member sends next on the same connection as long (a broker answers a connection's requests
#: in order). The batch after a wake asks no ends for that reason (decision 0132).
MEMBER_QUEUED_MIN_MESSAGES = "1"
MEMBER_FETCH_QUEUE_BACKOFF_MS = "50"


def member_conf(
    worker: WorkerConfig, connector_config: Mapping[str, str], connector: str, client_id: str
) -> dict[str, str]:
    """The sink task's group member: commits by hand, never reads records itself (its
    fetch only wakes an idle task)."""
    conf = {
        "queued.min.messages": MEMBER_QUEUED_MIN_MESSAGES,
        "fetch.queue.backoff.ms": MEMBER_FETCH_QUEUE_BACKOFF_MS,
        **_consumer_base(worker, connector_config),
    }
    conf.update(
        {
            "group.id": sink_group_id(connector, connector_config),
            "client.id": client_id,
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
        }
    )
    return conf


def lookup_conf(
    worker: WorkerConfig, connector: str, connector_config: Mapping[str, str]
) -> dict[str, str]:
    """A consumer that only looks offsets up (rewind by time): the sink's settings; it
    joins no group (the id is only required by the client) and commits nothing."""
    conf = _consumer_base(worker, connector_config)
    conf.update(
        {
            "group.id": f"{sink_group_id(connector, connector_config)}-lookup",
            "client.id": f"connect-{connector}-lookup",
            "enable.auto.commit": "false",
        }
    )
    conf.pop("group.instance.id", None)
    return conf


def reader_conf(
    worker: WorkerConfig, connector_config: Mapping[str, str], connector: str
) -> dict[str, str]:
    """An executor's plain assigned consumer: never joins the group, never commits.

    Its ranges end at a high watermark, so the records are there: a fetch never needs to
    wait for more, and a long-poll fetch left outstanding by one range would hold up the
    next range's first fetch by up to ``fetch.wait.max.ms`` (500 ms by default).
    """
    conf = {
        "fetch.wait.max.ms": READER_FETCH_WAIT_MS,
        "fetch.queue.backoff.ms": READER_FETCH_QUEUE_BACKOFF_MS,
        **_consumer_base(worker, connector_config),
    }
    conf.update(
        {
            "group.id": f"{sink_group_id(connector, connector_config)}-reader",
            "client.id": f"connect-{connector}-reader",
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
            "enable.partition.eof": "true",
        }
    )
    conf.pop("group.instance.id", None)
    return conf
