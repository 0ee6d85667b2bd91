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

Each job yields the listing (``-l``) and, when asked, the dispatch file write mode
would write and its kernels' trait keys, rendered as the probe does (no kernel files
are written); a trait key is reused when a kernel's text hashes like a text already
read (the same text has the same key).

usage: batch_script.py JOBS.json OUT.json
JOBS: {"fmha_dir", "argv", "probe_script", "trait_reader", "known_keys": {sha: key},
       "jobs": [{"filter": str, "dispatch": bool}]}
"""

import fnmatch
import json
import os
import sys
import time
import traceback


def _state(fmha_dir):
    """What one run must not change for the next to be as fresh as a new process."""
    root = os.path.realpath(fmha_dir) + os.sep
    others = sorted(name for name, module in sys.modules.items()
                    if not os.path.realpath(getattr(module, "__file__", None) or "")
                    .startswith(root))
    return (os.getcwd(), list(sys.path), dict(os.environ), others)


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
    before = _state(fmha_dir)
    for job in spec["jobs"]:
        started = time.time()
        recorder.objects, recorder.seen_ids, recorder.pools = [], set(), []
        argv = list(spec["argv"]) + (["-f", job["filter"]] if job["filter"] else [])
        listing, error = probe.run_generate(fmha_dir, argv)
        result = {"filter": job["filter"], "listing": listing, "error": error}
        if job.get("dispatch") and not error:
            kernels = _kernels(recorder, listing)
            try:
                result["dispatch"] = probe.render_dispatch(fmha_dir, argv, listing, kernels,
                                                           list(recorder.pools), trait_key)
            except Exception:  # noqa: BLE001 - the caller runs write mode itself
                result["dispatch"] = {"error": traceback.format_exc(limit=-8)}
        result["seconds"] = round(time.time() - started, 3)
        results.append(result)
        after = _state(fmha_dir)
        if after != before or fnmatch.fnmatch is not hook:
            unsafe = "generate.py -f %r changed state outside the tree's modules" % job["filter"]
            break
    with open(sys.argv[2], "w") as handle:
        handle.write(json.dumps({"results": results, "unsafe": unsafe}))


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
