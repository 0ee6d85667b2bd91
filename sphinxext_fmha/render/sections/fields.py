"""Section 4: the field reference (tokens, meanings, C++ symbols, dispatch conditions),
each fact said once: a condition shown before as a link to it, a symbol map of several
fields once per map, a mark (dagger, arrow) explained once in the section's lead."""

from __future__ import annotations

import re
from collections import Counter
from typing import Dict, List, Optional

from ...guide_data import GuideData
from ...model import FieldInfo, KernelType, Segment
from ..ir import (
    Block,
    BulletList,
    Code,
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
from .cells import filterable, fold, natural, short_field, token_cell
from .field_conditions import (
    LEVEL_WORD_RE,
    SEVERAL,
    VARYING,
    ConditionGroup,
    Conditions,
    condition_details,
    cpp_symbol,
    dispatch_levels,
    shared_conditions,
)
from .filter import compiled_together_note, follower_tokens_note


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
    blocks += [Para([Code(k.class_name), " is not filtered by ", Code("-f"), "; its segments are shown "
                     "in the file name section."]) for k in model.kernel_types if k not in filtered_types]
    shown = Conditions()
    for kernel_type in filtered_types:
        heading = ""
        if len(model.kernel_types) > 1:
            title: Inlines = [Code(kernel_type.class_name), " (filter %s)"
                              % ("part %s" % kernel_type.filter_position
                                 if model.filter.api_split else "pattern")]
            blocks.append(SubHeading(title))
            heading = text_of(title)
        blocks.extend(shared_conditions(data, kernel_type))
        for index, segment in enumerate(kernel_type.segments):
            if segment.literal or segment.constant:
                continue
            blocks.extend(_segment_blocks(data, kernel_type, index, segment, infos, heading, shown))
        blocks.extend(_constant_segments(kernel_type))
    # the legends of the marks the tables use, said once
    if SEVERAL in shown.marks:
        lead.append(" %s: differs per kernel group (table below)." % SEVERAL)
    if VARYING in shown.marks:
        lead.append(" %s: some kernels of the group are also reached by other branches, which "
                    "test more than the condition shown (+: the variables those also test)."
                    % VARYING)
    if "-" in shown.marks:
        lead.append(" -: no term of its own (its kernels take what the branches tried before "
                    "them leave).")
    if "pivoted" in shown.marks:
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
            hard_coded = info.hard_coded_by_type.get(class_name, info.hard_coded)
            if hard_coded:
                item += ["; values without a symbol-map entry (hard-coded): ", *codes(hard_coded)]
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
                    infos: Dict[str, FieldInfo], heading: str, shown: Conditions) -> List[Block]:
    model = data.model
    counts = data.token_counts.get((kernel_type.class_name, index), {})
    levels = dispatch_levels(model, segment)
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
            row.append(cpp_symbol(segment.values.get(token, []), infos))
        if show_dispatch:
            row.append(shown.cell(heading, segment.label, token, conditions.get(token, [])))
        if buckets:
            row.append([", ".join("%dx%s" % (q, "any" if v is None else v)
                                  for q, v in buckets.get(token, []))]
                       + _never_run_note(data, kernel_type, conditions.get(token, [])))
        row.append([str(counts.get(token, 0))])
        rows.append(row)
    table = Table(header=header, rows=rows, classes=["fmha-field"])
    details = condition_details(conditions, segment.label, shown.marks) if show_dispatch else []
    undecided = _undecided_levels(data, kernel_type, index, levels, conditions, heading) \
        if show_dispatch else []
    traps = _pattern_traps(data, kernel_type, segment) + follower_tokens_note(
        model.filter, kernel_type.class_name, segment.label) + compiled_together_note(
        data, kernel_type.class_name, index)
    return described + fold(["Tokens of ", Strong(segment.label), " (%d)" % len(rows)],
                            [table], len(rows)) + undecided + traps + details


def _never_run_note(data: GuideData, kernel_type: KernelType,
                    groups: List[ConditionGroup]) -> Inlines:
    """The token's kernels the API never runs, per arch suffix: a bucket a branch tried
    earlier always takes on one arch (2026 bwd: gfx950 tries the trload ``_d64`` before
    ``_d32``) serves nothing there, though its condition reads as if it did."""
    never = (data.dispatch_reading or {}).get("unreachable") or {}
    suffixes = sorted((s for s in kernel_type.arch_suffixes if s), key=len, reverse=True)
    per_arch: Counter = Counter()
    for file in {f for g in groups for f in g.files if f in never}:
        stem = file[:-len(".cpp")] if file.endswith(".cpp") else file
        per_arch[next((s for s in suffixes if stem.endswith(s)), "")] += 1
    if not per_arch:
        return []
    said = join([["%d " % n, Code(arch)] if arch else ["%d" % n]
                 for arch, n in sorted(per_arch.items())], ", ")
    return ["; ", *said, " never run"]


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
    for word in dict.fromkeys(w for level in levels for w in LEVEL_WORD_RE.findall(level)):
        if not objects or re.search(r"\b%s\b" % re.escape(word), own):
            continue
        names = re.compile(r"(?<![\w.])(?:%s)\.%s\b" % (
            "|".join(map(re.escape, objects)), re.escape(word)))
        # kernel file -> its terms on the word, each once (a term several segments
        # shape is in the groups of each)
        terms: Dict[str, Dict[str, None]] = {}
        tellers = []
        for j, by_token in sorted(others.items()):
            told = [group for groups in by_token.values() for group in groups
                    if any(names.search(c) for c in group.cpp)]
            for group in told:
                for file in group.files:
                    terms.setdefault(file, {}).update(dict.fromkeys(c for c in group.cpp if names.search(c)))
            if told:
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
    items: List[Inlines] = [
        [Code(t.loose), " (%d kernels, not %d" % (t.loose_count, t.carriers),
         *([": exactly ", Code(t.exact), ")"] if t.exact else [")"])]
        for t in data.pattern_traps if t.kernel_type == kernel_type.class_name and t.segment == segment.label]
    if not items:
        return []
    lead = "Patterns that also match names without the token"
    # one is said in a line; several (bwd's pad: _ps in _psk, _pssk, ...) are folded
    return fold(["%s (%d)" % (lead, len(items))],
                [BulletList(items)] if len(items) > 1 else [Para([lead + ": ", *items[0], "."])],
                len(items), 1)
