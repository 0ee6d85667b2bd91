"""One CK tree's stages (:mod:`.stages`, :mod:`.verify`, :mod:`.cppapi`), each run once
per process (:class:`~.process.ahead_pool.Memo`) and kept in the store
(:class:`~.process.cache.DiskCache`); the steps a page will need go to the one
scheduling seam (:class:`~.process.ahead_pool.Ahead`). No Sphinx imports here."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from .analysis.analyze import AnalysisError, Options, Tree
from .analysis_workers import WORKER, AnalysisWorkers, WorkerPlace
from .cppapi.reading import read_dispatch, readable_terms
from .locate import fmha_dir as fmha_dir_of
from .model import ApiInfo, ApiModel, FilterCheck, FilterFacts, Need, Recommendation, TokenDispatch, Workload
from .process.ahead_pool import WORKERS, Ahead, Item, Memo
from .process.batch import missing
from .process.cache import DiskCache, code_digest, tree_files, tree_state
from .process.runner import (
    DriverRun,
    GenerateError,
    GenerateRequest,
    GenerateRunner,
    ListingResult,
    check_generate_py,
)
from .stages import observing, recommending, verification
from .stages.verification import Baseline
from .verify.examples import example_workloads
from .verify.head_dims import head_dim_buckets
from .verify.mask_modes import compare_mask_modes
from .verify.needs import parse_needs, resolve_needs
from .verify.parsed_listing import ParsedListing
from .verify.pattern_traps import pattern_traps
from .verify.recommend import finish, prepare, select_exactly
from .verify.tile_table import tile_names
from .verify.token_facts import token_counts, token_dispatch

Progress = Optional[Callable[[str], None]]
AheadStep = Item  # one step started ahead of the pages: (what it is, the work)

__all__ = ["Session", "Options", "AnalysisError", "GenerateError"]


class Session:
    """Models, filter checks and recommendations for one CK tree."""

    def __init__(self, ck_root: Path, *, python: Optional[str] = None,
                 cache_dir: Optional[Path] = None, timeout: float = 900,
                 progress: Progress = None):
        self.ck_root = Path(ck_root)
        self.python = python or sys.executable
        self.cache = DiskCache(Path(cache_dir) if cache_dir else None)
        self.timeout = timeout
        self.progress = progress
        check_generate_py(fmha_dir_of(self.ck_root))
        #: the tree when first read: what results are keyed by, and kept only if still so
        self.inputs = tree_state(fmha_dir_of(self.ck_root))
        self.tree = Tree.load(self.ck_root, self.python, self.cache, timeout, self.inputs)
        self.runner = GenerateRunner(self.tree.fmha_dir, python=self.python, cache=self.cache,
                                     options=self.tree.supported_dests(),
                                     timeout=timeout, progress=progress)
        self._memo = Memo()
        self.ahead = Ahead(self._memo)
        #: other --mask request -> keeps the listing its probe made (see _observe)
        self._probe_listings: Dict[GenerateRequest, Callable[[], None]] = {}
        self._workers = AnalysisWorkers(
            self._memo, WorkerPlace(self.ck_root, self.tree.fmha_dir, self.cache.root,
                                    self.python, timeout, progress,
                                    self.tree.option("mask") is not None),
            observe=self.observation, keep_other=self._other_listing,
            stored=lambda kind, api, options: self._is_stored(kind, api,
                                                              dataclasses.asdict(options)))

    def _stored_key(self, kind: str, *parts) -> str:
        return self.cache.key_for(kind, self.inputs.digest, code_digest(),
                                  self.runner.python_id(), *parts)

    def _is_stored(self, kind: str, *parts) -> bool:
        return self.cache.has(self._stored_key(kind, *parts))

    def _stored(self, kind: str, compute: Callable[[], Any], *parts) -> Any:
        """A result kept in the store (``parts``: the API first, the options last)."""
        key = self._stored_key(kind, *parts)
        value = self.cache.get(key)
        if value is None and self._workers.wait_or_claim(parts):
            value = self.cache.get(key)
        if value is None:
            value = compute()
            self.cache.put(key, value, self.inputs)
        return value

    def _kept(self, kind: str, api: str, options: Options, compute: Callable[[], Any],
              *parts) -> Any:
        """Once per process, and kept in the store."""
        return self._memo.once((kind, api, *parts, options), lambda: self._stored(
            kind, compute, api, *parts, dataclasses.asdict(options)))

    # -- the probe and the listings, and the steps started ahead of the pages --------
    def observation(self, api: str, options: Options = Options()) -> dict:
        return self._memo.once(*self._observing(api, options))  # (kept in the store by observe)

    def _observing(self, api: str, options: Options) -> Tuple[Tuple, Callable[[], dict]]:
        return ("observation", api, options), lambda: self._observe(api, options)

    def _observe(self, api: str, options: Options) -> dict:
        runs = observing.probe_runs(self.tree, api, options)
        observed, keep_other = observing.observe_runs(
            self.runner, runs, cache=self.cache, timeout=self.timeout, progress=self.progress)
        if keep_other is not None and runs[2] is not None:
            self._probe_listings[runs[2]] = keep_other
        return observed

    def listing(self, request: GenerateRequest) -> ListingResult:
        """``generate.py -l``, once per process (a probe started ahead may list it)."""
        def compute() -> ListingResult:
            self.ahead.wait_for(("list", request))
            made = self._probe_listings.get(request)
            if made is not None:
                made()  # the probe's other listing, kept when it ran cleanly
            return self.runner.list_kernels(request)

        return self._memo.once(("listing", request), compute)

    def _other_listing(self, api: str, options: Options) -> Optional[ListingResult]:
        """The listing of the other ``--mask`` mode (None without a mask option)."""
        modes = observing.other_mask(self.tree, options)
        return None if modes is None else self.listing(
            self.tree.request(api, dataclasses.replace(options, mask=modes[1])))

    def probe_ahead(self, api: str, options: Options = Options()) -> Optional[Item]:
        return self.ahead.probe(self.runner, self.tree.request(api, options),
                                *self._observing(api, options))

    def mask_listing_ahead(self, api: str, options: Options = Options()) -> Optional[Item]:
        modes = observing.other_mask(self.tree, options)
        if modes is None or self._is_stored("mask-modes", api, dataclasses.asdict(options)):
            return None
        request = self.tree.request(api, dataclasses.replace(options, mask=modes[1]))
        return self.ahead.listing(self.runner, request, self.tree.request(api, options))

    def listing_ahead(self, request: GenerateRequest) -> Optional[Item]:
        return self.ahead.listing(self.runner, request)

    def checks_ahead(self, api: str, filters: Sequence[str],
                     options: Options = Options()) -> Optional[Item]:
        """The filtered runs of these filter checks, in one batch interpreter."""
        todo = missing(self.runner, [self.tree.request(api, options, filter=f) for f in filters
                                     if not self._is_stored("check", api, f,
                                                            dataclasses.asdict(options))])
        return self.ahead.batch(("checks-ahead", api, options), todo, lambda todo: (
            self.prefetch_checks(api, [r.filter for r in todo], options, parallel=1)))

    def analysis_ahead(self, api: str, options: Options = Options(),
                       sections: Optional[str] = None, kinds: Sequence[str] = ()) -> Optional[Item]:
        """The guide of ``api`` computed ahead in a worker interpreter."""
        return self._workers.step(api, options, sections, kinds)

    def start_ahead(self, steps: Sequence[Item], *, wait: bool = False) -> None:
        self.ahead.start(steps, self.progress, self.tree.fmha_dir, {WORKER: 1}, wait=wait)

    def stop_ahead(self) -> None:
        self.ahead.stop()
        self._workers.end_build()

    def apis(self) -> List[ApiInfo]:
        return list(self.tree.apis)

    def dependencies(self) -> List[Path]:  # what decides a result
        return tree_files(self.tree.fmha_dir)

    def model(self, api: str, options: Options = Options()) -> ApiModel:
        return self._kept("model", api, options, lambda: observing.model(
            self.tree, api, options, self.observation(api, options)))

    def trait_groups(self, api: str, options: Options = Options()) -> List[observing.TraitGroup]:
        return self._memo.once(("trait-groups", api, options),
                               lambda: observing.trait_groups(self.observation(api, options)))

    def traits(self, api: str, options: Options = Options()) -> List[List[str]]:
        return self._memo.once(("traits", api, options),
                               lambda: observing.traits(self.trait_groups(api, options)))

    def followers(self, api: str, options: Options = Options()) -> Dict[str, str]:
        """Kernel file -> the kernel ``-f`` tests in its stead (a ``_64bit`` twin)."""
        return self._memo.once(("followers", api, options),
                               lambda: dict(self.observation(api, options).get("followers") or {}))

    def parsed_listing(self, api: str, options: Options, files: List[str]):
        return self._memo.once(("parsed", api, options, tuple(files)),
                               lambda: ParsedListing.of(self.model(api, options), files))

    def baseline(self, api: str, options: Options = Options()) -> Baseline:
        """What every check and set of ``api`` starts from (one unfiltered listing)."""
        def compute() -> Baseline:
            model = self.model(api, options)
            listing = self.runner.list_kernels(self.tree.request(api, options))
            return Baseline(self.tree, api, options, model, listing,
                            self.parsed_listing(api, options, listing.files),
                            self.traits(api, options), self.followers(api, options))

        return self._memo.once(("baseline", api, options), compute)

    def prefetch_checks(self, api: str, filters: List[str], options: Options = Options(),
                        parallel: int = WORKERS, drivers: Sequence[DriverRun] = ()) -> None:
        """The ``-f`` runs of ``filters`` (and the drivers) in batch interpreters."""
        verification.prefetch(self.runner, [self.tree.request(api, options, filter=f)
                                             for f in filters],
                              lambda: self.observation(api, options), parallel, list(drivers))

    def dispatch_reading(self, api: str, options: Options = Options()) -> dict:
        """The generated API dispatch file read as data (:mod:`~.cppapi.reading`)."""
        def compute() -> dict:
            api_file = self.runner.generate_api_file(self.tree.request(api, options))
            return read_dispatch(api_file.text, api_file.kernel_traits)

        return self._kept("dispatch-reading", api, options, compute)

    def dispatch_conditions(self, api: str, options: Options = Options()) -> Dict[str, List[str]]:
        """kernel file -> the readable terms of the dispatch conditions that reach it."""
        return self._memo.once(("dispatch-conditions", api, options),
                               lambda: readable_terms(self.dispatch_reading(api, options)))

    def head_dims(self, api: str, options: Options = Options()):
        return head_dim_buckets(self.model(api, options), self._listed(api, options)[1].parsed,
                                self.dispatch_reading(api, options))

    def mask_modes(self, api: str, options: Options = Options()):
        """What ``--mask`` changes in this API's listing; None without a mask option."""
        modes = observing.other_mask(self.tree, options)
        if modes is None:
            return None

        def compute():
            mine = self.runner.list_kernels(self.tree.request(api, options))
            theirs = self._other_listing(api, options)
            return compare_mask_modes(modes[0], mine.files, modes[1], theirs.files)

        return self._kept("mask-modes", api, options, compute)

    def token_counts(self, api: str, options: Options = Options()):
        return self._kept("token-counts", api, options, lambda: token_counts(
            self.model(api, options), *self._listed(api, options)))

    def pattern_traps(self, api: str, options: Options = Options()):
        return self._kept("pattern-traps", api, options, lambda: pattern_traps(
            self.model(api, options), self._listed(api, options)[1]))

    def _listed(self, api: str, options: Options):
        """(the unfiltered listing's files, parsed) without the observation."""
        files = self.runner.list_kernels(self.tree.request(api, options)).files
        return files, self.parsed_listing(api, options, files)

    def token_dispatch(self, api: str, options: Options = Options()):
        """:func:`~.verify.token_facts.token_dispatch`; None without a dispatch reading."""
        def compute() -> Optional[TokenDispatch]:
            reading = self.dispatch_reading(api, options)
            files, parsed = self._listed(api, options)
            return token_dispatch(self.model(api, options), files, reading,
                                  parsed) if reading else None

        return self._kept("token-dispatch", api, options, compute)

    def check(self, api: str, filter: str, options: Options = Options()) -> FilterCheck:
        """What ``generate.py -f filter`` selects, checked (:mod:`.stages.verification`)."""
        def compute() -> FilterCheck:
            self.model(api, options)
            self.ahead.wait_for(("run", self.tree.request(api, options, filter=filter)))
            return verification.check(self.runner, self.baseline(api, options), filter)

        return self._kept("check", api, options, compute, filter)

    def check_listed(self, api: str, filter: str, options: Options = Options()) -> FilterCheck:
        """:meth:`check`; when write mode fails, the check of the listing alone."""
        try:
            return self.check(api, filter, options)
        except GenerateError as error:
            return verification.listed_only(self.runner, self.baseline(api, options), filter,
                                            error)

    def filter_facts(self, api: str, options: Options = Options()) -> FilterFacts:
        return self._kept("filter-facts", api, options, lambda: verification.filter_facts(
            self.runner, self.baseline(api, options),
            self.trait_groups(api, options) if self.model(api, options).filter.drops == "trait"
            else ()))

    def needs(self, api: str, items: Sequence[str], options: Options = Options()) -> List[Need]:
        """``items`` (``dtype=fp16,bf16``, ...) read by the model (or ``NeedError``)."""
        return resolve_needs(self.model(api, options), parse_needs(items))

    def examples(self, api: str, options: Options = Options()) -> List[Workload]:
        return self._memo.once(("examples", api, options), lambda: example_workloads(
            self.model(api, options), self._listed(api, options)[1]))

    def _recommending(self, api: str, options: Options, needs: Sequence[Need] = (),
                      brief: bool = False):
        """(the inputs of a recommendation, the runner of its runs)."""
        base = self.baseline(api, options)
        inputs = recommending.recommend_inputs(
            self.runner, base, needs, brief,
            tile_names=lambda: self._memo.once(("tile-names", api, options), lambda: tile_names(
                base.model, self.observation(api, options)["records"])),
            read_conditions=lambda: self.dispatch_conditions(api, options),
            read_coupling=lambda make: self._memo.once(("coupling", api, options), make))
        return inputs, recommending.RecommendRunner(
            self.runner, base, lambda filter: self.check_listed(api, filter, options),
            lambda filters, drivers: self.prefetch_checks(api, filters, options, drivers=drivers))

    def select(self, api: str, wanted: Set[str], options: Options = Options()):
        """The fewest ``-f`` runs that select the kernel files ``wanted``, verified."""
        return select_exactly(*self._recommending(api, options), wanted)  # type: ignore[call-arg]

    def recommend(self, api: str, options: Options = Options(), needs: Sequence[Need] = (),
                  brief: bool = False, prepared: object = None) -> Recommendation:
        """The minimal set of ``api`` (``brief``: without losses and tile tables;
        ``prepared``: its filters made)."""
        def compute() -> Recommendation:
            inputs, runs = self._recommending(api, options, needs, brief)
            return finish(inputs, prepared or prepare(inputs), runs)  # type: ignore[arg-type]

        key, parts = recommending.recommend_key(api, options, needs, brief)
        return self._memo.once(key, lambda: self._stored(
            "recommend", compute, *parts, dataclasses.asdict(options)))

    def recommend_all(self, api: str, options: Options, workloads: Sequence[Sequence[Need]],
                      brief: bool = True) -> List[Recommendation]:
        """The sets of several workloads of ``api``, their runs in one batch first."""
        def kept(needs: Sequence[Need]) -> bool:
            key, parts = recommending.recommend_key(api, options, needs, brief)
            return self._memo.value(key) is not None or \
                self._is_stored("recommend", *parts, dataclasses.asdict(options))

        prepared = recommending.prepare_all(
            workloads, kept, lambda needs: prepare(self._recommending(api, options, needs, brief)[0]),
            lambda filters: recommending.driver_run(self.baseline(api, options), filters),
            lambda filters, drivers: self.prefetch_checks(api, filters, options, drivers=drivers))
        return [self.recommend(api, options, needs, brief, prepared.get(number))
                for number, needs in enumerate(workloads)]
