"""Run the filtered generate.py runs a page needs in batches, and keep each result as
the result of that run.

``batch_script.py`` runs several ``-f`` filters of one API in one interpreter, each as a
fresh process would (see there). The results go into the runner's cache under the keys
of the separate runs they stand for, so ``list_kernels`` / ``generate_api_file`` (and
so filter checks and recommendations) read them back unchanged. A job the batch could
not run safely is left out: the normal path then runs it as its own process.

One interpreter runs every job, its runs in children it forks, as many at a time as
we have cores (a second interpreter would only add its own start-up).

No Sphinx imports here.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

from .ahead_pool import WORKERS
from .cache import TreeState
from .driver import DRIVER_SCRIPT, listed_kernels, write_result
from .launch import scratch
from .progress import report_step
from .runner import DriverRun, GenerateError, GenerateRequest, GenerateRunner

__all__ = ["missing", "prefetch", "BATCH_SCRIPT"]

BATCH_SCRIPT = Path(__file__).with_name("batch_script.py")
PROBE_SCRIPT = Path(__file__).parent.parent / "analysis" / "probe_script.py"
TRAIT_READER = Path(__file__).parent.parent / "cppapi"
#: Forked runs of one batch at once at most: the cores we may use.
#: Below this many missing runs (a listing and a write-mode run each, with
#: ``dispatch``) separate processes are as cheap.
PARALLEL_BATCHES = WORKERS
MIN_JOBS = 2

Job = Union[GenerateRequest, DriverRun]


def _missing(runner: GenerateRunner, req: GenerateRequest, dispatch: bool) -> bool:
    return not runner.has_result("list", req) or (dispatch and not runner.has_result("api", req))


def missing(runner: GenerateRunner, requests: Sequence[GenerateRequest],
            dispatch: bool = True) -> List[GenerateRequest]:
    """The filtered requests whose results the cache does not hold yet."""
    return [r for r in dict.fromkeys(requests) if r.filter and _missing(runner, r, dispatch)]


def prefetch(runner: GenerateRunner, requests: Sequence[GenerateRequest], *,
             dispatch: bool = True, known_keys: Optional[Dict[str, str]] = None,
             parallel: int = PARALLEL_BATCHES, driver: Optional[DriverRun] = None,
             drivers: Sequence[DriverRun] = ()) -> int:
    """Run the requests not yet cached (same API and options, different filters), and
    the ``driver`` runs (``driver`` and ``drivers``: each one's listing and, with
    ``dispatch``, its write) not cached, in one batch interpreter, ``parallel`` runs at
    a time; returns how many results were stored."""
    todo = missing(runner, requests, dispatch)
    runs_of_drivers = [d for d in dict.fromkeys([*([driver] if driver else []), *drivers])
                       if not (runner.has_driver_result("list", d) and
                               (not dispatch or runner.has_driver_result("api", d)))]
    runs = (len(todo) + len(runs_of_drivers)) * (2 if dispatch else 1)
    if runs < MIN_JOBS or runner.cache is None:
        return 0
    forks = max(1, parallel)
    started = time.monotonic()
    # The drivers first: each enumerates about what all its filters do together.
    stored = _run_batch(runner, [*runs_of_drivers, *todo], dispatch, known_keys or {}, forks,
                        runner.state())
    what = "%d filtered run%s in one interpreter, %d at a time" % (
        stored, "" if stored == 1 else "s", forks)
    base = todo[0] if todo else runs_of_drivers[0].request if runs_of_drivers else None
    assert base is not None  # there were jobs
    argv = dataclasses.replace(base, filter="").argv(runner.options)
    report_step(runner.progress, runner.fmha_dir, argv, what, time.monotonic() - started)
    return stored


def _run_batch(runner: GenerateRunner, jobs: List[Job], dispatch: bool,
               known_keys: Dict[str, str], forks: int, inputs: TreeState) -> int:
    """Run ``jobs`` in one interpreter, ``forks`` runs at a time; the results stored.
    ``inputs``: the tree before the batch started."""
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
            runner._run(base, [], display, workdir, command=command)
            data = json.loads(out.read_text(encoding="utf-8"))
    except (GenerateError, OSError, ValueError):
        return 0  # the separate runs will say what is wrong
    results = data.get("results", [])
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
    return stored
