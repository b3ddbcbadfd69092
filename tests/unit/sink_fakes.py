"""A sink task that does nothing, for the unit tests of what runs around a sink's plugin
(its runner, its group member, its record loop)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from connect_grpc.connectors.api import SinkRecord, SinkTask


class IdleSink(SinkTask):
    """Starts, takes every batch and stops without doing anything."""

    def start(self, config: Mapping[str, str]) -> None:
        return None

    def put(self, records: Sequence[SinkRecord]) -> None:
        return None

    def stop(self, connector_deleted: bool = False) -> None:
        return None
