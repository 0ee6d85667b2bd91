"""Constant template arguments and alias chains of a dispatch file, read as the compiler
folds them (newer CK's shapes, as synthetic mutants of the ``at_split`` tree: no CK code).

``gated_convert``: each leaf launches its convert kernel through
``std::conditional_t<skip_convert_, void, convert_trait_>``, where
``static constexpr bool skip_convert_`` is decided by the leaf's own constants
(bf16 d128: true; d64: false) or not at all (fp16 d128: ``std::is_same_v<ToyFp16,
ToyBf16>`` may be true); the convert traits spell the head-dim pad
``(false && (1 > 0))``.
``halved_convert``: the dispatch file writes the convert tile ``{F_bm0}/2``, the kernel
file the number.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List

import pytest

from sphinxext_fmha.cppapi.lexing import constant_of, normalize_cpp
from sphinxext_fmha.cppapi.link_check import link_report
from sphinxext_fmha.cppapi.parse import parse_dispatch
from sphinxext_fmha.session import Session

from helpers import synthetic
from helpers.independent import written_to as generate

_CALL = "                return fmha_toy_<trait_>(s, a);\n"
_CONVERT_TRAIT = ("                using convert_trait_ = toy_convert_traits_<{F_hdim}, {F_dtype}, "
                  "{F_mode}, {F_bm0}, {F_spad}, {F_dpad}>;\n")
_GATE = """                static constexpr bool skip_convert_ =
                    std::is_same_v<{F_dtype}, ToyBf16> && !(false) && ({F_hdim} == 128);
                using convert_trait_used_ = std::conditional_t<skip_convert_, void, convert_trait_>;
                return fmha_toy_<trait_, std::conditional_t<true, convert_trait_used_, void>>(s, a);
