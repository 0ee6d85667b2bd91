"""The token facts' and mask modes' shortcuts (one parse shared, columns with one value
skipped, positions looked up by shape) give what the plain rule gives: each checked
against a direct implementation written here."""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations
from pathlib import PurePosixPath

from sphinxext_fmha.verify.mask_modes import _words, compare_mask_modes
from sphinxext_fmha.verify.token_facts import (
    _chain_tokens,
    _determining,
    _Rows,
    _rows_by_condition,
    _sensitive,
)


def _determines(columns, values, combo):
    seen = {}
    return all(seen.setdefault(tuple(columns[c][row] for c in combo), value) == value
               for row, value in enumerate(values))


def test_determining_with_columns_of_one_value_matches_brute_force():
    rng = random.Random(7)
    for _ in range(80):
        rows = rng.choice([3, 70, 300])
        columns = [[rng.choice("xy") for _ in range(rows)] for _ in range(3)]
        # literal segments and an arch suffix shared by every kernel: one value each
        for at in sorted(rng.sample(range(6), rng.randint(1, 3))):
            columns.insert(at, ["lit%d" % at] * rows)
        values = [rng.choice(["a", "b"]) if rng.random() < 0.1 else columns[-1][r] + columns[0][r]
                  for r in range(rows)]
        if rng.random() < 0.1:
            values = ["same"] * rows
        codes = {}
        pattern = [codes.setdefault(v, len(codes)) for v in values]
        expected = []
        for size in (1, 2, 3):
            expected = [c for c in combinations(range(len(columns)), size)
                        if _determines(columns, values, c)]
            if expected:
                break
        assert _determining(_Rows(columns), pattern) == expected


def _random_columns(rng, rows):
    columns = [[rng.choice("xyz"[:rng.randint(1, 3)]) for _ in range(rows)] for _ in range(4)]
    columns.insert(rng.randint(0, 4), ["lit"] * rows)
    return columns


def test_sensitive_columns_match_brute_force():
    """A column is sensitive when two rows equal in every other column (differing only
    in it) have different values."""
    rng = random.Random(11)
    for _ in range(60):
        rows = rng.choice([1, 5, 40, 200])
        columns = _random_columns(rng, rows)
        values = [rng.choice("ab") for _ in range(rows)]
        first = {}
        pattern = [first.setdefault(v, row) for row, v in enumerate(values)]
        expected = [(c,) for c in range(len(columns))
                    if any(values[a] != values[b] for a in range(rows) for b in range(rows)
                           if all(col[a] == col[b] for i, col in enumerate(columns) if i != c))]
        assert _sensitive(_Rows(columns), pattern) == expected


def test_rows_by_condition_match_direct_grouping():
    rng = random.Random(3)
    terms = [None, ("a > 1", "a above 1"), ("b == 2", "b is 2"), ("c", "always")]
    for _ in range(60):
        rows = rng.choice([0, 1, 6, 50])
        tokens = [rng.choice(["t1", "t2", ""]) for _ in range(rows)]
        conditional = [[rng.choice(terms) for _ in range(rows)] for _ in range(rng.randint(0, 3))]
        expected = {}
        for row in range(rows):
            condition = tuple(col[row] for col in conditional if col[row] is not None)
            expected.setdefault(tokens[row], {}).setdefault(condition, []).append(row)
        found = _rows_by_condition(tokens, conditional, True)
        assert found == expected
        assert [list(groups) for groups in found.values()] == [list(g) for g in expected.values()]
        assert list(found) == list(expected)


def test_chain_tokens_match_direct_chains():
    """Rows of one key (two or more) form a chain; its tokens in the order tried; the
    chains counted in the order of their first row."""
    rng = random.Random(4)
    for _ in range(80):
        rows = rng.choice([1, 4, 30, 120])
        keys = [rng.randint(0, rows // 2 + 1) for _ in range(rows)]
        tokens = [rng.choice("pqr") for _ in range(rows)]
        places = rng.sample(range(10 * rows), rows)
        tried = sorted(range(rows), key=places.__getitem__)
        chains = {}
        for row in range(rows):
            chains.setdefault(keys[row], []).append(row)
        expected = Counter(tuple(tokens[r] for r in sorted(chain, key=places.__getitem__))
                           for chain in chains.values() if len(chain) > 1)
        found = _chain_tokens(keys, tried, tokens)
        assert found == expected and list(found) == list(expected)
        assert found.most_common() == expected.most_common()


def test_stem_words_are_those_of_a_path():
    rng = random.Random(2)
    for _ in range(20000):
        name = "".join(rng.choice("._ab/") for _ in range(rng.randint(0, 7)))
        assert _words(name) == PurePosixPath(name).stem.split("_"), name


def test_mask_modes_hard_coded_words_match_the_rule():
    """Names of two mask modes, some with a mask word fixed whatever the mode: the
    hard-coded words are those at the places of the other mode's own words, never in one
    name with one of them (a name has one mask value), carried by fewer kernels of this
    mode."""
    rng = random.Random(5)
    for _ in range(40):
        this, other = [], []
        for n in range(rng.randint(1, 30)):
            head = "fmha_%s_d%d" % (rng.choice(["fwd", "bwd"]), rng.choice([64, 128]))
            tail = rng.choice(["", "_pad", "_lse"])
            fixed = rng.random() < 0.2
            this.append("%s_%s%s.cpp" % (head, "mask" if fixed or n % 2 else "nmask", tail))
            for word in (["mc"] if fixed else ["mc", "mg"]) if n % 2 else ["nmask"]:
                other.append("%s_%s%s.cpp" % (head, word, tail))
        this, other = sorted(set(this)), sorted(set(other))
        found = compare_mask_modes("simplified", this, "generic", other)

        def words(name):
            return name[:-len(".cpp")].split("_")

        mine = Counter(w for f in this for w in set(words(f)))
        theirs = Counter(w for f in other for w in set(words(f)))
        own = set(theirs) - set(mine)
        assert found.only_other == sorted(own) and found.only_this == sorted(set(mine) - set(theirs))

        def context(ws, i):
            return "_".join(ws[:i]), "_".join(ws[i + 1:])

        places = {context(words(f), i) for f in other for i, w in enumerate(words(f)) if w in own}
        at_places = {w for f in other for i, w in enumerate(words(f)) if context(words(f), i) in places}
        beside = {w for f in other if own & set(words(f)) for w in words(f)}
        assert found.hard_coded == {w: mine[w] for w in sorted(at_places)
                                    if w in mine and w not in own and mine[w] < theirs[w]
                                    and w not in beside}
