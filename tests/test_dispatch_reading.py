"""Per-token dispatch conditions, entry points and link checks against independent reads.

The oracle here is a small regex reader written in this file: it runs ``generate.py -o``
itself, pairs each kernel file with the innermost ``if(...) { using trait_ = ...;`` block
of the API file by the trait text (aliases of the kernel file expanded by plain
substitution), and splits the condition on top-level ``&&``.  Nothing of
``sphinxext_fmha.cppapi`` is used to read the C++.
"""

from __future__ import annotations

import re
import textwrap
from typing import Dict, List

import pytest

from sphinxext_fmha.cppapi.entry_points import read_entry_points
from sphinxext_fmha.cppapi.link_check import link_report
from sphinxext_fmha.cppapi.parse import parse_dispatch
from sphinxext_fmha.render.sections.condition_words import condition_words
from sphinxext_fmha.render.sections.dispatch import never_run_text, never_run_texts
from sphinxext_fmha.render.sections.rules import receipt_reading
from sphinxext_fmha.session import Options, Session

from helpers.analysis_fixtures import cached_write
from helpers.dispatch_oracle import COMMENT as _COMMENT
from helpers.dispatch_oracle import LEAF as _LEAF
from helpers.dispatch_oracle import USING as _USING
from helpers.dispatch_oracle import expand as _expand
from helpers.dispatch_oracle import nested_branch_terms, oracle_conditions, oracle_terms
from helpers.dispatch_oracle import norm as _norm
from helpers.dispatch_oracle import unwrap as _unwrap
from helpers.independent import written_to as generate

pytest_plugins = ["helpers.plugins_analysis"]

# --------------------------------------------------------------------------- corpus

#: (tree, api, "[kernel class:]token" of the segment under test, filter for the oracle run)
CASES = [
    ("flash-attn-2.7.4.post1", "fwd", "_psddv", None),
    ("flash-attn-2.8.1", "fwd", "_psddv", "*_d128_*"),
    ("flash-attn-2.8.3", "batch_prefill", "_psskddv", None),
    ("flash-attn-2.8.3", "fwd_splitkv", "FmhaFwdSplitKVKernel:_lse", None),
    ("flash-attn-2.8.3", "fwd_splitkv", "FmhaFwdSplitKVKernel:_psddv", None),
    ("amd-aiter-0.1.7.post2.dev18", "fwd", "_pssk", "*_d256_*"),
]


@pytest.fixture(scope="module")
def sessions(analysis_sessions):
    """The trees' sessions on the analysis tests' shared cache (see plugins_analysis):
    each test is in its API's analysis group, so it reads the model that group computed."""
    return analysis_sessions


def _session(sessions, corpus_root, name: str) -> Session:
    return sessions(name)


def _group(tree: str, api: str):
    return pytest.mark.xdist_group("analysis-%s-%s-default" % (tree, api))


def _segment_of(model, token: str):
    class_name, _, token = token.rpartition(":")
    for kernel_type in model.kernel_types:
        if class_name and kernel_type.class_name != class_name:
            continue
        for index, segment in enumerate(kernel_type.segments):
            if token in segment.tokens:
                return kernel_type, index, segment
    raise AssertionError("no segment has token %r" % token)


@pytest.mark.parametrize("name,api,token,pattern", [
    pytest.param(*case, id="%s-%s-%s" % case[:3], marks=_group(*case[:2])) for case in CASES])
def test_token_conditions_match_independent_read(corpus_root, sessions, name, api, token,
                                                  pattern):
    from sphinxext_fmha.verify.token_facts import token_dispatch

    session = _session(sessions, corpus_root, name)
    model = session.model(api)
    listing = session.runner.list_kernels(session.tree.request(api, Options()))
    reading = session.dispatch_reading(api)
    facts = token_dispatch(model, listing.files, reading)
    kernel_type, index, segment = _segment_of(model, token)
    folder = cached_write(corpus_root(name), api, *(["-f", pattern] if pattern else []))
    oracle = oracle_conditions(folder)
    assert oracle, "the independent reader paired no kernel with its if-chain"
    nested = nested_branch_terms(folder)
    groups = facts.groups[(kernel_type.class_name, index)]
    group_of = {f: g for t in segment.tokens for g in groups.get(t, []) for f in g.files}
    checked = 0
    for token_here in [t for t in segment.tokens if t]:
        for filename in [f for f in oracle if token_here in f]:
            group = group_of.get(filename)
            assert group is not None, filename
            shown = [_unwrap(_norm(c)) for c in group.cpp]
            # correct: every shown term is a term of the kernel's own `if` (or of a simple
            # branch nested in its block)
            assert set(shown) <= set(oracle[filename]) | nested, (filename, shown, oracle[filename])
            # complete: every term that differs from a sibling differing only in this
            # segment is shown
            for other in [t for t in segment.tokens if t and t != token_here]:
                sibling = filename.replace(token_here, other, 1)
                if sibling == filename or sibling not in oracle:
                    continue
                differing = set(oracle[filename]) - set(oracle[sibling])
                assert differing <= set(shown), (filename, sibling, differing, shown)
                checked += 1
    present = {t for t in segment.tokens if t and any(t in f for f in oracle)}
    if len(present) > 1:  # (split-KV main kernels all carry `_lse`: nothing to pair)
        assert checked, "no pair of kernels differing only in %s was found" % segment.label


