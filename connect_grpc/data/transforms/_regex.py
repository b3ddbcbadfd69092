"""Java regular expressions and ``Matcher.replaceFirst`` replacement strings in Python.

Java's syntax and Python's ``re`` agree on what topic patterns use (classes, groups,
quantifiers, anchors, look-arounds, possessive quantifiers); the one spelling that differs,
the named group ``(?<name>...)``, is translated to ``(?P<name>...)``. Java-only constructs
(``\\p{...}`` classes, ``\\G``, …) fail to compile with Python's message.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

_JAVA_NAMED_GROUP = re.compile(r"(?<!\\)\(\?<(?=[A-Za-z])")


def compile_java(pattern: str) -> re.Pattern[str]:
    """Compiles a Java regex; raises re.error when Python cannot compile it, or would read
    it differently: Java's class operators (``[a-z&&[^e]]``) are refused, not taken literally
    (Python warns about them with a FutureWarning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        try:
            return re.compile(_JAVA_NAMED_GROUP.sub("(?P<", pattern))
        except FutureWarning as warning:
            raise re.error(f"Java character class operators are not supported ({warning})",
                           pattern) from None


def regex_error(pattern: str) -> str | None:
    """Kafka's ``RegexValidator`` message (without its ``Invalid value`` prefix), or None."""
    try:
        compile_java(pattern)
    except re.error as exc:
        return f"Invalid regex: {exc}"
    return None


@dataclass(frozen=True, slots=True)
class _GroupRef:
    group: int | str


class JavaReplacement:
    """A replacement string with Java's syntax: ``$n`` and ``${name}`` refer to groups,
    ``\\x`` is a literal ``x``. A ``$n`` takes as many digits as still name a group of the
    pattern, as Java does. Raises ValueError at construction for a reference to a group
    the pattern does not have (Java fails on the first matching record instead)."""

    def __init__(self, template: str, pattern: re.Pattern[str]) -> None:
        self._parts = _parse_template(template, pattern)

    def expand(self, match: re.Match[str]) -> str:
        return "".join(
            part if isinstance(part, str) else (match.group(part.group) or "")
            for part in self._parts
        )


def _parse_template(template: str, pattern: re.Pattern[str]) -> list[str | _GroupRef]:
    parts: list[str | _GroupRef] = []
    literal: list[str] = []
    index = 0
    while index < len(template):
        char = template[index]
        if char == "\\":
            if index + 1 >= len(template):
                raise ValueError("character to be escaped is missing")
            literal.append(template[index + 1])
            index += 2
        elif char == "$":
            if literal:
                parts.append("".join(literal))
                literal = []
            reference, index = _read_reference(template, index + 1, pattern)
            parts.append(reference)
        else:
            literal.append(char)
            index += 1
    if literal:
        parts.append("".join(literal))
    return parts


def _read_reference(template: str, index: int, pattern: re.Pattern[str]) -> tuple[_GroupRef, int]:
    if index >= len(template):
        raise ValueError("Illegal group reference: group index is missing")
    if template[index] == "{":
        end = template.find("}", index)
        if end < 0:
            raise ValueError("named capturing group is missing trailing '}'")
        name = template[index + 1:end]
        if name not in pattern.groupindex:
            raise ValueError(f"No group with name {{{name}}}")
        return _GroupRef(name), end + 1
    if not template[index].isdigit():
        raise ValueError("Illegal group reference")
    group = int(template[index])
    if group > pattern.groups:
        raise ValueError(f"No group {group}")
    index += 1
    while index < len(template) and template[index].isdigit():
        longer = group * 10 + int(template[index])
        if longer > pattern.groups:
            break
        group = longer
        index += 1
    return _GroupRef(group), index
