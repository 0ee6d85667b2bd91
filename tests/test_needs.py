"""A workload's needs, read against a small model written here (issue 43, item 1).

The model is a toy with the shapes of the real ones: a head dimension and a data type
written by one field each, a mask written by one, a padding segment written by two
fields (so that one field value names several tokens), and a follower sub-type that
has some of the same segments. The expectations are written out by hand.
"""

from __future__ import annotations

from collections import Counter

import pytest

from sphinxext_fmha.errors import WarningType
from sphinxext_fmha.model import ApiModel, KernelType, Segment
from sphinxext_fmha.verify.needs import (
    NeedError,
    needs_key,
    parse_needs,
    resolve_needs,
    split_needs,
    unmet_combinations,
    workload_scope,
)
from sphinxext_fmha.verify.synthesis import Kernel


def _segment(label, fields, values):
    """``values``: token -> field values (one combination)."""
    return Segment(label=label, fields=list(fields), tokens={t: "" for t in values},
                   values={t: [dict(zip(fields, v))] for t, v in values.items()})


LITERAL = Segment(label="literal 1", tokens={"toy": ""}, literal=True)
HDIM = _segment("hdim", ["F_hdim"], {"_d64": ["64"], "_d128": ["128"], "_d256": ["256"]})
DTYPE = _segment("dtype", ["F_dtype"], {"_fp16": ["fp16"], "_bf16": ["bf16"], "_fp8": ["fp8"]})
MASK = _segment("mask", ["F_mask"], {"_mask": ["t"], "_nmask": ["f"]})
PAD = _segment("pad", ["F_spad", "F_dpad"], {"_npad": ["f", "f"], "_ps": ["t", "f"],
                                              "_psd": ["t", "t"]})
MODEL = ApiModel(api="toy", source="codegen/ops/fmha_toy.py", kernel_types=[
    KernelType(class_name="ToyKernel", frozen=True, filter_position=0, count=0,
               segments=[LITERAL, HDIM, DTYPE, MASK, PAD]),
    KernelType(class_name="ToyCombine", frozen=True, filter_position=1, count=0,
               segments=[Segment(label="literal 1", tokens={"toyc": ""}, literal=True),
                         HDIM, DTYPE]),
])


def _kernel(kernel_type, *tokens):
    name = "".join(tokens)
    return Kernel(file=name + ".cpp", kernel_type=kernel_type, name=name, tokens=tokens)


MAIN = [_kernel("ToyKernel", "toy", h, d, m, p)
        for h in ("_d64", "_d128", "_d256") for d in ("_fp16", "_bf16")
        for m in ("_mask", "_nmask") for p in ("_npad", "_ps")] + \
    [_kernel("ToyKernel", "toy", "_d128", "_fp8", "_nmask", "_psd")]
COMBINE = [_kernel("ToyCombine", "toyc", h, d) for h in ("_d64", "_d128", "_d256")
           for d in ("_fp16", "_bf16", "_fp8")]


def test_a_directive_value_is_split_on_semicolons_and_lines():
    assert split_needs("dtype=fp16,bf16; hdim=64,128;\nmask=mask") == [
        "dtype=fp16,bf16", "hdim=64,128", "mask=mask"]
    assert parse_needs(["dtype = fp16, bf16", "hdim=128"]) == [
        ("dtype", ["fp16", "bf16"]), ("hdim", ["128"])]
    for bad in ("dtype", "=fp16", "dtype=", "dtype=,"):
        with pytest.raises(NeedError) as caught:
            parse_needs([bad])
        assert caught.value.kind == WarningType.NEED
        assert "SEGMENT=VALUE" in str(caught.value)


def test_values_are_tokens_with_or_without_their_underscore_or_a_field_value():
    needs = resolve_needs(MODEL, parse_needs(["dtype=fp16,_bf16", "hdim=128", "mask=nmask"]))
    assert [(n.segment, n.tokens, n.given) for n in needs] == [
        ("dtype", ["_bf16", "_fp16"], ["_bf16", "fp16"]),
        ("hdim", ["_d128"], ["128"]),
        ("mask", ["_nmask"], ["nmask"])]
    assert needs[0].kernel_types == ["ToyKernel", "ToyCombine"]
    assert needs[2].kernel_types == ["ToyKernel"]
    # the field's value where it names one token; a segment named twice adds up
    assert resolve_needs(MODEL, [("hdim", ["256"]), ("hdim", ["_d64", "d64"])])[0].tokens == \
        ["_d64", "_d256"]
    # the cache key does not depend on the order the values were given in
    assert needs_key(resolve_needs(MODEL, [("hdim", ["128", "64"])])) == \
        needs_key(resolve_needs(MODEL, [("hdim", ["64", "128"])]))


