"""Which kernel a call runs, in a full dispatch file and in a set's: against a simulator.

The dispatch files are written here from a small nested description (the newest fwd's
shapes: an arch chain, data types, head-dim buckets, an inner chain whose seqlen_k pad
checks are exact complements with trload kernels behind them, a duplicated branch, a
bucket whose unpadded kernels need a head dim the bucket excludes, and an entry point
that tries ``_v3`` before ``_v2``). The oracle runs the same description over a grid of
calls, first match wins, as the C++ does; the reading under test only sees the text."""

from __future__ import annotations

import itertools
from typing import Dict, List, Optional, Tuple

from sphinxext_fmha.cppapi.link_check import link_report_from_keys
from sphinxext_fmha.cppapi.parse import parse_dispatch
from sphinxext_fmha.render.sections.dispatch import never_run_texts
from sphinxext_fmha.verify.standins import SetDispatch

# a branch: (C++ condition, python test of a call, children or a kernel name)
Branch = Tuple[str, object, object]

ALIGNED = "(a.cu_seqlen_k_ptr == nullptr) && (a.seqlen_k != 0 && a.seqlen_k % 64 == 0)"
PADDED = "(a.cu_seqlen_k_ptr != nullptr) || (a.seqlen_k == 0 || a.seqlen_k % 64 != 0)"


def aligned(c):
    return c["cu"] is None and c["seqlen_k"] != 0 and c["seqlen_k"] % 64 == 0


def inner(dtype: str, hdim: int) -> List[Branch]:
    lse = lambda flag: "(t.has_lse == %s)" % ("true" if flag else "false")  # noqa: E731
    out: List[Branch] = []
    for flag in (False, True):
        cond = lse(flag)
        same = (lambda f: lambda c: c["lse"] == f)(flag)
        name = "k_%s_d%d_%s" % (dtype, hdim, "lse" if flag else "nlse")
        unpadded = "a.hdim_q %% %d == 0" % (128 if hdim == 96 else hdim)
        out += [
            ("%s && (%s) && (%s)" % (cond, ALIGNED, unpadded),
             (lambda s, h: lambda c: s(c) and aligned(c) and c["hdim_q"] % h == 0)(
                 same, 128 if hdim == 96 else hdim), name + "_npad"),
            ("%s && (%s)" % (cond, ALIGNED), (lambda s: lambda c: s(c) and aligned(c))(same),
             name + "_psddv"),
            ("%s && (%s)" % (cond, PADDED), (lambda s: lambda c: s(c) and not aligned(c))(same),
             name + "_psskddv"),
            # behind the two complementary branches: never tried
            ("%s && (true)" % cond, same, name + "_trload"),
            # the same condition as the aligned one, again
            ("%s && (%s)" % (cond, ALIGNED), (lambda s: lambda c: s(c) and aligned(c))(same),
             name + "_dup"),
        ]
    return out


def _at_most(hdim: int):
    return lambda c: c["hdim_q"] <= hdim


def v2() -> List[Branch]:
    out: List[Branch] = []
    for dtype in ("fp16", "fp8"):
        buckets = [("t.hdim_q <= %d" % h, _at_most(h), inner(dtype, h)) for h in (64, 96, 128)]
        out.append(('t.data_type.compare("%s") == 0' % dtype,
                    (lambda d: lambda c: c["dtype"] == d)(dtype), buckets))
    return [('device_name.compare(0, 4, "gfx9") == 0', lambda c: c["device"].startswith("gfx9"),
             out)]


def v3() -> List[Branch]:
    return [('device_name.compare(0, 6, "gfx950") == 0',
             lambda c: c["device"].startswith("gfx950"),
             [('t.data_type.compare("fp8") == 0', lambda c: c["dtype"] == "fp8",
               [("t.hdim_q <= 128 && t.hdim_v <= 128", lambda c: c["hdim_q"] <= 128,
                 [("(t.has_lse == false) && (a.hdim_q % 128 == 0)",
                   lambda c: not c["lse"] and c["hdim_q"] % 128 == 0, "v3_fp8_d128")])])])]


def render(branches: List[Branch], kept: Optional[set], depth: int = 1) -> str:
    """The C++ of a dispatch chain, without the kernels outside ``kept`` (and the
    branches left empty): what a filtered generate.py writes."""
    text, first = "", True
    pad = "    " * depth
    for cond, _, body in branches:
        if isinstance(body, str):
            if kept is not None and body not in kept:
                continue
            inside = "%s    using trait_ = traits_<%s>;\n%s    return launch_<trait_>(s, a);\n" % (
                pad, body, pad)
        else:
            inside = render(body, kept, depth + 1)
            if not inside:
                continue
        text += "%s%s(%s) {\n%s%s}\n" % (pad, "if" if first else "else if", cond, inside, pad)
        first = False
    return text


