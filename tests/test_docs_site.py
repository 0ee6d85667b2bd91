"""The project's own docs site: it builds under -nW, and the numbers and commands on
its live pages are what independent generate.py runs give."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sphinxext_fmha.corpus import fetch_tree, tree_by_name
from sphinxext_fmha.locate import fmha_dir

from helpers.analysis_fixtures import shared_listing

DOCS = Path(__file__).resolve().parents[1] / "docs"
PINNED = "flash-attn-2.8.3"  # docs/conf.py's tree

pytestmark = [pytest.mark.corpus, pytest.mark.xdist_group("docs-site")]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("docs-text")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-nW", "-q", "-b", "text",
                           str(DOCS), str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def independent(api: str, args, tmp: Path):
    """generate.py's listing, once per session and arguments (helpers.analysis_fixtures)."""
    return shared_listing(fetch_tree(tree_by_name(PINNED)), api, *args)


def flat(path: Path) -> str:
    return re.sub(r"\s+", " ", path.read_text(encoding="utf-8"))


def commands(text: str):
    """generate.py command lines shown on a page, as (api, argv after -a API)."""
    found = []
    text = re.sub(r" \\\n\s*", " ", text)  # long commands are shown with \ continuations
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("python generate.py "):
            argv = shlex.split(line)[2:]
            api = argv[argv.index("-a") + 1]
            rest = [a for a in argv if a not in ("-a", api)]
            cut = rest.index("-l")
            found.append((api, rest[:cut] + rest[cut + 2:]))
    return found


def test_gallery_has_a_page_per_api_with_real_counts(site, tmp_path):
    pages = sorted((site / "gallery" / "api").glob("*.txt"))
    root = fetch_tree(tree_by_name(PINNED))
    apis = sorted(p.stem[len("fmha_"):] for p in (fmha_dir(root) / "codegen" / "ops").glob("fmha_*.py"))
    assert [p.stem for p in pages] == apis
    for page in pages:
        match = re.search(r'"generate\.py -a (\w+)" lists (\d+) kernel files', flat(page))
        assert match and match.group(1) == page.stem, page
        assert int(match.group(2)) == len(independent(page.stem, [], tmp_path)), page


def test_recommended_runs_select_the_minimal_set_shown(site, tmp_path):
    for page in sorted((site / "gallery" / "api").glob("*.txt")):
        text = page.read_text(encoding="utf-8")
        shown = re.search(r"The minimal set has \*\*(\d+)\*\* kernels", flat(page))
        # the minimal set's runs (the example workloads have theirs, after the counts)
        text = re.split(r"^Kernel counts$", text, flags=re.M)[0]
        runs = re.findall(r"Run \d+ selects \*\*(\d+)\*\* kernels", re.sub(r"\s+", " ", text))
        if not shown:
            continue
        union = set()
        run_commands = [c for c in commands(text) if "-f" in c[1]]
        if not runs:  # one run: its selection is the minimal set itself
            assert len(run_commands) == 1, page.stem
            runs = [shown.group(1)]
        assert len(run_commands) == len(runs), page.stem
        for (api, args), count in zip(run_commands, runs):
            selected = independent(api, args, tmp_path)
            assert len(selected) == int(count), (page.stem, args)
            union |= selected
        assert len(union) == int(shown.group(1)), page.stem


def test_filter_check_examples_match_generate_py(site, tmp_path):
    text = (site / "examples.txt").read_text(encoding="utf-8")
    counts = re.findall(r"generate\.py selects \*\*(\d+)\*\* of (\d+) kernels", re.sub(r"\s+", " ", text))
    shown = commands(text)
    assert counts and len(counts) == len(shown)
    for (api, args), (selected, total) in zip(shown, counts):
        assert len(independent(api, args, tmp_path)) == int(selected), args
        assert len(independent(api, [], tmp_path)) == int(total), api


def test_moving_to_a_newer_ck_counts_are_generate_pys(site, tmp_path):
    """Each comparison of the gallery's bump page: the old tree's count and this tree's
    are what each tree's generate.py lists; a migrated run said to keep the same set
    lists the old count here."""
    text = flat(site / "gallery" / "bump.txt")
    found = re.findall(r'"-f \'([^\']+)\'" for "(\w+)": generate\.py of the old tree '
                       r'\(([\w.-]+)\) lists \*\*(\d+)\*\* kernels, the new tree\'s \(this CK '
                       r'tree\) \*\*(\d+)\*\*', re.sub(r"(?<=\w)- (?=\w)", "-", text))
    assert [(f[1], f[2]) for f in found] == [("bwd", "flash-attn-2.8.1"),
                                             ("fwd_splitkv", "flash-attn-2.8.1"),
                                             ("fwd_splitkv", "flash-attn-2.7.4.post1")]
    for pattern, api, tree, old, new in found:
        older = shared_listing(fetch_tree(tree_by_name(tree)), api, "-f", pattern)
        assert len(older) == int(old), (api, tree)
        assert len(independent(api, ["-f", pattern], tmp_path)) == int(new), (api, tree)
    assert (found[0][3], found[0][4]) == ("7776", "0")  # the headline, as measured
