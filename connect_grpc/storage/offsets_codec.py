"""Kafka Connect's offset record format: key ``["<connector>", {partition}]``, value the offset map.

Keys are serialized canonically (sorted keys, no spaces) so the same partition always
maps to the same bytes; integers stay exact (Python's json keeps arbitrary ints).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from connect_grpc.domain import OffsetMap

#: Made once: ``json.dumps`` with options builds an encoder per call, which is most of the
#: cost of one small record (and an alter may write tens of thousands).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def encode_key(connector: str, partition: OffsetMap) -> bytes:
    return _CANONICAL.encode([connector, dict(partition)]).encode()


def decode_key(raw: bytes) -> tuple[str, dict[str, Any]] | None:
    """The (connector, partition) of a key, or None when it is not in the expected shape."""
    try:
        parsed = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if (
        isinstance(parsed, list)
        and len(parsed) == 2
        and isinstance(parsed[0], str)
        and isinstance(parsed[1], dict)
    ):
        return parsed[0], parsed[1]
    return None


def encode_value(offset: Mapping[str, Any] | None) -> bytes | None:
    if offset is None:
        return None
    return _COMPACT.encode(dict(offset)).encode()


def decode_value(raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    parsed = json.loads(raw)
    return parsed if isinstance(parsed, dict) else None
