"""Observe a CK FMHA codegen tree while its own generate.py runs.

This file is executed as a script by the interpreter that runs generate.py (it may be
another Python than the one running Sphinx), so it uses the standard library only and
imports nothing from sphinxext_fmha.

It runs ``generate.py -l`` in-process, with two observation hooks installed first:

* every class of ``codegen/`` that has a ``filename`` property gets a wrapper that
  records the object whose file name is asked for: these are the real kernel objects;
* ``fnmatch.fnmatch`` records which pattern is matched against which name, so the way
  ``-f`` is split and applied is observed, not assumed.

Then kernel objects are perturbed, one leaf field at a time, to see which part of
its name each field writes (one representative per field value and name layout, see
:func:`perturb_influence`), and the API dispatch file is rendered from the pool the
codegen built, as write mode would (see :func:`render_dispatch`). Marker runs (``-f``
with markers) show how a filter travels to fnmatch, each up to the calls it observes
(:func:`marker_run`); ``--also-list`` lists one more option set as a new process would,
in a child forked first (:func:`start_listing`; where none can fork, :func:`list_isolated`).
The result is written as JSON for the analysis to read; with ``--also-out`` it is
written as soon as the probe's own work is done and that listing goes to its own file
when it ends (on a heavy tree the other listing outlasts the probe: the analysis of the
result need not wait for it).
"""

import atexit
import collections
import copy
import dataclasses
import fnmatch
import functools
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
import traceback

MARKER = "#fmha-probe-{}#"
ORIGINAL_FNMATCH = fnmatch.fnmatch
OBSERVED_CALLS = 600
PIECE_SPLIT = re.compile(r"(?=_)")
MAX_ALTERNATIVES = 3
SCALARS = (str, int, float, bool, type(None))


def _first_line(function):
    code = getattr(function, "__code__", None)
    return code.co_firstlineno if code else 0


class _ObservedEnough(BaseException):
    """Raised by the fnmatch hook in a marker run once the calls it observes are all
    made: nothing later in the run can change them. A BaseException, so that no
    ``except Exception`` of the codegen takes it for its own error; whether it reached
    :func:`run_generate` is checked (``reached``), see :func:`marker_run`."""

    def __init__(self):
        super().__init__("the observed fnmatch calls are complete")
        self.reached = False


