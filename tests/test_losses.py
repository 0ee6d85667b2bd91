"""What the minimal set loses, on hand-made kernels and dispatch conditions: each
expectation is written out here, from what the conditions say."""

from __future__ import annotations

from sphinxext_fmha.model import Decision
from sphinxext_fmha.verify.losses import describe_losses
from sphinxext_fmha.verify.standins import relation as _relation
from sphinxext_fmha.verify.synthesis import Kernel

LABELS = {"K": ["lit", "hdim", "mask", "pad", "trload"]}
CATEGORIES = {("K", "lit"): "other", ("K", "hdim"): "problem", ("K", "mask"): "mask",
              ("K", "pad"): "padding", ("K", "trload"): "tuning"}


def _kernel(*tokens: str) -> Kernel:
    return Kernel(file="k" + "".join(tokens) + ".cpp", kernel_type="K",
                  name="k" + "".join(tokens), tokens=("k",) + tokens)


def test_terms_on_one_subject_admit_imply_or_exclude():
    top = "mask_type == top_left or mask_type == bottom_right"
    assert _relation(top, "mask_type != no_mask") == "implied"
    assert _relation(top, "mask_type == top_left") == "admits"
    assert _relation(top, "mask_type == no_mask") == "excludes"
    assert _relation("mask_type != no_mask", "mask_type == top_left") == "admits"
    assert _relation("mask_type != no_mask", "mask_type == no_mask") == "excludes"
    assert _relation("seqlen_k % 64 == 0", "seqlen_k % 64 != 0") == "excludes"
    # sizes compare as numbers (0 is a size: a remainder test admits a non-zero one)
    assert _relation("hdim_q <= 64", "hdim_q <= 128") == "implied"
    assert _relation("hdim_q % 128 == 0", "hdim_q % 8 == 0") == "implied"
    assert _relation("seqlen_k % 128 == 0", "seqlen_k != 0") == "admits"
    assert _relation("hdim_q <= 64", "hdim_q % 128 == 0") == "admits"
    assert _relation("seqlen_q <= 64", "seqlen_q > 64") == "excludes"


def _losses(conditions):
    kept_kernels = [_kernel("_d64", "_nmask", "_psddv", "_ntrload"),
                    _kernel("_d64", "_mask", "_psddv", "_ntrload"),
                    _kernel("_d128", "_mask", "_npad", "_ntrload")]
    kept = {k.file for k in kept_kernels}
    kernels = kept_kernels + [_kernel("_d64", "_mc", "_npad", "_ntrload"),
                              _kernel("_d64", "_nmask", "_npad", "_trload")]
    decisions = [Decision(kernel_type="K", segment="mask", category="mask",
                          keep=["_mask", "_nmask"], drop=["_mc"]),
                 Decision(kernel_type="K", segment="trload", category="tuning",
                          keep=["_ntrload"], drop=["_trload"])]
    describe_losses(decisions, kernels, kept, CATEGORIES, conditions, LABELS, {})
    return decisions[0].losses["_mc"], decisions[1].losses["_trload"]


def test_a_kept_kernel_further_away_that_admits_the_inputs_serves_them():
    """No kept d64 kernel differs from the dropped ones in the mask or trload token
    alone (the kept d64 kernels pad), yet they take the inputs where their conditions
    admit them: a top-left mask is a mask, the trload inputs any no-mask ones."""
    conditions = {
        "k_d64_mc_npad_ntrload.cpp": ["hdim_q <= 64", "mask_type == top_left",
                                      "seqlen_k % 64 == 0"],
        "k_d64_nmask_npad_trload.cpp": ["hdim_q <= 64", "mask_type == no_mask",
                                        "seqlen_k % 64 == 0", "use_trload"],
        "k_d64_mask_psddv_ntrload.cpp": ["hdim_q <= 64", "mask_type != no_mask"],
        "k_d64_nmask_psddv_ntrload.cpp": ["hdim_q <= 64", "mask_type == no_mask"],
        "k_d128_mask_npad_ntrload.cpp": ["hdim_q <= 128", "mask_type != no_mask",
                                         "seqlen_k % 128 == 0"],
    }
    mc, trload = _losses(conditions)
    assert mc == "1 kernels not generated: 1 are served by the kept _mask, _psddv variant."
    assert trload == ("1 kernels not generated: 1 are served by the kept _ntrload, _psddv "
                      "variant.")


