"""The minimal set serves every size the whole set serves (a helper's review, 2026-12-04:
the set of 2.8.3 ``fwd_appendkv`` served no decode call, ``seqlen_q = 1``).

Independent oracle: generate.py writes the whole API (``-o``) and the test reads, with
the small reader of ``test_dispatch_reading``, the innermost condition under which each
kernel is called. The terms on sizes alone (``a.seqlen_q % 64 == 0``, ``a.seqlen_k != 0
|| ...``, ``a.hdim_q % 8 == 0``) are evaluated here in Python for a few sizes; other
terms (features, data type) are left out, so a kernel "serves" a size when its size
terms hold. For each data type and head dimension of the set, and each size that some
kernel of the whole set serves, some kernel of the set must serve it too.
"""

from __future__ import annotations

import itertools
import re
from typing import Dict, List, Mapping, Set

import pytest

from helpers.analysis_fixtures import cached_write, with_analysis_group
from helpers.dispatch_oracle import oracle_conditions

pytest_plugins = ["helpers.plugins_analysis"]

CASES = [("flash-attn-2.8.3", api)
         for api in ("fwd_appendkv", "pagedkv_prefill", "batch_prefill", "fwd_splitkv")]

_SIZES = ("seqlen_q", "seqlen_k", "hdim_q", "hdim_v")
_NAME = re.compile(r"\b(?:a|t)\.(\w+)")
_CLASS = re.compile(r"_d(\d+)_(fp16|bf16|fp8\w*?|bf8)_")


def size_terms(terms: List[str]) -> List[str]:
    """The terms that test sizes only, as Python (``||`` -> or, ``&&`` -> and)."""
    found = []
    for term in terms:
        names = set(_NAME.findall(term))
        if not names or not names <= set(_SIZES) or re.search(r"[A-Za-z_]\w*\(", term):
            continue
        python = _NAME.sub(r"\1", term).replace("||", " or ").replace("&&", " and ")
        python = python.replace("!=", "<>").replace("!", " not ").replace("<>", " != ")
        found.append(re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", python)))
    return found


def serves(terms: List[str], sizes: Mapping[str, int]) -> bool:
    return all(eval(term, {}, dict(sizes)) for term in terms)  # noqa: S307 - our own text


def served_sizes(kernels: Set[str], conditions: Mapping[str, List[str]], hdim: int
                 ) -> Set[tuple]:
    grid = itertools.product((1, 64, 100, 128, 1000), (0, 1, 100, 128, 1000))
    out = set()
    for seqlen_q, seqlen_k in grid:
        sizes = {"seqlen_q": seqlen_q, "seqlen_k": seqlen_k, "hdim_q": hdim, "hdim_v": hdim}
        if any(serves(conditions[k], sizes) for k in kernels if k in conditions):
            out.add((seqlen_q, seqlen_k))
    return out


@pytest.mark.corpus
@pytest.mark.parametrize("tree,api", with_analysis_group(CASES))
def test_the_set_serves_every_size_the_whole_set_does(analysis_sessions, corpus_root, tree,
                                                      api):
    out = cached_write(corpus_root(tree), api)
    conditions = {name: size_terms(terms) for name, terms in oracle_conditions(out).items()}
    assert conditions, "the reader found no kernel call"
    rec = analysis_sessions(tree).recommend(api)
    union: Set[str] = set()
    for run in rec.runs:
        listed = cached_write(corpus_root(tree), api, "-f", run.filter)
        union |= {p.name for p in listed.glob("*.cpp") if not p.name.endswith("_api.cpp")}
    by_class: Dict[tuple, Set[str]] = {}
    for name in conditions:
        match = _CLASS.search(name)
        if match:
            by_class.setdefault((int(match.group(1)), match.group(2)), set()).add(name)
    checked = 0
    for (hdim, dtype), names in sorted(by_class.items()):
        mine = names & union
        if not mine:
            continue  # a class the set does not keep at all is another test's concern
        whole, kept = served_sizes(names, conditions, hdim), served_sizes(mine, conditions, hdim)
        assert whole <= kept, (hdim, dtype, sorted(whole - kept)[:6])
        checked += 1
    assert checked, "no class of the whole set is in the minimal set"
