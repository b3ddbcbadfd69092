"""What JsonConverter's per-schema compilers share: the generated code and its cache.

The writers (:mod:`.json_writers`) and readers (:mod:`.json_readers`) of a struct schema are
Python functions generated from source, one expression per struct rather than one call per
field; this module compiles that source once per text and shares the code between
converters. It also holds the memo bound every per-schema cache keeps and the type tables
the generated expressions test against (which integer widths, which logical names). Kept
apart so the two directions share one code cache and neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable
from types import CodeType
from typing import Any, Final

from connect_grpc.data.schema import (
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
    Schema,
    Type,
)

_INT_BITS: Final = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}

Writer = Callable[[Any], Any]
Reader = Callable[[Any], Any]


def _generated(source: str, namespace: dict[str, Any], name: str) -> Callable[[Any], Any]:
    # Per-schema code: one expression per struct instead of one call per field, which is
    # most of a record's cost in Python. Only field names enter the source, as repr()s.
    exec(_compiled(source, name), namespace)
    function: Callable[[Any], Any] = namespace[name]
    return function


#: Compiled per-schema code by its source: converters made again for the same schemas (a
#: task restarted, each PreviewPipeline call) bind it to their own namespace without
#: compiling it again. The source names its bindings only, so the code is theirs to share.
_CODE_CACHE: dict[tuple[str, str], CodeType] = {}
_CODE_CACHE_SIZE = 512


def _compiled(source: str, name: str) -> CodeType:
    code = _CODE_CACHE.get((source, name))
    if code is None:
        code = compile(source, f"<json {name}>", "exec")
        if len(_CODE_CACHE) >= _CODE_CACHE_SIZE:
            _CODE_CACHE.clear()
        _CODE_CACHE[(source, name)] = code
    return code


def _remember(memo: dict[Schema, Any], schema: Schema, built: Any, size: int) -> None:
    # Nested schemas are memoised too; beyond a few times the cache size, start afresh
    # rather than grow without bound on a stream of ever-new schemas.
    if len(memo) >= size:
        memo.clear()
    memo[schema] = built


_PLAIN_JSON_TYPES: Final = frozenset(
    {Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.BOOLEAN, Type.STRING}
)
_LOGICAL_NAMES: Final = frozenset(
    {DECIMAL_LOGICAL_NAME, DATE_LOGICAL_NAME, TIME_LOGICAL_NAME, TIMESTAMP_LOGICAL_NAME}
)
