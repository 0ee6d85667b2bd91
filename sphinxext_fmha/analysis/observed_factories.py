"""The factories' tile tables as generate.py's own run computed them (``probe_calls.py``):
per data type, head-dim key and the other arguments (``[tr_load=t]`` where they change
the table), the tiles' names and conditions. A factory the run did not call gets the
table the probe asked it for (not ``observed``)."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ..model import Factory

__all__ = ["apply_observed_factories"]

_Table = Dict[str, List[str]]


def apply_observed_factories(factories: List[Factory], observed: dict,
                             tile_classes: Set[str], hdim_field: str) -> None:
    """Fill each factory's tables from ``observed`` (the probe's ``factories``). A factory
    with several tile methods (a 2026 class: its own main kernels' table and the combine
    kernels' table of its base) becomes one table per method, named ``Class.method``."""
    calls, objects = observed["calls"], observed["objects"]
    for factory in list(factories):
        own = _calls_of(factory, factories, calls, objects, tile_classes)
        methods = list(dict.fromkeys(c["method"] for c in own if _tiles_of(c, objects, tile_classes)))
        for number, method in enumerate(methods):
            table = factory if not number else dataclasses.replace(factory, tile_notes={})
            if len(methods) > 1:
                table.class_name = "%s.%s" % (factory.class_name.partition(".")[0], method)
            if number:
                factories.insert(factories.index(factory) + number, table)
            _fill(table, [c for c in own if c["method"] == method], objects, tile_classes,
                  hdim_field)
            table.observed = any(not c.get("asked") for c in own)  # the run called it


def _fill(factory: Factory, calls: List[dict], objects: List[list], tile_classes: Set[str],
          hdim_field: str) -> None:
    merged = {dtype: _merge(combos) for dtype, combos
              in _per_dtype(calls, objects, tile_classes, hdim_field).items()}
    factory.tiles = {dtype: table for dtype, table in merged.items() if table}
    for index in {i for c in calls for i in _tiles_of(c, objects, tile_classes)}:
        name, notes = objects[index][1], objects[index][3]
        if name and notes:
            factory.tile_notes[name] = "; ".join(notes.values())


def _calls_of(factory: Factory, factories: Sequence[Factory], calls: List[dict],
              objects: List[list], tile_classes: Set[str]) -> List[dict]:
    """The calls made through ``factory`` (a function factory: the function's own); one
    inheriting its tile method as a static method also gets the defining base's calls."""
    name = factory.class_name
    own = [c for c in calls if c["through"] == name or (not c["through"] and c["method"] == name)]
    if not own or any(_tiles_of(c, objects, tile_classes) for c in own):
        return own
    by_name = {f.class_name: f for f in factories}
    bases, seen = list(factory.bases), {name}
    while bases:
        base = bases.pop(0)
        if base in seen:
            continue
        seen.add(base)
        inherited = [c for c in calls if c["through"] == base and c["kind"] == "static"
                     and _tiles_of(c, objects, tile_classes)]
        if inherited:
            return own + inherited
        bases.extend(by_name[base].bases if base in by_name else [])
    return own


def _refs(call: dict) -> List[Tuple[Optional[str], int]]:
    """(table key or None for a list, object index) of each object a call returned."""
    result = call.get("result") or {}
    return [(key, i) for key, ids in result.get("keys", []) for i in ids] + [
        (None, i) for i in result.get("items", [])]


def _tiles_of(call: dict, objects: List[list], tile_classes: Set[str]) -> List[int]:
    return [i for _, i in _refs(call) if objects[i][0] in tile_classes]


def _per_dtype(calls: List[dict], objects: List[list], tile_classes: Set[str], hdim_field: str
               ) -> Dict[str, List[Tuple[Tuple[Tuple[str, Any], ...], _Table]]]:
    """data type -> [(the other arguments, the table {head-dim key: tile names})], in the
    order of the calls."""
    out: Dict[str, List[Tuple[Tuple[Tuple[str, Any], ...], _Table]]] = {}
    for call in calls:
        params = call["params"]
        param = next((p for p in params if "dtype" in p.lower()), next(iter(params), ""))
        if not isinstance(params.get(param), str):
            continue
        others = tuple((k, v) for k, v in params.items() if k != param)
        table: _Table = {}
        for key, index in _refs(call):
            cls, name, fields = objects[index][:3]
            if cls in tile_classes and name:
                if key is None:  # a list of tiles: keyed by each tile's head dim
                    key = str(fields[hdim_field]) if hdim_field in fields else "*"
                if name not in table.get(key, []):
                    table.setdefault(key, []).append(name)
        combos = out.setdefault(params[param], [])
        if (others, table) not in combos:
            combos.append((others, table))
    return out


def _merge(combos: List[Tuple[Tuple[Tuple[str, Any], ...], _Table]]) -> _Table:
    """One data type's tables over its other arguments: keys get ``[param=value]`` only
    when those change the table (tables differ, or some are empty)."""
    filled = [(others, table) for others, table in combos if table]
    qualify = any(others for others, _ in combos) and (
        len({repr(sorted(t.items())) for _, t in filled}) > 1 or len(filled) < len(combos))
    out: _Table = {}
    for others, table in filled:
        suffix = " [" + ", ".join("%s=%s" % kv for kv in others) + "]" if qualify else ""
        for key, names in table.items():
            shown = out.setdefault(key + suffix, [])
            shown.extend(n for n in names if n not in shown)
    return out
