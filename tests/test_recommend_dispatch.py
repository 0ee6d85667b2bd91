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

from sphinxext_fmha.render.ir import Para, text_of
from sphinxext_fmha.render.sections.loss_words import loss_lead, loss_sentences, served_by
from sphinxext_fmha.render.sections.recommendation import recommendation_sections
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


_ARCHES = ("gfx950", "gfx9")
#: newest fwd's gfx950 shape: every kernel has a twin per arch whose name differs only in
#: the arch suffix; gfx950 alone has the transposed loads, which check no seqlen_q and are
#: tried first in one function (v2), so they shadow its own d128 ``_ntrload`` kernels
_ARCH_EDITS = [
    ("    for (spad, dpad), bias, mask, lse, trload in itertools.product([('f', 'f'), ('f', 't'), "
     "('t', 't')], BIAS_MAP.keys(),\n",
     "    for trload, (spad, dpad), bias, mask, lse in itertools.product(['t', 'f'], [('f', 'f'), "
     "('f', 't'), ('t', 't')], BIAS_MAP.keys(),\n"),
    ("get_mask_map(mask_impl).keys(), ['t', 'f'], ['t', 'f']):",
     "get_mask_map(mask_impl).keys(), ['t', 'f']):"),
    ("    def scheck(self) -> str:\n",
     "    def scheck(self) -> str:\n        if self.F_pipeline.F_trload == 't': return 'true'\n"),
    ("    mask_impl  : str  # simplified/generic\n",
     "    mask_impl  : str  # simplified/generic\n    F_arch     : str = 'gfx9'\n"),
    ('        return self.name + ".cpp"', '        return self.name + "_" + self.F_arch + ".cpp"'),
    ("{F_lse}, {F_trload}>;\n\ntemplate", "{F_lse}, {F_trload}, tile::{F_arch}_t>;\n\ntemplate"),
    ("            F_lse       = BOOL_MAP[self.F_pipeline.F_lse])",
     "            F_lse       = BOOL_MAP[self.F_pipeline.F_lse],\n            F_arch      = self.F_arch)"),
    ("{F_lse}, {F_trload}>;\n                return",
     "{F_lse}, {F_trload}, tile::{F_arch}_t>;\n                return"),
    ("                        F_bn0=k.F_tile.F_bn0)",
     "                        F_bn0=k.F_tile.F_bn0, F_arch=k.F_arch)"),
    ("    def render(self, func_name, accept) -> str:\n        per_dtypes = str()",
     "    def render(self, func_name, accept) -> str:\n"
     "        body = '    const std::string device_name = tile::get_device_name();\\n'\n"
     "        for n, arch in enumerate(%r):\n"
     "            inner = self.per_arch(lambda k, a=arch: accept(k) and k.F_arch == a)\n"
     "            body += '    %%s (device_name.compare(0, %%d, \"%%s\") == 0) {\\n%%s\\n    }\\n' %% (\n"
     "                'if' if n == 0 else 'else if', len(arch), arch, inner)\n"
     "        return TOY_API_HEADER.replace('float fmha_toy(', 'static float ' + func_name + '(')"
     ".format(F_dispatch=body)\n\n"
     "    def per_arch(self, accept) -> str:\n        per_dtypes = str()" % (_ARCHES,)),
    ("        return TOY_API_HEADER.replace('float fmha_toy(', 'static float ' + func_name + '(')"
     ".format(F_dispatch=per_dtypes)\n\n\ndef get_hdim",
     "        return per_dtypes\n\n\ndef get_hdim"),
    ("            for tile, pipeline in itertools.product(tiles, get_pipelines(dtype, hdim, receipt, "
     "mask_impl)):\n",
     "            for tile, pipeline, arch in itertools.product(tiles, get_pipelines(dtype, hdim, "
     "receipt, mask_impl), %r):\n"
     "                if arch != 'gfx950' and pipeline.F_trload == 't':\n"
     "                    continue\n" % (_ARCHES,)),
    ("                              F_pipeline=pipeline, mask_impl=mask_impl)\n",
     "                              F_pipeline=pipeline, mask_impl=mask_impl, F_arch=arch)\n"),
]


def arch_module() -> str:
    text = mutant_module()
    for old, new in _ARCH_EDITS:
        assert old in text, old
        text = text.replace(old, new)
    return re.sub(r"def is_v3\(k\) -> bool:\n    return [^\n]*",
                  "def is_v3(k) -> bool:\n    return False", text)


def _tree(root: Path, module: str) -> Path:
    files = synthetic.tree_files("base")
    files["example/ck_tile/01_fmha/codegen/ops/fmha_toy.py"] = module
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return _tree(tmp_path_factory.mktemp("complement") / "ck", mutant_module())


