"""The policy's categories for segments shaped as real CK trees write them."""

from __future__ import annotations

import pytest

from sphinxext_fmha.model import Segment
from sphinxext_fmha.verify.policy import classify


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
