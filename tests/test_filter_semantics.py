"""What ``-f`` really does, observed, on synthetic trees of the shapes CK has (issue 40).

* kernels generated in pairs: a twin made after its kernel passed ``-f``, its own name
  never tested (newer batch_prefill's ``_64bit`` kernels);
* write mode that asserts on partners (newer split-KV ``write_blobs``);
* ``@`` parts that filter on their own, a missing part filtering nothing, with a
  dispatcher that launches kernels of several parts in one call (2.8.0-era bwd).

The trees are ``synthetic_coupled.py``'s. The oracles are written here: generate.py run
in a subprocess (list and write mode), names read with this module's regexes, the
selection of a pattern computed with the standard library's ``fnmatch``.
"""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, Set, Tuple

import pytest

from sphinxext_fmha.cli import main
from sphinxext_fmha.guide import collect_guide
from sphinxext_fmha.render.markdown import guide_markdown
from sphinxext_fmha.session import Session

from helpers import synthetic_coupled as coupled

FMHA = coupled.FMHA


_generate = coupled.generate
_listing = coupled.listing


def _written(root: Path, out: Path, *args: str) -> Tuple[subprocess.CompletedProcess, Dict[str, str]]:
    out.mkdir()
    proc = _generate(root, *args, "-o", str(out))
    return proc, {p.name: p.read_text() for p in out.glob("*.cpp")}


def _cli(capsys, root: Path, cache: Path, *argv: str):
    code = main([argv[0], "--ck-root", str(root), "--cache-dir", str(cache), *argv[1:]])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --------------------------------------------------------------------------- twins

#: the toy's names: fmha_toy_d64_fp16_batch_[wide_]b128x64_qr_...
_TWIN = re.compile(r"^(fmha_toy_d\d+_\w+?_batch_)wide_(.*)$")


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    base = tmp_path_factory.mktemp("twins")
    root = coupled.make_coupled(base, "base", coupled.twins)
    return root, Session(root, cache_dir=base / "cache"), base


def test_the_probe_finds_each_twin_and_the_kernel_it_follows(twins):
    root, session, tmp = twins
    full = _listing(root, tmp)
    wide = {n for n in full if _TWIN.match(n)}
    assert wide and len(wide) < len(full)
    # the twin of fmha_toy_d64_fp16_batch_wide_X is fmha_toy_d64_fp16_batch_X
    assert session.followers("toy") == {n: _TWIN.sub(r"\1\2", n) for n in wide}
    [group] = session.model("toy").filter.followers
    assert (group.kernel_type, group.leader_type, group.count) == ("ToyKernel", "ToyKernel",
                                                                   len(wide))
    assert [t for tokens in group.tokens.values() for t in tokens] == ["_wide"]
    assert group.example[1] in wide and session.followers("toy")[group.example[1]] == group.example[0]


@pytest.mark.parametrize("pattern", ["*_d64_*", "*_wide_*", "*_batch_wide_*", "*_fp16_batch_b*",
                                     "*_batch_b128x64_qr_npad_nbias_nmask_lse",
                                     "*_wide_b128x64_qr_npad_nbias_nmask_lse", "*_nmask_*"])
def test_a_pattern_keeps_or_drops_a_twin_with_its_kernel(twins, pattern):
    """Patterns naming either member of a pair: the model predicts what generate.py
    selects, and both equal the oracle (the pattern tested on names without ``wide_``,
    each twin kept with its kernel)."""
    root, session, tmp = twins
    full = _listing(root, tmp)
    tested = {n for n in full if not _TWIN.match(n)}
    passed = {n for n in tested if fnmatch.fnmatchcase(n[:-len(".cpp")], pattern)}
    expected = passed | {n for n in full if _TWIN.match(n) and _TWIN.sub(r"\1\2", n) in passed}
    selected = _listing(root, tmp, "-f", pattern)
    assert selected == expected
    check = session.check("toy", pattern)
    assert check.verified, check.notes
    assert check.count == check.predicted == len(selected)
    # twins whose own names match: said, since the pattern does not decide them
    assert check.untested_matches == len(
        {n for n in full if _TWIN.match(n) and fnmatch.fnmatchcase(n[:-len(".cpp")], pattern)})