def test_a_kernel_further_away_whose_conditions_exclude_the_inputs_serves_nothing():
    conditions = {
        "k_d64_mc_npad_ntrload.cpp": ["hdim_q <= 64", "mask_type == top_left"],
        "k_d64_nmask_npad_trload.cpp": ["hdim_q <= 64", "mask_type == no_mask",
                                        "use_trload"],
        "k_d64_mask_psddv_ntrload.cpp": ["hdim_q <= 64", "mask_type == causal"],
        "k_d64_nmask_psddv_ntrload.cpp": ["hdim_q <= 64", "mask_type == no_mask",
                                          "not use_trload"],
        "k_d128_mask_npad_ntrload.cpp": ["hdim_q <= 128", "mask_type == causal"],
    }
    mc, trload = _losses(conditions)
    assert mc == ("1 kernels not generated: 1 served inputs (hdim_q <= 64; mask_type == "
                  "top_left) that no kept kernel of their problem class takes.")
    assert trload.startswith("1 kernels not generated: 1 served inputs (")
    assert trload.endswith("that no kept kernel of their problem class takes.")


def test_kernels_without_a_common_dispatch_term_are_not_said_to_be_served():
    """A kernel reached from branches with no term in common (an empty reading) has
    nothing a stand-in's conditions could be compared with: no stand-in is named."""
    conditions = {"k_d64_nmask_psddv_ntrload.cpp": ["hdim_q <= 64", "mask_type == no_mask"],
                  "k_d64_mask_psddv_ntrload.cpp": ["hdim_q <= 64", "mask_type != no_mask"],
                  "k_d128_mask_npad_ntrload.cpp": ["hdim_q <= 128"],
                  "k_d64_mc_npad_ntrload.cpp": [], "k_d64_nmask_npad_trload.cpp": []}
    mc, trload = _losses(conditions)
    unread = ("1 kernels not generated: 1 are reached under dispatch conditions with no term "
              "common to all their branches, so whether a kept kernel serves their inputs is "
              "not established.")
    assert (mc, trload) == (unread, unread)


def test_a_value_kept_only_with_some_problems_is_a_dropped_value_elsewhere():
    """``_ps`` is kept only with mode _group: a batch ``_ps`` kernel with lse carries a
    dropped padding besides its lse. A call asks for lse, so that kernel is lost with
    lse (said there, with the inputs that lose it), and the padding's sentence names lse
    instead of counting it as its own."""
    labels = {"K": ["lit", "mode", "pad", "lse"]}
    categories = {("K", "lit"): "other", ("K", "mode"): "problem",
                  ("K", "pad"): "padding", ("K", "lse"): "optional feature"}
    kept_kernels = [_kernel("_group", "_ps", "_nlse"), _kernel("_batch", "_npad", "_nlse")]
    dropped = [_kernel("_batch", "_ps", "_lse"), _kernel("_batch", "_npad", "_lse"),
               _kernel("_group", "_ps", "_lse"), _kernel("_batch", "_ps", "_nlse")]
    terms = {"_group": "is_group_mode", "_batch": "not is_group_mode", "_lse": "has_lse",
             "_nlse": "not has_lse", "_npad": "seqlen_q % 64 == 0"}
    conditions = {k.file: [terms[t] for t in k.tokens if t in terms]
                  for k in kept_kernels + dropped}
    decisions = [Decision(kernel_type="K", segment="pad", category="padding",
                          keep=["_npad", "_ps"], drop=[],
                          partial=[{"token": "_ps", "kept_with": {"mode": ["_group"]}}]),
                 Decision(kernel_type="K", segment="lse", category="optional feature",
                          keep=["_nlse"], drop=["_lse"])]
    describe_losses(decisions, kept_kernels + dropped, {k.file for k in kept_kernels},
                    categories, conditions, labels, {})
    # the two lse kernels with a kept padding differ from a kept kernel in lse alone; the
    # batch _ps one has no kept kernel in its class that takes lse calls
    assert decisions[1].losses["_lse"] == (
        "3 kernels not generated: 2 were reached when has_lse: those inputs now find no "
        "kernel (the kept _nlse variant is reached only when not has_lse); 1 served inputs "
        "(not is_group_mode; has_lse) that no kept kernel of their problem class takes.")
    # the batch _ps kernel without lse is the one _ps alone takes away; the batch one with
    # lse is said under lse; the group one with lse only under lse (the set keeps group _ps)
    assert decisions[0].losses["_ps"] == (
        "1 kernels not generated (and 1 more, said under _lse): 1 are served by the kept "
        "_npad variant only when "
        "seqlen_q % 64 == 0; other inputs lose their kernel.")