@pytest.fixture(scope="module")
def arch_tree(tmp_path_factory) -> Path:
    return _tree(tmp_path_factory.mktemp("arch") / "ck", arch_module())


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
    assert text.count("The set keeps no kernel of `fmha_toy_v3`: its calls go on to "
                      "`fmha_toy_v2`") == 1  # said once, with the set (not again in the losses)
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


#: CALLS with an elementwise bias too (only some trload kernels have one)
BIASED = CALLS + [dict(c, bias_type="bias_enum::elementwise_bias") for c in CALLS]


def test_the_emptied_entry_says_how_many_of_its_kernels_calls_find_none(tree, tmp_path):
    """Audit r7 fwd F6: v3's calls fall through to v2, but v2 has no kernel for those
    with a bias, so the entry does not say they all run v2's kernels; it counts the v3
    kernels some of whose calls now find none (the oracle runs the grid through both
    files)."""
    session = Session(tree, cache_dir=tmp_path / "cache")
    rec = session.recommend("toy")
    full_api, full_traits = written(tree, tmp_path / "full")
    set_api, set_traits = written(tree, tmp_path / "set", *[run.filter for run in rec.runs])
    ran, lost = set(), set()
    for call in BIASED:
        found = run_block(functions(full_api)["fmha_toy_v3"], call) \
            if call["max_seqlen_q"] > 1 else None
        if found is not None:
            ran.add(full_traits[found])
            if simulate(set_api, set_traits, call) is None:
                lost.add(full_traits[found])
    assert 0 < len(lost) < len(ran)
    sections = recommendation_sections(rec)
    text = "\n".join(text_of(block.inlines) for section in sections for block in section.blocks
                     if isinstance(block, Para))
    said = re.search(r"The set keeps no kernel of fmha_toy_v3: its calls go on to fmha_toy_v2, "
                     r"which runs those it has a kernel for\. Of the (\d+) kernels fmha_toy_v3 "
                     r"ran, (\d+) ran calls that now find no kernel", text)
    assert said and (int(said.group(1)), int(said.group(2))) == (len(ran), len(lost))
    assert "now run the kernels of" not in text


ARCH_CALLS = [dict(call, device_name=device) for call in BIASED for device in ("gfx950", "gfx942")]


def _pad(name: str) -> str:
    return re.search(r"_(?:npad|pd|psd)(?=_|,|$)", name).group()


def test_a_loss_names_every_kept_variant_that_runs_its_calls(arch_tree, tmp_path):
    """Audit r7 fwd F2: the dropped ``_trload`` kernels check no seqlen_q; in the set their
    calls run the ``_pd`` or the ``_psd`` kernel, as seqlen_q decides: the loss names
    both, not the first stand-in alone (the oracle runs the grid through both files)."""
    session = Session(arch_tree, cache_dir=tmp_path / "cache")
    rec = session.recommend("toy")
    full_api, full_traits = written(arch_tree, tmp_path / "full")
    set_api, set_traits = written(arch_tree, tmp_path / "set", *[run.filter for run in rec.runs])
    pads = {}  # dropped trload kernel -> the pads of the kernels its calls run now
    for call in ARCH_CALLS:
        ran = simulate(full_api, full_traits, call)
        now = simulate(set_api, set_traits, call)
        if ran and ran.endswith("_trload_gfx950.cpp") and ran not in set_traits.values() and now:
            pads.setdefault(ran, set()).add(_pad(now))
    assert pads and all(len(found) == 2 for found in pads.values())
    decision = next(d for d in rec.decisions if d.segment == "trload")
    said = loss_sentences(decision)["_trload"]
    named = {next(iter(re.findall(r"_(?:npad|pd|psd)(?=_|,|$)", variant)), None)
             for variant in re.findall(r"the kept (_[\w, ]+?) variant", said)}
    own = {_pad(name) for name in pads}
    # a variant that names no pad has the dropped kernel's own
    assert set().union(*pads.values()) == \
        {p for p in named if p is not None} | (own if None in named else set()), said
    lead = text_of(loss_lead(dict(decision.loss_facts["_trload"],
                                  served_by=served_by(decision.loss_parts["_trload"]))))
    assert all(p in lead for p in set().union(*pads.values()) - own), lead


