"""Java ``SimpleDateFormat`` patterns, formatted and parsed in UTC, for TimestampConverter
and TimestampRouter (both fix the time zone to UTC, as Kafka's do).

Supported pattern letters (the ones timestamp formats use):

=====  =========================================================================
``G``  era, always ``AD``
``y``  year (``yy``: two digits, parsed in Java's 80-years-before/20-after window)
``M``  month: ``M``/``MM`` number, ``MMM`` ``Jan``, ``MMMM`` ``January`` (``L`` alike)
``d``  day of month; ``D`` day of year
``E``  day name: ``EEE`` ``Mon``, ``EEEE`` ``Monday``; ``u`` day number (1 = Monday)
``a``  ``AM``/``PM``
``H``  hour 0-23; ``k`` 1-24; ``K`` 0-11; ``h`` 1-12
``m``  minute; ``s`` second; ``S`` millisecond (zero-padded to the count)
``z``  ``UTC``; ``Z`` ``+0000``; ``X``/``XX``/``XXX`` ``Z`` (any offset when parsing)
=====  =========================================================================

Quoted text (``'T'``, ``''`` for a quote) and any non-letter are literal. The week-based
letters ``Y``, ``w``, ``W`` and ``F`` are refused, as is any letter Java does not know.
Parsing is Java's default (lenient) parse: numbers may overflow into the next unit
(month 13 is January of the next year), and text after the pattern is ignored.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

_JAVA_LETTERS = set("GyYMLwWDdFEuaHkKhmsSzZX")
_UNSUPPORTED = set("YwWF")
_NUMERIC = set("yMLdDuHkKhmsS")
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class PatternError(ValueError):
    """A pattern Java would refuse, or one using a letter not supported here."""


@dataclass(frozen=True, slots=True)
class _Field:
    letter: str
    count: int

    @property
    def is_numeric(self) -> bool:
        return self.letter in _NUMERIC and not (self.letter in "ML" and self.count >= 3)


_Token = str | _Field


def _tokenize(pattern: str) -> list[_Token]:
    tokens: list[_Token] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "'":
            index = _read_quoted(pattern, index, tokens)
        elif char.isascii() and char.isalpha():
            if char not in _JAVA_LETTERS:
                raise PatternError(f"Illegal pattern character '{char}'")
            if char in _UNSUPPORTED:
                raise PatternError(f"pattern letter '{char}' (week-based) is not supported")
            end = index
            while end < len(pattern) and pattern[end] == char:
                end += 1
            tokens.append(_Field(char, end - index))
            index = end
        else:
            tokens.append(char)
            index += 1
    return tokens


def _read_quoted(pattern: str, start: int, tokens: list[_Token]) -> int:
    if pattern[start + 1:start + 2] == "'":
        tokens.append("'")
        return start + 2
    text: list[str] = []
    index = start + 1
    while True:
        if index >= len(pattern):
            raise PatternError("Unterminated quote")
        if pattern[index] == "'":
            if pattern[index + 1:index + 2] == "'":
                text.append("'")
                index += 2
                continue
            tokens.append("".join(text))
            return index + 1
        text.append(pattern[index])
        index += 1


class JavaDateFormat:
    """One compiled pattern. Raises PatternError for a pattern it cannot honour."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._tokens = _tokenize(pattern)
        self._regex = re.compile(self._parse_regex(), re.IGNORECASE)

    # --- formatting ---------------------------------------------------------------------

    def format(self, moment: dt.datetime) -> str:
        moment = moment.astimezone(dt.UTC) if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
        return "".join(
            token if isinstance(token, str) else _format_field(token, moment)
            for token in self._tokens
        )

    def format_millis(self, epoch_ms: int) -> str:
        return self.format(_EPOCH + dt.timedelta(milliseconds=epoch_ms))

    # --- parsing ------------------------------------------------------------------------

    def _parse_regex(self) -> str:
        parts: list[str] = []
        for position, token in enumerate(self._tokens):
            if isinstance(token, str):
                parts.append(re.escape(token))
                continue
            following = self._tokens[position + 1] if position + 1 < len(self._tokens) else None
            abutting = isinstance(following, _Field) and following.is_numeric
            parts.append(f"(?P<f{position}>{_field_regex(token, abutting)})")
        return "".join(parts)

    def parse(self, text: str) -> dt.datetime:
        """The UTC moment ``text`` stands for; ValueError when it does not match."""
        match = self._regex.match(text)
        if match is None:
            raise ValueError(f"Unparseable date: \"{text}\"")
        parsed: dict[str, int] = {}
        offset_minutes = 0
        for position, token in enumerate(self._tokens):
            if isinstance(token, str):
                continue
            raw = match.group(f"f{position}")
            if token.letter in "zZX":
                offset_minutes = _offset_minutes(raw)
            else:
                parsed[token.letter] = _field_number(token, raw)
        return _compose(parsed) - dt.timedelta(minutes=offset_minutes)

    def parse_millis(self, text: str) -> int:
        return to_epoch_millis(self.parse(text))


