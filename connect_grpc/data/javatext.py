"""Java's text of values and Java's integer casts, where Kafka Connect's behaviour shows them
(``Struct.toString``, ``StringConverter``, ``Values``, number narrowing)."""

from __future__ import annotations

import decimal
import math
import struct
from typing import Any


def wrap_signed(value: int, bits: int) -> int:
    """``value`` narrowed to a signed ``bits``-bit integer, as a Java cast does
    (``(byte) 300`` is 44)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def java_double_str(value: float) -> str:
    """A double as Java's ``Double.toString`` writes it (``1.0``, ``1.0E20``, ``1.0E-5``)."""
    return _java_layout(value, repr(abs(value)) if math.isfinite(value) else "")


def java_float_str(value: float) -> str:
    """A FLOAT32 value as Java's ``Float.toString`` writes it: the shortest digits that give
    back the same single-precision number (a float read as 0.10000000149011612 is ``0.1``)."""
    if not math.isfinite(value):
        return java_double_str(value)
    single = to_single(value)
    if math.isinf(single):
        return java_double_str(single)
    magnitude = abs(single)
    for precision in range(1, 10):
        digits = f"{magnitude:.{precision}g}"
        if to_single(float(digits)) == magnitude:
            return _java_layout(single, digits)
    return _java_layout(single, repr(magnitude))


def to_single(value: float) -> float:
    """The double nearest to ``value`` in single precision (Java's ``(float)``)."""
    try:
        return float(_SINGLE.unpack(_SINGLE.pack(value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


_SINGLE = struct.Struct(">f")


def _java_layout(value: float, digits_text: str) -> str:
    """Java's layout of a float/double whose magnitude's shortest digits are
    ``digits_text``: plain from 10^-3 to 10^7 (at least one decimal), else ``d.dddE<n>``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    shortest = decimal.Decimal(digits_text)
    if 1e-3 <= abs(value) < 1e7:
        text = format(shortest, "f")
        return sign + (text if "." in text else text + ".0")
    digits = "".join(map(str, shortest.as_tuple().digits)).rstrip("0") or "0"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{shortest.adjusted()}"


def java_string(value: Any) -> str:
    """A value as Java's ``toString`` renders it (lists ``[a, b]``, maps ``{k=v}``,
    booleans ``true``, doubles ``1.0E20``, null ``null``)."""
    if value.__class__ is str:
        return value
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
