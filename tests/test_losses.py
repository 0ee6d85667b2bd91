"""What the minimal set loses, said from each dropped kernel's fate (what the set's own
dispatch runs for its calls, :class:`~sphinxext_fmha.verify.standins.Fate`): the fates
are written out here; how they are found from a dispatch file is tested against a
simulator in ``test_routes.py``."""

from __future__ import annotations

from sphinxext_fmha.model import Decision
from sphinxext_fmha.render.sections.loss_words import loss_sentences
from sphinxext_fmha.verify.losses import describe_losses
from sphinxext_fmha.verify.standins import Fate
from sphinxext_fmha.verify.synthesis import Kernel

LABELS = {"K": ["lit", "hdim", "mask", "pad", "trload"]}
CATEGORIES = {("K", "lit"): "other", ("K", "hdim"): "problem", ("K", "mask"): "mask",
              ("K", "pad"): "padding", ("K", "trload"): "tuning", ("K", "tile"): "tile"}


def _kernel(*tokens: str) -> Kernel:
    return Kernel(file="k" + "".join(tokens) + ".cpp", kernel_type="K",
                  name="k" + "".join(tokens), tokens=("k",) + tokens)


KEPT = [_kernel("_d64", "_nmask", "_psddv", "_ntrload"),
        _kernel("_d64", "_mask", "_psddv", "_ntrload"),
        _kernel("_d128", "_mask", "_npad", "_ntrload")]


def _losses(dropped, fates, conditions=None, never_run=None):
    decisions = [Decision(kernel_type="K", segment="mask", category="mask",
                          keep=["_mask", "_nmask"], drop=["_mc"]),
                 Decision(kernel_type="K", segment="trload", category="tuning",
                          keep=["_ntrload"], drop=["_trload"])]
    describe_losses(decisions, KEPT + dropped, {k.file for k in KEPT}, CATEGORIES,
                    conditions or {}, LABELS, fates, never_run or {})
    return loss_sentences(decisions[0]).get("_mc"), loss_sentences(decisions[1]).get("_trload")


def test_a_stand_in_is_named_by_the_tokens_it_differs_in():
    mc, trload = _kernel("_d64", "_mc", "_npad", "_ntrload"), \
        _kernel("_d64", "_nmask", "_npad", "_trload")
    fates = {mc.file: Fate(stand_ins=(KEPT[1].file,)),
             trload.file: Fate(stand_ins=(KEPT[0].file,))}
    said_mc, said_trload = _losses([mc, trload], fates)
    assert said_mc == "1 kernels not generated: 1 is served by the kept _mask, _psddv variant."
    assert said_trload == ("1 kernels not generated: 1 is served by the kept _ntrload, _psddv "
                           "variant.")


def test_calls_a_stand_in_takes_only_in_part_and_calls_no_kernel_takes():
    dropped = [_kernel("_d64", "_mc", "_npad", "_ntrload"),
               _kernel("_d128", "_mc", "_npad", "_ntrload")]
    fates = {dropped[0].file: Fate(stand_ins=(KEPT[1].file,), lost=True,
                                   only_when=("seqlen_k % 64 != 0",)),
             dropped[1].file: Fate(lost=True)}
    conditions = {dropped[1].file: ["hdim_q <= 128", "mask_type == top_left"]}
    mc, _ = _losses(dropped, fates, conditions)
    assert mc == ("2 kernels not generated: 1 ran calls (hdim_q <= 128; mask_type == "
                  "top_left) that no kept kernel takes; 1 is served by the kept _mask, _psddv "
                  "variant only when seqlen_k % 64 != 0; their other calls find no kernel.")


def test_a_kernel_the_api_never_launches_is_no_loss():
    """The trload kernels behind two complementary branches: dropping them loses no
    call, and the sentence says why."""
    lost = _kernel("_d64", "_nmask", "_npad", "_trload")
    why = ("its branch in fmha_fwd_v2 is never tried: the earlier branches of its if-else "
           "chain take every call its condition admits between them, none alone")
    fact = {"branch": "fmha_fwd_v2", "why": {"kind": "taken_together"}}
    _, trload = _losses([lost], {lost.file: Fate(never=(fact,))})
    assert trload == ("1 kernels not generated: 1 is never launched by the API (%s): no "
                      "call loses them." % why)


