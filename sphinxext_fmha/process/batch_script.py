"""Several ``generate.py -f`` runs of one API in one interpreter, each as a fresh process
would run it.

Executed as a script by the interpreter that runs generate.py (standard library only;
it reuses the probe script's run helpers, loaded by path). No hook is installed: the
codegen's classes are as they are and ``fnmatch`` is the real one.

Every run is a child forked from this interpreter before it
ran anything of the tree (what a new process is: no tree module imported, no state
left by another run), up to ``parallel`` at once, each sending its result back through
a pipe. The tree's sources are compiled once here first (or loaded from the code
store an earlier probe or batch kept, see ``load_code_store`` in probe_script.py), so
the children share the code objects (the same bytes give the same code object)
instead of each compiling them; nothing else is shared.

Each job yields the listing (``-l``) and, when asked, the dispatch file and its
kernels' trait keys from a write-mode run into a temporary folder (write mode checks
what listing mode does not: a set that lists may not write); a trait key is reused
when a kernel's text hashes like a text already read (the same text has the same key).
A write-mode failure is returned as the job's dispatch error: the caller then runs
that ``-o`` as its own process, which fails and says why.

A driver job (``"driver": true``) is the run ``driver_script.py`` makes for the union
of its filters: the driver's own argv (the first filter on the command line) and its
widened ``fnmatch`` (loaded from that script by path), installed in the job's
children only.

usage: batch_script.py JOBS.json OUT.json
JOBS: {"fmha_dir", "argv", "probe_script", "trait_reader", "driver_script",
       "known_keys": {sha: key}, "parallel": int (forked runs at once, default 1),
       "code_store": path (compiled code kept across processes, see probe_script.py),
       "jobs": [{"filter": str, "dispatch": bool}
                | {"driver": true, "filters": [str], "separator": str, "dispatch": bool}]}
"""

import fnmatch
import importlib.machinery
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
    probe.memoise_compilation()
    probe.memoise_generated_code()
    probe.load_code_store(spec.get("code_store"))
    known = dict(spec.get("known_keys", {}))
    readers = []

    def reader():
        if not readers:
            readers.append(probe.load_trait_reader(spec["trait_reader"]))
        return readers[0]

    def trait_key(text):
        sha = probe.text_sha(text)
        if sha not in known:
            known[sha] = reader()(text)  # loaded when a text is new: most are known
        return known[sha]

    driver = _load_driver(spec.get("driver_script"))
    runs = Runs(probe, fmha_dir, spec["argv"], driver, trait_key)
    results = _forked(probe, fmha_dir, runs, spec["jobs"], int(spec.get("parallel") or 1))
    with open(sys.argv[2], "w") as handle:
        handle.write(json.dumps({"results": results}))
    probe.save_code_store(spec.get("code_store"))


class Runs:
    """The generate.py runs of one job: its listing, and its write mode."""

    def __init__(self, probe, fmha_dir, argv, driver, trait_key):
        self.probe, self.fmha_dir, self.argv = probe, fmha_dir, list(argv)
        self.driver, self.trait_key = driver, trait_key

    def head(self, job):
        if job.get("driver"):
            return {"driver": True, "filters": list(job["filters"])}
        return {"filter": job["filter"]}

    def job_argv(self, job):
        if job.get("driver"):
            return self.driver.generate_argv(list(job["filters"]), self.argv)
        return self.argv + (["-f", job["filter"]] if job["filter"] else [])

    def own_match(self, job):
        """The driver's widened ``fnmatch`` (None for a filter job): the driver process
        widens the real fnmatch; so does this job."""
        if not job.get("driver"):
            return None
        return self.driver.widened(list(job["filters"]), job.get("separator") or "",
                                   self.probe.ORIGINAL_FNMATCH)

    def listing(self, job):
        listing, error = self.probe.run_generate(self.fmha_dir, self.job_argv(job))
        return {"listing": listing, "error": error}

    def write(self, job):
        """Write mode itself, as the separate ``-o`` run: a filtered set can list and
        still fail the checks write mode makes."""
        try:
            return self.probe.render_dispatch(self.fmha_dir, self.job_argv(job), [], [], [],
                                              self.trait_key, write=True)
        except Exception:  # noqa: BLE001 - the caller runs write mode itself
            return {"error": traceback.format_exc(limit=-8)}


