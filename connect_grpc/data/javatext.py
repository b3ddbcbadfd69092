"""Java's text of values and Java's integer casts, where Kafka Connect's behaviour shows them
(``Struct.toString``, ``StringConverter``, ``Values``, number narrowing)."""

from __future__ import annotations

import decimal
import math
from typing import Any


def wrap_signed(value: int, bits: int) -> int:
    """``value`` narrowed to a signed ``bits``-bit integer, as a Java cast does
    (``(byte) 300`` is 44)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def java_double_str(value: float) -> str:
    """A double as Java's ``Double.toString`` writes it (``1.0``, ``1.0E20``, ``1.0E-5``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        text = repr(value)  # plain notation in this range
        return text if "." in text else text + ".0"
    # Scientific notation from repr's shortest round-trip digits: d.dddE<n>.
    shortest = decimal.Decimal(repr(magnitude))
    digits = "".join(map(str, shortest.as_tuple().digits)).rstrip("0") or "0"
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{shortest.adjusted()}"


def java_string(value: Any) -> str:
    """A value as Java's ``toString`` renders it (lists ``[a, b]``, maps ``{k=v}``,
    booleans ``true``, doubles ``1.0E20``, null ``null``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double_str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(java_string(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{java_string(k)}={java_string(v)}" for k, v in value.items()) + "}"
    return str(value)