def _load_call_log():
    """``probe_calls.py`` beside this file, loaded by its path (nothing is added to
    ``sys.path``, where the codegen's own modules are looked up)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe_calls.py")
    spec = importlib.util.spec_from_file_location("_fmha_probe_calls", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CallLog


class Recorder:
    def __init__(self, fmha_dir):
        self.fmha_dir = os.path.realpath(fmha_dir)
        self.calls = _load_call_log()(self.fmha_dir)  # the factories' calls (probe_calls.py)
        self.objects = []
        self.seen_ids = set()
        self.kernel_classes = {}
        self.pools = []
        self.fnmatch_calls = []
        self.pass_first = None  # None: the real fnmatch; N: True for N calls, then False
        self.max_calls = None
        self.stop_after = None  # N: the call after the first N ends the run (marker runs)
        self.stop = None  # the _ObservedEnough raised in this run, if any
        # (name, object) of the last kernel object whose name was asked for, and each
        # kernel class's own filename getter: an fnmatch call on that name is tied to
        # that object's file (names repeat across arch suffixes, files do not).
        self.last_named = None
        self.filename_getters = {}
        self.patching = True  # False: modules imported now keep their classes as they are
        # None, or the run's events in order: a kernel object made (the object) or an
        # fnmatch call (its index in fnmatch_calls): see observe_followers
        self.events = None

    # -- hooks -------------------------------------------------------------
    def patch_module(self, module):
        if not self.patching:
            return
        path = getattr(module, "__file__", None) or ""
        if not os.path.realpath(path).startswith(os.path.join(self.fmha_dir, "codegen")):
            return
        self.calls.wrap_module(module)
        for value in list(vars(module).values()):
            if not isinstance(value, type) or value.__module__ != module.__name__:
                continue
            if isinstance(value.__dict__.get("api"), property) and \
                    not getattr(value.__init__, "_fmha_probe", False):
                value.__init__ = self._recording_init(value.__init__)
            prop = value.__dict__.get("filename")
            if isinstance(prop, property) and not getattr(prop.fget, "_fmha_probe", False):
                self.filename_getters[value] = prop.fget
                value.filename = self._recording_property(prop)
                init = value.__dict__.get("__init__")
                if init is not None and not getattr(init, "_fmha_probe", False):
                    value.__init__ = self._making_init(init)
                name_prop = value.__dict__.get("name")
                if isinstance(name_prop, property) and not getattr(name_prop.fget, "_fmha_probe", False):
                    value.name = self._naming_property(name_prop)
                rel = os.path.relpath(os.path.realpath(path), self.fmha_dir).replace(os.sep, "/")
                key = "%s.%s" % (module.__name__, value.__name__)
                self.kernel_classes[key] = {"class": value.__name__, "file": rel,
                                            "line": _first_line(prop.fget)}

    def _recording_property(self, prop):
        recorder = self

        @functools.wraps(prop.fget)
        def fget(obj):
            if id(obj) not in recorder.seen_ids:
                recorder.seen_ids.add(id(obj))
                recorder.objects.append(obj)
            return prop.fget(obj)

        fget._fmha_probe = True
        return property(fget, prop.fset, prop.fdel, prop.__doc__)

    def _naming_property(self, prop):
        recorder = self

        @functools.wraps(prop.fget)
        def fget(obj):
            value = prop.fget(obj)
            recorder.last_named = (value, obj)
            return value

        fget._fmha_probe = True
        return property(fget, prop.fset, prop.fdel, prop.__doc__)

    def file_of(self, name):
        """The file of the kernel object whose name was just computed, if it is ``name``."""
        last = self.last_named
        if last is None or last[0] != name:
            return None
        getter = self.filename_getters.get(type(last[1]))
        try:
            return getter(last[1]) if getter is not None else None
        except Exception:  # noqa: BLE001 - no file: the call is matched by name
            return None

    def _making_init(self, init):
        """A kernel object made while :attr:`events` are recorded is one event."""
        recorder = self

        @functools.wraps(init)
        def wrapped(obj, *args, **kwargs):
            init(obj, *args, **kwargs)
            if recorder.events is not None:
                recorder.events.append(obj)

        wrapped._fmha_probe = True
        return wrapped

    def _recording_init(self, init):
        """Instances of classes with an ``api`` property are the API pools that write
        mode renders into the dispatch file."""
        recorder = self

        @functools.wraps(init)
        def wrapped(obj, *args, **kwargs):
            init(obj, *args, **kwargs)
            recorder.pools.append(obj)

        wrapped._fmha_probe = True
        return wrapped

    def fnmatch_hook(self, name, pattern):
        calls = len(self.fnmatch_calls)
        if self.stop_after is not None and calls >= self.stop_after:
            self.stop = _ObservedEnough()
            raise self.stop
        if self.max_calls is None or calls < self.max_calls:
            self.fnmatch_calls.append((str(pattern), str(name), self.file_of(name)))
            if self.events is not None:
                self.events.append(calls)
        if self.pass_first is None:
            return ORIGINAL_FNMATCH(name, pattern)
        # Let the first calls pass so every filter part is seen once per trait, then
        # refuse everything: nothing more is registered and slow APIs end early.
        return calls < self.pass_first


def install_hooks(recorder):
    original_exec = importlib.machinery.SourceFileLoader.exec_module

    def exec_module(loader, module):
        original_exec(loader, module)
        recorder.patch_module(module)

    importlib.machinery.SourceFileLoader.exec_module = exec_module
    fnmatch.fnmatch = recorder.fnmatch_hook
    memoise_compilation()
    memoise_generated_code()


#: (source path, source bytes) -> code object: each source compiled once per process
#: (see :func:`memoise_compilation`).
COMPILED: dict = {}
#: the keys of COMPILED and GENERATED this process used (what its code store keeps),
#: and those it compiled itself (none: the store it loaded had them all)
USED: set = set()
FRESH: set = set()


def memoise_compilation():
    """Compile each source once per process: every run here imports the tree afresh
    (new module objects, new state), but code objects are immutable, so reusing them
    is the same as compiling the same bytes again (nothing is written: ``-B``)."""
    loader = importlib.machinery.SourceFileLoader
    original = loader.source_to_code
    if getattr(original, "_fmha_probe", False):
        return

    def source_to_code(self, data, path, *args, **kwargs):
        key = (path, bytes(data))
        code = COMPILED.get(key)
        if code is None:
            code = COMPILED[key] = original(self, data, path, *args, **kwargs)
            FRESH.add(key)
        USED.add(key)
        return code

    source_to_code._fmha_probe = True
    loader.source_to_code = source_to_code


#: source text -> code object, of the functions ``dataclasses`` writes as text and
#: runs with ``exec`` (``__init__``, ``__repr__``, ``__eq__``, ... of every dataclass).
GENERATED: dict = {}


def generated_code(source):
    code = GENERATED.get(source)
    if code is None:
        code = GENERATED[source] = compile(source, "<string>", "exec", dont_inherit=True)
        FRESH.add(source)
    USED.add(source)
    return code


def memoise_generated_code():
    """Compile each text ``dataclasses`` generates once per process: every run defines
    the codegen's dataclasses afresh (new classes, new functions), and compiling their
    generated text is most of what importing the codegen costs; the same text gives
    the same code object, as for the tree's sources (``memoise_compilation``). Only
    ``exec`` as ``dataclasses`` sees it changes: the text is compiled as ``exec`` would
    (no ``__future__`` flags of the caller: ``dataclasses`` has none) and run with the
    namespaces ``exec`` would use."""
    import dataclasses

    def exec_memoised(source, globals=None, locals=None):
        if globals is None:  # the caller's namespaces, as exec takes them
            caller = sys._getframe(1)
            globals, locals = caller.f_globals, caller.f_locals if locals is None else locals
        if isinstance(source, str):
            source = generated_code(source)
        exec(source, globals, locals)

    dataclasses.exec = exec_memoised


def _code_store_tag():
    """Who may read a code store: code objects are marshalled for one bytecode version
    and optimisation level (what a ``.pyc`` file's magic number says)."""
    return ("fmha-code-store", 1, importlib.util.MAGIC_NUMBER, sys.flags.optimize,
            sys.version)


def load_code_store(path):
    """Fill the compile memos (COMPILED, GENERATED) from ``path``, written by an earlier
    probe or batch of the same interpreter: what each source and generated text
    compiled to, as a ``.pyc`` file keeps it, but outside the tree (never written
    into) and for the dataclasses' generated code too. The same bytes compile to the
    same code object, so a process that loads them runs as one that compiles them.
    How many entries it loaded; a missing, partial or foreign store is ignored (0)."""
    if not path:
        return 0
    try:
        with open(path, "rb") as handle:
            tag, compiled, generated = marshal.load(handle)
        if tag != _code_store_tag() or not isinstance(compiled, dict) \
                or not isinstance(generated, dict):
            return 0
    except (OSError, EOFError, ValueError, TypeError):
        return 0
    COMPILED.update(compiled)
    GENERATED.update(generated)
    return len(compiled) + len(generated)


def save_code_store(path):
    """Write what this process compiled or loaded and used to ``path`` (renamed into
    place: a reader sees all of it or none), unless it compiled nothing itself (the
    store it loaded had it all). Failing to write only costs later processes their
    compiling."""
    if not path or not FRESH & USED:
        return
    compiled = {key: code for key, code in COMPILED.items() if key in USED}
    generated = {text: code for text, code in GENERATED.items() if text in USED}
    part = "%s.%d.part" % (path, os.getpid())
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(part, "wb") as handle:
            marshal.dump((_code_store_tag(), compiled, generated), handle)
        os.replace(part, path)
    except (OSError, ValueError):
        try:
            os.unlink(part)
        except OSError:
            pass


def forget_codegen_modules(fmha_dir):
    """Drop the tree's modules so that the next run imports them as a fresh process
    would (some generate.py versions skip modules that are already imported)."""
    root = os.path.realpath(fmha_dir)
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if path and os.path.realpath(path).startswith(root + os.sep):
            del sys.modules[name]


#: The line the probe's unfiltered run finds in its listing file before generate.py
#: writes it: still there afterwards, generate.py appends to the file (older trees).
LISTING_SENTINEL = "fmha-probe-listing-sentinel"


def run_generate(fmha_dir, argv, output_dir=None, prefill=False):
    """Run generate.py as __main__ in this process; returns the listed basenames (or,
    with ``output_dir``, write mode into that folder and no names) and an error.
    ``prefill``: the listing file holds LISTING_SENTINEL before the run."""
    forget_codegen_modules(fmha_dir)
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
        except _ObservedEnough as stop:  # a marker run made every call it observes
            stop.reached = True
        except Exception:  # noqa: BLE001 - reported to the analysis, which says so
            error = traceback.format_exc(limit=-8)
        finally:
            sys.argv = saved_argv
        lines = []
        if os.path.exists(listing):
            # UTF-8 whatever the locale, a byte that is not read as U+FFFD (as the
            # extension reads a listing): generate.py succeeded, its names are kept
            with open(listing, encoding="utf-8", errors="replace") as handle:
                lines = [os.path.basename(line.strip()) for line in handle if line.strip()]
        return lines, error


# -- object inspection -------------------------------------------------------
_FIELDS: dict = {}


def _fields_of(cls):
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = [f.name for f in dataclasses.fields(cls)]
    return names


_PATHS: dict = {}


def _paths_of(cls, prefix):
    """[(field, its attribute path)] of a dataclass under ``prefix``: the path strings
    are made once per class and place, not once per kernel."""
    key = (cls, prefix)
    paths = _PATHS.get(key)
    if paths is None:
        paths = _PATHS[key] = [(name, prefix + name) for name in _fields_of(cls)]
    return paths


def _is_dataclass_instance(value):
    cls = type(value)
    return hasattr(cls, "__dataclass_fields__") and not isinstance(value, type)


def leaves(obj, prefix="", depth=0, owners=None, out=None, scalars=None):
    """Flatten a dataclass object into {attribute path: scalar value}; ``owners``
    collects the class that declares each path's last attribute, ``scalars`` the
    scalar leaves as (path, value type, value), in order."""
    if out is None:
        out = {}
    if depth > 4:
        return out
    cls = type(obj)
    for name, path in _paths_of(cls, prefix):
        value = getattr(obj, name, None)
        if owners is not None and path not in owners:
            owners[path] = cls.__name__
        if isinstance(value, SCALARS):
            out[path] = value
            if scalars is not None:
                scalars.append((path, type(value), value))
        elif _is_dataclass_instance(value):
            leaves(value, path + ".", depth + 1, owners, out, scalars)
        else:
            out[path] = {"repr": repr(value)}
    return out


def part_names(obj):
    """{field: [class, name]} of the kernel's dataclass parts that name themselves (its
    tile, its pipeline): the codegen's own text for each part, constant pieces included."""
    out = {}
    for name in _fields_of(type(obj)):
        value = getattr(obj, name, None)
        if _is_dataclass_instance(value):
            try:
                text = value.name
            except Exception:  # noqa: BLE001 - a part that cannot name itself is left out
                continue
            if isinstance(text, str):
                out[name] = [type(value).__name__, text]
    return out


def part_types(kernels):
    """The classes of the kernels' dataclass parts (tiles, pipelines)."""
    found = set()
    for obj in kernels:
        if _is_dataclass_instance(obj):
            found.update(type(v) for v in (getattr(obj, f, None) for f in _fields_of(type(obj)))
                         if _is_dataclass_instance(v))
    return found


def uncache(obj):
    for name, attr in vars(type(obj)).items():
        if isinstance(attr, functools.cached_property):
            obj.__dict__.pop(name, None)


def replaced(obj, path, value):
    head, _, rest = path.partition(".")
    clone = copy.copy(obj)
    uncache(clone)
    if rest:
        value = replaced(getattr(obj, head), rest, value)
    object.__setattr__(clone, head, value)
    return clone


def influence(pieces, other):
    """Piece range of ``pieces`` that differs in ``other``: (start, end), end exclusive."""
    start = 0
    limit = min(len(pieces), len(other))
    while start < limit and pieces[start] == other[start]:
        start += 1
    end_a, end_b = len(pieces), len(other)
    while end_a > start and end_b > start and pieces[end_a - 1] == other[end_b - 1]:
        end_a -= 1
        end_b -= 1
    return start, end_a


def map_domains(modules):
    """Key sets of the dicts that codegen defines (cpp symbol maps and the like)."""
    domains = []
    for module in modules:
        for name, value in vars(module).items():
            if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
                domains.append((name, module.__name__, sorted(value)))
    return domains


def alternatives_for(observed, domains):
    """Candidate values of one field: what was observed, widened by the smallest
    codegen dict whose keys contain every observed string value."""
    values = list(observed)
    if values and all(isinstance(v, str) for v in values):
        fitting = [d for d in domains if set(values) <= set(d[2])]
        if fitting:
            name, module, keys = min(fitting, key=lambda d: (len(d[2]), d[0]))
            return sorted(set(keys) | set(values)), "%s.%s" % (module, name)
    return sorted(set(values), key=lambda v: (str(type(v)), v)), ""


def constant_alternatives(path, value, typed_sets):
    """Values to try on a field that has one value in every kernel of its class, so
    that changing it still shows which name text the field writes (a tile size that
    is always 1, a flag that is always off): the other values of the smallest other
    field of the class that has this value among several (an always-``f`` flag takes
    the ``t`` of the t/f flags), then a made-up value of the same type. A value the
    name cannot render is no evidence (see :func:`field_ranges`), as for any other."""
    key = _typed(value)
    fitting = [values for other, values in typed_sets.items()
               if other != path and key in values and len(values) > 1]
    found = []
    if fitting:
        smallest = min(fitting, key=lambda values: (len(values), sorted(map(repr, values))))
        found = [v for t, v in sorted(smallest, key=repr) if (t, v) != key
                 and type(v) is type(value)][:MAX_ALTERNATIVES - 1]
    if isinstance(value, bool):
        made_up = not value
    elif isinstance(value, (int, float)):
        made_up = value + 1
    elif isinstance(value, str):
        made_up = value + "0"  # no "_": the name keeps its pieces where the text is
    else:
        return found
    return found + [made_up] if made_up not in found else found


def field_ranges(obj, record, paths, candidates):
    """{path: [first, end)} of the name pieces that changing each field of ``paths``
    rewrites in ``obj``'s name (the union over up to MAX_ALTERNATIVES values), and
    whether some change altered the number of pieces."""
    pieces = PIECE_SPLIT.split(record["name"])
    ranges = {}
    shifts = set()
    for path in paths:
        value = record["leaves"][path]
        alts = [v for v in candidates.get((record["class"], path), []) if v != value
                and type(v) is type(value)][:MAX_ALTERNATIVES]
        spans = []
        for alt in alts:
            try:
                other = replaced(obj, path, alt).name
            except Exception:  # noqa: BLE001 - invalid combination: no evidence
                continue
            if other == record["name"]:
                continue
            other_pieces = PIECE_SPLIT.split(other)
            if len(other_pieces) != len(pieces):
                shifts.add(path)
            spans.append(influence(pieces, other_pieces))
        if spans:
            ranges[path] = [min(s[0] for s in spans), max(s[1] for s in spans)]
    return ranges, shifts


def _typed(value, value_type=None):
    """A dict key that keeps 1, 1.0 and True apart."""
    return (value_type or type(value)).__name__, value


def perturb_influence(records, objects, candidates, every_kernel=False, typed_items=None):
    """Fill ``record["influence"]`` for every record, perturbing few kernels.

    The pieces a field rewrites depend on its own value and on where its token stands,
    i.e. on the tokens before it that come and go or change their number of pieces. So
    the first pass perturbs one representative per (field, value); the fields whose
    change altered a name's piece count there are the layout fields. Then each
    (field, value, layout) is perturbed once, on its first record, and every record
    of the same layout takes that result. ``every_kernel`` perturbs every field of
    every record (the reference the tests compare with). ``typed_items``: each record's
    scalar fields as (path, value type, value), when the caller has them already."""
    # (path, value type, value): 1, 1.0 and True apart
    if typed_items is None:
        typed_items = [[(p, type(v), v) for p, v in r["leaves"].items()
                        if isinstance(v, SCALARS)] for r in records]
    if every_kernel:
        for record, obj, items in zip(records, objects, typed_items):
            record["influence"], _ = field_ranges(obj, record, [i[0] for i in items], candidates)
        return {"perturbed fields": sum(len(items) for items in typed_items)}
    done = []  # (record index, typed item, range or None)
    shifting = set()
    covered = {}  # class -> the typed items perturbed on one of its records
    for index, (record, obj, items) in enumerate(zip(records, objects, typed_items)):
        seen = covered.setdefault(record["class"], set())
        todo = [item for item in items if item not in seen]
        if todo:
            seen.update(todo)
            ranges, shifts = field_ranges(obj, record, [i[0] for i in todo], candidates)
            shifting |= {(record["class"], p) for p in shifts}
            done.extend((index, item, ranges.get(item[0])) for item in todo)

    shifting_of = {}  # class -> its layout fields, sorted
    for cls, path in sorted(shifting):
        shifting_of.setdefault(cls, []).append(path)

    def layout(record):
        pieces = record["name"].count("_") + 1  # len(PIECE_SPLIT.split(name))
        leaves_of = record["leaves"]
        return record["class"], pieces, tuple(
            _typed(leaves_of.get(p)) for p in shifting_of.get(record["class"], ()))

    layout_ids = {}
    layouts = [layout_ids.setdefault(layout(r), len(layout_ids)) for r in records]
    known = {}  # layout -> {typed item: range or None}
    for index, item, found in done:
        known.setdefault(layouts[index], {})[item] = found
    for index, (record, obj, items) in enumerate(zip(records, objects, typed_items)):
        table = known.setdefault(layouts[index], {})
        todo = [item for item in items if item not in table]
        if todo:
            ranges, _ = field_ranges(obj, record, [i[0] for i in todo], candidates)
            for item in todo:
                table[item] = ranges.get(item[0])
        # records of one layout share their range lists: the result is only written out
        record["influence"] = {item[0]: found for item, found
                               in zip(items, map(table.__getitem__, items)) if found is not None}
    return {"perturbed fields": sum(len(table) for table in known.values()),
            "layout fields": sorted("%s:%s" % s for s in shifting), "layouts": len(layout_ids)}


API_FILE = re.compile(r"_api\.cpp$")


def load_trait_reader(package_dir):
    """``kernel_trait_key`` of the package's C++ dispatch-file reader (``cppapi/``, no
    Sphinx, standard library only), loaded by path as a package of its own: this
    script imports nothing from sphinxext_fmha, and may run in another Python."""
    name = "fmha_probe_cppapi"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(package_dir, "__init__.py"),
            submodule_search_locations=[package_dir])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and relative imports look it up there
        spec.loader.exec_module(module)
    return importlib.import_module(name + ".dispatch_file").kernel_trait_key


