"""Work started ahead of the pages that need it, for the session: each ``*_ahead``
method returns the step a page will need, or None when its result is kept already (a
warm rebuild starts nothing). The step runs through the same memo as the page's own
call: the page waits for it, or gets its failure. The steps run in the one pool of
:mod:`~sphinxext_fmha.process.ahead_pool`. No Sphinx imports here."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from ..analysis.analyze import Options
from ..analysis_workers import WORKER
from ..process.ahead_pool import WORKERS, AheadPool, Item
from ..process.progress import report_ahead
from ..process.runner import GenerateRequest, ListingResult
from . import observing


class AheadSteps:
    """The session's steps started ahead (mixed into it: they go through its memo)."""

    # given by the session
    tree: Any
    runner: Any
    cache: Any
    timeout: float
    progress: Any
    _memo: Any
    _workers: Any
    _once: Callable[..., Any]
    _is_stored: Callable[..., bool]
    prefetch_checks: Callable[..., None]

    def __init__(self) -> None:
        self._ahead: Optional[AheadPool] = None
        #: (api, options, filter) -> (the key, the work) of the batch started ahead
        self._check_batches: Dict[Tuple, Tuple[Tuple, Callable[[], None]]] = {}
        #: unfiltered request -> (api, options) of the probe started ahead that lists it
        self._probes: Dict[GenerateRequest, Tuple[str, Options]] = {}
        #: other --mask request -> keeps the listing its probe made (see _observe)
        self._probe_listings: Dict[GenerateRequest, Callable[[], None]] = {}

    # -- the probes and listings the pages and the workers wait for ---------------
    def _other_mask(self, api: str, options: Options) -> Optional[Tuple[str, str]]:
        return observing.other_mask(self.tree, options)

    def _other_listing_running(self, api: str, options: Options) -> bool:
        return observing.other_listing_running(self.runner, self.cache,
                                               observing.probe_runs(self.tree, api, options))

    def listing(self, request: GenerateRequest) -> ListingResult:
        """``generate.py -l`` for ``request``, once per process: a listing started ahead
        is waited for, and one that a probe started ahead makes is read from the probe."""
        def compute() -> ListingResult:
            self._wait_for_probe(request)
            made = self._probe_listings.get(request)
            if made is not None:
                made()  # the probe's other listing, kept when it ran cleanly
            return self.runner.list_kernels(request)

        return self._once(("listing", request), compute)

    def observation(self, api: str, options: Options = Options()) -> dict:
        """The probe's raw observation (kept in the store by the analysis)."""
        return self._once(("observation", api, options), lambda: self._observe(api, options))

    def _observe(self, api: str, options: Options) -> dict:
        runs = observing.probe_runs(self.tree, api, options)
        observed, keep_other = observing.observe_runs(
            self.runner, runs, cache=self.cache, timeout=self.timeout, progress=self.progress)
        if keep_other is not None and runs[2] is not None:
            self._probe_listings[runs[2]] = keep_other
        return observed

    def probe_ahead(self, api: str, options: Options = Options()) -> Optional[Item]:
        """The probe of ``api`` (the model, the listing and the dispatch file need it)."""
        request = self.tree.request(api, options)
        if self.runner.has_result("list", request):
            return None
        self._probes[request] = (api, options)
        return "probe", lambda: self._once(("observation", api, options),
                                           lambda: self._observe(api, options), ahead=True)

    def mask_listing_ahead(self, api: str, options: Options = Options()) -> Optional[Item]:
        """The listing with the other ``--mask`` mode (what ``mask_modes`` compares)."""
        modes = self._other_mask(api, options)
        if modes is None or self._is_stored("mask-modes", api, dataclasses.asdict(options)):
            return None
        request = self.tree.request(api, dataclasses.replace(options, mask=modes[1]))
        probe = self._probes.get(self.tree.request(api, options))
        if probe is not None:  # the probe started ahead lists this mode too
            self._probes.setdefault(request, probe)
        return self.listing_ahead(request)

    def listing_ahead(self, request: GenerateRequest) -> Optional[Item]:
        """``generate.py -l`` for ``request`` (for ``listing``)."""
        if self.runner.has_result("list", request) or request in self._probes:
            return None  # cached, or the probe started ahead lists it
        return "listing", lambda: self._once(
            ("listing", request), lambda: self.runner.list_kernels(request), ahead=True)

    def checks_ahead(self, api: str, filters: Sequence[str],
                     options: Options = Options()) -> Optional[Item]:
        """The filtered runs of these filter checks, in one batch interpreter."""
        from ..process.batch import missing

        wanted = [f for f in dict.fromkeys(filters)
                  if not self._is_stored("check", api, f, dataclasses.asdict(options))]
        todo = [r.filter for r in missing(self.runner, [
            self.tree.request(api, options, filter=f) for f in wanted])]
        if not todo:
            return None
        key = ("checks-ahead", api, options, tuple(todo))

        def run_batch() -> None:
            try:
                self.prefetch_checks(api, todo, options, parallel=1)
            except Exception:  # noqa: BLE001 - each check then runs alone and says why
                pass

        for text in todo:
            self._check_batches[(api, options, text)] = (key, run_batch)
        return "batch", lambda: self._once(key, run_batch, ahead=True)

    def analysis_ahead(self, api: str, options: Options = Options(),
                       sections: Optional[str] = None, kinds: Sequence[str] = ()) -> Optional[Item]:
        """The guide of ``api`` computed ahead in a worker interpreter
        (:mod:`~sphinxext_fmha.analysis_workers`); None when ``kinds`` are all stored."""
        return self._workers.step(api, options, sections, kinds)

    def start_ahead(self, steps: Sequence[Item], *, wait: bool = False) -> None:
        """Start ``steps`` in the background (``wait``: and wait for them: the pages are
        read in forked processes, which inherit no thread)."""
        if self._ahead is not None:  # a build before this one did not stop it
            self._ahead.cancel()
            self._ahead.wait()
        if not steps:
            return
        apis = sorted({api for api, _ in self._probes.values()})

        def done(seconds: float, ran: Counter) -> None:
            if ran:  # else every step found its work done by a page
                report_ahead(self.progress, self.tree.fmha_dir, apis, ran, WORKERS, seconds)

        self._ahead = AheadPool(steps, on_done=done, limits={WORKER: 1}).start()
        if wait:
            self._ahead.wait()

    def stop_ahead(self) -> None:
        """Start nothing more ahead, wait for what runs, and forget the failures kept
        for the pages (the end of a build's reading)."""
        pool, self._ahead = self._ahead, None
        if pool is not None:
            pool.cancel()
            pool.wait()
        self._memo.forget_failures()
        self._check_batches.clear()
        self._probes.clear()
        self._workers.end_build()

    def _wait_for_probe(self, request: GenerateRequest) -> None:
        """Wait for the probe started ahead that lists ``request``, if any."""
        probe = self._probes.get(request)
        if probe is not None:
            try:
                self.observation(*probe)
            except Exception:  # noqa: BLE001 - the listing's own run says what is wrong
                pass

    def _wait_for_batch(self, api: str, options: Options, filter: str) -> None:
        """Wait for the batch started ahead that runs ``filter`` (or run it now)."""
        batch = self._check_batches.get((api, options, filter))
        if batch is not None:
            self._once(batch[0], batch[1])
