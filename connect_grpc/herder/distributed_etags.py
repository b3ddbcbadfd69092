"""Etags on a cluster (AIP-154): a connector's etag from the config topic, and its offsets
version.

``herder.etags`` says how an etag is made from a connector's config, target state and offsets
version, the same way on both herders. On a cluster each worker computes it from its own
view of the config topic, where the leader keeps each connector's offsets version; the
leader checks a call's etag under the connector's lock, against its own view, before the
write it guards (a follower forwards the request, etag and all), and again right before the
write commits (decision 0100: an unconditional pause or resume is written by whichever
worker takes it, outside that lock). Separate from the reads and the mutations because both
use it, and because moving the offsets version on is a write of its own.
"""

from __future__ import annotations

from connect_grpc.herder.distributed_view import LEADER_CALL_TIMEOUT_S, ClusterView
from connect_grpc.herder.etags import (
    connector_etag,
    offsets_version_in,
    offsets_version_key,
    require_etag,
)
from connect_grpc.herder.leader_writer import LeaderWriter
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import TargetState
from connect_grpc.storage.config_codec import RawRecord, extension_record
from connect_grpc.storage.config_snapshot import ConfigSnapshot


class ClusterEtags:
    """Connectors' etags by this worker's view; the leader moves offsets versions on."""

    def __init__(self, view: ClusterView, writer: LeaderWriter) -> None:
        self._view = view
        self._writer = writer

    def etag_in(self, snapshot: ConfigSnapshot, name: str) -> str:
        config = self._view.config_of(snapshot, name)
        target = snapshot.target_state(name) or TargetState.STARTED
        version = offsets_version_in(snapshot.extensions, name)
        return connector_etag(name, config, target, str(version))

    def require(self, name: str, etag: str) -> None:
        """NotFoundError for an unknown connector, AbortedError for a stale ``etag``.

        An etag this view does not show is checked again once the view has read the config
        topic to its end: it may be the answer of a pause or resume another worker wrote
        itself (decision 0100), acknowledged before this view read it."""
        if not etag:
            return
        current = self.etag_in(self._view.snapshot(), name)
        if etag != current:
            self._view.configs.refresh(deadline.remaining(LEADER_CALL_TIMEOUT_S))
            current = self.etag_in(self._view.snapshot(), name)
        require_etag(name, etag, current)

    def require_in(self, snapshot: ConfigSnapshot, name: str, etag: str) -> None:
        """As :meth:`require`, against ``snapshot`` as it is (the view right before a
        conditional write commits: ``LeaderWriter.write``'s guard)."""
        require_etag(name, etag, self.etag_in(snapshot, name))

    @staticmethod
    def next_offsets_version(
        snapshot: ConfigSnapshot, name: str
    ) -> tuple[str, list[RawRecord]]:
        """The connector's next offsets version and the record that writes it."""
        version = offsets_version_in(snapshot.extensions, name) + 1
        return str(version), [extension_record(offsets_version_key(name), {"version": version})]

    def offsets_changed(self, name: str) -> str:
        """(After a successful offsets change) Writes the connector's next offsets version,
        unfenced (one record: a deposed leader's is refused, and its caller's retry through
        the new leader changes the same offsets again); returns the new etag."""
        _, records = self.next_offsets_version(self._view.snapshot(), name)
        self._writer.write_in_term(records, None)
        return self.etag_in(self._view.snapshot(), name)