def to_epoch_millis(moment: dt.datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def from_epoch_millis(epoch_ms: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(milliseconds=epoch_ms)


def _format_field(token: _Field, moment: dt.datetime) -> str:
    letter, count = token.letter, token.count
    if letter == "G":
        return "AD"
    if letter == "y":
        return f"{moment.year % 100:02d}" if count == 2 else f"{moment.year:0{count}d}"
    if letter in "ML":
        if count >= 4:
            return _MONTHS[moment.month - 1]
        if count == 3:
            return _MONTHS[moment.month - 1][:3]
        return f"{moment.month:0{count}d}"
    if letter == "E":
        name = _DAYS[moment.weekday()]
        return name if count >= 4 else name[:3]
    if letter == "a":
        return "AM" if moment.hour < 12 else "PM"
    if letter in "zZX":
        return {"z": "UTC", "Z": "+0000", "X": "Z"}[letter]
    number = {
        "d": moment.day,
        "D": moment.timetuple().tm_yday,
        "u": moment.isoweekday(),
        "H": moment.hour,
        "k": moment.hour or 24,
        "K": moment.hour % 12,
        "h": moment.hour % 12 or 12,
        "m": moment.minute,
        "s": moment.second,
        "S": moment.microsecond // 1000,
    }[letter]
    return f"{number:0{count}d}"


def _field_regex(token: _Field, abutting: bool) -> str:
    if token.is_numeric:
        return rf"\d{{{token.count}}}" if abutting else r"\d+"
    if token.letter in "ML":
        return "|".join(_MONTHS + [m[:3] for m in _MONTHS])
    if token.letter == "E":
        return "|".join(_DAYS + [d[:3] for d in _DAYS])
    if token.letter == "G":
        return "AD|BC"
    if token.letter == "a":
        return "AM|PM"
    return r"Z|UTC|GMT(?:[+-]\d{1,2}(?::?\d{2})?)?|[+-]\d{2}(?::?\d{2})?"


def _field_number(token: _Field, raw: str) -> int:
    if token.letter in "ML" and not token.is_numeric:
        lowered = raw.lower()
        return next(i + 1 for i, name in enumerate(_MONTHS)
                    if lowered in (name.lower(), name[:3].lower()))
    if token.letter == "E":
        return 0
    if token.letter == "G":
        return 0
    if token.letter == "a":
        return 12 if raw.upper() == "PM" else 0
    number = int(raw)
    if token.letter == "y" and token.count == 2 and len(raw) == 2:
        return _two_digit_year(number)
    return number


def _two_digit_year(two_digits: int) -> int:
    start = dt.datetime.now(dt.UTC).year - 80
    year = start - start % 100 + two_digits
    return year + 100 if year < start else year


def _offset_minutes(raw: str) -> int:
    text = raw.upper()
    if text in ("Z", "UTC", "GMT"):
        return 0
    text = text.removeprefix("GMT")
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours = int(digits[:-2] if len(digits) > 2 else digits)
    minutes = int(digits[-2:]) if len(digits) > 2 else 0
    return sign * (hours * 60 + minutes)


def _compose(parsed: dict[str, int]) -> dt.datetime:
    """Adds the parsed fields up from the epoch, as Java's lenient calendar does."""
    year = parsed.get("y", 1970)
    month = parsed.get("M", parsed.get("L", 1)) - 1
    year, month = year + month // 12, month % 12
    base = dt.datetime(year, month + 1, 1, tzinfo=dt.UTC)
    if "d" in parsed or "D" not in parsed:
        day_offset = parsed.get("d", 1) - 1
    else:
        base = dt.datetime(year, 1, 1, tzinfo=dt.UTC)
        day_offset = parsed["D"] - 1
    return base + dt.timedelta(
        days=day_offset,
        hours=_hour(parsed),
        minutes=parsed.get("m", 0),
        seconds=parsed.get("s", 0),
        milliseconds=parsed.get("S", 0),
    )


def _hour(parsed: dict[str, int]) -> int:
    pm = parsed.get("a", 0)
    if "H" in parsed:
        return parsed["H"]
    if "k" in parsed:
        return 0 if parsed["k"] == 24 else parsed["k"]
    if "K" in parsed:
        return parsed["K"] + pm
    if "h" in parsed:
        return (0 if parsed["h"] == 12 else parsed["h"]) + pm
    return 0