def test_the_guide_says_a_twin_comes_with_its_kernel(twins):
    root, session, tmp = twins
    full = _listing(root, tmp)
    wide = {n for n in full if _TWIN.match(n)}
    text = guide_markdown(collect_guide(session, "toy", sections=["filter", "fields"]),
                          ["filter", "fields"])
    [item] = [line for line in text.splitlines() if "right after it" in line]
    assert "%d of the %d kernels" % (len(wide), len(full)) in item
    assert "`_wide`" in item and "selects none of them" in item
    assert "dropped on its own" not in text
    assert "Not selectable: `_wide`" in text


# --------------------------------------------------------------------------- asserting write mode


@pytest.fixture(scope="module")
def asserting(tmp_path_factory):
    base = tmp_path_factory.mktemp("asserting")
    root = coupled.make_coupled(base, "at_split", coupled.independent_parts,
                                coupled.coupled_in_write_mode)
    return root, Session(root, cache_dir=base / "cache"), base


#: a main kernel's name -> the convert kernel one dispatch call launches with it
_MAIN = re.compile(r"^fmha_toy_d(\d+)_(\w+?)_(batch|group)_b(\d+)x\d+(?:_o\d+)?_qr_(npad|p[sd]+)_")


def _convert_of(main: str) -> str:
    hdim, dtype, mode, bm0, pad = _MAIN.match(main).groups()  # type: ignore[union-attr]
    return "fmha_toy_convert_d%s_%s_%s_b%s_%s.cpp" % (hdim, dtype, mode, bm0, pad)


def test_write_mode_that_asserts_is_observed_and_said(asserting, tmp_path):
    root, session, _ = asserting
    facts = session.filter_facts("toy")
    partner = facts.partner_write
    assert partner is not None
    assert (partner.main_type, partner.partner_types) == ("ToyKernel", ["ToyConvertKernel"])
    # the same filter, run here: one main kernel lists, and write mode asserts
    assert partner.listed == len(_listing(root, tmp_path, "-f", partner.filter)) == 1
    proc, _ = _written(root, tmp_path / "out", "-f", partner.filter)
    assert proc.returncode != 0
    assert partner.error == proc.stderr.strip().splitlines()[-1]
    assert partner.error.startswith("AssertionError: no convert kernel for")
    text = guide_markdown(collect_guide(session, "toy", sections=["filter"]), ["filter"])
    [item] = [line for line in text.splitlines() if "launches a `ToyKernel`" in line]
    assert "**fails**" in item and partner.error in item


def test_a_check_that_fails_in_write_mode_reports_it(asserting, tmp_path, capsys):
    root, session, base = asserting
    pattern = "*_npad*@*_ps*"  # main kernels without padding, convert kernels with it
    selected = _listing(root, tmp_path, "-f", pattern)
    proc, _ = _written(root, tmp_path / "out", "-f", pattern)
    assert proc.returncode != 0
    check = session.check("toy", pattern)
    assert check.count == len(selected) and check.verified
    assert check.write_error == proc.stderr.strip().splitlines()[-1]
    assert not check.write_verified
    needed = {_convert_of(n) for n in selected if n.startswith("fmha_toy_d")}
    assert set(check.unresolved_kernels) == needed - selected != set()
    assert check.unresolved_per_type == {"ToyConvertKernel": len(needed - selected)}
    code, out, err = _cli(capsys, root, base / "cache", "check", "--api", "toy",
                          "--filter", pattern, "--format", "json")
    assert code == 1
    data = json.loads(out)
    assert data["write_verified"] is False and data["write_error"] == check.write_error
    assert len(data["unresolved"]) == len(needed - selected)
    [line] = [line for line in err.splitlines() if "warning:" in line]
    assert "toy -f '%s' lists %d kernels but fails in write mode: %s" % (
        pattern, len(selected), check.write_error) in line


# --------------------------------------------------------------------------- '@' parts, no link


@pytest.fixture(scope="module")
def unlinked(tmp_path_factory):
    base = tmp_path_factory.mktemp("unlinked")
    root = coupled.make_coupled(base, "at_split", coupled.independent_parts,
                                coupled.convert_first, coupled.launched_together)
    return root, Session(root, cache_dir=base / "cache"), base


_CONVERT_TRAITS = re.compile(r"toy_convert_traits_<([^>]*)>")


def _convert_traits(text: str) -> Set[str]:
    return {re.sub(r"\s+", "", m) for m in _CONVERT_TRAITS.findall(text)}