@_group("flash-attn-2.8.3", "fwd_splitkv")
def test_splitkv_has_lse_is_a_sub_kernel_choice_not_a_main_condition(corpus_root, sessions):
    from sphinxext_fmha.verify.token_facts import token_dispatch

    session = _session(sessions, corpus_root, "flash-attn-2.8.3")
    model = session.model("fwd_splitkv")
    reading = session.dispatch_reading("fwd_splitkv")
    api_text = session.runner.generate_api_file(
        session.tree.request("fwd_splitkv", Options())).text
    # independent: every `if (t.has_lse)` has an else, both launch fmha_fwd_splitkv_<traits_, ..>
    assert re.search(r"if\s*\(t\.has_lse\)\s*\{", api_text)
    assert {c["condition"] for c in reading["choices"]} >= {"t.has_lse"}
    main = [name for name, kind in reading["kinds"].items()
            if kind == "fmha_fwd_splitkv_traits_" and name in reading["kernels"]]
    assert main
    for name in main:
        words = [w for w in (condition_words(f) for _, _, f in reading["kernels"][name]["terms"])
                 if "has_lse" in w]
        if "_fp8_" in name:
            # fp8: the has_lse branch returns -1 (`if constexpr` on FmhaFwdFp8), so only the
            # else branch launches it, and `not has_lse` is a real condition
            assert words == ["not has_lse"], (name, words)
        else:
            assert words == [], (name, words)
    assert re.search(r"if\s*constexpr\s*\(std::is_same_v<FmhaFwdFp8,\s*FmhaFwdFp8>\)\s*\{\s*"
                     r"return\s*-1;", api_text)
    listing = session.runner.list_kernels(session.tree.request("fwd_splitkv", Options()))
    facts = token_dispatch(model, listing.files, reading)
    for (class_name, _), groups in facts.groups.items():
        if class_name != "FmhaFwdSplitKVKernel":
            continue
        for group in (g for gs in groups.values() for g in gs):
            if any("has_lse" in condition_words(w) for w in group.forms):
                assert all("_fp8_" in f for f in group.files)


@_group("flash-attn-2.8.3", "fwd_splitkv")
def test_splitkv_unreferenced_combine_kernels(corpus_root, sessions):
    """48 of the 147 combine kernels of flash-attn 2.8.3 are never referenced; the
    independent count: combine trait texts in the API file vs generated combine files."""
    session = _session(sessions, corpus_root, "flash-attn-2.8.3")
    reading = session.dispatch_reading("fwd_splitkv")
    combine = [n for n, k in reading["kinds"].items() if "combine" in k]
    assert len(combine) == 147
    assert len([n for n in reading["unreferenced"] if n in combine]) == 48
    assert not reading["missing"] and not reading["unreachable"]


@_group("flash-attn-2.8.3", "fwd")
def test_branches_that_hold_for_no_call(corpus_root, sessions):
    """2.8.3's fmha_fwd tries its unpadded d96 kernels inside the ``hdim_q <= 96``
    branch under ``a.hdim_q % 128 == 0``: no head size but 0 meets both, so those
    kernels are compiled and never run. Independent read: the innermost condition of
    each kernel's call in the written API file, and the head size in its name."""
    expected = _never_run_d96(corpus_root("flash-attn-2.8.3"))
    assert len(expected) == 64 and all("_d96_" in n and "_npad_" in n for n in expected)
    reading = _session(sessions, corpus_root, "flash-attn-2.8.3").dispatch_reading("fwd")
    assert set(reading["unreachable"]) == expected
    assert all("hdim_q <= 96 and hdim_q % 128 == 0" in why
               for why in never_run_texts(reading["unreachable"]).values())


def _never_run_d96(root) -> set:
    """The kernels whose ``a.hdim_q % N == 0`` term asks for a head size above their
    ``_dNN`` bucket (read with this file's regex reader)."""
    out = cached_write(root, "fwd")
    api = next(out.glob("*_api.cpp")).read_text()
    assert re.search(r"t\.hdim_q\s*<=\s*96\b", api)  # d96 kernels sit under hdim_q <= 96
    expected = set()
    for name, terms in oracle_conditions(out).items():
        hdim = int(re.search(r"_d(\d+)_", name).group(1))
        for term in terms:
            m = re.fullmatch(r"a\.hdim_q\s*%\s*(\d+)\s*==\s*0", term)
            if m and int(m.group(1)) > hdim:
                expected.add(name)
    return expected


@_group("flash-attn-2.8.3", "fwd")
def test_the_head_dim_row_says_how_many_of_its_kernels_never_run(corpus_root, sessions):
    """The field reference's "serves" cell of ``_d96`` would read as if every ``_d96``
    kernel served head sizes up to 96: it says how many never run, and only there."""
    from sphinxext_fmha.guide import collect_guide
    from sphinxext_fmha.render.markdown import guide_markdown

    root = corpus_root("flash-attn-2.8.3")
    expected = _never_run_d96(root)
    session = _session(sessions, corpus_root, "flash-attn-2.8.3")
    text = guide_markdown(collect_guide(session, "fwd", sections=["fields"]), ["fields"])
    rows = re.findall(r"^\| `(_d\d+)` \| \d+ \|.*\| ([^|]*\dx[^|]*) \|$", text, re.M)
    assert {token for token, _ in rows} >= {"_d64", "_d96", "_d128"}
    for token, serves in rows:
        count = sum(1 for name in expected if "%s_" % token in name)
        said = re.search(r"; (\d+) never run$", serves)
        assert (int(said.group(1)) if said else 0) == count, (token, serves)
    assert any(serves.endswith("; 64 never run") for token, serves in rows if token == "_d96")


