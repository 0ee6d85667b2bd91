"""The probe's marker runs stop once the fnmatch calls they observe are made: what they
observe is what a marker run to the end observes, on every corpus tree and on the
synthetic mutants; and the session keeps the other ``--mask`` listing that the probe
made, so no ``generate.py -l -m ...`` process runs for it.

The oracle is written here: a plain interpreter runs generate.py to its end once per
filter, with an fnmatch of its own that records the first calls, lets them pass and
refuses every later one (what the probe's marker runs mean). On a corpus tree the probe
checked is the one a page's session ran, read back from its API's analysis group.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import List, Sequence

import pytest

from sphinxext_fmha.analysis import probe_script
from sphinxext_fmha.analysis.observe import PROBE_SCRIPT, observe, observe_also, read_result
from sphinxext_fmha.analysis.probe_script import OBSERVED_CALLS
from sphinxext_fmha.corpus import load_corpus
from sphinxext_fmha.locate import fmha_dir

from helpers import synthetic
from helpers.analysis_fixtures import session_probe, with_analysis_group
from helpers.independent import FRESH_RUNS_HEAD, independent_listing
from helpers.launch_twin import run_child

pytest_plugins = ["helpers.plugins_analysis"]

CORPUS = load_corpus()
AITER = "amd-aiter-0.1.7.post2.dev18"
#: The summaries of the four marker runs in the probe's result, in the order they run.
MARKER_KEYS = ("fnmatch_calls", "single_part_calls", "empty_parts_calls", "empty_filter_calls")

_ORACLE = FRESH_RUNS_HEAD + r'''    import fnmatch
    cap = request["cap"]
    calls, total = [], [0]

    def first_calls_pass(name, pat, calls=calls, total=total):
        total[0] += 1
        passing = len(calls) < cap
        if passing:
            calls.append([str(pat), str(name)])
        return passing

    fnmatch.fnmatch = first_calls_pass
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        sys.argv = ["generate.py", *request["argv"], "-f", pattern,
                    "-l", os.path.join(tmp, "kernels.txt")]
        try:
            runpy.run_path("generate.py", run_name="__main__")
        except SystemExit as exc:
            failed = exc.code not in (0, None)
        except Exception:
            failed = True
    results.append({"calls": calls, "total": total[0], "failed": failed})
json.dump(results, open(request["out"], "w"))
'''

#: The probe script with a smaller cap on the calls a marker run observes (the
#: synthetic trees make fewer calls than the real cap).
_PROBE_WITH_CAP = r'''
import importlib.util, sys
script, cap = sys.argv[1], int(sys.argv[2])
spec = importlib.util.spec_from_file_location("probe_script", script)
probe = importlib.util.module_from_spec(spec)
sys.modules["probe_script"] = probe
spec.loader.exec_module(probe)
probe.OBSERVED_CALLS = cap
sys.argv = [script] + sys.argv[3:]
probe.main()
'''

_ENV = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")


def _probe(root: Path, api: str, tmp: Path, cap: int = 0) -> dict:
    out = tmp / "probe.json"
    if cap:
        driver = tmp / "probe_with_cap.py"
        driver.write_text(_PROBE_WITH_CAP, encoding="utf-8")
        command = [sys.executable, "-B", str(driver), str(PROBE_SCRIPT), str(cap)]
    else:
        command = [sys.executable, "-B", str(PROBE_SCRIPT)]
    ran = run_child(command + [str(fmha_dir(root)), str(out), "--no-perturb", "-a", api],
                    cwd=fmha_dir(root), timeout=1200, env=_ENV)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(out.read_text(encoding="utf-8"))


def _oracle(root: Path, argv: Sequence[str], filters: Sequence[str], cap: int,
            tmp: Path) -> List[dict]:
    driver, request, out = tmp / "oracle.py", tmp / "oracle.json", tmp / "oracle_out.json"
    driver.write_text(_ORACLE, encoding="utf-8")
    request.write_text(json.dumps({"argv": list(argv), "filters": list(filters), "cap": cap,
                                   "out": str(out)}), encoding="utf-8")
    ran = run_child([sys.executable, "-B", str(driver), str(fmha_dir(root)), str(request)],
                    cwd=tmp, timeout=3600, env=_ENV)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(out.read_text(encoding="utf-8"))


def _filters(observed: dict) -> List[str]:
    """The four marker filters, as the probe says it ran them (its inputs)."""
    marker_filter = observed["marker_filter"]
    api_part = marker_filter.split(",")[0]
    return [marker_filter, api_part.split("@")[0], "@" * api_part.count("@"), ""]


def _assert_marker_runs_match(observed: dict, oracle: List[dict], cap: int) -> None:
    """The same calls and errors; a run stopped exactly when it had more calls to make."""
    for key, expected in zip(MARKER_KEYS, oracle):
        summary = observed[key]
        assert len(summary["raw"]) == len(expected["calls"]) <= cap, key
        assert summary["raw"] == expected["calls"], key
    assert len(observed["marker_errors"]) == sum(run["failed"] for run in oracle)
    assert [end != "complete" for end in observed["marker_runs"]] == \
        [run["total"] > cap for run in oracle], observed["marker_runs"]


# In the analysis group of the API's default mask: the probe checked is the one a page's
# session ran (read back from the group's shared cache), not a probe of its own.
MARKER_CASES = with_analysis_group([
    (tree.name, api) for tree in CORPUS for api in sorted(tree.apis)
    # aiter's bwd: four runs to the end take a minute; its shape is 2.8.3's
    if not (tree.name == AITER and api == "bwd")])


@pytest.mark.corpus
@pytest.mark.parametrize("tree, api", MARKER_CASES)
def test_marker_runs_observe_what_runs_to_the_end_observe(corpus_root, analysis_cache, tmp_path,
                                                          tree, api):
    root = corpus_root(tree)
    observed = session_probe(root, api, analysis_cache)
    oracle = _oracle(root, ["-a", api], _filters(observed), OBSERVED_CALLS, tmp_path)
    _assert_marker_runs_match(observed, oracle, OBSERVED_CALLS)


SMALL_CAP = 7


@pytest.mark.parametrize("variant", synthetic.VARIANTS)
def test_marker_runs_stop_early_on_the_synthetic_mutants(tmp_path, variant):
    root = synthetic.make_tree(tmp_path, variant)
    for api in synthetic.VARIANT_APIS[variant]:
        work = tmp_path / api
        work.mkdir()
        observed = _probe(root, api, work, cap=SMALL_CAP)
        oracle = _oracle(root, ["-a", api], _filters(observed), SMALL_CAP, work)
        _assert_marker_runs_match(observed, oracle, SMALL_CAP)
        # every synthetic API makes more calls than SMALL_CAP with markers
        assert observed["marker_runs"][:3] == ["stopped"] * 3, observed["marker_runs"]


def test_a_codegen_that_catches_the_stop_runs_again_to_its_end(tmp_path):
    """A codegen that catches everything around fnmatch (a bare ``except``) swallows
    the stop: the run goes on unlike a real one, so it runs again to its end."""
    root = synthetic.make_tree(tmp_path, "base")
    module = fmha_dir(root) / "codegen" / "ops" / "fmha_toy.py"
    text = module.read_text(encoding="utf-8")
    assert "fnmatch.fnmatch(k.name, kernel_filter)" in text
    text = text.replace("fnmatch.fnmatch(k.name, kernel_filter)",
                        "_catching_match(k.name, kernel_filter)")
    text += ("\n\ndef _catching_match(name, pattern):\n    try:\n"
             "        return fnmatch.fnmatch(name, pattern)\n"
             "    except BaseException:\n        return False\n")
    module.write_text(text, encoding="utf-8")
    observed = _probe(root, "toy", tmp_path, cap=SMALL_CAP)
    oracle = _oracle(root, ["-a", "toy"], _filters(observed), SMALL_CAP, tmp_path)
    _assert_marker_runs_match(observed, oracle, SMALL_CAP)
    assert observed["marker_runs"][:3] == ["ran again"] * 3, observed["marker_runs"]


def test_a_real_error_of_a_marker_run_is_still_reported(tmp_path):
    """A marker run that fails before its observed calls are made (here: a filter with
    '@' that the codegen refuses) reports generate.py's error, not the stop."""
    root = synthetic.make_tree(tmp_path, "base")
    module = fmha_dir(root) / "codegen" / "ops" / "fmha_toy.py"
    text = module.read_text(encoding="utf-8")
    anchor = "    api_pool = ToyApiPool(mask_impl)\n"
    assert anchor in text
    module.write_text(text.replace(anchor, "    assert '@' not in (kernel_filter or ''), "
                                           "'no @ here'\n" + anchor, 1), encoding="utf-8")
    observed = _probe(root, "toy", tmp_path, cap=SMALL_CAP)
    oracle = _oracle(root, ["-a", "toy"], _filters(observed), SMALL_CAP, tmp_path)
    _assert_marker_runs_match(observed, oracle, SMALL_CAP)
    assert [run["failed"] for run in oracle] == [True, False, True, False]
    assert all("no @ here" in error for error in observed["marker_errors"])


