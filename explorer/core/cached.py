"""``cached_property`` without a lock: the value computed on first access, stored in the instance.

Python 3.11's ``functools.cached_property`` takes a lock on every first access (about 0.4 us here, more
than many of the values cost; 3.12 dropped it). The problems and cost tables read a dozen such
values per solve, so they use this one: a non-data descriptor whose first ``__get__`` writes the
value into the instance ``__dict__``, which then shadows it. Two threads reading a value for the
first time at once may both compute it; the values are pure functions of frozen fields, so
either result is the same.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class cached_property(Generic[T]):  # noqa: N801 - named as the functools decorator it replaces
    def __init__(self, func: Callable[[Any], T]):
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.func(instance)
        return value