# --------------------------------------------------------------------------- synthetic

V2_V3_API = textwrap.dedent(r"""
    #include "fmha_fwd.hpp"
    namespace {
    float fmha_fwd_v2(fmha_fwd_traits t, fmha_fwd_args a, const toy::stream_config& s) {
        float r = -1;
        if(t.data_type.compare("fp16") == 0) {
            if((t.is_group_mode == false) && (a.seqlen_k % 128 == 0)) {
                using trait_ = fmha_fwd_traits_<128, FmhaFwdFp16, false, Pipeline::QRKSVS>;
                return fmha_fwd_<trait_, toy::gfx9_t>(s, a);
            }
        }
        return r;
    }
    float fmha_fwd_v3(fmha_fwd_traits t, fmha_fwd_args a, const toy::stream_config& s) {
        float r = -1;
        if(t.data_type.compare("fp16") == 0) {
            if((t.is_group_mode == false)) {
                using trait_ = fmha_fwd_traits_<128, FmhaFwdFp16, false, Pipeline::QRKSVS_V3>;
                return fmha_fwd_<trait_, toy::gfx950_t>(s, a);
            }
        }
        return r;
    }
    } // namespace
    float fmha_fwd(fmha_fwd_traits traits, fmha_fwd_args args, const toy::stream_config& config) {
        const bool can_dispatch_v3 = (traits.data_type.compare("fp16") == 0)
                                     and (args.hdim_q == 128);
        if (@@ENABLED@@ and can_dispatch_v3) {
            return fmha_fwd_v3(traits, args, config);
        } else {
            return fmha_fwd_v2(traits, args, config);
        }
    }
""")

KERNEL = textwrap.dedent("""
    #include "fmha_fwd.hpp"
    using fmha_pipeline_enum = Pipeline::{pipe};
    using trait = fmha_fwd_traits_<128, FmhaFwdFp16, false, fmha_pipeline_enum>;
    template<>
    float fmha_fwd_<trait, toy::{arch}>(const toy::stream_config& s, fmha_fwd_args a)
    {{ return 0; }}
""")


def _kernels(*which: str) -> Dict[str, str]:
    files = {"v2.cpp": KERNEL.format(pipe="QRKSVS", arch="gfx9_t"),
             "v3.cpp": KERNEL.format(pipe="QRKSVS_V3", arch="gfx950_t"),
             "extra.cpp": KERNEL.format(pipe="QRKSVS_ASYNC", arch="gfx9_t")}
    return {name: files[name] for name in which}


@pytest.mark.parametrize("enabled", ["false", "true"])
def test_v2_v3_entry_points(enabled):
    api = V2_V3_API.replace("@@ENABLED@@", enabled)
    entry = read_entry_points(parse_dispatch(api))
    assert entry.entries == ["fmha_fwd"]
    callees = [(c.callee, c.never) for c in entry.calls]
    assert callees == [("fmha_fwd_v3", enabled == "false"), ("fmha_fwd_v2", False)]
    report = link_report(api, _kernels("v2.cpp", "v3.cpp", "extra.cpp"))
    assert report.links and report.unreferenced == ["extra.cpp"]
    if enabled == "false":
        assert list(report.unreachable) == ["v3.cpp"]
        assert "always false" in never_run_text(report.unreachable["v3.cpp"])
        assert "fmha_fwd_v3" in entry.dead
    else:
        assert report.unreachable == {} and entry.dead == {}


#: the entry of rocm-libraries' CK at the end of 2026: v3 is tried first for prefill
#: calls, and v2 runs when v3 declines (returns a negative time)
V3_FIRST_ENTRY = """
    float fmha_fwd(fmha_fwd_traits traits, fmha_fwd_args args, const toy::stream_config& config) {
        if (args.max_seqlen_q > 1) {
            float r = fmha_fwd_v3(traits, args, config);
            if (r >= 0) return r;
        }
        return fmha_fwd_v2(traits, args, config);
    }
"""


def test_v3_tried_first_keeps_both_paths_reachable():
    head = V2_V3_API[:V2_V3_API.index("float fmha_fwd(fmha_fwd_traits traits")]
    api = head + textwrap.dedent(V3_FIRST_ENTRY)
    entry = read_entry_points(parse_dispatch(api))
    assert entry.entries == ["fmha_fwd"]
    assert [(c.callee, c.never) for c in entry.calls] == [("fmha_fwd_v3", False),
                                                          ("fmha_fwd_v2", False)]
    assert entry.dead == {}
    report = link_report(api, _kernels("v2.cpp", "v3.cpp"))
    assert report.links and report.unreachable == {} and report.unreferenced == []