def api_file(kept: Optional[set] = None) -> str:
    def function(name: str, branches: List[Branch]) -> str:
        return "float %s(traits t, args a, const config& s) {\n%s    return -1;\n}\n" % (
            name, render(branches, kept))
    return (function("fmha_x_v2", V2) + function("fmha_x_v3", V3)
            + "float fmha_x(traits traits, args args, const config& config) {\n"
              "    if (args.max_seqlen_q > 1) {\n"
              "        float r = fmha_x_v3(traits, args, config);\n"
              "        if (r >= 0) return r;\n    }\n"
              "    return fmha_x_v2(traits, args, config);\n}\n")


def simulate(call: Dict, kept: Optional[set]) -> Optional[str]:
    """The kernel a call runs (None: none): first match wins at every level."""
    key = frozenset(kept) if kept is not None else None
    if key not in _WRITTEN:
        _WRITTEN[key] = {}
    written = _WRITTEN[key]

    def present(body) -> bool:
        if id(body) not in written:
            written[id(body)] = bool(render(body, kept))
        return written[id(body)]

    def run(branches: List[Branch]) -> Tuple[bool, Optional[str]]:
        for _cond, test, body in branches:
            if isinstance(body, str):
                if kept is not None and body not in kept:
                    continue
                if test(call):
                    return True, body
                continue
            if not present(body):
                continue  # a branch the set leaves empty is not written
            if test(call):
                return run(body)  # entered: no later branch of the chain is tried
        return False, None

    if call["max_seqlen_q"] > 1:
        found, name = run(V3)
        if found:
            return name
    return run(V2)[1]


_WRITTEN: Dict[Optional[frozenset], Dict[int, bool]] = {}


V2, V3 = v2(), v3()
CALLS = [dict(zip(("device", "dtype", "hdim_q", "lse", "cu", "seqlen_k", "max_seqlen_q"), v))
         for v in itertools.product(["gfx950", "gfx942", "gfx1100"], ["fp16", "fp8", "bf16"],
                                    [8, 32, 64, 96, 100, 128, 192], [False, True],
                                    [None, 0x10], [0, 1, 64, 128], [1, 2])]


def kernels(text: str) -> Dict[str, str]:
    """kernel file -> its trait key (one kernel per launching leaf)."""
    tree = parse_dispatch(text)
    return {leaf.trait_args[0].split("<", 1)[1].rstrip(">") + ".cpp": leaf.keys[0]
            for leaf in tree.leaves}


def all_names() -> List[str]:
    def walk(branches: List[Branch]):
        for _, _, body in branches:
            if isinstance(body, str):
                yield body
            else:
                yield from walk(body)
    return list(walk(V2)) + list(walk(V3))


def test_the_unreachable_kernels_are_those_no_call_runs():
    text = api_file()
    report = link_report_from_keys(text, kernels(text))
    run = {simulate(call, None) for call in CALLS} - {None}
    names = set(all_names())
    assert {name[:-4] for name in report.unreachable} == names - run
    # the trload kernels sit behind two complementary branches, none alone
    whys = never_run_texts(report.unreachable)
    trload = [why for name, why in whys.items() if "_trload" in name]
    assert trload and all("between them" in why for why in trload)
    assert all("same condition" in why for name, why in whys.items()
               if "_dup" in name)
    # d96's unpadded kernels need a head dim that is a multiple of 128
    assert all("never holds" in why for name, why in whys.items()
               if "_d96_" in name and "_npad" in name)


def test_what_a_set_runs_for_a_dropped_kernels_calls():
    text = api_file()
    dispatch = SetDispatch(text, kernels(text))
    names = all_names()
    # keep the padded fallbacks and the aligned lse kernels; drop the rest
    kept = {n for n in names if n.endswith("_psskddv") or ("_lse_psddv" in n)}
    fates = dispatch.fates([n + ".cpp" for n in names if n not in kept],
                           {n + ".cpp" for n in kept})
    before = [simulate(c, None) for c in CALLS]
    after = [simulate(c, kept) for c in CALLS]
    for name in names:
        if name in kept:
            continue
        calls = [i for i, ran in enumerate(before) if ran == name]
        now = {after[i] for i in calls}
        fate = fates[name + ".cpp"]
        if not calls:
            assert fate.never, name
            continue
        assert fate.lost == (None in now), name
        assert {s[:-4] for s in fate.stand_ins} == now - {None}, name
    # the aligned kernel without lse loses calls: the padded one is reached only when
    # seqlen_k is not a non-zero multiple of 64 (its exact complement)
    lost = fates["k_fp16_d64_nlse_psddv.cpp"]
    assert lost.lost and lost.stand_ins == ()
    # the v3 kernel's calls move to v2 (the set keeps no v3 kernel): its padded kernel
    # takes those whose seqlen_k is not aligned, the aligned ones find none
    moved = fates["v3_fp8_d128.cpp"]
    assert moved.lost and moved.stand_ins == ("k_fp8_d128_nlse_psskddv.cpp",)


