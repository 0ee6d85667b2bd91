"""Work started ahead of the pages that need it: a few items at a time, in a thread pool
(:mod:`concurrent.futures`), while the pages are read. The one seam of the package's
scheduling: :data:`WORKERS`, from the cores this process may run on, sizes it and the
batch interpreters run side by side.

Each item is a callable that does one expensive step through the launcher (a probe, a
listing, a batch of filtered runs) and keeps its result (or its failure) where the page
will look for it; an item never raises here, and one that returns False did nothing
(a page got there first: it is not counted in the summary). Items start in the order
given, except an item of a kind that has as many running as its limit allows: a thread
then takes the next item of another kind, or ends (the thread that runs the kind's
item takes the next one when it is done). Nothing new starts once the process is
interrupted (SIGINT/SIGTERM) or exiting, or after :meth:`AheadPool.cancel`; the
launcher kills the children that are running then.

No Sphinx imports here.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Counter, Deque, Dict, List, Mapping, Optional, Sequence, Tuple

from .launch import install_handlers, interrupts

__all__ = ["AheadPool", "Item", "WORKERS"]

def _cores() -> int:
    """The cores this process may run on (its affinity, as a container or ``taskset``
    limits it), not the machine's."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on macOS or Windows
        return max(1, os.cpu_count() or 1)


#: The one size of this package's parallel work: items running at once ahead of the
#: pages, batch interpreters side by side (the page being read uses a core too, but
#: mostly waits for the same children).
WORKERS = _cores()


#: (what it is, for the progress line; the work)
Item = Tuple[str, Callable[[], object]]


class AheadPool:
    """Runs items in ``workers`` pool threads; ``on_done(seconds, ran)`` is called once,
    by the last thread to end, with how many items of each kind ran."""

    def __init__(self, items: Sequence[Item], workers: int = WORKERS,
                 on_done: Optional[Callable[[float, Counter[str]], None]] = None,
                 limits: Optional[Mapping[str, int]] = None) -> None:
        self._queue: Deque[Item] = collections.deque(items)
        #: kind -> items of that kind that may run at once
        self._limits: Dict[str, int] = dict(limits or {})
        self._running_kinds: Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._runs: List[Future] = []
        self._cancelled = False
        self._on_done = on_done
        self._ran: Counter[str] = collections.Counter()
        self._workers = max(1, min(workers, len(self._queue)))
        self._interrupts = interrupts()
        self._started = 0.0
        self._running = 0

    def start(self) -> AheadPool:
        if not self._queue:
            return self
        install_handlers()  # from the main thread: an interrupt kills the children
        self._started = time.monotonic()
        self._running = self._workers
        pool = ThreadPoolExecutor(self._workers, thread_name_prefix="fmha-ahead")
        self._runs = [pool.submit(self._work) for _ in range(self._workers)]
        pool.shutdown(wait=False)
        return self

    def _next(self) -> Optional[Item]:
        with self._lock:
            if self._cancelled or interrupts() != self._interrupts:
                self._queue.clear()
                self._cancelled = True
            for index, item in enumerate(self._queue):
                if self._running_kinds[item[0]] < self._limits.get(item[0], self._workers):
                    del self._queue[index]
                    self._running_kinds[item[0]] += 1
                    return item
            return None  # empty, or only kinds at their limit: their threads go on

    def _work(self) -> None:
        while True:
            item = self._next()
            if item is None:
                break
            result = None
            try:
                result = item[1]()
            except BaseException:  # noqa: BLE001 - items keep their own failures
                pass
            with self._lock:
                if result is not False:
                    self._ran[item[0]] += 1
                self._running_kinds[item[0]] -= 1
        with self._lock:
            self._running -= 1
            last = self._running == 0
        if last and self._on_done is not None:
            self._on_done(time.monotonic() - self._started, self._ran)

    def cancel(self) -> None:
        """Start nothing new (the running items finish)."""
        with self._lock:
            self._cancelled = True
            self._queue.clear()

    def wait(self) -> None:
        for run in self._runs:
            run.exception()  # (the items keep their own failures)