def render_dispatch(fmha_dir, argv, listing, kernels, pools, trait_key, write=False):
    """The API dispatch file write mode would write, and each kernel file's trait key.

    Write mode writes ``pool.api`` of the pool its enumeration built and ``k.template``
    of every kernel; the unfiltered run built the same pool and kernels, so they are
    rendered here without writing files. When that run built no single pool of the
    kernels' own module (some trees build it in write mode only), or when ``write``
    asks for write mode itself (its own checks, such as newer CK's assertion in
    ``write_blobs`` that each split-KV kernel has its combine kernel, decide whether
    a filtered set writes at all), write mode runs here, into a temporary folder."""
    api_names = [n for n in listing if API_FILE.search(n)]
    modules = {type(obj).__module__ for _, obj in kernels}
    own = [p for p in pools if type(p).__module__ in modules]
    complete = {f for f, _ in kernels} == set(listing) - set(api_names)
    texts = None
    if not write and len(own) == 1 and len(api_names) == 1 and complete:
        texts = kernel_texts(kernels)
    if texts is not None:
        texts = dict(sorted(texts))
        api_text = own[0].api
        # the bytes write mode writes: write_text of these very texts
        return {"how": "pool", "api_file": api_names[0], "text": api_text,
                "kernel_traits": dict(zip(texts, keys_of(trait_key, list(texts.values())))),
                "kernel_sha": {f: text_sha(t) for f, t in texts.items()},
                "kernel_bytes": {f: written_size(t) for f, t in texts.items()},
                "api_bytes": written_size(api_text)}
    with tempfile.TemporaryDirectory(prefix="fmha-probe-write-") as tmp:
        _, error = run_generate(fmha_dir, argv, output_dir=tmp)
        if error:
            return {"error": error}
        found = {}
        sizes = {}
        for dirpath, _dirnames, filenames in os.walk(tmp):
            for name in filenames:
                if name.endswith(".cpp"):
                    path = os.path.join(dirpath, name)
                    sizes[name] = os.path.getsize(path)
                    with open(path, encoding="utf-8", errors="replace") as handle:
                        found[name] = handle.read()
    api_names = sorted(n for n in found if API_FILE.search(n))
    if len(api_names) != 1:
        return {"error": "write mode wrote %d *_api.cpp files" % len(api_names)}
    text = found.pop(api_names[0])
    found = dict(sorted(found.items()))
    return {"how": "write", "api_file": api_names[0], "text": text,
            "kernel_traits": dict(zip(found, keys_of(trait_key, list(found.values())))),
            "kernel_sha": {f: text_sha(t) for f, t in found.items()},
            "kernel_bytes": {f: sizes[f] for f in found}, "api_bytes": sizes[api_names[0]]}


