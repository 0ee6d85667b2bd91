"""What a run's pattern keeps and excludes, in words (issue 43, item 4), checked with
an oracle written in the test: fnmatch's meaning and the sentence's parser in
``gloss_oracle``, the names cut into tokens here (the test builds them from tokens)."""

from __future__ import annotations

import re

from sphinxext_fmha.model import ApiModel, FilterPart, FilterSpec, KernelType, Segment
from sphinxext_fmha.render.sections.gloss import gloss_text
from sphinxext_fmha.verify.pattern_reading import pattern_pieces, run_reading
from sphinxext_fmha.verify.synthesis import Kernel

from helpers.gloss_oracle import check_claims, fnmatch_regex, gloss_claims, gloss_parts

SEGMENTS = [("hdim", ["_d32", "_d64", "_d96", "_d128", "_d256"]),
            ("dtype", ["_fp16", "_bf16"]),
            ("pad", ["_npad", "_ps", "_psk", "_pskd"]),
            ("bias", ["_nbias", "_alibi", "_bias"]),
            ("lse", ["_nlse", "_lse"])]


def _type(name, prefix, position):
    segments = [Segment(label="literal 1", tokens={prefix: ""}, literal=True)]
    segments += [Segment(label=label, fields=["F_" + label], tokens={t: "" for t in tokens})
                 for label, tokens in SEGMENTS]
    return KernelType(class_name=name, frozen=True, filter_position=position, count=0,
                      segments=segments)


def _model(split: str = "", together: bool = False) -> ApiModel:
    """One sub-type; with ``split``, a second one filtered by its own ``@`` part; with
    ``together``, a second one that the same (unsplit) pattern filters."""
    types = [_type("MainKernel", "fmha_main", 0)]
    spec = FilterSpec(parts=[FilterPart(position=0, applies_to=["MainKernel"])])
    if together:
        types.append(_type("SideKernel", "fmha_side", 0))
        spec = FilterSpec(parts=[FilterPart(position=0, applies_to=["MainKernel", "SideKernel"])])
    if split:
        types.append(_type("SideKernel", "fmha_side", 1))
        spec = FilterSpec(api_split=split, parts=[
            FilterPart(position=0, applies_to=["MainKernel"]),
            FilterPart(position=1, applies_to=["SideKernel"], missing_becomes="*")])
    return ApiModel(api="toy", source="x", kernel_types=types, filter=spec)


def _kernels(model: ApiModel):
    out = []
    for kernel_type in model.kernel_types:
        prefix = kernel_type.segments[0].tokens
        for h in SEGMENTS[0][1]:
            for d in SEGMENTS[1][1]:
                for p in SEGMENTS[2][1]:
                    for b in SEGMENTS[3][1]:
                        for lse in SEGMENTS[4][1]:
                            tokens = (next(iter(prefix)), h, d, p, b, lse)
                            name = "".join(tokens)
                            out.append(Kernel(name + ".cpp", kernel_type.class_name, name,
                                              tokens))
    return out


def _carries(name: str, token: str) -> bool:
    """The test's reading: ``token`` is one of the name's tokens (cut by the test)."""
    return token in TOKENS[name]


KERNELS = _kernels(_model("@"))
TOKENS = {k.name: set(k.tokens) for k in KERNELS}


def _check(model, pattern):
    kernels = _kernels(model)
    text = gloss_text(run_reading(model, kernels, pattern))
    parts = pattern.split("@") if model.filter.api_split else [pattern]
    for kernel_type, sentence in gloss_parts(text).items():
        name = kernel_type or "MainKernel"
        position = 1 if name == "SideKernel" and model.filter.api_split else 0
        own = [k.name for k in kernels if k.kernel_type == name]
        regex = fnmatch_regex(parts[position] if position < len(parts) else "*")
        selected = [n for n in own if regex.match(n)]
        if not selected:  # nothing selected: nothing is said of the names
            assert sentence.rstrip(". ") == "no name (the pattern matches none of them)", sentence
            continue
        claims = gloss_claims(sentence)
        check_claims(claims, selected, _carries, own)
        # a stretch's segments are what it spells: their tokens, one after the other,
        # are in it in every selected name
        for stretch, segments in claims["stretches"]:
            piece = fnmatch_regex(stretch).pattern[4:-3]  # (?s:...)\Z: unanchored
            for kernel in (k for k in kernels if k.name in selected):
                spelled = "".join(t for (label, _), t in zip(SEGMENTS, kernel.tokens[1:])
                                  if label in segments)
                assert any(spelled in kernel.name[m.start():m.end()]
                           for start in range(len(kernel.name))
                           for m in [re.compile(piece).match(kernel.name, start)] if m), \
                    (stretch, segments)
        for segment, count in claims["others"]:
            index = [label for label, _ in SEGMENTS].index(segment)
            kept = {k.tokens[index + 1] for k in kernels if k.name in selected}
            assert int(count[0]) == len(SEGMENTS[index][1]) - len(kept)
    return text


def test_a_literal_pattern_says_the_tokens_it_writes_and_what_they_leave_out():
    text = _check(_model(), "*_nbias_nlse")
    assert text == ("Names ending in `_nbias_nlse` (bias, lse); that leaves out `_alibi`, "
                    "`_bias` (bias); `_lse` (lse).")
    text = _check(_model(), "*_d128_*_npad*")
    assert text.startswith("Names containing `_d128_` (hdim), then `_npad` (pad); that "
                           "leaves out the 4 other values of hdim; ")


def test_bracket_positions_say_what_the_names_have_no_or_only_of():
    text = _check(_model(), "*_d[12][28]*_[bf][fp]16*[se]")
    assert "bracket position" in text and "the names it selects have" in text
    assert _check(_model(), "fmha_main_d64_fp16_npad_nbias_nlse").startswith(
        "Names that are `fmha_main_d64_fp16_npad_nbias_nlse` (hdim, dtype, pad, bias, lse)")


def test_each_part_of_a_split_pattern_is_said_with_its_sub_type():
    text = _check(_model("@"), "*_d64_*_nbias*@*_ps_*")
    assert text.startswith("Part 0 (`MainKernel`): names containing `_d64_` (hdim), then "
                           "`_nbias` (bias); ")
    assert "Part 1 (`SideKernel`): names containing `_ps_` (pad)" in text
    assert "Part 1 (`SideKernel`): every name" in _check(_model("@"), "*_nlse")


def test_one_pattern_read_by_two_sub_types_is_said_per_sub_type_without_parts():
    # CK 2024's fwd_splitkv: the main and the combine kernels, one unsplit -f pattern
    text = _check(_model(together=True), "fmha_side*_d[12][28]*_nlse")
    assert "Part" not in text
    assert text.startswith("For `MainKernel`: no name (the pattern matches none of them). "
                           "For `SideKernel`: names starting with `fmha_side`, then ")
    assert "  " not in text and "only  (" not in text


def test_the_pattern_is_cut_into_its_pieces():
    assert pattern_pieces("*_d[16][24]*?x[*]") == [
        ("star", "*"), ("literal", "_d"), ("class", "[16]"), ("class", "[24]"),
        ("star", "*"), ("any", "?"), ("literal", "x[*]")]
