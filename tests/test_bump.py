"""A CK bump without surprises (issue 44): ``sphinxext-fmha diff`` and
``fmha-filter-check :against:``.

Independent oracle: the test runs the old filter in the old tree and every migrated run
in the new tree with each tree's own generate.py (``tests/helpers/independent.py``: a plain
interpreter, nothing of sphinxext_fmha in between), and compares the sets by kernel name
with its own code: a name is the file name without ``.cpp`` and without an arch suffix
(``_gfx950``); where names changed between the trees, the test's own reading of them
(the tokens a newer tree writes for a feature that is off, which older trees omit).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Set, Tuple

import pytest

from sphinxext_fmha.bump_data import CHANGE_KINDS, Change, FilterComparison, TreeSelection
from sphinxext_fmha.cli import main
from sphinxext_fmha.render.ir import text_of
from sphinxext_fmha.render.sections.filter_diff import change_inlines

from helpers.analysis_fixtures import with_analysis_group
from helpers.independent import independent_listing, independent_listings, written_run
from helpers.project import build, write_project

pytest_plugins = ["helpers.plugins_analysis"]

_ARCH = re.compile(r"_gfx[0-9a-z]+$")
#: what 2.8 trees write for a feature that is off, where 2.7.4 writes nothing; and the
#: logits segment 2.7.4 does not have
_OFF_2_8 = re.compile(r"_(n(pad|bias|mask|lse|squant|pagedkv|logits)|logits)(?=_|$)")


def name(filename: str) -> str:
    stem = filename[:-4] if filename.endswith(".cpp") else filename
    return _ARCH.sub("", stem)


def names(files: Iterable[str], reading: Callable[[str], str] = name) -> Set[str]:
    return {reading(f) for f in files}


def run(capsys, *argv: str) -> Tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def diff_json(capsys, old: Path, new: Path, api: str, filter: str, cache: Path) -> dict:
    code, out, err = run(capsys, "diff", "--from-ck-root", str(old), "--ck-root", str(new),
                         "--cache-dir", str(cache), "--api", api, "-f", filter,
                         "--format", "json")
    assert code == 0, err
    return json.loads(out)


def check_contract(data: dict) -> None:
    """docs/json-schema.md's promise: old/new {count, per_type}, changes [..],
    migrated {runs [{filter, count, gloss, verified}], verdict, missing [..]}."""
    for side in ("old", "new"):
        assert isinstance(data[side]["count"], int)
        assert sum(data[side]["per_type"].values()) == data[side]["count"]
    for change in data["changes"]:
        assert change["kind"] in CHANGE_KINDS and change["text"] and change["text"] != change["kind"]
    migrated = data["migrated"]
    assert migrated["verdict"] in ("same", "changed", "impossible")
    assert isinstance(migrated["missing"], list)
    for item in migrated["runs"]:
        assert set(item) >= {"filter", "count", "gloss", "verified"} and item["gloss"]


def migrated_union(root: Path, api: str, tmp: Path, filters: List[str]) -> Set[str]:
    union: Set[str] = set()
    for listed, text in zip(independent_listings(root, api, tmp, filters), filters):
        assert listed is not None, text
        union |= listed
    return union


def check_oracle(data: dict, old_selected: Set[str], new_selected: Set[str], union: Set[str],
                 reading: Callable[[str], str] = name) -> None:
    """The JSON agrees with generate.py's own listings, compared by name here."""
    migrated = data["migrated"]
    assert data["old"]["count"] == len(old_selected)
    assert data["new"]["count"] == len(new_selected)
    assert migrated["count"] == len(union)
    old_names = names(old_selected)
    missing = names(migrated["missing"])
    assert missing <= old_names and not missing & names(union, reading)
    # every old kernel that still exists is selected; what else is selected is the extra
    assert names(union, reading) >= old_names - missing
    extra = {f for f in union if reading(f) not in old_names}
    assert sorted(extra) == migrated["extra"]
    one_each = len(union) == len(old_selected)
    assert (migrated["verdict"] == "same") == (not missing and not extra and one_each)
    assert data["same"] == (not missing and names(new_selected, reading) == old_names
                            and len(new_selected) == len(old_selected))
    assert all(r["verified"] for r in migrated["runs"]) and migrated["verified"]


