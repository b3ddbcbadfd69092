"""List pagination (AIP-158): page sizes, opaque page tokens, and a byte budget per page.

A token names the last connector of the previous page and the request's other fields, so
a page is stable under concurrent creates and deletes (names are sorted) and a token
cannot be replayed against a different request.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass

from connect_grpc.kernel.errors import InvalidArgumentError

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
#: What a default gRPC client accepts (4 MiB), less room for the envelope.
DEFAULT_CLIENT_RECEIVE_BYTES = 4 * 1024 * 1024
ENVELOPE_BYTES = 64 * 1024


def answer_budget(max_send_bytes: int) -> int:
    """The most bytes of listings one page may hold: it must reach a default client."""
    return min(max_send_bytes, DEFAULT_CLIENT_RECEIVE_BYTES) - ENVELOPE_BYTES


@dataclass(frozen=True, slots=True)
class PageRequest:
    """A validated page request: how many at most, after which name, for which query."""

    size: int
    after: str
    query: str

    @classmethod
    def parse(cls, page_size: int, page_token: str, query: str) -> PageRequest:
        """``query`` stands for the request's other fields (e.g. the expand flags)."""
        if page_size < 0:
            raise InvalidArgumentError.for_field(
                "page_size", f"must not be negative, got {page_size}"
            )
        size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        if not page_token:
            return cls(size, "", query)
        after, token_query = _decode(page_token)
        if token_query != query:
            raise InvalidArgumentError.for_field(
                "page_token",
                "the token was returned for a request with other fields; send the same "
                "fields with it, or start again without a token",
            )
        return cls(size, after, query)

    def candidates(self, sorted_names: Sequence[str]) -> list[str]:
        """The names after the token's, in order (more than fit: the caller stops early)."""
        return [name for name in sorted_names if name > self.after]

    def token_after(self, name: str) -> str:
        payload = json.dumps({"after": name, "query": self.query}, separators=(",", ":"))
        return base64.urlsafe_b64encode(payload.encode()).decode()


def _decode(token: str) -> tuple[str, str]:
    try:
        payload = json.loads(base64.urlsafe_b64decode(token.encode("ascii")))
        after, query = payload["after"], payload["query"]
    except (ValueError, KeyError, TypeError, UnicodeEncodeError, binascii.Error):
        raise InvalidArgumentError.for_field(
            "page_token", "not a token this server returned"
        ) from None
    if not isinstance(after, str) or not isinstance(query, str):
        raise InvalidArgumentError.for_field("page_token", "not a token this server returned")
    return after, query
