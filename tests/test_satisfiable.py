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
