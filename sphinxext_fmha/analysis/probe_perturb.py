"""A kernel object's fields (:func:`observe_records`), and which pieces of its name each
one rewrites when changed alone, on few kernels (:func:`perturb_influence`)."""

import collections
import copy
import dataclasses
import functools
import json
import re

PIECE_SPLIT = re.compile(r"(?=_)")
MAX_ALTERNATIVES = 3
#: a plain value; is_object below: a dataclass object (probe_calls is given both)
SCALARS = (str, int, float, bool, type(None))


def observe_records(kernels, domains):
    """The record of every (file, kernel object), and what perturbing them needs: each
    record's scalar leaves as (path, value type, value), per class the class declaring
    each leaf path, and ``{(class, path): values to try}`` (:func:`alternatives_for`)."""
    records, scalars, owners = [], [], {}
    tallies = {}  # class -> Counter of (path, value type, value)
    for filename, obj in kernels:
        cls = type(obj).__name__
        is_dataclass = dataclasses.is_dataclass(obj)
        typed = []  # (path, value type, value): 1, 1.0 and True apart
        flat = leaves(obj, owners.setdefault(cls, {}), typed) if is_dataclass else {}
        records.append({"class": cls, "filename": filename,
                        "name": getattr(obj, "name", filename), "leaves": flat,
                        "parts": part_names(obj) if is_dataclass else {},
                        "frozen": bool(getattr(type(obj), "__dataclass_params__", None)
                                       and type(obj).__dataclass_params__.frozen)})
        scalars.append(typed)
        tallies.setdefault(cls, collections.Counter()).update(typed)
    candidates = {}
    for cls, tally in tallies.items():
        paths = {}  # path -> {typed value: kernels}, in the order first seen
        for (path, value_type, value), count in tally.items():
            paths.setdefault(path, collections.Counter())[_typed(value, value_type)] += count
        for path, typed_counts in paths.items():
            counts = {json.dumps(value): n for (_, value), n in typed_counts.items()}
            values = [json.loads(k) for k in sorted(counts, key=lambda k: (-counts[k], k))]
            cand = alternatives_for(values, domains)
            if len(cand) == 1:
                cand = cand + constant_alternatives(path, cand[0], paths)
            candidates[(cls, path)] = cand
    return records, scalars, owners, candidates


@functools.cache
def _fields_of(cls):
    return [f.name for f in dataclasses.fields(cls)]


@functools.cache
def _paths_of(cls, prefix):
    """[(field, its attribute path)]: made once per class and place, not per kernel."""
    return [(name, prefix + name) for name in _fields_of(cls)]


def is_object(value):
    return hasattr(type(value), "__dataclass_fields__") and not isinstance(value, type)


def leaves(obj, owners, scalars, prefix="", depth=0, out=None):
    """A dataclass object as {attribute path: scalar value}; ``owners`` gets the class
    declaring each path's last attribute, ``scalars`` the (path, value type, value)s."""
    out = {} if out is None else out
    if depth > 4:
        return out
    cls = type(obj)
    for name, path in _paths_of(cls, prefix):
        value = getattr(obj, name, None)
        owners.setdefault(path, cls.__name__)
        if isinstance(value, SCALARS):
            out[path] = value
            scalars.append((path, type(value), value))
        elif is_object(value):
            leaves(value, owners, scalars, path + ".", depth + 1, out)
        else:
            out[path] = {"repr": repr(value)}
    return out


def part_names(obj):
    """{field: [class, name]} of the kernel's dataclass parts that name themselves (its
    tile, its pipeline), constant pieces included."""
    out = {}
    for name in _fields_of(type(obj)):
        value = getattr(obj, name, None)
        if is_object(value):
            try:
                text = value.name
            except Exception:  # noqa: BLE001 - a part that cannot name itself is left out
                continue
            if isinstance(text, str):
                out[name] = [type(value).__name__, text]
    return out


def part_types(kernels):
    """The classes of the kernels' dataclass parts (tiles, pipelines)."""
    return {type(v) for obj in kernels if is_object(obj)
            for v in (getattr(obj, f, None) for f in _fields_of(type(obj))) if is_object(v)}


def replaced(obj, path, value):
    head, _, rest = path.partition(".")
    clone = copy.copy(obj)
    for name, attr in vars(type(obj)).items():  # its cached properties computed afresh
        if isinstance(attr, functools.cached_property):
            clone.__dict__.pop(name, None)
    if rest:
        value = replaced(getattr(obj, head), rest, value)
    object.__setattr__(clone, head, value)
    return clone


def influence(pieces, other):
    """Piece range of ``pieces`` that differs in ``other``: (start, end), end exclusive."""
    limit = min(len(pieces), len(other))
    start = next((i for i in range(limit) if pieces[i] != other[i]), limit)
    same_end = next((i for i in range(limit - start) if pieces[-1 - i] != other[-1 - i]),
                    limit - start)
    return start, len(pieces) - same_end


def map_domains(modules):
    """Key sets of the dicts that codegen defines (cpp symbol maps and the like)."""
    return [(name, module.__name__, sorted(value)) for module in modules
            for name, value in vars(module).items()
            if isinstance(value, dict) and value and all(isinstance(k, str) for k in value)]


def alternatives_for(observed, domains):
    """One field's values to try: those observed, widened by the smallest codegen dict
    whose keys hold every observed string."""
    values = list(observed)
    if values and all(isinstance(v, str) for v in values):
        fitting = [d for d in domains if set(values) <= set(d[2])]
        if fitting:
            keys = min(fitting, key=lambda d: (len(d[2]), d[0]))[2]
            return sorted(set(keys) | set(values))
    return sorted(set(values), key=lambda v: (str(type(v)), v))


def constant_alternatives(path, value, typed_sets):
    """Values to try on a field with one value in every kernel of its class (a tile size
    always 1): the other values of the smallest other field having this value among
    several (an always-``f`` flag takes the ``t`` of the t/f flags), then a made-up one."""
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
    rewrites (over up to MAX_ALTERNATIVES values), and the paths that moved pieces."""
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


def perturb_influence(records, objects, candidates, typed_items, every_kernel=False):
    """Fill ``record["influence"]`` for every record, perturbing few kernels: what a field
    rewrites depends on its value and on the layout fields before it (whose change moved
    a name's pieces, seen on one record per (field, value)); each (field, value, layout)
    is perturbed once. ``every_kernel``: all of them (the tests' reference)."""
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