def test_a_missing_part_that_leaves_the_dispatch_unresolved(unlinked, tmp_path, capsys):
    """``-f '*_d64*'`` is the convert kernels' part alone (the main kernels' part is
    missing: no filter): every main kernel is written, and the dispatch file names the
    d128 convert kernels that were not. Counted here from the written files."""
    root, session, base = unlinked
    model = session.model("toy")
    missing_part = [p for p in model.filter.parts if p.position == 1]
    assert missing_part and missing_part[0].missing_becomes in (None, "")
    proc, files = _written(root, tmp_path / "out", "-f", "*_d64*")
    assert proc.returncode == 0
    api = next(text for name, text in files.items() if name.endswith("_api.cpp"))
    defined = set().union(*(_convert_traits(text) for name, text in files.items()
                            if name.startswith("fmha_toy_convert_")))
    unresolved = _convert_traits(api) - defined
    assert unresolved and all(t.startswith("128,") for t in unresolved)
    check = session.check("toy", "*_d64*")
    assert check.verified and not check.write_error and not check.write_verified
    assert len(check.unresolved) == len(unresolved)
    assert check.unresolved_per_type == {"ToyConvertKernel": len(unresolved)}
    code, _, err = _cli(capsys, root, base / "cache", "check", "--api", "toy", "--filter", "*_d64*")
    assert code == 1
    assert "toy -f '*_d64*' would not link: the dispatch file python generate.py -a toy -f " \
           "'*_d64*' -o generated writes instantiates %d kernel specialisations" % len(unresolved) \
           in err
    # a filter that keeps the partners links, and says so
    both = session.check("toy", "*@*_d64*")
    assert both.write_verified and not both.unresolved


def test_the_filter_section_says_the_parts_must_keep_partners(unlinked, tmp_path):
    root, session, _ = unlinked
    partner = session.filter_facts("toy").partner_write
    assert partner is not None and not partner.error
    proc, files = _written(root, tmp_path / "out", "-f", partner.filter)
    assert proc.returncode == 0
    api = next(text for name, text in files.items() if name.endswith("_api.cpp"))
    assert partner.unresolved == len(_convert_traits(api)) == 1
    text = guide_markdown(collect_guide(session, "toy", sections=["filter"]), ["filter"])
    [item] = [line for line in text.splitlines() if "launches a `ToyKernel`" in line]
    assert "instantiates 1 kernel specialisation it does not generate" in item
    assert "**the build fails to link**" in item


# --------------------------------------------------------------------------- both partners


@pytest.fixture(scope="module")
def both_lse(tmp_path_factory):
    base = tmp_path_factory.mktemp("both_lse")
    root = coupled.make_coupled(base, "at_split", coupled.independent_parts,
                                coupled.launched_together, coupled.both_lse_converts,
                                coupled.write_asserts)
    return root, Session(root, cache_dir=base / "cache"), base


#: one main kernel's dispatch branch: its two convert kernels, picked by ``t.has_lse``
_BOTH = re.compile(r"if \(t\.has_lse\) \{\s*using ctrait_ = toy_convert_traits_<([^>]*)>;.*?"
                   r"\} else \{\s*using ctrait_ = toy_convert_traits_<([^>]*)>;", re.S)


