"""The minimal set and what it loses, on a synthetic tree of the newest fwd's shapes,
against a brute-force simulation of the dispatch files generate.py writes.

The mutant of the toy tree (``tests/helpers/synthetic.py``): seqlen_q pad checks that are exact
complements (``(a.cu_seqlen_q_ptr == nullptr) && (a.seqlen_q != 0 && a.seqlen_q % 128
== 0)`` and its negation), an ``_npad`` variant every call of which ``_pd`` also takes,
and transposed-load (``_trload``) kernels that only ``fmha_toy_v3`` launches, tried
first when ``a.max_seqlen_q > 1`` and falling back to ``fmha_toy_v2``: an entry point
fed only by droppable kernels. The oracle parses the written API files with its own
small reader and runs every call of a grid through them, first match wins."""

from __future__ import annotations

import functools
import itertools
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from sphinxext_fmha.render.sections.loss_words import loss_sentences
from sphinxext_fmha.session import Session

from helpers import synthetic
from helpers.dispatch_oracle import python_of
from helpers.independent import generated, written_union

_TRLOAD_SLOTS = {
    "SINK_TPL": ", {F_trload}",
    "SINK_CHECK": "",  # no call flag: a tuned load, the dispatch tries it first
    "SINK_DECL": "    F_trload : str  # t/f: load K/V transposed (a tuned variant)",
    "SINK_NAME": "        if self.F_trload == 't': n += '_trload'\n        else: n += '_ntrload'",
    "SINK_ARG_SELF": "\n            F_trload    = BOOL_MAP[self.F_pipeline.F_trload],",
    "SINK_ARG_K": "\n                        F_trload=BOOL_MAP[k.F_pipeline.F_trload],",
    "SINK_VAR": ", trload",
    "SINK_VALUES": ", ['t', 'f']",
    "SINK_SKIP": ("        if trload == 't' and (hdim != 128 or spad != 't'):\n"
                  "            # transposed loads: d128, fully padded only\n"
                  "            continue"),
    "PAD_COMBOS": "[('f', 'f'), ('f', 't'), ('t', 't')]",
}

_SCHECK_OLD = ("        if self.F_pipeline.F_spad == 't': return f'true /*a.seqlen_q % "
               "{self.F_tile.F_bm0} != 0*/'\n"
               "        return f'a.seqlen_q % {self.F_tile.F_bm0} == 0'")
_SCHECK_NEW = (
    "        if self.F_pipeline.F_spad == 't': return f'(a.cu_seqlen_q_ptr != nullptr) || "
    "(a.seqlen_q == 0 || a.seqlen_q % {self.F_tile.F_bm0} != 0)'\n"
    "        return f'(a.cu_seqlen_q_ptr == nullptr) && (a.seqlen_q != 0 && a.seqlen_q % "
    "{self.F_tile.F_bm0} == 0)'")
_FOOTER = '''
float fmha_toy(fmha_toy_traits t, fmha_toy_args a, const tile::stream_config& s)
{{
    if (a.max_seqlen_q > 1) {{
        float r = fmha_toy_v3(t, a, s);
        if (r >= 0) return r;
    }}
    return fmha_toy_v2(t, a, s);
}}
'''


