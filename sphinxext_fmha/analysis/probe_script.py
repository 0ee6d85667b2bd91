"""Observe a CK FMHA codegen tree while its own generate.py runs.

This file is executed as a script by the interpreter that runs generate.py (it may be
another Python than the one running Sphinx), so it uses the standard library only and
imports nothing from sphinxext_fmha.

It runs ``generate.py -l`` in-process, with two observation hooks installed first:

* every class of ``codegen/`` that has a ``filename`` property gets a wrapper that
  records the object whose file name is asked for: these are the real kernel objects;
* ``fnmatch.fnmatch`` records which pattern is matched against which name, so the way
  ``-f`` is split and applied is observed, not assumed.

Then each kernel object is perturbed, one leaf field at a time, to see which part of
its name each field writes. The result is written as JSON for the analysis to read.
"""

import copy
import dataclasses
import fnmatch
import functools
import importlib.machinery
import json
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


class Recorder:
    def __init__(self, fmha_dir):
        self.fmha_dir = os.path.realpath(fmha_dir)
        self.objects = []
        self.seen_ids = set()
        self.kernel_classes = {}
        self.fnmatch_calls = []
        self.pass_first = None  # None: the real fnmatch; N: True for N calls, then False
        self.max_calls = None
        # (name, object) of the last kernel object whose name was asked for, and each
        # kernel class's own filename getter: an fnmatch call on that name is tied to
        # that object's file (names repeat across arch suffixes, files do not).
        self.last_named = None
        self.filename_getters = {}

    # -- hooks -------------------------------------------------------------
    def patch_module(self, module):
        path = getattr(module, "__file__", None) or ""
        if not os.path.realpath(path).startswith(os.path.join(self.fmha_dir, "codegen")):
            return
        for value in list(vars(module).values()):
            if not isinstance(value, type) or value.__module__ != module.__name__:
                continue
            prop = value.__dict__.get("filename")
            if isinstance(prop, property) and not getattr(prop.fget, "_fmha_probe", False):
                self.filename_getters[value] = prop.fget
                value.filename = self._recording_property(prop)
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

    def fnmatch_hook(self, name, pattern):
        calls = len(self.fnmatch_calls)
        if self.max_calls is None or calls < self.max_calls:
            self.fnmatch_calls.append((str(pattern), str(name), self.file_of(name)))
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


def forget_codegen_modules(fmha_dir):
    """Drop the tree's modules so that the next run imports them as a fresh process
    would (some generate.py versions skip modules that are already imported)."""
    root = os.path.realpath(fmha_dir)
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if path and os.path.realpath(path).startswith(root + os.sep):
            del sys.modules[name]


def run_generate(fmha_dir, argv):
    """Run generate.py as __main__ in this process; returns the listed basenames."""
    forget_codegen_modules(fmha_dir)
    with tempfile.TemporaryDirectory(prefix="fmha-probe-") as tmp:
        listing = os.path.join(tmp, "list.txt")
        saved_argv = sys.argv
        sys.argv = ["generate.py"] + list(argv) + ["-l", listing]
        error = None
        try:
            runpy.run_path(os.path.join(fmha_dir, "generate.py"), run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (0, None):
                error = "generate.py exited with %r" % (exc.code,)
        except Exception:  # noqa: BLE001 - reported to the analysis, which says so
            error = traceback.format_exc(limit=-8)
        finally:
            sys.argv = saved_argv
        lines = []
        if os.path.exists(listing):
            with open(listing) as handle:
                lines = [os.path.basename(line.strip()) for line in handle if line.strip()]
        return lines, error


# -- object inspection -------------------------------------------------------
def leaves(obj, prefix="", depth=0, owners=None):
    """Flatten a dataclass object into {attribute path: scalar value}; ``owners``
    collects the class that declares each path's last attribute."""
    out = {}
    if depth > 4:
        return out
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name, None)
        path = prefix + f.name
        if owners is not None:
            owners.setdefault(path, type(obj).__name__)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            out.update(leaves(value, path + ".", depth + 1, owners))
        elif isinstance(value, SCALARS):
            out[path] = value
        else:
            out[path] = {"repr": repr(value)}
    return out


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


