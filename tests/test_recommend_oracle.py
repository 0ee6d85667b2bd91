"""The recommendation is true of the set its commands select (issue 9, items 1, 2, 5).

Independent oracle: the test runs every recommended command with generate.py itself
(listing and write mode), unions the listings, and reads the kernel names and the
written C++ with small parsers written here -- never with the package's grammar,
model or dispatch reader. It then checks the JSON and the rendered text against that.
"""

from __future__ import annotations

import re
import shlex
from collections import defaultdict
from typing import Dict, List, Set, Tuple

import pytest

from sphinxext_fmha.locate import fmha_dir
from sphinxext_fmha.render.markdown import render_recommendation_markdown
from sphinxext_fmha.render.sections.loss_words import loss_sentences

from helpers.analysis_fixtures import cached_listing, cached_write, with_analysis_group
from helpers.names import carries, prefix, problem
from helpers.trees import CORPUS

pytest_plugins = ["helpers.plugins_analysis"]

CASES = [(tree.name, api) for tree in CORPUS for api in sorted(tree.apis)]

# -- a small, independent reading of the written C++ -----------------------------------

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_TRAIT = re.compile(r"\b(\w+_traits_)\s*<")


_CONSTANT = re.compile(r"\(\d+(?:[<>]=?|==|!=)\d+\)")
_SAME = re.compile(r"ifconstexpr\((!?)\(?std::is_same_v<([\w:]+),([\w:]+)>\)?\)\{")


def _block_end(code: str, open_at: int) -> int:
    depth = 0
    for index in range(open_at, len(code)):
        depth += {"{": 1, "}": -1}.get(code[index], 0)
        if depth == 0:
            return index
    return len(code) - 1


def drop_discarded(code: str) -> str:
    """Blank the branch of ``if constexpr (std::is_same_v<A, B>)`` that the compiler
    discards (the dispatch guards combine kernels that do not exist this way)."""
    while True:
        match = _SAME.search(code)
        if not match:
            return code
        holds = (match.group(2) == match.group(3)) != bool(match.group(1))
        then_end = _block_end(code, match.end() - 1)
        then = code[match.end():then_end]
        rest = code[then_end + 1:]
        other = ""
        if rest.startswith("else{"):
            else_end = _block_end(rest, 4)
            other, rest = rest[5:else_end], rest[else_end + 1:]
        code = code[:match.start()] + "{" + (then if holds else other) + "}" + rest


def trait_instances(text: str) -> Set[str]:
    """Every ``<name>_traits_<...>`` template-id in C++ text, blanks removed and the
    file's own ``using`` aliases expanded (``fmha_mask_0`` -> its mask type); branches
    an ``if constexpr`` discards are left out."""
    code = drop_discarded(re.sub(r"\s+", "", _COMMENT.sub("", text)))
    # Constant comparisons some trees write as template arguments: ``(8 > 0)``.
    code = _CONSTANT.sub(lambda m: "true" if eval(m.group(0)) else "false", code)  # noqa: S307
    aliases = dict(re.findall(r"using(\w+)=([^;]*);", code))
    found = set()
    for match in _TRAIT.finditer(code):
        depth, end = 0, match.end() - 1
        for end in range(match.end() - 1, len(code)):
            depth += {"<": 1, ">": -1}.get(code[end], 0)
            if depth == 0:
                break
        trait = code[match.start():end + 1]
        for _ in range(5):
            expanded = re.sub(r"\b\w+\b", lambda m: aliases.get(m.group(0), m.group(0))
                              if "_traits_" not in aliases.get(m.group(0), "") else m.group(0),
                              trait)
            if expanded == trait:
                break
            trait = expanded
        found.add(trait)
    return found


@pytest.fixture(scope="module")
def sessions(corpus_roots, analysis_sessions):
    """The trees' sessions on the analysis tests' shared cache (see plugins_analysis)."""
    return {name: analysis_sessions(name) for name in corpus_roots}


def _types_by_prefix(rec, union: Set[str]) -> Dict[str, str]:
    """Match sub-types to name prefixes by their kernel counts in the union."""
    counts: Dict[str, int] = defaultdict(int)
    for name in union:
        counts[prefix(name)] += 1
    mapping = {}
    for kernel_type, values in rec.counts.items():
        if kernel_type == "total":
            continue
        same = [p for p, n in counts.items() if n == values["minimal"] and p not in mapping.values()]
        if len(same) == 1:
            mapping[kernel_type] = same[0]
    return mapping


