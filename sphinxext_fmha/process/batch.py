"""Run the filtered generate.py runs a page needs in batches, and keep each result as
the result of that run.

``batch_script.py`` runs several ``-f`` filters of one API in one interpreter, each as a
fresh process would (see there). The results go into the runner's cache under the keys
of the separate runs they stand for, so ``list_kernels`` / ``generate_api_file`` (and
so filter checks and recommendations) read them back unchanged. A job the batch could
not run safely is left out: the normal path then runs it as its own process.

Where the system can fork, one interpreter runs every job, its runs in children it
forks, two at a time (the machine's two cores): a second interpreter would only add
its own start-up. Where it cannot, the jobs take turns in up to two interpreters side
by side (:func:`interpreters`).

No Sphinx imports here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from .ahead_pool import WORKERS
from .cache import TreeState
from .driver import DRIVER_SCRIPT, listed_kernels, write_result
from .launch import scratch
from .progress import report_step
from .runner import DriverRun, GenerateError, GenerateRequest, GenerateRunner

__all__ = ["missing", "prefetch", "interpreters", "BATCH_SCRIPT"]

BATCH_SCRIPT = Path(__file__).with_name("batch_script.py")
PROBE_SCRIPT = Path(__file__).parent.parent / "analysis" / "probe_script.py"
TRAIT_READER = Path(__file__).parent.parent / "cppapi"
#: Batches (or forked runs of one batch) at once at most: the cores we may use.
#: Below this many missing runs (a listing and a write-mode run each, with
#: ``dispatch``) separate processes are as cheap.
PARALLEL_BATCHES = WORKERS
MIN_JOBS = 2
#: Whether the batch interpreter forks its runs (batch_script.py forks where the
#: system can: the interpreter that runs generate.py runs on this same system).
FORKS = hasattr(os, "fork")

Job = Union[GenerateRequest, DriverRun]


def _missing(runner: GenerateRunner, req: GenerateRequest, dispatch: bool) -> bool:
    return not runner.has_result("list", req) or (dispatch and not runner.has_result("api", req))


def missing(runner: GenerateRunner, requests: Sequence[GenerateRequest],
            dispatch: bool = True) -> List[GenerateRequest]:
    """The filtered requests whose results the cache does not hold yet."""
    return [r for r in dict.fromkeys(requests) if r.filter and _missing(runner, r, dispatch)]


def interpreters(jobs: int, most: int, job_seconds: Optional[float],
                 start_up: Optional[float]) -> int:
    """How many batch interpreters to run ``jobs`` jobs in (at most ``most``).

    A second interpreter saves the wall time of the jobs it takes from the first, and
    costs its own start-up (interpreter, imports, the warm-up import of the codegen)
    in CPU, and in wall time before its first job. So: two when the jobs it would take
    are estimated to run longer than that start-up. Both are measured, not tuned:
    ``job_seconds`` is the probe's unfiltered listing of the API (a filtered run or the
    driver's union enumerates at most that much: an upper bound, which leans towards
    two where runs are slow), ``start_up`` what an earlier batch of the tree measured
    (:meth:`~.runner.GenerateRunner.batch_start_up`). On small trees (a listing takes
    about as long as starting Python and importing the codegen) one interpreter runs
    everything; on trees whose listing takes seconds two run side by side. Unmeasured
    (the first batch of a tree, or no probe): two, as the machine has two cores.
    """
    most = max(1, min(most, jobs))
    if most == 1 or job_seconds is None or start_up is None:
        return most
    taken = jobs - (jobs + 1) // 2  # the second interpreter's half
    return most if taken * job_seconds > start_up else 1


def _chunks(todo: List[GenerateRequest], drivers: Sequence[DriverRun],
            parallel: int) -> List[List[Job]]:
    """The jobs of each interpreter. A driver enumerates the union of its filters,
    about what all of them do together: side by side, the drivers run alone in one. In
    one interpreter they run first, so the state check after them covers the filter
    jobs."""
    if drivers and parallel > 1:
        rest: List[List[Job]] = [list(todo[i::parallel - 1]) for i in range(parallel - 1)]
        chunks: List[List[Job]] = [list(drivers), *rest]
    else:
        jobs: List[Job] = [*drivers, *todo]
        chunks = [jobs[i::parallel] for i in range(parallel)]
    return [c for c in chunks if c]


def prefetch(runner: GenerateRunner, requests: Sequence[GenerateRequest], *,
             dispatch: bool = True, known_keys: Optional[Dict[str, str]] = None,
             parallel: int = PARALLEL_BATCHES, driver: Optional[DriverRun] = None,
             job_seconds: Optional[float] = None, drivers: Sequence[DriverRun] = ()) -> int:
    """Run the requests not yet cached (same API and options, different filters), and
    the ``driver`` runs (``driver`` and ``drivers``: each one's listing and, with
    ``dispatch``, its write) not cached, in up to ``parallel`` batches side by side (see
    :func:`interpreters`; ``job_seconds``: the API's unfiltered listing seconds, if
    known); returns how many results were stored."""
    todo = missing(runner, requests, dispatch)
    runs_of_drivers = [d for d in dict.fromkeys([*([driver] if driver else []), *drivers])
                       if not (runner.has_driver_result("list", d) and
                               (not dispatch or runner.has_driver_result("api", d)))]
    runs = (len(todo) + len(runs_of_drivers)) * (2 if dispatch else 1)
    if runs < MIN_JOBS or runner.cache is None:
        return 0
    jobs = len(todo) + len(runs_of_drivers)
    if FORKS:
        # The drivers first: each enumerates about what all its filters do together.
        chunks: List[List[Job]] = [[*runs_of_drivers, *todo]]
        forks = max(1, parallel)
    else:
        chunks = _chunks(todo, runs_of_drivers,
                         interpreters(jobs, parallel, job_seconds, runner.batch_start_up()))
        forks = 0
    started = time.monotonic()
    inputs = runner.state()
    with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
        futures = [pool.submit(_run_batch, runner, chunk, dispatch, known_keys or {}, forks,
                               inputs) for chunk in chunks]
    results = [f.result() for f in futures]
    stored = sum(count for count, _ in results)
    # One progress line for the whole step, however many interpreters shared it.
    if forks:
        what = "%d filtered run%s in one interpreter, %d at a time" % (
            stored, "" if stored == 1 else "s", forks)
    else:
        what = "%d filtered run%s in %d interpreter%s side by side" % (
            stored, "" if stored == 1 else "s", len(chunks), "" if len(chunks) == 1 else "s")
    unsafe = sorted({reason for _, reason in results if reason})
    if unsafe:
        what += " (then stopped: %s; the rest run as separate processes)" % "; ".join(unsafe)
    base = todo[0] if todo else runs_of_drivers[0].request if runs_of_drivers else None
    assert base is not None  # there were jobs
    argv = dataclasses.replace(base, filter="").argv(runner.options)
    report_step(runner.progress, runner.fmha_dir, argv, what, time.monotonic() - started)
    return stored


def _run_batch(runner: GenerateRunner, jobs: List[Job], dispatch: bool,
               known_keys: Dict[str, str], forks: int, inputs: TreeState) -> Tuple[int, str]:
    """Run one chunk in one interpreter (``forks``: its runs forked, that many at a
    time; 0: in turns); (results stored, why it stopped early or ""). ``inputs``: the
    tree before the batch started."""
    requests = [j for j in jobs if isinstance(j, GenerateRequest)]
    drivers = [j for j in jobs if isinstance(j, DriverRun)]
    base = requests[0] if requests else drivers[0].request
    argv = dataclasses.replace(base, filter="").argv(runner.options)
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
                "driver_script": str(DRIVER_SCRIPT), "known_keys": known_keys, "jobs": specs,
                "parallel": forks,
                "code_store": str(runner.cache.code_store_path(runner.fmha_dir, runner.python))
                if runner.cache is not None else None,
            }), encoding="utf-8")
            command = [runner.python, "-B", str(BATCH_SCRIPT), str(spec_file), str(out)]
            display = "batch of %d generate.py -f runs (%s)" % (len(jobs), " ".join(argv))
            wall = runner._run(base, [], display, workdir, command=command)
            data = json.loads(out.read_text(encoding="utf-8"))
    except (GenerateError, OSError, ValueError):
        return 0, ""  # the separate runs will say what is wrong
    results = data.get("results", [])
    if not data.get("forked"):
        # What the interpreter spent besides its jobs: starting, importing, the warm-up
        # (what a second interpreter costs, see interpreters()).
        runner.note_batch_start_up(wall - sum(float(r.get("seconds", 0.0)) for r in results))
    stored = 0
    by_filter = {r.filter: r for r in requests}
    by_filters = {tuple(d.filters): d for d in drivers}
    for result in results:
        if result.get("error"):
            continue
        seconds = float(result.get("seconds", 0.0))
        found = result.get("dispatch") or {}
        written = bool(dispatch and found and not found.get("error"))
        if result.get("driver"):
            run = by_filters.get(tuple(result.get("filters") or ()))
            if run is None:
                continue
            runner.store_driver_listing(run, listed_kernels(result["listing"]), seconds,
                                        inputs=inputs)
            stored += 1
            if written:
                runner.store_driver_write(run, write_result(
                    found["api_file"], found["text"], found["kernel_traits"], seconds,
                    found.get("kernel_bytes"), int(found.get("api_bytes") or 0)),
                    inputs=inputs)
            continue
        req = by_filter.get(result.get("filter"))
        if req is None:
            continue
        runner.store_listing(req, result["listing"], seconds, inputs=inputs)
        stored += 1
        if written:
            runner.store_api_file(req, found["api_file"], found["text"], found["kernel_traits"],
                                  seconds, kernel_bytes=found.get("kernel_bytes"),
                                  api_bytes=int(found.get("api_bytes") or 0), inputs=inputs)
    return stored, str(data.get("unsafe") or "")
