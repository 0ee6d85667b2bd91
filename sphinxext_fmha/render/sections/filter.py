"""Section 3: how generate.py applies ``-f``."""

from __future__ import annotations

from typing import Dict, List, Optional

from ...guide_data import GuideData
from ...model import (
    FilterSpec,
    KernelType,
)
from ..ir import (
    Block,
    BulletList,
    Code,
    Emph,
    Inlines,
    Para,
    Strong,
    Table,
    codes,
)
from .common import plural


def filter_section(data: GuideData) -> List[Block]:
    model = data.model
    spec = model.filter
    by_class = {k.class_name: k for k in model.kernel_types}
    items: List[Inlines] = []
    if spec.cli_split:
        items.append(["generate.py splits the ", Code("-f"), " value on ", Code(spec.cli_split),
                      " into one filter per API named in ", Code("-a"), " (same order); with ",
                      Code("-a %s" % model.api), " alone, this API's filter is the text before "
                      "the first ", Code(spec.cli_split), "."])
    else:
        items.append(["generate.py passes the whole ", Code("-f"), " value to every API named "
                      "in ", Code("-a"), " (it is not split per API)."])
    if spec.api_split:
        items.append(["Within this API's filter, ", Code(spec.api_split), " separates %s, "
                      "each matched against the kernel names of its own sub-types (see below)."
                      % plural(len(spec.parts), "part")])
    items.append(["Patterns are shell-style wildcards (Python ", Code("fnmatch"),
                  ": ", Code("*"), ", ", Code("?"), ", ", Code("[seq]"), ") matched against the "
                  "whole kernel name, so a pattern usually starts and ends with ", Code("*"), "."])
    if spec.drops == "trait":
        items.append(["Kernels generated together from one trait (one kernel of each filtered "
                      "sub-type) are kept or dropped together: a trait is kept only if every "
                      "part matches its kernel, so ", Strong("one failed match drops the whole "
                                                            "trait"), "."])
    else:
        items.append(["A kernel whose name does not match is ", Strong("dropped on its own"),
                      "; no other kernel is affected."])
    if spec.unfiltered_types:
        items.append(["Never filtered (always generated): ", *codes(spec.unfiltered_types), "."])
    items.append(_empty_filter_item(spec))
    if not spec.api_split and spec.parts:
        items.insert(1, ["The pattern is matched against the kernel names of ",
                         *codes([c for p in spec.parts for c in p.applies_to]), "."])
    blocks: List[Block] = [BulletList(items)]
    if spec.api_split and spec.parts:
        rows: List[List[Inlines]] = []
        for part in spec.parts:
            classes = part.applies_to
            if part.position == 0:
                missing: Inlines = [Emph("(always present)")]
            elif part.missing_becomes is None or part.missing_becomes == "":
                missing = ["not applied (no filtering)"]
            else:
                missing = [Code(part.missing_becomes)]
            rows.append([[str(part.position)], codes(classes), missing])
        blocks.append(Table(header=["Part", "Applies to", "When missing"], rows=rows,
                            classes=["fmha-parts"]))
        if spec.api_split and len(spec.parts) > 1:
            example = spec.api_split.join(
                "<%s>" % "|".join(_leading_literal(by_class.get(c)) or c for c in part.applies_to)
                for part in spec.parts)
            blocks.append(Para(["Shape of a filter: ", Code("-f '%s'" % example),
                                " where each ", Code("<...>"), " is a pattern for the names "
                                "that start with that text."]))
    if spec.source:
        blocks.append(Para(["Read from: ", *codes(spec.source), "."]))
    return blocks


def _empty_filter_item(spec: FilterSpec) -> Inlines:
    """What no ``-f`` and an empty ``-f ''`` do, from the patterns the probe saw reach
    fnmatch (an empty pattern matches no name: older trees test ``!= None``)."""
    item: Inlines = ["Without ", Code("-f"), " every kernel is generated."]
    if not spec.when_empty:
        return item + [" What an empty ", Code("-f ''"), " does was not observed."]
    by_pattern: Dict[Optional[str], List[str]] = {}
    for class_name, pattern in sorted(spec.when_empty.items()):
        by_pattern.setdefault(pattern, []).append(class_name)
    if set(by_pattern) <= {None, "*"}:
        return ["Without ", Code("-f"), ", or with an empty one (", Code("-f ''"),
                "), every kernel is generated."]
    for pattern, classes in sorted(by_pattern.items(), key=lambda kv: kv[0] or ""):
        item += [" With an empty ", Code("-f ''"), ", "]
        if pattern is None:
            item += [*codes(classes), " are not filtered."]
        elif pattern == "":
            item += ["the empty pattern reaches fnmatch and matches no name: ",
                     Strong("no"), " ", *codes(classes), " kernel is generated."]
        else:
            item += [*codes(classes), " are matched against ", Code(pattern), "."]
    return item


def _leading_literal(kernel_type: Optional[KernelType]) -> str:
    if kernel_type and kernel_type.segments and kernel_type.segments[0].literal:
        tokens = list(kernel_type.segments[0].tokens)
        if len(tokens) == 1:
            return tokens[0] + "*"
    return ""
