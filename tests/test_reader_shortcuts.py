"""The dispatch reader's shortcuts (memos, scanners, early rejection) give what the plain
rule gives: each checked against a direct implementation written here."""

from __future__ import annotations

import random
import re
from itertools import combinations

from sphinxext_fmha.cppapi.condition_form import split_top
from sphinxext_fmha.cppapi.lexing import normalize_cpp, split_template_args, squeeze
from sphinxext_fmha.cppapi.parse import parse_dispatch
from sphinxext_fmha.verify.token_facts import _determining, _Rows, _sensitive


def test_normalize_follows_alias_chains_and_ignores_unrelated_aliases():
    aliases = {"inner_": "ns::inner<int,2>", "outer_": "ns::outer<inner_,(4>2)>", "other_": "x<1>"}
    assert normalize_cpp("outer_", aliases) == "ns::outer<ns::inner<int,2>,true>"
    # the same text under different aliases of the names it uses: a different answer
    assert normalize_cpp("outer_", {**aliases, "inner_": "y<3>"}) == "ns::outer<y<3>,true>"
    # an alias the text cannot reach changes nothing
    assert normalize_cpp("outer_", {**aliases, "other_": "z"}) == "ns::outer<ns::inner<int,2>,true>"
    assert normalize_cpp("a /* outer_ */ < b", aliases) == "a<b"


def test_squeeze_keeps_spaces_only_between_words():
    def oracle(text: str) -> str:
        words = text.split()
        out = words[0] if words else ""
        for word in words[1:]:
            joined = re.match(r"\w", out[-1]) and re.match(r"\w", word[0])
            out += (" " if joined else "") + word
        return out

    rng = random.Random(11)
    for _ in range(3000):
        text = "".join(rng.choice("ab_1 \t\n(),<>:.!") for _ in range(rng.randint(0, 14)))
        assert squeeze(text) == oracle(text), repr(text)


def test_split_helpers_against_character_loops():
    def split_oracle(text: str, op: str) -> list:
        depth_at, depth = [], 0  # bracket depth before each character
        for c in text:
            depth_at.append(depth)
            depth += (c in "([{") - (c in ")]}")
        cuts, i = [], text.find(op)
        while i >= 0:
            if depth_at[i] == 0:
                cuts.append(i)
                i = text.find(op, i + len(op))
            else:
                i = text.find(op, i + 1)
        bounds = [0, *[b for cut in cuts for b in (cut, cut + len(op))], len(text)]
        return [text[a:b].strip() for a, b in zip(bounds[::2], bounds[1::2])]

    rng = random.Random(5)
    for _ in range(3000):
        text = "".join(rng.choice(["a", "&&", "&", "||", "(", ")", "[", "]", " "])
                       for _ in range(rng.randint(0, 12)))
        for op in ("&&", "||"):
            assert split_top(text, op) == split_oracle(text, op), (text, op)
    assert split_template_args("a<b,c>, (d,e), f[1,2]") == ["a<b,c>", "(d,e)", "f[1,2]"]


def test_determining_columns_match_brute_force():
    def determines(columns, values, combo):
        seen = {}
        return all(seen.setdefault(tuple(columns[c][row] for c in combo), value) == value
                   for row, value in enumerate(values))

    rng = random.Random(3)
    for _ in range(60):
        rows = rng.choice([5, 70, 300, 1200])
        columns = [[rng.choice("xyz"[:rng.randint(1, 3)]) for _ in range(rows)] for _ in range(4)]
        values = [columns[0][r] + (columns[2][r] if rng.random() < 0.9 else "") for r in range(rows)]
        codes = {}
        pattern = [codes.setdefault(v, len(codes)) for v in values]
        expected = []
        for size in (1, 2, 3):
            expected = [c for c in combinations(range(4), size) if determines(columns, values, c)]
            if expected:
                break
        assert _determining(_Rows(columns), pattern) == expected
        sensitive = [(i,) for i in range(4)
                     if not determines(columns, values, tuple(c for c in range(4) if c != i))]
        assert _sensitive(_Rows(columns), pattern) == sensitive


def test_parse_is_shared_per_text_and_equal_to_a_fresh_parse():
    text = """
    float run(traits t) {
        if (t.a == 1) { using trait_ = k_traits_<1, bool>; return k_<trait_>(t); }
        else { using trait_ = k_traits_<2, bool>; return k_<trait_>(t); }
    }
    """
    first = parse_dispatch(text)
    assert parse_dispatch(text) is first
    fresh = parse_dispatch(text + "\n")  # another text: parsed anew
    assert fresh is not first
    assert [leaf.trait_args for leaf in fresh.leaves] == [leaf.trait_args for leaf in first.leaves] \
        == [["k_traits_<1,bool>"], ["k_traits_<2,bool>"]]