SHADOWED_API = textwrap.dedent(r"""
    #include "fmha_fwd.hpp"
    float fmha_fwd(fmha_fwd_traits t, fmha_fwd_args a, const toy::stream_config& s) {
        float r = -1;
        if(t.data_type.compare("fp16") == 0) {
            if((t.is_group_mode == false) && (a.seqlen_k % 64 == 0)) {
                using trait_ = fmha_fwd_traits_<128, FmhaFwdFp16, false, Pipeline::QRKSVS>;
                return fmha_fwd_<trait_, toy::gfx9_t>(s, a);
            }
            else if((t.is_group_mode == false) && (a.seqlen_k % 128 == 0)) {
                using trait_ = fmha_fwd_traits_<128, FmhaFwdFp16, false, Pipeline::QRKSVS_ASYNC>;
                return fmha_fwd_<trait_, toy::gfx9_t>(s, a);
            }
            else if((t.is_group_mode == false)) {
                using trait_ = fmha_fwd_traits_<128, FmhaFwdFp16, false, Pipeline::QRKSVS_V3>;
                return fmha_fwd_<trait_, toy::gfx950_t>(s, a);
            }
        }
        return r;
    }
""")


def test_a_branch_behind_an_earlier_one_of_its_chain_is_unreachable():
    """`seqlen_k % 128 == 0` implies `seqlen_k % 64 == 0`: the second branch of the chain
    is never tried (the first takes its calls); the third takes the other sizes."""
    report = link_report(SHADOWED_API, _kernels("v2.cpp", "v3.cpp", "extra.cpp"))
    assert report.links and report.unreferenced == []
    assert list(report.unreachable) == ["extra.cpp"]
    assert "seqlen_k % 64 == 0" in never_run_text(report.unreachable["extra.cpp"])


def test_link_report_missing_specialisation():
    api = V2_V3_API.replace("@@ENABLED@@", "false")
    report = link_report(api, _kernels("v2.cpp"))
    # a disabled path still instantiates its kernel: the build would not link
    assert not report.links
    assert [(f, t) for f, t, _ in report.missing] == [("fmha_fwd_v3", "fmha_fwd_traits_")]


def test_rule_object_receipts():
    import ast

    from sphinxext_fmha.analysis.source.receipt_collector import rule_object_receipts

    source = textwrap.dedent('''
        def get_product(receipt: int):
            # Flash attention integration
            if receipt == 2:
                def fit(problem_ctx, kernel_ctx) -> bool:
                    cond = problem_ctx.dtype in ["fp16", "bf16"]
                    cond &= kernel_ctx.pipeline.F_bias in ["no", "alibi"]
                    if problem_ctx.dtype == "fp8bf16":
                        cond &= problem_ctx.hdim == 128
                    return cond
                return Product(name="Flash attention integration", rule=fit)
            elif receipt in (100, 101):
                def fit(problem_ctx, kernel_ctx) -> bool:
                    return problem_ctx.mode == "batch"
                return Product(name="Aiter", rule=fit)
            else:
                def fit(problem_ctx, kernel_ctx) -> bool:
                    return problem_ctx.dtype != "fp32"
                return Product(name="Default", rule=fit)
    ''')
    receipts = rule_object_receipts(ast.parse(source), {"receipt"}, lambda v: "",
                                    lambda node: "m.py:%d" % node.lineno, lambda line: "")
    by_value = {r.value: r for r in receipts}
    assert list(by_value) == ["2", "100", "101", "other"]
    assert by_value["2"].label == "Flash attention integration"
    assert "kernel_ctx.pipeline.F_bias in ['no', 'alibi']" in by_value["2"].conditions
    assert "problem_ctx.hdim == 128 (when problem_ctx.dtype == 'fp8bf16')" in by_value["2"].conditions
    assert by_value["101"].conditions == ["problem_ctx.mode == 'batch'"]
    assert by_value["other"].label == "Default" and "other than 2, 100, 101" in receipt_reading(
        by_value["other"])


# --------------------------------------------------------------------------- synthetic trees


def test_synthetic_v2_v3_tree_guide_lists_the_disabled_path(synthetic_tree, tmp_path):
    from sphinxext_fmha.guide import collect_guide
    from sphinxext_fmha.render.markdown import guide_markdown

    root = synthetic_tree("v2_v3")
    session = Session(root, cache_dir=tmp_path / "cache")
    reading = session.dispatch_reading("toy")
    api = generate(root, "toy", tmp_path / "out")
    api_text = next(api.rglob("fmha_toy_api.cpp")).read_text()
    # independent: the trait declarations inside the body of fmha_toy_v3
    v3_body = api_text.split("static float fmha_toy_v3(", 1)[1].split("\nfloat fmha_toy(", 1)[0]
    v3_traits = len(re.findall(r"using\s+trait_\s*=", v3_body))
    assert v3_traits > 0
    assert reading["entries"] == ["fmha_toy"]
    assert set(reading["dead"]) == {"fmha_toy_v3"}
    assert len(reading["unreachable"]) == v3_traits
    assert reading["unreferenced"] == [] and reading["missing"] == []
    text = guide_markdown(collect_guide(session, "toy", sections=["dispatch"]), ["dispatch"])
    assert "Not reachable:" in text and "`false and can_dispatch_v3`" in text
    assert "Referenced but unreachable:" in text
    assert "No unreachable kernel" not in text


