"""Etags on a cluster (AIP-154): a connector's etag from the config topic, and its offsets
version.

``herder.etags`` says how an etag is made from a connector's config, target state and offsets
version, the same way on both herders. On a cluster each worker computes it from its own
view of the config topic, where the leader keeps each connector's offsets version; the
leader checks a call's etag under the connector's lock, against its own view, before the
write it guards (a follower forwards the request, etag and all). Separate from the reads and
the mutations because both use it, and because moving the offsets version on is a write of
its own.
"""

from __future__ import annotations

from connect_grpc.herder.distributed_view import ClusterView
from connect_grpc.herder.etags import (
    connector_etag,
    offsets_version_in,
    offsets_version_key,
    require_etag,
)
from connect_grpc.herder.leader_writer import LeaderWriter
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
        """NotFoundError for an unknown connector, AbortedError for a stale ``etag``."""
        if etag:
            require_etag(name, etag, self.etag_in(self._view.snapshot(), name))

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
