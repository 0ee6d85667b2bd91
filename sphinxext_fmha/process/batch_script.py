"""Several ``generate.py -f`` runs of one API in one interpreter, each as a fresh process
would run it.

Executed as a script by the interpreter that runs generate.py (standard library only;
it reuses the probe script's run helpers, loaded by path). For each job the tree's
modules are dropped so generate.py imports them afresh (new module objects, new state:
what a new process has), ``sys.argv`` is the job's, and ``fnmatch`` is the real one.
Only compiling is shared (the same bytes give the same code object). A run that
changes state outside the tree's own modules (the working folder, ``sys.path``, the
environment, other modules, ``fnmatch`` itself) could leak into the next job: the batch
stops there and says so, and the caller runs the remaining jobs as separate processes.

Each job yields the listing (``-l``) and, when asked, the dispatch file and its
kernels' trait keys from a write-mode run into a temporary folder (write mode checks
what listing mode does not: a set that lists may not write); a trait key is reused
when a kernel's text hashes like a text already read (the same text has the same key).
A write-mode failure is returned as the job's dispatch error: the caller then runs
that ``-o`` as its own process, which fails and says why.

A driver job (``"driver": true``) is the run ``driver_script.py`` makes for the union
of its filters: the driver's own argv (the first filter on the command line) and its
widened ``fnmatch`` (loaded from that script by path), installed for the job only; the
batch's ``fnmatch`` is back before the state check. A job that replaced the widened
``fnmatch`` itself stops the batch like any other change of shared state.

usage: batch_script.py JOBS.json OUT.json
JOBS: {"fmha_dir", "argv", "probe_script", "trait_reader", "driver_script",
       "known_keys": {sha: key},
       "jobs": [{"filter": str, "dispatch": bool}
                | {"driver": true, "filters": [str], "separator": str, "dispatch": bool}]}
"""

import fnmatch
import importlib.util
import json
import os
import sys
import time
import traceback


def main():
    with open(sys.argv[1]) as handle:
        spec = json.load(handle)
    fmha_dir = os.path.abspath(spec["fmha_dir"])
    sys.path.insert(0, os.path.dirname(spec["probe_script"]))
    import probe_script as probe  # type: ignore[import-not-found]  # noqa: E402 - found through the line above

    sys.dont_write_bytecode = True
    sys.path.insert(0, fmha_dir)
    os.chdir(fmha_dir)
    parse = probe.load_trait_reader(spec["trait_reader"])
    known = dict(spec.get("known_keys", {}))

    def trait_key(text):
        sha = probe.text_sha(text)
        if sha not in known:
            known[sha] = parse(text)
        return known[sha]

    driver = _load_driver(spec.get("driver_script"))
    recorder = probe.Recorder(fmha_dir)
    probe.install_hooks(recorder)
    recorder.max_calls = 0  # record no fnmatch call: the hook is the real fnmatch
    hook = fnmatch.fnmatch
    results = []
    unsafe = None
    # Import the tree once before the first job, so that the modules the codegen
    # pulls in from the standard library are already there: they are shared by every
    # later process too (a new process imports them the same way).
    probe.run_generate(fmha_dir, list(spec["argv"]) + ["-f", "#fmha-batch-warmup#"])
    before = probe.process_state(fmha_dir)
    for job in spec["jobs"]:
        started = time.time()
        recorder.objects, recorder.seen_ids, recorder.pools = [], set(), []
        own_match = None
        if job.get("driver"):
            filters = list(job["filters"])
            argv = driver.generate_argv(filters, spec["argv"])
            # The driver process widens the real fnmatch; so does this job.
            own_match = driver.widened(filters, job.get("separator") or "",
                                       probe.ORIGINAL_FNMATCH)
            fnmatch.fnmatch = own_match
            result = {"driver": True, "filters": filters}
        else:
            argv = list(spec["argv"]) + (["-f", job["filter"]] if job["filter"] else [])
            result = {"filter": job["filter"]}
        try:
            result.update(_run_job(probe, recorder, fmha_dir, argv, job, trait_key))
        finally:
            replaced = own_match is not None and fnmatch.fnmatch is not own_match
            if own_match is not None and not replaced:
                fnmatch.fnmatch = hook  # restored before the check below
        result["seconds"] = round(time.time() - started, 3)
        results.append(result)
        after = probe.process_state(fmha_dir)
        if replaced or after != before or fnmatch.fnmatch is not hook:
            what = ("the driver for %r" % result["filters"]) if own_match is not None \
                else "generate.py -f %r" % job["filter"]
            unsafe = "%s changed state outside the tree's modules" % what
            break
    with open(sys.argv[2], "w") as handle:
        handle.write(json.dumps({"results": results, "unsafe": unsafe}))


def _run_job(probe, recorder, fmha_dir, argv, job, trait_key):
    """The job's listing and error, and, when asked, the dispatch file write mode writes."""
    listing, error = probe.run_generate(fmha_dir, argv)
    result = {"listing": listing, "error": error}
    if job.get("dispatch") and not error:
        kernels = _kernels(recorder, listing)
        try:
            # Write mode itself, as the separate ``-o`` run: a filtered set can list
            # and still fail the checks write mode makes (the pool would not say).
            result["dispatch"] = probe.render_dispatch(fmha_dir, argv, listing, kernels,
                                                       list(recorder.pools), trait_key,
                                                       write=True)
        except Exception:  # noqa: BLE001 - the caller runs write mode itself
            result["dispatch"] = {"error": traceback.format_exc(limit=-8)}
    return result


def _load_driver(path):
    """``driver_script.py``, loaded by path (None when no job needs it)."""
    if not path:
        return None
    spec = importlib.util.spec_from_file_location("fmha_batch_driver", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kernels(recorder, listing):
    by_filename = {}
    for obj in recorder.objects:
        try:
            by_filename.setdefault(obj.filename, obj)
        except Exception:  # noqa: BLE001 - a broken object is not a listed kernel
            continue
    listed = set(listing)
    return sorted(((f, o) for f, o in by_filename.items() if f in listed), key=lambda i: i[0])


if __name__ == "__main__":
    main()