def mutant_module() -> str:
    slots = dict(synthetic._BASE_SLOTS)
    slots.update(_TRLOAD_SLOTS)
    text = synthetic._fill(synthetic._TOY_MODULE, slots)
    assert _SCHECK_OLD in text
    text = synthetic._v2_v3(text.replace(_SCHECK_OLD, _SCHECK_NEW))
    start = text.index('TOY_API_FOOTER = """')
    end = text.index('"""', start + 20) + 3
    text = text[:start] + 'TOY_API_FOOTER = """' + _FOOTER + '"""' + text[end:]
    return re.sub(r"def is_v3\(k\) -> bool:\n    return [^\n]*",
                  "def is_v3(k) -> bool:\n    return k.F_pipeline.F_trload == 't'", text)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("complement") / "ck"
    files = synthetic.tree_files("base")
    files["example/ck_tile/01_fmha/codegen/ops/fmha_toy.py"] = mutant_module()
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def written(root: Path, out: Path, *patterns: str) -> Tuple[str, Dict[str, str]]:
    """(the API file, trait text -> kernel file) of ``generate.py -f pattern -o out``;
    for several patterns, of one run that keeps what any of them matches."""
    if len(patterns) > 1:
        written_union(root, "toy", out, patterns)
    else:
        generated(root, "-a", "toy", "-o", str(out), *(["-f", patterns[0]] if patterns else []))
    traits = {}
    for path in out.glob("*.cpp"):
        if path.name == "fmha_toy_api.cpp":
            continue
        text = path.read_text()
        found = re.search(r"using trait_ = (toy_traits_<[^;]*>);", text)
        dtype = re.search(r"using toy_dtype = (\w+);", text).group(1)
        traits[" ".join(found.group(1).replace("toy_dtype", dtype).split())] = path.name
    return (out / "fmha_toy_api.cpp").read_text(), traits


# ------------------------------------------------------------------ the oracle's reader

def _blocks(text: str) -> List[Tuple[str, object]]:
    """A block's items: ("if"/"else if", (condition, items)) or ("leaf", trait text)."""
    items: List[Tuple[str, object]] = []
    i = 0
    while i < len(text):
        m = re.compile(r"(else\s+if|if)\s*\(|using trait_ = ([^;]*);").search(text, i)
        if m is None:
            break
        if m.group(2) is not None:
            items.append(("leaf", " ".join(m.group(2).split())))
            i = m.end()
            continue
        depth, j = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        condition = text[m.end():j - 1]
        k = text.index("{", j)
        depth, end = 1, k + 1
        while depth:
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        kind = "else if" if m.group(1).startswith("else") else "if"
        items.append((kind, (condition, _blocks(text[k + 1:end - 1]))))
        i = end
    return items


@functools.lru_cache(maxsize=8)
def functions(api: str) -> Dict[str, List[Tuple[str, object]]]:
    found = {}
    for name in ("fmha_toy_v2", "fmha_toy_v3"):
        at = api.index(name + "(")
        body = api[api.index("{", at) + 1:]
        found[name] = _blocks(body[:body.index("\n}\n")])
    return found


@functools.cache
def _compiled(condition: str):
    return compile(python_of(re.sub(r"/\*.*?\*/", "", " ".join(condition.split()))),
                   "<oracle>", "eval")


def _leaves(items) -> List[str]:
    return [body if kind == "leaf" else leaf for kind, body in items
            for leaf in ([body] if kind == "leaf" else _leaves(body[1]))]


def _holds(condition: str, call: Dict) -> bool:
    return bool(eval(_compiled(condition), {}, {"v": call}))  # noqa: S307 - test oracle


def run_block(items, call) -> Optional[str]:
    """(ran, trait): first match wins; an entered branch ends its chain."""
    for kind, body in items:
        if kind == "leaf":
            return body  # type: ignore[return-value]
    chain_taken = False
    for kind, body in items:
        if kind == "if":
            chain_taken = False
        if chain_taken:
            continue
        condition, inner = body  # type: ignore[misc]
        if _holds(condition, call):
            chain_taken = True
            found = run_block(inner, call)
            if found is not None:
                return found
    return None


def simulate(api: str, traits: Dict[str, str], call: Dict) -> Optional[str]:
    bodies = functions(api)
    if call["max_seqlen_q"] > 1:
        found = run_block(bodies["fmha_toy_v3"], call)
        if found is not None:
            return traits[found]
    found = run_block(bodies["fmha_toy_v2"], call)
    return traits[found] if found is not None else None


CALLS = [dict(zip(("data_type", "hdim_q", "is_group_mode", "mask_type", "bias_type",
                   "has_lse", "cu_seqlen_q_ptr", "seqlen_q", "max_seqlen_q"), v))
         for v in itertools.product(["fp16", "bf16"], [16, 64, 100, 128], [False, True],
                                    ["mask_enum::no_mask", "mask_enum::mask_top_left"],
                                    ["bias_enum::no_bias"], [False, True], [None, 1],
                                    [0, 1, 128, 256], [1, 2])]