def test_never_run_kernels_the_set_runs_are_said_to_be_needed(arch_tree, tmp_path):
    """Audit r7 fwd F1: gfx950's d128 ``_ntrload`` kernels never run in the full build
    (the ``_trload`` ones are tried first). They come with their gfx9 twins, and where
    the set drops the ``_trload`` ones its own dispatch file runs them: the guide says
    how many it runs and that without any one of them some calls find no kernel, not
    only that their names equal kept ones' but for the arch suffix (the oracle runs the
    grid through both files, and through the set's without each one)."""
    session = Session(arch_tree, cache_dir=tmp_path / "cache")
    rec = session.recommend("toy")
    full_api, full_traits = written(arch_tree, tmp_path / "full")
    set_api, set_traits = written(arch_tree, tmp_path / "set", *[run.filter for run in rec.runs])
    run_full = {simulate(full_api, full_traits, call) for call in ARCH_CALLS}
    now = {index: simulate(set_api, set_traits, call) for index, call in enumerate(ARCH_CALLS)}
    selected = sorted(set(set_traits.values()) - run_full)
    reached = [name for name in selected if name in now.values()]
    assert reached and all(name.endswith("_ntrload_gfx950.cpp") for name in reached)
    for name in reached:
        without = {t: f for t, f in set_traits.items() if f != name}
        api = _without(set_api, name, set_traits)
        assert any(simulate(api, without, ARCH_CALLS[i]) is None
                   for i, ran in now.items() if ran == name), name
    text = "\n".join(text_of(block.inlines) for section in recommendation_sections(rec)
                     for block in section.blocks if isinstance(block, Para))
    said = re.search(r"the commands still select (\d+)[^.]*\. The set's own dispatch file runs "
                     r"(all|\d+) of them: calls that dropped kernels ran in the full build reach "
                     r"them there; without any one of them, some of those calls find no kernel\.",
                     text)
    assert said and int(said.group(1)) == len(selected), text
    assert said.group(2) == ("all" if len(reached) == len(selected) else str(len(reached)))
    # the others: named as kernels the set runs but for the arch suffix, and said so
    idle = [name for name in selected if name not in reached]
    runs = {re.sub(r"_gfx\w+\.cpp$", "", name) for name in now.values() if name}
    assert idle and all(re.sub(r"_gfx\w+\.cpp$", "", name) in runs for name in idle)
    assert "The set does not run the other %d either: their names equal kept kernels' but " \
           "for the arch suffix, which -f patterns are not matched against." % len(idle) in text


#: each arch's branch tries first the head dims it has transposed-load kernels of: with
#: them gfx950 tries ``hdim <= 128`` before ``hdim <= 64`` (aiter bwd's trload kernels put
#: d64/d128 first on gfx950 so), a set without them the other way round
_REORDER_EDITS = [
    ("            for j, hdim in enumerate(sorted(self.pool[dtype].keys())):",
     "            for j, hdim in enumerate(sorted(sorted(self.pool[dtype]), key=lambda h: not any(\n"
     "                    accept(k) and k.F_pipeline.F_trload == 't' and k.F_mode == 'batch'\n"
     "                    for k in self.pool[dtype][h]))):"),
]


def test_what_a_set_runs_is_read_from_the_file_it_writes(tmp_path):
    """The set's dispatch file tries its branches in another order than the full file's:
    gfx950 calls with hdim <= 64 ran d128 kernels in the full build and run d64 ones (kept
    for their gfx9 twins' names) in the set. A dropped d128 variant's loss names the d64
    kernels that run its calls now (the oracle runs the grid through both written files),
    not only kept d128 ones, as the full file without the dropped branches would have it."""
    text = arch_module()
    for old, new in _REORDER_EDITS:
        assert old in text, old
        text = text.replace(old, new)
    root = _tree(tmp_path / "ck", text)
    session = Session(root, cache_dir=tmp_path / "cache")
    rec = session.recommend("toy")
    full_api, full_traits = written(root, tmp_path / "full")
    set_api, set_traits = written(root, tmp_path / "set", *[run.filter for run in rec.runs])
    assert full_api.index("t.hdim_q <= 128") < full_api.index("t.hdim_q <= 64")
    assert set_api.index("t.hdim_q <= 64") < set_api.index("t.hdim_q <= 128")
    moved = {}  # dropped d128 kernel's pad -> pads of the d64 kernels its calls run now
    for call in ARCH_CALLS:
        ran = simulate(full_api, full_traits, call)
        now = simulate(set_api, set_traits, call)
        if ran and "_d128_" in ran and ran not in set_traits.values() and now and "_d64_" in now:
            moved.setdefault(_pad(ran), set()).add(_pad(now))
    assert moved
    said = " ".join(s for d in rec.decisions for s in loss_sentences(d).values())
    named = re.findall(r"the kept (_[\w, ]+?) variant", said)
    assert any("_d64" in variant for variant in named), said
