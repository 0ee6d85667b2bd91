"""The C++ reader's fast paths give what the plain rules give: masking that jumps from
candidate to candidate, keys read once per distinct specialisation, statement blocks and
headers read once per text, terms compared by identity. Each is checked against a direct
implementation or hand-written expectations here."""

from __future__ import annotations

import gc
import random
import re

from sphinxext_fmha.cppapi.entry_points import read_entry_points
from sphinxext_fmha.cppapi.masking import _mask, mask_code_only, strip_comments
from sphinxext_fmha.cppapi.matching import kernel_trait_key, match_leaves_to_kernels
from sphinxext_fmha.cppapi.parse import parse_dispatch
from sphinxext_fmha.cppapi.reach import kernel_reach
from sphinxext_fmha.cppapi.reading import read_dispatch

# --------------------------------------------------------------------------- masking


def _pieces(text: str) -> list:
    """(start, end, kind) of comments, literals and preprocessor lines, read character by
    character: a preprocessor line starts at a line start whose blanks lead to ``#`` and
    runs on over lines ending in a backslash; anything that does not close is no piece."""
    pieces, i, n = [], 0, len(text)
    while i < n:
        line_start = i == 0 or text[i - 1] == "\n"
        j = i
        while line_start and j < n and text[j] in " \t":
            j += 1
        if line_start and j < n and text[j] == "#":
            end = text.find("\n", j)
            while end >= 0 and text[end - 1] == "\\":
                end = text.find("\n", end + 1)
            end = n if end < 0 else end
            pieces.append((i, end, "pp"))
            i = end
            continue
        c, two = text[i], text[i:i + 2]
        end = None
        if two == "//":
            newline = text.find("\n", i)
            end, kind = (n if newline < 0 else newline), "comment"
        elif two == "/*":
            close = text.find("*/", i + 2)
            end, kind = (close + 2 if close >= 0 else None), "comment"
        elif c in "\"'":
            k, count = i + 1, 0
            while k < n and text[k] not in (c, "\n"):
                if text[k] == "\\":
                    if k + 1 >= n or text[k + 1] == "\n":
                        break
                    k += 1
                k += 1
                count += 1
            closed = k < n and text[k] == c and (c == '"' or count == 1)
            end, kind = (k + 1 if closed else None), "literal"
        if end is None:
            i += 1
            continue
        pieces.append((i, end, kind))
        i = end
    return pieces


def _oracle_mask(text: str):
    def blank(piece: str) -> str:
        return re.sub(r"[^\n]", " ", piece)

    code, raw, stripped, last = [], [], [], 0
    for start, end, kind in _pieces(text):
        piece = text[start:end]
        for out in (code, raw, stripped):
            out.append(text[last:start])
        if kind == "literal":
            code.append(piece[0] + " " * (len(piece) - 2) + piece[-1])
        else:
            code.append(blank(piece))
        raw.append(blank(piece) if kind == "pp" else piece)
        stripped.append(" " if kind == "comment" else piece)
        last = end
    for out in (code, raw, stripped):
        out.append(text[last:])
    return "".join(code), "".join(raw), "".join(stripped)


def test_masking_against_a_character_loop():
    cases = [
        '  #include "a.hpp" // x\nint a; /* b */ char c = \'"\';',
        "x # not a directive // but a comment\n\t #define M(a) \\\n  a /* in */\nint y;",
        "/* starts\n*/  #define Z 1\nint z;",  # the comment covers the line start: code
        'auto s = "esc \\" quote // no comment"; /* open',
        "'ab' '\\n' \"\\\n\" #",
    ]
    rng = random.Random(7)
    alphabet = ["/", "*", '"', "'", "#", "\\", "\n", " ", "\t", "a", "//", "/*", "*/", "\r"]
    cases += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 18)))
              for _ in range(20000)]
    for text in cases:
        code, raw, stripped = _oracle_mask(text)
        assert _mask(text) == (code, raw), repr(text)
        assert mask_code_only(text) == code, repr(text)
        assert strip_comments(text) == stripped, repr(text)


# --------------------------------------------------------------------------- kernel keys

_KERNEL = """// a toy kernel file {note}
#include "toy_ops.hpp"
using dtype_0 = ToyFp16;
using pipeline_0 = toy::Problem<dtype_0, /* BlockSize = */ 256, {tile}>;
using trait_0 = toy_traits_<{tile}, dtype_0, false, (8 > 4)>;
{extra}
template <>
float toy_run_<trait_0, arch_a1>(const toy::stream_config& s, toy_args a)
{{
    std::cout << ", " << "template<> float f<x_>()" << std::flush;
    return toy::launch_kernel(s, make_kernel<pipeline_0>(a));
}}

template<>
void toy_oneshot_<trait_0, arch_a1>(const toy::stream_config& s, toy_args a)
{{
}}
"""


