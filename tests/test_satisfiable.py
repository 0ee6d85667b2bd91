"""The decision procedure over dispatch terms, against brute force over input grids.

The oracle is written here: a C++ condition is turned into a Python expression by a few
textual rules and evaluated on every point of a grid that covers every class of values
the terms tell apart (sizes past the largest bound plus the moduli's period, each text
literal, a longer text, an unnamed value)."""

from __future__ import annotations

import itertools
import random
import re

import pytest

from sphinxext_fmha.cppapi.satisfiable import Theory

from helpers.dispatch_oracle import python_of

#: (C++ term, variables it reads)
TERMS = [
    ("t.hdim_q <= 64", "hdim_q"), ("t.hdim_q <= 96", "hdim_q"), ("a.hdim_q % 32 == 0", "hdim_q"),
    ("a.hdim_q % 8 != 0", "hdim_q"), ("t.hdim_q > 40", "hdim_q"),
    ("a.seqlen_k != 0", "seqlen_k"), ("a.seqlen_k % 16 == 0", "seqlen_k"),
    ("a.seqlen_k == 0", "seqlen_k"), ("a.seqlen_k <= 48", "seqlen_k"),
    ("a.cu_seqlen_k_ptr == nullptr", "cu_seqlen_k_ptr"),
    ("t.bias_type == bias_enum::alibi", "bias_type"),
    ("t.bias_type == bias_enum::no_bias", "bias_type"),
    ("t.bias_type != bias_enum::elementwise_bias", "bias_type"),
    ('device_name.compare(0, 6, "gfx950") == 0', "device_name"),
    ('device_name.compare(0, 4, "gfx9") == 0', "device_name"),
    ('t.data_type.compare("fp16") == 0', "data_type"),
    ("t.has_lse == true", "has_lse"), ("t.is_group_mode == false", "is_group_mode"),
    ("a.seqlen_q == a.seqlen_k", "opaque"),
]

GRID = {
    "hdim_q": range(1, 140),  # a head dim is at least 1: no term names 0
    "seqlen_k": range(0, 70),
    "cu_seqlen_k_ptr": [None, 0x1000],
    "bias_type": ["bias_enum::no_bias", "bias_enum::alibi", "bias_enum::elementwise_bias",
                  "bias_enum::other"],
    "device_name": ["gfx950", "gfx942", "gfx90a", "gfx1100", ""],
    "data_type": ["fp16", "bf16", "fp16x"],
    "has_lse": [False, True],
    "is_group_mode": [False, True],
    "opaque": [False, True],
}


def brute_force(condition: str) -> bool:
    expression = compile(python_of(condition), "<oracle>", "eval")
    names = sorted(set(re.findall(r'v\["(\w+)"\]', python_of(condition))))
    for values in itertools.product(*(GRID[n] for n in names)):
        if eval(expression, {}, {"v": dict(zip(names, values))}):  # noqa: S307 - test oracle
            return True
    return False


def random_formula(rng: random.Random, depth: int = 0) -> str:
    if depth >= 2 or rng.random() < 0.35:
        term, _ = rng.choice(TERMS)
        return ("!(%s)" % term) if rng.random() < 0.3 else term
    parts = [random_formula(rng, depth + 1) for _ in range(rng.randint(2, 3))]
    joined = (" && " if rng.random() < 0.6 else " || ").join("(%s)" % p for p in parts)
    return ("!(%s)" % joined) if rng.random() < 0.25 else joined


def test_every_random_formula_is_decided_as_brute_force_decides_it():
    rng = random.Random(40)
    theory = Theory([term for term, _ in TERMS])
    checked = {True: 0, False: 0}
    for _ in range(800):
        condition = random_formula(rng)
        if rng.random() < 0.5:  # does one imply another: many of these hold for no call
            condition = "(%s) && !(%s)" % (condition, rng.choice(
                [condition, random_formula(rng, 1), rng.choice(TERMS)[0]]))
        # keep the grid small: at most three variables in one formula
        if len({var for term, var in TERMS if term in condition}) > 3:
            continue
        decided = theory.satisfiable([theory.formula(condition)])
        assert decided == brute_force(condition), condition
        checked[decided] += 1
    assert checked[True] > 20 and checked[False] > 20  # both answers were exercised


