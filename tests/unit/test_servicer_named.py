"""The servicer's normalised connector name: the request itself when already normal (a big
AlterOffsetsRequest is not copied), else a copy, the caller's request left as it came."""

from __future__ import annotations

import pytest

from connect_grpc.api.servicer import _named
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.v1 import connect_pb2 as pb


def test_a_normal_name_keeps_the_request() -> None:
    request = pb.AlterOffsetsRequest(name="c1", offsets=[pb.ConnectorOffset()])
    assert _named(request) is request


def test_a_name_to_trim_gives_a_trimmed_copy() -> None:
    request = pb.AlterOffsetsRequest(name="  c1 ", offsets=[pb.ConnectorOffset()], etag="e")
    named = _named(request)
    assert named.name == "c1"
    assert named.etag == "e" and len(named.offsets) == 1
    assert request.name == "  c1 "


def test_a_blank_name_is_refused() -> None:
    with pytest.raises(InvalidArgumentError):
        _named(pb.ResetOffsetsRequest(name="  "))
