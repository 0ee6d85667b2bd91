"""Facts about ``-f`` that take generate.py runs of their own (the filter mechanism
section): a filter keeping a kernel without its dispatch partners, and ``--targets``.
Pure: the caller makes the runs; here they are planned and read."""

from __future__ import annotations

import fnmatch
from collections import Counter
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ..cppapi.link_check import partners
from ..cppapi.matching import match_leaves_to_kernels
from ..cppapi.parse import parse_dispatch
from ..model import ApiModel, PartnerSubset, PartnerWrite, TargetListing, UnwrittenMember
from ..process.runner import ApiFileResult
from .boxes import escape
from .coupling import coupling_of
from .parsed_listing import ParsedListing

NOTHING = "fmha-selects-nothing"  # a filter part matching no kernel name


def partner_plan(model: ApiModel, baseline: ParsedListing,
                 full_api: Optional[ApiFileResult]) -> Optional[PartnerWrite]:
    """A filter keeping one main kernel and none of the filtered partners one dispatch
    call launches with it, and, where its partners are of other parts, one filter per
    partner keeping it alone with the main kernel (their runs not made yet); None unless
    kernels drop one by one and such a call exists. The main kernel: the first of those
    with the most filtered partners."""
    spec = model.filter
    if spec.drops != "kernel" or full_api is None or not spec.parts:
        return None
    type_of = {f: c for f, (c, _) in baseline.parsed.items()}
    coupling = coupling_of(partners(full_api.text, full_api.kernel_traits), type_of)
    position = {c: p.position for p in spec.parts for c in p.applies_to}
    if coupling is None or coupling.primary not in position:
        return None
    filtered = {f: sorted(p for p in coupling.partners[f] if type_of[p] in position)
                for f in sorted(coupling.partners)}
    main = max((f for f in filtered if filtered[f]), key=lambda f: len(filtered[f]), default=None)
    if main is None:
        return None

    def exact(filename: str) -> str:
        name = baseline.kernel_name(model, filename)
        assert fnmatch.fnmatchcase(name, escape(name))
        return escape(name)

    def parts(kept: Mapping[int, str]) -> str:
        """The ``-f`` value: each part the exact name of the kernel kept in it, or none."""
        if not spec.api_split:
            return kept[main_part]
        return spec.api_split.join(kept.get(p, NOTHING) for p in range(max(position.values()) + 1))

    main_part = position[coupling.primary]
    types = sorted({type_of[p] for p in filtered[main]} - {coupling.primary})
    write = PartnerWrite(filter=parts({main_part: exact(main)}), main_type=coupling.primary,
                         partner_types=types)
    if spec.api_split and len(filtered[main]) > 1 \
            and all(position[type_of[p]] != main_part for p in filtered[main]):
        write.subsets = [PartnerSubset(kept=baseline.kernel_name(model, p), filter=parts(
            {main_part: exact(main), position[type_of[p]]: exact(p)})) for p in filtered[main]]
    return write


def partner_write(plan: PartnerWrite, command: str, listed: int,
                  written: Optional[ApiFileResult], error: str) -> PartnerWrite:
    """The plan's runs, read: ``written`` (its write-mode output) or ``error``."""
    plan.command, plan.listed, plan.error = command, listed, error
    plan.unresolved = _unresolved(written)
    return plan


def subset_write(subset: PartnerSubset, command: str, written: Optional[ApiFileResult],
                 error: str) -> PartnerSubset:
    """A subset's write-mode run, read like :func:`partner_write`'s."""
    subset.command, subset.error, subset.unresolved = command, error, _unresolved(written)
    return subset


def _unresolved(written: Optional[ApiFileResult]) -> int:
    """Specialisations ``written``'s dispatch file instantiates and no kernel file defines."""
    if written is None:
        return 0
    match = match_leaves_to_kernels(parse_dispatch(written.text), written.kernel_traits)
    return len({key for _, key in match.unmatched})


def unwritten_members(model: ApiModel, groups: Sequence[Sequence[Tuple[Optional[str], str]]],
                      type_of: Mapping[str, str]) -> List[UnwrittenMember]:
    """Per member of the observed traits (``Session.trait_groups``: one fnmatch call per
    ``@`` part each) that some traits match and do not write: their count, one such
    name, and the trait's own kernel file (its member whose files differ most between
    those traits, e.g. a ``_maxq`` dq_dk_dv kernel rather than a shared dot_do_o one)."""
    position = {c: p.position for p in model.filter.parts for c in p.applies_to}
    found = []
    for index in range(len(groups[0]) if groups else 0):
        unwritten = [g for g in groups if g[index][0] is None]
        types = {type_of.get(str(g[index][0])) for g in groups if g[index][0] is not None}
        sub_type = types.pop() if len(types) == 1 else None
        if not unwritten or sub_type not in position:
            continue
        own = max((i for i, (file, _) in enumerate(unwritten[0]) if file is not None),
                  key=lambda i: (len({g[i][0] for g in unwritten}), -i))
        found.append(UnwrittenMember(position[str(sub_type)], str(sub_type), len(unwritten),
                                     unwritten[0][index][1], str(unwritten[0][own][0])))
    return found


def targets_to_measure(model: ApiModel, families: Sequence[str],
                       listed: Sequence[str]) -> List[str]:
    """The architecture families the codegen names whose kernels the guide's own
    listing has none of (by file name suffix): each gets a ``--targets`` run."""
    suffixes = _suffix_counts(model, families, listed)
    return [f for f in families if "_" + f not in suffixes]


def target_listing(model: ApiModel, families: Sequence[str], targets: str, command: str,
                   listed: Sequence[str], default: bool = False, mixed: bool = False
                   ) -> TargetListing:
    return TargetListing(targets=targets, command=command, count=len(listed),
                         by_suffix=_suffix_counts(model, families, listed), default=default,
                         mixed=mixed)


def _suffix_counts(model: ApiModel, families: Sequence[str],
                   listed: Sequence[str]) -> Dict[str, int]:
    """{arch suffix: kernel files}: the model's suffixes and ``_FAMILY`` of each family,
    the longest that ends the name."""
    known = {s for k in model.kernel_types for s in k.arch_suffixes if s}
    known |= {"_" + f for f in families}
    ordered = sorted(known, key=len, reverse=True)
    counts: Counter = Counter()
    for name in listed:
        counts[next((s for s in ordered if name.removesuffix(".cpp").endswith(s)), "")] += 1
    return dict(sorted(counts.items()))