def test_synthetic_v3_first_kernels_carry_their_functions_terms(synthetic_tree, tmp_path):
    """2026 CK's entry tries ``fmha_toy_v3`` first when ``a.max_seqlen_q > 1``: every
    kernel v3 launches needs that and the conditions of its branches in v3 (its dtype's
    under the dtype token, its bias under the bias token), and no v2 kernel needs it.
    Oracle: the regex reader on the v3 function's text alone, and the entry's ``if``
    before the call of v3, read here."""
    import shutil

    from sphinxext_fmha.verify.token_facts import token_dispatch

    root = synthetic_tree("v3_first")
    session = Session(root, cache_dir=tmp_path / "cache")
    out = generate(root, "toy", tmp_path / "out")
    api_text = (out / "fmha_toy_api.cpp").read_text()
    entry = re.search(r"if\s*\(([^{]*)\)\s*\{\s*float\s+r\s*=\s*fmha_toy_v3\(", api_text)
    assert entry is not None
    entry_term = _norm(entry.group(1))
    # the v3 function alone, as an API file, beside the kernels: its leaves' terms
    v3_body = api_text.split("static float fmha_toy_v3(", 1)[1].split("\nfloat fmha_toy(", 1)[0]
    only_v3 = tmp_path / "only_v3"
    only_v3.mkdir()
    for path in out.glob("fmha_toy_d*.cpp"):
        shutil.copy(path, only_v3 / path.name)
    (only_v3 / "fmha_toy_api.cpp").write_text(v3_body)
    v3_leaves = oracle_conditions(only_v3)
    assert 0 < len(v3_leaves) < len(list(out.glob("fmha_toy_d*.cpp")))

    model = session.model("toy")
    files = sorted(p.name for p in out.glob("fmha_toy_d*.cpp"))
    facts = token_dispatch(model, files, session.dispatch_reading("toy"))
    (kernel_type,) = model.kernel_types
    labels = [s.label for s in kernel_type.segments]
    shared = {_norm(cpp) for cpp, _ in facts.shared.get(kernel_type.class_name, [])}
    per_file: Dict[str, Dict[str, List[str]]] = {}  # file -> segment -> its group's terms
    for (_, index), by_token in facts.groups.items():
        for groups in by_token.values():
            for group in groups:
                assert not group.unreached
                for name in group.files:
                    per_file.setdefault(name, {})[labels[index]] = [_norm(c) for c in group.cpp]
    for name in files:
        found = {t for terms in per_file[name].values() for t in terms} | shared
        if name not in v3_leaves:
            assert entry_term not in found, name
            continue
        hdim, dtype = re.match(r"fmha_toy_d(\d+)_([a-z0-9]+)_", name).groups()
        dtype_term = _norm('t.data_type.compare("%s") == 0' % dtype)
        hdim_term = _norm("t.hdim_q <= %s" % hdim)
        assert dtype_term in _norm(v3_body) and hdim_term in _norm(v3_body)
        assert dtype_term in per_file[name]["dtype"], (name, per_file[name])
        bias_terms = [t for t in v3_leaves[name] if t.startswith("t.bias_type")]
        assert bias_terms and bias_terms[0] in per_file[name]["bias"], (name, per_file[name])
        # exact: the entry's term, the dtype level's, the hdim level's and the leaf's
        assert found == set(v3_leaves[name]) | {entry_term, dtype_term, hdim_term}, name


def test_synthetic_rule_receipts_are_read(synthetic_tree, tmp_path):
    from helpers.independent import independent_listing

    root = synthetic_tree("rule_receipts")
    session = Session(root, cache_dir=tmp_path / "cache")
    receipts = {r.value: r for r in session.model("toy").receipts}
    assert "not referenced" not in receipt_reading(receipts["2"])
    assert "mode == 'batch'" in receipts["2"].conditions
    assert receipts["3"].conditions == ["pipeline.F_lse == 'f'"]
    assert receipts["other"].label == "Default"
    # what receipt 3 keeps, measured: no kernel with lse
    kept = independent_listing(root, "toy", tmp_path, "-r", "3")
    assert kept and not any(re.search(r"_lse(_|\.cpp|$)", name) for name in kept)


def test_a_help_range_part_that_no_rule_tests_is_unreferenced(synthetic_tree, tmp_path):
    # 2026 CK's fwd: the help names 100-199, the rule objects test 100 and have a default
    # rule; -r 150 takes the default rule, so 101-199 is a range the module never tests
    root = synthetic_tree("rule_receipts")
    generate = root / "example/ck_tile/01_fmha/generate.py"
    text = generate.read_text(encoding="utf-8")
    assert text.count("  2: a small set") == 1
    generate.write_text(text.replace("  2: a small set", "  2-9: a small set"), encoding="utf-8")
    # and the rule object taken once, as 2026 CK does, not called in an ``if receipt`` test
    module = root / "example/ck_tile/01_fmha/codegen/ops/fmha_toy.py"
    text = module.read_text(encoding="utf-8")
    for old, new in (("if not get_product(receipt)(dtype, mode, pipeline):",
                      "if not product(dtype, mode, pipeline):"),
                     ("    api_pool = ToyApiPool(mask_impl)\n",
                      "    api_pool = ToyApiPool(mask_impl)\n    product = get_product(receipt)\n")):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    module.write_text(text, encoding="utf-8")
    receipts = Session(root, cache_dir=tmp_path / "cache").model("toy").receipts
    unreferenced = sorted(r.value for r in receipts if r.kind == "unreferenced")
    assert unreferenced == ["0", "4-9"]


