"""Section 3: how generate.py applies ``-f``."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ...guide_data import GuideData
from ...model import FilterSpec, KernelType, PartnerWrite, TargetListing, UnwrittenMember
from ..ir import Block, BulletList, Code, Emph, Inlines, Para, Strong, Table, codes, join
from .cells import plural, token_cell
from .filter_write import error_text


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
        # (not "one kernel of each sub-type": newer CK bwd's _maxq traits have no convert_dq)
        items.append(["Kernels generated together from one trait are kept or dropped together: "
                      "a trait is kept only if every part matches, so ",
                      Strong("one failed match drops the whole trait"), "."])
        for member in data.filter_facts.unwritten if data.filter_facts is not None else []:
            items.append(_unwritten_item(member))
    elif not spec.followers:
        items.append(["A kernel whose name does not match is ", Strong("dropped on its own"),
                      "; no other kernel is affected."])
    items.extend(_followers_items(spec, by_class))
    facts = data.filter_facts
    if facts is not None and facts.partner_write is not None:
        items.append(_partner_item(facts.partner_write, bool(spec.api_split)))
    if facts is not None and facts.targets:
        items.append(_targets_item(facts.targets))
    if spec.unfiltered_types:
        items.append(["Never filtered (always generated): ", *codes(spec.unfiltered_types), "."])
    items.append(_empty_filter_item(spec))
    if not spec.api_split and spec.parts:
        items.insert(1, ["The pattern is matched against the kernel names of ",
                         *codes([c for p in spec.parts for c in p.applies_to]), "."])
    blocks: List[Block] = [BulletList(items)]
    if spec.api_split and spec.parts:
        rows: List[List[Inlines]] = [
            [[str(p.position)], codes(p.applies_to), [Emph("(always present)")] if p.position == 0
             else [Code(p.missing_becomes)] if p.missing_becomes else ["not applied (no filtering)"]]
            for p in spec.parts]
        blocks.append(Table(header=["Part", "Applies to", "When missing"], rows=rows,
                            classes=["fmha-parts"]))
        if spec.api_split and len(spec.parts) > 1:
            example = spec.api_split.join(
                "<%s>" % "|".join(leading_literal(by_class.get(c)) or c for c in part.applies_to)
                for part in spec.parts)
            blocks.append(Para(["Shape of a filter: ", Code("-f '%s'" % example),
                                " where each ", Code("<...>"), " is a pattern for the names "
                                "that start with that text."]))
    if spec.source:
        blocks.append(Para(["Read from: ", *codes(spec.source), "."]))
    return blocks


def _followers_items(spec: FilterSpec, by_class: Dict[str, KernelType]) -> List[Inlines]:
    """Kernels generated with another one whose name ``-f`` tests in their stead."""
    items: List[Inlines] = []
    for group in spec.followers:
        total = by_class[group.kernel_type].count if group.kernel_type in by_class else 0
        same = group.kernel_type == group.leader_type
        follower: Inlines = [] if same else [Code(group.kernel_type), " "]
        item: Inlines = ["A ", Code(group.leader_type), " kernel whose name does not match is "
                         "dropped, and with it the ", *follower,
                         "kernel the codegen generates right after it without testing its own "
                         "name, where there is one: %d of the %d %skernels are generated that "
                         "way (" % (
                             group.count, total, "" if same else group.kernel_type + " "),
                         Code(group.example[1]), " comes and goes with ", Code(group.example[0]),
                         "). ", Strong("-f never sees their names"), ": a pattern keeps or "
                         "drops each with the kernel it follows"]
        if group.tokens:
            item += ["; a token only they carry cannot be selected: a pattern that requires "]
            item += join([[*codes(tokens, " or "), " (segment %s)" % label]
                          for label, tokens in group.tokens.items()], " or ")
            item += [" selects none of them"]
        items.append(item + ["."])
    return items


def _partner_item(write: PartnerWrite, split: bool) -> Inlines:
    """What a filter that keeps a kernel without its dispatch partners does, observed;
    and with one of its partners only, where that was written."""
    item: Inlines = [
        "Each part filters its own sub-types on its own" if split else
        "The pattern keeps or drops each kernel on its own", ", yet one dispatch call "
        "launches a ", Code(write.main_type), " kernel together with ",
        *codes(write.partner_types), " kernels (read from the API dispatch file), so a filter "
        "must keep them together. Observed with ", Code("-f '%s'" % write.filter), " (one ",
        Code(write.main_type), " kernel, none of its partners): ", Code("-l"), " lists %s, "
        "and write mode (" % plural(write.listed, "kernel"), Code("-o"), ") "]
    item += _written_outcome(write.error, write.unresolved) + ["."]
    if not write.subsets:
        return item
    item += [" The dispatch calls of that kernel name %d partner kernels, and every call is "
             "compiled, whichever one runs: a filter must keep all of them. Observed with the "
             "same kernel and one of them only: " % len(write.subsets)]
    runs: List[Inlines] = [[Code("-f '%s'" % s.filter), " (keeps ", Code(s.kept), "): write mode ",
                            *_written_outcome(s.error, s.unresolved)] for s in write.subsets]
    item += join(runs, "; ")
    return item + ["."]


def _written_outcome(error: str, unresolved: int) -> Inlines:
    """What one write-mode run did: failed, wrote a file that does not link, or linked."""
    if error:
        return [Strong("fails"), ": ", Code(error_text(error))]
    if unresolved:
        return ["writes a dispatch file that instantiates %s it does not generate: "
                % plural(unresolved, "kernel specialisation"),
                Strong("the build fails to link"), ", and generate.py does not say so"]
    return ["writes it, and its dispatch file links"]


def _targets_item(listings: List[TargetListing]) -> Inlines:
    """What ``--targets`` gives, measured: ``-f`` never sees an architecture."""
    suffixes = sorted({s for t in listings for s in t.by_suffix if s})
    if suffixes:
        item: Inlines = [Code("-f"), " cannot choose an architecture: the arch suffix that ends "
                         "a file name (", *codes(suffixes), ") is not part of the kernel name "
                         "the patterns are matched against. ", Code("--targets"), " chooses it"]
    else:
        item = [Code("-f"), " cannot choose an architecture (the kernel names do not say it); ",
                Code("--targets"), " does"]
    item.append(" (counted in generate.py's listings): ")
    single = [t for t in listings if not t.mixed]
    item += join([_listed(t) for t in single], "; ") + ["."]
    empty = [t.targets for t in single if not t.count and not t.default and not t.refused]
    if empty:
        named = codes(empty[:-1]) + ([" or "] if len(empty) > 1 else [])
        item += [" With ", Code("--targets"), " ", *named, Code(empty[-1]),
                 ", this codegen generates no kernel of this API."]
    mixed = [t for t in listings if t.mixed]
    if mixed:
        item += [" Each added to this guide's targets: "] + join([_listed(t) for t in mixed],
                                                               "; ")
        if not any(t.count for t in mixed) and any(t.count for t in single if t.default):
            item += [": a list of targets that names one of them gets ", Strong("no"),
                     " kernel of this API, not even for this guide's targets"]
        item.append(".")
    return item


def _listed(listing: TargetListing) -> Inlines:
    """``--targets X``: its kernels per arch suffix, or **0** kernels."""
    head: Inlines = (["this guide's listing (", Code("--targets %s" % listing.targets), ")"]
                     if listing.default else [Code("--targets %s" % listing.targets)])
    if listing.refused:
        return head + [": generate.py refuses it for this API (", Code(listing.refused), ")"]
    with_suffix = [(s, n) for s, n in listing.by_suffix.items() if s]
    if listing.count and with_suffix:
        return head + [": "] + join([[str(n), " ", Code(s)] for s, n in with_suffix],
                                    " and ") + [" kernels"]
    return head + [": "] + ([Strong("0")] if not listing.count else [str(listing.count)]) \
        + [" kernels"]


def follower_tokens_note(spec: FilterSpec, kernel_type: str, label: str) -> List[Block]:
    """Under a segment of the field reference: its tokens that only kernels generated
    with another one carry, which ``-f`` never sees."""
    tokens = [t for group in spec.followers if group.kernel_type == kernel_type
              for t in group.tokens.get(label, [])]
    if not tokens:
        return []
    return [Para(["Not selectable: ", *codes(tokens), " is only in the names of kernels "
                  "generated with another kernel, whose name ", Code("-f"), " tests instead "
                  "(see the filter mechanism); a pattern that requires it selects none of "
                  "them."])]


def _unwritten_item(member: UnwrittenMember) -> Inlines:
    """Traits that match a part's pattern against a kernel they do not write."""
    return ["Part %d also decides the %s that write no " % (member.part, plural(
        member.traits, "trait")), Code(member.sub_type), " kernel (such as the trait of ",
            Code(member.written), "): generate.py matches it against the name that kernel "
            "would have (",
            Code(member.name), "), which no listing shows."]