def test_clauses_that_read_alike_are_said_once_with_their_counts_added():
    """Kernels whose stand-ins differ only in tiles, or in a number of their terms,
    read as one clause with every such kernel counted in it."""
    dropped = [_kernel("_d64", "_mc", "_psddv", "_ntrload"),
               _kernel("_d128", "_mc", "_npad", "_ntrload")]
    fates = {dropped[0].file: Fate(stand_ins=(KEPT[1].file,), lost=True,
                                   only_when=("seqlen_k % 64 == 0",)),
             dropped[1].file: Fate(stand_ins=(KEPT[2].file,), lost=True,
                                   only_when=("seqlen_k % 128 == 0",))}
    mc, _ = _losses(dropped, fates)
    assert mc == ("2 kernels not generated: 2 are served by the kept _mask variant only when "
                  "seqlen_k % 64/128 == 0; their other calls find no kernel.")


def test_without_a_dispatch_file_no_stand_in_is_claimed():
    dropped = [_kernel("_d64", "_mc", "_npad", "_ntrload")]
    mc, _ = _losses(dropped, {})
    assert "not established" in mc and "served by" not in mc


def test_a_value_kept_only_with_some_problems_is_a_dropped_value_elsewhere():
    """``_ps`` is kept only with mode _group: a batch ``_ps`` kernel with lse carries a
    dropped padding besides its lse. A call asks for lse, so that kernel is said under
    lse, and the padding's sentence names lse instead of counting it as its own."""
    labels = {"K": ["lit", "mode", "pad", "lse"]}
    categories = {("K", "lit"): "other", ("K", "mode"): "problem",
                  ("K", "pad"): "padding", ("K", "lse"): "optional feature"}
    kept_kernels = [_kernel("_group", "_ps", "_nlse"), _kernel("_batch", "_npad", "_nlse")]
    dropped = [_kernel("_batch", "_ps", "_lse"), _kernel("_batch", "_npad", "_lse"),
               _kernel("_group", "_ps", "_lse"), _kernel("_batch", "_ps", "_nlse")]
    fates = {k.file: Fate(lost=True) for k in dropped}
    fates[dropped[3].file] = Fate(stand_ins=(kept_kernels[1].file,))
    decisions = [Decision(kernel_type="K", segment="pad", category="padding",
                          keep=["_npad", "_ps"], drop=[],
                          partial=[{"token": "_ps", "kept_with": {"mode": ["_group"]}}]),
                 Decision(kernel_type="K", segment="lse", category="optional feature",
                          keep=["_nlse"], drop=["_lse"])]
    describe_losses(decisions, kept_kernels + dropped, {k.file for k in kept_kernels},
                    categories, {}, labels, fates)
    assert loss_sentences(decisions[1])["_lse"] == (
        "3 kernels not generated: 3 ran calls (as named) that no kept kernel takes.")
    assert loss_sentences(decisions[0])["_ps"] == (
        "1 kernels not generated (and 1 more, said under _lse): 1 is served by the kept "
        "_npad variant.")


def test_a_value_kept_with_every_value_it_exists_with_is_dropped_nowhere():
    """The Drop column lists a token kept only with some values ("except with dtype
    _fp8") only when a kernel carries it outside them: 2.8.3 fwd_splitkv's ``_squant``
    exists with fp8 alone."""
    from types import SimpleNamespace

    from sphinxext_fmha.render.sections.recommendation import _keep_drop_cells
    from sphinxext_fmha.verify.policy import _dropped_elsewhere

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

    assert text(_keep_drop_cells(decision(False))[1]) == "-"  # (the Drop cell)
    assert "_squant" in text(_keep_drop_cells(decision(True))[1])


