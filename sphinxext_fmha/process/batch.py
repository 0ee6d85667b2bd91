"""Run generate.py through ``batch_script.py``: a page's filtered runs in one interpreter
(:func:`prefetch`, stored under the keys of the separate runs), and the driver, one run for
the union of several filters (:func:`run_driver`, :func:`cached_listing`,
:func:`cached_write`). No Sphinx imports here.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .ahead_pool import WORKERS
from .launch import GenerateError, run, scratch
from .progress import report_step
from .runner import (
    ApiFileResult,
    DriverRun,
    GenerateRequest,
    GenerateRunner,
    api_file_result,
    listing_lines,
    read_written,
)

__all__ = ["missing", "stored", "prefetch", "BATCH_SCRIPT", "DRIVER_SCRIPT", "run_driver",
           "cached_listing", "cached_write"]

BATCH_SCRIPT = DRIVER_SCRIPT = Path(__file__).with_name("batch_script.py")
PROBE_SCRIPT = Path(__file__).parent.parent / "analysis" / "probe_script.py"
TRAIT_READER = Path(__file__).parent.parent / "cppapi"
#: Below this many missing runs (a listing and a write-mode run each, with
#: ``dispatch``) separate processes are as cheap.
MIN_JOBS = 2
#: What the write result says was run (the driver's own command line is the CLI's).
WRITE_COMMAND = "sphinxext-fmha generate ... -o generated"
#: Seconds between the "still running" lines of a driver run (``sphinxext-fmha generate``).
PROGRESS_EVERY = 5.0

Job = Union[GenerateRequest, DriverRun]


def stored(runner: GenerateRunner, job: Job, dispatch: bool = True) -> bool:
    return runner.has_result("list", job) and (not dispatch or runner.has_result("api", job))


def missing(runner: GenerateRunner, requests: Sequence[GenerateRequest],
            dispatch: bool = True) -> List[GenerateRequest]:
    """The filtered requests whose results the cache does not hold yet."""
    return [r for r in dict.fromkeys(requests) if r.filter and not stored(runner, r, dispatch)]


def prefetch(runner: GenerateRunner, requests: Sequence[GenerateRequest], *,
             dispatch: bool = True, known_keys: Optional[Dict[str, str]] = None,
             parallel: int = WORKERS, driver: Optional[DriverRun] = None,
             drivers: Sequence[DriverRun] = ()) -> int:
    """Run the requests (same API and options, other filters) and driver runs not cached
    yet (with ``dispatch``: their write mode too) in one batch interpreter, ``parallel``
    forked runs at a time; how many results were stored."""
    todo = missing(runner, requests, dispatch)
    runs_of_drivers = [d for d in dict.fromkeys([*([driver] if driver else []), *drivers])
                       if not stored(runner, d, dispatch)]
    runs = (len(todo) + len(runs_of_drivers)) * (2 if dispatch else 1)
    if runs < MIN_JOBS or runner.cache is None:
        return 0
    forks, started, inputs = max(1, parallel), time.monotonic(), runner.state()
    # The drivers first: each enumerates about what all its filters do together.
    jobs: List[Job] = [*runs_of_drivers, *todo]
    base = todo[0] if todo else runs_of_drivers[0].request
    argv = dataclasses.replace(base, filter="").argv(runner.options)
    kept = 0
    for job, result in _run_batch(runner, jobs, base, argv, dispatch, known_keys or {}, forks):
        seconds = float(result.get("seconds", 0.0))
        found = result.get("dispatch") or {}
        written = dispatch and found and not found.get("error")
        if isinstance(job, DriverRun):
            runner.store_driver_listing(job, listed_kernels(result["listing"]), inputs=inputs)
            if written:
                runner.store_driver_write(job, api_file_result(WRITE_COMMAND, found, seconds),
                                          inputs=inputs)
        else:
            runner.store_listing(job, result["listing"], seconds, inputs=inputs)
            if written:
                runner.store_api_file(job, found, seconds, inputs=inputs)
        kept += 1
    what = "%d filtered run%s in one interpreter, %d at a time" % (
        kept, "" if kept == 1 else "s", forks)
    report_step(runner.progress, runner.fmha_dir, argv, what, time.monotonic() - started)
    return kept


def _run_batch(runner: GenerateRunner, jobs: List[Job], base: GenerateRequest,
               argv: List[str], dispatch: bool, known_keys: Dict[str, str],
               forks: int) -> List[Tuple[Job, dict]]:
    """(job, its result) of each of ``jobs`` that ran without error (none when the batch
    failed: the separate runs will say what is wrong)."""
    assert runner.cache is not None
    specs = [{"filter": j.filter, "dispatch": dispatch} if isinstance(j, GenerateRequest)
             else {"driver": True, "filters": list(j.filters), "separator": j.separator,
                   "dispatch": dispatch} for j in jobs]
    try:
        with scratch("fmha-batch-") as workdir:
            spec_file = workdir / "jobs.json"
            out = workdir / "results.json"
            spec_file.write_text(json.dumps({
                "fmha_dir": str(runner.fmha_dir), "argv": argv,
                "probe_script": str(PROBE_SCRIPT), "trait_reader": str(TRAIT_READER),
                "known_keys": known_keys, "jobs": specs, "parallel": forks,
                "code_store": str(runner.cache.code_store_path(runner.fmha_dir, runner.python)),
            }), encoding="utf-8")
            command = [runner.python, "-B", str(BATCH_SCRIPT), str(spec_file), str(out)]
            display = "batch of %d generate.py -f runs (%s)" % (len(jobs), " ".join(argv))
            runner._run(base, [], display, workdir, command=command)
            data = json.loads(out.read_text(encoding="utf-8"))
    except (GenerateError, OSError, ValueError):
        return []
    by_key = {(j.filter if isinstance(j, GenerateRequest) else tuple(j.filters)): j
              for j in jobs}
    pairs = []
    for result in data.get("results", []):
        key = tuple(result.get("filters") or ()) if result.get("driver") else result.get("filter")
        if not result.get("error") and key in by_key:
            pairs.append((by_key[key], result))
    return pairs


# --------------------------------------------------------------------------- the driver


def run_driver(python: str, fmha_dir: Path, separator: str, filters: Sequence[str],
               generate_args: Sequence[str], out_args: Sequence[str], timeout: float,
               progress: Optional[Callable[[str], None]] = None) -> None:
    """Run the driver (``separator``: the API's sub-filter separator or ''; ``out_args``:
    ``-l FILE`` or ``-o DIR``); :class:`GenerateError` when it fails or times out."""
    argv = [python, "-B", str(DRIVER_SCRIPT), str(fmha_dir), separator, *filters, "--",
            *generate_args, *out_args]
    display = shlex.join(["python", DRIVER_SCRIPT.name, ".", separator, *filters, "--",
                          *generate_args, *out_args])
    with scratch("fmha-driver-") as workdir:
        label = "generate.py %s with %d filter%s" % (
            " ".join(generate_args), len(filters), "" if len(filters) == 1 else "s")
        outcome = run(argv, cwd=fmha_dir, workdir=workdir, timeout=timeout, display=display,
                      progress=progress, label=label, progress_every=PROGRESS_EVERY)
        if not outcome.ok:
            raise outcome.error("the driver run failed (%s): %s" % (outcome.status(), display))


def listed_kernels(lines: Iterable[str]) -> List[str]:
    """The kernel files of a listing's lines: basenames, API file left out, sorted."""
    names = [Path(line.strip()).name for line in lines if line.strip()]
    return sorted(n for n in names if not n.endswith("_api.cpp"))


