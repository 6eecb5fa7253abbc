"""Caches declared by their owner: a dict whose keys the owning class lists, with what each holds.

An object that lets other modules keep values with it (a :class:`~controlkit.mechanism.Mechanism`,
an :class:`~controlkit.equations.EquationSet`, a control statement) gives them a :class:`Cache`
built on its table of entries (key -> who keeps it, what it holds, what invalidates it). Storing
under an undeclared key is a ``KeyError`` naming the table, so every cache kept on an object is
listed where the object is defined, and nobody writes attributes onto another module's objects.
"""
from __future__ import annotations

from typing import Mapping


class Cache(dict):
    """Values kept with an object under the keys its owner declares.

    Args:
        entries: the owner's table, key -> what the entry holds and what invalidates it.
        where: the table's dotted name, for the error message (e.g. ``controlkit.mechanism.CACHE_ENTRIES``).

    Reading is the dict's own ``get``; writing an undeclared key raises ``KeyError``.
    """

    def __init__(self, entries: Mapping[str, str], where: str):
        super().__init__()
        self.entries, self.where = entries, where

    def __setitem__(self, key: str, value) -> None:
        if key not in self.entries:
            raise KeyError(f"cache: undeclared entry {key!r}; declare it in {self.where} "
                           f"(declared: {', '.join(self.entries)})")
        dict.__setitem__(self, key, value)

    def setdefault(self, key: str, default=None):
        """The entry under a declared key, stored as ``default`` when missing."""
        value = self.get(key)
        if value is None:
            self[key] = value = default
        return value
