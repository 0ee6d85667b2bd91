"""Which conjunctions of dispatch terms hold for no call: each case worked out here."""

from __future__ import annotations

import pytest

from sphinxext_fmha.cppapi.satisfiable import never_holds


@pytest.mark.parametrize("terms, why", [
    (["hdim_q <= 96", "hdim_v <= 96", "hdim_q % 128 == 0"],
     "hdim_q <= 96 and hdim_q % 128 == 0 hold only for hdim_q = 0"),
    (["seqlen_q <= 64", "seqlen_q > 64"], "seqlen_q <= 64 and seqlen_q > 64 hold for no value"),
    (["never", "has_lse"], "its condition has the literal term `false`"),
    (["seqlen_k % 64 == 0", "seqlen_k % 64 != 0"],
     "seqlen_k % 64 == 0 and seqlen_k % 64 != 0 hold for no value"),
])
def test_impossible(terms, why):
    assert never_holds(terms) == why


@pytest.mark.parametrize("terms", [
    ["hdim_q <= 128", "hdim_q % 128 == 0"],            # 128
    ["seqlen_k != 0", "seqlen_k % 64 == 0"],           # 64
    ["hdim_q <= 96", "hdim_q % 8 == 0", "hdim_q % 128 != 0"],  # 8
    ["seqlen_k == 0 or seqlen_k % 64 != 0", "hdim_q <= 64"],   # '||' is not read
    ["hdim_q % 128 == 0"],                             # one term bounds nothing
    ["seqlen_q <= 64", "seqlen_k > 64"],               # two names
])
def test_possible(terms):
    assert never_holds(terms) is None


def test_a_branch_an_earlier_one_always_takes_is_never_tried():
    """Newer CK's bwd on gfx950 tries ``hdim_q <= 64`` before ``hdim_q <= 32``: no call
    reaches the d32 branch of that else-if chain."""
    from sphinxext_fmha.cppapi.satisfiable import IfElseChain

    chain = IfElseChain()
    assert chain.add("hdim_q <= 64", ["hdim_q <= 64", "hdim_v <= 64"]) is None
    assert chain.add("hdim_q <= 128", ["hdim_q <= 128", "hdim_v <= 128"]) is None
    why = chain.add("hdim_q <= 32", ["hdim_q <= 32", "hdim_v <= 32"])
    assert why and "`hdim_q <= 64`" in why and "`hdim_q <= 32`" in why
    assert chain.add("hdim_q <= 256", ["hdim_q <= 256", "hdim_v <= 256"]) is None
    # other terms must be the same: a later branch with another feature is tried
    features = IfElseChain()
    assert features.add("lse", ["has_lse", "seqlen_k % 64 == 0"]) is None
    assert features.add("no lse", ["not has_lse", "seqlen_k % 128 == 0"]) is None
    assert features.add("lse, aligned", ["has_lse", "seqlen_k % 128 == 0"])  # behind "lse"
    assert features.add("lse, any", ["has_lse"]) is None  # admits seqlen_k = 1
    # an earlier branch with fewer other terms takes the calls of one with more
    assert features.add("lse, dropout", ["has_lse", "has_dropout", "seqlen_k % 128 == 0"])
    assert features.add("dropout", ["has_dropout", "seqlen_k % 128 == 0"]) is None
    # an earlier branch with no terms takes every call
    always = IfElseChain()
    assert always.add("true", []) is None
    assert always.add("x", ["has_dropout"])


def test_a_never_tried_branch_is_said_short_when_its_condition_is_long():
    """Conditions too long to quote are not quoted: one reason is shared by all the
    kernels of such branches, and 'the same condition' is said only when the two
    branches test the same terms (in another order too)."""
    from sphinxext_fmha.cppapi.satisfiable import IfElseChain

    features = ["t.has_lse == %s" % flag for flag in ("true",)] + [
        "(t.bias_type == bias_enum::no_bias)", "(t.has_dropout == false)",
        "(t.mask_type == mask_enum::no_mask)", "(t.is_group_mode == false)"]
    readable = ["has_lse", "bias_type == bias_enum::no_bias", "not has_dropout",
                "mask_type == mask_enum::no_mask", "not is_group_mode"]
    asked = []

    def said(condition: str) -> str:
        asked.append(condition)
        return condition

    chain = IfElseChain()
    assert chain.add(" && ".join(features), readable, said) is None
    same = chain.add(" && ".join(reversed(features)), list(reversed(readable)), said)
    assert same == "an earlier branch of its if-else chain has the same condition"
    more = chain.add(" && ".join(features + ["a.seqlen_k % 8 == 0"]),
                     readable + ["seqlen_k % 8 == 0"], said)
    assert more is not None and "tests fewer of the same terms" in more
    assert "`" not in more
    assert asked == []  # too long to quote: never put in words
