"""Each dropped variant opens with one plain sentence of at most 30 words (issue 43,
item 5), made from the loss's facts; the words are counted here."""

from __future__ import annotations

import itertools
import re

from sphinxext_fmha.model import Decision, Recommendation
from sphinxext_fmha.render.ir import text_of
from sphinxext_fmha.render.markdown import render_recommendation_markdown
from sphinxext_fmha.render.sections.loss_words import loss_lead


def _words(facts) -> str:
    return text_of(loss_lead(facts))


def test_the_outcomes_in_one_sentence_each():
    assert _words({"kernels": 1158, "no_kernel": 1158, "calls": [
        "bias_type == bias_enum::alibi"]}) == \
        "Calls with bias_type == bias_enum::alibi find no kernel (1158 kernels not generated)."
    assert _words({"kernels": 4, "served": 4, "served_by": [["_psskddv"]]}) == \
        "Calls these kernels served run the kept _psskddv variant instead (4 kernels not " \
        "generated)."
    assert _words({"kernels": 4, "served": 4, "served_by": [["_psddv", "_qr_async"],
                                                           ["_psskddv", "_qr_async"]]}) == \
        "Calls these kernels served run the kept variants _psddv, _qr_async; _psskddv, " \
        "_qr_async instead (4 kernels not generated)."
    assert _words({"kernels": 10, "no_kernel": 6, "served": 4, "calls": ["has_lse"]}) == \
        "Some calls with has_lse find no kernel (10 kernels not generated)."
    assert _words({"kernels": 64, "never": 64}) == \
        "No call loses them: the API never launches these 64 kernels."
    assert _words({"kernels": 384, "elsewhere": ["_bias", "_lse"]}) == \
        "Its 384 kernels are counted under the dropped _bias, _lse."
    assert _words({"kernels": 24, "of": 27, "follows": "FmhaFwdSplitKVKernel"}) == \
        "Nothing calls the 24 of its 27 kernels not generated: no kept " \
        "FmhaFwdSplitKVKernel kernel launches them."
    assert _words({"kernels": 768, "not_needed": True}) == \
        "The workload does not call it (768 kernels not generated)."


def test_never_more_than_thirty_words():
    long_terms = ["t.seqlen_q %% %d == 0 && t.seqlen_k %% %d == 0" % (n, n) for n in range(9)]
    kinds = ("no_kernel", "served", "partly", "unsettled", "unread", "never")
    for count in range(1, len(kinds) + 1):
        for chosen in itertools.combinations(kinds, count):
            facts = dict({kind: 3 for kind in chosen}, kernels=99, calls=long_terms,
                         served_by=[["_a", "_b", "_c", "_d", "_e"], ["_f"], ["_g"], ["_h"]],
                         elsewhere=["_x%d" % n for n in range(9)])
            sentence = _words(facts)
            assert len(sentence.split()) <= 30, sentence
            assert sentence.endswith(".") and "99 kernels" in sentence


def test_the_page_opens_each_variant_with_it_and_folds_the_rest():
    decision = Decision(kernel_type="ToyKernel", segment="bias", keep=["_nbias"],
                        drop=["_alibi"], category="optional feature",
                        loss_parts={"_alibi": {"kernels": 12, "more": 0, "elsewhere": [],
                                               "clauses": [{"kind": "no_kernel", "count": 12,
                                                            "terms": ["served inputs"]}]}},
                        loss_facts={"_alibi": {"kernels": 12, "no_kernel": 12,
                                               "calls": ["bias_type == alibi"]}})
    text = render_recommendation_markdown(Recommendation(api="toy", decisions=[decision]))
    lead = re.search(r"^- `_alibi` \(bias\): (.*)$", text, re.M)
    assert lead and lead.group(1) == ("Calls with `bias_type == alibi` find no kernel "
                                      "(12 kernels not generated).")
    folded = text.split("<details>", 1)[1]
    assert "12 ran calls (served inputs)" in folded
    assert "12 ran calls" not in text.split("<details>")[0]