# -- the other --mask listing ----------------------------------------------------------

def test_the_session_keeps_the_other_mask_listing_the_probe_made(tmp_path):
    """No separate ``generate.py -l -m generic`` runs: the probe listed that mode, and
    the session kept it as that run's result (here with the steps started ahead, as a
    Sphinx build plans them); it is an independent run's listing."""
    from sphinxext_fmha.analysis.analyze import Options
    from sphinxext_fmha.session import Session

    root = synthetic.make_tree(tmp_path, "at_split")
    session = Session(root, cache_dir=tmp_path / "cache")
    steps = [session.probe_ahead("toy"), session.mask_listing_ahead("toy")]
    assert steps[0] is not None and steps[1] is None  # the probe lists it
    session.start_ahead([steps[0]], wait=True)
    modes = session.mask_modes("toy")
    assert modes is not None
    assert session.runner.processes_started == 0
    other = session.listing(session.tree.request("toy", Options(mask="generic")))
    assert set(other.files) == independent_listing(root, "toy", tmp_path, "-m", "generic")
    session.stop_ahead()


def test_an_other_mask_listing_that_fails_runs_as_its_own_process(tmp_path):
    """When generate.py fails in the other mode, the probe's listing is not kept: the
    separate run happens and reports generate.py's own error."""
    from sphinxext_fmha.analysis.analyze import Options, probe_argv
    from sphinxext_fmha.process.runner import GenerateError
    from sphinxext_fmha.session import Session

    root = synthetic.make_tree(tmp_path, "base")
    module = fmha_dir(root) / "codegen" / "ops" / "fmha_toy.py"
    text = module.read_text(encoding="utf-8")
    anchor = "    api_pool = ToyApiPool(mask_impl)\n"
    module.write_text(text.replace(anchor, "    assert mask_impl != 'generic', 'no generic'\n"
                                   + anchor, 1), encoding="utf-8")
    session = Session(root, cache_dir=tmp_path / "cache")
    session.observation("toy")
    argv = [probe_argv(session.tree.request("toy", options), session.tree.supported_dests())
            for options in (Options(), Options(mask="generic"))]
    also = observe_also(fmha_dir(root), argv[0], argv[1], cache=session.cache)
    assert also is not None and "no generic" in also["error"]
    with pytest.raises(GenerateError, match="no generic"):
        session.listing(session.tree.request("toy", Options(mask="generic")))
    assert session.runner.processes_started == 1


