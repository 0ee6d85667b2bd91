"""The runs of a set's filters with generate.py, their union, the driver run for
several, and whether the written set links and what it costs."""

from __future__ import annotations

import posixpath
import shlex
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Protocol, Sequence, Set, Tuple

from ..cppapi.link_check import link_report_from_keys
from ..model import ApiModel, BuildCost, FilterCheck, FilterRun, Note, Recommendation
from ..options import Options, cli_flag
from ..process.runner import ApiFileResult

PARALLEL_RUNS = 2


class RecommendRunner(Protocol):
    """What the recommendation needs run: generate.py per filter, and the driver."""

    def prefetch(self, filters: Sequence[str], driver: bool = False) -> None:
        """Start the runs of ``filters`` (and the driver's); :meth:`check` and the
        driver methods wait for them."""

    def check(self, filter: str) -> FilterCheck: ...

    def listing_command(self, filter: str, listing: str) -> str: ...

    def driver_listing(self, filters: Sequence[str]) -> List[str]: ...

    def driver_write(self, filters: Sequence[str]) -> ApiFileResult: ...

    def written(self, filter: str) -> ApiFileResult:
        """What ``generate.py -f filter -o`` wrote (the run :meth:`check` made)."""


def verified_runs(model: ApiModel, options: Options, runner: RecommendRunner,
                  filters: Sequence[str], claimed: Set[str], result: Recommendation
                  ) -> Tuple[Set[str], Optional[ApiFileResult]]:
    """Run ``filters``, check their union, the driver (several runs) or the one run's
    write mode; return the union and the set's written dispatch (None: not written)."""
    union = _run(runner, filters, result)
    result.union_count = len(union)
    result.verified = union == claimed and all(r.verified for r in result.runs)
    if union != claimed:
        result.note_facts.append(Note("runs_differ", {
            "union": len(union), "claimed": len(claimed), "missing": len(claimed - union),
            "extra": len(union - claimed)}))
    if len(result.runs) > 1:
        result.driver_command = driver_command(
            model.api, options, [r.filter for r in result.runs],
            posixpath.relpath(".", model.fmha_dir) if model.fmha_dir else ".")
        return union, _check_driver(runner, result, union)
    return union, _check_written(runner, result, union) if result.runs else None


def source_bytes(written: ApiFileResult) -> int:
    return sum(written.kernel_bytes.values()) + written.api_bytes


def _run(runner: RecommendRunner, filters: Sequence[str], result: Recommendation) -> Set[str]:
    union: Set[str] = set()
    # The runs and (several) the driver run for their union, side by side; should a run
    # be left out as redundant below, the driver runs again for the rest.
    runner.prefetch(filters, driver=len(filters) > 1)
    with ThreadPoolExecutor(max_workers=PARALLEL_RUNS) as pool:
        checks = list(pool.map(runner.check, filters))
    for text, check in zip(filters, checks):
        new = set(check.files) - union
        union |= new
        if not new and len(filters) > 1:
            continue  # selects nothing the earlier runs did not: the run is redundant
        written = check.count == 0 or not check.write_error
        if not written:
            result.note_facts.append(Note("write_fails", {"filter": text,
                                                          "error": check.write_error}))
        result.runs.append(FilterRun(filter=text, command=check.command, count=check.count,
                                     verified=check.verified, written=written,
                                     misses=check.misses))
    return union


def _check_driver(runner: RecommendRunner, result: Recommendation, union: Set[str]
                  ) -> Optional[ApiFileResult]:
    """Several runs: each lists into its own file, merged; the driver lists and writes
    their union."""
    listings = ["kernels_%d.txt" % number for number in range(1, len(result.runs) + 1)]
    for run, listing in zip(result.runs, listings):
        run.command = runner.listing_command(run.filter, listing)
    result.merge_command = "sort -u %s > kernels.txt" % " ".join(listings)
    filters = [r.filter for r in result.runs]
    try:
        driven = set(runner.driver_listing(filters))
        result.driver_verified = driven == union
        if not result.driver_verified:
            result.note_facts.append(Note("driver_differs", {"driven": len(driven),
                                                             "union": len(union)}))
        written = runner.driver_write(filters)
    except Exception as error:  # noqa: BLE001 - reported, the runs still stand
        result.note_facts.append(Note("driver_failed", _error(error)))
        return None
    _check_links(result, written, union, "driver")
    return written


def _check_written(runner: RecommendRunner, result: Recommendation, union: Set[str]
                   ) -> Optional[ApiFileResult]:
    """One command: its own write-mode run is the set's dispatch file (no driver run)."""
    run = result.runs[0]
    if not run.written or not run.count:
        return None  # _run noted why a write failed; nothing selected writes nothing
    try:
        written = runner.written(run.filter)
    except Exception as error:  # noqa: BLE001 - reported, the run still stands
        result.note_facts.append(Note("write_unread", _error(error)))
        return None
    _check_links(result, written, union, "run")
    return written


def _check_links(result: Recommendation, written: ApiFileResult, union: Set[str], by: str
                 ) -> None:
    """Whether the set's written dispatch file links, and reaches every kernel; what it
    costs to build (the full API's side is filled in by :func:`finish`)."""
    if written.kernel_bytes:
        result.build = BuildCost(kernel_files=len(written.kernel_traits),
                                 source_bytes=source_bytes(written))
    report = link_report_from_keys(written.text, written.kernel_traits)
    result.links_missing = [key for _, _, key in report.missing]
    result.links_unreferenced = report.unreferenced
    result.unreachable_facts = report.unreachable
    result.write_verified = report.links and set(written.kernel_traits) == union
    if report.missing:
        result.note_facts.append(Note("unlinked", {"missing": len(report.missing)}))
    if set(written.kernel_traits) != union:
        result.note_facts.append(Note("written_differs", {
            "by": by, "written": len(written.kernel_traits), "listed": len(union)}))


def _error(error: Exception) -> Dict[str, str]:
    """The error's first line and the last line of its stderr, if any."""
    tail = getattr(error, "stderr_tail", "")
    return {"error": str(error).strip().splitlines()[0],
            "tail": tail.strip().splitlines()[-1] if tail.strip() else ""}


def driver_command(api: str, options: Options, filters: Sequence[str],
                   ck_root: str = ".") -> str:
    """``ck_root``: the CK root seen from generate.py's folder (where the command runs)."""
    parts = ["sphinxext-fmha", "generate", "--ck-root", ck_root, "--api", api,
             *(a for dest, value in options.given().items() for a in (cli_flag(dest), str(value))),
             *(a for text in filters for a in ("-f", text)), "-o", "generated"]
    return " ".join(shlex.quote(p) for p in parts)
