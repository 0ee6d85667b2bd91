"""Section 4: the field reference (tokens, meanings, C++ symbols, dispatch conditions).

Each fact is said once: a condition as C++ (its plain words only where they say more
than the C++), a condition another segment already showed as a link to it, a symbol
map of several fields once per map, and the mark of a kernel group reached by branches
with differing extra conditions as a dagger explained once in the section's lead.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Dict, List, Optional, Tuple

from ...guide_data import GuideData
from ...model import (
    ApiModel,
    FieldInfo,
    KernelType,
    Segment,
)
from ..ir import (
    Block,
    BulletList,
    Code,
    Dropdown,
    Inlines,
    LocalLink,
    Para,
    Strong,
    SubHeading,
    Table,
    codes,
    join,
    text_of,
)
from .common import (
    FOLD_ROWS,
    condition_inlines,
    filterable,
    fold,
    natural,
    short_field,
    token_cell,
    words_say_more,
)
from .filter import follower_tokens_note

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


def _cpp_symbol(token_values: List[Dict[str, str]], infos: Dict[str, FieldInfo]) -> Inlines:
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
_LEVEL_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _dispatch_levels(model: ApiModel, segment: Segment) -> List[str]:
    names = {segment.label} | {short_field(p) for p in segment.fields}
    levels = []
    for level in model.dispatch.order:
        words = set(_LEVEL_WORD_RE.findall(level))
        if words & names:
            levels.append(level)
    return levels


# --------------------------------------------------------------------------- conditions


def _cpp_text(group: ConditionGroup) -> str:
    return " && ".join("(%s)" % term if "||" in term else term for term in group.cpp)


def _telling_words(group: ConditionGroup) -> List[str]:
    """The plain words of the terms whose words say more than their C++."""
    if len(group.words) != len(group.cpp):
        whole = " and ".join(group.words)
        return list(group.words) if words_say_more(_cpp_text(group), whole) else []
    return [w for c, w in zip(group.cpp, group.words) if words_say_more(c, w)]


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


def _condition_key(group: ConditionGroup) -> str:
    """What a link to an earlier mention must match: the condition and its mark."""
    if group.unreached:
        return "unreached"
    return _cpp_text(group) + (VARYING if group.varying else "")


class _Conditions:
    """The conditions shown so far in the section, so each is shown once and later
    mentions link to it."""

    def __init__(self) -> None:
        self.first: Dict[str, _Shown] = {}
        self.local: Dict[Tuple[str, str], _Shown] = {}

    def cell(self, class_name: str, heading: str, label: str, token: str,
             groups: List[ConditionGroup]) -> Inlines:
        if not groups:
            return ["-"]
        if len(groups) > 1:
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
        return _condition_inlines(group) + ([VARYING] if group.varying else [])

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


def _condition_details(groups_by_token: Dict[str, List[ConditionGroup]], label: str,
                       pivoted: List[bool]) -> List[Block]:
    """The conditions of the tokens that have several, one row per kernel group; the
    other segments that shape a condition are columns (the tokens the group covers).
    Where every term reads ``variable rest``, each variable is a column too (a truth
    table: the condition is the ``&&`` of the row's cells) and ``pivoted`` records it."""
    groups = [(token, group) for token in sorted(groups_by_token, key=natural)
              if len(groups_by_token[token]) > 1
              for group in sorted(groups_by_token[token], key=lambda g: (
                  -g.kernels, [natural(t) for _, ts in sorted(g.where.items()) for t in ts]))]
    if not groups:
        return []
    where: List[str] = []
    for _, group in groups:
        where += [w for w in group.where if w not in where]
    where, follows = _one_to_one(where, [g for _, g in groups])
    terms = _pivot([g for _, g in groups])
    variables: List[str] = []
    for found in terms or []:
        variables += [v for v in found if v not in variables]
    if terms is not None:
        pivoted.append(True)
    rows = []
    for index, (token, group) in enumerate(groups):
        row = [token_cell(token) + ([VARYING] if group.varying else [])]  # the row's mark
        row += [join([token_cell(t) for t in sorted(group.where.get(w, []), key=natural)]) or ["-"]
                for w in where]
        count = str(group.kernels)
        if terms is None:
            row += [_condition_inlines(group), [count]]
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


# --------------------------------------------------------------------------- the section


def _shared_conditions(data: GuideData, kernel_type: KernelType) -> List[Block]:
    dispatch = data.token_dispatch
    if dispatch is None:
        return []
    blocks: List[Block] = []
    shared = dispatch.shared.get(kernel_type.class_name, [])
    if shared:
        blocks.append(Para(["Every dispatched ", Code(kernel_type.class_name),
                            " kernel also needs: ",
                            *join([condition_inlines(cpp, words) for cpp, words in shared], "; "),
                            "."]))
    undetermined = dispatch.undetermined.get(kernel_type.class_name, [])
    if undetermined:
        blocks.append(Para(["Conditions that no segment of the kernel name decides: ",
                            *codes(undetermined), "."]))
    return blocks


def _any_varying(data: GuideData) -> bool:
    if data.token_dispatch is None:
        return False
    return any(g.varying for groups in data.token_dispatch.groups.values()
               for gs in groups.values() for g in gs)


def fields_section(data: GuideData) -> List[Block]:
    model = data.model
    infos = {f.path: f for f in model.fields}
    filtered_types = [k for k in model.kernel_types if filterable(model, k)]
    lead: Inlines = ["Per segment ", Code("-f"), " can select on: token, meaning, C++ symbol, "
                     "kernels listed, and the condition the dispatcher tests before it calls "
                     "the token's kernels (the API file's terms this segment decides). The "
                     "dispatcher tries its branches in order: a kernel is also reached only "
                     "when the branches tried before it do not match."]
    blocks: List[Block] = [Para(lead)]
    for kernel_type in model.kernel_types:
        if kernel_type not in filtered_types:
            blocks.append(Para([Code(kernel_type.class_name), " is not filtered by ", Code("-f"),
                                "; its segments are shown in the file name section."]))
    shown = _Conditions()
    pivoted: List[bool] = []
    for kernel_type in filtered_types:
        heading = ""
        if len(model.kernel_types) > 1:
            title: Inlines = [Code(kernel_type.class_name), " (filter %s)"
                              % ("part %s" % kernel_type.filter_position
                                 if model.filter.api_split else "pattern")]
            blocks.append(SubHeading(title))
            heading = text_of(title)
        blocks.extend(_shared_conditions(data, kernel_type))
        for index, segment in enumerate(kernel_type.segments):
            if segment.literal or segment.constant:
                continue
            blocks.extend(_segment_blocks(data, kernel_type, index, segment, infos, heading,
                                          shown, pivoted))
        blocks.extend(_constant_segments(kernel_type))
    # the legends of the marks the tables use, said once
    if any(SEVERAL in text_of(r) for b in _tables(blocks) for row in b.rows for r in row):
        lead.append(" %s: differs per kernel group (table below)." % SEVERAL)
    if _any_varying(data):
        lead.append(" %s: some kernels of the group are also reached by branches with other "
                    "extra conditions (not shown)." % VARYING)
    if any(header == "Dispatch condition" and text_of(row[column]) == "-"
           for b in _tables(blocks) for column, header in enumerate(b.header) for row in b.rows):
        lead.append(" -: no term of its own (its kernels take what the branches tried before "
                    "them leave).")
    if pivoted:
        lead.append(" Where C++ names head columns, a row's condition is the && of its cells "
                    "(column a.seqlen_k, cell % 128 == 0: a.seqlen_k % 128 == 0).")
    return blocks


def _constant_segments(kernel_type: KernelType) -> List[Block]:
    """Segments with one token in this tree: named briefly, nothing to select."""
    items = [[Strong(s.label), " ", *token_cell(next(iter(s.tokens))), " (", *codes(s.fields), ")"]
             for s in kernel_type.segments if s.constant]
    if not items:
        return []
    return [Para(["Constant in this tree (one token each, so ", Code("-f"), " has nothing to "
                  "choose): ", *join(items, "; "), "."])]


def _tables(blocks: List[Block]) -> List[Table]:
    out: List[Table] = []
    for block in blocks:
        if isinstance(block, Table):
            out.append(block)
        elif isinstance(block, Dropdown):
            out.extend(_tables(block.blocks))
    return out


def _field_items(segment: Segment, infos: Dict[str, FieldInfo], symbols_inline: bool,
                 class_name: str) -> List[Inlines]:
    """The fields of a segment of sub-type ``class_name``, each where that sub-type's own
    class declares it."""
    items: List[Inlines] = []
    for path in segment.fields:
        info = infos.get(path)
        item: Inlines = [Code(path)]
        if info is not None:
            comment = info.comment_by_type.get(class_name, info.comment)
            if comment:
                item.append(": " + " ".join(comment.split()))
            defined_at = info.defined_at_by_type.get(class_name, info.defined_at)
            if defined_at:
                item += [" (", Code(defined_at), ")"]
            if info.symbol_map and symbols_inline:
                item += [", C++ symbols from ", Code(info.symbol_map)]
            if info.hard_coded:
                item += ["; values without a symbol-map entry (hard-coded): ",
                         *codes(info.hard_coded)]
        items.append(item)
    return items


def _symbol_maps(segment: Segment, infos: Dict[str, FieldInfo]) -> Optional[Para]:
    """The value -> C++ symbol maps of a segment of several fields, once per map (the
    token's symbols are the fields' symbols side by side)."""
    maps: Dict[str, Dict[str, str]] = {}
    users: Dict[str, List[str]] = {}
    for path in segment.fields:
        info = infos.get(path)
        if info is None or not info.cpp_symbols:
            continue
        used = {v for combos in segment.values.values() for combo in combos
                for p, v in combo.items() if p == path}
        name = info.symbol_map or short_field(path)
        mapping = {v: s for v, s in info.cpp_symbols.items() if v in used}
        if mapping:  # (values the map lacks are listed as hard-coded with the field)
            maps.setdefault(name, {}).update(mapping)
            users.setdefault(name, []).append(short_field(path))
    if not maps:
        return None
    parts = [[Code(name), " (", ", ".join(users[name]), "): ",
              *join([[Code(v), " \u2192 ", Code(s)]
                     for v, s in sorted(mapping.items(), key=lambda i: natural(i[0]))])]
             for name, mapping in maps.items()]
    return Para(["C++ symbols: ", *join(parts, "; "), "."])


def _segment_blocks(data: GuideData, kernel_type: KernelType, index: int, segment: Segment,
                    infos: Dict[str, FieldInfo], heading: str, shown: _Conditions,
                    pivoted: List[bool]) -> List[Block]:
    model = data.model
    counts = data.token_counts.get((kernel_type.class_name, index), {})
    levels = _dispatch_levels(model, segment)
    title: Inlines = ["Segment ", Strong(segment.label)]
    if levels:
        title += [" (dispatch level ", *codes(levels), ")"]
    described: List[Block] = [Para(title, ["fmha-segment"], anchor=segment.label)]
    mapped = [p for p in segment.fields if infos.get(p) and infos[p].cpp_symbols]
    one_symbol = len(mapped) <= 1
    items = _field_items(segment, infos, one_symbol, kernel_type.class_name)
    if items:
        described += fold(["Fields of ", Strong(segment.label), " (%d)" % len(items)],
                          [BulletList(items)], len(items), 2)
    if not one_symbol:
        maps = _symbol_maps(segment, infos)
        if maps is not None:
            described.append(maps)
    conditions = (data.token_dispatch.groups.get((kernel_type.class_name, index), {})
                  if data.token_dispatch is not None else {})
    show_dispatch = any(g.cpp or g.unreached for groups in conditions.values() for g in groups)
    same = shown.same_segment(heading, segment.label, conditions) if show_dispatch else None
    if same is not None:
        show_dispatch = False
        described.append(Para(["Dispatch conditions: as for ", LocalLink(
            same[0], same[1], [Code(same[0].split(" ")[0]), " ", Strong(same[1])]), "."]))
    show_cpp = one_symbol and bool(mapped)
    buckets = data.head_dims.get((kernel_type.class_name, index), {})
    header = (["Token", "Meaning"] + (["C++ symbol"] if show_cpp else [])
              + (["Dispatch condition"] if show_dispatch else [])
              + (["Serves hdim_q x hdim_v (up to)"] if buckets else []) + ["Kernels"])
    rows: List[List[Inlines]] = []
    for token in sorted(segment.tokens, key=natural):
        row: List[Inlines] = [token_cell(token), [segment.tokens[token]]]
        if show_cpp:
            row.append(_cpp_symbol(segment.values.get(token, []), infos))
        if show_dispatch:
            row.append(shown.cell(kernel_type.class_name, heading, segment.label, token,
                                  conditions.get(token, [])))
        if buckets:
            row.append([", ".join("%dx%s" % (q, "any" if v is None else v)
                                  for q, v in buckets.get(token, []))])
        row.append([str(counts.get(token, 0))])
        rows.append(row)
    table = Table(header=header, rows=rows, classes=["fmha-field"])
    details = _condition_details(conditions, segment.label, pivoted) if show_dispatch else []
    undecided = _undecided_levels(data, kernel_type, index, levels, conditions, heading) \
        if show_dispatch else []
    traps = _pattern_traps(data, kernel_type, segment) + follower_tokens_note(
        model.filter, kernel_type.class_name, segment.label)
    return described + fold(["Tokens of ", Strong(segment.label), " (%d)" % len(rows)],
                            [table], len(rows)) + undecided + traps + details


def _undecided_levels(data: GuideData, kernel_type: KernelType, index: int,
                      levels: List[str], conditions: Dict[str, List[ConditionGroup]],
                      heading: str) -> List[Block]:
    """For a variable of the segment's dispatch level that no condition of this segment
    names but another segment's do (2.8.3 fwd: ``hdim_v``, told by the tile): which
    terms on it this segment's kernels run under, token by token, from those segments'
    groups (so that a row's condition is not read as the whole of it)."""
    if data.token_dispatch is None:
        return []
    own = " ".join(c for groups in conditions.values() for g in groups for c in g.cpp)
    others = {j: groups for (name, j), groups in data.token_dispatch.groups.items()
              if name == kernel_type.class_name and j != index}
    labels = [s.label for s in kernel_type.segments]
    # the objects this segment's terms read (CK: the traits ``t``): a term on the same
    # variable of another object (the call's ``a.hdim_v % 8``, padding) is another matter
    objects = sorted(set(re.findall(r"(?<![\w.])([A-Za-z_]\w*)\.\w", own)))
    blocks: List[Block] = []
    for word in dict.fromkeys(w for level in levels for w in _LEVEL_WORD_RE.findall(level)):
        if not objects or re.search(r"\b%s\b" % re.escape(word), own):
            continue
        names = re.compile(r"(?<![\w.])(?:%s)\.%s\b" % (
            "|".join(map(re.escape, objects)), re.escape(word)))
        # kernel file -> its terms on the word, each once (a term several segments
        # shape is in the groups of each)
        terms: Dict[str, Dict[str, None]] = {}
        tellers = []
        for j, by_token in sorted(others.items()):
            found = False
            for groups in by_token.values():
                for group in groups:
                    on_word = [c for c in group.cpp if names.search(c)]
                    if on_word:
                        found = True
                        for file in group.files:
                            terms.setdefault(file, {}).update(dict.fromkeys(on_word))
            if found:
                tellers.append(labels[j])
        if not terms:
            continue
        items: List[Inlines] = []
        for token in sorted(conditions, key=natural):
            counts: Counter = Counter(tuple(terms.get(f, ())) for g in conditions[token]
                                      if not g.unreached for f in g.files)
            if not counts:
                continue
            ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
            said: List[Inlines] = []
            for on_word, count in ranked:
                term: Inlines = [Code(" && ".join(on_word)) if on_word else "no condition on it"]
                said.append(term + ([" (%d kernels)" % count] if len(ranked) > 1 else []))
            items.append([token_cell(token)[0], ": ", *join(said, " or ")])
        if items:
            blocks.append(Para([
                "The conditions above leave out ", Code(word), ": its terms are in the "
                "table of ", *join([[LocalLink(heading, label, [Strong(label)])]
                                    for label in tellers], ", "),
                ". Token by token: ", *join(items, "; "), "."]))
    return blocks


def _pattern_traps(data: GuideData, kernel_type: KernelType, segment: Segment) -> List[Block]:
    """The tokens whose ``*TOKEN*`` also selects kernels without them, with the pattern
    that selects exactly theirs where there is one."""
    items: List[Inlines] = []
    for trap in data.pattern_traps:
        if trap.kernel_type != kernel_type.class_name or trap.segment != segment.label:
            continue
        item: Inlines = [Code(trap.loose), " (%d kernels, not %d" % (trap.loose_count,
                                                                   trap.carriers)]
        item += ([": exactly ", Code(trap.exact), ")"] if trap.exact else [")"])
        items.append(item)
    if not items:
        return []
    lead = "Patterns that also match names without the token"
    # one is said in a line; several (bwd's pad: _ps in _psk, _pssk, ...) are folded
    return fold(["%s (%d)" % (lead, len(items))],
                [BulletList(items)] if len(items) > 1 else [Para([lead + ": ", *items[0], "."])],
                len(items), 1)
