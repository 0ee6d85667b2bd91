"""One CK tree, its models and verified results, memoised for a process.

This is the single entry point the CLI and the Sphinx glue use: it does the expensive
work once per (tree, API, options) and keeps it, while the on-disk cache keeps it
across processes (``sphinx-build -E`` included). No Sphinx imports here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
import threading
from collections import Counter
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, cast

from .analysis.analyze import AnalysisError, Options, Tree, build_model, module_rel_of
from .analysis.source import analyze_source
from .analysis_workers import WORKER, AnalysisWorkers
from .locate import fmha_dir as fmha_dir_of
from .model import (
    ApiInfo,
    ApiModel,
    ConditionGroup,
    FilterCheck,
    FilterFacts,
    Need,
    PatternTrap,
    Recommendation,
    TokenCounts,
    TokenDispatch,
    Workload,
    from_dict,
    to_dict,
)
from .process.ahead import WORKERS, AheadPool, Item
from .process.cache import (
    DiskCache,
    TreeState,
    pack,
    share_items,
    tree_files,
    tree_state,
    unpack,
    unshare_items,
)
from .process.progress import report_ahead
from .process.runner import (
    DriverRun,
    GenerateError,
    GenerateRequest,
    GenerateRunner,
    ListingResult,
    check_generate_py,
)

Progress = Optional[Callable[[str], None]]
#: One step to start ahead of the pages: (what it is, for the progress line; the work).
AheadStep = Item

__all__ = ["Session", "Options", "AnalysisError", "GenerateError"]


_CODE_DIGEST: List[str] = []
#: The fields of a dispatch reading's kernels kept as indices into one table of their
#: distinct items (a few dozen condition terms repeated across thousands of kernels).
_READING_ITEMS = ("terms", "chosen_by")

#: The dataclasses a result kept with ``pack`` may hold.
_MODEL_CLASSES: Dict[str, type] = {cls.__name__: cls for cls in (TokenDispatch, ConditionGroup,
                                                                   PatternTrap)}


def _code_digest() -> str:
    """Our own analysis code: a new version must not reuse old cached models."""
    if not _CODE_DIGEST:
        digest = hashlib.sha256()
        package = Path(__file__).parent
        layers = ("analysis", "verify", "process", "cppapi")
        paths = [path for layer in layers for path in sorted(package.glob(layer + "/**/*.py"))]
        for path in paths + [package / "model.py", package / "session.py"]:
            digest.update(path.relative_to(package).as_posix().encode() + path.read_bytes())
        _CODE_DIGEST.append(digest.hexdigest())
    return _CODE_DIGEST[0]


class _Memo:
    """Results computed once per process, each under its own lock, so a result being
    computed (by a page, or ahead of it in the background) is waited for, not computed
    again. A failure of work started ahead is kept until :meth:`forget_failures` (the
    end of the build's reading): every page that needs it gets it, and nothing runs the
    failing step again in that build."""

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
        #: The tree when this session first read it: what its own results (models,
        #: checks, recommendations) are keyed by, and stored only if it is still so.
        self.inputs = tree_state(fmha_dir_of(self.ck_root))
        self.tree = Tree.load(self.ck_root)
        self.runner = GenerateRunner(self.tree.fmha_dir, python=self.python, cache=self.cache,
                                     options=self.tree.supported_dests(),
                                     timeout=timeout, progress=progress)
        self._memo = _Memo()
        self._ahead: Optional[AheadPool] = None
        #: (api, options, filter) -> the key of the batch started ahead that runs it
        self._check_batches: Dict[Tuple, Tuple] = {}
        #: unfiltered request -> (api, options) of the probe started ahead that lists it
        self._probes: Dict[GenerateRequest, Tuple[str, Options]] = {}
        #: other --mask request -> keeps the listing its probe made (see _observe)
        self._probe_listings: Dict[GenerateRequest, Callable[[], None]] = {}
        self._workers = AnalysisWorkers(self)

    # -- memo -----------------------------------------------------------------
    def _once(self, key: Tuple, compute: Callable[[], object], ahead: bool = False):
        return self._memo.once(key, compute, ahead)

    def _memo_value(self, key: Tuple) -> object:
        return self._memo.value(key)

    # -- public ---------------------------------------------------------------
    @property
    def fmha_dir(self) -> Path:
        return fmha_dir_of(self.ck_root)

    def apis(self) -> List[ApiInfo]:
        return list(self.tree.apis)

    def dependencies(self) -> List[Path]:
        """Every file whose change can change a result: generate.py and codegen/."""
        return tree_files(self.tree.fmha_dir)

    # -- work started ahead of the pages ----------------------------------------
    # Each ``*_ahead`` method returns the step that a page will need, or None when its
    # result is cached already (a warm rebuild starts nothing). The step runs through
    # the same memo as the page's own call: the page waits for it, or gets its failure.

    def probe_ahead(self, api: str, options: Options = Options()) -> Optional[AheadStep]:
        """The probe of ``api`` (the model, the listing and the dispatch file need it)."""
        request = self.tree.request(api, options)
        if self.runner.has_result("list", request):
            return None
        key = ("observation", api, options)
        self._probes[request] = (api, options)
        return "probe", lambda: self._once(key, lambda: self._observe(api, options), ahead=True)

    def mask_listing_ahead(self, api: str, options: Options = Options()) -> Optional[AheadStep]:
        """The listing with the other ``--mask`` mode (what :meth:`mask_modes` compares)."""
        modes = self._other_mask(api, options)
        if modes is None or self._is_stored("mask-modes", api, dataclasses.asdict(options)):
            return None
        request = self.tree.request(api, dataclasses.replace(options, mask=modes[1]))
        probe = self._probes.get(self.tree.request(api, options))
        if probe is not None:  # the probe started ahead lists this mode too (see _observe)
            self._probes.setdefault(request, probe)
        return self.listing_ahead(request)

    def listing_ahead(self, request: GenerateRequest) -> Optional[AheadStep]:
        """``generate.py -l`` for ``request`` (for :meth:`listing`)."""
        if self.runner.has_result("list", request) or request in self._probes:
            return None  # cached, or the probe started ahead lists it
        return "listing", lambda: self._once(
            ("listing", request), lambda: self.runner.list_kernels(request), ahead=True)

    def checks_ahead(self, api: str, filters: Sequence[str],
                     options: Options = Options()) -> Optional[AheadStep]:
        """The filtered runs of these filter checks, in one batch interpreter."""
        from .process.batch import missing

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

    def start_ahead(self, steps: Sequence[AheadStep], *, wait: bool = False) -> None:
        """Start ``steps`` in the background, two at a time (``wait``: and wait for
        them: the pages are read in forked processes, which inherit no thread)."""
        if self._ahead is not None:  # a build before this one did not stop it
            self._ahead.cancel()
            self._ahead.wait()
        if not steps:
            return
        apis = sorted({api for api, _ in self._probes.values()})

        def done(seconds: float, ran: Counter) -> None:
            if not ran:
                return  # every step found its work done by a page
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

    def analysis_ahead(self, api: str, options: Options = Options(),
                       sections: Optional[str] = None, kinds: Sequence[str] = ()) -> Optional[AheadStep]:
        """The guide of ``api`` (its ``sections``, None: all) computed ahead in a worker
        interpreter (:mod:`~sphinxext_fmha.analysis_workers`); None when the results of
        ``kinds`` (what its page keeps on disk) are all stored."""
        return self._workers.step(api, options, sections, kinds)

    def _stored_key(self, kind: str, *parts) -> str:
        return self.cache.key_for(kind, self.inputs.digest, _code_digest(),
                                  self.runner.python_id(), *parts)

    def _is_stored(self, kind: str, *parts) -> bool:
        return self.cache.has(self._stored_key(kind, *parts))

    def _stored(self, kind: str, cls: type, compute: Callable[[], object], *parts) -> object:
        """A result kept on disk, keyed by the tree's content, our own code and the
        interpreter: a new process (``sphinx-build -E``) reads it back. ``cls``: a
        dataclass of the model (kept with ``to_dict``), ``dict`` (JSON data), or
        ``object`` (anything :func:`~sphinxext_fmha.process.cache.pack` keeps)."""
        key = self._stored_key(kind, *parts)
        found, value = self._read_stored(key, cls)
        if not found and self._workers.wait_or_claim(parts):
            found, value = self._read_stored(key, cls)
        if found:
            return value
        value = compute()
        if cls is object:
            self.cache.put(key, {"packed": pack(value)}, self.inputs)
        else:
            self.cache.put(key, to_dict(value) if cls is not dict else {"value": value},
                           self.inputs)
        return value

    def _read_stored(self, key: str, cls: type) -> Tuple[bool, object]:
        hit = self.cache.get(key)
        if hit is not None:
            try:
                if cls is object:
                    return True, unpack(hit["packed"], _MODEL_CLASSES)
                return True, from_dict(cls, hit) if cls is not dict else hit["value"]
            except (TypeError, KeyError, ValueError):
                pass
        return False, None

    def model(self, api: str, options: Options = Options()) -> ApiModel:
        def compute() -> ApiModel:
            # The observation this session holds (the probe may have run ahead, while
            # other probes pushed it out of the analysis' small in-process memo).
            observed = self.observation(api, options)
            info = self.tree.api(api)
            facts = analyze_source(self.tree.fmha_dir, module_rel_of(self.tree, info))
            return build_model(self.tree, info, options, observed, facts, observed["listing"])

        return self._once(("model", api, options), lambda: self._stored(
            "model", ApiModel, compute, api, dataclasses.asdict(options)))

    def observation(self, api: str, options: Options = Options()) -> dict:
        """The probe's raw observation (cached on disk by the analysis)."""
        return self._once(("observation", api, options), lambda: self._observe(api, options))

    def _probe_runs(self, api: str, options: Options
                    ) -> Tuple[GenerateRequest, List[str], Optional[GenerateRequest],
                               Optional[List[str]]]:
        """(request, the probe's generate.py arguments, the other ``--mask`` request and
        the arguments of its listing, which the probe makes too; None, None without a
        mask option)."""
        from .analysis.analyze import probe_argv

        request = self.tree.request(api, options)
        supported = self.tree.supported_dests()
        modes = self._other_mask(api, options)
        if modes is None:
            return request, probe_argv(request, supported), None, None
        other = self.tree.request(api, dataclasses.replace(options, mask=modes[1]))
        return request, probe_argv(request, supported), other, probe_argv(other, supported)

    def _observe(self, api: str, options: Options) -> dict:
        from .analysis.observe import observe

        # The probe also lists the other --mask mode (what mask_modes compares) in its
        # interpreter, where the codegen is imported already: no process of its own.
        request, argv, other, also_argv = self._probe_runs(api, options)
        inputs = self.runner.state()
        observed = observe(self.tree.fmha_dir, argv, python=self.python, cache=self.cache,
                           timeout=self.timeout, progress=self.progress, also_list=also_argv,
                           inputs=inputs)
        self._store_probe_runs(request, observed, inputs)
        if other is not None and also_argv is not None:
            self._probe_listings[other] = lambda: self._store_other_listing(
                other, argv, also_argv, inputs)
        return observed

    def _other_listing_running(self, api: str, options: Options) -> bool:
        """Whether the probe of ``api`` is still making its other ``--mask`` listing."""
        from .analysis.observe import also_listing_running

        _, argv, _, also_argv = self._probe_runs(api, options)
        return also_argv is not None and also_listing_running(
            self.tree.fmha_dir, argv, also_argv, python=self.python, cache=self.cache)

    def _store_other_listing(self, request: GenerateRequest, argv: List[str],
                             also_argv: List[str], inputs: TreeState) -> None:
        """Keep the other listing the probe made (waiting for it while the probe still
        lists it) as that run's result, when it ran cleanly (else that listing runs as a
        process and says what is wrong)."""
        from .analysis.observe import observe_also

        also = observe_also(self.tree.fmha_dir, argv, also_argv, python=self.python,
                            cache=self.cache, inputs=inputs) or {}
        if "listing" in also and not also.get("error"):
            self.runner.store_listing(request, also["listing"], float(also.get("seconds", 0.0)),
                                      inputs=inputs)

    def listing(self, request: GenerateRequest) -> ListingResult:
        """``generate.py -l`` for ``request`` (the runner's cache; once per process, so a
        listing started ahead is waited for, not run again, and one that a probe started
        ahead makes is read from the probe)."""
        def compute() -> ListingResult:
            probe = self._probes.get(request)
            if probe is not None:
                try:
                    self.observation(*probe)
                except Exception:  # noqa: BLE001 - the listing's own run says what is wrong
                    pass
            made = self._probe_listings.get(request)
            if made is not None:
                made()  # the probe's other listing, kept when it ran cleanly
            return self.runner.list_kernels(request)

        return self._once(("listing", request), compute)

    def _store_probe_runs(self, request: GenerateRequest, observed: dict,
                          inputs: TreeState) -> None:
        """The probe's run is the unfiltered ``generate.py -l``, and it rendered the
        dispatch file write mode writes: keep both as those runs' results, so neither
        runs again (``runner.list_kernels`` / ``generate_api_file`` read them back)."""
        seconds = float(observed.get("seconds", {}).get("observe", 0.0))
        self.runner.store_listing(request, observed["listing"], seconds, inputs=inputs)
        dispatch = observed.get("dispatch") or {}
        if dispatch and not dispatch.get("error"):
            self.runner.store_api_file(request, dispatch["api_file"], dispatch["text"],
                                       dispatch["kernel_traits"],
                                       float(dispatch.get("seconds", 0.0)),
                                       kernel_bytes=dispatch.get("kernel_bytes"),
                                       api_bytes=int(dispatch.get("api_bytes") or 0), inputs=inputs)

    def traits(self, api: str, options: Options = Options()) -> List[List[str]]:
        """Kernel files generated together (one fnmatch decision each), as observed;
        only the traits whose every member is a listed kernel."""
        return self._once(("traits", api, options), lambda: [
            [filename for filename, _ in group] for group in self.trait_groups(api, options)
            if all(filename is not None for filename, _ in group)])

    def trait_groups(self, api: str, options: Options = Options()) -> List[List[Tuple[Optional[str], str]]]:
        """Every observed trait with a listed member: per member (its file, or None when
        no listed kernel has that name -- a member the trait does not write, such as a
        disabled kernel -- and its name, which the filter part is still matched against)."""
        def compute() -> List[List[Tuple[Optional[str], str]]]:
            observed = self.observation(api, options)
            records = observed["records"]
            marker_groups = observed.get("fnmatch_calls", {}).get("groups", [])
            size = len(marker_groups[0]) if marker_groups else 1
            summary = observed.get("unfiltered_calls", {})
            unlisted = summary.get("unlisted", [])
            calls = [index for group in summary.get("groups", []) for _, index in group]
            if size < 2 or len(calls) % size:
                return []
            # With every part matching, each trait makes one call per part, in the
            # order the marker run showed; a trait none of whose names is listed was
            # dropped by a later rule.
            groups = []
            for start in range(0, len(calls), size):
                indices = calls[start:start + size]
                if not any(i >= 0 for i in indices):
                    continue
                groups.append([(records[i]["filename"], records[i]["name"]) if i >= 0
                               else (None, unlisted[-2 - i] if 0 <= -2 - i < len(unlisted) else "")
                               for i in indices])
            return groups

        return self._once(("trait-groups", api, options), compute)

    def prefetch_checks(self, api: str, filters: List[str], options: Options = Options(),
                        parallel: int = WORKERS, driver: Optional[DriverRun] = None,
                        drivers: Sequence[DriverRun] = ()) -> None:
        """Run the ``-f`` runs that checking ``filters`` needs (and the ``driver`` runs,
        if given) in up to ``parallel`` batches (one interpreter each, see
        process/batch.py), ahead of :meth:`check`."""
        from .process.batch import missing, prefetch

        requests = [self.tree.request(api, options, filter=f) for f in filters]
        runs = [*([driver] if driver is not None else []), *drivers]
        if not missing(self.runner, requests) and all(
                self.runner.has_driver_result(kind, run) for run in runs
                for kind in ("list", "api")):
            return  # all cached: not even the probe's observation is needed
        observed = self.observation(api, options)
        dispatch = observed.get("dispatch") or {}
        traits = dispatch.get("kernel_traits", {})
        known = {sha: traits[name] for name, sha in dispatch.get("kernel_sha", {}).items()
                 if name in traits}
        # The probe's unfiltered listing: what one job costs at most (batch.interpreters).
        listed = (observed.get("seconds") or {}).get("observe")
        prefetch(self.runner, requests, dispatch=True, known_keys=known, parallel=parallel,
                 job_seconds=float(listed) if listed is not None else None, drivers=runs)

    def parsed_listing(self, api: str, options: Options, files: List[str]):
        from .verify.parsed_listing import ParsedListing

        return self._once(("parsed", api, options, tuple(files)),
                          lambda: ParsedListing.of(self.model(api, options), files))

    def dispatch_reading(self, api: str, options: Options = Options()) -> dict:
        """The generated API dispatch file read as data
        (:func:`~sphinxext_fmha.cppapi.reading.read_dispatch`)."""
        from .cppapi.reading import read_dispatch

        def compute() -> dict:
            api_file = self.runner.generate_api_file(self.tree.request(api, options))
            return read_dispatch(api_file.text, api_file.kernel_traits)

        def shared() -> dict:
            reading = compute()
            return dict(reading, kernels=share_items(reading["kernels"], _READING_ITEMS))

        def whole() -> dict:
            stored = cast(dict, self._stored("dispatch-reading", dict, shared, api,
                                             dataclasses.asdict(options)))
            return dict(stored, kernels=unshare_items(stored["kernels"], _READING_ITEMS))

        return self._once(("dispatch-reading", api, options), whole)

    def dispatch_conditions(self, api: str, options: Options = Options()) -> Dict[str, List[str]]:
        """kernel file -> the readable terms of the dispatch conditions that reach it
        (sub-kernel choices and terms that differ between its branches left out)."""
        from .cppapi.reading import readable_terms

        return self._once(("dispatch-conditions", api, options),
                          lambda: readable_terms(self.dispatch_reading(api, options)))

    def head_dims(self, api: str, options: Options = Options()):
        """The (hdim_q, hdim_v) buckets each head-dim token serves
        (:func:`~sphinxext_fmha.verify.head_dims.head_dim_buckets`)."""
        from .verify.head_dims import head_dim_buckets

        listing = self.runner.list_kernels(self.tree.request(api, options))
        return head_dim_buckets(self.model(api, options),
                                self.parsed_listing(api, options, listing.files).parsed,
                                self.dispatch_reading(api, options))

    def _other_mask(self, api: str, options: Options) -> Optional[Tuple[str, str]]:
        """(this mask mode, the other one), or None when generate.py has no mask option."""
        option = self.tree.option("mask")
        if option is None:
            return None
        this = options.mask or option.default or "simplified"
        return this, "simplified" if this == "generic" else "generic"

    def mask_modes(self, api: str, options: Options = Options()):
        """What ``--mask`` changes in this API's listing
        (:func:`~sphinxext_fmha.verify.mask_modes.compare_mask_modes`); None when the
        tree's generate.py has no mask option."""
        from .verify.mask_modes import MaskModes, compare_mask_modes

        modes = self._other_mask(api, options)
        if modes is None:
            return None
        this, other = modes

        def compute() -> dict:
            mine = self.runner.list_kernels(self.tree.request(api, options))
            theirs = self.listing(self.tree.request(api, dataclasses.replace(options, mask=other)))
            return dataclasses.asdict(compare_mask_modes(this, mine.files, other, theirs.files))

        stored = self._once(("mask-modes", api, options), lambda: self._stored(
            "mask-modes", dict, compute, api, dataclasses.asdict(options)))
        return MaskModes(**stored)

    def token_counts(self, api: str, options: Options = Options()) -> TokenCounts:
        """:func:`~sphinxext_fmha.verify.token_facts.token_counts` of the unfiltered
        listing, kept on disk (a warm rebuild does not parse every name again)."""
        from .verify.token_facts import token_counts

        def compute() -> TokenCounts:
            listing = self.runner.list_kernels(self.tree.request(api, options))
            return token_counts(self.model(api, options), listing.files,
                                self.parsed_listing(api, options, listing.files))

        return self._once(("token-counts", api, options), lambda: self._stored(
            "token-counts", object, compute, api, dataclasses.asdict(options)))

    def pattern_traps(self, api: str, options: Options = Options()) -> List[PatternTrap]:
        """:func:`~sphinxext_fmha.verify.pattern_traps.pattern_traps` of the unfiltered
        listing, kept on disk."""
        from .verify.pattern_traps import pattern_traps

        def compute() -> List[PatternTrap]:
            listing = self.runner.list_kernels(self.tree.request(api, options))
            return pattern_traps(self.model(api, options),
                                 self.parsed_listing(api, options, listing.files))

        return self._once(("pattern-traps", api, options), lambda: self._stored(
            "pattern-traps", object, compute, api, dataclasses.asdict(options)))

    def token_dispatch(self, api: str, options: Options = Options()) -> Optional[TokenDispatch]:
        """:func:`~sphinxext_fmha.verify.token_facts.token_dispatch` over the dispatch
        reading, kept on disk (in the compact form of
        :func:`~sphinxext_fmha.verify.token_facts.dispatch_data`); None when the reading
        is empty."""
        from .verify.token_facts import dispatch_data, dispatch_from_data, token_dispatch

        def compute() -> Optional[dict]:
            reading = self.dispatch_reading(api, options)
            if not reading:
                return None
            listing = self.runner.list_kernels(self.tree.request(api, options))
            return dispatch_data(token_dispatch(self.model(api, options), listing.files, reading,
                                                self.parsed_listing(api, options, listing.files)))

        return self._once(("token-dispatch", api, options), lambda: dispatch_from_data(self._stored(
            "token-dispatch", dict, compute, api, dataclasses.asdict(options))))

    def check(self, api: str, filter: str, options: Options = Options()) -> FilterCheck:
        """What ``generate.py -f filter`` selects: the filtered listing and write-mode
        run, checked against the unfiltered listing and the model's prediction."""
        from .verify.filtercheck import check_filter

        def compute() -> FilterCheck:
            model = self.model(api, options)
            batch = self._check_batches.get((api, options, filter))
            if batch is not None:  # started ahead: wait for it (or run it now)
                self._once(batch[0], batch[1])
            baseline_listing = self.runner.list_kernels(self.tree.request(api, options))
            request = self.tree.request(api, options, filter=filter)
            listing = self.runner.list_kernels(request)
            api_file, write_error = None, ""
            write_command = self.runner.api_file_command(request) if listing.count else ""
            if listing.count:
                try:
                    api_file = self.runner.generate_api_file(request)
                except GenerateError as error:
                    write_error = error.own_failure()  # the filter's own failure is a result
                    if not write_error:
                        raise
            check = check_filter(model, filter, baseline_listing, listing,
                                 self.parsed_listing(api, options, baseline_listing.files),
                                 self.traits(api, options), api_file,
                                 followers=self.followers(api, options), write_error=write_error,
                                 full_api=lambda: self._full_api(api, options))
            check.write_command = write_command
            if model.list_appends:
                check.command = self.runner.listing_command(request, appends=True)
            return check

        return self._once(("check", api, filter, options), lambda: self._stored(
            "check", FilterCheck, compute, api, filter, dataclasses.asdict(options)))

    def _full_api(self, api: str, options: Options):
        """The unfiltered run's dispatch file and kernels (None when it cannot be written)."""
        try:
            return self.runner.generate_api_file(self.tree.request(api, options))
        except GenerateError:
            return None

    def followers(self, api: str, options: Options = Options()) -> Dict[str, str]:
        """Kernel file -> the kernel whose name ``-f`` tests in its stead: kernels the
        codegen generates right after another one passed its filter, their own names never
        tested (a ``_64bit`` twin), as the probe observed them (empty for most trees)."""
        return self._once(("followers", api, options),
                          lambda: dict(self.observation(api, options).get("followers") or {}))

    def filter_facts(self, api: str, options: Options = Options()) -> FilterFacts:
        """What a filter that keeps a kernel without its dispatch partners does in write
        mode, and what ``--targets`` gives (:mod:`~sphinxext_fmha.verify.filter_facts`),
        each from generate.py runs of its own; kept on disk."""
        return self._once(("filter-facts", api, options), lambda: self._stored(
            "filter-facts", FilterFacts, lambda: self._filter_facts(api, options),
            api, dataclasses.asdict(options)))

    def _filter_facts(self, api: str, options: Options) -> FilterFacts:
        from .analysis.arch_names import arch_names
        from .verify import filter_facts as plan

        model = self.model(api, options)
        listing = self.runner.list_kernels(self.tree.request(api, options))
        baseline = self.parsed_listing(api, options, listing.files)
        facts = FilterFacts()
        independent = model.filter.drops == "kernel" and len(
            {c for p in model.filter.parts for c in p.applies_to}) > 1
        partner = plan.partner_plan(model, baseline, self._full_api(api, options)) \
            if independent else None
        if partner is not None:
            request = self.tree.request(api, options, filter=partner.filter)
            listed = self.runner.list_kernels(request)
            written, error = None, ""
            try:
                written = self.runner.generate_api_file(request)
            except GenerateError as failure:
                error = failure.own_failure()
                if not error:
                    raise
            facts.partner_write = plan.partner_write(
                partner, self.runner.api_file_command(request), listed.count, written, error)
        if self.tree.option("targets") is None or not model.checks.get("blob_function_takes_targets"):
            return facts
        families = arch_names(self.tree.fmha_dir)
        facts.targets.append(plan.target_listing(
            model, families, model.options.get("targets") or "", listing.command, listing.files,
            default=True))
        for family in plan.targets_to_measure(model, families, listing.files):
            measured = self.runner.list_kernels(self.tree.request(
                api, dataclasses.replace(options, targets=family)))
            facts.targets.append(plan.target_listing(model, families, family, measured.command,
                                                     measured.files))
        return facts

    def check_listed(self, api: str, filter: str, options: Options = Options()) -> FilterCheck:
        """:meth:`check`; when write mode fails (newer CK refuses some sets in
        write_blobs), the listing still counts: the check of the listing alone, not
        marked as written, its last note the reason."""
        try:
            return self.check(api, filter, options)
        except GenerateError as error:
            from .verify.filtercheck import check_filter

            baseline_listing = self.runner.list_kernels(self.tree.request(api, options))
            listing = self.runner.list_kernels(self.tree.request(api, options, filter=filter))
            check = check_filter(self.model(api, options), filter, baseline_listing, listing,
                                 self.parsed_listing(api, options, baseline_listing.files),
                                 self.traits(api, options))
            check.write_error = (error.stderr_tail or str(error)).strip().splitlines()[-1]
            check.notes.append("write mode failed: %s" % check.write_error)
            return check

    def select(self, api: str, wanted: Set[str], options: Options = Options()):
        """The fewest ``-f`` runs that select the kernel files ``wanted``, run and verified
        as the minimal set's (:func:`~sphinxext_fmha.verify.recommend.select_exactly`):
        (the runs as a :class:`Recommendation`, the union of their listings)."""
        from .verify.recommend import select_exactly

        inputs, runner = self._recommend_inputs(api, options)
        return select_exactly(inputs, runner, wanted)

    def recommend(self, api: str, options: Options = Options(), needs: Sequence[Need] = (),
                  brief: bool = False, prepared: object = None) -> Recommendation:
        """The minimal set of ``api``; with ``needs`` (:meth:`needs`), the set for that
        workload; ``brief``: without losses and tile tables (``prepared``: its filters
        made already, see :meth:`recommend_all`)."""
        from .verify.recommend import finish, prepare

        def compute() -> Recommendation:
            inputs, runner = self._recommend_inputs(api, options, needs, brief)
            return finish(inputs, cast(Any, prepared) or prepare(inputs), runner)

        key, parts = self._recommend_key(api, options, needs, brief)
        return self._once(key, lambda: self._stored(
            "recommend", Recommendation, compute, *parts, dataclasses.asdict(options)))

    def _recommend_key(self, api: str, options: Options, needs: Sequence[Need], brief: bool
                       ) -> Tuple[Tuple, Tuple]:
        """(the memo's key, the parts of the key on disk) of a recommendation: the
        default set keeps its key; a workload's set is kept under its needs too."""
        from .verify.needs import needs_key

        key = needs_key(needs)
        parts: Tuple = (api,)
        if key:
            parts += ([list(item) for item in key],)
        if brief:
            parts += ("brief",)
        return ("recommend", api, options, key, brief), parts

    def recommend_all(self, api: str, options: Options, workloads: Sequence[Sequence[Need]],
                      brief: bool = True) -> List[Recommendation]:
        """The sets of several workloads of ``api``: the filters of each one not made yet
        first, then all their runs (and drivers) in one batch, then each set."""
        from .verify.recommend import prepare

        prepared: Dict[int, object] = {}
        filters: List[str] = []
        drivers: List[DriverRun] = []
        separator = self.model(api, options).filter.api_split or ""
        for number, needs in enumerate(workloads):
            key, parts = self._recommend_key(api, options, needs, brief)
            if self._memo_value(key) is not None or \
                    self._is_stored("recommend", *parts, dataclasses.asdict(options)):
                continue
            made = prepare(self._recommend_inputs(api, options, needs, brief)[0])
            prepared[number] = made
            filters += made.filters
            if len(made.filters) > 1:
                drivers.append(DriverRun(self.tree.request(api, options), separator,
                                         tuple(made.filters)))
        if filters:
            self.prefetch_checks(api, list(dict.fromkeys(filters)), options, drivers=drivers)
        return [self.recommend(api, options, needs, brief, prepared.get(number))
                for number, needs in enumerate(workloads)]

    def needs(self, api: str, items: Sequence[str], options: Options = Options()) -> List[Need]:
        """``items`` (``dtype=fp16,bf16``, ...) as the model of ``api`` understands them;
        raises :class:`~sphinxext_fmha.verify.needs.NeedError` for an unknown segment or
        value, naming the valid ones."""
        from .verify.needs import parse_needs, resolve_needs

        return resolve_needs(self.model(api, options), parse_needs(items))

    def examples(self, api: str, options: Options = Options()) -> List[Workload]:
        """Example workloads derived from the tree (:mod:`~.verify.examples`)."""
        from .verify.examples import example_workloads

        def compute() -> List[Workload]:
            listing = self.runner.list_kernels(self.tree.request(api, options))
            return example_workloads(self.model(api, options),
                                     self.parsed_listing(api, options, listing.files))

        return self._once(("examples", api, options), compute)

    def _recommend_inputs(self, api: str, options: Options, needs: Sequence[Need] = (),
                          brief: bool = False):
        """The data a recommendation is computed from, and the runner it uses."""
        from .verify.recommend import RecommendInputs
        from .verify.tile_table import tile_names

        model = self.model(api, options)
        listing = self.runner.list_kernels(self.tree.request(api, options))
        inputs = RecommendInputs(model=model, options=options,
                                 baseline=self.parsed_listing(api, options, listing.files),
                                 traits=self.traits(api, options) if model.filter.drops == "trait" else [],
                                 followers=self.followers(api, options),
                                 needs=list(needs), brief=brief)
        if not brief:  # (every set of the API reads the same names: read once)
            inputs.tile_names = cast(Dict[str, str], self._once(
                ("tile-names", api, options),
                lambda: tile_names(model, self.observation(api, options)["records"])))
        try:
            inputs.full_api = self.runner.generate_api_file(self.tree.request(api, options))
        except GenerateError as error:
            inputs.notes.append("the full API dispatch file is not available (%s): coupling "
                                "and dispatch conditions are not used" % str(error).splitlines()[0])
            return inputs, _RecommendRunner(self, api, options)
        # read while the recommendation's filtered runs run (both take seconds)
        inputs.read_conditions = lambda: self.dispatch_conditions(api, options)
        inputs.read_coupling = lambda make: self._once(("coupling", api, options), make)
        return inputs, _RecommendRunner(self, api, options)


class _RecommendRunner:
    """generate.py runs for one (API, options), as :mod:`verify.recommend` needs them."""

    def __init__(self, session: Session, api: str, options: Options):
        self.session, self.api, self.options = session, api, options
        self._writes: Dict[Tuple[str, ...], Future] = {}
        self._prefetched: Optional[Future] = None

    def check(self, filter: str) -> FilterCheck:
        self._prefetch_done()  # outside check_listed: a failed batch fails the recommendation
        return self.session.check_listed(self.api, filter, self.options)

    def listing_command(self, filter: str, listing: str) -> str:
        request = self.session.tree.request(self.api, self.options, filter=filter)
        return self.session.runner.listing_command(
            request, listing, self.session.model(self.api, self.options).list_appends)

    def _driver_run(self, filters: Sequence[str]) -> DriverRun:
        session = self.session
        separator = session.model(self.api, self.options).filter.api_split or ""
        return DriverRun(session.tree.request(self.api, self.options), separator,
                         tuple(filters))

    def prefetch(self, filters: Sequence[str], driver: bool = False) -> None:
        """Start the filtered runs of ``filters`` (and, with ``driver``, the driver run
        for their union) in batch interpreters, in a background thread; :meth:`check` and
        the driver wait for them."""
        from concurrent.futures import ThreadPoolExecutor

        run = self._driver_run(filters) if driver and filters else None
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fmha-recommend-runs")
        self._prefetched = pool.submit(self.session.prefetch_checks, self.api, list(filters),
                                       self.options, driver=run)
        pool.shutdown(wait=False)

    def _prefetch_done(self) -> None:
        """Wait for :meth:`prefetch`'s runs; raises their failure."""
        if self._prefetched is not None:
            self._prefetched.result()

    def driver_listing(self, filters: Sequence[str]) -> List[str]:
        from .process.driver import cached_listing

        self._prefetch_done()
        # The driver's write-mode run is independent of its listing: start it now, on
        # the other core (driver_write takes its result), unless a batch kept it.
        run = self._driver_run(filters)
        if not self.session.runner.has_driver_result("api", run):
            self._start_write(run)
        return cached_listing(self.session.runner, run)

    def _start_write(self, run: DriverRun) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from .process.driver import cached_write

        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fmha-driver-write")
        self._writes[run.filters] = pool.submit(cached_write, self.session.runner, run)
        pool.shutdown(wait=False)

    def written(self, filter: str):
        """``generate.py -f filter -o``'s output, as :meth:`check` read it (cached)."""
        session = self.session
        return session.runner.generate_api_file(
            session.tree.request(self.api, self.options, filter=filter))

    def driver_write(self, filters: Sequence[str]):
        from .process.driver import cached_write

        self._prefetch_done()
        started = self._writes.pop(tuple(filters), None)
        if started is not None:
            return started.result()
        return cached_write(self.session.runner, self._driver_run(filters))