@pytest.mark.parametrize("first, second, relation", [
    # the newest fwd's seqlen_k pad checks: exact complements
    ("(a.cu_seqlen_k_ptr == nullptr) && (a.seqlen_k != 0 && a.seqlen_k % 64 == 0)",
     "(a.cu_seqlen_k_ptr != nullptr) || (a.seqlen_k == 0 || a.seqlen_k % 64 != 0)",
     "complement"),
    ("a.hdim_q % 128 == 0", "a.hdim_q % 8 == 0", "implies"),
    ("t.mask_type == mask_enum::mask_top_left || t.mask_type == mask_enum::mask_bottom_right",
     "t.mask_type != mask_enum::no_mask", "implies"),
    ('device_name.compare(0, 6, "gfx950") == 0', 'device_name.compare(0, 4, "gfx9") == 0',
     "implies"),
    ("(t.is_group_mode == false) && (t.has_lse == true)", "t.has_lse && !t.is_group_mode",
     "same"),
    # 2.8.3 fwd_splitkv: a paged and an unpaged kernel, a condition compared with a bool
    ("(a.block_table_ptr != nullptr) == true", "(a.block_table_ptr != nullptr) == false",
     "complement"),
    ("(a.block_table_ptr != nullptr) == true", "a.block_table_ptr != nullptr", "same"),
    ("t.hdim_q <= 96", "a.hdim_q % 128 == 0", "excludes"),  # a head dim is at least 1
    # 0 is a length here (a term names it): 0 is a multiple of 64, every other length
    # is not 0
    ("a.seqlen_k % 64 == 0", "a.seqlen_k != 0", "cover"),
])
def test_relations_between_two_conditions(first, second, relation):
    theory = Theory([first, second, "a.seqlen_k != 0"])
    a, b = theory.formula(first), theory.formula(second)
    found = {
        "a and b": theory.satisfiable([a, b]),
        "a and not b": theory.satisfiable([a, theory.negate(b)]),
        "not a and b": theory.satisfiable([theory.negate(a), b]),
        "neither": theory.satisfiable([theory.negate(a), theory.negate(b)]),
    }
    expected = {
        "complement": {"a and b": False, "a and not b": True, "not a and b": True,
                       "neither": False},
        "implies": {"a and b": True, "a and not b": False, "not a and b": True,
                    "neither": True},
        "same": {"a and b": True, "a and not b": False, "not a and b": False,
                 "neither": True},
        "excludes": {"a and b": False, "a and not b": True, "not a and b": True,
                     "neither": True},
        "cover": {"a and b": True, "a and not b": True, "not a and b": True,
                  "neither": False},
    }[relation]
    assert found == expected


def test_a_witness_is_a_call_that_meets_the_formula():
    theory = Theory(["t.hdim_q <= 96", "a.hdim_q % 32 == 0", "a.seqlen_k != 0",
                     "a.seqlen_k % 16 == 0", 't.data_type.compare("fp16") == 0'])
    nodes = [theory.formula("t.hdim_q <= 96 && a.hdim_q % 32 == 0"),
             theory.formula("!(a.seqlen_k != 0 && a.seqlen_k % 16 == 0)"),
             theory.formula('t.data_type.compare("fp16") != 0')]
    example = theory.example(theory.witness(nodes))
    assert example["hdim_q"] <= 96 and example["hdim_q"] % 32 == 0
    assert example["seqlen_k"] == 0 or example["seqlen_k"] % 16 != 0
    assert example["data_type"] != '"fp16"'
