"""Observe a CK FMHA codegen tree while its own generate.py runs in this process, run by
generate.py's interpreter (stdlib only, as the ``probe_*.py`` it loads by path): the kernel
objects and fnmatch calls (how ``-f`` applies is observed), then perturbation, the
dispatch file and marker runs; work forked to a child and sent back as JSON; the result
as written (fnmatch logs compressed, record fields shared, JSON written whole)."""

import atexit
import dataclasses
import fnmatch
import gc
import hashlib
import importlib
import importlib.machinery
import importlib.util
import json
import locale
import marshal
import os
import re
import runpy
import sys
import tempfile
import time

MARKER = "#fmha-probe-{}#"
OBSERVED_CALLS = 600


def _sibling(name):
    """The module ``name`` beside this file, loaded by its path (``sys.path`` is the
    codegen's)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    spec = importlib.util.spec_from_file_location("_fmha_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_perturb = _sibling("probe_perturb")  # a kernel's fields and what each writes in its name
_recorder = _sibling("probe_recorder")  # the hooks, and the runs that watch through them
_calls = _sibling("probe_calls")  # what the codegen's factories return
_output = _sibling("probe_output")  # forked work sent back as JSON; the result as written
fork_json, collect_json, write_whole = _output.fork_json, _output.collect_json, _output.write_whole
ORIGINAL_FNMATCH = _recorder.ORIGINAL_FNMATCH  # for the batch runner (process/batch_script.py)


def enter_tree(fmha_dir):
    """Run generate.py from its folder as its own process would, nothing written, each
    source compiled once (only compiling is shared between runs)."""
    memoise_compilation()
    memoise_generated_code()
    sys.dont_write_bytecode = True
    sys.path.insert(0, fmha_dir)
    os.chdir(fmha_dir)


#: (source path, source bytes) -> code object (:func:`memoise_compilation`); the keys of
#: COMPILED and GENERATED this process used (its code store keeps them), and compiled
COMPILED: dict = {}
USED: set = set()
FRESH: set = set()


def memoise_compilation():
    """Compile each source once per process: every run imports the tree afresh (new
    modules, new state), but code objects are immutable (nothing is written: ``-B``)."""
    loader = importlib.machinery.SourceFileLoader
    original = loader.source_to_code
    if getattr(original, "_fmha_probe", False):
        return

    def source_to_code(self, data, path, *args, **kwargs):
        return _memoised(COMPILED, (path, bytes(data)),
                         lambda: original(self, data, path, *args, **kwargs))

    source_to_code._fmha_probe = True
    loader.source_to_code = source_to_code


#: source text -> code object, of what ``dataclasses`` writes and runs with ``exec``
GENERATED: dict = {}


def generated_code(source):
    return _memoised(GENERATED, source,
                     lambda: compile(source, "<string>", "exec", dont_inherit=True))


def _memoised(table, key, compiled):
    code = table.get(key)
    if code is None:
        code = table[key] = compiled()
        FRESH.add(key)
    USED.add(key)
    return code


def memoise_generated_code():
    """Compile each text ``dataclasses`` generates once per process (most of what
    importing the codegen costs), as ``exec`` would, run in the namespaces it would use."""

    def exec_memoised(source, globals=None, locals=None):
        if globals is None:  # the caller's namespaces, as exec takes them
            caller = sys._getframe(1)
            globals, locals = caller.f_globals, caller.f_locals if locals is None else locals
        if isinstance(source, str):
            source = generated_code(source)
        exec(source, globals, locals)

    dataclasses.exec = exec_memoised


#: Who may read a code store: marshalled code is for one bytecode version and -O level
CODE_STORE_TAG = ("fmha-code-store", 1, importlib.util.MAGIC_NUMBER, sys.flags.optimize,
                  sys.version)


def load_code_store(path):
    """Fill COMPILED and GENERATED from ``path`` (an earlier probe or batch of the same
    interpreter wrote it): how many entries; a missing, partial or foreign store: 0."""
    if not path:
        return 0
    try:
        with open(path, "rb") as handle:
            tag, compiled, generated = marshal.load(handle)
        if tag != CODE_STORE_TAG or not isinstance(compiled, dict) \
                or not isinstance(generated, dict):
            return 0
    except (OSError, EOFError, ValueError, TypeError):
        return 0
    COMPILED.update(compiled)
    GENERATED.update(generated)
    return len(compiled) + len(generated)


def save_code_store(path):
    """Write what this process used to ``path`` (renamed into place), unless it compiled
    nothing itself. Failing only costs later processes their compiling."""
    if not path or not FRESH & USED:
        return
    compiled = {key: code for key, code in COMPILED.items() if key in USED}
    generated = {text: code for text, code in GENERATED.items() if text in USED}
    part = "%s.%d.part" % (path, os.getpid())
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(part, "wb") as handle:
            marshal.dump((CODE_STORE_TAG, compiled, generated), handle)
        os.replace(part, path)
    except (OSError, ValueError):
        try:
            os.unlink(part)
        except OSError:
            pass


#: The line the probe's unfiltered run finds in its listing file before generate.py
#: writes it: still there afterwards, generate.py appends to the file (older trees).
LISTING_SENTINEL = "fmha-probe-listing-sentinel"


def run_generate(fmha_dir, argv, output_dir=None, prefill=False):
    """Run generate.py as __main__ in this process; returns the listed basenames (or,
    with ``output_dir``, write mode into that folder and no names) and an error.
    ``prefill``: the listing file holds LISTING_SENTINEL before the run."""
    # the tree's modules imported afresh, as by a new process (some generate.py versions
    # skip modules already imported)
    root = os.path.realpath(fmha_dir) + os.sep
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if path and os.path.realpath(path).startswith(root):
            del sys.modules[name]
    with tempfile.TemporaryDirectory(prefix="fmha-probe-") as tmp:
        listing = os.path.join(tmp, "list.txt")
        if prefill:
            with open(listing, "w") as handle:
                handle.write(LISTING_SENTINEL + "\n")
        saved_argv = sys.argv
        out_args = ["-o", output_dir] if output_dir else ["-l", listing]
        sys.argv = ["generate.py"] + list(argv) + out_args
        error = None
        try:
            runpy.run_path(os.path.join(fmha_dir, "generate.py"), run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (0, None):
                error = "generate.py exited with %r" % (exc.code,)
        except _recorder.ObservedEnough as stop:  # a marker run made every call it observes
            stop.reached = True
        except Exception:  # noqa: BLE001 - reported to the analysis, which says so
            error = _output.codegen_traceback()
        finally:
            sys.argv = saved_argv
        lines = []
        if os.path.exists(listing):
            # UTF-8 whatever the locale, a byte that is not read as U+FFFD (as the
            # extension reads a listing): generate.py succeeded, its names are kept
            with open(listing, encoding="utf-8", errors="replace") as handle:
                lines = [os.path.basename(line.strip()) for line in handle if line.strip()]
        return lines, error


API_FILE = re.compile(r"_api\.cpp$")


def load_trait_reader(package_dir):
    """``kernel_trait_key`` of the package's stdlib-only dispatch-file reader (``cppapi/``),
    loaded by path as a package of its own (this script may run in another Python)."""
    name = "fmha_probe_cppapi"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(package_dir, "__init__.py"),
            submodule_search_locations=[package_dir])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and relative imports look it up there
        spec.loader.exec_module(module)
    return importlib.import_module(name + ".matching").kernel_trait_key


def render_dispatch(fmha_dir, argv, listing, kernels, pools, trait_key, write=False):
    """The API dispatch file write mode would write (the unfiltered run's ``pool.api``),
    each kernel file's trait key (its ``template``). With no single pool of the kernels'
    module (built in write mode only), or ``write`` (write mode's own checks decide, e.g.
    newer CK's split-KV/combine assertion), write mode runs into a temporary folder."""
    api_names = [n for n in listing if API_FILE.search(n)]
    modules = {type(obj).__module__ for _, obj in kernels}
    own = [p for p in pools if type(p).__module__ in modules]
    complete = {f for f, _ in kernels} == set(listing) - set(api_names)
    texts = None
    if not write and len(own) == 1 and len(api_names) == 1 and complete:
        try:  # each text rendered once, not once to ask (hasattr) and once to read
            texts = dict(sorted((filename, obj.template) for filename, obj in kernels))
        except AttributeError:  # a kernel without a template: write mode writes them
            pass
    if texts is not None:
        api_text = own[0].api
        # the bytes write mode writes: write_text of these very texts
        return _dispatch("pool", api_names[0], api_text, texts, trait_key,
                         {f: written_size(t) for f, t in texts.items()}, written_size(api_text))
    with tempfile.TemporaryDirectory(prefix="fmha-probe-write-") as tmp:
        _, error = run_generate(fmha_dir, argv, output_dir=tmp)
        if error:
            return {"error": error}
        found, sizes = {}, {}
        for path in (os.path.join(d, n) for d, _, names in os.walk(tmp) for n in names
                     if n.endswith(".cpp")):
            sizes[os.path.basename(path)] = os.path.getsize(path)
            with open(path, encoding="utf-8", errors="replace") as handle:
                found[os.path.basename(path)] = handle.read()
    api_names = sorted(n for n in found if API_FILE.search(n))
    if len(api_names) != 1:
        return {"error": "write mode wrote %d *_api.cpp files" % len(api_names)}
    text = found.pop(api_names[0])
    found = dict(sorted(found.items()))
    return _dispatch("write", api_names[0], text, found, trait_key,
                     {f: sizes[f] for f in found}, sizes[api_names[0]])


def _dispatch(how, api_file, text, texts, trait_key, kernel_bytes, api_bytes):
    return {"how": how, "api_file": api_file, "text": text,
            "kernel_traits": dict(zip(texts, _output.keys_of(trait_key, list(texts.values())))),
            "kernel_sha": {f: text_sha(t) for f, t in texts.items()},
            "kernel_bytes": kernel_bytes, "api_bytes": api_bytes}


def written_size(text):
    """The bytes ``Path.write_text(text)`` writes, as write mode writes its files: the
    locale's encoding, each newline as the system writes it."""
    encoded = text.encode(locale.getpreferredencoding(False), "replace")
    return len(encoded) + text.count("\n") * (len(os.linesep) - 1)


def text_sha(text):
    """Same text, same trait key: later runs reuse a key by the text's hash."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def probe(fmha_dir, argv, perturb=True, trait_reader=None, also_list=None, deliver=None,
          code_store=None):
    """What the unfiltered run of ``generate.py argv`` shows. ``also_list``: one more
    listing's arguments (``result["also_listed"]``); ``deliver``: given the result before
    that listing is waited for; ``code_store``: see :func:`load_code_store`."""
    started = time.time()
    load_code_store(code_store)
    # The other listing is forked first, while this process is as a new one (no hooks,
    # no codegen imported): it runs on the other core while the probe works.
    forked = start_listing(fmha_dir, list(also_list)) if also_list is not None else None
    recorder = _recorder.Recorder(fmha_dir, run_generate, _calls.CallLog(
        os.path.realpath(fmha_dir), _perturb.SCALARS, _perturb.is_object))
    original_exec = importlib.machinery.SourceFileLoader.exec_module

    def exec_module(loader, module):
        original_exec(loader, module)
        recorder.patch_module(module)

    importlib.machinery.SourceFileLoader.exec_module = exec_module
    fnmatch.fnmatch = recorder.fnmatch_hook
    enter_tree(fmha_dir)

    # The real, unfiltered run: the kernel objects and the listing come from it.
    recorder.calls.watching = True  # this run only: the factories' calls
    listing, error = run_generate(fmha_dir, list(argv), prefill=True)
    recorder.calls.watching = False
    save_code_store(code_store)  # the next probes and batches start while this one works
    appends = LISTING_SENTINEL in listing
    listing = [name for name in listing if name != LISTING_SENTINEL]
    result = {"listing": listing, "listing_appends": appends, "error": error,
              "kernel_classes": recorder.kernel_classes}
    observe_seconds = time.time() - started

    kernels = recorder.listed_kernels(listing)
    records, scalars, owners, candidates = _perturb.observe_records(
        kernels, _perturb.map_domains(recorder.codegen_modules()))
    if trait_reader:
        dispatch_started = time.time()
        try:
            result["dispatch"] = render_dispatch(fmha_dir, list(argv), listing, kernels,
                                                 list(recorder.pools),
                                                 load_trait_reader(trait_reader))
        except Exception:  # noqa: BLE001 - the caller falls back to a write-mode run
            result["dispatch"] = {"error": _output.codegen_traceback()}
        result["dispatch"]["seconds"] = round(time.time() - dispatch_started, 3)

    perturb_started = time.time()
    if perturb:
        result["perturbation"] = _perturb.perturb_influence(
            records, [obj for _, obj in kernels], candidates, scalars, perturb == "all")

    perturb_seconds = time.time() - perturb_started
    # the other factories' tables last: a call the run did not make may change what
    # the run's objects share (the marker runs below import the codegen afresh)
    part_types = _perturb.part_types(obj for _, obj in kernels)
    recorder.calls.ask_the_others(part_types)
    result["factories"] = recorder.calls.summary(part_types)
    calls, found = _recorder.filter_runs(recorder, fmha_dir, argv, [MARKER.format(i) for i in range(4)],
                                         MARKER.format("next-api"), listing, records, OBSERVED_CALLS)
    record_of = {r["name"]: i for i, r in enumerate(records)}
    record_of.update({("file", r["filename"]): i for i, r in enumerate(records)})
    result.update(found, records=records, owners=owners, normcase=os.path.normcase("Aa/"),
                  seconds=dict(found.get("seconds", {}), observe=round(observe_seconds, 3),
                               perturb=round(perturb_seconds, 3)))
    result.update((key, _output.summarise_calls(logged, record_of, OBSERVED_CALLS))
                  for key, logged in calls.items())
    if also_list is not None:
        if deliver is not None:
            deliver(result)
        outcome = collect_json(forked) if forked is not None else None
        # none (no fork, or the child failed): the caller lists it in a process of its own
        result["also_listed"] = outcome if isinstance(outcome, dict) and "listing" in outcome \
            else {"argv": list(also_list), "unsafe": "no forked listing"}
    return result


def start_listing(fmha_dir, argv):
    """Fork a child that runs ``generate.py argv -l`` as a new process would (forked
    before any hook or import of the tree) and sends the outcome (:func:`fork_json`)."""
    def listed():
        enter_tree(fmha_dir)  # as in a batch, with the code store the probe loaded
        started = time.time()
        listing, error = run_generate(fmha_dir, argv)
        return {"argv": argv, "how": "forked", "listing": listing, "error": error,
                "seconds": round(time.time() - started, 3)}

    return fork_json(listed)


def main():
    # This process keeps nearly every object it makes until it ends: the cyclic
    # collector's passes (the one at exit too: 0.5 s after 2.8.3's bwd) free next to nothing.
    gc.disable()
    atexit.register(gc.freeze)
    fmha_dir, out_path, *argv = sys.argv[1:]
    # --trait-reader DIR, --code-store FILE (see load_code_store), --also-list JSON
    # (generate.py's arguments, no -l), --also-out FILE (that listing's own file, written
    # after the result), --no-perturb, --perturb-all; then generate.py's arguments
    given = {"--perturb": True}
    while argv and argv[0] in ("--no-perturb", "--perturb-all", "--trait-reader",
                               "--also-list", "--also-out", "--code-store"):
        option = argv.pop(0)
        if option.startswith("--no-") or option.endswith("-all"):
            given["--perturb"] = option == "--perturb-all" and "all"
        else:
            given[option] = argv.pop(0)
    also_list, also_out = given.get("--also-list"), given.get("--also-out")

    def deliver(result):
        write_whole(out_path, _output.share_record_fields(result))

    result = probe(os.path.abspath(fmha_dir), argv, perturb=given["--perturb"],
                   trait_reader=given.get("--trait-reader"),
                   also_list=json.loads(also_list) if also_list is not None else None,
                   deliver=deliver if also_out is not None else None,
                   code_store=given.get("--code-store"))
    if also_out is None:
        deliver(result)
    elif also_list is not None:
        write_whole(also_out, result["also_listed"])


if __name__ == "__main__":
    main()
