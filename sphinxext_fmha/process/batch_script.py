"""generate.py in one interpreter: several ``-f`` runs of one API, each in a child forked
before anything of the tree ran (the batch), or one run for the union of several filters
(the driver). Standard library only (run by generate.py's interpreter). Why and how:
``docs/internals.md``.

usage: batch_script.py JOBS.json OUT.json
       batch_script.py FMHA_DIR SEPARATOR FILTER [FILTER ...] -- GENERATE_ARGS...

JOBS: {"fmha_dir", "argv", "probe_script", "trait_reader", "known_keys": {sha: key},
       "parallel": int (forked runs at once), "code_store": path (see probe_script.py),
       "jobs": [{"filter": str, "dispatch": bool}
                | {"driver": true, "filters": [str], "separator": str, "dispatch": bool}]}
"""

import fnmatch
import importlib.machinery
import json
import os
import re
import runpy
import sys
import time
import traceback

#: fnmatch as this interpreter has it before anything replaces it: the matchers of
#: :func:`any_of` give its answers
REAL_FNMATCH = fnmatch.fnmatch
_WILDCARD = re.compile(r"[*?\[]")
#: Patterns per regular expression: a name is tried against each alternative in turn
#: either way; fewer, larger expressions only cost more to compile at once.
CHUNK = 256


def widened(filters, separator, original):
    """``fnmatch.fnmatch`` for the union of ``filters``: a pattern that is a part of the
    first filter (the one on the command line) matches when the same part of any
    filter matches; any other pattern is matched by ``original``."""
    split = [f.split(separator) if separator else [f] for f in filters]
    first = split[0]
    unions = {}

    def match(name, pattern):
        for position, part in enumerate(first):
            if pattern == part:
                if position not in unions:
                    unions[position] = any_of([parts[position] for parts in split
                                               if position < len(parts)], original)
                return unions[position](name)
        return original(name, pattern)

    return match


def any_of(patterns, original):
    """A function of a name: whether ``original(name, pattern)`` holds for any of
    ``patterns`` (in their order: a pattern fnmatch cannot compile raises as it would
    there). Sorted as the module docstring says when ``original`` is fnmatch itself."""
    patterns = list(dict.fromkeys(patterns))
    if original is not REAL_FNMATCH:
        return lambda name: any(original(name, pattern) for pattern in patterns)
    normcase = os.path.normcase
    exact, prefixes, rest = set(), set(), []
    for pattern in map(normcase, patterns):
        if not _WILDCARD.search(pattern):
            exact.add(pattern)
        elif pattern.endswith("*") and not _WILDCARD.search(pattern[:-1]):
            prefixes.add(pattern[:-1])
        else:
            rest.append(pattern)
    lengths = sorted({len(prefix) for prefix in prefixes})
    try:
        regexes = [re.compile("|".join(fnmatch.translate(p) for p in rest[i:i + CHUNK]))
                   for i in range(0, len(rest), CHUNK)]
    except re.error:  # one of them is not a pattern: fnmatch raises at it, in order
        return lambda name: any(original(name, pattern) for pattern in patterns)

    def matches(name):
        name = normcase(name)
        return (name in exact or any(name[:n] in prefixes for n in lengths)
                or any(regex.match(name) for regex in regexes))

    return matches


def generate_argv(filters, generate_args):
    """generate.py's arguments for the union: the first filter on the command line."""
    return list(generate_args) + ["-f", filters[0]]


def drive():
    fmha_dir, separator = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    cut = rest.index("--")
    filters, generate_args = rest[:cut], rest[cut + 1:]
    fnmatch.fnmatch = widened(filters, separator, fnmatch.fnmatch)
    sys.dont_write_bytecode = True
    sys.path.insert(0, fmha_dir)
    os.chdir(fmha_dir)
    sys.argv = ["generate.py"] + generate_argv(filters, generate_args)
    runpy.run_path(os.path.join(fmha_dir, "generate.py"), run_name="__main__")