def test_a_main_kernel_kept_with_one_partner_only_is_observed_and_said(both_lse, tmp_path):
    """Each branch names an ``_lse`` and an ``_nlse`` convert kernel (the split-KV combine
    kernels of newer CK); write mode asserts only the ``_nlse`` one. A main kernel kept
    with its ``_nlse`` convert kernel only is written, rc 0, by a dispatch file that
    names the ``_lse`` one too: counted here from the written files."""
    root, session, tmp = both_lse
    partner = session.filter_facts("toy").partner_write
    assert partner is not None and len(partner.subsets) == 2
    outcomes = {}
    for n, subset in enumerate(partner.subsets):
        proc, files = _written(root, tmp_path / str(n), "-f", subset.filter)
        if proc.returncode:
            assert subset.error == proc.stderr.strip().splitlines()[-1] != ""
            outcomes["fails"] = subset
            continue
        kept = [name for name in files if name.startswith("fmha_toy_convert_")]
        assert kept == [subset.kept + ".cpp"] and kept[0].endswith("_nlse.cpp")
        missing = _convert_traits(files["fmha_toy_api.cpp"]) - _convert_traits(files[kept[0]])
        assert len(missing) == subset.unresolved == 1
        assert all(m.endswith(",true") for m in missing)
        outcomes["unlinked"] = subset
    assert set(outcomes) == {"fails", "unlinked"}
    text = guide_markdown(collect_guide(session, "toy", sections=["filter", "fields"]),
                          ["filter", "fields"])
    [item] = [line for line in text.splitlines() if "launches a `ToyKernel`" in line]
    assert "name 2 partner kernels" in item
    assert ("`-f '%s'` (keeps `%s`): write mode writes a dispatch file that instantiates 1 "
            "kernel specialisation it does not generate: **the build fails to link**"
            % (outcomes["unlinked"].filter, outcomes["unlinked"].kept)) in item
    assert "`-f '%s'` (keeps `%s`): write mode **fails**" % (
        outcomes["fails"].filter, outcomes["fails"].kept) in item
    # the field reference says it under the convert kernels' lse segment, for every
    # main kernel: each has one branch naming both (counted in the full dispatch file)
    _, files = _written(root, tmp_path / "full", "-f", "@")
    branches = _BOTH.findall(files["fmha_toy_api.cpp"])
    assert branches and all(a.endswith("true") and b.endswith("false") for a, b in branches)
    mains = [n for n in files if n.startswith("fmha_toy_d")]
    assert len(branches) == len(mains)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith('<a id="toyconvertkernel-filter-part-1-lse">'))
    segment = lines[start:next((i for i in range(start + 1, len(lines))
                                if "Segment **" in lines[i]), len(lines))]
    [note] = [line for line in segment if line.startswith("**Kept together:**")]
    assert "each of %d `ToyKernel` kernels" % len(mains) in note and "(`_lse` and `_nlse`)" in note
    assert sum(line.startswith("**Kept together:**") for line in lines) == 1


def test_the_main_kernel_of_a_call_is_not_its_first_trait(tmp_path):
    """The same tree with the convert kernel's trait first in each call: the note still
    counts the main kernels, each naming two convert kernels, not the convert kernels."""
    root = coupled.make_coupled(tmp_path, "at_split", coupled.independent_parts,
                                coupled.launched_together, coupled.both_lse_converts,
                                coupled.partner_first)
    _, files = _written(root, tmp_path / "full", "-f", "@")
    assert "fmha_toy_<ctrait_, trait_>" in files["fmha_toy_api.cpp"]
    mains = [n for n in files if n.startswith("fmha_toy_d")]
    session = Session(root, cache_dir=tmp_path / "cache")
    text = guide_markdown(collect_guide(session, "toy", sections=["fields"]), ["fields"])
    [note] = [line for line in text.splitlines() if line.startswith("**Kept together:**")]
    assert "each of %d `ToyKernel` kernels" % len(mains) in note and "(`_lse` and `_nlse`)" in note


@pytest.mark.parametrize("items", [[], ["lse=f"]])
def test_the_sets_keep_every_partner_a_kept_kernel_names(both_lse, tmp_path, items):
    """The minimal set, and a workload that never asks for the log-sum-exp: each kept
    main kernel comes with both its ``_lse`` and ``_nlse`` convert kernels, and every
    run writes a dispatch file whose convert kernels are all generated."""
    root, session, _ = both_lse
    rec = session.recommend("toy", needs=session.needs("toy", items) if items else ())
    assert rec.runs
    union: Set[str] = set()
    for n, run in enumerate(rec.runs):
        proc, files = _written(root, tmp_path / str(n), "-f", run.filter)
        assert proc.returncode == 0, proc.stderr
        defined = set().union(*(_convert_traits(text) for name, text in files.items()
                                if name.startswith("fmha_toy_convert_")))
        assert _convert_traits(files["fmha_toy_api.cpp"]) <= defined
        union |= set(files) - {"fmha_toy_api.cpp"}
    mains = {n for n in union if n.startswith("fmha_toy_d")}
    assert mains
    for kernel in mains:
        convert = _convert_of(kernel)[:-len(".cpp")]
        assert {convert + "_lse.cpp", convert + "_nlse.cpp"} <= union, kernel


