"""Run the filtered generate.py runs a page needs in batches, and keep each result as
the result of that run.

``batch_script.py`` runs several ``-f`` filters of one API in one interpreter, each as a
fresh process would (see there). The results go into the runner's cache under the keys
of the separate runs they stand for, so ``list_kernels`` / ``generate_api_file`` (and
so filter checks and recommendations) read them back unchanged. A job the batch could
not run safely is left out: the normal path then runs it as its own process. Two
batches run side by side (the machine's two cores).

No Sphinx imports here.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .progress import report_step
from .runner import GenerateError, GenerateRequest, GenerateRunner

__all__ = ["missing", "prefetch", "BATCH_SCRIPT"]

BATCH_SCRIPT = Path(__file__).with_name("batch_script.py")
PROBE_SCRIPT = Path(__file__).parent.parent / "analysis" / "probe_script.py"
TRAIT_READER = Path(__file__).parent.parent / "cppapi"
#: Batches run at once; below this many missing runs (a listing and a write-mode run
#: each, with ``dispatch``) separate processes are as cheap.
PARALLEL_BATCHES = 2
MIN_JOBS = 2


def _missing(runner: GenerateRunner, req: GenerateRequest, dispatch: bool) -> bool:
    return not runner.has_result("list", req) or (dispatch and not runner.has_result("api", req))


def missing(runner: GenerateRunner, requests: Sequence[GenerateRequest],
            dispatch: bool = True) -> List[GenerateRequest]:
    """The filtered requests whose results the cache does not hold yet."""
    return [r for r in dict.fromkeys(requests) if r.filter and _missing(runner, r, dispatch)]


def prefetch(runner: GenerateRunner, requests: Sequence[GenerateRequest], *,
             dispatch: bool = True, known_keys: Optional[Dict[str, str]] = None,
             parallel: int = PARALLEL_BATCHES) -> int:
    """Run the requests not yet cached (same API and options, different filters) in
    up to ``parallel`` batches side by side; returns how many results were stored."""
    todo = missing(runner, requests, dispatch)
    if len(todo) * (2 if dispatch else 1) < MIN_JOBS or runner.cache is None:
        return 0
    parallel = max(1, parallel)
    chunks = [todo[i::parallel] for i in range(parallel)]
    chunks = [c for c in chunks if c]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
        futures = [pool.submit(_run_batch, runner, chunk, dispatch, known_keys or {})
                   for chunk in chunks]
    results = [f.result() for f in futures]
    stored = sum(count for count, _ in results)
    # One progress line for the whole step, however many interpreters shared it.
    what = "%d filtered run%s in %d interpreter%s side by side" % (
        stored, "" if stored == 1 else "s", len(chunks), "" if len(chunks) == 1 else "s")
    unsafe = sorted({reason for _, reason in results if reason})
    if unsafe:
        what += " (then stopped: %s; the rest run as separate processes)" % "; ".join(unsafe)
    argv = dataclasses.replace(todo[0], filter="").argv(runner.options)
    report_step(runner.progress, runner.fmha_dir, argv, what, time.monotonic() - started)
    return stored


def _run_batch(runner: GenerateRunner, requests: List[GenerateRequest], dispatch: bool,
               known_keys: Dict[str, str]) -> Tuple[int, str]:
    """Run one chunk in one interpreter; (results stored, why it stopped early or "")."""
    base = requests[0]
    argv = dataclasses.replace(base, filter="").argv(runner.options)
    with tempfile.TemporaryDirectory(prefix="fmha-batch-") as tmp:
        workdir = Path(tmp)
        jobs = workdir / "jobs.json"
        out = workdir / "results.json"
        jobs.write_text(json.dumps({
            "fmha_dir": str(runner.fmha_dir), "argv": argv,
            "probe_script": str(PROBE_SCRIPT), "trait_reader": str(TRAIT_READER),
            "known_keys": known_keys,
            "jobs": [{"filter": r.filter, "dispatch": dispatch} for r in requests],
        }), encoding="utf-8")
        command = [runner.python, "-B", str(BATCH_SCRIPT), str(jobs), str(out)]
        display = "batch of %d generate.py -f runs (%s)" % (len(requests), " ".join(argv))
        try:
            runner._run(base, [], display, workdir, command=command)
            data = json.loads(out.read_text(encoding="utf-8"))
        except (GenerateError, OSError, ValueError):
            return 0, ""  # the separate runs will say what is wrong
    stored = 0
    by_filter = {r.filter: r for r in requests}
    for result in data.get("results", []):
        req = by_filter.get(result.get("filter"))
        if req is None or result.get("error"):
            continue
        runner.store_listing(req, result["listing"], float(result.get("seconds", 0.0)))
        stored += 1
        found = result.get("dispatch") or {}
        if dispatch and found and not found.get("error"):
            runner.store_api_file(req, found["api_file"], found["text"], found["kernel_traits"],
                                  float(result.get("seconds", 0.0)))
    return stored, str(data.get("unsafe") or "")