@pytest.mark.corpus
@pytest.mark.parametrize("tree,api", with_analysis_group(CASES))
def test_recommendation_is_true_of_its_commands(sessions, analysis_cache_dir, tree, api):
    session = sessions[tree]
    rec = session.recommend(api)
    root = session.ck_root
    assert rec.runs, rec.notes
    # Each shown command, run in write mode (-o into a temporary folder): it must
    # succeed (item 5), and the kernel files it writes are its selection.
    union: Set[str] = set()
    outputs = []
    for run in rec.runs:
        out = cached_write(root, api, "-f", run.filter)  # (asserts that the run succeeds)
        written = {p.name for p in out.rglob("*.cpp") if not p.name.endswith("_api.cpp")}
        assert len(written) == run.count, run.filter
        union |= written
        outputs.append(out)
    # The JSON contract: counts are the size of the union of the shown commands.
    assert rec.union_count == len(union) == rec.counts["total"]["minimal"]
    assert rec.keep_count == rec.union_count, rec.notes
    # One command is its own union: no driver command beside it (it would select and
    # write the same set); the set's write-mode run is that command's.
    if len(rec.runs) == 1:
        assert not rec.driver_command and rec.write_verified, rec.notes
    else:
        assert rec.driver_verified and rec.write_verified, rec.notes
    assert all(run.written for run in rec.runs), rec.notes

    # the group's independent listing of the whole API (run by its model's test)
    full = set(cached_listing(analysis_cache_dir, fmha_dir(root), api, None).kernels)
    by_prefix = _types_by_prefix(rec, union)
    # Item 1: a token under "Keep" is carried by some kernel of the set, one under
    # "Drop" by none; a partial token only with the values it is said to be kept with.
    # (a sub-type whose name prefix the counts do not tell apart is not checked here:
    # counted, and some must be)
    decided = [d for d in rec.decisions if d.kernel_type in by_prefix]
    assert decided, ("no sub-type matched a name prefix", sorted(by_prefix), rec.counts)
    for decision in decided:
        own_prefix = by_prefix[decision.kernel_type]
        mine = [f for f in union if prefix(f) == own_prefix]
        everywhere = [f for f in full if prefix(f) == own_prefix]
        # Text a drop token shares with a kept token of another segment (``_pagedkv``
        # in the pipeline ``_qr_pagedkv``) or with constant text says nothing.
        others = [t for d in rec.decisions if d.kernel_type == decision.kernel_type
                  and d.segment != decision.segment for t in d.keep]
        for token in (t for t in decision.keep if t):
            assert any(carries(f, token) for f in mine), (decision.segment, token)
        for token in (t for t in decision.drop if t):
            if _checkable(token, others, everywhere):
                assert not any(carries(f, token) for f in mine), (decision.segment, token)
        for partial in (p for p in decision.partial if p["token"]):  # (no text: unseen)
            for name in (f for f in mine if carries(f, partial["token"])):
                for values in partial["kept_with"].values():
                    assert any(carries(name, v) for v in values), (name, partial)
        # A token a follower keeps with no "(only with ...)" is kept with every head
        # dimension, data type and mode it exists with (2.8.3 fwd_splitkv's combine
        # _npad is kept with _fp8 alone: the page must say so).
        if decision.follows:
            qualified = {p["token"] for p in decision.partial}
            for token in (t for t in decision.keep if t and t not in qualified):
                for dimension in range(3):
                    kept_values = {problem(f)[dimension] for f in mine if carries(f, token)}
                    all_values = {problem(f)[dimension] for f in everywhere
                                  if carries(f, token)}
                    assert kept_values == all_values, (decision.segment, token, dimension)
            # and What you lose counts the kernels of a qualified token the set leaves out
            for token in (t for t in qualified if t):
                carrying = [f for f in everywhere if carries(f, token)]
                lost = len(carrying) - sum(1 for f in mine if carries(f, token))
                losses = loss_sentences(decision)
                assert losses.get(token, "").startswith(
                    "%d of its %d kernels" % (lost, len(carrying))), (token, losses)

    # Item 2: no head dimension, data type, mode or arch of the full listing is lost
    # by a sub-type that decides for itself.
    followers = {d.kernel_type for d in rec.decisions if d.follows}
    for kernel_type, own_prefix in by_prefix.items():
        if kernel_type in followers:
            continue
        wanted = {problem(f) for f in full if prefix(f) == own_prefix}
        kept = {problem(f) for f in union if prefix(f) == own_prefix}
        assert wanted == kept, (kernel_type, sorted(wanted - kept)[:5])

    # A feature the API is named after (pagedkv_prefill's `_pagedkv`) is kept with
    # and without: for each word of the API's name, the kernels carry it as a segment
    # as many times in the set as in the whole listing (the pipeline `_qr_pagedkv`
    # carries it once more in every kernel).
    def times(word: str, name: str) -> int:
        stem = name[len(prefix(name)):-len(".cpp")]
        return len(re.findall(r"_%s(?=_|$)" % re.escape(word), stem))

    for word in api.split("_"):
        assert {times(word, f) for f in union} == {times(word, f) for f in full}, word

    # Item 5: the union links: every kernel specialisation the runs' dispatch files
    # instantiate is generated by some run (a single run of a coupled API need not
    # link alone: the driver writes the union).
    used_all: Set[str] = set()
    made_all: Set[str] = set()
    for out in outputs:
        api_files = list(out.rglob("*_api.cpp"))
        assert len(api_files) == 1
        used_all |= trait_instances(api_files[0].read_text())
        for path in out.rglob("*.cpp"):
            if not path.name.endswith("_api.cpp"):
                made_all |= trait_instances(path.read_text())
    assert used_all <= made_all, sorted(used_all - made_all)[:3]
    # Kernels no call reaches (sub-types -f cannot filter in old trees) are reported.
    unreached = sorted(made_all - used_all)[:3]
    assert (made_all <= used_all) == (not rec.links_unreferenced), unreached

    # The rendered text says the same: counts, commands, and the keep/drop tables.
    text = render_recommendation_markdown(rec)
    assert "**%d**" % len(union) in text
    for run in rec.runs:
        assert "-f %s" % shlex.quote(run.filter) in text
    assert ("sphinxext-fmha generate" in text) == (len(rec.runs) > 1)
    checked, passed_over = _check_tables(text, union, full, by_prefix, rec)
    assert checked > 0, ("no keep/drop row was checked", passed_over, text)