def test_kernel_keys_with_and_without_comments_and_strings():
    expected = "toy_traits_<{tile},ToyFp16,false,true>,arch_a1"
    for tile in (64, 128):
        plain = _KERNEL.format(note="", tile=tile, extra="")
        bare = re.sub(r"//[^\n]*|/\*.*?\*/|#[^\n]*", "", plain)
        bare = re.sub(r'<< "[^"]*"', "", bare)
        assert "//" not in bare and '"' not in bare
        decoys = _KERNEL.format(
            note="template<> float toy_run_<decoy_, arch_a1>()", tile=tile,
            extra='// using trait_0 = other_traits_<1>;\n/* template <> int f<trait_0>(); */\n'
                  'const char* s = "using trait_0 = x_<2>;";\n'
                  'xusing trait_0 = y_<3>; // a longer name is no `using`\n'
                  'mytemplate<> int g<trait_0, other>();')
        for text in (plain, bare, decoys):
            assert kernel_trait_key(text) == expected.format(tile=tile), text


def test_kernel_key_lists_each_distinct_specialisation_once_in_order():
    text = """using a_ = k_traits_<1>;
    using b_ = k_traits_<2>;
    template<> float run_<a_>(int);
    template<> float name_<a_>();
    template<> float run_<b_, a_>(int);
    template<> float run_<b_>(int);"""
    assert kernel_trait_key(text) == "k_traits_<1>\nk_traits_<2>"


# --------------------------------------------------------------------------- dispatch


_DISPATCH = """
float run_one(traits t) {{
    using outer_ = ns::tile<{tile}>;
    if (t.a == 1) {{ using trait_ = k_traits_<outer_, 1>; return k_<trait_>(t); }}
    else {{ using trait_ = k_traits_<outer_, 2>; return k_<trait_>(t); }}
}}
"""


def test_repeated_statement_blocks_are_read_under_their_own_outer_aliases():
    # the same leaf statements, under another enclosing alias: other traits
    text = _DISPATCH.format(tile=64) + _DISPATCH.format(tile=128).replace("run_one", "run_two")
    tree = parse_dispatch(text)
    assert [(leaf.function, leaf.trait_args) for leaf in tree.leaves] == [
        ("run_one", ["k_traits_<ns::tile<64>,1>"]),
        ("run_one", ["k_traits_<ns::tile<64>,2>"]),
        ("run_two", ["k_traits_<ns::tile<128>,1>"]),
        ("run_two", ["k_traits_<ns::tile<128>,2>"]),
    ]
    # a filtered file: a subset of the same branches, read again (from the memos)
    subset = parse_dispatch(_DISPATCH.format(tile=128).replace("run_one", "run_two")
                            .replace("else {", "else if (t.b) {"))
    assert [(leaf.order, leaf.conditions, leaf.trait_args) for leaf in subset.leaves] == [
        (0, ["t.a == 1"], ["k_traits_<ns::tile<128>,1>"]),
        (1, ["t.b"], ["k_traits_<ns::tile<128>,2>"]),
    ]
    assert [leaf.line for leaf in subset.leaves] == [4, 5]


def test_branches_an_if_constexpr_chooses_are_told_from_per_call_ones():
    """2.8.3 fwd_splitkv's ``if (t.has_lse) { if constexpr (is_same_v<...>) {...} else
    { launch } }``: the ``else`` of the ``if constexpr`` is chosen when compiling, the
    ``if (t.has_lse)`` per call; the leaf says which of its conditions are which."""
    text = """
    float run(traits t) {
        if (t.x) {
            if constexpr (std::is_same_v<A, B>) { return -1; }
            else { using trait_ = k_traits_<1>; return k_<trait_>(t); }
        } else {
            if constexpr (C) { using trait_ = k_traits_<2>; return k_<trait_>(t); }
            if (t.y) { using trait_ = k_traits_<3>; return k_<trait_>(t); }
        }
    }
    """
    tree = parse_dispatch(text)
    assert [(leaf.trait_args, len(leaf.conditions), leaf.compile_time)
            for leaf in tree.leaves] == [
        (["k_traits_<1>"], 2, (1,)),  # t.x per call, the constexpr else when compiling
        (["k_traits_<2>"], 2, (1,)),  # the else of t.x per call, C when compiling
        (["k_traits_<3>"], 2, ()),  # the else of t.x, t.y: both per call
    ]


