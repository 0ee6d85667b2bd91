"""Which kernel of a dispatch call is its main one: one policy for the link check's
partner groups, the coupling a set keeps and the conditions that reach each kernel.

The dispatch file is written here: each call launches a combine kernel and a main
kernel, the combine trait listed FIRST, and ``t.has_lse`` picks the combine kernel. The
combine kind also has MORE kernel files (some no call launches), so neither "the first
trait" nor "the kind with the most files" names the main kernel; the main kernel is the
one each seqlen_k branch launches its own of. The expected values come from the
description below, never from the code under test."""

from __future__ import annotations

from typing import Dict, List, Tuple

from sphinxext_fmha.cppapi.link_check import compiled_together, partners
from sphinxext_fmha.cppapi.matching import match_leaves_to_kernels
from sphinxext_fmha.cppapi.parse import parse_dispatch
from sphinxext_fmha.cppapi.reach import kernel_reach
from sphinxext_fmha.verify.coupling import coupling_of

PADS = [("a.seqlen_k % 128 == 0", 128), ("a.seqlen_k % 64 == 0", 64), ("", 0)]
HDIMS = (64, 128)


def calls() -> List[Tuple[int, str, int, bool]]:
    """(hdim, pad condition, pad, lse) of each leaf, in file order."""
    return [(h, cond, pad, lse) for h in HDIMS for cond, pad in PADS for lse in (True, False)]


def main_file(hdim: int, pad: int) -> str:
    return "main_d%d_p%d.cpp" % (hdim, pad)


def combine_file(hdim: int, lse: bool) -> str:
    return "combine_d%d_%s.cpp" % (hdim, "lse" if lse else "nlse")


def api_file() -> str:
    body = ""
    for i, h in enumerate(HDIMS):
        inner = ""
        for j, (cond, pad) in enumerate(PADS):
            launch = "".join(
                "            %s {\n                using c_ = combine_traits_<%d, %s>;\n"
                "                using m_ = main_traits_<%d, %d>;\n"
                "                return launch_<c_, m_>(s, a);\n            }\n"
                % ("if (t.has_lse)" if lse else "else", h, str(lse).lower(), h, pad)
                for lse in (True, False))
            head = ("if (%s)" if j == 0 else "else if (%s)") % cond if cond else "else"
            inner += "        %s {\n%s        }\n" % (head, launch)
        body += "    %s (t.hdim_q <= %d) {\n%s    }\n" % ("if" if i == 0 else "else if", h, inner)
    return "float fmha_c(traits t, args a, const config& s) {\n%s    return -1;\n}\n" % body


def traits_of(text: str) -> Dict[str, str]:
    """kernel file -> trait key: the leaves' keys, named by the description; and combine
    kernels no call launches (the combine kind has the most files)."""
    found: Dict[str, str] = {}
    for leaf, (h, _, pad, lse) in zip(parse_dispatch(text).leaves, calls()):
        combine, main = leaf.keys
        found[combine_file(h, lse)] = combine
        found[main_file(h, pad)] = main
    for h in (32, 256):
        for lse in (True, False):
            found[combine_file(h, lse)] = "combine_traits_<%d,%s>" % (h, str(lse).lower())
    return found


def test_the_main_kernel_is_the_one_each_branch_launches_its_own_of():
    text = api_file()
    traits = traits_of(text)
    kind = {f: f.split("_")[0] for f in traits}
    assert sum(k == "combine" for k in kind.values()) > sum(k == "main" for k in kind.values())
    tree = parse_dispatch(text)
    match = match_leaves_to_kernels(tree, traits)
    assert not match.unmatched
    expected: Dict[str, set] = {}
    for h, _, pad, lse in calls():
        expected.setdefault(main_file(h, pad), set()).add(combine_file(h, lse))

    coupling = coupling_of(partners(text, traits), kind)
    assert coupling is not None and coupling.primary == "main"
    assert coupling.followers == ["combine"]
    assert coupling.partners == expected

    together = [{"files": sorted(combine_file(h, lse) for lse in (True, False)),
                 "mains": len(PADS), "main": min(main_file(h, pad) for _, pad in PADS)}
                for h in HDIMS]
    assert compiled_together(tree, match) == sorted(together, key=lambda e: e["files"])

    reach, choices = kernel_reach(tree, match)
    for main in expected:  # t.has_lse picks the combine kernel, not the main one
        terms = [t.cpp for t in reach[main].terms]
        assert not reach[main].varying and not any("has_lse" in t for t in terms), (main, terms)
    for h, _, _, lse in calls():
        terms = [t.cpp for t in reach[combine_file(h, lse)].terms]
        assert ("t.has_lse" if lse else "!(t.has_lse)") in terms, terms
    assert [(c.kept_kinds, c.chosen_kinds) for c in choices if c.condition == "t.has_lse"] == [
        ("main_traits_", "combine_traits_")]
