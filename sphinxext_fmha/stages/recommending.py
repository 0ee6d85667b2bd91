"""Recommendation: the inputs of a minimal set (:mod:`~sphinxext_fmha.verify.recommend`)
and the generate.py runs it asks for, for one (API, options)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..model import FilterCheck, Need, Note
from ..options import Options
from ..process.ahead_pool import in_background
from ..process.batch import cached_listing, cached_write
from ..process.runner import ApiFileResult, DriverRun, GenerateError, GenerateRunner
from ..verify.needs import needs_key
from ..verify.recommend import RecommendInputs
from .verification import Baseline

#: Runs the batches of these filters (and these driver runs) ahead of their checks.
Prefetch = Callable[[List[str], Sequence[DriverRun]], None]


def recommend_key(api: str, options: Options, needs: Sequence[Need], brief: bool
                  ) -> Tuple[Tuple, Tuple]:
    """(the memo's key, the parts of the store's key) of a recommendation: the default
    set keeps its key; a workload's set is kept under its needs too."""
    key = needs_key(needs)
    parts: Tuple = (api,)
    if key:
        parts += ([list(item) for item in key],)
    if brief:
        parts += ("brief",)
    return ("recommend", api, options, key, brief), parts


def driver_run(base: Baseline, filters: Sequence[str]) -> DriverRun:
    return DriverRun(base.request(), base.model.filter.api_split or "", tuple(filters))


def recommend_inputs(runner: GenerateRunner, base: Baseline, needs: Sequence[Need], brief: bool,
                     tile_names: Callable[[], Dict[str, str]],
                     read_conditions: Callable[[], Dict[str, List[str]]],
                     read_coupling: Callable) -> RecommendInputs:
    """The data a recommendation is computed from."""
    model = base.model
    inputs = RecommendInputs(model=model, options=base.options, baseline=base.parsed,
                             traits=base.traits if model.filter.drops == "trait" else [],
                             followers=base.followers, needs=list(needs), brief=brief)
    if not brief:  # (every set of the API reads the same names: read once)
        inputs.tile_names = tile_names()
    try:
        inputs.full_api = runner.generate_api_file(base.request())
    except GenerateError as error:
        inputs.notes.append(Note("api_file_unavailable", {"error": str(error).splitlines()[0]}))
        return inputs
    # read while the recommendation's filtered runs run (both take seconds)
    inputs.read_conditions = read_conditions
    inputs.read_coupling = read_coupling
    return inputs


def prepare_all(workloads: Sequence[Sequence[Need]], kept: Callable[[Sequence[Need]], bool],
                prepare: Callable[[Sequence[Need]], Any], driver: Callable[[List[str]], DriverRun],
                prefetch: Prefetch) -> Dict[int, Any]:
    """The filters of each workload's set not kept yet (by number), made first, then all
    their runs (and the drivers of the sets of several runs) in one batch."""
    prepared: Dict[int, Any] = {}
    filters: List[str] = []
    drivers: List[DriverRun] = []
    for number, needs in enumerate(workloads):
        if kept(needs):
            continue
        made = prepared[number] = prepare(needs)
        filters += made.filters
        if len(made.filters) > 1:
            drivers.append(driver(made.filters))
    if filters:
        prefetch(list(dict.fromkeys(filters)), drivers)
    return prepared


class RecommendRunner:
    """generate.py runs for one (API, options), as :mod:`verify.recommend` needs them."""

    def __init__(self, runner: GenerateRunner, base: Baseline,
                 check: Callable[[str], FilterCheck], prefetch: Prefetch):
        self.runner, self.base, self._check, self._prefetch = runner, base, check, prefetch
        self._writes: Dict[Tuple[str, ...], Future] = {}
        self._prefetched: Optional[Future] = None

    def check(self, filter: str) -> FilterCheck:
        self._prefetch_done()  # outside the check: a failed batch fails the recommendation
        return self._check(filter)

    def listing_command(self, filter: str, listing: str) -> str:
        return self.runner.listing_command(self.base.request(filter), listing,
                                           self.base.model.list_appends)

    def prefetch(self, filters: Sequence[str], driver: bool = False) -> None:
        """Start the filtered runs of ``filters`` (and, with ``driver``, the driver run
        for their union) in batch interpreters, in a background thread; :meth:`check` and
        the driver wait for them."""
        runs = [driver_run(self.base, filters)] if driver and filters else []
        self._prefetched = in_background(self._prefetch, list(filters), runs,
                                          name="fmha-recommend-runs")

    def _prefetch_done(self) -> None:
        """Wait for :meth:`prefetch`'s runs; raises their failure."""
        if self._prefetched is not None:
            self._prefetched.result()

    def driver_listing(self, filters: Sequence[str]) -> List[str]:
        self._prefetch_done()
        # The driver's write-mode run is independent of its listing: start it now, on
        # the other core (driver_write takes its result), unless a batch kept it.
        run = driver_run(self.base, filters)
        if not self.runner.has_result("api", run):
            self._writes[run.filters] = in_background(cached_write, self.runner, run,
                                                       name="fmha-driver-write")
        return cached_listing(self.runner, run)

    def written(self, filter: str) -> ApiFileResult:
        """``generate.py -f filter -o``'s output, as :meth:`check` read it (cached)."""
        return self.runner.generate_api_file(self.base.request(filter))

    def driver_write(self, filters: Sequence[str]) -> ApiFileResult:
        self._prefetch_done()
        started = self._writes.pop(tuple(filters), None)
        if started is not None:
            return started.result()
        return cached_write(self.runner, driver_run(self.base, filters))