# -- real trees: pairs whose -f meaning differs ------------------------------------------

CASES = [
    # -f was one pattern for every sub-type; now split on '@' (the split-KV kernels take
    # part 1, which the filter lacks); names gained _n<feature> tokens and a logits segment
    ("flash-attn-2.7.4.post1", "flash-attn-2.8.1", "fwd_splitkv", "*_d128_*"),
    # the same semantics, a bigger tree: 1,560 -> 1,944, every old kernel still there
    ("flash-attn-2.8.1", "flash-attn-2.8.3", "fwd_splitkv", "*_nbias_*"),
    # kernel dropping -> whole-trait dropping: 7,776 -> 0
    ("flash-attn-2.8.1", "flash-attn-2.8.3", "bwd", "*_nbias_*"),
    # arch suffixes in the file names, kernels that no longer exist
    ("flash-attn-2.8.3", "amd-aiter-0.1.7.post2.dev18", "fwd_appendkv", "*_fp16_*"),
]


@pytest.mark.parametrize("old_tree,new_tree,api,filter", [
    pytest.param(*case, id="%s-%s-%s" % (case[0], case[1], case[2]), marks=param.marks)
    for case, param in zip(CASES, with_analysis_group([(c[1], c[2]) for c in CASES]))])
def test_migrated_runs_select_the_old_kernels(old_tree, new_tree, api, filter, corpus_root,
                                             analysis_cache_dir, tmp_path, capsys):
    old, new = corpus_root(old_tree), corpus_root(new_tree)
    data = diff_json(capsys, old, new, api, filter, analysis_cache_dir / "runs")
    check_contract(data)
    old_selected = independent_listing(old, api, tmp_path, "-f", filter)
    filters = [r["filter"] for r in data["migrated"]["runs"]]
    listed = independent_listings(new, api, tmp_path, [filter] + filters)
    assert all(found is not None for found in listed)
    union: Set[str] = set().union(*listed[1:])
    renamed = old_tree.startswith("flash-attn-2.7")
    reading = (lambda f: _OFF_2_8.sub("", name(f))) if renamed else name
    check_oracle(data, old_selected, listed[0], union, reading)
    kinds = {c["kind"] for c in data["changes"]}
    if (old_tree, api) == ("flash-attn-2.8.1", "bwd"):
        # the headline: a build script carried across the bump compiles nothing
        assert (len(old_selected), len(listed[0])) == (7776, 0)
        assert "drops" in kinds and data["migrated"]["verdict"] == "changed"
        assert data["migrated"]["extra_per_type"] == {"FmhaBwdOGradDotOKernel": 48}
    if api == "fwd_splitkv" and old_tree == "flash-attn-2.8.1":
        assert (len(old_selected), len(listed[0])) == (1560, 1944)
        assert data["migrated"]["verdict"] == "same"
    if renamed:
        # matched by field values: the logits variants are each old kernel's counterparts
        assert {"api-split", "pattern", "renamed-kernels", "several"} <= kinds
        assert len(union) > len(old_selected) and data["migrated"]["verdict"] == "changed"
    if new_tree.startswith("amd-aiter"):
        assert data["migrated"]["missing"] and data["migrated"]["unchanged_filter"]


# -- synthetic trees: fast, every exit status ----------------------------------------------