def test_a_term_of_joined_conditions_is_on_each_of_their_subjects():
    """``has_dropout and not is_store_randval`` excludes the stand-in's ``not
    has_dropout``: the dropout inputs find no kernel (not "served when not has_dropout")."""
    labels = {"K": ["lit", "hdim", "dropout"]}
    categories = {("K", "lit"): "other", ("K", "hdim"): "problem",
                  ("K", "dropout"): "optional feature"}
    kept_kernel, lost = _kernel("_d64", "_ndropout"), _kernel("_d64", "_dropout")
    conditions = {kept_kernel.file: ["not has_dropout"],
                  lost.file: ["has_dropout and not is_store_randval"]}
    decision = Decision(kernel_type="K", segment="dropout", category="optional feature",
                        keep=["_ndropout"], drop=["_dropout"])
    describe_losses([decision], [kept_kernel, lost], {kept_kernel.file}, categories,
                    conditions, labels, {})
    assert decision.losses["_dropout"] == (
        "1 kernels not generated: 1 were reached when has_dropout: those inputs now find no "
        "kernel (the kept _ndropout variant is reached only when not has_dropout).")


_TWO_TERMS_ON_ONE_SUBJECT = '''
from sphinxext_fmha.model import Decision
from sphinxext_fmha.verify.losses import describe_losses
from sphinxext_fmha.verify.synthesis import Kernel
labels = {"K": ["lit", "mask"]}
categories = {("K", "lit"): "other", ("K", "mask"): "mask"}
kernels = [Kernel(file="k%s.cpp" % t, kernel_type="K", name="k" + t, tokens=("k", t))
           for t in ("_mask", "_mc")]
conditions = {"k_mc.cpp": ["mask_type != no_mask", "mask_type != causal"],
              "k_mask.cpp": ["mask_type == causal"]}
decision = Decision(kernel_type="K", segment="mask", category="mask", keep=["_mask"],
                    drop=["_mc"])
describe_losses([decision], kernels, {"k_mask.cpp"}, categories, conditions, labels, {})
print(decision.losses["_mc"])
'''


def test_two_own_terms_on_one_subject_give_the_same_sentence_in_every_process():
    """The dropped kernel has two terms on the subject of its stand-in's term, one that
    the stand-in's term excludes and one it admits: which one is compared must not
    depend on the order a set of strings happens to have in a process (its hash seed)."""
    import os
    import subprocess
    import sys

    sentences = set()
    for seed in range(8):
        done = subprocess.run([sys.executable, "-c", _TWO_TERMS_ON_ONE_SUBJECT],
                              env={**os.environ, "PYTHONHASHSEED": str(seed)},
                              capture_output=True, text=True, check=True)
        sentences.add(done.stdout.strip())
    assert len(sentences) == 1, sentences
    (sentence,) = sentences
    # the kernel's inputs meet both of its terms: mask_type != causal excludes the
    # stand-in's mask_type == causal, whatever mask_type != no_mask admits
    assert sentence == ("1 kernels not generated: 1 were reached when mask_type != causal: "
                        "those inputs now find no kernel (the kept _mask variant is reached "
                        "only when mask_type == causal).")


