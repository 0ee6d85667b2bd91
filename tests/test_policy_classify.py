"""The policy's categories for segments shaped as real CK trees write them."""

from __future__ import annotations

import pytest

from sphinxext_fmha.model import Segment
from sphinxext_fmha.verify.policy import classify, padding_by_coverage
from sphinxext_fmha.verify.synthesis import Kernel


def _segment(field: str, tokens: dict) -> Segment:
    return Segment(
        label=field.split(".")[-1],
        fields=[field],
        tokens={token: token for token in tokens},
        values={token: [{field: value}] for token, value in tokens.items()},
    )


@pytest.mark.parametrize(
    "field, tokens, category",
    [
        # 2.8.3 fmha_fwd: '_skip' / '_nskip' from F_skip 't' / 'f', tested by the
        # dispatcher as t.skip_min_seqlen_q == {F_skip}: a call's feature
        ("F_pipeline.F_skip", {"_skip": "t", "_nskip": "f"}, "optional feature"),
        # newer fmha_bwd: '_trload' / '_ntrload' choose a faster pipeline for the same call
        ("F_pipeline.F_trload", {"_trload": "t", "_ntrload": "f"}, "tuning"),
        ("F_pipeline.F_dropout", {"_dropout": "t", "_ndropout": "f"}, "optional feature"),
        ("F_pipeline.F_spad", {"_ps": "t", "": "f"}, "padding"),
    ],
)
def test_classify(field, tokens, category):
    assert classify(_segment(field, tokens)) == category


def test_a_word_of_the_api_name_is_its_subject():
    segment = _segment("F_pagedkv", {"_pagedkv": "t", "_npagedkv": "f"})
    assert classify(segment, api="pagedkv_prefill") == "subject"
    assert classify(segment, api="fwd") == "optional feature"


# -- padding: the variants that between them serve every size ---------------------------

def _kernel(*tokens: str) -> Kernel:
    return Kernel(file="k" + "".join(tokens) + ".cpp", kernel_type="K",
                  name="k" + "".join(tokens), tokens=("k",) + tokens)


def test_a_padded_fallback_reached_for_every_size_replaces_the_aligned_variant():
    """2.8.3 fwd_appendkv: `_psk` is tried when seqlen_q % 64 == 0, `_psskddv` for any
    size: the fallback takes every input of the aligned one, not the reverse."""
    aligned, fallback = _kernel("_d128", "_psk"), _kernel("_d128", "_psskddv")
    conditions = {aligned.file: ["hdim_q <= 128", "seqlen_q % 64 == 0", "hdim_q % 128 == 0"],
                  fallback.file: ["hdim_q <= 128"]}
    ranks = padding_by_coverage([aligned, fallback], 2, [], {}, conditions, frozenset())
    assert ranks == {"_psk": 1, "_psskddv": 0}
    # a stand-in whose branches differ is never taken to serve: both stay
    assert padding_by_coverage([aligned, fallback], 2, [], {}, conditions,
                               frozenset({fallback.file})) == {"_psk": 0, "_psskddv": 0}
    # without the dispatch conditions nothing is established: both stay
    assert padding_by_coverage([aligned, fallback], 2, [], {}, {}, frozenset()) == \
        {"_psk": 0, "_psskddv": 0}


def test_variants_that_split_the_sizes_are_both_kept():
    """2.8.3 batch_prefill's async pipeline: the unpadded seqlen_k variant is reached
    when seqlen_k is a non-zero multiple of 128, the padded one otherwise."""
    aligned, padded = _kernel("_d128", "_psddv"), _kernel("_d128", "_psskddv")
    conditions = {aligned.file: ["seqlen_k != 0", "seqlen_k % 128 == 0", "hdim_q % 8 == 0"],
                  padded.file: ["seqlen_k == 0 or seqlen_k % 128 != 0", "hdim_q % 8 == 0"]}
    assert padding_by_coverage([aligned, padded], 2, [], {}, conditions, frozenset()) == \
        {"_psddv": 0, "_psskddv": 0}


def test_a_stronger_divisibility_is_served_by_a_weaker_one():
    """`hdim_q % 128 == 0` implies `hdim_q % 8 == 0`: the kernel reached for the weaker
    term takes every input of the stronger one (in another pipeline: a free segment)."""
    strict = _kernel("_d128", "_qr", "_npad")
    loose = _kernel("_d128", "_qr_async", "_pd")
    conditions = {strict.file: ["hdim_q % 128 == 0"], loose.file: ["hdim_q % 8 == 0"]}
    assert padding_by_coverage([strict, loose], 3, [2], {}, conditions, frozenset()) == \
        {"_npad": 1, "_pd": 0}
    # the pipeline is not free: each is alone in its context, both stay
    assert padding_by_coverage([strict, loose], 3, [], {}, conditions, frozenset()) == \
        {"_npad": 0, "_pd": 0}