def test_a_new_flag_gives_each_old_kernel_two_counterparts(synthetic_tree, tmp_path, capsys):
    old, new = synthetic_tree("absent_when_off"), synthetic_tree("new_flag")
    data = diff_json(capsys, old, new, "toy", "*_d64_*", tmp_path / "cache")
    check_contract(data)
    union = migrated_union(new, "toy", tmp_path, [r["filter"] for r in data["migrated"]["runs"]])
    old_selected = independent_listing(old, "toy", tmp_path, "-f", "*_d64_*")
    new_selected = independent_listing(new, "toy", tmp_path, "-f", "*_d64_*")
    # the new tree writes _nbias where the old wrote nothing, and _sink/_nsink
    check_oracle(data, old_selected, new_selected, union,
                 lambda f: re.sub(r"_(nbias|n?sink)(?=_|$)", "", name(f)))
    several = [c for c in data["changes"] if c["kind"] == "several"]
    assert several and set(several[0]["values"]) == {"F_pipeline.F_sink"}


def test_whole_trait_dropping_brings_partners_along(synthetic_tree, tmp_path, capsys):
    old, new = synthetic_tree("base"), synthetic_tree("at_split")
    data = diff_json(capsys, old, new, "toy", "*_d64_*", tmp_path / "cache")
    union = migrated_union(new, "toy", tmp_path, [r["filter"] for r in data["migrated"]["runs"]])
    old_selected = independent_listing(old, "toy", tmp_path, "-f", "*_d64_*")
    check_oracle(data, old_selected, independent_listing(new, "toy", tmp_path, "-f", "*_d64_*"),
                 union)
    kinds = [c["kind"] for c in data["changes"]]
    assert kinds[:2] == ["api-split", "drops"] and "type-added" in kinds
    # the extra kernels are the convert kernels generated with the kept main kernels
    assert data["migrated"]["extra"] and all("_convert_" in f for f in data["migrated"]["extra"])


def test_text_format_says_counts_and_verdict(synthetic_tree, tmp_path, capsys):
    old, new = synthetic_tree("base"), synthetic_tree("at_split")
    code, out, _ = run(capsys, "diff", "--from-ck-root", str(old), "--ck-root", str(new),
                       "--cache-dir", str(tmp_path), "--api", "toy", "-f", "*_d64_*")
    assert code == 0
    assert out.startswith("# Filter diff: `toy` `*_d64_*`")
    assert "lists **36** kernels" in out and "**42**" in out and "**Changed:**" in out


def _refusing(synthetic_tree) -> Path:
    """``at_split`` where each kernel passes its own pattern (no trait is dropped whole)
    and write mode asserts that every main kernel has its convert kernel, as newer CK
    does for a split-KV kernel and its combine kernel."""
    root = synthetic_tree("at_split")
    module = root / "example" / "ck_tile" / "01_fmha" / "codegen" / "ops" / "fmha_toy.py"
    text = module.read_text(encoding="utf-8")
    trait = ("                # a trait is kept only if both of its kernels pass their pattern\n"
             "                if not fnmatch.fnmatch(k.name, filter_main):\n"
             "                    continue\n"
             "                if not fnmatch.fnmatch(cvt.name, filter_convert):\n"
             "                    continue")
    back = "    return (api_pool, gen, list(convert.values()))"
    write = "    for kernel in kernels + convert_kernels:\n        (output_dir"
    assert trait in text and back in text and write in text
    text = text.replace(trait, "                if not fnmatch.fnmatch(k.name, filter_main):\n"
                               "                    continue")
    text = text.replace(back, "    convert = {n: c for n, c in convert.items() "
                              "if fnmatch.fnmatch(n, filter_convert)}\n" + back)
    text = text.replace(write, (
        "    names = {c.name for c in convert_kernels}\n"
        "    for k in kernels:\n"
        "        cvt = ToyConvertKernel(F_hdim=k.F_hdim, F_dtype=k.F_dtype, F_mode=k.F_mode,\n"
        "                               F_bm0=k.F_tile.F_bm0, F_spad=k.F_pipeline.F_spad,\n"
        "                               F_dpad=k.F_pipeline.F_dpad)\n"
        "        assert cvt.name in names, '0 matching ToyConvertKernel for ' + k.name\n") + write,
        1)
    module.write_text(text, encoding="utf-8")
    return root