@pytest.mark.parametrize("can_fork", [True, False], ids=["forked", "no-fork"])
def test_the_other_mask_listing_is_what_generate_py_lists(tmp_path, can_fork):
    """The probe lists the other ``--mask`` mode in a child it forks first: the listing
    is generate.py's own. Where the system cannot fork, it says so (``unsafe``), and
    the caller lists that mode in a process of its own."""
    root = synthetic.make_tree(tmp_path, "at_split")
    out = tmp_path / "probe.json"
    hide_fork = "" if can_fork else "del os.fork; "
    command = [sys.executable, "-B", "-c",
               "import os, runpy, sys; %ssys.argv = sys.argv[1:]; "
               "runpy.run_path(sys.argv[0], run_name='__main__')" % hide_fork,
               str(PROBE_SCRIPT), str(fmha_dir(root)), str(out), "--no-perturb",
               "--also-list", json.dumps(["-a", "toy", "-m", "generic"]), "-a", "toy"]
    ran = run_child(command, cwd=fmha_dir(root), timeout=600,
                    env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert ran.returncode == 0, ran.stderr[-2000:]
    also = json.loads(out.read_text(encoding="utf-8"))["also_listed"]
    if not can_fork:
        assert also == {"argv": ["-a", "toy", "-m", "generic"], "unsafe": "no forked listing"}
        return
    assert not also.get("error") and not also.get("unsafe"), also
    assert also["how"] == "forked"
    listed = {n for n in also["listing"] if not n.endswith("_api.cpp")}
    assert listed == independent_listing(root, "toy", tmp_path, "-m", "generic")
    assert listed != independent_listing(root, "toy", tmp_path)  # the mode matters here


#: Put in front of a synthetic generate.py: a run in ``generic`` mode waits (up to a
#: minute) for the gate file, as a listing that takes long would, and writes into
#: GATE.seen whether it found the gate open (or gave up waiting).
_GATE = '''import os as _gate_os, sys as _gate_sys, time as _gate_time
if "generic" in _gate_sys.argv:
    _gate_end = _gate_time.time() + 60
    while not _gate_os.path.exists(%(gate)r) and _gate_time.time() < _gate_end:
        _gate_time.sleep(0.05)
    with open(%(gate)r + ".seen", "w") as _gate_seen:
        _gate_seen.write("open" if _gate_os.path.exists(%(gate)r) else "gave up")
'''


def test_the_result_is_handed_over_before_the_other_listing_ends(tmp_path):
    """On a heavy tree the other ``--mask`` listing outlasts the probe's own work: the
    probe's result comes as soon as it is written, the other listing when it ends
    (from the process, then from the cache); both are generate.py's own."""
    from sphinxext_fmha.process.cache import DiskCache

    root = synthetic.make_tree(tmp_path, "at_split")
    gate = tmp_path / "gate"
    script = fmha_dir(root) / "generate.py"
    script.write_text(_GATE % {"gate": str(gate)} + script.read_text(encoding="utf-8"),
                      encoding="utf-8")
    argv, generic = ["-a", "toy"], ["-a", "toy", "-m", "generic"]
    cache = DiskCache(tmp_path / "cache")
    observed = observe(fmha_dir(root), argv, cache=cache, also_list=generic)
    gate.touch()  # only now can the generic listing end
    also = observe_also(fmha_dir(root), argv, generic, cache=cache)
    # had the result waited for the gated listing, that listing would have given up
    assert (tmp_path / "gate.seen").read_text() == "open", "the result waited for the listing"
    assert {n for n in observed["listing"] if not n.endswith("_api.cpp")} == \
        independent_listing(root, "toy", tmp_path)
    assert also is not None and not also.get("error"), also
    expected = independent_listing(root, "toy", tmp_path, "-m", "generic")
    assert {n for n in also["listing"] if not n.endswith("_api.cpp")} == expected
    copied = tmp_path / "copied-cache"
    shutil.copytree(cache.root, copied)  # another cache folder: no memo of this process
    kept = observe_also(fmha_dir(root), argv, generic, cache=DiskCache(copied))
    assert kept is not None and set(kept["listing"]) == set(also["listing"])


@pytest.mark.parametrize("orjson_present", [True, False])
def test_the_result_file_is_sorted_json_with_or_without_orjson(tmp_path, monkeypatch,
                                                                orjson_present):
    """The probe writes its result with orjson where the interpreter has it, else with
    ``json``: either way the file reads back as the data, keys sorted as
    ``json.dumps(sort_keys=True)`` sorts them."""
    if not orjson_present:
        monkeypatch.setitem(sys.modules, "orjson", None)  # import orjson: ImportError
    data = {"b": [1, {"z": "ünïcode\n", "a": None}], "a": {"y": 2.5, "x": 2 ** 40},
            "records": [{"leaves": {"F_tile.b": 64, "F_tile.a": True}}]}
    path = str(tmp_path / "result.json")
    probe_script.write_whole(path, data)
    text = Path(path).read_text(encoding="utf-8")
    assert json.loads(text) == data
    assert list(json.loads(text, object_pairs_hook=lambda pairs: [k for k, _ in pairs])) \
        == sorted(data)
    assert not Path(path + ".part").exists()
    assert read_result(Path(path).read_bytes()) == data


@pytest.mark.parametrize("orjson_present", [True, False])
def test_a_result_with_an_integer_beyond_64_bits_reads_back_exactly(tmp_path, monkeypatch,
                                                                     orjson_present):
    """orjson refuses to write an integer beyond 64 bits, and would read one as a float:
    the probe writes such a result with ``json``, and the analysis reads it as ``json``
    reads it."""
    if not orjson_present:
        monkeypatch.setitem(sys.modules, "orjson", None)
    data = {"records": [{"mask": 2 ** 70, "low": -(2 ** 64) - 1, "name": "k"}], "n": 1}
    path = str(tmp_path / "result.json")
    probe_script.write_whole(path, data)
    raw = Path(path).read_bytes()
    assert json.loads(raw) == data
    got = read_result(raw)
    assert got == data and isinstance(got["records"][0]["mask"], int)


def _files_of(top: Path) -> List[str]:
    return sorted(str(path.relative_to(top)) for path in top.rglob("*"))


def _without_seconds(data: object) -> object:
    """The data with its timings left out (they differ from run to run)."""
    if isinstance(data, dict):
        return {k: _without_seconds(v) for k, v in data.items() if k != "seconds"}
    if isinstance(data, list):
        return [_without_seconds(v) for v in data]
    return data


def _probe_with_store(root: Path, api: str, tmp: Path, store: Path, name: str) -> dict:
    out, also = tmp / (name + ".json"), tmp / (name + "-also.json")
    command = [sys.executable, "-B", str(PROBE_SCRIPT), str(fmha_dir(root)), str(out),
               "--code-store", str(store), "--also-list",
               json.dumps(["-a", api, "-m", "generic"]), "--also-out", str(also), "-a", api]
    ran = run_child(command, cwd=fmha_dir(root), timeout=1200, env=_ENV)
    assert ran.returncode == 0, ran.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    result["also_listed"] = json.loads(also.read_text(encoding="utf-8"))
    return result


STORE_CASES = [
    pytest.param("synthetic", "toy", id="synthetic"),
    pytest.param("flash-attn-2.8.3", "fwd_appendkv", id="flash-attn-2.8.3-fwd_appendkv",
                 marks=[pytest.mark.corpus]),
]


@pytest.mark.parametrize("tree, api", STORE_CASES)
def test_a_probe_that_loads_the_code_store_observes_what_one_that_compiles_observes(
        request, tmp_path, tree, api):
    """The first probe compiles the tree and keeps its code outside it; the second
    loads that code instead of compiling (it keeps nothing new: the store is not
    written again) and observes the same, and its other ``--mask`` listing, forked
    before any work, is generate.py's own. Nothing is written into the tree."""
    root = synthetic.make_tree(tmp_path, "at_split") if tree == "synthetic" \
        else request.getfixturevalue("corpus_root")(tree)
    before = _files_of(fmha_dir(root))
    store = tmp_path / "store" / "code.marshal"
    compiled = _probe_with_store(root, api, tmp_path, store, "compiled")
    kept = (store.stat().st_ino, store.stat().st_mtime_ns)
    loaded = _probe_with_store(root, api, tmp_path, store, "loaded")
    # the second one compiled nothing of its own: a store written again is a new file
    assert (store.stat().st_ino, store.stat().st_mtime_ns) == kept
    assert _without_seconds(loaded) == _without_seconds(compiled)
    expected = independent_listing(root, api, tmp_path, "-m", "generic")
    assert {n for n in loaded["also_listed"]["listing"] if not n.endswith("_api.cpp")} \
        == expected
    assert {n for n in loaded["listing"] if not n.endswith("_api.cpp")} \
        == independent_listing(root, api, tmp_path)
    assert _files_of(fmha_dir(root)) == before


def test_a_code_store_of_another_interpreter_or_a_partial_one_is_not_loaded(
        tmp_path, monkeypatch):
    """A store is loaded only when the interpreter that wrote it marshals code as this
    one does (its bytecode magic number, optimisation level, version); one cut short
    is ignored too. What is saved is what this process used, and nothing is saved
    when it compiled nothing itself."""
    import marshal

    for name, value in (("COMPILED", {}), ("GENERATED", {}), ("USED", set()),
                        ("FRESH", set())):
        monkeypatch.setattr(probe_script, name, value)
    text = "def f(self):\n    return 1\n"
    code = compile(text, "<string>", "exec", dont_inherit=True)
    tag = ("fmha-code-store", 1, b"\x00\x00\r\n", sys.flags.optimize, sys.version)
    foreign = tmp_path / "foreign.marshal"
    foreign.write_bytes(marshal.dumps((tag, {}, {text: code})))
    assert probe_script.load_code_store(str(foreign)) == 0
    assert probe_script.GENERATED == {}

    # this process compiles the text itself, uses it, and keeps it
    assert probe_script.generated_code(text) is probe_script.GENERATED[text]
    unused = "def g(self):\n    return 2\n"
    probe_script.GENERATED[unused] = compile(unused, "<string>", "exec", dont_inherit=True)
    store = tmp_path / "kept" / "code.marshal"
    probe_script.save_code_store(str(store))
    own_tag, compiled, generated = marshal.loads(store.read_bytes())
    assert compiled == {} and list(generated) == [text]  # the unused one is left out
    assert generated[text] == code  # the same text compiles to the same code

    partial = tmp_path / "partial.marshal"
    partial.write_bytes(store.read_bytes()[:-20])
    monkeypatch.setattr(probe_script, "GENERATED", {})
    assert probe_script.load_code_store(str(partial)) == 0
    assert probe_script.load_code_store(str(store)) == 1
    assert probe_script.GENERATED[text] == code

    # a process that only loaded what it used does not write the store again
    monkeypatch.setattr(probe_script, "FRESH", set())
    store.unlink()
    probe_script.save_code_store(str(store))
    assert not store.exists()
    assert own_tag[0] == "fmha-code-store"