"""
_PAIR_CALL = "                return fmha_toy_<trait_, convert_trait_>(s, a);\n"
_KERNEL_CONVERT = ("template <>\n"
                   "void fmha_toy_convert_<toy_convert_traits_<{F_hdim}, {F_dtype}, {F_mode}, {F_spad}, "
                   "{F_dpad}>>")
# (through an alias, as CK's kernel files name their traits; the tile is part of it)
_KERNEL_CONVERT_ALIAS = ("using convert_trait_ = toy_convert_traits_<{F_hdim}, {F_dtype}, {F_mode}, "
                         "{F_bm0}, {F_spad}, {F_dpad}>;\n\n"
                         "template <>\nvoid fmha_toy_convert_<convert_trait_>")


def _mutant(tmp_path: Path, name: str) -> Path:
    """The ``at_split`` tree whose dispatcher also launches the convert kernels."""
    files = synthetic.tree_files("at_split")
    module = "example/ck_tile/01_fmha/codegen/ops/fmha_toy.py"
    text = files[module]
    edits = [(_CALL, _CONVERT_TRAIT + (_GATE if name == "gated_convert" else _PAIR_CALL)),
             (_KERNEL_CONVERT, _KERNEL_CONVERT_ALIAS)]
    if name == "gated_convert":
        edits.append(("{F_spad}, {F_dpad}>;\n                static",
                      "{F_spad}, ({F_dpad} && (1 > 0))>;\n                static"))
    else:
        edits.append(("{F_mode}, {F_bm0}, {F_spad}, {F_dpad}>;\n                return",
                      "{F_mode}, {F_bm0}/2, {F_spad}, {F_dpad}>;\n                return"))
        edits.append(("F_mode=mode, F_bm0=tile.F_bm0,", "F_mode=mode, F_bm0=tile.F_bm0 // 2,"))
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    files[module] = text
    root = tmp_path / f"ck_{name}"
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body, encoding="utf-8")
    return root


def _convert_names(out: Path) -> List[str]:
    return sorted(p.name for p in out.glob("fmha_toy_convert_*.cpp"))


def _written(root: Path, tmp_path: Path) -> Dict[str, str]:
    out = generate(root, "toy", tmp_path / "out")
    return {p.name: p.read_text() for p in out.glob("*.cpp")}


def test_a_convert_gated_by_a_constexpr_alias_chain(tmp_path):
    root = _mutant(tmp_path, "gated_convert")
    files = _written(root, tmp_path)
    api = files.pop("fmha_toy_api.cpp")
    assert "std::is_same_v<ToyBf16, ToyBf16>" in api and "(true && (1 > 0))>" in api
    converts = _convert_names(tmp_path / "out")
    # oracle: bf16 d128 leaves skip their convert kernel (decided); fp16 d128 leaves may
    # (is_same_v of two names is not decided) and d64 leaves never do
    skipped = [n for n in converts if "_d128_bf16_" in n]
    assert skipped and len(skipped) < len(converts)
    report = link_report(api, files)
    assert report.links and report.missing == []
    assert sorted(report.unreferenced) == skipped
    tree = parse_dispatch(api)
    undecided = [leaf for leaf in tree.leaves if leaf.undecided]
    assert undecided and all("ToyFp16" in leaf.undecided[0] and leaf.undecided[0].startswith(
        "toy_convert_traits_<128,") for leaf in undecided)
    # the reading the guide is made of says the same
    reading = Session(root, cache_dir=tmp_path / "cache").dispatch_reading("toy")
    assert sorted(n for n in reading["unreferenced"] if "convert" in n) == skipped
    assert reading["missing"] == []


def test_an_undecided_gate_never_makes_a_missing_kernel():
    """A kernel only an undecided ``std::conditional_t`` may name is not said missing
    (the call may never name it: the set may link); a decided one is."""
    api = """float run(fmha_args a) {
    if (a.x == 1) {
        using k_ = toy_traits_<64>;
        using c_ = toy_convert_traits_<64>;
        static constexpr bool gate_ = std::is_same_v<ToyFp16, ToyBf16> && (2 > 1);
        return fmha_toy_<k_, std::conditional_t<gate_, void, c_>>(a);
    } else {
        using k_ = toy_traits_<128>;
        using c_ = toy_convert_traits_<128>;
        static constexpr bool gate_ = std::is_same_v<ToyFp16, ToyFp16> && (64/2 == 32);
        return fmha_toy_<k_, std::conditional_t<!gate_, c_, void>>(a);
    }
}"""
    kernel = "using t_ = {};\ntemplate <> float fmha_toy_<t_>(fmha_args a) {{ return 0; }}"
    report = link_report(api, {"k64.cpp": kernel.format("toy_traits_<64>"),
                               "k128.cpp": kernel.format("toy_traits_<128>")})
    assert report.links and report.missing == [] and report.unreferenced == []
    report = link_report(api.replace("!gate_", "gate_"),
                         {"k64.cpp": kernel.format("toy_traits_<64>")})
    assert not report.links
    assert [re.sub(r"\s", "", key) for _, _, key in report.missing] == [
        "toy_traits_<128>", "toy_convert_traits_<128>"]


def test_arithmetic_template_arguments_name_the_kernel(tmp_path):
    root = _mutant(tmp_path, "halved_convert")
    files = _written(root, tmp_path)
    api = files.pop("fmha_toy_api.cpp")
    assert "128/2" in api
    converts = _convert_names(tmp_path / "out")
    # oracle: every convert kernel's tile is half its main kernel's, and every main
    # kernel's leaf launches its convert kernel
    assert converts and all("_b64_" in n for n in converts)
    report = link_report(api, files)
    assert report.links and report.missing == [] and report.unreferenced == []


@pytest.mark.parametrize("text, value", [
    ("64/2", "32"), ("-7/2", "-3"), ("-7%2", "-1"), ("1+2*3", "7"), ("(1 > 0)", "true"),
    ("!(false) && (0 == 0)", "true"), ("3 > 2 > 1", "false"), ("1 << 3 == 8", "true"),
    ("x && (1 == 0)", "false"), ("x || !(false)", "true"), ("x && true", None),
    ("std::is_same_v<A<1>, A<1>> && !(false)", "true"),
    ("std::is_same_v<toy::arch_a_t, toy::arch_b_t>", None),
    ("!toy::Dropout<false, true, false>::IsDropout", None),
    ("64/0", None), ("(1", None),
])
def test_constant_expressions_fold_as_cpp_does(text, value):
    """The values are C++'s (integer division truncates, comparisons chain left to right,
    a name the text does not give decides only where && and || need it not)."""
    assert constant_of(normalize_cpp(text)) == value


@pytest.mark.parametrize("condition, value", [
    ("true", True), ("(false)", False), ("std::is_same_v<A<1>, A<1>>", True),
    ("!std::is_same_v<A, B>", None), ("(1 > 0) && !(false)", True), ("N == 2", None),
])
def test_if_constexpr_conditions_fold_as_template_arguments_do(condition, value):
    """``if constexpr`` is decided by the same folding (an undecided condition keeps
    both branches)."""
    from sphinxext_fmha.cppapi.parse import _constexpr_value

    assert _constexpr_value(condition) is value