@_group("flash-attn-2.8.3", "batch_prefill")
def test_pad_try_order_matches_the_api_file(corpus_root, sessions):
    """The try order the guide reports for the pad segment is the source order of the
    kernels' `if` blocks in the API file (read here with the regex reader)."""
    from sphinxext_fmha.verify.token_facts import token_dispatch

    name, api = "flash-attn-2.8.3", "batch_prefill"
    session = _session(sessions, corpus_root, name)
    model = session.model(api)
    listing = session.runner.list_kernels(session.tree.request(api, Options()))
    facts = token_dispatch(model, listing.files, session.dispatch_reading(api))
    orders = facts.orders[("FmhaFwdKernel", "pad")]
    folder = cached_write(corpus_root(name), api)
    api_text = next(folder.glob("*_api.cpp")).read_text()
    at = {}
    for m in _LEAF.finditer(api_text):
        at.setdefault(_norm(m.group(3)), m.start())
    position = {}
    for path in folder.glob("*.cpp"):
        text = _COMMENT.sub("", path.read_text())
        aliases = {m.group(1): _norm(m.group(2)) for m in _USING.finditer(text)}
        m = re.search(r"template\s*<\s*>\s*[\w:]+\s+\w+\s*<\s*(\w+)", text)
        if m and m.group(1) in aliases:
            trait = _expand(aliases[m.group(1)], aliases, m.group(1))
            if trait in at:
                position[path.name] = at[trait]
    pairs = [(position[f], position[f.replace("_psddv_", "_psskddv_")])
             for f in position if "_psddv_" in f and f.replace("_psddv_", "_psskddv_") in position]
    assert pairs
    first = sum(1 for a, b in pairs if a < b)
    assert orders.get(("_psddv", "_psskddv"), 0) == first == len(pairs)


#: one branch of a flat ``if``/``else if`` chain and the traits it declares
_BRANCH = re.compile(r"if\s*\(((?:[^{}])*?)\)\s*\{\s*((?:using\s+\w+\s*=\s*[^;]+;\s*)+)", re.S)


def _branches(api_text: str):
    """(scope, terms, {trait kind: trait}) of each branch of the API file: the scope is
    the first two template arguments (hdim, data type) of its first trait, which the
    enclosing ``if`` levels test."""
    out = []
    for m in _BRANCH.finditer(_COMMENT.sub("", api_text)):
        traits = {re.match(r"(\w+_traits_)", _norm(t)).group(1): _norm(t)
                  for _, t in _USING.findall(m.group(2)) if re.match(r"\s*\w+_traits_", t)}
        if len(traits) > 1:
            first = next(iter(traits.values()))
            scope = tuple(first[first.index("<") + 1:].split(",")[:2])
            out.append((scope, frozenset(oracle_terms(m.group(1))), traits))
    return out


@_group("flash-attn-2.8.3", "bwd")
def test_bwd_choices_say_which_traits_the_parted_branches_change(corpus_root, sessions):
    """Read from the branches, not assumed from the order of the call's traits: two
    branches whose terms differ in one term each launch some kernels alike and others
    not; the choices list exactly those pairs, with the kinds kept and the kinds chosen.
    ``% 32 == 0 and % 64 != 0`` against ``% 64 == 0`` keeps the dq_dk_dv kernel and picks
    the dot_do_o and convert_dq ones (the audit's F3: it was said to keep dot_do_o)."""
    session = _session(sessions, corpus_root, "flash-attn-2.8.3")
    reading = session.dispatch_reading("bwd")
    api_text = session.runner.generate_api_file(session.tree.request("bwd", Options())).text
    # independent: branches keyed by their scope and every term but one
    by_rest: Dict[tuple, Dict[str, dict]] = {}
    for scope, terms, traits in _branches(api_text):
        for term in terms:
            by_rest.setdefault((scope, terms - {term}), {}).setdefault(term, traits)
    oracle: Dict[frozenset, set] = {}
    for sides in by_rest.values():
        items = list(sides.items())
        for i, (x, a) in enumerate(items):
            for y, b in items[i + 1:]:
                kept = frozenset(k for k in a if a[k] == b.get(k))
                chosen = frozenset(a) - kept
                if kept and chosen:
                    oracle.setdefault(frozenset((x, y)), set()).add((kept, chosen))
    assert oracle
    said = {}
    for choice in reading["choices"]:
        assert choice["other"] is not None, choice  # (a flat chain: no `else` choices)
        pair = frozenset(_unwrap(_norm(c)) for c in (choice["condition"], choice["other"]))
        said.setdefault(pair, set()).add((frozenset(choice["kept_kinds"].split(", ")),
                                          frozenset(choice["chosen_kinds"].split(", "))))
    assert said == oracle
    seqlen = frozenset(("a.seqlen_q%32==0anda.seqlen_q%64!=0", "a.seqlen_q%64==0"))
    assert oracle[seqlen] == {(frozenset({"fmha_bwd_dq_dk_dv_traits_"}),
                               frozenset({"fmha_bwd_dot_do_o_traits_",
                                          "fmha_bwd_convert_dq_traits_"}))}