def test_a_set_write_mode_refuses_is_no_longer_possible(synthetic_tree, tmp_path, capsys):
    """The counterparts of the old set are main kernels without their convert kernels;
    nothing in this tree (no dispatch call, no trait) says which convert kernel a main
    kernel needs, so no run can be written: said, with generate.py's reason."""
    old, new = synthetic_tree("base"), _refusing(synthetic_tree)
    data = diff_json(capsys, old, new, "toy", "*_d64_*", tmp_path / "cache")
    migrated = data["migrated"]
    assert migrated["verdict"] == "impossible"
    assert "0 matching ToyConvertKernel" in migrated["write_error"]
    (run_,) = migrated["runs"]
    assert not run_["written"] and not run_["verified"]
    listed = independent_listing(new, "toy", tmp_path, "-f", run_["filter"])
    assert names(listed) == names(independent_listing(old, "toy", tmp_path, "-f", "*_d64_*"))
    assert written_run(new, "toy", "-f", run_["filter"]) is None  # generate.py refuses it
    code, out, _ = run(capsys, "diff", "--from-ck-root", str(old), "--ck-root", str(new),
                       "--cache-dir", str(tmp_path / "cache"), "--api", "toy", "-f", "*_d64_*")
    assert code == 0 and "**No longer possible:**" in out


def test_launched_with_reads_the_traits_without_a_dispatch_pairing():
    from sphinxext_fmha.bump import Side, launched_with
    from sphinxext_fmha.model import ApiModel, FilterCheck
    from sphinxext_fmha.verify.parsed_listing import ParsedListing

    parsed = {"m1.cpp": ("Main", ["m1"]), "m2.cpp": ("Main", ["m2"]), "m3.cpp": ("Main", ["m3"]),
              "c1.cpp": ("Convert", ["c1"]), "c2.cpp": ("Convert", ["c2"])}
    side = Side(ApiModel(api="toy", source=""), ParsedListing(list(parsed), parsed, []),
                FilterCheck(api="toy", filter="", command=""))
    traits = [["m1.cpp", "c1.cpp"], ["m2.cpp", "c1.cpp"], ["m3.cpp", "c2.cpp"]]
    assert launched_with("", {}, side, {"m1.cpp", "m2.cpp"}, traits) == {"c1.cpp"}
    assert launched_with("", {}, side, {"m1.cpp"}) == set()  # nothing couples them


def _failing(synthetic_tree) -> Path:
    root = synthetic_tree("base")
    generate = root / "example" / "ck_tile" / "01_fmha" / "generate.py"
    text = generate.read_text(encoding="utf-8")
    anchor = "    args = parser.parse_args()\n"
    generate.write_text(text.replace(anchor, anchor + "    if 'boom' in (args.filter or ''):\n"
                                     "        raise RuntimeError('synthetic failure')\n"),
                        encoding="utf-8")
    return root


@pytest.mark.parametrize("case,code,said", [
    ("no old root", 2, "nowhere"),
    ("'@' where the old tree has no split", 2, "'@'"),
    ("unknown API", 2, "nope"),
    ("bad option", 2, "receipt"),
    ("a run fails", 1, "synthetic failure"),
])
def test_exit_status(case, code, said, synthetic_tree, tmp_path, capsys):
    old = synthetic_tree("base")
    new = _failing(synthetic_tree) if case == "a run fails" else synthetic_tree("absent_when_off")
    given = {"--from-ck-root": str(old), "--api": "toy", "-f": "*_d64_*"}
    extra: List[str] = []
    if case == "no old root":
        given["--from-ck-root"] = str(tmp_path / "nowhere")
    elif case.startswith("'@'"):
        given["-f"] = "*_d64_*@*"
    elif case == "unknown API":
        given["--api"] = "nope"
    elif case == "bad option":
        extra = ["--receipt", "x"]
    else:
        given["-f"] = "*boom*"
    args = [item for pair in given.items() for item in pair] + extra
    found, out, err = run(capsys, "diff", "--ck-root", str(new), "--cache-dir",
                          str(tmp_path / "cache"), *args)
    assert found == code and said in err and not out
    assert "Traceback" not in err.split("stderr")[0]  # only generate.py's own, quoted


