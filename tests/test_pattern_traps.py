"""Patterns that select more than their token are said, with generate.py's own counts.

``*_pagedkv*`` on pagedkv_prefill also matches the pipeline ``_qr_pagedkv`` of every
kernel; ``*_ps*`` also matches ``_pssk``. Independent oracle: the test runs
``generate.py -l -f PATTERN`` itself for every pattern the field reference names,
counts the listed files, and reads which names carry the token with its own regular
expression (the token followed by ``_`` or the end of the name).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List

import pytest

from sphinxext_fmha.guide import collect_guide
from sphinxext_fmha.render.markdown import guide_markdown

from helpers.analysis_fixtures import with_analysis_group
from helpers.independent import listed_lines

pytest_plugins = ["helpers.plugins_analysis"]

#: APIs of one filtered sub-type: the page's pattern is the whole -f value
CASES = [("flash-attn-2.8.3", "pagedkv_prefill"), ("flash-attn-2.8.3", "fwd_appendkv"),
         ("flash-attn-2.8.3", "fwd")]

_TRAP = re.compile(r"`\*([^`]+)\*` \((\d+) kernels, not (\d+)(?:: exactly `([^`]+)`)?\)")


def listed(root: Path, api: str, tmp: Path, pattern: str) -> List[str]:
    names = [Path(line).name for line in listed_lines(root, "-a", api, "-f", pattern)]
    return [n for n in names if not n.endswith("_api.cpp")]


@pytest.mark.corpus
@pytest.mark.parametrize("tree,api", with_analysis_group(CASES))
def test_pattern_traps_are_what_generate_py_selects(analysis_sessions, tree, api, tmp_path):
    session = analysis_sessions(tree)
    page = guide_markdown(collect_guide(session, api, sections=["fields"]), sections=["fields"])
    traps = _TRAP.findall(page)
    # every trap the page names is read here (a wording the regex misses fails), and
    # each of these APIs has some: a page without any would check nothing
    assert len(traps) == page.count(" kernels, not ") > 0, page
    if api == "pagedkv_prefill":  # the case the page must warn of
        assert ("_pagedkv", "384", "192", "*_pagedkv") in traps, traps
    everything = listed(session.ck_root, api, tmp_path, "*")
    checked = 0
    for token, loose_count, carriers, exact in traps:
        checked += 1
        loose = "*%s*" % token
        assert len(listed(session.ck_root, api, tmp_path, loose)) == int(loose_count) > \
            int(carriers), loose
        if exact:
            # the token as a segment: followed by ``_`` or the end, more often than in
            # every name (the pipeline ``_qr_pagedkv`` carries ``_pagedkv`` once in all)
            def times(name: str, token: str = token) -> int:
                return len(re.findall(re.escape(token) + r"(?=_|\.cpp$)", name))
            least = min(map(times, everything))
            carrying = [n for n in everything if times(n) > least]
            assert len(carrying) == int(carriers), token
            assert sorted(listed(session.ck_root, api, tmp_path, exact)) == sorted(carrying)
    assert checked == len(traps) > 0


@pytest.mark.parametrize("lowercases,backslashes", [(False, False), (True, False),
                                                    (False, True), (True, True)])
def test_a_plain_pattern_matches_as_fnmatch_does_where_it_folds_names(lowercases, backslashes):
    """The shortcut for patterns of text and ``*`` gives what ``fnmatch`` gives on a
    platform that folds case and separators as the model says (Windows: ``ntpath``'s
    ``normcase``), here computed with ``fnmatch.fnmatchcase`` after folding by hand."""
    import fnmatch
    from types import SimpleNamespace

    from sphinxext_fmha.verify.filtercheck import normcase
    from sphinxext_fmha.verify.pattern_traps import _matching

    model = SimpleNamespace(filter=SimpleNamespace(fnmatch_lowercases=lowercases,
                                                   fnmatch_backslashes=backslashes))
    names = ["fmha_FWD_d128_Fp16", "fmha_fwd_d128_fp16_pagedkv", "a/b_qr_pagedkv_x",
             "A\\B_QR_PAGEDKV", "fmha_fwd_d64"]
    kernels = [(str(i), name, ()) for i, name in enumerate(names)]
    seen = [(file, normcase(model)(name)) for file, name, _ in kernels]

    def fold(text: str) -> str:
        text = text.lower() if lowercases else text
        return text.replace("/", "\\") if backslashes else text

    for pattern in ["*_pagedkv*", "*_PAGEDKV", "*fp16", "*d128_*", "*b_qr*", "*/b_qr*"]:
        expected = {file for file, name, _ in kernels
                    if fnmatch.fnmatchcase(fold(name), fold(pattern))}
        assert _matching(model, pattern, kernels, seen) == expected, pattern
