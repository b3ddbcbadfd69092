"""Plugin versions and version ranges as Kafka Connect reads them (KIP-891): Maven's
version ordering and ``VersionRange`` syntax, and the choice of one version among the
installed ones.

A ``*.plugin.version`` value is a Maven version range: ``[1.0,2.0)``, ``(,1.5]``,
``[2.0,)``, ``[1.2]``, or several ranges (``(,1.0],[1.2,)``). A bare version (``1.2``),
which Maven reads as a soft requirement, is a hard one here as in Kafka Connect's
``PluginUtils.connectorVersionRequirement``: exactly that version. No value, or
``latest``, chooses the latest installed version.

The ordering is Maven's ``ComparableVersion`` for the versions plugins carry: numbers
compare as numbers (``1.10`` > ``1.9``), trailing zeros do not count (``1.0`` = ``1``), and
a qualifier orders below the release (``alpha`` < ``beta`` < ``milestone`` < ``rc`` <
``snapshot`` < release < ``sp`` < any other qualifier, the others alphabetically).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from connect_grpc import __version__

__all__ = [
    "CONNECTOR_VERSION",
    "LATEST",
    "NoMatchingVersionError",
    "PluginVersion",
    "VersionRange",
    "VersionSpecError",
    "instance_version",
    "select_version",
    "version_requirement",
]

#: The value that asks for the latest version, as no value does.
LATEST = "latest"

#: The connector config key choosing the connector's version.
CONNECTOR_VERSION = "connector.plugin.version"

_QUALIFIERS = {"alpha": 0, "a": 0, "beta": 1, "b": 1, "milestone": 2, "m": 2, "rc": 3,
               "cr": 3, "snapshot": 4, "": 5, "ga": 5, "final": 5, "release": 5, "sp": 6}
_TOKEN = re.compile(r"\d+|[^\W\d_]+")


def _items(text: str) -> tuple[tuple[int, int, str], ...]:
    """Comparable items of a version: (0, number, "") for a number, (-1, rank, name) for a
    qualifier, trailing zeros and release qualifiers dropped (they compare as nothing)."""
    items: list[tuple[int, int, str]] = []
    for token in _TOKEN.findall(text.lower()):
        if token.isdigit():
            items.append((0, int(token), ""))
        else:
            rank = _QUALIFIERS.get(token, 7)
            items.append((-1, rank, token if rank == 7 else ""))
    while items and items[-1] in ((0, 0, ""), (-1, 5, "")):
        items.pop()
    return tuple(items)


_NOTHING = (0, 0, "")


def _compare_item(left: tuple[int, int, str], right: tuple[int, int, str]) -> int:
    if left[0] != right[0]:
        # a number orders above any qualifier, except that nothing (a missing item) is
        # the release, above the pre-release qualifiers and below sp and the unknown ones
        if left == _NOTHING:
            return -_compare_item(right, left)
        if right == _NOTHING and left[0] == -1:
            return -1 if left[1] < 5 else 1
        return 1 if left[0] > right[0] else -1
    return (left[1:] > right[1:]) - (left[1:] < right[1:])


@functools.total_ordering
@dataclass(frozen=True)
class PluginVersion:
    """A plugin's version, ordered as Maven orders artifact versions."""

    text: str

    @functools.cached_property
    def _key(self) -> tuple[tuple[int, int, str], ...]:
        return _items(self.text)

    def compare(self, other: PluginVersion) -> int:
        left, right = self._key, other._key
        for index in range(max(len(left), len(right))):
            a = left[index] if index < len(left) else _NOTHING
            b = right[index] if index < len(right) else _NOTHING
            if (order := _compare_item(a, b)) != 0:
                return order
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PluginVersion) and self.compare(other) == 0

    def __hash__(self) -> int:
        return hash(self._key)

    def __lt__(self, other: PluginVersion) -> bool:
        return self.compare(other) < 0

    def __str__(self) -> str:
        return self.text


class VersionSpecError(ValueError):
    """A version range that does not parse; the message is Maven's."""


@dataclass(frozen=True)
class _Restriction:
    lower: PluginVersion | None
    lower_inclusive: bool
    upper: PluginVersion | None
    upper_inclusive: bool

    def contains(self, version: PluginVersion) -> bool:
        if self.lower is not None:
            order = version.compare(self.lower)
            if order < 0 or (order == 0 and not self.lower_inclusive):
                return False
        if self.upper is not None:
            order = version.compare(self.upper)
            if order > 0 or (order == 0 and not self.upper_inclusive):
                return False
        return True

    def __str__(self) -> str:
        return (
            f"{'[' if self.lower_inclusive else '('}{self.lower or ''},"
            f"{self.upper or ''}{']' if self.upper_inclusive else ')'}"
        )