def _checkable(token: str, others: List[str], everywhere: List[str]) -> bool:
    """A drop token can be looked for when no kept token of another segment contains
    it and it is not constant text of every name."""
    return not any(token in other for other in others) and \
        not all(carries(f, token) for f in everywhere)


def _check_tables(text: str, union: Set[str], full: Set[str], by_prefix: Dict[str, str],
                  rec) -> Tuple[int, List[str]]:
    """Checks the keep/drop rows against the names: (rows checked against the names,
    table lines passed over: not a 4-column row, or of a sub-type with no prefix)."""
    checked, passed_over = 0, []
    kernel_type = next(iter(by_prefix), "")
    single = len(by_prefix) == 1
    why_of: Dict[str, str] = {}  # segment -> its Why cell ("as for **x**" refers to x's)
    for line in text.splitlines():
        heading = re.match(r"^### `(\w+)`", line)
        if heading:
            kernel_type = heading.group(1)
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or cells[0] in ("Segment", "---"):
            continue
        if len(cells) != 4:
            passed_over.append(line)
            continue
        referred = re.fullmatch(r"as for \*\*(.+)\*\*", cells[3])
        why = why_of.get(referred.group(1), "") if referred else cells[3]
        why_of.setdefault(cells[0], why)
        # a row that drops nothing does not say that kernels are dropped
        if cells[2] == "-":
            assert "are dropped" not in why, line
        own_prefix = by_prefix.get(kernel_type) if (single or kernel_type) else None
        if own_prefix is None:
            passed_over.append(line)
            continue
        checked += 1
        mine = [f for f in union if prefix(f) == own_prefix]
        everywhere = [f for f in full if prefix(f) == own_prefix]
        others = [t for d in rec.decisions if d.kernel_type == kernel_type
                  and d.segment != cells[0] for t in d.keep]
        keep = re.sub(r"\(only with[^)]*\)", "", cells[1])
        for token in re.findall(r"`([^`]+)`", keep):
            assert any(carries(f, token) for f in mine), (line, token)
        # "`_x` (except with mode \_group)": carried only by kernels with those values
        for token, where in re.findall(r"`([^`]+)` \(except with ([^)]*)\)", cells[2]):
            values = re.findall(r"_[0-9A-Za-z]\w*", where.replace("\\_", "_"))
            assert values, (line, token)
            for f in mine:
                if carries(f, token):
                    assert any(carries(f, value) for value in values), (line, token, f)
        dropped = re.sub(r"`[^`]+` \(except with [^)]*\)", "", cells[2])
        for token in re.findall(r"`([^`]+)`", dropped):
            if _checkable(token, others, everywhere):
                assert not any(carries(f, token) for f in mine), (line, token)
    return checked, passed_over