def _forked(probe, fmha_dir, runs, jobs, parallel):
    """Every run in a child forked from this interpreter, ``parallel`` at once."""
    _compile_tree(fmha_dir)
    tasks = []
    for index, job in enumerate(jobs):
        tasks.append((index, "listing", job))
        if job.get("dispatch"):
            tasks.append((index, "dispatch", job))
    outcomes = {}
    running = []

    def collect_oldest():
        (index, what, _job), forked = running.pop(0)
        outcomes[index, what] = probe.collect_json(forked) if forked else None

    # The first run alone; then the modules from outside the tree it imported (the
    # standard library's the codegen uses) are imported here, so that the later
    # children find them, as a new process finds those the interpreter imports at
    # start-up: the tree's own modules every child imports afresh.
    running.append((tasks[0], probe.fork_json(_in_child(runs, tasks[0], fmha_dir))))
    collect_oldest()
    first = outcomes[tasks[0][:2]] if isinstance(outcomes[tasks[0][:2]], dict) else {}
    for name in first.get("imported", []):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the children import it themselves
            continue
    for source in first.get("generated", []):  # and the code dataclasses generated
        probe.generated_code(source)
    for task in tasks[1:]:
        if len(running) >= max(1, parallel):
            collect_oldest()
        running.append((task, probe.fork_json(_in_child(runs, task))))
    while running:
        collect_oldest()
    results = []
    for index, job in enumerate(jobs):
        result = runs.head(job)
        listed = outcomes.get((index, "listing"))
        if not isinstance(listed, dict):
            listed = {"listing": [], "error": "the forked run sent no result"}
        result.update(listing=listed["listing"], error=listed["error"])
        seconds = listed.get("seconds", 0.0)
        written = outcomes.get((index, "dispatch"))
        if job.get("dispatch") and not result["error"]:
            if isinstance(written, dict) and "result" in written:
                result["dispatch"] = written["result"]
                seconds += written.get("seconds", 0.0)
            else:
                result["dispatch"] = {"error": "the forked write-mode run sent no result"}
        result["seconds"] = round(seconds, 3)
        results.append(result)
    return results


def _in_child(runs, task, report_imports=None):
    """What the forked child of ``task`` computes (in the child only: it ends after);
    with ``report_imports`` (the tree's folder), also the names of the modules from
    outside it that the run imported."""
    _index, what, job = task

    def compute():
        started = time.time()
        had, generated_before = set(sys.modules), set(runs.probe.GENERATED)
        match = runs.own_match(job)
        if match is not None:
            fnmatch.fnmatch = match
        if what == "listing":
            outcome = runs.listing(job)
        else:
            outcome = {"result": runs.write(job)}
        outcome["seconds"] = round(time.time() - started, 3)
        if report_imports:
            root = os.path.realpath(report_imports) + os.sep
            outcome["imported"] = sorted(
                name for name, module in list(sys.modules.items()) if name not in had
                and not os.path.realpath(getattr(module, "__file__", None) or "").startswith(root))
            outcome["generated"] = [t for t in runs.probe.GENERATED if t not in generated_before]
        return outcome

    return compute


def _compile_tree(fmha_dir):
    """Compile the tree's sources here, before forking, so that every child finds their
    code objects memoised (``probe_script.memoise_compilation``) instead of compiling
    them again. Only compiled, never run: the children start as fresh as before."""
    for folder, dirnames, filenames in os.walk(fmha_dir):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            loader = importlib.machinery.SourceFileLoader(name[:-3], path)
            try:
                loader.source_to_code(loader.get_data(path), path)
            except (OSError, SyntaxError, ValueError):
                continue  # not imported as it is, or it fails there as it would anyway


def _load_driver(path):
    """``driver_script.py``, loaded by path (None when no job needs it)."""
    if not path:
        return None
    spec = importlib.util.spec_from_file_location("fmha_batch_driver", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    main()