def test_the_set_is_minimal_by_the_rule_and_says_what_it_loses(tree, tmp_path):
    session = Session(tree, cache_dir=tmp_path / "cache")
    rec = session.recommend("toy")
    assert rec.verified and rec.write_verified and rec.runs
    full_api, full_traits = written(tree, tmp_path / "full")
    set_api, set_traits = written(tree, tmp_path / "set", *[run.filter for run in rec.runs])
    calls = CALLS
    before = [simulate(full_api, full_traits, c) for c in calls]
    after = [simulate(set_api, set_traits, c) for c in calls]
    kept = set(set_traits.values())
    # every kernel of the set runs for some call in the set's own dispatch
    assert kept == set(after) - {None}
    # dropping _npad loses no call: _pd takes every call it ran (complementary checks)
    # (calls with lse lose their kernel: the set drops the lse feature)
    npad = [i for i, ran in enumerate(before) if ran and "_npad_" in ran
            and not calls[i]["has_lse"]]
    assert npad and all(after[i] is not None for i in npad)
    decisions = {d.segment: d for d in rec.decisions}
    assert "_npad" in decisions["pad"].drop
    assert "find no kernel" not in loss_sentences(decisions["pad"])["_npad"]
    # _pd and _psd split the sizes: both stay
    assert {"_pd", "_psd"} <= set(decisions["pad"].keep)
    # the trload kernels go: every call v3 ran now runs a v2 kernel
    moved = [i for i, ran in enumerate(before) if ran and "_trload" in ran
             and "_ntrload" not in ran and not calls[i]["has_lse"]]
    assert moved and all(after[i] is not None and "_ntrload" in after[i] for i in moved)
    assert rec.emptied == {"fmha_toy_v3": ["fmha_toy_v2"]}
    assert not _leaves(functions(set_api)["fmha_toy_v3"])
    # one rule on every variant: no kept padding or trload variant of a class can go
    # without losing a call (the oracle rebuilds the set without it)
    for name in sorted(kept):
        without = {t: f for t, f in set_traits.items() if f != name}
        lost = [i for i, ran in enumerate(after) if ran == name
                and simulate(_without(set_api, name, set_traits), without, calls[i]) is None]
        assert lost, "%s could be dropped without losing a call" % name


def _without(api: str, name: str, traits: Dict[str, str]) -> str:
    """The API file without the branch that launches ``name`` (what a filter that
    drops it writes, the branch alone: the oracle keeps the rest as it is)."""
    trait = next(t for t, f in traits.items() if f == name)
    pattern = re.compile(r"(else\s+)?if\s*\(((?:(?!\{).)*)\)\s*\{\s*using trait_ = %s;[^}]*\}"
                         % re.escape(trait).replace(r"\ ", r"\s+"), re.S)
    out, count = pattern.subn(lambda m: "if (false) {}" if not m.group(1) else "else if (false) {}", api)
    assert count == 1
    return out


def test_the_guide_says_the_emptied_entry_and_no_never_run_kernel_is_kept(tree, tmp_path):
    from sphinxext_fmha.guide import collect_guide
    from sphinxext_fmha.render.markdown import guide_markdown

    session = Session(tree, cache_dir=tmp_path / "cache")
    sections = ["fields", "minimal", "losses"]
    text = guide_markdown(collect_guide(session, "toy", sections=sections), sections)
    assert "The set keeps no kernel of `fmha_toy_v3`: the calls it ran now run the kernels " \
           "of `fmha_toy_v2`." in text
    assert "served inputs" not in text and "problem class" not in text
    assert not re.search(r"\b1 are\b", text)
    # each head-dim token serves the calls of its bucket: the API file bounds hdim_q by
    # the token's number and leaves hdim_v free
    api, _ = written(tree, tmp_path / "full")
    bounds = sorted({int(n) for n in re.findall(r"t\.hdim_q <= (\d+)", api)})
    assert bounds == [64, 128]
    for bound in bounds:
        row = next(line for line in text.splitlines() if line.startswith("| `_d%d` |" % bound))
        assert "| %dxany |" % bound in row
