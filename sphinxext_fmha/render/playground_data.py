"""The data a filter playground embeds: the model's filter rules, the verified listing
parsed into tokens and (where whole traits drop) the trait groups; the browser
(``static/fmha-playground.js``) rebuilds the names and applies generate.py's rules.
Encoding ``v`` = 1, small for the largest API: a type's kernels are rows of token indices
(segments with several tokens, and the arch suffix when several), base 64 with as many
digits as each needs, sorted by file name, each row one digit of columns shared with the
row before then the rest; a trait is a row of kernel indices, an index past the kernels
naming an ``unlisted`` member."""

from __future__ import annotations

import itertools
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..model import ApiModel, FilterSpec
from .sections.filter import leading_literal

FORMAT = 1
#: Base-64 digits, in value order.
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"


def _width(count: int) -> int:
    return next(width for width in itertools.count(1) if count <= len(ALPHABET) ** width)


def _digits(value: int, width: int) -> str:
    return "".join(ALPHABET[value // len(ALPHABET) ** i % len(ALPHABET)] for i in reversed(range(width)))


def _pack_rows(rows: Sequence[Sequence[int]], widths: Sequence[int]) -> str:
    """Rows of small integers, prefix-shared with the row before (see the module doc)."""
    if len(widths) >= len(ALPHABET):
        raise ValueError("too many columns to pack: %d" % len(widths))
    out: List[str] = []
    previous: Sequence[int] = ()
    for row in rows:
        shared = next((i for i, (a, b) in enumerate(zip(row, previous)) if a != b),
                      min(len(row), len(previous)))
        out.append(ALPHABET[shared])
        out.extend(_digits(v, w) for v, w in zip(row[shared:], widths[shared:]))
        previous = row
    return "".join(out)


def _type_table(kernel_type, files: List[Tuple[str, List[str]]]) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """One kernel type's segments and packed rows; file name -> row index."""
    columns = []  # (segment index or -1 for the suffix, token list)
    segments = []
    for index, segment in enumerate(kernel_type.segments):
        tokens = list(dict.fromkeys([*segment.tokens, *(parsed[index] for _, parsed in files)]))
        segments.append({"label": segment.label, "tokens": tokens,
                         "meanings": [segment.tokens.get(t, "") for t in tokens],
                         "literal": bool(segment.literal)})
        if len(tokens) > 1:
            columns.append((index, tokens))
    suffixes = sorted({name[len("".join(parsed)):-len(".cpp")] for name, parsed in files})
    if len(suffixes) > 1:
        columns.append((-1, suffixes))
    ordered = sorted(files, key=lambda item: item[0])
    rows = [[tokens.index(name[len("".join(parsed)):-len(".cpp")] if index < 0 else parsed[index])
             for index, tokens in columns] for name, parsed in ordered]
    widths = [_width(len(tokens)) for _, tokens in columns]
    table = {"name": kernel_type.class_name, "segments": segments, "suffixes": suffixes or [""],
             "columns": [index for index, _ in columns], "widths": widths, "count": len(rows),
             "rows": _pack_rows(rows, widths)}
    return table, {name: i for i, (name, _) in enumerate(ordered)}


def playground_data(model: ApiModel, parsed: Dict[str, Tuple[str, List[str]]],
                    traits: Sequence[Sequence[Tuple[Optional[str], str]]],
                    command: Tuple[str, str],
                    followers: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """The JSON-able payload of one playground: ``parsed`` file -> (class, tokens);
    ``traits`` (``Session.trait_groups``) where whole traits drop; ``command`` before and
    after ``-f PATTERN``; ``followers`` (``Session.followers``)."""
    spec: FilterSpec = model.filter
    types = [k for k in model.kernel_types if any(c == k.class_name for c, _ in parsed.values())]
    type_index = {k.class_name: i for i, k in enumerate(types)}
    tables, rows_of = [], {}
    for kernel_type in types:
        files = [(f, tokens) for f, (c, tokens) in parsed.items() if c == kernel_type.class_name]
        table, row_of_file = _type_table(kernel_type, files)
        tables.append(table)
        rows_of.update({f: (type_index[kernel_type.class_name], r) for f, r in row_of_file.items()})

    def type_list(class_names: Sequence[str]) -> List[int]:
        return sorted(type_index[c] for c in class_names if c in type_index)

    data: Dict[str, Any] = {
        "v": FORMAT, "api": model.api, "total": len(rows_of), "command": list(command),
        "cliSplit": spec.cli_split, "apiSplit": spec.api_split,
        "parts": [{"position": p.position, "types": type_list(p.applies_to),
                   "missing": p.missing_becomes, "empty": p.empty_becomes} for p in spec.parts],
        "whenEmpty": ({str(type_index[c]): v for c, v in spec.when_empty.items() if c in type_index}
                      if spec.when_empty else None),
        "unfiltered": type_list(spec.unfiltered_types), "lowercase": spec.fnmatch_lowercases,
        "backslashes": spec.fnmatch_backslashes, "drops": spec.drops, "types": tables,
        "traits": None, "followers": None}
    if spec.drops == "trait" and traits:
        data["traits"] = _trait_table(traits, rows_of, tables)
    pairs = sorted(rows_of[f] + rows_of[leader] for f, leader in (followers or {}).items()
                   if f in rows_of and leader in rows_of)
    if pairs:
        # [follower type, follower row, leader type, leader row]
        widths = [_width(max(column) + 1) for column in zip(*pairs)]
        data["followers"] = {"widths": widths, "count": len(pairs),
                             "rows": _pack_rows(pairs, widths)}
    return data


def _trait_table(traits: Sequence[Sequence[Tuple[Optional[str], str]]],
                 rows_of: Dict[str, Tuple[int, int]],
                 tables: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The traits as rows of member indices.  A member that is not a listed kernel
    (the trait tests its name but does not write it) is a name of the type's
    ``unlisted`` list, numbered after the type's kernels."""
    complete = [[rows_of[f] for f, _ in t if f is not None and f in rows_of] for t in traits]
    complete = [t for t, trait in zip(complete, traits) if len(t) == len(trait)]
    if not complete:
        return None
    members = [member for member, _ in complete[0]]
    unlisted: Dict[int, Dict[str, int]] = {m: {} for m in members}
    rows = set()
    for trait in traits:
        if len(trait) != len(members):
            continue
        row = []
        for position, (filename, name) in enumerate(trait):
            member = members[position]
            if filename is not None and filename in rows_of and rows_of[filename][0] == member:
                row.append(rows_of[filename][1])
            else:
                names = unlisted[member]
                row.append(tables[member]["count"] + names.setdefault(name, len(names)))
        rows.add(tuple(row))
    for member, names in unlisted.items():
        tables[member]["unlisted"] = sorted(names, key=names.__getitem__)
    widths = [_width(tables[m]["count"] + len(unlisted[m])) for m in members]
    return {"members": members, "widths": widths, "count": len(rows),
            "rows": _pack_rows(sorted(rows), widths)}


def parts_explained(model: ApiModel) -> List[str]:
    """Plain sentences: how this API's ``-f`` value is cut into parts and applied."""
    spec = model.filter
    by_class = {k.class_name: k for k in model.kernel_types}

    def named(class_names: Sequence[str]) -> str:
        return ", ".join("%s (names %s)" % (c, leading_literal(by_class.get(c)))
                         if leading_literal(by_class.get(c)) else c for c in class_names)

    out: List[str] = []
    if spec.cli_split:
        out.append("The text before the first %r is this API's filter (generate.py gives "
                   "each API of -a its own %r-separated filter)." % (spec.cli_split, spec.cli_split))
    if spec.api_split and spec.parts:
        for part in spec.parts:
            rules = []
            if part.position > 0:
                rules.append("missing: " + _pattern_text(part.missing_becomes))
            rules.append("empty: " + _pattern_text(part.empty_becomes))
            ordinal = ("1st", "2nd", "3rd", "%dth" % (part.position + 1))[min(part.position, 3)]
            out.append("%s %r-separated part: %s; %s." % (
                ordinal, spec.api_split, named(part.applies_to), "; ".join(rules)))
        if spec.drops == "trait":
            out.append("The parts are tested trait by trait: a kernel is kept only when every "
                       "part of one of its traits matches.")
    elif spec.parts:
        out.append("One pattern for %s." % named([c for p in spec.parts for c in p.applies_to]))
    if spec.unfiltered_types:
        out.append("Never filtered: %s." % ", ".join(spec.unfiltered_types))
    for group in spec.followers:
        out.append("%d %s kernels are generated right after a %s kernel without a test of "
                   "their own names: each is kept exactly when that kernel is." % (
                       group.count, group.kernel_type, group.leader_type))
    out.append("Patterns are Python fnmatch patterns (*, ?, [seq], [!seq]), matched against "
               "the whole kernel name (the file name without %s.cpp)%s." % (
                   "its arch suffix and " if any(any(k.arch_suffixes) for k in model.kernel_types)
                   else "", "" if spec.fnmatch_lowercases else ", case-sensitively"))
    return out


def _pattern_text(pattern: Optional[str]) -> str:
    if pattern is None:
        return "not applied"
    if pattern == "":
        return "matches nothing"
    return "becomes %r" % pattern


def to_script_json(data: Dict[str, Any]) -> str:
    """Compact JSON that is safe inside ``<script type="application/json">``."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
