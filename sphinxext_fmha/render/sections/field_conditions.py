"""The field reference's dispatch conditions: per token (a link where shown before), per
kernel group where a token has several, and those every kernel of a sub-type shares."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Set, Tuple

from ...guide_data import GuideData
from ...model import ApiModel, FieldInfo, KernelType, Segment
from ..ir import Block, Code, Inlines, LocalLink, Para, Strong, Table, codes, join, text_of
from .cells import FOLD_ROWS, condition_inlines, fold, natural, short_field, token_cell, words_say_more
from .condition_words import condition_words

#: a :class:`~sphinxext_fmha.model.ConditionGroup` (renderers read it as plain data)
ConditionGroup = Any

#: Marks a kernel group some of whose kernels are also reached by branches with
#: differing extra conditions; explained once in the section's lead.
VARYING = "\u2020"

#: Marks a token whose condition differs per kernel group (the table that follows
#: has them); explained once in the section's lead.
SEVERAL = "\u2193"

#: Where a condition was first shown: (sub-heading text, segment label, token).
_Shown = Tuple[str, str, str]


def cpp_symbol(token_values: List[Dict[str, str]], infos: Dict[str, FieldInfo]) -> Inlines:
    """C++ symbol of a one-field token (from the module's symbol map)."""
    found: List[str] = []
    for combo in token_values:
        for path, value in sorted(combo.items()):
            info = infos.get(path)
            symbol = info.cpp_symbols.get(value) if info is not None else None
            if symbol is not None and symbol not in found:
                found.append(symbol)
    return join([[Code(t)] for t in found], "; ")


#: a name in a dispatch level's text (``(hdim, hdim_v)``)
LEVEL_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def dispatch_levels(model: ApiModel, segment: Segment) -> List[str]:
    names = {segment.label} | {short_field(p) for p in segment.fields}
    return [level for level in model.dispatch.order if set(LEVEL_WORD_RE.findall(level)) & names]


def _cpp_text(group: ConditionGroup) -> str:
    return " && ".join("(%s)" % term if "||" in term else term for term in group.cpp)


def _telling_words(group: ConditionGroup) -> List[str]:
    """The plain words of the terms whose words say more than their C++."""
    words = list(map(condition_words, group.forms))
    if len(words) != len(group.cpp):
        return words if words_say_more(_cpp_text(group), " and ".join(words)) else []
    return [w for c, w in zip(group.cpp, words) if words_say_more(c, w)]


def _condition_inlines(group: ConditionGroup) -> Inlines:
    """The C++ of one condition group; its words only where they say more."""
    if group.unreached:
        return ["not launched by any dispatch branch"]
    if not group.cpp:
        return ["-"]
    out: Inlines = [Code(_cpp_text(group))]
    telling = _telling_words(group)
    if telling:
        out.append(" (%s)" % "; ".join(telling))
    return out


def varying_mark(group: ConditionGroup) -> str:
    """The mark of a group some of whose kernels other branches reach under more terms:
    with the variables those test (``† (+ a.seqlen_q)``); empty for the other groups."""
    if not group.varying:
        return ""
    more = getattr(group, "more", None)
    return VARYING + (" (+ %s)" % ", ".join(more) if more else "")


def _condition_key(group: ConditionGroup) -> str:
    """What a link to an earlier mention must match: the condition and its mark."""
    if group.unreached:
        return "unreached"
    return _cpp_text(group) + varying_mark(group)


class Conditions:
    """The conditions shown so far in the section, so each is shown once and later
    mentions link to it."""

    def __init__(self) -> None:
        self.first: Dict[str, _Shown] = {}
        self.local: Dict[Tuple[str, str], _Shown] = {}
        #: the marks the section's tables use (SEVERAL, "-", "pivoted"): its lead explains them
        self.marks: Set[str] = set()

    def cell(self, heading: str, label: str, token: str, groups: List[ConditionGroup]) -> Inlines:
        if not groups:
            self.marks.add("-")
            return ["-"]
        if len(groups) > 1:
            self.marks.add(SEVERAL)
            return [SEVERAL]
        group = groups[0]
        key = _condition_key(group)
        earlier = self.local.get((heading, key)) or self.first.get(key)
        if group.cpp and earlier is not None and earlier[:2] != (heading, label):
            where: Inlines = [earlier[1], " "] + token_cell(earlier[2])
            if earlier[0] != heading:
                owner: Inlines = [Code(earlier[0].split(" ")[0]), " "]
                where = owner + where
            return ["as ", LocalLink(earlier[0], earlier[1], where)]
        self.first.setdefault(key, (heading, label, token))
        self.local.setdefault((heading, key), (heading, label, token))
        shown = _condition_inlines(group) + ([varying_mark(group)] if group.varying else [])
        if group.varying:
            self.marks.add(VARYING)
        if shown == ["-"]:
            self.marks.add("-")
        return shown

    def same_segment(self, heading: str, label: str,
                     conditions: Dict[str, List[ConditionGroup]]) -> Optional[Tuple[str, str]]:
        """The (sub-heading, label) of a segment of another sub-type already shown whose
        tokens have exactly these conditions, token for token; None if there is none."""
        found = set()
        for token, groups in conditions.items():
            if len(groups) != 1 or not groups[0].cpp:
                return None
            earlier = self.first.get(_condition_key(groups[0]))
            if earlier is None or earlier[2] != token or earlier[1] != label or earlier[0] == heading:
                return None
            found.add(earlier[:2])
        if len(found) != 1:
            return None
        for token, groups in conditions.items():  # later segments of this sub-type link here
            self.local.setdefault((heading, _condition_key(groups[0])), (heading, label, token))
        return found.pop()


#: One C++ term read as ``variable rest`` (``a.seqlen_k`` ``% 128 == 0``): a dotted
#: name followed by an operator, nothing joined by ``&&``/``||`` inside.
_TERM = re.compile(r"^\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\s*([%=!<>].*?)\s*$")


def _pivot(groups: List[ConditionGroup]) -> Optional[List[Dict[str, str]]]:
    """Each group's condition as {variable: rest of its term}, when every term of every
    group reads that way and no group tests a variable twice; None otherwise."""
    out: List[Dict[str, str]] = []
    for group in groups:
        terms: Dict[str, str] = {}
        for term in group.cpp:
            match = _TERM.match(term)
            if not match or re.search(r"&&|\|\||\band\b|\bor\b", term) \
                    or match.group(1) in terms or "(" in match.group(2):
                return None
            terms[match.group(1)] = match.group(2)
        out.append(terms)
    return out


def condition_details(groups_by_token: Dict[str, List[ConditionGroup]], label: str,
                       marks: Set[str]) -> List[Block]:
    """The conditions of the tokens that have several, one row per kernel group; the
    other segments that shape a condition are columns (the tokens the group covers).
    Where every term reads ``variable rest``, each variable is a column too (a truth
    table: the condition is the ``&&`` of the row's cells); ``marks`` gets the marks it uses."""
    groups = [(token, group) for token in sorted(groups_by_token, key=natural)
              if len(groups_by_token[token]) > 1
              for group in sorted(groups_by_token[token], key=lambda g: (
                  -g.kernels, [natural(t) for _, ts in sorted(g.where.items()) for t in ts]))]
    if not groups:
        return []
    where, follows = _one_to_one(list(dict.fromkeys(w for _, g in groups for w in g.where)),
                                 [g for _, g in groups])
    terms = _pivot([g for _, g in groups])
    variables = list(dict.fromkeys(v for found in terms or [] for v in found))
    if terms is not None:
        marks.add("pivoted")
    rows = []
    for index, (token, group) in enumerate(groups):
        row = [token_cell(token) + ([varying_mark(group)] if group.varying else [])]  # its mark
        if group.varying:
            marks.add(VARYING)
        row += [join([token_cell(t) for t in sorted(group.where.get(w, []), key=natural)]) or ["-"]
                for w in where]
        count = str(group.kernels)
        if terms is None:
            condition = _condition_inlines(group)
            if condition == ["-"]:
                marks.add("-")
            row += [condition, [count]]
        else:
            row += [[Code(terms[index][v])] if v in terms[index] else [] for v in variables]
            row.append([count + (", not launched by any dispatch branch" if group.unreached else "")])
        rows.append(row)
    header = ["Token"] + where + (["Dispatch condition"] if terms is None else variables) + ["Kernels"]
    title: Inlines = [Strong("Dispatch conditions of %s" % label), " (%d)" % len(rows)]
    counts = {text_of(row[-1]) for row in rows}
    if len(counts) == 1 and not any(g.unreached for _, g in groups):  # said once, in the title
        title[-1] = " (%d groups of %s kernels)" % (len(rows), counts.pop())
        header, rows = header[:-1], [row[:-1] for row in rows]
    table = Table(header=header, rows=rows, classes=["fmha-field-dispatch"], counts_after=None)
    notes: List[Block] = [Para([Strong(other), " goes with ", Strong(first), " one to one in "
                                "these groups: ", *join([token_cell(a) + [" \u2192 "] + token_cell(b)
                                                         for a, b in pairs]), "."])
                          for other, (first, pairs) in follows.items()]
    # reference material the token table points to: folded unless it is very short
    if len(rows) <= FOLD_ROWS // 2:
        table.title = title
    return fold(title, notes + [table], len(rows), FOLD_ROWS // 2)


def _one_to_one(where: List[str], groups: List[ConditionGroup]
                ) -> Tuple[List[str], Dict[str, Tuple[str, List[Tuple[str, str]]]]]:
    """The where-columns without those that go one to one with an earlier column (one
    token each in every group, the same partner every time): such a column is said once,
    as its token pairs, instead of in every row."""
    kept: List[str] = []
    follows: Dict[str, Tuple[str, List[Tuple[str, str]]]] = {}
    for column in where:
        for first in kept:
            pairs: Dict[str, str] = {}
            back: Dict[str, str] = {}
            ok = True
            for group in groups:
                a, b = group.where.get(first, []), group.where.get(column, [])
                if len(a) != 1 or len(b) != 1 or pairs.setdefault(a[0], b[0]) != b[0] \
                        or back.setdefault(b[0], a[0]) != a[0]:
                    ok = False
                    break
            if ok and len(groups) > len(pairs) > 1:
                follows[column] = (first, sorted(pairs.items(), key=lambda p: natural(p[0])))
                break
        else:
            kept.append(column)
    return kept, follows



def shared_conditions(data: GuideData, kernel_type: KernelType) -> List[Block]:
    dispatch = data.token_dispatch
    if dispatch is None:
        return []
    blocks: List[Block] = []
    shared = dispatch.shared.get(kernel_type.class_name, [])
    if shared:
        blocks.append(Para(["Every dispatched ", Code(kernel_type.class_name),
                            " kernel also needs: ",
                            *join([condition_inlines(cpp, form) for cpp, form in shared], "; "),
                            "."]))
    undetermined = dispatch.undetermined.get(kernel_type.class_name, [])
    if undetermined:
        blocks.append(Para(["Conditions that no segment of the kernel name decides: ",
                            *codes(undetermined), "."]))
    return blocks