def probe(fmha_dir, argv, api_split_marker_parts=4, perturb=True):
    started = time.time()
    recorder = Recorder(fmha_dir)
    install_hooks(recorder)
    sys.dont_write_bytecode = True
    sys.path.insert(0, fmha_dir)
    os.chdir(fmha_dir)

    # The real, unfiltered run: the kernel objects and the listing come from it.
    listing, error = run_generate(fmha_dir, list(argv))
    result = {
        "listing": listing,
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
    observed = {}
    owners = {}
    for filename, obj in kernels:
        cls = type(obj).__name__
        flat = leaves(obj, owners=owners.setdefault(cls, {})) if dataclasses.is_dataclass(obj) else {}
        name = obj.name if hasattr(obj, "name") else filename
        records.append({"class": cls, "module": type(obj).__module__,
                        "filename": filename, "name": name, "leaves": flat,
                        "frozen": bool(getattr(type(obj), "__dataclass_params__", None)
                                       and type(obj).__dataclass_params__.frozen)})
        for path, value in flat.items():
            if isinstance(value, SCALARS):
                observed.setdefault(cls, {}).setdefault(path, {})
                key = json.dumps(value)
                observed[cls][path][key] = observed[cls][path].get(key, 0) + 1

    domain_of = {}
    candidates = {}
    for cls, paths in observed.items():
        for path, counts in paths.items():
            values = [json.loads(k) for k in sorted(counts, key=lambda k: (-counts[k], k))]
            cand, dom = alternatives_for(values, domains)
            candidates[(cls, path)] = cand
            if dom:
                domain_of["%s:%s" % (cls, path)] = dom

    perturb_started = time.time()
    if perturb:
        for record, (_filename, obj) in zip(records, kernels):
            cls = record["class"]
            pieces = PIECE_SPLIT.split(record["name"])
            ranges = {}
            for path, value in record["leaves"].items():
                if not isinstance(value, SCALARS):
                    continue
                alts = [v for v in candidates.get((cls, path), []) if v != value
                        and type(v) is type(value)][:MAX_ALTERNATIVES]
                spans = []
                for alt in alts:
                    try:
                        other = replaced(obj, path, alt).name
                    except Exception:  # noqa: BLE001 - invalid combination: no evidence
                        continue
                    if other == record["name"]:
                        continue
                    spans.append(influence(pieces, PIECE_SPLIT.split(other)))
                if spans:
                    ranges[path] = [min(s[0] for s in spans), max(s[1] for s in spans)]
            record["influence"] = ranges

    # How -f travels: a filter of distinct markers shows which part each kernel class
    # is matched against; a single marker shows what missing parts become.
    unfiltered_calls = recorder.fnmatch_calls
    parts = [MARKER.format(i) for i in range(api_split_marker_parts)]
    marker_filter = "@".join(parts) + "," + MARKER.format("next-api")
    recorder.pass_first = OBSERVED_CALLS
    recorder.max_calls = OBSERVED_CALLS
    recorder.fnmatch_calls = []
    _, marker_error = run_generate(fmha_dir, list(argv) + ["-f", marker_filter])
    marker_calls = recorder.fnmatch_calls
    recorder.fnmatch_calls = []
    _, single_error = run_generate(fmha_dir, list(argv) + ["-f", parts[0]])
    single_calls = recorder.fnmatch_calls
    # Empty parts ("@@@") and an empty filter: which pattern, if any, reaches fnmatch.
    recorder.fnmatch_calls = []
    _, empty_parts_error = run_generate(fmha_dir, list(argv) + ["-f", "@" * (len(parts) - 1)])
    empty_parts_calls = recorder.fnmatch_calls
    recorder.fnmatch_calls = []
    _, empty_error = run_generate(fmha_dir, list(argv) + ["-f", ""])
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
        "empty_filter_calls": summarise_calls(recorder.fnmatch_calls, name_to_class),
        "marker_errors": [e for e in (marker_error, single_error, empty_parts_error, empty_error)
                          if e],
        "normcase": os.path.normcase("Aa/"),
        "seconds": {"observe": round(observe_seconds, 3),
                    "perturb": round(time.time() - perturb_started, 3)},
        "python": sys.version.split()[0],
    })
    return result


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


def main():
    fmha_dir, out_path = sys.argv[1], sys.argv[2]
    argv = sys.argv[3:]
    perturb = True
    if argv and argv[0] == "--no-perturb":
        perturb, argv = False, argv[1:]
    result = probe(os.path.abspath(fmha_dir), argv, perturb=perturb)
    with open(out_path, "w") as handle:
        json.dump(result, handle, sort_keys=True)


if __name__ == "__main__":
    main()