def test_an_unknown_segment_or_value_names_the_valid_ones():
    with pytest.raises(NeedError) as caught:
        resolve_needs(MODEL, [("head", ["128"])])
    assert "no segment 'head'" in str(caught.value)
    assert "hdim, dtype, mask, pad" in str(caught.value)
    with pytest.raises(NeedError) as caught:
        resolve_needs(MODEL, [("hdim", ["96"])])
    assert "hdim=96: no value of segment hdim is '96'" in str(caught.value)
    assert "_d64, _d128, _d256" in str(caught.value)
    # "t" is the spad of _ps and of _psd: ambiguous, said so with both
    with pytest.raises(NeedError) as caught:
        resolve_needs(MODEL, [("pad", ["t"])])
    assert "'t' is ambiguous in segment pad: it names _ps, _psd" in str(caught.value)


def test_the_scope_is_the_kernels_with_the_values_and_the_partners_they_launch():
    needs = resolve_needs(MODEL, [("hdim", ["128"]), ("dtype", ["fp16"])])
    partners = {k.file: {"toyc%s%s.cpp" % (k.tokens[1], k.tokens[2])} for k in MAIN}
    scope = workload_scope(MODEL, MAIN + COMBINE, needs, ["ToyKernel"], partners)
    main = {f for f in scope if f.startswith("toy_")}
    assert main == {k.file for k in MAIN if k.tokens[1:3] == ("_d128", "_fp16")}
    assert scope - main == {"toyc_d128_fp16.cpp"}
    # without known partners, a follower is in when it carries the values itself
    scope = workload_scope(MODEL, MAIN + COMBINE, needs, ["ToyKernel"])
    assert scope - main == {"toyc_d128_fp16.cpp"}


def test_combinations_no_kernel_has_are_listed():
    needs = resolve_needs(MODEL, [("dtype", ["fp8", "fp16"]), ("hdim", ["64", "128"])])
    unmet = unmet_combinations(MODEL, MAIN + COMBINE, needs, ["ToyKernel"])
    assert unmet == [{"hdim": "_d64", "dtype": "_fp8"}]  # fp8 exists with d128 alone
    assert unmet_combinations(MODEL, MAIN, resolve_needs(MODEL, [("mask", ["mask"]),
                                                                ("pad", ["_psd"])]),
                              ["ToyKernel"]) == [{"mask": "_mask", "pad": "_psd"}]


def test_example_workloads_are_derived_and_read_back_as_needs():
    """The examples (issue 43, item 6) come from the listing's own counts and the first
    receipt whose terms each test one segment; what the page shows as ``:need:`` reads
    back as the same tokens (the empty token by its field's value)."""
    from sphinxext_fmha.model import Receipt
    from sphinxext_fmha.verify.examples import example_workloads
    from sphinxext_fmha.verify.parsed_listing import ParsedListing

    bias = _segment("bias", ["F_bias"], {"": ["no"], "_alibi": ["alibi"], "_bias": ["bias"]})
    model = ApiModel(api="toy", source="x", kernel_types=[KernelType(
        class_name="ToyKernel", frozen=True, filter_position=0, count=len(MAIN),
        segments=[LITERAL, HDIM, DTYPE, MASK, PAD, bias])])
    rows = {k.name + b + ".cpp": ("ToyKernel", list(k.tokens) + [b])
            for k in MAIN for b in ("", "_alibi")}
    # _d128 and _fp16 are the most common: 2 (masks) x 2 (pads) x 2 (biases) + fp8's one
    rows["toy_d128_fp16_extra.cpp"] = ("ToyKernel", ["toy", "_d128", "_fp16", "_mask",
                                                     "_npad", "_bias"])
    parsed = ParsedListing(files=list(rows), parsed=rows, unparsed=[])
    found = example_workloads(model, parsed)
    assert [w.kind for w in found] == ["common", "pairs"]
    assert [(n.segment, n.tokens) for n in found[0].needs] == [("hdim", ["_d128"]),
                                                               ("dtype", ["_fp16"])]
    assert found[0].kernels == 9 and found[0].ties == 1
    # without the extra kernel, pairs tie: the count of tied pairs is said, and the
    # first of them in the segments' order is taken
    tied = dict(rows)
    del tied["toy_d128_fp16_extra.cpp"]
    pairs = Counter((tokens[1], tokens[2]) for _, tokens in tied.values())
    top = max(pairs.values())
    common = example_workloads(model, ParsedListing(files=list(tied), parsed=tied,
                                                    unparsed=[]))[0]
    assert common.kernels == top
    assert common.ties == sum(1 for n in pairs.values() if n == top) > 1
    model.receipts = [Receipt(value="2", label="two", conditions=["x"],
                              terms=[["bias in ['no', 'alibi']", "F_bias", "alibi", "no"],
                                     ["dtype == 'fp16'", "F_dtype", "fp16"]])]
    found = example_workloads(model, parsed)
    assert [w.kind for w in found] == ["common", "receipt"]
    receipt = found[1]
    assert [(n.segment, n.tokens, n.given) for n in receipt.needs] == [
        ("dtype", ["_fp16"], ["fp16"]), ("bias", ["", "_alibi"], ["no", "alibi"])]
    for workload in found:
        again = resolve_needs(model, [(n.segment, n.given) for n in workload.needs])
        assert [(n.segment, n.tokens) for n in again] == \
            [(n.segment, n.tokens) for n in workload.needs]
