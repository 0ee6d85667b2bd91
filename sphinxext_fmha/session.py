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
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .analysis.analyze import AnalysisError, Options, Tree, analyze_api
from .locate import fmha_dir as fmha_dir_of
from .model import ApiInfo, ApiModel, FilterCheck, Recommendation, from_dict, to_dict
from .process.cache import DiskCache, tree_digest, tree_files
from .process.runner import GenerateError, GenerateRunner

Progress = Optional[Callable[[str], None]]

__all__ = ["Session", "Options", "AnalysisError", "GenerateError"]


_CODE_DIGEST: List[str] = []


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
        self.tree = Tree.load(self.ck_root)
        self.runner = GenerateRunner(self.tree.fmha_dir, python=self.python, cache=self.cache,
                                     options=self.tree.supported_dests(),
                                     timeout=timeout, progress=progress)
        self._lock = threading.RLock()
        self._key_locks: Dict[Tuple, threading.Lock] = {}
        self._memo: Dict[Tuple, object] = {}

    # -- memo -----------------------------------------------------------------
    def _once(self, key: Tuple, compute: Callable[[], object]):
        with self._lock:
            if key in self._memo:
                return self._memo[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._memo:
                    return self._memo[key]
            value = compute()
            with self._lock:
                self._memo[key] = value
            return value

    # -- public ---------------------------------------------------------------
    @property
    def fmha_dir(self) -> Path:
        return fmha_dir_of(self.ck_root)

    def apis(self) -> List[ApiInfo]:
        return list(self.tree.apis)

    def dependencies(self) -> List[Path]:
        """Every file whose change can change a result: generate.py and codegen/."""
        return tree_files(self.tree.fmha_dir)

    def _stored(self, kind: str, cls: type, compute: Callable[[], object], *parts) -> object:
        """A result kept on disk, keyed by the tree's content, our own code and the
        interpreter: a new process (``sphinx-build -E``) reads it back."""
        key = self.cache.key_for(kind, tree_digest(self.tree.fmha_dir), _code_digest(),
                                 self.runner.python_id(), *parts)
        hit = self.cache.get(key)
        if hit is not None:
            try:
                return from_dict(cls, hit) if cls is not dict else hit["value"]
            except (TypeError, KeyError, ValueError):
                pass
        value = compute()
        self.cache.put(key, to_dict(value) if cls is not dict else {"value": value})
        return value

    def model(self, api: str, options: Options = Options()) -> ApiModel:
        def compute() -> ApiModel:
            self.observation(api, options)  # the probe, and what it stands in for
            return analyze_api(self.ck_root, api, options, python=self.python,
                               cache=self.cache, timeout=self.timeout, progress=self.progress,
                               tree=self.tree, runner=self.runner)

        return self._once(("model", api, options), lambda: self._stored(
            "model", ApiModel, compute, api, dataclasses.asdict(options)))

    def observation(self, api: str, options: Options = Options()) -> dict:
        """The probe's raw observation (cached on disk by the analysis)."""
        from .analysis.analyze import probe_argv
        from .analysis.observe import observe

        def compute() -> dict:
            request = self.tree.request(api, options)
            observed = observe(self.tree.fmha_dir,
                               probe_argv(request, self.tree.supported_dests()),
                               python=self.python, cache=self.cache, timeout=self.timeout,
                               progress=self.progress)
            self._store_probe_runs(request, observed)
            return observed

        return self._once(("observation", api, options), compute)

    def _store_probe_runs(self, request, observed: dict) -> None:
        """The probe's run is the unfiltered ``generate.py -l``, and it rendered the
        dispatch file write mode writes: keep both as those runs' results, so neither
        runs again (``runner.list_kernels`` / ``generate_api_file`` read them back)."""
        seconds = float(observed.get("seconds", {}).get("observe", 0.0))
        self.runner.store_listing(request, observed["listing"], seconds)
        dispatch = observed.get("dispatch") or {}
        if dispatch and not dispatch.get("error"):
            self.runner.store_api_file(request, dispatch["api_file"], dispatch["text"],
                                       dispatch["kernel_traits"],
                                       float(dispatch.get("seconds", 0.0)))

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

    def prefetch_checks(self, api: str, filters: List[str], options: Options = Options()) -> None:
        """Run the ``-f`` runs that checking ``filters`` needs in batches (one
        interpreter each, see process/batch.py), ahead of :meth:`check`."""
        from .process.batch import prefetch

        dispatch = self.observation(api, options).get("dispatch") or {}
        traits = dispatch.get("kernel_traits", {})
        known = {sha: traits[name] for name, sha in dispatch.get("kernel_sha", {}).items()
                 if name in traits}
        prefetch(self.runner, [self.tree.request(api, options, filter=f) for f in filters],
                 dispatch=True, known_keys=known)

    def parsed_listing(self, api: str, options: Options, files: List[str]):
        from .verify.filtercheck import ParsedListing

        return self._once(("parsed", api, options, tuple(files)),
                          lambda: ParsedListing.of(self.model(api, options), files))

    def dispatch_reading(self, api: str, options: Options = Options()) -> dict:
        """The generated API dispatch file read as data
        (:func:`~sphinxext_fmha.cppapi.reading.read_dispatch`)."""
        from .cppapi.reading import read_dispatch

        def compute() -> dict:
            api_file = self.runner.generate_api_file(self.tree.request(api, options))
            return read_dispatch(api_file.text, api_file.kernel_traits)

        return self._once(("dispatch-reading", api, options), lambda: self._stored(
            "dispatch-reading", dict, compute, api, dataclasses.asdict(options)))

    def dispatch_conditions(self, api: str, options: Options = Options()) -> Dict[str, List[str]]:
        """kernel file -> the readable terms of the dispatch conditions that reach it
        (sub-kernel choices and terms that differ between its branches left out)."""
        from .cppapi.reading import readable_terms

        return readable_terms(self.dispatch_reading(api, options))

    def mask_modes(self, api: str, options: Options = Options()):
        """What ``--mask`` changes in this API's listing
        (:func:`~sphinxext_fmha.verify.mask_modes.compare_mask_modes`); None when the
        tree's generate.py has no mask option."""
        from .verify.mask_modes import MaskModes, compare_mask_modes

        option = self.tree.option("mask")
        if option is None:
            return None
        this = options.mask or option.default or "simplified"
        other = "simplified" if this == "generic" else "generic"

        def compute() -> dict:
            mine = self.runner.list_kernels(self.tree.request(api, options))
            theirs = self.runner.list_kernels(self.tree.request(
                api, dataclasses.replace(options, mask=other)))
            return dataclasses.asdict(compare_mask_modes(this, mine.files, other, theirs.files))

        stored = self._once(("mask-modes", api, options), lambda: self._stored(
            "mask-modes", dict, compute, api, dataclasses.asdict(options)))
        return MaskModes(**stored)

    def check(self, api: str, filter: str, options: Options = Options()) -> FilterCheck:
        """What ``generate.py -f filter`` selects: the filtered listing and write-mode
        run, checked against the unfiltered listing and the model's prediction."""
        from .verify.filtercheck import check_filter

        def compute() -> FilterCheck:
            model = self.model(api, options)
            baseline_listing = self.runner.list_kernels(self.tree.request(api, options))
            request = self.tree.request(api, options, filter=filter)
            listing = self.runner.list_kernels(request)
            api_file = self.runner.generate_api_file(request) if listing.count else None
            return check_filter(model, filter, baseline_listing, listing,
                                self.parsed_listing(api, options, baseline_listing.files),
                                self.traits(api, options), api_file)

        return self._once(("check", api, filter, options), lambda: self._stored(
            "check", FilterCheck, compute, api, filter, dataclasses.asdict(options)))

    def recommend(self, api: str, options: Options = Options()) -> Recommendation:
        from .verify.recommend import recommend

        return self._once(("recommend", api, options), lambda: self._stored(
            "recommend", Recommendation, lambda: recommend(*self._recommend_inputs(api, options)),
            api, dataclasses.asdict(options)))

    def _recommend_inputs(self, api: str, options: Options):
        """The data a recommendation is computed from, and the runner it uses."""
        from .verify.recommend import RecommendInputs
        from .verify.tile_table import tile_names

        model = self.model(api, options)
        listing = self.runner.list_kernels(self.tree.request(api, options))
        inputs = RecommendInputs(model=model, options=options,
                                 baseline=self.parsed_listing(api, options, listing.files),
                                 traits=self.traits(api, options) if model.filter.drops == "trait" else [])
        inputs.tile_names = tile_names(model, self.observation(api, options)["records"])
        try:
            inputs.full_api = self.runner.generate_api_file(self.tree.request(api, options))
        except GenerateError as error:
            inputs.notes.append("the full API dispatch file is not available (%s): coupling "
                                "and dispatch conditions are not used" % str(error).splitlines()[0])
            return inputs, _RecommendRunner(self, api, options)
        try:
            inputs.conditions = self.dispatch_conditions(api, options)
        except Exception as error:  # noqa: BLE001 - reported; the set still stands
            inputs.notes.append("dispatch conditions unavailable (%s): what you lose is "
                                "told without them" % str(error).splitlines()[0])
        return inputs, _RecommendRunner(self, api, options)


class _RecommendRunner:
    """generate.py runs for one (API, options), as :mod:`verify.recommend` needs them."""

    def __init__(self, session: Session, api: str, options: Options):
        self.session, self.api, self.options = session, api, options

    def prefetch(self, filters: Sequence[str]) -> None:
        self.session.prefetch_checks(self.api, list(filters), self.options)

    def check(self, filter: str) -> FilterCheck:
        try:
            return self.session.check(self.api, filter, self.options)
        except GenerateError as error:
            # Write mode failed (newer CK refuses some sets in write_blobs): the listing
            # still counts; the run is marked as not written, with the reason.
            from .verify.filtercheck import check_filter

            session, api, options = self.session, self.api, self.options
            baseline_listing = session.runner.list_kernels(session.tree.request(api, options))
            listing = session.runner.list_kernels(session.tree.request(api, options, filter=filter))
            check = check_filter(session.model(api, options), filter, baseline_listing, listing,
                                 session.parsed_listing(api, options, baseline_listing.files),
                                 session.traits(api, options))
            check.notes.append("write mode failed: %s" % (error.stderr_tail or str(error))
                               .strip().splitlines()[-1])
            return check

    def listing_command(self, filter: str, listing: str) -> str:
        request = self.session.tree.request(self.api, self.options, filter=filter)
        return self.session.runner.listing_command(request, listing)

    def _driver_args(self):
        session = self.session
        separator = session.model(self.api, self.options).filter.api_split or ""
        generate_args = session.tree.request(self.api, self.options).argv(session.tree.supported_dests())
        return session.python, session.tree.fmha_dir, separator, generate_args, session.timeout

    def driver_listing(self, filters: Sequence[str]) -> List[str]:
        from .process.driver import driver_listing

        python, fmha_dir, separator, generate_args, timeout = self._driver_args()
        return driver_listing(python, fmha_dir, separator, filters, generate_args, timeout)

    def driver_write(self, filters: Sequence[str]):
        from .process.driver import driver_write

        python, fmha_dir, separator, generate_args, timeout = self._driver_args()
        return driver_write(python, fmha_dir, separator, filters, generate_args, timeout)
