"""One CK tree's stages, run once and kept: the memo of this process and the store.

The CLI and the Sphinx glue ask the session; it runs each stage (:mod:`.stages`,
:mod:`.verify`, :mod:`.cppapi`) on the artifacts of the stages before it, once per
process (:class:`~.process.memo.Memo`), and keeps what is worth keeping in the store
(:class:`~.process.cache.DiskCache`), keyed by the tree's content, our code and the
interpreter: a new process (``sphinx-build -E``) reads it back. No Sphinx imports here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from .analysis.analyze import AnalysisError, Options, Tree
from .analysis_workers import AnalysisWorkers
from .cppapi.reading import read_dispatch, readable_terms
from .locate import fmha_dir as fmha_dir_of
from .model import ApiInfo, ApiModel, FilterCheck, FilterFacts, Need, Recommendation, Workload
from .process.ahead_pool import WORKERS, Item
from .process.cache import DiskCache, tree_files, tree_state
from .process.memo import Memo
from .process.runner import (
    DriverRun,
    GenerateError,
    GenerateRunner,
    check_generate_py,
)
from .stages import observing, recommending, verification
from .stages.ahead_steps import AheadSteps
from .stages.verification import Baseline
from .verify.examples import example_workloads
from .verify.head_dims import head_dim_buckets
from .verify.mask_modes import compare_mask_modes
from .verify.needs import parse_needs, resolve_needs
from .verify.parsed_listing import ParsedListing
from .verify.pattern_traps import pattern_traps
from .verify.recommend import finish, prepare, select_exactly
from .verify.tile_table import tile_names
from .verify.token_facts import dispatch_data, dispatch_from_data, token_counts, token_dispatch

Progress = Optional[Callable[[str], None]]
AheadStep = Item  # one step started ahead of the pages: (what it is, the work)

__all__ = ["Session", "Options", "AnalysisError", "GenerateError"]

_CODE_DIGEST: List[str] = []


def _code_digest() -> str:
    """Our own analysis code: a new version must not reuse old cached models."""
    if not _CODE_DIGEST:
        digest = hashlib.sha256()
        package = Path(__file__).parent
        layers = ("analysis", "verify", "process", "cppapi", "stages")
        paths = [path for layer in layers for path in sorted(package.glob(layer + "/**/*.py"))]
        for path in paths + [package / "model.py", package / "session.py"]:
            digest.update(path.relative_to(package).as_posix().encode() + path.read_bytes())
        _CODE_DIGEST.append(digest.hexdigest())
    return _CODE_DIGEST[0]


class Session(AheadSteps):
    """Models, filter checks and recommendations for one CK tree (work started ahead of
    the pages: :class:`~.stages.ahead_steps.AheadSteps`)."""

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
        self.tree = Tree.load(self.ck_root)
        self.runner = GenerateRunner(self.tree.fmha_dir, python=self.python, cache=self.cache,
                                     options=self.tree.supported_dests(),
                                     timeout=timeout, progress=progress)
        self._memo = Memo()
        self._workers = AnalysisWorkers(self)
        AheadSteps.__init__(self)

    def _once(self, key: Tuple, compute: Callable[[], Any], ahead: bool = False) -> Any:
        return self._memo.once(key, compute, ahead)

    def _memo_value(self, key: Tuple) -> object:
        return self._memo.value(key)

    def _stored_key(self, kind: str, *parts) -> str:
        return self.cache.key_for(kind, self.inputs.digest, _code_digest(),
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
        return self._once((kind, api, *parts, options), lambda: self._stored(
            kind, compute, api, *parts, dataclasses.asdict(options)))

    @property
    def fmha_dir(self) -> Path:
        return fmha_dir_of(self.ck_root)

    def apis(self) -> List[ApiInfo]:
        return list(self.tree.apis)

    def dependencies(self) -> List[Path]:  # generate.py and codegen/: what decides a result
        return tree_files(self.tree.fmha_dir)

    def model(self, api: str, options: Options = Options()) -> ApiModel:
        return self._kept("model", api, options, lambda: observing.model(
            self.tree, api, options, self.observation(api, options)))

    def trait_groups(self, api: str, options: Options = Options()) -> List[observing.TraitGroup]:
        return self._once(("trait-groups", api, options),
                          lambda: observing.trait_groups(self.observation(api, options)))

    def traits(self, api: str, options: Options = Options()) -> List[List[str]]:
        return self._once(("traits", api, options),
                          lambda: observing.traits(self.trait_groups(api, options)))

    def followers(self, api: str, options: Options = Options()) -> Dict[str, str]:
        """Kernel file -> the kernel whose name ``-f`` tests in its stead (a ``_64bit``
        twin), as the probe observed them (empty for most trees)."""
        return self._once(("followers", api, options),
                          lambda: dict(self.observation(api, options).get("followers") or {}))

    def parsed_listing(self, api: str, options: Options, files: List[str]):
        return self._once(("parsed", api, options, tuple(files)),
                          lambda: ParsedListing.of(self.model(api, options), files))

    def baseline(self, api: str, options: Options = Options()) -> Baseline:
        """What every check and set of ``api`` starts from (one unfiltered listing)."""
        def compute() -> Baseline:
            model = self.model(api, options)
            listing = self.runner.list_kernels(self.tree.request(api, options))
            return Baseline(self.tree, api, options, model, listing,
                            self.parsed_listing(api, options, listing.files),
                            self.traits(api, options), self.followers(api, options))

        return self._once(("baseline", api, options), compute)

    def prefetch_checks(self, api: str, filters: List[str], options: Options = Options(),
                        parallel: int = WORKERS, driver: Optional[DriverRun] = None,
                        drivers: Sequence[DriverRun] = ()) -> None:
        """Run the ``-f`` runs that checking ``filters`` needs (and the driver runs) in
        up to ``parallel`` batch interpreters, ahead of :meth:`check`."""
        verification.prefetch(self.runner, [self.tree.request(api, options, filter=f)
                                             for f in filters],
                              lambda: self.observation(api, options), parallel,
                              [*([driver] if driver is not None else []), *drivers])

    def dispatch_reading(self, api: str, options: Options = Options()) -> dict:
        """The generated API dispatch file read as data (:mod:`~.cppapi.reading`)."""
        def compute() -> dict:
            api_file = self.runner.generate_api_file(self.tree.request(api, options))
            return read_dispatch(api_file.text, api_file.kernel_traits)

        return self._kept("dispatch-reading", api, options, compute)

    def dispatch_conditions(self, api: str, options: Options = Options()) -> Dict[str, List[str]]:
        """kernel file -> the readable terms of the dispatch conditions that reach it."""
        return self._once(("dispatch-conditions", api, options),
                          lambda: readable_terms(self.dispatch_reading(api, options)))

    def head_dims(self, api: str, options: Options = Options()):
        return head_dim_buckets(self.model(api, options), self._listed(api, options)[1].parsed,
                                self.dispatch_reading(api, options))

    def mask_modes(self, api: str, options: Options = Options()):
        """What ``--mask`` changes in this API's listing; None without a mask option."""
        modes = self._other_mask(api, options)
        if modes is None:
            return None
        this, other = modes

        def compute():
            mine = self.runner.list_kernels(self.tree.request(api, options))
            theirs = self.listing(self.tree.request(api, dataclasses.replace(options, mask=other)))
            return compare_mask_modes(this, mine.files, other, theirs.files)

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
        """:func:`~.verify.token_facts.token_dispatch` over the dispatch reading; None
        when the reading is empty."""
        def compute() -> Optional[dict]:
            reading = self.dispatch_reading(api, options)
            files, parsed = self._listed(api, options)
            return dispatch_data(token_dispatch(self.model(api, options), files, reading,
                                                parsed)) if reading else None

        return dispatch_from_data(self._kept("token-dispatch", api, options, compute))

    def check(self, api: str, filter: str, options: Options = Options()) -> FilterCheck:
        """What ``generate.py -f filter`` selects, checked (:mod:`.stages.verification`)."""
        def compute() -> FilterCheck:
            self.model(api, options)
            self._wait_for_batch(api, options, filter)
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
            self.runner, self.baseline(api, options)))

    def needs(self, api: str, items: Sequence[str], options: Options = Options()) -> List[Need]:
        """``items`` (``dtype=fp16,bf16``, ...) as the model of ``api`` understands them;
        raises :class:`~.verify.needs.NeedError` for an unknown segment or value."""
        return resolve_needs(self.model(api, options), parse_needs(items))

    def examples(self, api: str, options: Options = Options()) -> List[Workload]:
        return self._once(("examples", api, options), lambda: example_workloads(
            self.model(api, options), self._listed(api, options)[1]))

    def _recommending(self, api: str, options: Options, needs: Sequence[Need] = (),
                      brief: bool = False):
        """(the inputs of a recommendation, the runner of its runs)."""
        base = self.baseline(api, options)
        inputs = recommending.recommend_inputs(
            self.runner, base, needs, brief,
            tile_names=lambda: self._once(("tile-names", api, options), lambda: tile_names(
                base.model, self.observation(api, options)["records"])),
            read_conditions=lambda: self.dispatch_conditions(api, options),
            read_coupling=lambda make: self._once(("coupling", api, options), make))
        return inputs, recommending.RecommendRunner(
            self.runner, base, lambda filter: self.check_listed(api, filter, options),
            lambda filters, drivers: self.prefetch_checks(api, filters, options, drivers=drivers))

    def select(self, api: str, wanted: Set[str], options: Options = Options()):
        """The fewest ``-f`` runs that select the kernel files ``wanted``, verified."""
        return select_exactly(*self._recommending(api, options), wanted)  # type: ignore[call-arg]

    def recommend(self, api: str, options: Options = Options(), needs: Sequence[Need] = (),
                  brief: bool = False, prepared: object = None) -> Recommendation:
        """The minimal set of ``api``; with ``needs``, the set for that workload;
        ``brief``: without losses and tile tables (``prepared``: its filters made)."""
        def compute() -> Recommendation:
            inputs, runs = self._recommending(api, options, needs, brief)
            return finish(inputs, prepared or prepare(inputs), runs)  # type: ignore[arg-type]

        key, parts = recommending.recommend_key(api, options, needs, brief)
        return self._once(key, lambda: self._stored(
            "recommend", compute, *parts, dataclasses.asdict(options)))

    def recommend_all(self, api: str, options: Options, workloads: Sequence[Sequence[Need]],
                      brief: bool = True) -> List[Recommendation]:
        """The sets of several workloads of ``api``, their runs in one batch first."""
        def kept(needs: Sequence[Need]) -> bool:
            key, parts = recommending.recommend_key(api, options, needs, brief)
            return self._memo_value(key) is not None or \
                self._is_stored("recommend", *parts, dataclasses.asdict(options))

        prepared = recommending.prepare_all(
            workloads, kept, lambda needs: prepare(self._recommending(api, options, needs, brief)[0]),
            lambda filters: recommending.driver_run(self.baseline(api, options), filters),
            lambda filters, drivers: self.prefetch_checks(api, filters, options, drivers=drivers))
        return [self.recommend(api, options, needs, brief, prepared.get(number))
                for number, needs in enumerate(workloads)]
