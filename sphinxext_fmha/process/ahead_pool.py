"""The one seam of the package's scheduling: steps started ahead of the pages, in a
:mod:`concurrent.futures` pool sized by :data:`WORKERS` (the cores we may run on), and the
:class:`Memo` where pages find their results. A step never raises here; one that returns
False did nothing. See ``docs/internals.md``.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Counter, Deque, Dict, Hashable, List, Mapping, Optional, Sequence, Set, Tuple

from .launch import install_handlers, interrupts
from .progress import Progress, report_ahead
from .runner import GenerateRequest, GenerateRunner

__all__ = ["Ahead", "AheadPool", "Item", "Memo", "WORKERS", "in_background"]

# The one size of this package's parallel work: the cores we may run on.
try:
    WORKERS = max(1, len(os.sched_getaffinity(0)))
except (AttributeError, OSError):  # not on macOS or Windows
    WORKERS = max(1, os.cpu_count() or 1)


def in_background(work: Callable[..., object], *args: object, name: str) -> Future:
    """``work(*args)`` in a thread of its own (a page's runs while it reads on)."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
    started = pool.submit(work, *args)
    pool.shutdown(wait=False)
    return started


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
            if key in self._failed:
                raise self._failed[key]
            # (ahead: a page that got there first computes or computed it)
            return key in self._values or (ahead and key in self._started), self._values.get(key)

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


#: (what it is, for the progress line; the work)
Item = Tuple[str, Callable[[], object]]


class AheadPool:
    """Runs items in ``workers`` threads, at most ``limits[kind]`` of a kind at once; the
    last thread to end calls ``on_done(seconds, ran)``."""

    def __init__(self, items: Sequence[Item], workers: int = WORKERS,
                 on_done: Optional[Callable[[float, Counter[str]], None]] = None,
                 limits: Optional[Mapping[str, int]] = None) -> None:
        self._queue: Deque[Item] = collections.deque(items)
        self._limits = dict(limits or {})
        self._running_kinds: Counter[str] = collections.Counter()
        self._ran: Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._runs: List[Future] = []
        self._on_done = on_done
        self._workers = self._running = max(1, min(workers, len(self._queue)))
        self._interrupts = interrupts()
        self._started = 0.0

    def start(self) -> AheadPool:
        if self._queue:
            install_handlers()  # from the main thread: an interrupt kills the children
            self._started = time.monotonic()
            pool = ThreadPoolExecutor(self._workers, thread_name_prefix="fmha-ahead")
            self._runs = [pool.submit(self._work) for _ in range(self._workers)]
            pool.shutdown(wait=False)
        return self

    def _next(self) -> Optional[Item]:
        with self._lock:
            if interrupts() != self._interrupts:
                self._queue.clear()
            for index, item in enumerate(self._queue):
                if self._running_kinds[item[0]] < self._limits.get(item[0], self._workers):
                    del self._queue[index]
                    self._running_kinds[item[0]] += 1
                    return item
            return None  # empty, or only kinds at their limit: their threads go on

    def _work(self) -> None:
        for kind, work in iter(self._next, None):
            result = None
            try:
                result = work()
            except BaseException:  # noqa: BLE001 - items keep their own failures
                pass
            with self._lock:
                if result is not False:
                    self._ran[kind] += 1
                self._running_kinds[kind] -= 1
        with self._lock:
            self._running -= 1
            last = self._running == 0
        if last and self._on_done is not None:
            self._on_done(time.monotonic() - self._started, self._ran)

    def cancel(self) -> None:
        """Start nothing new (the running items finish)."""
        with self._lock:
            self._queue.clear()

    def wait(self) -> None:
        for run in self._runs:
            run.exception()  # (the items keep their own failures)


class Ahead:
    """One build's steps started ahead, each a memo key (skipped when a page started it
    first); what a step promises (a listing, a filter's runs) a page waits for."""

    def __init__(self, memo: Memo) -> None:
        self.memo = memo
        self._pool: Optional[AheadPool] = None
        #: what a step makes -> (its memo key, its work)
        self._promised: Dict[Hashable, Tuple[Tuple, Callable[[], object]]] = {}

    def step(self, kind: str, key: Tuple, compute: Callable[[], object],
             promises: Sequence[Hashable] = ()) -> Item:
        for made in promises:
            self._promised[made] = (key, compute)
        return kind, lambda: self.memo.once(key, compute, ahead=True)

    def probe(self, runner: GenerateRunner, request: GenerateRequest, key: Tuple,
              observe: Callable[[], object]) -> Optional[Item]:
        """The probe that lists ``request`` (None when its listing is kept)."""
        if runner.has_result("list", request):
            return None
        return self.step("probe", key, observe, [("list", request)])

    def listing(self, runner: GenerateRunner, request: GenerateRequest,
                probed: Optional[GenerateRequest] = None) -> Optional[Item]:
        """``generate.py -l`` (None when kept, or when the probe of ``probed`` lists it)."""
        if probed is not None and ("list", probed) in self._promised:
            self._promised.setdefault(("list", request), self._promised[("list", probed)])
        if runner.has_result("list", request) or self.promised(("list", request)):
            return None
        return self.step("listing", ("listing", request), lambda: runner.list_kernels(request))

    def batch(self, key: Tuple, todo: Sequence[GenerateRequest],
              run: Callable[[Sequence[GenerateRequest]], object]) -> Optional[Item]:
        """The filtered runs ``todo`` in one batch interpreter (None: nothing to do)."""
        def run_batch() -> None:
            try:
                run(todo)
            except Exception:  # noqa: BLE001 - each run then runs alone and says why
                pass

        return self.step("batch", key + (tuple(todo),), run_batch,
                         [("run", request) for request in todo]) if todo else None

    def promised(self, made: Hashable) -> Optional[Tuple]:
        """The memo key of the step that makes ``made``, if one was planned."""
        return self._promised.get(made, (None,))[0]

    def wait_for(self, made: Hashable) -> None:
        """Wait for the step that makes ``made`` (or do its work now); its failure is left
        to the page's own run."""
        entry = self._promised.get(made)
        if entry is not None:
            try:
                self.memo.once(*entry)
            except Exception:  # noqa: BLE001 - see above
                pass

    def start(self, steps: Sequence[Item], progress: Progress, fmha_dir: Path,
              limits: Mapping[str, int], wait: bool = False) -> None:
        """Start ``steps`` in the background (``wait``: and wait: forked readers inherit no
        thread); one line says what ran once all are done."""
        self._end_pool()  # a build before this one did not stop it
        apis = sorted({key[1] for key, _ in self._promised.values() if key[0] == "observation"})

        def done(seconds: float, ran: Counter[str]) -> None:
            if ran:  # else every step found its work done by a page
                report_ahead(progress, fmha_dir, apis, ran, WORKERS, seconds)

        if steps:
            self._pool = AheadPool(steps, on_done=done, limits=limits).start()
            if wait:
                self._pool.wait()

    def stop(self) -> None:
        """The end of a build's reading: start nothing more, wait, forget failures and promises."""
        self._end_pool()
        self.memo.forget_failures()
        self._promised.clear()

    def _end_pool(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.cancel()
            pool.wait()
