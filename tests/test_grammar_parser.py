"""The name parser of :class:`~sphinxext_fmha.analysis.grammar.Grammar` against a
brute-force oracle written here: every combination of one token per segment, in the
documented order (each segment's tokens longest first, ties in the order the segment
lists them), kept when it spells the name. Hand-written ambiguous grammars and small
random ones; the parser must give the same first ``limit`` parses, so "exactly one
parse" and "ambiguous" are decided as the oracle decides them."""

from __future__ import annotations

import itertools
import random
from typing import Dict, List

import pytest

from sphinxext_fmha.analysis.grammar import Grammar
from sphinxext_fmha.model import Segment


def oracle(token_sets: List[List[str]], name: str, limit: int) -> List[List[str]]:
    ordered = [sorted(tokens, key=len, reverse=True) for tokens in token_sets]
    found = [list(c) for c in itertools.product(*ordered) if "".join(c) == name]
    return found[:max(limit, 0)]


def grammar_of(token_sets: List[List[str]]) -> Grammar:
    segments = [Segment(label="s%d" % i, tokens={t: "" for t in tokens})
                for i, tokens in enumerate(token_sets)]
    return Grammar(segments=segments)


def spellings(token_sets: List[List[str]]) -> List[str]:
    """Every name the grammar can spell, plus near misses (one character more or less)."""
    names = {"".join(c) for c in itertools.product(*token_sets)}
    near = {n[:-1] for n in names} | {n + "_" for n in names} | {"x" + n for n in names}
    return sorted(names | near)


AMBIGUOUS: Dict[str, List[List[str]]] = {
    "split between two segments": [["fmha"], ["", "_x", "_x_y"], ["", "_y"]],
    "the same token in neighbouring optional segments": [["k"], ["", "_o"], ["", "_o"], ["", "_o"], ["_e"]],
    "a prefix token and its extension": [["a", "ab"], ["b", "bc", ""], ["c", "", "cd"], ["d", ""]],
    "equal lengths, listing order breaks the tie": [["_ab", "_a_", "_a"], ["b", "_b", ""], ["", "_"]],
    "regex metacharacters": [["f.+"], ["", "(x)", "(x"], [")", "", "*"]],
    "every token empty or one letter": [["", "a"], ["", "a"], ["", "a"], ["", "a"]],
}


@pytest.mark.parametrize("case", sorted(AMBIGUOUS))
def test_parses_match_brute_force_on_ambiguous_grammars(case):
    token_sets = AMBIGUOUS[case]
    grammar = grammar_of(token_sets)
    kinds = set()
    for name in spellings(token_sets):
        for limit in (1, 2, 3):
            assert grammar.parses(name, limit) == oracle(token_sets, name, limit), (name, limit)
        expected = oracle(token_sets, name, 2)
        assert grammar.parse(name) == (expected[0] if len(expected) == 1 else None)
        kinds.add(min(len(expected), 2))
    assert kinds == {0, 1, 2}  # the case has unparsed, unique and ambiguous names


def test_parses_match_brute_force_on_random_grammars():
    rng = random.Random(11)
    pieces = ["", "_", "a", "_a", "b", "_b", "ab", "_ab", "a_b", "ba"]
    for _ in range(300):
        token_sets = [rng.sample(pieces, rng.randint(1, 4)) for _ in range(rng.randint(1, 5))]
        grammar = grammar_of(token_sets)
        for name in spellings(token_sets)[:60]:
            assert grammar.parses(name) == oracle(token_sets, name, 2), (token_sets, name)


def test_degenerate_grammars():
    assert grammar_of([]).parses("") == [[]]
    assert grammar_of([]).parses("a") == []
    assert grammar_of([["a"], []]).parses("a") == []
    assert grammar_of([["a"], ["", "b"]]).parses("ab", limit=0) == []


# --------------------------------------------------------------------------- token values


def _record(name, influence, leaves):
    return {"class": "K", "name": name, "influence": influence, "leaves": leaves}


def test_token_values_keep_values_that_compare_equal_but_read_differently():
    """1 == True and 0.0 == -0.0, yet the page shows what the codegen holds: every
    distinct text is its own combination; a dict value shows its ``repr``."""
    from sphinxext_fmha.analysis.grammar import derive_grammar

    values = [1, True, 0.0, -0.0, {"repr": "Foo"}, 1]
    records = [_record("k_v_%s" % tag, {"F_n": [1, 2], "F_t": [2, 3]}, {"F_n": value, "F_t": tag})
               for tag, value in zip(["a", "b", "c", "d", "e", "f"], values)]
    grammar = derive_grammar(records, "K")
    (segment,) = [s for s in grammar.segments if s.fields == ["F_n"]]
    assert segment.values == {"_v": [{"F_n": "-0.0"}, {"F_n": "0.0"}, {"F_n": "1"},
                                     {"F_n": "Foo"}, {"F_n": "True"}]}
    (tags,) = [s for s in grammar.segments if s.fields == ["F_t"]]
    assert list(tags.tokens) == ["_a", "_b", "_c", "_d", "_e", "_f"]


# --------------------------------------------------------------------------- parsed file names


def _model():
    from sphinxext_fmha.model import ApiModel, KernelType

    kernel_types = [
        KernelType("A", False, 0, 0, arch_suffixes=["", "_gfx9"], segments=[
            Segment("name", tokens={"fmha": ""}, literal=True),
            Segment("b", tokens={"": "", "_x": "", "_x_y": ""}),
            Segment("c", tokens={"": "", "_y": ""})]),
        KernelType("B", False, 0, 0, arch_suffixes=[""], segments=[
            Segment("name", tokens={"fmha": ""}, literal=True),
            Segment("d", tokens={"_x": "", "_z": ""})]),
    ]
    return ApiModel(api="fwd", source="x", kernel_types=kernel_types)


def _oracle_parses(model, filename):
    """Every (sub-type, tokens) by brute force over the model's published tokens."""
    found = []
    for kernel_type in model.kernel_types:
        for suffix in kernel_type.arch_suffixes:
            if filename.endswith(suffix + ".cpp"):
                name = filename[:len(filename) - len(suffix + ".cpp")]
                token_sets = [list(s.tokens) for s in kernel_type.segments]
                found += [(kernel_type.class_name, t) for t in oracle(token_sets, name, 2)]
    return found


def test_parse_filename_asked_again_gives_the_same_fresh_answer():
    from sphinxext_fmha.analysis.analyze import grammars_of, parse_filename

    model = _model()
    names = ["fmha_x.cpp", "fmha_x_y.cpp", "fmha_x_gfx9.cpp", "fmha_z.cpp", "fmha_q.cpp", "fmha.cpp"]
    for _ in range(3):
        grammars = grammars_of(model)
        for filename in names:
            found = parse_filename(model, grammars, filename)
            assert [(k.class_name, t) for k, t in found] == _oracle_parses(model, filename), filename
            for _, tokens in found:
                tokens.append("changed by a caller")
    # A model changed after its grammars were made gets new grammars.
    model.kernel_types[1].segments[1].tokens["_q"] = ""
    found = parse_filename(model, grammars_of(model), "fmha_q.cpp")
    assert [(k.class_name, t) for k, t in found] == [("B", ["fmha", "_q"])]