# -- pure facts ----------------------------------------------------------------------------

def test_forced_by_traits_takes_every_tied_trait():
    from sphinxext_fmha.bump import forced_by_traits

    traits = [["d1", "c", "k1"], ["d2", "c", "k1"], ["d1", "c", "k2"]]
    assert forced_by_traits({"c", "k1"}, traits) == {"d1", "d2"}
    assert forced_by_traits({"c", "k1", "k2"}, traits) == {"d1", "d2"}
    assert forced_by_traits({"d1", "c", "k1"}, traits) == set()  # a whole trait: nothing
    assert forced_by_traits({"x"}, traits) == set()  # in no trait: filtered on its own


def test_every_change_kind_is_said():
    comparison = FilterComparison(api="bwd", filter="*_nbias_*",
                                  old=TreeSelection(parts=[["A"], ["B"]]),
                                  new=TreeSelection(parts=[["A"], ["B"]]))
    said: Dict[str, str] = {}
    for kind in CHANGE_KINDS:
        change = Change(kind, kernel_type="K", segment="bias", old="@", new="*", count=2,
                        total=3, old_how="whole", new_how="missing", new_part=1,
                        values={"F_bias": ["no"]}, examples=["a.cpp"])
        said[kind] = text_of(change_inlines(change, comparison))
    assert all(text and text != kind and text.endswith(".") for kind, text in said.items())
    assert len(set(said.values())) == len(CHANGE_KINDS)


# -- the directive -------------------------------------------------------------------------

PAGE = """Page
====

.. fmha-filter-check::
   :api: fwd_splitkv
   :filter: *_nbias_*
   :against: flash-attn-2.8.1
   :expect-same:

.. fmha-filter-check::
   :api: fwd_splitkv
   :filter: *_nbias_*
   :against: flash-attn-2.8.1

.. fmha-filter-check::
   :api: fwd_appendkv
   :filter: *_d128_*
   :expect-same:

.. fmha-filter-check::
   :api: fwd_appendkv
   :filter: *_d128_*
   :against: {old}
   :expect-same:
"""


@pytest.mark.usefixtures("reproducible_build")
def test_against_shows_the_comparison_and_warns_only_when_asked(corpus_root, tmp_path):
    from helpers.project import located

    root = corpus_root("flash-attn-2.8.3")
    old = independent_listing(corpus_root("flash-attn-2.8.1"), "fwd_splitkv", tmp_path,
                              "-f", "*_nbias_*")
    new = independent_listing(root, "fwd_splitkv", tmp_path, "-f", "*_nbias_*")
    page = PAGE.format(old=corpus_root("flash-attn-2.8.1"))  # a path: the same set there
    src = write_project(tmp_path / "src", {"page.rst": page}, ck_root=root)
    app, _status, warnings = build(src, "text")
    found = located(warnings, src / "page.rst")
    # a changed set is a warning only with :expect-same:; that option needs :against:
    assert [(line, kind) for line, kind, _ in found] == [(4, "expectation"), (15, "option")], warnings
    assert "(%d), generate.py selects %d here" % (len(old), len(new)) in found[0][2]
    text = " ".join((Path(app.outdir) / "page.txt").read_text(encoding="utf-8").split())
    assert text.count("lists **%d** kernels, the new tree's (this CK tree) **%d**"
                      % (len(old), len(new))) == 2
    assert text.count("**Same set:**") == 3 and "python generate.py -a fwd_splitkv -f" in text
    assert "The filter selects the same kernels in both trees." in text
