"""Optimistic concurrency on connectors (AIP-154 etags).

A connector's etag is a short hash over a canonical encoding of what a client can change
through the API: its config, its target state and its *offsets version*, a token that
changes with every offsets change made through the API (AlterOffsets, ResetOffsets, and a
create, which may write initial offsets). Live offsets are left out on purpose: a running
connector commits offsets all the time, and an etag over them would refuse every
conditional write. Offsets can be changed through the API only while the connector is
STOPPED, so the version is exact for what a client can do. Task configs are left out too:
the connector generates them, no client writes them.

Every worker computes the etag the same way from its own view (a cluster's followers from
their config-topic snapshot), so a follower's GetConnector and the leader agree once both
have read the same records.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from connect_grpc.kernel.domain import TargetState
from connect_grpc.kernel.errors import AbortedError, NotFoundError

#: Hex digits of the etag: 64 bits of SHA-256, ample for telling one version from another.
ETAG_LENGTH = 16

#: Config-topic key prefix of a connector's offsets version on a cluster (the leader
#: writes ``{"version": N}`` after each offsets change and at each create). Not tombstoned
#: when the connector is deleted: a connector created again under the same name goes on
#: counting, so it never repeats an etag of its predecessor.
OFFSETS_VERSION_KEY_PREFIX = "connect-grpc-offsets-version-"


def connector_etag(
    name: str, config: Mapping[str, str], target: TargetState, offsets_version: str
) -> str:
    """The etag of a connector in this state: the same inputs give the same etag on every
    worker (keys sorted, compact JSON, UTF-8)."""
    canonical = json.dumps(
        {"name": name, "config": dict(config), "target": target.value,
         "offsets": offsets_version},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:ETAG_LENGTH]


def require_etag(name: str, given: str, current: str) -> None:
    """Nothing when ``given`` is empty (an unconditional write) or the connector's current
    etag; AbortedError carrying the current etag otherwise."""
    if given and given != current:
        raise AbortedError(
            f"etag: {given!r} is not the current etag of connector {name} (it changed since "
            f"it was read; the current etag is {current!r}): nothing was changed; read the "
            "connector again and retry with its etag",
            current,
        )


def no_connector_for_etag(name: str) -> NotFoundError:
    """The answer to a conditional PutConnectorConfig that would create the connector: an
    etag names a version of an existing connector (AIP-154), so there is none to match."""
    return NotFoundError(
        f"Connector {name} not found: etag was given, so the call only changes an existing "
        "connector; omit etag to create it"
    )


def offsets_version_key(name: str) -> str:
    return f"{OFFSETS_VERSION_KEY_PREFIX}{name}"


def offsets_version_in(extensions: Mapping[str, Any], name: str) -> int:
    """The connector's offsets version as the config topic holds it; 0 before any."""
    record = extensions.get(offsets_version_key(name))
    if isinstance(record, dict) and isinstance(record.get("version"), int):
        return int(record["version"])
    return 0
