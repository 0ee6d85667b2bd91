"""Kernel sets for workloads, on every corpus tree (issue 43, items 2, 3, 4 and 8).

The workload is chosen here from the tree's own listing, read with this test's
regexes: the most common data type and the two most common head dimensions of the
main kernels (the prefix with the most names). Each command of its set is run by
generate.py (one plain interpreter, ``independent.independent_listings``) and its
names read with the same regexes: every needed value is there, no other value of a
named segment is, in any sub-type, and the set is smaller than the default minimal
set. The gloss of each command is read by ``gloss_oracle`` and checked on the names
that command selects; the build cost against the union's size.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import List, Set

import pytest

from sphinxext_fmha.locate import fmha_dir
from sphinxext_fmha.render.sections.gloss import gloss_text
from sphinxext_fmha.render.sections.reasons import coupling_sentence, set_notes

from helpers.analysis_fixtures import cached_listing, with_analysis_group
from helpers.gloss_oracle import check_claims, gloss_claims, gloss_parts
from helpers.independent import independent_listings
from helpers.names import DTYPE as _DTYPE
from helpers.names import HDIM as _HDIM
from helpers.names import carries as _carries
from helpers.names import prefix as _prefix
from helpers.trees import CORPUS

pytest_plugins = ["helpers.plugins_analysis"]

#: Every tree's fwd; and the trees' other filter semantics: whole traits dropped
#: (2.7.4's bwd), ``@`` parts whose kernels a dispatch call launches together (2.8.3's
#: split-KV and combine kernels).
CASES = [(tree.name, "fwd") for tree in CORPUS] + [
    ("flash-attn-2.7.4.post1", "bwd"), ("flash-attn-2.8.3", "fwd_splitkv")]
CASES = [case for case in CASES if case[0] in {tree.name for tree in CORPUS}]

def _read(regex: re.Pattern[str], name: str) -> str:
    match = regex.search(name)
    assert match, (regex.pattern, name)
    return match.group(1)


def _most_common(names: List[str], regex, count: int) -> List[str]:
    values = Counter(_read(regex, n) for n in names)
    return sorted(values, key=lambda v: (-values[v], v))[:count]


@pytest.mark.corpus
@pytest.mark.parametrize("tree,api", with_analysis_group(CASES))
def test_a_workload_set_has_exactly_the_needed_values(analysis_sessions, analysis_cache_dir,
                                                      tree, api, tmp_path):
    session = analysis_sessions(tree)
    root = session.ck_root
    full = cached_listing(analysis_cache_dir, fmha_dir(root), api, None).kernels
    main = Counter(_prefix(n) for n in full).most_common(1)[0][0]
    mains = [n for n in full if _prefix(n) == main]
    dtype = _most_common(mains, _DTYPE, 1)
    hdims = _most_common(mains, _HDIM, 2)
    needs = session.needs(api, ["dtype=" + dtype[0], "hdim=" + ",".join(hdims)])
    rec = session.recommend(api, needs=needs)
    assert rec.runs and rec.verified and rec.write_verified, rec.notes
    assert not rec.needs_unmet
    # every command, run by generate.py
    selections = independent_listings(root, api, tmp_path, [r.filter for r in rec.runs])
    assert all(s is not None for s in selections)
    union: Set[str] = set().union(*selections)
    assert len(union) == rec.union_count == rec.counts["total"]["minimal"]
    assert {_read(_DTYPE, n) for n in union if _prefix(n) == main} == set(dtype)
    assert {_read(_HDIM, n) for n in union if _prefix(n) == main} == set(hdims)
    # partners too: no other value of a named segment, in every sub-type -f filters
    # (old trees' bwd sub-kernels are generated whatever -f says: every run lists all of
    # them, and the page says so)
    for prefix in {_prefix(n) for n in union}:
        own = {n for n in full if _prefix(n) == prefix}
        if prefix != main and all(own <= selected for selected in selections):
            said = set_notes(rec) + [coupling_sentence(rec)]  # the coupling says it now
            assert any("not filtered by -f" in text for text in said), prefix
            continue
        for name in own & union:
            assert _read(_DTYPE, name) in dtype and _read(_HDIM, name) in hdims, name
    # smaller than the default minimal set (whose commands test_recommend_oracle runs)
    assert len(union) < session.recommend(api).union_count
    # the build cost is the union's, the full API's its listing's
    assert rec.build is not None and rec.build.kernel_files == len(union)
    assert rec.build.full_kernel_files == len(full)
    assert 0 < rec.build.source_bytes < rec.build.full_source_bytes
    # each command's gloss is true of the names it selects
    for run, selected in zip(rec.runs, selections):
        parts = gloss_parts(gloss_text(run.reading))
        for kernel_type, sentence in parts.items():
            prefixes = {_prefix(n) for n in full if n in selected}
            if kernel_type:  # one part of an @-split pattern: that sub-type's names
                prefixes = {p for p in prefixes if _type_of(rec, kernel_type, p, full, union)}
            else:  # the pattern filters the main kernels (others, if any, are not filtered)
                prefixes = {main}
            names = [n for n in selected if _prefix(n) in prefixes]
            everywhere = [n for n in full if _prefix(n) in prefixes]
            kept = [t for reading in run.reading for tokens in reading["kept"].values()
                    for t in tokens]
            if names:
                check_claims(gloss_claims(sentence), names, _carries, everywhere, kept)


def _type_of(rec, kernel_type: str, prefix: str, full: List[str], union: Set[str]) -> bool:
    """Whether the names of ``prefix`` are ``kernel_type``'s: the counts of the
    recommendation (full and in the set) are the prefix's."""
    counts = rec.counts.get(kernel_type, {})
    return (counts.get("full") == sum(1 for n in full if _prefix(n) == prefix)
            and counts.get("minimal") == sum(1 for n in union if _prefix(n) == prefix))