def test_a_term_the_kernel_has_as_part_of_its_own_adds_nothing():
    """The dropped kernel is reached when ``has_dropout and not is_store_randval``; its
    stand-in when ``has_dropout`` and ``hdim_q <= 64``: the first is one of the kernel's
    own, only the second is a condition on its inputs."""
    labels = {"K": ["lit", "store"]}
    categories = {("K", "lit"): "other", ("K", "store"): "other"}
    kernels = [Kernel(file="k%s.cpp" % t, kernel_type="K", name="k" + t, tokens=("k", t))
               for t in ("_store", "_nstore")]
    conditions = {"k_nstore.cpp": ["has_dropout and not is_store_randval"],
                  "k_store.cpp": ["has_dropout", "hdim_q <= 64"]}
    decision = Decision(kernel_type="K", segment="store", category="other",
                        keep=["_store"], drop=["_nstore"])
    describe_losses([decision], kernels, {"k_store.cpp"}, categories, conditions, labels, {})
    assert decision.losses["_nstore"] == (
        "1 kernels not generated: 1 are served by the kept _store variant only when "
        "hdim_q <= 64; other inputs lose their kernel.")



def test_a_value_kept_with_every_value_it_exists_with_is_dropped_nowhere():
    """The Drop column lists a token kept only with some values ("except with dtype
    _fp8") only when a kernel carries it outside them: 2.8.3 fwd_splitkv's ``_squant``
    exists with fp8 alone."""
    from types import SimpleNamespace

    from sphinxext_fmha.render.sections.recommendation import _drop_cell
    from sphinxext_fmha.verify.recommend import _dropped_elsewhere

    kernel_type = SimpleNamespace(segments=[SimpleNamespace(label=label)
                                            for label in ("lit", "dtype", "squant")])

    def kernel(*tokens: str) -> Kernel:
        return Kernel(file="k" + "".join(tokens) + ".cpp", kernel_type="K",
                      name="k" + "".join(tokens), tokens=("k",) + tokens)

    own = [kernel("_fp16", "_nsquant"), kernel("_fp8", "_squant")]
    fp8 = {"dtype": ["_fp8"]}
    assert not _dropped_elsewhere(kernel_type, own, 2, "_squant", fp8)
    assert _dropped_elsewhere(kernel_type, own + [kernel("_bf16", "_squant")], 2, "_squant", fp8)
    assert _dropped_elsewhere(kernel_type, own, 2, "_squant", {})  # "where nothing else exists"

    def decision(dropped: bool) -> Decision:
        return Decision(kernel_type="K", segment="squant", category="optional feature",
                        keep=["_nsquant", "_squant"],
                        partial=[{"token": "_squant", "kept_with": fp8, "dropped": dropped}])

    def text(cell) -> str:
        return "".join(getattr(part, "text", part) if not isinstance(part, str) else part
                       for part in cell)

    assert text(_drop_cell(decision(False))) == "-"
    assert "_squant" in text(_drop_cell(decision(True)))


def test_a_stand_in_reached_from_differing_branches_is_not_said_to_serve():
    """2.8.3 bwd: the kept ``_pskddv`` kernel is reached from branches that test
    ``seqlen_q % 64 == 0`` or ``seqlen_q % 32 == 0 and seqlen_q % 64 != 0``, so the terms
    all its branches share say nothing of seqlen_q; the dropped ``_psskddv`` inputs
    (``seqlen_q % 16 != 0``) are not served by it, and the page must not say they are."""
    labels = {"K": ["lit", "pad"]}
    categories = {("K", "lit"): "other", ("K", "pad"): "padding"}
    kept, lost = _kernel("_pskddv"), _kernel("_psskddv")
    conditions = {kept.file: ["hdim_q % 128 != 0"],
                  lost.file: ["seqlen_q % 16 != 0", "hdim_q % 128 != 0"]}

    def loss(varying):
        decision = Decision(kernel_type="K", segment="pad", category="padding",
                            keep=["_pskddv"], drop=["_psskddv"])
        describe_losses([decision], [kept, lost], {kept.file}, categories, conditions, labels,
                        {}, varying)
        return decision.losses["_psskddv"]

    assert loss(set()) == "1 kernels not generated: 1 are served by the kept _pskddv variant."
    assert loss({kept.file}) == (
        "1 kernels not generated: 1 may be served by the kept _pskddv variant, which is reached "
        "from branches with different conditions: whether it takes their inputs is not "
        "established.")