def compiled_together_note(data: GuideData, class_name: str, index: int) -> List[Block]:
    """Under a segment of the field reference: its tokens that one main kernel's dispatch
    calls name together (a condition picks one per call; all are compiled)."""
    together = (data.dispatch_reading or {}).get("together") or []
    if not together or data.token_dispatch is None:
        return []
    groups = data.token_dispatch.groups
    token_of = {f: token for token, found in groups.get((class_name, index), {}).items()
                for group in found for f in group.files}
    tokens: Dict[Tuple[str, ...], None] = {}  # the tokens of each group, once
    mains = 0
    main_type = ""
    for entry in together:
        named = {token_of.get(f) for f in entry["files"]}
        if None in named or len(named) < 2:
            continue
        tokens[tuple(sorted(t for t in named if t is not None))] = None
        mains += entry["mains"]
        main_type = main_type or next((c for (c, _), found in groups.items() for group in
                                       (g for gs in found.values() for g in gs)
                                       if entry["main"] in group.files), "")
    if not mains:
        return []
    main: Inlines = [Code(main_type), " "] if main_type else []
    return [Para([Strong("Kept together:"), " the dispatch calls of each of %d " % mains,
                  *main, "kernels name several of "
                  "these kernels that differ here (", *join(
                      [join([token_cell(t) for t in group], " and ") for group in tokens],
                      ", or "),
                  "). A condition "
                  "picks one per call, yet every call is compiled: a set that keeps such a "
                  "kernel must keep all of them, or it does not link (see the filter "
                  "mechanism)."])]


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


def leading_literal(kernel_type: Optional[KernelType]) -> str:
    """``fmha_fwd*`` where the names of ``kernel_type`` start with one literal text."""
    if kernel_type and kernel_type.segments and kernel_type.segments[0].literal \
            and len(kernel_type.segments[0].tokens) == 1:
        return next(iter(kernel_type.segments[0].tokens)) + "*"
    return ""
