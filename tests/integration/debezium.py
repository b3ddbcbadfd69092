"""What the Debezium PostgreSQL tests share: the connector's config as a Kafka Connect user
writes it (pgoutput, JsonConverter without schemas for keys and values, a slot, a
publication and a topic prefix of the test's own), and its change events read back from
Kafka as Debezium wrote them.

Debezium 3.6.1.Final's event, JsonConverter with ``schemas.enable=false``: the key is the
row's primary key (``{"id": 7}``), the value an envelope ``{"before", "after", "source",
"op", "ts_ms", ...}`` whose ``op`` is ``r`` (a snapshot's read), ``c``, ``u`` or ``d``; a
delete is followed by a tombstone (the key, a null value). Its source offsets are keyed by
``{"server": <topic.prefix>}`` and carry ``lsn``, ``txId``, ``ts_usec`` (and, once it
streams, ``lsn_proc``, ``lsn_commit``, ``messageType``).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from connect_grpc.kernel.domain import ConnectorOffset
from connect_grpc.testing.cluster import wait_until
from connect_grpc.testing.postgres import PostgresServer
from tests.integration.helpers import read_all

POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
TABLE = "orders"
#: Debezium's source offset keys that say where in the WAL it is.
LSN_KEYS = ("lsn", "txId", "ts_usec")


@dataclass(frozen=True, slots=True)
class Names:
    """A connector's own topic prefix, replication slot and publication."""

    prefix: str
    slot: str
    publication: str

    @classmethod
    def fresh(cls, what: str) -> Names:
        run = uuid.uuid4().hex[:8]
        # slot names: lower-case letters, digits and underscores only
        return cls(f"{what}-{run}", f"{what}_{run}".replace("-", "_"),
                   f"{what}_{run}_publication".replace("-", "_"))

    @property
    def topic(self) -> str:
        """The topic Debezium writes the ``public.orders`` table's changes to."""
        return f"{self.prefix}.public.{TABLE}"


def postgres_config(
    postgres: PostgresServer, database: str, names: Names, **extra: str
) -> dict[str, str]:
    """Debezium PostgreSQL's config for the ``orders`` table of ``database``."""
    return {
        "connector.class": POSTGRES_CONNECTOR,
        "tasks.max": "1",
        **postgres.debezium_connection(database),
        "plugin.name": "pgoutput",
        "topic.prefix": names.prefix,
        "slot.name": names.slot,
        "publication.name": names.publication,
        "publication.autocreate.mode": "filtered",
        "table.include.list": f"public.{TABLE}",
        "key.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": "false",
        "value.converter": JSON_CONVERTER,
        "value.converter.schemas.enable": "false",
        **extra,
    }


@dataclass(frozen=True, slots=True)
class Change:
    """One record of the table's topic: a change event, or a tombstone (``op`` None)."""

    id: int
    op: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    #: The record's offset in its partition.
    offset: int

    @property
    def row(self) -> dict[str, Any] | None:
        return self.after if self.after is not None else self.before


def changes(bootstrap: str, topic: str) -> list[Change]:
    """The topic's records, as Debezium wrote them (read committed); none while the topic
    does not exist yet."""
    found = []
    for message in read_all(bootstrap, topic):
        key = json.loads(message.key())
        value = None if message.value() is None else json.loads(message.value())
        found.append(Change(
            id=int(key["id"]),
            op=None if value is None else value["op"],
            before=None if value is None else value["before"],
            after=None if value is None else value["after"],
            offset=int(message.offset()),
        ))
    return found


def wait_for_changes(
    bootstrap: str,
    topic: str,
    done: Callable[[list[Change]], bool],
    timeout: float,
    what: str,
    explain: Callable[[], str] = lambda: "",
) -> list[Change]:
    """The topic's records once ``done`` says they are all there; AssertionError naming
    ``what``, how many records there were and ``explain()`` (a worker's log) otherwise."""
    seen: list[list[Change]] = [[]]

    def ready() -> list[Change] | None:
        seen[0] = changes(bootstrap, topic)
        return seen[0] if done(seen[0]) else None

    try:
        found = wait_until(ready, timeout=timeout, interval=0.5)
    except TimeoutError:
        ops = Counter(c.op for c in seen[0])
        raise AssertionError(
            f"{what}: not there after {timeout:.0f} s ({len(seen[0])} records in {topic}, "
            f"by op {dict(ops)})\n{explain()}"
        ) from None
    assert found is not None
    return found


def ops_of(found: list[Change], row_id: int) -> list[str | None]:
    """The ops of one row's records, in the topic's order (None: a tombstone)."""
    return [c.op for c in found if c.id == row_id]


def debezium_offset(offsets: list[ConnectorOffset], names: Names) -> dict[str, Any] | None:
    """The connector's one source offset, if it has it: its partition is the server's."""
    if len(offsets) != 1:
        return None
    [only] = offsets
    assert only.partition == {"server": names.prefix}, only
    return dict(only.offset or {})


def streamed(offset: dict[str, Any]) -> bool:
    """Whether an offset is one of streaming (its snapshot done, a change processed)."""
    return "lsn_proc" in offset and not offset.get("snapshot")