@_group("flash-attn-2.8.3", "bwd")
def test_a_kernel_whose_branches_part_on_one_term_has_their_either_or(corpus_root, sessions):
    """The batch no-``s``-pad dq_dk_dv kernels are launched under ``a.seqlen_q % 32 == 0
    and a.seqlen_q % 64 != 0`` and under ``a.seqlen_q % 64 == 0``: no branch reaches them
    without a seqlen_q term. Their conditions carry the ``||`` of those two terms, not
    only the terms both branches share (the audit's F2). Independently: the branches of
    the written API file that declare each dq_dk_dv trait."""
    session = _session(sessions, corpus_root, "flash-attn-2.8.3")
    reading = session.dispatch_reading("bwd")
    folder = cached_write(corpus_root("flash-attn-2.8.3"), "bwd", "-f",
                          "*_d32_fp16_*@*_d32_fp16_*@*_d32_fp16_*")
    launches: Dict[str, List[frozenset]] = {}
    for _, terms, traits in _branches(next(folder.glob("*_api.cpp")).read_text()):
        launches.setdefault(traits["fmha_bwd_dq_dk_dv_traits_"], []).append(terms)
    trait_file: Dict[str, str] = {}  # the trait a kernel file specialises, aliases expanded
    for path in folder.glob("*.cpp"):
        text = _COMMENT.sub("", path.read_text())
        aliases = {m.group(1): _norm(m.group(2)) for m in _USING.finditer(text)}
        m = re.search(r"template\s*<\s*>\s*[\w:]+\s+\w+\s*<\s*(\w+)", text)
        if m and m.group(1) in aliases:
            trait_file[_expand(aliases[m.group(1)], aliases, m.group(1))] = path.name
    checked = 0
    for trait, branches in launches.items():
        shared = frozenset.intersection(*branches)
        extras = [b - shared for b in branches]
        if len(branches) < 2 or any(len(e) != 1 for e in extras):
            continue
        either = {next(iter(e)) for e in extras}
        kernel = reading["kernels"][trait_file[trait]]
        found = [cpp for _, cpp, _ in kernel["terms"] if "||" in cpp]
        assert len(found) == 1, (trait_file[trait], kernel["terms"])
        parts = {_unwrap(p) for p in _norm(found[0]).split("||")}
        assert parts == either, (trait_file[trait], parts, either)
        assert not kernel["varying"], trait_file[trait]
        checked += 1
    assert checked >= 4, checked


@_group("flash-attn-2.8.3", "fwd")
def test_a_level_variable_the_token_table_leaves_out_is_said_token_by_token(
        corpus_root, sessions):
    """2.8.3 fwd's hdim segment is dispatched at level ``(hdim, hdim_v)``, but its
    table's conditions are on ``t.hdim_q`` only: the sentence under it says each token's
    ``t.hdim_v`` terms with their kernel counts, as the independent reader finds them in
    the API file (``_d192``: ``<= 192`` and, for 192 kernels, ``<= 128``)."""
    from collections import Counter

    from sphinxext_fmha.guide import collect_guide
    from sphinxext_fmha.render.markdown import guide_markdown

    name = "flash-attn-2.8.3"
    session = _session(sessions, corpus_root, name)
    text = guide_markdown(collect_guide(session, "fwd", sections=["fields"]), ["fields"])
    line = next(row for row in text.splitlines()
                if row.startswith("The conditions above leave out `hdim_v`"))
    said = {}
    for token, terms in re.findall(r"`(_d\d+)`: (.*?)(?:;|\.$)", line):
        found = re.findall(r"`([^`]*)`(?: \((\d+) kernels\))?", terms)
        said[token] = {term: int(count) if count else None for term, count in found}
    folder = cached_write(corpus_root(name), "fwd")
    # the oracle: each leaf's trait under the last `if (...t.hdim_v...)` header before it
    api = next(folder.glob("*_api.cpp")).read_text()
    headers = [(m.start(), _norm(m.group(1))) for m in re.finditer(
        r"if\s*\(\s*t\.hdim_q\s*<=\s*\d+\s*&&\s*(t\.hdim_v\s*<=\s*\d+)\s*\)", api)]
    under = {}
    for m in _LEAF.finditer(api):
        before = [term for at, term in headers if at < m.start()]
        if before:
            under.setdefault(_norm(m.group(3)), before[-1])
    expected: Dict[str, Counter] = {}
    for path in folder.glob("*.cpp"):
        text = _COMMENT.sub("", path.read_text())
        aliases = {u.group(1): _norm(u.group(2)) for u in _USING.finditer(text)}
        head = re.search(r"template\s*<\s*>\s*[\w:]+\s+\w+\s*<\s*(\w+)", text)
        token = re.search(r"_(d\d+)_", path.name)
        if not head or head.group(1) not in aliases or not token:
            continue
        term = under.get(_expand(aliases[head.group(1)], aliases, head.group(1)))
        if term:
            expected.setdefault("_" + token.group(1), Counter())[term] += 1
    assert set(said) == set(expected), (said, expected)
    for token, counts in expected.items():
        shown = {term.replace(" ", ""): n for term, n in said[token].items()}
        if len(counts) == 1:
            assert list(shown) == list(counts) and list(shown.values()) == [None], token
        else:
            assert shown == dict(counts), (token, shown, counts)
    assert len(expected["_d192"]) == 2


