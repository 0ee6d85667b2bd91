"""Filter synthesis on small listings written here, one per filter semantics (issue 9,
item 4): every set of runs is checked with :mod:`fnmatch` by a small simulation of
the semantics written in this file, and the run count is compared with a minimum
proven in the comments (for every fnmatch pattern, negated classes included).

The proofs use one lemma. XOR: a pattern that matches ``k_a_b`` and ``k_b_a`` also
matches ``k_a_a`` or ``k_b_b``. The names have one length, so when the pattern has
no ``*`` each of its pieces matches one character: the pieces at the two varying
places hold both ``a`` and ``b``, and the pattern matches all four names. With a
``*``, it has at most four one-character pieces; the pieces that match the varying
characters of ``k_a_b`` (or the ``*`` that swallows them) match ``a`` there, and those
of ``k_b_a`` match ``b``: a piece matching a varying character in both names holds
``a`` and ``b``, and a ``*`` swallowing one swallows it in every name; so one of
``k_a_a`` and ``k_b_b`` is matched piece for piece as well.
"""

from __future__ import annotations

import fnmatch
import itertools
from types import SimpleNamespace
from typing import Dict, List, Sequence, Set, Tuple

from sphinxext_fmha.model import FilterPart, FilterSpec
from sphinxext_fmha.verify.synthesis import Kernel, synthesize


def listing(kind: str, *segments: Sequence[str]) -> List[Kernel]:
    """Every combination of the segment values, as kernels of sub-type ``kind``."""
    out = []
    for tokens in itertools.product([kind], *segments):
        name = "".join(tokens)
        out.append(Kernel(file=name + ".cpp", kernel_type=kind, name=name, tokens=tokens))
    return out


def model(parts: Dict[int, List[str]], split: str = "", drops: str = "kernel"):
    spec = FilterSpec(api_split=split or None, drops=drops,
                      parts=[FilterPart(position=p, applies_to=t) for p, t in parts.items()])
    return SimpleNamespace(filter=spec)


def names(kernels: Sequence[Kernel], chosen: Set[str]) -> Set[str]:
    return {k.name for k in kernels if k.file in chosen}


def files(kernels: Sequence[Kernel], predicate) -> Set[str]:
    return {k.file for k in kernels if predicate(k.name)}


# -- the semantics, simulated with fnmatch --------------------------------------------

def one_pattern(kernels: Sequence[Kernel], filters: Sequence[str]) -> Set[str]:
    return {k.file for k in kernels for f in filters if fnmatch.fnmatchcase(k.name, f)}


def independent_parts(kernels: Sequence[Kernel], parts: Dict[int, List[str]],
                      text: str) -> Set[str]:
    """One run: part i filters its own sub-types (a missing or empty part: no filter)."""
    fields = text.split("@")
    chosen = set()
    for position, types in parts.items():
        pattern = fields[position] if position < len(fields) else ""
        chosen |= {k.file for k in kernels if k.kernel_type in types
                   and (not pattern or fnmatch.fnmatchcase(k.name, pattern))}
    return chosen


def trait_parts(traits: Sequence[Tuple[Kernel, ...]], text: str) -> Set[str]:
    """One run: a trait is kept when part i matches its i-th kernel, for every i."""
    fields = text.split("@")
    return {k.file for trait in traits
            if all(fnmatch.fnmatchcase(k.name, fields[i] if i < len(fields) else "*")
                   for i, k in enumerate(trait))
            for k in trait}


# -- one pattern for every sub-type ---------------------------------------------------

def test_one_pattern_serves_every_sub_type():
    kernels = (listing("k", ["_d64", "_d128"], ["_fp16", "_bf16"], ["_pad", "_npad"],
                       ["_mask", "_nmask"])
               + listing("c", ["_d64", "_d128"], ["_pad", "_npad"]))
    wanted = files(kernels, lambda n: "_npad" in n)
    result = synthesize(model({0: ["k", "c"]}), kernels, wanted)
    assert one_pattern(kernels, result.filters) == wanted
    # One run is the fewest there can be; it covers both sub-types.
    assert len(result.filters) == 1


def test_a_token_glob_selects_part_of_a_segment():
    """{_d32, _d64, _d128, _d256} but not {_d96, _d160}: no segment-level pattern does
    it in one run, a glob inside the token does."""
    kernels = listing("k", ["_d32", "_d64", "_d96", "_d128", "_d160", "_d256"],
                      ["_fp16", "_bf16"], ["_batch"])
    wanted = files(kernels, lambda n: not ("_d96_" in n or "_d160_" in n))
    result = synthesize(model({0: ["k"]}), kernels, wanted)
    assert one_pattern(kernels, result.filters) == wanted
    assert len(result.filters) == 1


def test_xor_needs_two_runs():
    kernels = listing("k", ["_a", "_b"], ["_a", "_b"])
    wanted = files(kernels, lambda n: n in ("k_a_b", "k_b_a"))
    result = synthesize(model({0: ["k"]}), kernels, wanted)
    assert one_pattern(kernels, result.filters) == wanted
    # XOR: no one pattern selects both without k_a_a or k_b_b.
    assert len(result.filters) == 2


# -- names that omit absent features --------------------------------------------------