def main():
    if os.path.isdir(sys.argv[1]):
        return drive()
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

    def trait_key(text):
        sha = probe.text_sha(text)
        if sha not in known:  # the reader loaded when a text is new: most are known
            if not readers:
                readers.append(probe.load_trait_reader(spec["trait_reader"]))
            known[sha] = readers[0](text)
        return known[sha]

    def run(what, job):
        """The job's listing, or its write mode as the separate ``-o`` run (a filtered
        set can list and still fail the checks write mode makes)."""
        argv = (generate_argv(job["filters"], spec["argv"]) if job.get("driver")
                else spec["argv"] + (["-f", job["filter"]] if job["filter"] else []))
        if job.get("driver"):  # the driver process widens the real fnmatch; so does this job
            fnmatch.fnmatch = widened(job["filters"], job.get("separator") or "",
                                      probe.ORIGINAL_FNMATCH)
        if what == "listing":
            listing, error = probe.run_generate(fmha_dir, argv)
            return {"listing": listing, "error": error}
        try:
            return {"result": probe.render_dispatch(fmha_dir, argv, [], [], [], trait_key,
                                                    write=True)}
        except Exception:  # noqa: BLE001 - the caller runs write mode itself
            return {"result": {"error": traceback.format_exc(limit=-8)}}

    results = _forked(probe, fmha_dir, run, spec["jobs"], int(spec.get("parallel") or 1))
    with open(sys.argv[2], "w") as handle:
        handle.write(json.dumps({"results": results}))
    probe.save_code_store(spec.get("code_store"))


def _forked(probe, fmha_dir, run, jobs, parallel):
    """Every run in a child forked from this interpreter, ``parallel`` at once."""
    _compile_tree(fmha_dir)
    tasks = [(index, what, job) for index, job in enumerate(jobs)
             for what in ("listing", "dispatch")[:2 if job.get("dispatch") else 1]]
    outcomes = {}
    running = []

    def collect_oldest():
        (index, what, _job), forked = running.pop(0)
        outcomes[index, what] = probe.collect_json(forked) if forked else None

    # The first run alone; then the modules from outside the tree it imported (the
    # standard library's the codegen uses) are imported here, so that the later
    # children find them, as a new process finds those the interpreter imports at
    # start-up: the tree's own modules every child imports afresh.
    running.append((tasks[0], probe.fork_json(_in_child(probe, run, tasks[0], fmha_dir))))
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
        running.append((task, probe.fork_json(_in_child(probe, run, task))))
    while running:
        collect_oldest()
    results = []
    for index, job in enumerate(jobs):
        result = ({"driver": True, "filters": list(job["filters"])} if job.get("driver")
                  else {"filter": job["filter"]})
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


def _in_child(probe, run, task, report_imports=None):
    """What the forked child of ``task`` computes (in the child only: it ends after);
    with ``report_imports`` (the tree's folder), also the names of the modules from
    outside it that the run imported."""
    _index, what, job = task

    def compute():
        started = time.time()
        had, generated_before = set(sys.modules), set(probe.GENERATED)
        outcome = run(what, job)
        outcome["seconds"] = round(time.time() - started, 3)
        if report_imports:
            root = os.path.realpath(report_imports) + os.sep
            outcome["imported"] = sorted(
                name for name, module in list(sys.modules.items()) if name not in had
                and not os.path.realpath(getattr(module, "__file__", None) or "").startswith(root))
            outcome["generated"] = [t for t in probe.GENERATED if t not in generated_before]
        return outcome

    return compute


def _compile_tree(fmha_dir):
    """Compile the tree's sources here, before forking, so that every child finds their
    code objects memoised (``probe_script.memoise_compilation``) instead of compiling
    them again. Only compiled, never run: the children start as fresh as before."""
    for folder, dirnames, filenames in os.walk(fmha_dir):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in (n for n in filenames if n.endswith(".py")):
            path = os.path.join(folder, name)
            loader = importlib.machinery.SourceFileLoader(name[:-3], path)
            try:
                loader.source_to_code(loader.get_data(path), path)
            except (OSError, SyntaxError, ValueError):
                continue  # not imported as it is, or it fails there as it would anyway


if __name__ == "__main__":
    main()