def _drive(runner: GenerateRunner, run: DriverRun, *out_args: str) -> None:
    run_driver(runner.python, runner.fmha_dir, run.separator, run.filters,
               run.request.argv(runner.options), out_args, runner.timeout)


def cached_listing(runner: GenerateRunner, run: DriverRun) -> List[str]:
    """The kernel files (API file left out, sorted) the driver run lists: from the
    cache, else run (and kept there)."""
    inputs = runner.state()
    files = runner.stored_driver_listing(run, inputs)
    if files is None:
        with scratch("fmha-driver-list-") as tmp:
            _drive(runner, run, "-l", str(tmp / "kernels.txt"))
            files = listed_kernels(listing_lines(tmp / "kernels.txt"))
        runner.store_driver_listing(run, files, inputs=inputs)
    return files


def cached_write(runner: GenerateRunner, run: DriverRun) -> ApiFileResult:
    """The driver's write mode (for a link check), from the cache, else run and kept; a
    set that lists can still fail here (newer CK asserts in ``write_blobs`` that every
    split-KV kernel has its combine kernel), raised with generate.py's stderr."""
    inputs = runner.state()
    result = runner.stored_driver_write(run, inputs)
    if result is not None:
        return result
    started = time.monotonic()
    with scratch("fmha-driver-write-") as tmp:
        (tmp / "generated").mkdir()
        _drive(runner, run, "-o", str(tmp / "generated"))
        written = read_written(tmp / "generated", "the driver run")
    result = api_file_result(WRITE_COMMAND, written, time.monotonic() - started)
    runner.store_driver_write(run, result, inputs=inputs)
    return result