def test_a_kernel_the_api_never_launches_is_no_loss():
    """The trload kernel sits only behind a disabled entry (newer CK's
    `if (false and can_dispatch_v3)`): dropping it loses no call, and the sentence
    says why instead of naming inputs that would lose their kernel."""
    kept_kernels = [_kernel("_d64", "_nmask", "_npad", "_ntrload")]
    lost = _kernel("_d64", "_nmask", "_npad", "_trload")
    decision = Decision(kernel_type="K", segment="trload", category="tuning",
                        keep=["_ntrload"], drop=["_trload"])
    conditions = {kept_kernels[0].file: ["hdim_q <= 64", "not use_trload"],
                  lost.file: ["hdim_q <= 64", "use_trload"]}
    why = "launched only by fmha_fwd_v3: its caller is not reachable"
    describe_losses([decision], kept_kernels + [lost], {kept_kernels[0].file}, CATEGORIES,
                    conditions, LABELS, {}, never_run={lost.file: why})
    sentence = decision.losses["_trload"]
    assert sentence == ("1 kernels not generated: 1 are never launched by the API "
                        "(%s): no call loses them." % why)
    # the same kernel, launched: its own condition is an input that finds no kernel
    decision.losses.clear()
    describe_losses([decision], kept_kernels + [lost], {kept_kernels[0].file}, CATEGORIES,
                    conditions, LABELS, {})
    assert "use_trload" in decision.losses["_trload"]
    assert "never launched" not in decision.losses["_trload"]


def test_clauses_that_read_alike_are_said_once_with_their_counts_added():
    """2.8.3 fwd's ``_bias`` said "48 were reached when bias_type == ...elementwise_bias:
    those inputs now find no kernel (...)" twice and then the same with 6: the kernels
    differ in what else their stand-ins need, which the clause does not say. A reader
    sees one clause, with every such kernel counted in it."""
    labels = {"K": ["lit", "hdim", "bias"]}
    categories = {("K", "lit"): "other", ("K", "hdim"): "problem",
                  ("K", "bias"): "optional feature"}
    kept_kernels = [_kernel("_d64", "_nbias"), _kernel("_d128", "_nbias")]
    lost = [_kernel("_d64", "_bias"), _kernel("_d128", "_bias")]
    conditions = {
        "k_d64_nbias.cpp": ["hdim_q <= 64", "bias_type == no_bias"],
        # the d128 stand-in also needs a sequence length its dropped twin does not test
        "k_d128_nbias.cpp": ["hdim_q <= 128", "bias_type == no_bias", "seqlen_k % 128 == 0"],
        "k_d64_bias.cpp": ["hdim_q <= 64", "bias_type == elementwise_bias"],
        "k_d128_bias.cpp": ["hdim_q <= 128", "bias_type == elementwise_bias"],
    }
    decision = Decision(kernel_type="K", segment="bias", category="optional feature",
                        keep=["_nbias"], drop=["_bias"])
    describe_losses([decision], kept_kernels + lost, {k.file for k in kept_kernels},
                    categories, conditions, labels, {})
    assert decision.losses["_bias"] == (
        "2 kernels not generated: 2 were reached when bias_type == elementwise_bias: those "
        "inputs now find no kernel (the kept _nbias variant is reached only when "
        "bias_type == no_bias).")