def test_terms_shared_by_different_conditions_are_common_terms():
    # two leaves reach one kernel through different conditions with an equal first term
    # (distinct condition texts, equal terms): the term is common; the one other term
    # each adds, in one slot, is said as their `||` (2024 bwd's no-s-pad kernel)
    text = """
    float run(traits t) {
        if (t.x && (t.y == 1 && t.w)) { using trait_ = k_traits_<1>; return k_<trait_>(t); }
        else if (t.x && t.z) { using trait_ = k_traits_<1>; return k_<trait_>(t); }
    }
    """
    tree = parse_dispatch(text)
    match = match_leaves_to_kernels(tree, {"k.cpp": "k_traits_<1>"})
    reach, _ = kernel_reach(tree, match)
    assert [term.cpp for term in reach["k.cpp"].terms] == ["t.x", "(t.y == 1 && t.w) || t.z"]
    assert not reach["k.cpp"].varying and reach["k.cpp"].leaves == [0, 1]


def test_branches_differing_in_several_terms_say_what_else_they_test():
    # the leaves add terms in different slots: no one `||` says it; the kernel is
    # varying, and `more` names what the other branches also test
    text = """
    float run(traits t) {
        if (t.x && a.q % 64 == 0 && a.k > 1) { using trait_ = k_traits_<1>; return k_<trait_>(t); }
        else if (t.x && a.q % 32 == 0 && a.k > 2) { using trait_ = k_traits_<1>; return k_<trait_>(t); }
        else if (t.x && t.mask == mask_enum::no_mask) { using trait_ = k_traits_<1>; return k_<trait_>(t); }
    }
    """
    tree = parse_dispatch(text)
    match = match_leaves_to_kernels(tree, {"k.cpp": "k_traits_<1>"})
    reach, _ = kernel_reach(tree, match)
    assert [term.cpp for term in reach["k.cpp"].terms] == ["t.x"]
    assert reach["k.cpp"].varying
    assert reach["k.cpp"].more == ["a.q", "a.k", "t.mask"]


def test_terms_common_to_two_dispatch_functions_are_common_terms():
    # newer CK dispatches each bwd kernel from two functions with the same branches: the
    # terms both have (by their text) are the kernel's, the one only one has is not
    text = """
    float run_a(traits t) {
        if (t.x) { if (t.y == 1) { using trait_ = k_traits_<1>; return k_<trait_>(t); } }
    }
    float run_b(traits t) {
        if (t.x) { if (t.y == 1 && t.w) { using trait_ = k_traits_<1>; return k_<trait_>(t); } }
    }
    """
    tree = parse_dispatch(text)
    match = match_leaves_to_kernels(tree, {"k.cpp": "k_traits_<1>"})
    reach, _ = kernel_reach(tree, match)
    assert reach["k.cpp"].functions == ["run_a", "run_b"]
    assert [term.cpp for term in reach["k.cpp"].terms] == ["t.x", "t.y == 1"]


def test_calls_between_dispatch_functions_only_where_the_name_stands_alone():
    text = """
    float run_b(traits t) { using trait_ = k_traits_<1>; return k_<trait_>(t); }
    float run_a(traits t) {
        if (t.x) { return ns::run_b(t) + obj.run_b(t) + p->run_b(t) + xrun_b(t); }
        else { return run_b (t); }
    }
    """
    calls = read_entry_points(parse_dispatch(text)).calls
    assert [(c.caller, c.callee, c.conditions) for c in calls] == [("run_a", "run_b", ["!(t.x)"])]


def test_reading_leaves_the_collector_as_it_found_it():
    text = _DISPATCH.format(tile=32)
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            read_dispatch(text + " " * enabled, {"k.cpp": "k_traits_<ns::tile<32>,1>"})
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_a_choice_says_which_traits_its_branches_change_whatever_their_order():
    # 2024 bwd's shape: the call's first trait (dot_do_o) is not the kernel a condition
    # keeps; the kinds kept and chosen are read from the two branches' traits
    text = """
    float run(traits t, args a) {
        if (t.m == 0 && a.q % 32 != 0) {
            using d_ = d_traits_<1>; using k_ = k_traits_<1>; return run_<d_, k_>(t); }
        else if (t.m == 0 && a.q % 64 == 0) {
            using d_ = d_traits_<2>; using k_ = k_traits_<1>; return run_<d_, k_>(t); }
        else if (t.m == 1 && a.q % 64 == 0) {
            using d_ = d_traits_<2>; using k_ = k_traits_<2>; return run_<d_, k_>(t); }
    }
    """
    tree = parse_dispatch(text)
    _, choices = kernel_reach(tree, match_leaves_to_kernels(tree, {}))
    said = {(c.condition, c.other, c.kept_kinds, c.chosen_kinds, c.count) for c in choices}
    assert said == {("a.q % 32 != 0", "a.q % 64 == 0", "k_traits_", "d_traits_", 2),
                    ("t.m == 0", "t.m == 1", "d_traits_", "k_traits_", 2)}