def _restriction(spec: str, whole: str) -> _Restriction:
    lower_inclusive, upper_inclusive = spec[0] == "[", spec[-1] == "]"
    inner = spec[1:-1].strip()
    if "," not in inner:
        if not (lower_inclusive and upper_inclusive):
            raise VersionSpecError(f"Single version must be surrounded by []: {whole}")
        exact = PluginVersion(inner)
        return _Restriction(exact, True, exact, True)
    low_text, _, high_text = (part.strip() for part in inner.partition(","))
    if "," in high_text:
        raise VersionSpecError(f"Invalid version range: {whole}")
    lower = PluginVersion(low_text) if low_text else None
    upper = PluginVersion(high_text) if high_text else None
    if lower is not None and upper is not None:
        if upper < lower:
            raise VersionSpecError(f"Range defies version ordering: {whole}")
        if upper == lower and not (lower_inclusive and upper_inclusive):
            raise VersionSpecError(f"Range cannot have identical boundaries: {whole}")
    return _Restriction(lower, lower_inclusive, upper, upper_inclusive)


@dataclass(frozen=True)
class VersionRange:
    """Maven's ``VersionRange``: restrictions (a version must meet one), or a soft
    requirement (a bare version, no restriction)."""

    restrictions: tuple[_Restriction, ...]
    recommended: PluginVersion | None = None

    @classmethod
    def parse(cls, spec: str) -> VersionRange:
        """Maven's ``VersionRange.createFromVersionSpec``."""
        text = spec.strip()
        if not text:
            raise VersionSpecError(f"Invalid version range: {spec}")
        if text[0] not in "[(":
            if any(ch in text for ch in "[]()"):
                raise VersionSpecError(f"Invalid version range: {spec}")
            return cls((), PluginVersion(text))
        restrictions: list[_Restriction] = []
        rest = text
        while rest.startswith(("[", "(")):
            ends = [i for i in (rest.find("]"), rest.find(")")) if i >= 0]
            if not ends:
                raise VersionSpecError(f"Unbounded range: {spec}")
            end = min(ends)
            restriction = _restriction(rest[: end + 1], spec)
            if restrictions:
                previous = restrictions[-1]
                if (previous.upper is None or restriction.lower is None
                        or restriction.lower < previous.upper
                        or (restriction.lower == previous.upper
                            and previous.upper_inclusive and restriction.lower_inclusive)):
                    raise VersionSpecError(f"Ranges overlap: {spec}")
            restrictions.append(restriction)
            rest = rest[end + 1:].strip()
            if rest.startswith(","):
                rest = rest[1:].strip()
        if rest:
            raise VersionSpecError(
                f"Only fully-qualified sets allowed in multiple set scenario: {spec}"
            )
        return cls(tuple(restrictions))

    def has_restrictions(self) -> bool:
        return bool(self.restrictions)

    def contains(self, version: PluginVersion) -> bool:
        if not self.restrictions:
            return self.recommended is None or version == self.recommended
        return any(restriction.contains(version) for restriction in self.restrictions)

    def __str__(self) -> str:
        if not self.restrictions:
            return str(self.recommended or "")
        return ",".join(str(restriction) for restriction in self.restrictions)


def version_requirement(spec: str | None) -> VersionRange | None:
    """The range a ``*.plugin.version`` value asks for, as Kafka Connect's
    ``PluginUtils.connectorVersionRequirement``: None (the latest) without a value or with
    ``latest``; a bare version as the hard range ``[version]``.

    Raises:
        VersionSpecError: the value does not parse (Maven's message).
    """
    if spec is None or spec == LATEST:
        return None
    text = spec.strip()
    parsed = VersionRange.parse(text)
    if parsed.has_restrictions():
        return parsed
    return VersionRange.parse(f"[{text}]")


class NoMatchingVersionError(LookupError):
    """No installed version of a plugin is in the range asked for; the message is Kafka
    Connect's."""

    def __init__(self, plugin: str, wanted: VersionRange, available: Sequence[str]) -> None:
        self.available = tuple(available)
        super().__init__(
            f"Plugin {plugin} not found that matches the version range {wanted}, "
            f"available versions: [{', '.join(available)}]"
        )

    @property
    def message(self) -> str:
        return str(self.args[0])


T = TypeVar("T")


def select_version(
    plugin: str, candidates: Sequence[tuple[str, T]], wanted: VersionRange | None
) -> tuple[str, T]:
    """The latest of ``candidates`` (version, plugin) that ``wanted`` allows (any with
    None); the first listed wins between equal versions.

    Raises:
        NoMatchingVersionError: none is in the range (or there is no candidate).
    """
    allowed = [
        (version, item) for version, item in candidates
        if wanted is None or wanted.contains(PluginVersion(version))
    ]
    if not allowed:
        available = sorted({v for v, _ in candidates}, key=PluginVersion)
        raise NoMatchingVersionError(plugin, wanted or VersionRange(()), available)
    best = allowed[0]
    for candidate in allowed[1:]:
        if PluginVersion(candidate[0]) > PluginVersion(best[0]):
            best = candidate
    return best


def instance_version(plugin: object) -> str:
    """A plugin's ``version()`` if it has one, else the package's version (Kafka Connect's
    built-ins report the Kafka version they ship with)."""
    version = getattr(plugin, "version", None)
    return str(version()) if callable(version) else __version__
