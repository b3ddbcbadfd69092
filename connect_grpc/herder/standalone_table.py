"""The StandaloneHerder's table of connectors: the truth its instances are reconciled to.

Standalone mode keeps connectors in memory only: each one's config, target state, task
configs and offsets version, in one map under the herder lock, and the etags computed from
it (AIP-154). Separate from the herder so that the mutations, the reads and the instances'
reconciliation (``standalone_instances``) share one small object for that state, with the
rule of its lock written once.

Lock: the herder lock (``lock``, a reentrant lock the herder creates and passes in) guards
the map, its entries and ``stopped``; it is held for dictionary work only, never across
plugin, Spark or Kafka I/O. Callers of the etag checks hold the connector's lock, so that no
write can come between a check and the write it guards.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from dataclasses import dataclass, field

from connect_grpc.herder.etags import connector_etag, require_etag
from connect_grpc.kernel.domain import ConnectorType, TargetState, TaskId
from connect_grpc.kernel.errors import NotFoundError


@dataclass(slots=True)
class ConnectorState:
    """What the herder knows of one connector: the truth its instances are reconciled to."""

    config: dict[str, str]
    target: TargetState
    type: ConnectorType
    #: Changes with each offsets change made through the API (``herder.etags``).
    offsets_version: str = ""
    task_configs: list[dict[str, str]] = field(default_factory=list)

    def task_ids(self, name: str) -> list[TaskId]:
        return [TaskId(name, index) for index in range(len(self.task_configs))]


class ConnectorTable:
    """The connectors by name, under the herder lock (each helper takes it only for its own
    map work; ``state`` expects the caller to hold it)."""

    def __init__(self, lock: threading.RLock) -> None:
        #: The herder lock.
        self.lock = lock
        self.connectors: dict[str, ConnectorState] = {}
        #: Set once the herder stops: no background restart or reconfiguration starts then.
        self.stopped = False
        # offsets versions are unique to this process (standalone keeps connectors in
        # memory only): a connector created again never repeats an etag of its predecessor
        self._process_token = uuid.uuid4().hex[:8]
        self._offsets_versions = itertools.count(1)

    def state(self, name: str) -> ConnectorState:
        """The connector's state; the caller holds the herder lock."""
        state = self.connectors.get(name)
        if state is None:
            raise NotFoundError(f"Connector {name} not found")
        return state

    # etags (AIP-154; callers of the checks hold the connector's lock, so no write can
    # come between a check and the write it guards)

    @staticmethod
    def etag(name: str, state: ConnectorState) -> str:
        return connector_etag(name, state.config, state.target, state.offsets_version)

    def current_etag(self, name: str) -> str:
        with self.lock:
            return self.etag(name, self.state(name))

    def require_etag(self, name: str, etag: str) -> None:
        """NotFoundError for an unknown connector, AbortedError for a stale ``etag``."""
        if etag:
            require_etag(name, etag, self.current_etag(name))

    def next_offsets_version(self) -> str:
        return f"{self._process_token}.{next(self._offsets_versions)}"

    def offsets_changed(self, name: str) -> str:
        """Moves the connector's offsets version on; returns its new etag."""
        with self.lock:
            state = self.state(name)
            state.offsets_version = self.next_offsets_version()
            return self.etag(name, state)

    def require(self, name: str) -> None:
        with self.lock:
            self.state(name)

    def exists(self, name: str) -> bool:
        with self.lock:
            return name in self.connectors

    def set_target(self, name: str, target: TargetState) -> list[TaskId]:
        """Sets the target state; returns the connector's current task ids."""
        with self.lock:
            state = self.state(name)
            state.target = target
            return state.task_ids(name)