def written_size(text):
    """The bytes ``Path.write_text(text)`` writes, as write mode writes its files: the
    locale's encoding, each newline as the system writes it."""
    encoded = text.encode(locale.getpreferredencoding(False), "replace")
    return len(encoded) + text.count("\n") * (len(os.linesep) - 1)


def kernel_texts(kernels):
    """[(file, ``template``)] of every kernel, or None when one has no ``template`` (what
    ``hasattr`` tells): each text is rendered once, not once to ask and once to read."""
    texts = []
    for filename, obj in kernels:
        try:
            texts.append((filename, obj.template))
        except AttributeError:
            return None
    return texts


def text_sha(text):
    """Same text, same trait key: later runs reuse a key by the text's hash."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


#: Below this many kernel texts a second process costs more than it saves.
PARALLEL_TEXTS = 400
def keys_of(trait_key, texts):
    """``trait_key`` of every text, on two cores when there are many: a forked child
    reads the second half from memory it shares with this process and sends its keys
    back through a pipe. Whatever goes wrong there, this process computes them itself."""
    half = len(texts) // 2
    forked = None
    if len(texts) >= PARALLEL_TEXTS:
        forked = fork_json(lambda: [trait_key(text) for text in texts[half:]])
    if forked is None:
        return [trait_key(text) for text in texts]
    first = [trait_key(text) for text in texts[:half]]
    second = collect_json(forked)
    if not isinstance(second, list) or len(second) != len(texts) - half:
        second = [trait_key(text) for text in texts[half:]]
    return first + second


def fork_json(compute):
    """Fork a child that sends ``compute()`` as JSON through a pipe and leaves without
    running any exit handler; (pid, read end), or None where this system cannot fork."""
    if not hasattr(os, "fork"):
        return None
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:
        try:
            os.close(read_end)
            data = json.dumps(compute()).encode("utf-8")
            with os.fdopen(write_end, "wb") as out:
                out.write(data)
        finally:
            os._exit(0)
    os.close(write_end)
    return pid, read_end


def collect_json(forked):
    """What the child of :func:`fork_json` sent, once it has ended; None when it sent
    no JSON (it failed)."""
    pid, read_end = forked
    with os.fdopen(read_end, "rb") as handle:
        data = handle.read()
    os.waitpid(pid, 0)
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError:
        return None


def probe(fmha_dir, argv, api_split_marker_parts=4, perturb=True, trait_reader=None,
          also_list=None, deliver=None, code_store=None):
    """What the unfiltered run of ``generate.py argv`` shows (see the module docstring).

    ``also_list``: one more listing's arguments (``result["also_listed"]``);
    ``deliver``: called with the result before that listing is waited for (it may
    outlast the probe's own work), so that its reader can start; ``code_store``: the
    compiled code this interpreter's earlier processes kept (:func:`load_code_store`),
    loaded first (the other listing's child finds it too) and kept for later ones."""
    started = time.time()
    load_code_store(code_store)
    # The other listing starts first, in a forked child, while this process is still
    # what a new process is (no hooks, no codegen imported): it runs on the other core
    # while the probe works (on a heavy tree each listing takes as long as the probe's
    # own), at no interpreter start-up.
    forked = start_listing(fmha_dir, list(also_list)) if also_list is not None else None
    recorder = Recorder(fmha_dir)
    install_hooks(recorder)
    sys.dont_write_bytecode = True
    sys.path.insert(0, fmha_dir)
    os.chdir(fmha_dir)

    # The real, unfiltered run: the kernel objects and the listing come from it.
    initial_state = process_state(fmha_dir)  # what a new process's generate.py sees
    recorder.calls.watching = True  # this run only: the factories' calls
    listing, error = run_generate(fmha_dir, list(argv), prefill=True)
    recorder.calls.watching = False
    save_code_store(code_store)  # the next probes and batches start while this one works
    appends = LISTING_SENTINEL in listing
    listing = [name for name in listing if name != LISTING_SENTINEL]
    result = {
        "listing": listing,
        "listing_appends": appends,
        "error": error,
        "kernel_classes": recorder.kernel_classes,
    }
    observe_seconds = time.time() - started

    by_filename = {}
    for obj in recorder.objects:
        try:
            filename = obj.filename
        except Exception:  # noqa: BLE001 - a broken object is reported as missing
            continue
        by_filename.setdefault(filename, obj)
    listed = set(listing)
    kernels = [(fn, obj) for fn, obj in by_filename.items() if fn in listed]
    kernels.sort(key=lambda item: item[0])

    codegen_modules = [
        m for m in list(sys.modules.values())
        if os.path.realpath(getattr(m, "__file__", "") or "").startswith(
            os.path.join(recorder.fmha_dir, "codegen"))
    ]
    domains = map_domains(codegen_modules)

    records = []
    scalars = []  # each record's scalar leaves as (path, value type, value)
    tallies = {}  # class -> Counter of (path, value type, value)
    owners = {}
    for filename, obj in kernels:
        cls = type(obj).__name__
        is_dataclass = dataclasses.is_dataclass(obj)
        typed = []  # (path, value type, value): 1, 1.0 and True apart
        flat = leaves(obj, owners=owners.setdefault(cls, {}), scalars=typed) \
            if is_dataclass else {}
        try:
            name = obj.name
        except AttributeError:  # what hasattr() tells
            name = filename
        records.append({"class": cls, "module": type(obj).__module__,
                        "filename": filename, "name": name, "leaves": flat,
                        "parts": part_names(obj) if is_dataclass else {},
                        "frozen": bool(getattr(type(obj), "__dataclass_params__", None)
                                       and type(obj).__dataclass_params__.frozen)})
        tally = tallies.get(cls)
        if tally is None:
            tally = tallies[cls] = collections.Counter()
        scalars.append(typed)
        tally.update(typed)
    result["factories"] = recorder.calls.summary(part_types(obj for _, obj in kernels))
    observed = {}  # class -> {path: {typed value: kernels}}, in the order first seen
    for cls, tally in tallies.items():
        counted = observed[cls] = {}
        for (path, value_type, value), count in tally.items():
            typed_counts = counted.setdefault(path, {})
            key = _typed(value, value_type)
            typed_counts[key] = typed_counts.get(key, 0) + count

    domain_of = {}
    candidates = {}
    for cls, paths in observed.items():
        for path, typed_counts in paths.items():
            counts = {json.dumps(value): n for (_, value), n in typed_counts.items()}
            values = [json.loads(k) for k in sorted(counts, key=lambda k: (-counts[k], k))]
            cand, dom = alternatives_for(values, domains)
            if len(cand) == 1:
                cand = cand + constant_alternatives(path, cand[0], paths)
            candidates[(cls, path)] = cand
            if dom:
                domain_of["%s:%s" % (cls, path)] = dom

    if trait_reader:
        dispatch_started = time.time()
        try:
            result["dispatch"] = render_dispatch(fmha_dir, list(argv), listing, kernels,
                                                 list(recorder.pools),
                                                 load_trait_reader(trait_reader))
        except Exception:  # noqa: BLE001 - the caller falls back to a write-mode run
            result["dispatch"] = {"error": traceback.format_exc(limit=-8)}
        result["dispatch"]["seconds"] = round(time.time() - dispatch_started, 3)

    perturb_started = time.time()
    if perturb:
        result["perturbation"] = perturb_influence(
            records, [obj for _, obj in kernels], candidates, every_kernel=perturb == "all",
            typed_items=scalars)

    perturb_seconds = time.time() - perturb_started
    result["seconds"] = {}
    # How -f travels: a filter of distinct markers shows which part each kernel class
    # is matched against; a single marker shows what missing parts become.
    unfiltered_calls = recorder.fnmatch_calls
    parts = [MARKER.format(i) for i in range(api_split_marker_parts)]
    marker_filter = "@".join(parts) + "," + MARKER.format("next-api")
    runs_state = process_state(fmha_dir)  # what the marker runs start from
    recorder.pass_first = OBSERVED_CALLS
    recorder.max_calls = OBSERVED_CALLS
    ends = []
    recorder.events = []  # kernels made in the window: does one come without its own test?
    marker_calls, marker_error = marker_run(
        recorder, fmha_dir, list(argv) + ["-f", marker_filter], ends)
    untested = untested_made(recorder, recorder.events, set(listing))
    recorder.events = None
    single_calls, single_error = marker_run(
        recorder, fmha_dir, list(argv) + ["-f", parts[0]], ends)
    # Empty parts ("@@@") and an empty filter: which pattern, if any, reaches fnmatch.
    empty_parts_calls, empty_parts_error = marker_run(
        recorder, fmha_dir, list(argv) + ["-f", "@" * (len(parts) - 1)], ends)
    empty_calls, empty_error = marker_run(recorder, fmha_dir, list(argv) + ["-f", ""], ends)
    if untested:
        followers_started = time.time()
        result["followers"], result["followers_error"] = observe_followers(
            recorder, fmha_dir, list(argv) + ["-f", marker_filter], listing, records)
        result["seconds"]["followers"] = round(time.time() - followers_started, 3)
    name_to_class = {r["name"]: (i, r["class"]) for i, r in enumerate(records)}
    name_to_class.update({("file", r["filename"]): (i, r["class"]) for i, r in enumerate(records)})
    result.update({
        "records": records,
        "domains": domain_of,
        "owners": owners,
        "marker_filter": marker_filter,
        "unfiltered_calls": summarise_calls(unfiltered_calls, name_to_class),
        "fnmatch_calls": summarise_calls(marker_calls, name_to_class),
        "single_part_calls": summarise_calls(single_calls, name_to_class),
        "empty_parts_calls": summarise_calls(empty_parts_calls, name_to_class),
        "empty_filter_calls": summarise_calls(empty_calls, name_to_class),
        "marker_errors": [e for e in (marker_error, single_error, empty_parts_error, empty_error)
                          if e],
        "marker_runs": ends,
        "normcase": os.path.normcase("Aa/"),
        "seconds": dict(result.get("seconds", {}), observe=round(observe_seconds, 3),
                        perturb=round(perturb_seconds, 3)),
        "python": sys.version.split()[0],
    })
    if also_list is not None:
        if deliver is not None:
            deliver(result)
        outcome = finish_listing(forked) if forked is not None else None
        result["also_listed"] = outcome if outcome is not None else list_isolated(
            recorder, fmha_dir, list(also_list), initial_state, runs_state)
    return result


def start_listing(fmha_dir, argv):
    """Fork a child that runs ``generate.py argv -l`` as a new process would (it is
    forked before the probe installs its hooks or imports the tree; it reuses only the
    compiled code the probe loaded) and sends the outcome; see :func:`fork_json`."""
    def listed():
        # only compiling is shared (the code store the probe loaded), as in a batch
        memoise_compilation()
        memoise_generated_code()
        sys.dont_write_bytecode = True
        sys.path.insert(0, fmha_dir)
        os.chdir(fmha_dir)
        started = time.time()
        listing, error = run_generate(fmha_dir, argv)
        return {"argv": argv, "how": "forked", "listing": listing, "error": error,
                "seconds": round(time.time() - started, 3)}

    return fork_json(listed)


def finish_listing(forked):
    """The forked listing's outcome, or None when the child sent none (the caller then
    lists in this process)."""
    outcome = collect_json(forked)
    return outcome if isinstance(outcome, dict) and "listing" in outcome else None


def process_state(fmha_dir):
    """What one run must not change for the next to be as fresh as a new process: the
    working folder, ``sys.path``, the environment and the modules outside the tree."""
    root = os.path.realpath(fmha_dir) + os.sep
    others = sorted(name for name, module in sys.modules.items()
                    if not os.path.realpath(getattr(module, "__file__", None) or "")
                    .startswith(root))
    return (os.getcwd(), list(sys.path), dict(os.environ), others)


def list_isolated(recorder, fmha_dir, argv, initial_state, runs_state):
    """``generate.py argv -l`` run here as a new process would run it (the listing
    another option needs, e.g. the other ``--mask`` mode): the tree's modules imported
    afresh, without the probe's hooks (its classes as they are, the real ``fnmatch``);
    only compiling is shared, as in the batch runner (process/batch_script.py).

    It counts only when the earlier runs left nothing behind that a new process would
    not have: the working folder, ``sys.path`` and the environment the first run saw
    (``initial_state``), the modules outside the tree that the marker runs started with
    (``runs_state``, the probe's own imports included) and ``fnmatch`` the probe's hook.
    Else ``unsafe`` says so, and the caller runs that listing as a separate process.
    What this run changes itself does not matter: nothing runs after it."""
    outcome = {"argv": argv, "how": "in-process"}
    now = process_state(fmha_dir)
    if now[:3] != initial_state[:3] or now != runs_state \
            or fnmatch.fnmatch != recorder.fnmatch_hook:
        outcome["unsafe"] = "an earlier run changed state outside the tree's modules"
        return outcome
    recorder.patching = False  # nothing to observe: the codegen's classes as they are
    fnmatch.fnmatch = ORIGINAL_FNMATCH
    started = time.time()
    try:
        listing, error = run_generate(fmha_dir, argv)
    finally:
        fnmatch.fnmatch, recorder.patching = recorder.fnmatch_hook, True
    outcome.update({"listing": listing, "error": error,
                    "seconds": round(time.time() - started, 3)})
    return outcome


def marker_run(recorder, fmha_dir, argv, ends):
    """The first ``recorder.max_calls`` fnmatch calls of ``generate.py argv`` (the hook
    lets the first ``recorder.pass_first`` pass and refuses the rest) and the error the
    run raised while they were made; how the run ended is appended to ``ends``.

    Nothing after those calls can change them, so the run stops at the next call
    ("stopped") instead of enumerating every other kernel (a marker run would refuse
    them all); a run with fewer calls runs to its end ("complete"). When the stop did
    not reach :func:`run_generate` (the codegen caught it), the run went on differently
    from a real one: it runs again, to its end, as it would ("ran again")."""
    recorder.fnmatch_calls, recorder.stop = [], None
    recorder.stop_after = recorder.max_calls
    try:
        _, error = run_generate(fmha_dir, argv)
    finally:
        recorder.stop_after = None
    if recorder.stop is None:
        ends.append("complete")
    elif recorder.stop.reached:
        ends.append("stopped")
    else:
        recorder.fnmatch_calls, recorder.stop = [], None
        if recorder.events is not None:
            recorder.events = []
        _, error = run_generate(fmha_dir, argv)
        ends.append("ran again")
    return recorder.fnmatch_calls, error


def kernel_file(recorder, obj):
    """The file of a kernel object, read with its class's own getter (None: none)."""
    getter = recorder.filename_getters.get(type(obj))
    try:
        return getter(obj) if getter is not None else None
    except Exception:  # noqa: BLE001 - a broken object has no file
        return None


def kernel_name(obj):
    try:
        return str(obj.name)
    except Exception:  # noqa: BLE001 - no name: the file alone identifies it
        return None


def untested_made(recorder, events, listed):
    """Listed kernels made between the first and the last fnmatch call of the run whose
    names no call of the run tested (their files): kernels generated with another one,
    a ``_64bit`` twin after its kernel passed (``observe_followers`` says which). A
    kernel made after the last call may still be tested by the next one: not counted."""
    calls = recorder.fnmatch_calls
    positions = [i for i, e in enumerate(events) if isinstance(e, int)]
    if not positions:
        return []
    tested = {name for _, name, _ in calls} | {f for _, _, f in calls if f}
    found = []
    for event in events[positions[0]:positions[-1]]:
        if isinstance(event, int):
            continue
        filename = kernel_file(recorder, event)
        if filename in listed and filename not in tested and kernel_name(event) not in tested:
            found.append(filename)
    return found


def observe_followers(recorder, fmha_dir, argv, listing, records):
    """Listed kernels whose own names ``-f`` never tests -> the kernel they follow.

    Two runs of ``generate.py argv`` to their end: one where the hook lets every call
    pass (each kernel made and each call, in order), one where it refuses every call
    (what is generated whatever ``-f`` says: never followers). A listed kernel of the
    first run that no call tested and that the second does not generate follows the
    kernel of the last call before it was made: the codegen made it right after that
    kernel passed, so ``-f`` keeps or drops it with that kernel (and, where whole
    traits are dropped, with that trait). ({file: leader file}, error)."""
    listed = set(listing)
    by_name = {}
    for record in records:
        by_name.setdefault(record["name"], set()).add(record["filename"])
    saved = recorder.pass_first, recorder.max_calls
    try:
        recorder.pass_first, recorder.max_calls, recorder.fnmatch_calls = 1 << 62, None, []
        recorder.events = []
        _, error = run_generate(fmha_dir, argv)
        events, calls = recorder.events, recorder.fnmatch_calls
        recorder.events = None
        recorder.pass_first, recorder.max_calls, recorder.fnmatch_calls = 0, 0, []
        generated_anyway, refused_error = run_generate(fmha_dir, argv)
    finally:
        recorder.pass_first, recorder.max_calls = saved
        recorder.events, recorder.fnmatch_calls = None, []
    if error or refused_error:
        return {}, error or refused_error
    tested = {name for _, name, _ in calls} | {f for _, _, f in calls if f}
    anyway = set(generated_anyway)
    followers = {}
    leader = None
    for event in events:
        if isinstance(event, int):
            _, name, filename = calls[event]
            files = {filename} if filename else by_name.get(name, set())
            leader = next(iter(files)) if len(files) == 1 and files <= listed else None
            continue
        filename = kernel_file(recorder, event)
        if leader is None or filename not in listed or filename in tested \
                or filename in anyway or filename in followers \
                or kernel_name(event) in tested:
            continue
        followers[filename] = leader
    return followers, None


def summarise_calls(calls, name_to_class):
    """Compress an fnmatch log: patterns per class, and the trait groups (consecutive
    calls up to the first repeated pattern) as [pattern index, record index] lists.
    A call is tied to a record by the file of the object it names when that is known
    (``("file", filename)`` keys), else by the name; a name that no listed kernel has
    gets the index -2 - k, k its place in ``unlisted``."""
    per_class = {}
    patterns = []
    pattern_index = {}
    groups = []
    current = []
    current_patterns = set()
    unlisted = {}
    for pattern, name, filename in calls:
        index, cls = name_to_class.get(("file", filename), name_to_class.get(name, (-1, "")))
        if index == -1:
            index = -2 - unlisted.setdefault(name, len(unlisted))
        per_class.setdefault(cls, {}).setdefault(pattern, 0)
        per_class[cls][pattern] += 1
        if pattern not in pattern_index:
            pattern_index[pattern] = len(patterns)
            patterns.append(pattern)
        if pattern in current_patterns:
            groups.append(current)
            current, current_patterns = [], set()
        current.append([pattern_index[pattern], index])
        current_patterns.add(pattern)
    if current:
        groups.append(current)
    summary = {"per_class": per_class, "patterns": patterns, "groups": groups,
               "count": len(calls), "unlisted": sorted(unlisted, key=unlisted.__getitem__)}
    if len(calls) <= OBSERVED_CALLS:
        summary["raw"] = [list(call[:2]) for call in calls]
    return summary


#: Record fields that a few distinct values fill in thousands of records (the influence
#: ranges of a name layout, the names of the parts): see :func:`share_record_fields`.
SHARED_RECORD_FIELDS = ("influence", "parts")


def share_record_fields(result):
    """``result`` as written, changed in place: each distinct value of a
    SHARED_RECORD_FIELDS field is written once, and every record holds the index of its
    value in ``result["record_tables"][field]`` (the analysis's ``observe.read_result``
    puts the values back). 2.8.3's bwd probe has 7,824 records,
    8 distinct influence tables and 5 distinct part lists: written in full, they were
    a third of the result and most of the time spent writing and reading it."""
    records = result.get("records") or []
    tables = {}
    for field in SHARED_RECORD_FIELDS:
        if not all(isinstance(record.get(field), dict) for record in records):
            continue  # not filled (no perturbation): nothing to share
        values, index = [], {}
        for record in records:
            value = record[field]
            # repr: made in C, equal only for equal values of JSON data (its dicts are
            # made in one order: equal ones that differ in order are only kept twice)
            key = repr(value)
            found = index.get(key)
            if found is None:
                found = index[key] = len(values)
                values.append(value)
            record[field] = found
        tables[field] = values
    if records and tables:
        result["record_tables"] = tables
    return result


def write_whole(path, data):
    """``data`` as JSON in ``path``, renamed into place: a reader that sees the file
    sees all of it."""
    part = path + ".part"
    with open(part, "wb") as handle:
        handle.write(json_bytes(data))
    os.replace(part, path)


def json_bytes(data):
    """``data`` as key-sorted JSON: by orjson where the interpreter that runs generate.py
    has it (2.8.3 bwd's result, 34 MB, in 0.04 s instead of 0.4 s), else by ``json``'s C
    encoder behind a blank, which tells the reader (``load_json`` in the extension's
    cache module) to read it with ``json`` too: orjson would read an integer beyond 64
    bits, which only ``json`` writes, as a float. Imported here, after the runs:
    generate.py saw the modules a new process has."""
    try:
        import orjson  # noqa: PLC0415 - optional, and only once the runs are over
        return orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except (ImportError, TypeError, ValueError):  # absent, or a value it refuses
        return b" " + json.dumps(data, sort_keys=True).encode("ascii")


def main():
    # This process keeps nearly every object it makes (kernel objects, records, calls,
    # rendered texts) until it ends: the cyclic collector's passes walk them all again
    # and again and free next to nothing. Reference counting still frees the rest.
    gc.disable()
    # The interpreter's last collection, at exit, would walk them all once more (0.5 s
    # after flash-attn 2.8.3's bwd): frozen first, they are skipped.
    atexit.register(gc.freeze)
    fmha_dir, out_path = sys.argv[1], sys.argv[2]
    argv = sys.argv[3:]
    perturb = True
    trait_reader = also_list = also_out = code_store = None
    options = ("--no-perturb", "--perturb-all", "--trait-reader", "--also-list", "--also-out",
               "--code-store")
    while argv and argv[0] in options:
        option, argv = argv[0], argv[1:]
        if option == "--trait-reader":
            trait_reader, argv = argv[0], argv[1:]
        elif option == "--also-list":  # a JSON list: generate.py's arguments, no -l
            also_list, argv = json.loads(argv[0]), argv[1:]
        elif option == "--also-out":  # the other listing's own file, written after the result
            also_out, argv = argv[0], argv[1:]
        elif option == "--code-store":  # see load_code_store
            code_store, argv = argv[0], argv[1:]
        else:
            perturb = False if option == "--no-perturb" else "all"
    deliver = None
    if also_out is not None:
        def deliver(result):
            write_whole(out_path, share_record_fields(result))
    result = probe(os.path.abspath(fmha_dir), argv, perturb=perturb, trait_reader=trait_reader,
                   also_list=also_list, deliver=deliver, code_store=code_store)
    if deliver is None:
        write_whole(out_path, share_record_fields(result))
    elif also_list is not None:
        write_whole(also_out, result["also_listed"])


if __name__ == "__main__":
    main()