@pytest.mark.usefixtures("reproducible_build")
def test_the_filter_check_directive_warns_where_it_stands(asserting, tmp_path):
    """A filter that fails in write mode is a located ``fmha.filter`` warning, and the
    page says why; the page still builds."""
    from helpers.project import build_page

    root, _, base = asserting
    app, warnings, found = build_page(tmp_path, root, "Page\n====\n\n.. fmha-filter-check::\n"
                                      "   :api: toy\n   :filter: *_npad*@*_ps*\n", base / "cache")
    assert [(line, kind) for line, kind, _ in found] == [(4, "filter")], warnings
    assert "fails in write mode: AssertionError: no convert kernel for" in found[0][2]
    assert "python generate.py -a toy -f '*_npad*@*_ps*' -o generated" in found[0][2]
    html = (Path(app.outdir) / "page.html").read_text(encoding="utf-8")
    assert "<strong>Write mode fails:</strong>" in html
    assert "Run this command in" in html and "01_fmha" in html  # where the command runs


def test_one_pattern_for_partners_is_observed_too(tmp_path):
    """No ``@``: the same pattern filters both kinds of kernel on their own names, so a
    main kernel's exact name keeps none of its convert kernels."""
    root = coupled.make_coupled(tmp_path, "at_split", coupled.independent_parts,
                                coupled.one_pattern, coupled.launched_together)
    session = Session(root, cache_dir=tmp_path / "cache")
    assert not session.model("toy").filter.api_split
    partner = session.filter_facts("toy").partner_write
    assert partner is not None and "@" not in partner.filter
    assert _listing(root, tmp_path, "-f", partner.filter) == {partner.filter + ".cpp"}
    proc, files = _written(root, tmp_path / "out", "-f", partner.filter)
    api = next(text for name, text in files.items() if name.endswith("_api.cpp"))
    assert proc.returncode == 0 and partner.unresolved == len(_convert_traits(api)) == 1
    text = guide_markdown(collect_guide(session, "toy", sections=["filter"]), ["filter"])
    [item] = [line for line in text.splitlines() if "launches a `ToyKernel`" in line]
    assert item.startswith("- The pattern keeps or drops each kernel on its own, yet one")


# --------------------------------------------------------------------------- targets, -l


@pytest.fixture(scope="module")
def targeted(tmp_path_factory):
    base = tmp_path_factory.mktemp("targeted")
    root = coupled.make_coupled(base, "base", coupled.arch_targets,
                                generate=[coupled.targets_in_generate, coupled.appending_listing])
    return root, Session(root, cache_dir=base / "cache"), base


def test_targets_choose_the_arch_and_f_cannot(targeted, tmp_path):
    """File names end in ``_gfx9``, which ``-f`` never sees; ``--targets gfx12`` (an arch
    the codegen names) gives no kernel. Counted here from generate.py's listings."""
    root, session, _ = targeted
    default = _listing(root, tmp_path)
    assert default and all(n.endswith("_gfx9.cpp") for n in default)
    assert _listing(root, tmp_path, "--targets", "gfx12") == set()
    assert _listing(root, tmp_path, "-f", "*_gfx9*") == set()
    # a build for gfx9 and gfx12 still gets the gfx9 kernels in this shape
    assert _listing(root, tmp_path, "--targets", "gfx9,gfx950,gfx12") == default
    facts = session.filter_facts("toy")
    assert [(t.targets, t.count, t.by_suffix, t.default) for t in facts.targets] == [
        ("gfx9,gfx950", len(default), {"_gfx9": len(default)}, True), ("gfx12", 0, {}, False),
        ("gfx9,gfx950,gfx12", len(default), {"_gfx9": len(default)}, False)]
    text = guide_markdown(collect_guide(session, "toy", sections=["filter"]), ["filter"])
    [item] = [line for line in text.splitlines() if "cannot choose an architecture" in line]
    assert "(`_gfx9`) is not part of the kernel name" in item
    assert "this guide's listing (`--targets gfx9,gfx950`): %d `_gfx9` kernels" % len(default) in item
    assert "`--targets gfx12`: **0** kernels" in item
    assert "With `--targets` `gfx12`, this codegen generates no kernel of this API." in item
    assert item.endswith("Each added to this guide's targets: `--targets gfx9,gfx950,gfx12`: "
                         "%d `_gfx9` kernels." % len(default))


