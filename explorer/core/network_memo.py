"""A small per-network memo: facts derived from a ``Network`` kept for the last few networks.

Keyed by ``id(network)`` with the network kept beside its facts (so an id is never reused while
its entry lives); the oldest entry goes first when the memo is full.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from .network import Network

T = TypeVar("T")


class NetworkMemo(Generic[T]):
    """The facts of at most ``size`` networks, oldest evicted first."""

    def __init__(self, size: int):
        self.size = size
        self._entries: dict[int, tuple[Network, T]] = {}

    def get(self, network: Network) -> T | None:
        hit = self._entries.get(id(network))
        return hit[1] if hit is not None and hit[0] is network else None

    def put(self, network: Network, facts: T) -> T:
        entries = self._entries
        while len(entries) >= self.size:
            try:  # oldest first; tolerate another thread evicting at the same time
                entries.pop(next(iter(entries)), None)
            except (StopIteration, RuntimeError):
                break
        entries[id(network)] = (network, facts)
        return facts
