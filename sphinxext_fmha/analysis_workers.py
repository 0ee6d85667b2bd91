"""A page's whole analysis, ahead, in a worker interpreter, for the :class:`Session`.

The worker (``sphinxext-fmha prepare``, see :mod:`~sphinxext_fmha.process.worker`)
computes what a guide shows and keeps it in the on-disk cache under the keys the
session reads (``Session._stored``: tree digest, code digest, interpreter id), on the
other core, while this process reads other pages. A page whose results are not stored
waits for a running worker of its API, or claims the worker's memo key first, so that
the worker is never started, and computes as without workers. Whatever the worker
could not keep is computed by the page, which reports any failure itself: a worker
never raises and never stores a failure.

Not worth a worker: an API whose probe's work took less than a worker's start-up (as
the first worker of the session measured it), since its analysis, which goes over the
same kernels, costs about that. A worker goes on with the ready guides of the pages
after its own, at no start-up (see ``AnalysisWorkers._riders``): their pages would
otherwise wait for a worker of their own or compute them here, late, while the other
core idles. Which guides get a worker at all is the guide service's decision
(:func:`~sphinxext_fmha.guide.steps_ahead`). No Sphinx imports here.

Kept because measured (issue 42, ``benchmarks/bench_build.py``, the cold flash-attn 2.8.3
gallery, two rounds side by side): (cold - warm) / plain ``-l`` 12.7x with workers, 15.5x
without (13.6-17.5x): 18 % of the extension's own wall time, for the same CPU (49.8 s).
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Callable, Dict, List, Optional, Protocol, Sequence, Tuple

from .analysis.analyze import Tree
from .options import GENERATE_OPTIONS, Options
from .process.ahead_pool import Item
from .process.cache import DiskCache
from .process.progress import StepLine, report_step
from .process.runner import ListingResult

__all__ = ["WORKER", "AnalysisWorkers", "options_key"]

#: A guide planned for a worker: (api, options, sections, whether it shows mask modes).
_Guide = Tuple[str, Options, Optional[str], bool]

#: What the build log says of a guide the worker did not keep.
_NOT_COMPLETE = "the worker interpreter did not complete (the page computes the rest)"

#: The kind of the ahead step that analyses a page in a worker interpreter (one at a
#: time: this process reads the other pages on the other core).
WORKER = "worker"


class _Session(Protocol):
    """What the workers need of the session."""

    ck_root: Path
    python: str
    cache: DiskCache
    timeout: float
    progress: Optional[Callable[[str], None]]
    tree: Tree

    def observation(self, api: str, options: Options = ...) -> dict: ...

    def listing(self, request) -> ListingResult: ...

    def _is_stored(self, kind: str, *parts) -> bool: ...

    def _other_mask(self, api: str, options: Options) -> Optional[Tuple[str, str]]: ...

    def _other_listing_running(self, api: str, options: Options) -> bool: ...

    def _once(self, key: Tuple, compute: Callable[[], object], ahead: bool = False) -> object: ...

    def _memo_value(self, key: Tuple) -> object: ...


def options_key(options: Options) -> str:
    """Options as the results kept on disk name them (``dataclasses.asdict``), as text."""
    return json.dumps(dataclasses.asdict(options), sort_keys=True)


class AnalysisWorkers:
    """The worker steps of one session, and the pages' wait for them."""

    def __init__(self, session: _Session) -> None:
        self.session = session
        #: (api, options as JSON) -> the memo key of its worker in this build
        self._keys: Dict[Tuple[str, str], Tuple] = {}
        #: builds that planned workers (a worker's memo key is one build's)
        self._builds = 0
        #: seconds a worker interpreter took to start, as measured by the first one
        self._start_up: Optional[float] = None
        #: worker memo key -> (api, options, sections, mask) of the guides planned for a
        #: worker that none has taken yet, in planning order
        self._pending: Dict[Tuple, _Guide] = {}
        #: every worker key of this build, in planning order: from the last page back
        self._planned: List[Tuple] = []
        self._lock = threading.Lock()

    def step(self, api: str, options: Options, sections: Optional[str],
             kinds: Sequence[str]) -> Optional[Item]:
        """The worker step for the guide of ``api`` (``sections``, None: all), to run
        once its probe and its other ``--mask`` listing are done; None when the results
        of ``kinds`` (what the page keeps on disk) are all stored."""
        session = self.session
        stored_as = dataclasses.asdict(options)
        if session._other_mask(api, options) is None:
            kinds = [kind for kind in kinds if kind != "mask-modes"]
        if all(session._is_stored(kind, api, stored_as) for kind in kinds):
            return None
        key = (WORKER, api, options, self._builds)
        self._keys[(api, options_key(options))] = key
        mask = "mask-modes" in kinds and not session._is_stored("mask-modes", api, stored_as)
        with self._lock:
            self._pending[key] = (api, options, sections, mask)
            self._planned.append(key)
        return WORKER, lambda: self._ahead(key)

    def end_build(self) -> None:
        self._keys.clear()
        with self._lock:
            self._pending.clear()
            self._planned.clear()
        self._builds += 1

    def _ahead(self, key: Tuple) -> bool:
        """A worker step: once the probe of its own guide is done, the costliest guide
        whose probe is done and whose worker has not started yet (this process reads
        the pages in order, so the longest analyses are the ones to take off it; the
        step's own guide is left to a later step or to its page), and after it, in the
        same interpreter, the ready guides of later pages (see :meth:`_riders`). False
        when no worker was started (see ``AheadPool``)."""
        with self._lock:
            planned = self._pending.get(key)
        if planned is not None:  # else a worker took it along: another guide may wait
            try:
                # through the memo: a probe started ahead is waited for, and a probe
                # that failed is not run again (its page reports it)
                self.session.observation(planned[0], planned[1])
            except Exception:  # noqa: BLE001 - the page computes it and says why
                pass
        with self._lock:
            for claimed in [k for k in self._pending if self.session._memo_value(k) is not None]:
                del self._pending[claimed]  # its page got there first
            if not self._pending:
                return False
            key = max(self._pending, key=self._ready_kernels)
            guide = self._pending.pop(key)
        return self._start(key, guide)

    def _riders(self, key: Tuple, guide: _Guide) -> List[Tuple[Tuple, _Guide]]:
        """The pending guides of pages after ``guide``'s, with its options and sections
        and their probe done, in reading order (taken off the pending ones): the worker
        analyses them after ``guide``, at no start-up of its own. Never later than a
        worker of their own, which would start only when this one ends (one at a
        time), and a page reached meanwhile waits for at most its own guide: the worker
        started on it while this process read the pages before it. Called with the
        lock held."""
        riders = []
        for later in reversed(self._planned[:self._planned.index(key)]):
            other = self._pending.get(later)
            if (other is not None and other[1:3] == guide[1:3]
                    and self._ready_kernels(later) >= 0
                    and self.session._memo_value(later) is None):
                riders.append((later, self._pending.pop(later)))
        return riders

    def _ready_kernels(self, key: Tuple) -> int:
        """How many kernels the guide of ``key`` has, when its probe is done (else -1);
        between equals, the later page (the steps are planned from the last page)."""
        api, options = self._pending[key][:2]
        observed = self.session._memo_value(("observation", api, options))
        return len(observed.get("listing") or []) if isinstance(observed, dict) else -1

    def _start(self, key: Tuple, guide: _Guide) -> bool:
        session = self.session
        api, options, sections, _ = guide
        try:
            observed = session.observation(api, options)
            self._mask_listing(guide)
        except Exception:  # noqa: BLE001 - the page computes it and says why
            return False
        if not self._worth_it(observed):
            return False  # not claimed: the page computes it, as without workers
        with self._lock:
            riders = self._riders(key, guide)
        started: List[bool] = []
        # each rider's memo key is held by a thread of its own until the worker is done
        # with it: its page waits for the worker instead of computing it
        held = [held for held in (self._hold(k, g) for k, g in riders) if held is not None]

        def run() -> bool:
            started.append(True)
            return self._run(api, options, sections, held)

        try:
            session._once(key, run, ahead=True)  # skipped when a page claimed it
        finally:
            for _, _, done in held:
                if not done.done():
                    done.set_result(False)  # the page computes what the worker did not
        return bool(started)

    def _mask_listing(self, guide: _Guide) -> None:
        """The guide's other ``--mask`` listing, before its worker starts (the worker
        reads it from the cache)."""
        api, options, _, mask = guide
        modes = self.session._other_mask(api, options)
        if mask and modes is not None:
            self.session.listing(self.session.tree.request(
                api, dataclasses.replace(options, mask=modes[1])))

    def _hold(self, key: Tuple, guide: _Guide) -> Optional[Tuple[str, Tuple, Future]]:
        """(api, key, its result to set) once a thread holds ``key`` for the worker;
        None when a page has claimed it first.

        The thread then keeps the rider's other ``--mask`` listing for the worker,
        while the worker starts and analyses the guides before it (2.8.3: each took
        40-70 ms while this process's page held the interpreter lock, and the worker
        started 0.2 s late). Should the worker get there first, it keeps that listing
        itself from the probe's, as the page would; one that failed fails there too,
        and the page computes the rider and says why. A listing the probe still makes
        is waited for first, as for the worker's own guide: the worker would not find
        it and would list again."""
        running = self.session._other_listing_running(guide[0], guide[1])
        if running:
            try:
                self._mask_listing(guide)
            except Exception:  # noqa: BLE001 - the page computes it and says why
                return None
        done: Future = Future()
        decided = threading.Event()
        held: List[bool] = []

        def wait_for_the_worker() -> object:
            held.append(True)
            decided.set()
            if not running:
                try:
                    self._mask_listing(guide)
                except Exception:  # noqa: BLE001 - see above
                    pass
            return done.result()

        def hold() -> None:
            try:
                self.session._once(key, wait_for_the_worker, ahead=True)
            except Exception:  # noqa: BLE001 - cannot happen: the result is a bool
                pass
            finally:
                decided.set()

        threading.Thread(target=hold, name="fmha-worker-hold", daemon=True).start()
        decided.wait()
        return (guide[0], key, done) if held else None

    def _worth_it(self, observed: dict) -> bool:
        """Whether analysing this API is worth starting an interpreter: its probe's work
        (listing, perturbation, dispatch file) took longer than a worker's start-up."""
        seconds = observed.get("seconds") or {}
        probe = sum(float(seconds.get(part) or 0.0) for part in ("observe", "perturb"))
        probe += float((observed.get("dispatch") or {}).get("seconds") or 0.0)
        return self._start_up is None or probe > self._start_up

    def _run(self, api: str, options: Options, sections: Optional[str],
             riders: Sequence[Tuple[str, Tuple, Future]] = ()) -> bool:
        """Run the worker for ``api`` and then its ``riders`` (api, memo key, its result:
        set as soon as the worker is done with it); True when it kept every result of
        ``api``. Never raises."""
        from .process.worker import current_interpreter, prepare_argv, run_worker

        session = self.session
        option_args: List[str] = []
        for spec in GENERATE_OPTIONS:
            value = getattr(options, spec.dest)
            if value is not None:
                option_args += [spec.long_flag, str(value)]
        apis = [api] + [rider[0] for rider in riders]
        args = prepare_argv(session.ck_root, apis, cache_dir=session.cache.root,
                            python=session.python, timeout=session.timeout,
                            option_args=option_args, sections=sections,
                            progress=session.progress is not None)
        waiting = {rider[0]: rider[2] for rider in riders}
        kept: Dict[str, bool] = {}
        started = time.monotonic()
        progress = session.progress

        def done_with(name: str, ok: bool, seconds: float) -> None:
            kept[name] = ok
            if name in waiting and not waiting[name].done():
                waiting[name].set_result(ok)
            if progress is not None:
                # the first with the interpreter's start-up; the others their own
                before = apis[:apis.index(name)] if name in apis else []
                what = "analysed in a worker interpreter" + (
                    " after %s" % ", ".join(before) if before else "")
                report_step(progress, session.tree.fmha_dir, ["-a", name],
                            what if ok else _NOT_COMPLETE,
                            seconds if before else time.monotonic() - started)

        def step_line(line: str) -> None:
            if progress is not None:
                progress(StepLine(line))

        # its own generate.py runs each have the per-run timeout; the worker as a whole
        # gets room for the probe-free analyses and a few of them
        outcome = run_worker(current_interpreter(), args,
                             timeout=(3 + len(apis)) * session.timeout, on_api=done_with,
                             on_step=step_line)
        if outcome.api_seconds and self._start_up is None:
            self._start_up = outcome.start_up
        if progress is not None and not outcome.ok:
            unsaid = [name for name in apis if name not in kept]
            if unsaid:  # it ended before it got to them
                report_step(progress, session.tree.fmha_dir, ["-a", unsaid[0]], _NOT_COMPLETE,
                            outcome.seconds)
            if outcome.error is not None:
                progress(str(outcome.error))
        # the guide's own results are kept even when a rider's were not
        return outcome.ok or kept.get(api, False)

    def wait_or_claim(self, parts: Sequence[object]) -> bool:
        """Wait for the worker of these results' API (``parts``: the API first, the
        options last, as stored), or claim it so that it never starts; True when one
        ran and kept its results."""
        if not self._keys or not parts or not isinstance(parts[-1], dict):
            return False
        key = self._keys.get((str(parts[0]), json.dumps(parts[-1], sort_keys=True)))
        if key is None:
            return False
        return self.session._once(key, lambda: False) is True