def test_a_target_that_empties_a_mixed_list_is_measured_and_said(tmp_path):
    """Newer batch_prefill's shape: any non-gfx9 target empties the whole listing, so
    a list naming gfx9 and gfx12 gets no kernel; counted here from generate.py's
    listings."""
    root = coupled.make_coupled(tmp_path, "base", coupled.arch_targets,
                                coupled.any_other_target_empties,
                                generate=[coupled.targets_in_generate])
    session = Session(root, cache_dir=tmp_path / "cache")
    default = _listing(root, tmp_path)
    assert default and _listing(root, tmp_path, "--targets", "gfx9") == default
    assert _listing(root, tmp_path, "--targets", "gfx9,gfx950,gfx12") == set()
    facts = session.filter_facts("toy")
    assert [(t.targets, t.count, t.mixed) for t in facts.targets] == [
        ("gfx9,gfx950", len(default), False), ("gfx12", 0, False),
        ("gfx9,gfx950,gfx12", 0, True)]
    text = guide_markdown(collect_guide(session, "toy", sections=["filter"]), ["filter"])
    [item] = [line for line in text.splitlines() if "cannot choose an architecture" in line]
    assert item.endswith("Each added to this guide's targets: `--targets gfx9,gfx950,gfx12`: "
                         "**0** kernels: a list of targets that names one of them gets **no** "
                         "kernel of this API, not even for this guide's targets.")
    assert session.check("toy", "*_gfx9*").count == 0


def _refuses_gfx12(text: str) -> str:
    """After arch_targets: this API raises for a gfx12 target, which the codegen names
    (newest CK's bwd: ``Exception: Unsupported device target gfx11``)."""
    old = ("    if targets is not None and not any(t.startswith('gfx9') for t in targets):\n")
    assert old in text
    return text.replace(old, "    for t in targets or []:\n"
                             "        if t.startswith('gfx12'):\n"
                             "            raise Exception(f'Unsupported device target {t}')\n" + old)


def test_a_target_the_api_refuses_is_said_and_the_others_are_measured(tmp_path):
    """A family the tree names but this API refuses: generate.py exits with an error of
    its own; the filter mechanism says so for that value and still counts the others (no
    warning: the section is whole). The refusal is read here from generate.py's stderr."""
    root = coupled.make_coupled(tmp_path, "base", coupled.arch_targets, _refuses_gfx12,
                                generate=[coupled.targets_in_generate])
    session = Session(root, cache_dir=tmp_path / "cache")
    default = _listing(root, tmp_path)
    refused = _generate(root, "--targets", "gfx12", "-l", str(tmp_path / "x.txt"))
    assert refused.returncode != 0
    last = [line.strip() for line in refused.stderr.splitlines() if line.strip()][-1]
    assert last == "Exception: Unsupported device target gfx12"
    facts = session.filter_facts("toy")
    assert [(t.targets, t.count, t.refused) for t in facts.targets] == [
        ("gfx9,gfx950", len(default), ""), ("gfx12", 0, last)]
    data = collect_guide(session, "toy", sections=["filter"])
    assert data.filter_problem is None
    [item] = [line for line in guide_markdown(data, ["filter"]).splitlines()
              if "cannot choose an architecture" in line]
    assert "`--targets gfx12`: generate.py refuses it for this API (`%s`)" % last in item
    assert "generates no kernel of this API" not in item


def test_a_listing_that_appends_is_run_from_a_fresh_file(targeted, tmp_path):
    """This generate.py appends to its ``-l`` file: the probe sees it, and the shown
    command removes the file first, so running it twice (here, in a shell, in the folder
    the page names) lists each kernel once."""
    from sphinxext_fmha.render.markdown import blocks_markdown
    from sphinxext_fmha.render.sections.filter_check import filter_check_blocks

    root, session, _ = targeted
    doubled = tmp_path / "twice.txt"
    for _ in range(2):
        assert _generate(root, "-l", str(doubled)).returncode == 0
    once = _listing(root, tmp_path)
    assert len(doubled.read_text().splitlines()) == 2 * (len(once) + 1)  # the API file too
    model = session.model("toy")
    assert model.list_appends
    check = session.check("toy", "*_d64_*")
    assert check.command == "rm -f kernels.txt && python generate.py -a toy -f '*_d64_*' " \
                            "-l kernels.txt"
    text = "\n".join(blocks_markdown(filter_check_blocks(check, (), model)))
    assert "Run this command in `example/ck_tile/01_fmha` of the CK tree" in text
    assert "appends to the `-l` file instead of writing it afresh" in text
    shown = check.command.replace("python generate.py", "%s -B generate.py" % sys.executable)
    for _ in range(2):
        subprocess.run(["bash", "-c", shown], cwd=root / FMHA, check=True, capture_output=True)
    listed = (root / FMHA / "kernels.txt").read_text().splitlines()
    (root / FMHA / "kernels.txt").unlink()
    assert len(listed) == check.count + 1 == len(set(listed))