def test_a_set_view_runs_what_the_set_file_runs():
    """The view of a set read from the full file runs, for every call, the kernel the
    set's own file (written without the dropped branches) runs."""
    names = all_names()
    kept = {n for n in names if "_d128_" in n and ("_psddv" in n or "_dup" in n)}
    kept |= {"v3_fp8_d128"}
    text = api_file()
    dispatch = SetDispatch(text, kernels(text))
    view = dispatch.view({n + ".cpp" for n in kept})
    ran = {n for n in kept if dispatch.ways(view, n + ".cpp")}
    assert ran == {simulate(c, kept) for c in CALLS} - {None}
    # the duplicate runs in the set: the branch that took its calls is gone
    assert "k_fp16_d128_nlse_dup" not in ran  # (the aligned one is kept: still behind it)
    assert dispatch.runs_nothing(view, [n + ".cpp" for n in kept]) == sorted(
        n + ".cpp" for n in kept - ran)


def test_a_kernel_no_leaf_names_is_never_said_to_lose_nothing():
    """A kernel the reading links to no leaf (2024 CK's combine kernels) has no way in:
    that dropping it loses no call is not established, so the policy keeps it."""
    text = api_file()
    traits = dict(kernels(text), **{"combine.cpp": "combine_traits_<64>"})
    dispatch = SetDispatch(text, traits)
    view = dispatch.view(set(traits))
    assert dispatch.loses("combine.cpp", view, dispatch.view(set(traits) - {"combine.cpp"}))



# an empty branch in the full file: a call it admits runs nothing there and leaves the
# chain; the second chain then runs what it has. (C++ condition, test, kernel or None)
EMPTY_CHAINS = [
    [("t.hdim_q <= 32", lambda h: h <= 32, "e32"), ("t.hdim_q <= 64", lambda h: h <= 64, None),
     ("t.hdim_q <= 48", lambda h: h <= 48, "e48"), ("t.hdim_q <= 128", lambda h: h <= 128, "e128")],
    [("t.hdim_q <= 256", lambda h: h <= 256, "e256")],
]


def empty_branch_file(kept: Optional[set] = None) -> str:
    """The file generate.py writes: a dropped kernel's branch left out, the empty one kept."""
    body = ""
    for chain in EMPTY_CHAINS:
        written = [(c, k) for c, _, k in chain if k is None or kept is None or k in kept]
        for i, (cond, kernel) in enumerate(written):
            inside = "" if kernel is None else (
                "        using trait_ = traits_<%s>;\n        return launch_<trait_>(s, a);\n" % kernel)
            body += "    %s(%s) {\n%s    }\n" % ("if" if i == 0 else "else if", cond, inside)
    return "float fmha_e(traits t, args a, const config& s) {\n%s    return -1;\n}\n" % body


def empty_branch_runs(hdim: int, kept: Optional[set]) -> Optional[str]:
    for chain in EMPTY_CHAINS:
        for _, test, kernel in chain:
            if kernel is not None and kept is not None and kernel not in kept:
                continue  # (not written)
            if test(hdim):
                if kernel is not None:
                    return kernel
                break  # entered the empty branch: nothing runs, the chain is left
    return None


def test_an_empty_branch_takes_the_calls_it_admits():
    text = empty_branch_file()
    traits = kernels(text)
    hdims = range(1, 300)
    ran = {empty_branch_runs(h, None) for h in hdims} - {None}
    report = link_report_from_keys(text, traits)
    assert {name[:-4] for name in report.unreachable} == {"e32", "e48", "e128", "e256"} - ran
    assert "e48" not in ran  # (the empty branch before it admits all its calls)
    # a set without e32: its calls now enter the empty branch and run e256, not e128
    kept = {"e128", "e256"}
    dispatch = SetDispatch(text, traits)
    fates = dispatch.fates(["e32.cpp"], {k + ".cpp" for k in kept})
    now = {empty_branch_runs(h, kept) for h in hdims if empty_branch_runs(h, None) == "e32"}
    assert now == {"e256"}
    assert {s[:-4] for s in fates["e32.cpp"].stand_ins} == now
    assert not fates["e32.cpp"].lost
    # the set's own file (the empty branch written) runs the same
    view = dispatch.view({k + ".cpp" for k in kept})
    assert {k for k in kept if dispatch.ways(view, k + ".cpp")} == \
        {empty_branch_runs(h, kept) for h in hdims} - {None}