def test_absent_features_by_adjacency():
    """``k_v`` and ``k_v_mask`` without ``k_v_bias`` and ``k_v_bias_mask``: two runs.

    Fewer is impossible. A pattern P matching ``k_v`` has three one-character pieces
    and ``*``s. If a ``*`` ends P, P matches ``k_v_bias``. Otherwise P = X p, p matching
    ``v`` and ``k``, X matching ``k_`` and ``k_v_mas``. X = s0 p1 s1 p2 s2 (s: optional
    ``*``; p1, p2 match ``k``, ``_``). With s2, X matches ``k_v_bias_mas`` (p1 p2 on
    ``k_``, s2 the rest); without s2, p2 matches ``s`` too and s0 p1 s1 matches ``k`` and
    ``k_v_ma``: with s1, p1 on ``k`` and s1 the rest of ``k_v_bias_ma``; without, s0 is
    there and p1 matches ``a``, so s0 p1 matches ``k_v_bias_ma``. In every case P
    matches ``k_v_bias_mask``."""
    kernels = listing("k", ["_v"], ["", "_bias"], ["", "_mask"])
    wanted = files(kernels, lambda n: "_bias" not in n)
    result = synthesize(model({0: ["k"]}), kernels, wanted)
    assert one_pattern(kernels, result.filters) == wanted
    assert len(result.filters) == 2


def test_absent_features_with_more_values():
    kernels = listing("k", ["_d64", "_d128"], ["_vc", "_vr"], ["", "_ps", "_psk"],
                      ["", "_bias", "_alibi"], ["", "_mask"], ["", "_dropout"])
    wanted = files(kernels, lambda n: not any(t in n for t in ("_bias", "_alibi", "_dropout")))
    result = synthesize(model({0: ["k"]}), kernels, wanted)
    assert one_pattern(kernels, result.filters) == wanted
    # Here one pattern on how names end does it (the last characters before the end
    # tell a kept name from a dropped one whichever feature comes last).
    assert len(result.filters) == 1


# -- '@' parts filtered independently --------------------------------------------------

def test_independent_parts_are_zipped():
    """The runs are the longest part's list, not the product of the lists."""
    parts = {0: ["c"], 1: ["k"]}
    kernels = (listing("c", ["_d64", "_d128", "_d256"], ["_lse", "_nlse"])
               + listing("k", ["_a", "_b"], ["_a", "_b"], ["_x", "_y"]))
    wanted = (files(kernels, lambda n: n.startswith("c_") and "_d256" not in n)
              | files(kernels, lambda n: n.startswith("k_a_b") or n.startswith("k_b_a")))
    result = synthesize(model(parts, "@"), kernels, wanted)
    chosen = set().union(*(independent_parts(kernels, parts, f) for f in result.filters))
    assert chosen == wanted
    # Each run has one k pattern and XOR needs two (the _x/_y segment is free):
    # two runs, though the c part alone needs one.
    assert len(result.filters) == 2


# -- '@' parts that drop whole traits -------------------------------------------------

def test_trait_dropping_parts_count_the_main_patterns():
    main = listing("m", ["_a", "_b"], ["_a", "_b"])
    follower = listing("f", ["_a", "_b"])
    by_name = {k.name: k for k in main + follower}
    traits = [(m, by_name["f" + m.tokens[1]]) for m in main]
    kept = [t for t in traits if t[0].name in ("m_a_b", "m_b_a")]
    wanted = {k.file for t in kept for k in t}
    result = synthesize(model({0: ["m"], 1: ["f"]}, "@", drops="trait"), main + follower,
                        wanted, primary="m")
    chosen = set().union(*(trait_parts(traits, f) for f in result.filters))
    assert chosen == wanted
    # Each run keeps the traits its main pattern matches (XOR: two runs at least).
    assert len(result.filters) == 2


# -- coupled parts: each run selects the partners of its own main kernels -------------

def _coupled(kernels: Sequence[Kernel], wanted: Set[str], parts: Dict[int, List[str]],
             partners: Dict[str, Set[str]]) -> List[str]:
    result = synthesize(model(parts, "@"), kernels, wanted, primary="m", partners=partners)
    chosen: Set[str] = set()
    for text in result.filters:
        run = independent_parts(kernels, parts, text)
        for main in (f for f in run if f.startswith("m_")):
            assert partners[main] <= run, (text, main)  # write mode would refuse it
        chosen |= run
    assert chosen == wanted
    return result.filters


def test_coupled_parts_share_one_follower_pattern():
    parts = {0: ["c"], 1: ["m"]}
    main = listing("m", ["_a", "_b", "_c"], ["_x", "_y"], ["_lse", "_nlse"])
    combine = listing("c", ["_a", "_b", "_c"], ["_lse", "_nlse"])
    partners = {m.file: {"c%s%s.cpp" % (m.tokens[1], m.tokens[3])} for m in main}
    wanted_main = files(main, lambda n: n[1:3] in ("_a", "_b") and "_x" in n)
    wanted = wanted_main | {p for f in wanted_main for p in partners[f]}
    # One run: one pattern per part selects exactly the wanted kernels of that part.
    assert len(_coupled(main + combine, wanted, parts, partners)) == 1


def test_coupled_parts_split_by_partner():
    """Main kernels m_a_b_* and m_b_a_*, partners c_a_b and c_b_a: XOR in both parts,
    so two runs, each with the partners of its own main kernels."""
    parts = {0: ["c"], 1: ["m"]}
    main = listing("m", ["_a", "_b"], ["_a", "_b"], ["_x", "_y"])
    combine = listing("c", ["_a", "_b"], ["_a", "_b"])
    partners = {m.file: {"c%s%s.cpp" % (m.tokens[1], m.tokens[2])} for m in main}
    wanted_main = files(main, lambda n: n[1:5] in ("_a_b", "_b_a"))
    wanted = wanted_main | {p for f in wanted_main for p in partners[f]}
    assert len(_coupled(main + combine, wanted, parts, partners)) == 2
