"""JSON text read as Kafka's Jackson reads it, for JsonConverter.

orjson parses first; what it cannot read (numbers beyond a double, leading zeros) or what
must stay exact (a decimal's digits: Jackson's USE_BIG_DECIMAL_FOR_FLOATS) goes through the
standard library's parser with ``decimal.Decimal`` fractions. Empty input is Jackson's
missing node. Also the JSON node kinds that Kafka's messages name (``NUMBER``,
``OBJECT``, ...). Separate because the value readers (:mod:`.json_readers`) and the
converter's envelope reading both parse through it, and it knows nothing of schemas.
"""

from __future__ import annotations

import decimal
import json
import re
from typing import Any, Final

import orjson

from connect_grpc.data.errors import DataError

_READ_FAILED: Final = "Converting byte[] to Kafka Connect data failed due to serialization error: "


class _ExactNumbersNeeded(Exception):
    """A decimal was met as a float: the JSON is parsed again with exact numbers (Jackson's
    USE_BIG_DECIMAL_FOR_FLOATS), which only decimals need, so only they pay for it."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"Non-standard token '{name}'")


def _loads(data: bytes, *, exact: bool = False) -> Any:
    """Parses JSON; ``exact`` keeps fractions as ``decimal.Decimal`` (Jackson's
    USE_BIG_DECIMAL_FOR_FLOATS) for decimals read as numbers. Empty input is Jackson's
    missing node (None here)."""
    if not data.strip():
        return _MISSING
    if not exact:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # numbers beyond a double and others: the exact parser decides
    return _loads_exact(data)


def _loads_payload(data: bytes, *, exact: bool) -> Any:
    if exact:
        return _loads_exact(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DataError(f"{_READ_FAILED}{exc}") from exc


def _loads_exact(data: bytes) -> Any:
    try:
        return _exact_json(data)
    except (ValueError, RecursionError) as exc:
        # Kafka's Jackson reads numbers with leading zeros (ALLOW_LEADING_ZEROS_FOR_NUMBERS)
        try:
            text = data.decode("utf-8")
            without_zeros = _without_leading_zeros(text)
            if without_zeros != text:
                return _exact_json(without_zeros)
        except (ValueError, RecursionError):
            pass
        raise DataError(f"{_READ_FAILED}{exc}") from exc


def _exact_json(data: bytes | str) -> Any:
    return json.loads(data, parse_float=decimal.Decimal, parse_constant=_reject_constant)


_STRING_LITERAL: Final = re.compile(r'"(?:[^"\\]|\\.)*"')
_LEADING_ZEROS: Final = re.compile(r"(?<![\w.])(-?)0+(?=\d)")


def _without_leading_zeros(text: str) -> str:
    """The JSON text with the leading zeros of its numbers removed (``0012`` → ``12``,
    ``-007`` → ``-7``), string literals untouched."""
    pieces: list[str] = []
    position = 0
    for literal in _STRING_LITERAL.finditer(text):
        pieces.append(_LEADING_ZEROS.sub(r"\1", text[position:literal.start()]))
        pieces.append(literal.group())
        position = literal.end()
    pieces.append(_LEADING_ZEROS.sub(r"\1", text[position:]))
    return "".join(pieces)


class _Missing:
    """Jackson's MissingNode: what empty input parses to."""


_MISSING: Final = _Missing()


def _node_type(value: Any) -> str:
    if value is None:
        return "NULL"
    if value is _MISSING:
        return "MISSING"
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int | float | decimal.Decimal):
        return "NUMBER"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, list):
        return "ARRAY"
    return "OBJECT"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool)
