"""The field reference's facts: per field of a kernel name, its segment, comment,
declaration, values and the C++ symbols its symbol map gives them
(:class:`~sphinxext_fmha.model.FieldInfo`)."""

from __future__ import annotations

import re
from collections import defaultdict
from itertools import repeat
from typing import Dict, List

from ..model import FieldInfo, KernelType
from .grammar import plain_values
from .source import SourceFacts

__all__ = ["fields_of"]


def fields_of(kernel_types: List[KernelType], records_by_class: Dict[str, List[dict]],
            observed: dict, facts: SourceFacts) -> List[FieldInfo]:
    fields: Dict[str, FieldInfo] = {}
    comments = {(c.name, f.name): f for c in facts.classes for f in c.fields}
    class_where = {c.name: c.defined_at for c in facts.classes}
    uses = defaultdict(list)
    for use in facts.map_uses:
        uses[use.field].append(use)
    # Constant segments last: a path that varies in one sub-type and is constant in
    # another (F_tile.F_bn1 of split-KV kernels and of their combine kernels) is
    # described where it varies; the constant sub-type only adds itself.
    passes = [(False, k) for k in kernel_types] + [(True, k) for k in kernel_types]
    for constant, kernel_type in passes:
        owners = observed.get("owners", {}).get(kernel_type.class_name, {})
        leaves = [r["leaves"] for r in records_by_class[kernel_type.class_name]]
        for segment in kernel_type.segments:
            if segment.constant != constant:
                continue
            for path in segment.fields:
                info = fields.get(path)
                # where this sub-type's own class declares the field
                owner = owners.get(path, kernel_type.class_name)
                declared = comments.get((owner, path.split(".")[-1]))
                defined_at = _line_of(class_where.get(owner, ""), declared)
                comment = declared.comment if declared else ""
                described = info is not None
                if info is None:
                    info = FieldInfo(path=path, segment=segment.label, comment=comment,
                                     defined_at=defined_at)
                    info.symbol_map = owner  # resolved into the map below
                    fields[path] = info
                if defined_at:
                    info.defined_at_by_type.setdefault(kernel_type.class_name, defined_at)
                if declared is not None:  # (its own comment, even none)
                    info.comment_by_type.setdefault(kernel_type.class_name, comment)
                if kernel_type.class_name not in info.kernel_types:
                    info.kernel_types.append(kernel_type.class_name)
                if described and constant:
                    continue  # described where it varies
                values = _column_texts(leaves, path)
                info.values = sorted(set(info.values) | values, key=_natural)
    for info in fields.values():
        _link_map(info, info.path.split(".")[-1], info.symbol_map, uses, facts)
        if info.cpp_symbols:
            extra = [v for v in info.values if v not in info.cpp_symbols]
            for value in extra:
                info.hard_coded.append(value)
    return [fields[p] for p in sorted(fields)]


def _column_texts(leaves: List[dict], path: str) -> set:
    """The distinct texts of one field over the kernels that have it."""
    if all(map(dict.__contains__, leaves, repeat(path))):  # the usual case, at C speed
        values = list(map(dict.__getitem__, leaves, repeat(path)))
        # equal values of these types have equal texts: the texts of the distinct ones
        return set(map(str, set(values) if plain_values(values) else values))
    return {str(values[path]) for values in leaves if path in values}


def _line_of(class_where: str, declared) -> str:
    if not class_where or declared is None or not declared.line:
        return class_where
    return "%s:%d" % (class_where.rsplit(":", 1)[0], declared.line)


def _link_map(info: FieldInfo, leaf: str, owner: str, uses, facts: SourceFacts) -> None:
    info.symbol_map = ""
    candidates = [u for u in uses.get(leaf, []) if u.owner == owner] or uses.get(leaf, [])
    if not candidates:
        return
    use = sorted(candidates, key=lambda u: (u.map != candidates[0].map, u.where))[0]
    info.symbol_map = use.map
    symbol_map = facts.symbol_maps.get(use.map)
    if symbol_map is None:
        return
    if symbol_map.entries:
        info.cpp_symbols = dict(symbol_map.entries)
    elif symbol_map.branches:
        # A map chosen by an argument (get_mask_map(mask_impl)): the branch whose keys
        # hold the observed values; values of another branch are hard-coded ones.
        values = set(info.values)
        branch = max(sorted(symbol_map.branches),
                     key=lambda b: len(values & set(symbol_map.branches[b])))
        info.symbol_map = "%s(%s)" % (use.map, branch)
        info.cpp_symbols = dict(symbol_map.branches[branch])


_NUM = re.compile(r"(\d+)")


def _natural(text: str):
    return [int(p) if p.isdigit() else p for p in _NUM.split(text)]