@_group("flash-attn-2.8.3", "bwd")
def test_bwd_terms_every_launch_of_a_dot_do_o_kernel_has_select_it_and_are_no_choice(
        corpus_root, sessions):
    """2.8.3 bwd launches each dot_do_o kernel from many branches, which part on the
    mask, bias, dropout... of its dq_dk_dv partner. A term all of them have (the batch
    ``t.is_group_mode == false``) selects the dot_do_o kernel itself: it is among that
    kernel's conditions, and the sub-kernel choices that keep the dot_do_o kernel (the
    condition "selects the ... kernels, not the dot_do_o kernel") do not list it.
    Independently: the branches of the written API file that declare each dot_do_o
    trait, read by regex."""
    session = _session(sessions, corpus_root, "flash-attn-2.8.3")
    reading = session.dispatch_reading("bwd")
    # d32 fp16 only: every branch of those kernels is written, in every part of the filter
    folder = cached_write(corpus_root("flash-attn-2.8.3"), "bwd", "-f",
                      "*_d32_fp16_*@*_d32_fp16_*@*_d32_fp16_*")
    api = _COMMENT.sub("", next(folder.glob("*_api.cpp")).read_text())
    launches: Dict[str, List[set]] = {}  # dot_do_o trait -> each branch's terms
    for m in re.finditer(r"if\s*\(((?:[^{}])*?)\)\s*\{\s*using\s+dot_do_o_trait_\s*=\s*"
                         r"([^;]+);", api, re.S):
        launches.setdefault(_norm(m.group(2)), []).append(set(oracle_terms(m.group(1))))
    assert len(launches) >= 4, launches.keys()
    trait_file: Dict[str, str] = {}  # dot_do_o trait -> its kernel file
    for path in folder.glob("fmha_bwd_dot_do_o_*.cpp"):
        text = _COMMENT.sub("", path.read_text())
        m = re.search(r"using\s+\w+\s*=\s*(fmha_bwd_dot_do_o_traits_\s*<[^;]*>)\s*;", text)
        assert m, path.name
        trait_file[_norm(m.group(1))] = path.name
    checked = partial = 0
    for trait, branches in launches.items():
        shared = set.intersection(*branches)
        assert any(t.startswith("t.is_group_mode==") for t in shared), (trait, shared)
        assert len(branches) > 1
        kernel = reading["kernels"][trait_file[trait]]
        terms = {_unwrap(_norm(cpp)) for _, cpp, _ in kernel["terms"]}
        assert shared <= terms, (trait_file[trait], shared - terms)
        # launched under different seqlen_q terms (the batch _ps kernel: `% 32 != 0` or
        # `% 32 == 0 and % 64 != 0`): not for every seqlen_q, so the page marks it
        seqlen = {t for b in branches for t in b if t.startswith("a.seqlen_q")} - shared
        if len(seqlen) > 1:  # and says what the other branches test: seqlen_q
            assert kernel["varying"], (trait_file[trait], seqlen)
            assert "a.seqlen_q" in kernel["more"], (trait_file[trait], kernel["more"])
            partial += 1
        checked += 1
    assert checked == len(launches) and partial
    # a choice that keeps the dot_do_o kernel parts some of its branches: some have the
    # condition, some not (the conditions of the d32 branches: the others are not here)
    written = set().union(*(b for branches in launches.values() for b in branches))
    listed = {_unwrap(_norm(c["condition"])) for c in reading["choices"]
              if "fmha_bwd_dot_do_o_traits_" in c["kept_kinds"].split(", ")} & written
    assert len(listed) > 5, listed
    for condition in listed:
        parts = [trait for trait, branches in launches.items()
                 if any(condition in b for b in branches)
                 and not all(condition in b for b in branches)]
        assert parts, condition
    # and the terms every branch of one kernel has are no choice
    for trait, branches in launches.items():
        assert not set.intersection(*branches) & listed, trait


#: rocm-libraries' bwd API at the end of 2026: a launcher object's constructor tests the
#: branches of fmha_bwd<2> and hands the traits to ``this->init`` instead of launching
LAUNCHER_API = textwrap.dedent(r"""
    #include "fmha_bwd.hpp"
    fmha_bwd_launcher::fmha_bwd_launcher(const fmha_bwd_traits& t){
        if(t.data_type.compare("fp16") == 0) {
            if(t.hdim_q <= @@BOUND@@) {
                using trait_ = fmha_bwd_traits_<64, FmhaBwdFp16, false>;
                this->init<trait_, toy::gfx9_t>(t);
                return;
            }
        }
    }
    template <>
    float fmha_bwd<2>(const fmha_bwd_traits& t, fmha_bwd_args a, const toy::stream_config& s){
        float r = -1;
        if(t.data_type.compare("fp16") == 0) {
            if(t.hdim_q <= 64) {
                using trait_ = fmha_bwd_traits_<64, FmhaBwdFp16, false>;
                r = fmha_bwd_<trait_, toy::gfx9_t>(s, a);
                return r;
            }
        }
        return r;
    }
""")


@pytest.mark.parametrize("bound", ["64", "128"])
def test_a_launcher_with_the_entry_points_branches_is_its_twin(bound):
    reading_tree = parse_dispatch(LAUNCHER_API.replace("@@BOUND@@", bound))
    entry = read_entry_points(reading_tree)
    assert entry.entries == ["fmha_bwd<2>"]
    if bound == "64":  # the same branches and declarations, statement for statement
        assert entry.twins == {"fmha_bwd_launcher::fmha_bwd_launcher":
                               {"of": "fmha_bwd<2>", "call": "this->init"}}
    else:  # one condition differs: not the entry point's choices
        assert entry.twins == {}
