"""Results computed once per process, each under its own lock. No Sphinx imports here."""

from __future__ import annotations

import threading
from typing import Callable, Dict, Set, Tuple

__all__ = ["Memo"]


class Memo:
    """A result being computed (by a page, or ahead of it) is waited for, not computed
    again; a failure of work started ahead is kept for the pages until
    :meth:`forget_failures` (the end of the build's reading)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key_locks: Dict[Tuple, threading.Lock] = {}
        self._values: Dict[Tuple, object] = {}
        self._failed: Dict[Tuple, BaseException] = {}
        self._started: Set[Tuple] = set()

    def _known(self, key: Tuple, ahead: bool) -> Tuple[bool, object]:
        """(whether the answer is known, the answer); raises a kept failure."""
        with self._lock:
            if key in self._values:
                return True, self._values[key]
            if key in self._failed:
                raise self._failed[key]
            if ahead and key in self._started:
                return True, None  # a page got there first: it computes or computed it
            return False, None

    def once(self, key: Tuple, compute: Callable[[], object], ahead: bool = False):
        """``compute()``'s value for ``key``; ``ahead``: work started ahead of a page,
        skipped when anything already started it, its failure kept for the pages."""
        known, value = self._known(key, ahead)
        if known:
            return value
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            known, value = self._known(key, ahead)
            if known:
                return value
            with self._lock:
                self._started.add(key)
            try:
                value = compute()
            except Exception as error:
                if ahead:
                    with self._lock:
                        self._failed[key] = error
                raise
            with self._lock:
                self._values[key] = value
            return value

    def value(self, key: Tuple) -> object:
        """The value computed for ``key``, or None (not computed, or being computed)."""
        with self._lock:
            return self._values.get(key)

    def forget_failures(self) -> None:
        with self._lock:
            self._failed.clear()
            self._started = set(self._values)
