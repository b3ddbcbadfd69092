"""Server interceptors wrap the handler of each call; these keep the wrapped form per method,
so that it is built once per handler rather than once per call (on every call's path)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class WrappedHandlers:
    """Per method, the handler last seen and its wrapped form. A method's registered handler
    never changes once the server runs; another one (a relay once this worker stops
    leading) gets a wrapped form of its own. Only methods with a handler are kept, so names
    callers make up never fill it."""

    def __init__(self, wrap: Callable[[Any, str], Any]) -> None:
        self._wrap = wrap
        self._by_method: dict[str, tuple[Any, Any]] = {}

    def __contains__(self, method: str) -> bool:
        return method in self._by_method

    def of(self, method: str, handler: Any) -> Any:
        """``handler`` of ``method``, wrapped (built on first sight of that handler)."""
        known = self._by_method.get(method)
        if known is not None and known[0] is handler:
            return known[1]
        wrapped = self._wrap(handler, method)
        self._by_method[method] = (handler, wrapped)
        return wrapped
