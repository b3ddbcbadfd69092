"""A dict and a set that note every change, so that a snapshot built from them can reuse
its previous immutable copy of those that did not change (the config store's
:class:`~connect_grpc.storage.config_snapshot.SnapshotBuilder`: at a thousand connectors,
copying every map on each record would cost more than the change itself).

Every method of ``dict`` and ``set`` that can change the contents is overridden to set
``changed`` (the unit tests check that none is missing); a method that is asked to change
nothing (popping an absent key, ``setdefault`` of a present one, clearing an empty one)
leaves it as it is. The reader of ``changed`` clears it once it has copied the contents.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class TrackedDict(dict[K, V]):
    """A dict whose ``changed`` is set by every change of its contents (True when new)."""

    __slots__ = ("changed",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.changed = True

    def __setitem__(self, key: K, value: V) -> None:
        super().__setitem__(key, value)
        self.changed = True

    def __delitem__(self, key: K) -> None:
        super().__delitem__(key)
        self.changed = True

    def __ior__(self, other: Any) -> TrackedDict[K, V]:  # type: ignore[override, misc]
        super().__ior__(other)
        self.changed = True
        return self

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self:
            self.changed = True
        return super().pop(key, *default)

    def popitem(self) -> tuple[K, V]:
        item = super().popitem()
        self.changed = True
        return item

    def setdefault(self, key: K, default: Any = None) -> Any:
        if key not in self:
            self.changed = True
        return super().setdefault(key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        self.changed = True

    def clear(self) -> None:
        if self:
            self.changed = True
        super().clear()


class TrackedSet(set[T]):
    """A set whose ``changed`` is set by every change of its contents (True when new)."""

    __slots__ = ("changed",)

    def __init__(self, items: Iterable[T] = ()) -> None:
        super().__init__(items)
        self.changed = True

    def add(self, item: T) -> None:
        if item not in self:
            self.changed = True
        super().add(item)

    def discard(self, item: object) -> None:
        if item in self:
            self.changed = True
        super().discard(item)

    def remove(self, item: T) -> None:
        super().remove(item)
        self.changed = True

    def pop(self) -> T:
        item = super().pop()
        self.changed = True
        return item

    def clear(self) -> None:
        if self:
            self.changed = True
        super().clear()

    def update(self, *others: Iterable[T]) -> None:
        super().update(*others)
        self.changed = True

    def difference_update(self, *others: Iterable[Any]) -> None:
        super().difference_update(*others)
        self.changed = True

    def intersection_update(self, *others: Iterable[Any]) -> None:
        super().intersection_update(*others)
        self.changed = True

    def symmetric_difference_update(self, other: Iterable[T]) -> None:
        super().symmetric_difference_update(other)
        self.changed = True

    def __ior__(self, other: Any) -> TrackedSet[T]:  # type: ignore[override, misc]
        super().__ior__(other)
        self.changed = True
        return self

    def __iand__(self, other: Any) -> TrackedSet[T]:  # type: ignore[misc]
        super().__iand__(other)
        self.changed = True
        return self

    def __isub__(self, other: Any) -> TrackedSet[T]:  # type: ignore[misc]
        super().__isub__(other)
        self.changed = True
        return self

    def __ixor__(self, other: Any) -> TrackedSet[T]:  # type: ignore[override, misc]
        super().__ixor__(other)
        self.changed = True
        return self
