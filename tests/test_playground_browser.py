"""The filter playground in a real browser, against generate.py itself.

For the APIs of two corpus trees whose ``-f`` rules differ (flash-attn 2.8.1: the
``@`` parts filter each sub-type on its own, an empty part is not applied;
flash-attn 2.8.3: bwd keeps a kernel only when its whole trait matches, an empty
part matches nothing, a missing one becomes ``*``), a page with the playground is
built and opened in Chromium (headless, through Playwright); each filter below is
typed into the form and the count the page shows (``data-fmha-count``) and the files
it selects must equal what an independent ``generate.py -l FILE -f PATTERN`` lists.

Chromium comes from Debian (``.ci/install-browser``; ``FMHA_CHROMIUM`` names another),
never from ``playwright install``; without it (or without the playwright package, or
with ``FMHA_NO_BROWSER=1``) the test is skipped with the reason.
``FMHA_PLAYGROUND_TREES`` (comma-separated corpus names) overrides the trees.

The last tree is checked on every API; an earlier one only on the APIs whose filtering
code (the lines of generate.py and of the API's codegen module that call ``fnmatch`` or
``.split(``, read here) differs from the last tree's: 2.8.1's bwd. Its other APIs filter
with the very lines 2.8.3's do (the matcher itself is checked against ``fnmatch`` on
thousands of patterns in ``test_the_matcher_answers_as_fnmatch``).
"""

from __future__ import annotations

import os
import random
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Sequence

import pytest

from sphinxext_fmha.analysis.analyze import Options
from sphinxext_fmha.corpus import load_corpus

from helpers.browser import CHROMIUM_ARGS, require_browser
from helpers.independent import independent_listings
from helpers.project import build, write_project

pytest_plugins = ["helpers.plugins_analysis"]

TREES = [t for t in os.environ.get("FMHA_PLAYGROUND_TREES", "").split(",") if t] or [
    "flash-attn-2.8.1", "flash-attn-2.8.3"]
MIN_FILTERS = 50

pytestmark = [pytest.mark.corpus, pytest.mark.usefixtures("reproducible_build")]


def _browser_or_skip():
    """Playwright's sync API and the system Chromium (``tests/helpers/browser.py``'s
    conventions: ``FMHA_CHROMIUM``, ``FMHA_NO_BROWSER=1``); a clear skip without them."""
    chromium = require_browser()
    from playwright.sync_api import sync_playwright

    return sync_playwright, chromium


def _in_own_thread(function):
    """Run ``function()`` in a fresh thread: Playwright's sync API refuses a thread
    where another test left an asyncio loop running."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(function).result()


# ------------------------------------------------------------------ the filters


def _tokens(model) -> List[str]:
    """Distinct non-empty tokens of the non-literal segments, in a stable order."""
    seen: Dict[str, None] = {}
    for kernel_type in model.kernel_types:
        for segment in kernel_type.segments:
            if segment.literal:
                continue
            for token in segment.tokens:
                if token.strip("_"):
                    seen.setdefault(token, None)
    return list(seen)


def _classed(token: str, rng: random.Random) -> str:
    """The token with one character written as a character class."""
    body = token.strip("_")
    index = rng.randrange(len(body))
    char = body[index]
    other = rng.choice([c for c in "0123456789abcdfgkmnpqrstvwxyz" if c != char])
    kind = rng.randrange(4)
    if kind == 0:
        cls = "[%s%s]" % (other, char)
    elif kind == 1:
        cls = "[!%s]" % other
    elif kind == 2:
        cls = "[0-9]" if char.isdigit() else "[a-z]"
    else:
        cls = "[!%s]" % char  # excludes the token's own character
    return "*" + body[:index] + cls + body[index + 1:] + "*"


def filters_for(model, seed: str) -> List[str]:
    """At least MIN_FILTERS filters for one API: single tokens, pairs, character classes,
    '?', prefixes, '@' parts (missing, empty and extra ones), ',' and patterns that
    match nothing.  Deterministic for a seed."""
    rng = random.Random(seed)
    tokens = _tokens(model)
    pick = lambda count: [rng.choice(tokens) for _ in range(count)]  # noqa: E731
    out = ["*", "**", "*_*", "fmha_*", "[", "*[*", "[]]*", "*[]-a]*", "[!f]*", "*[z-a]*",
           "*[--_]*", "*\\*", "?*", "*_nosuchtoken_*", "FMHA_*", "*,", ",*", ","]
    out += ["*%s*" % t for t in pick(10)]
    out += ["*%s*%s*" % (a, b) for a, b in zip(pick(6), pick(6))]
    out += [_classed(t, rng) for t in pick(8)]
    for token in pick(3):
        body = token.strip("_")
        index = rng.randrange(len(body))
        out.append("*" + body[:index] + "?" + body[index + 1:] + "*")
    for kernel_type in model.kernel_types:
        head = kernel_type.example[: kernel_type.example.find("_d") + 1] or "fmha_"
        out.append(head + "*")
    if model.filter.api_split:
        split = model.filter.api_split
        width = max(p.position for p in model.filter.parts) + 1
        for _ in range(14):
            parts = []
            for _position in range(rng.randint(1, width + 1)):
                token = rng.choice(tokens)
                parts.append(rng.choice(["*", "", "*%s*" % token, _classed(token, rng)]))
            out.append(split.join(parts))
        out += [split * (width - 1), "*" + split, split + "*", "*" + split * width + "*"]
    else:
        out += ["*@*", "*%s*@*" % rng.choice(tokens)]
    out.append("*%s*,*%s*" % (rng.choice(tokens), rng.choice(tokens)))
    unique = dict.fromkeys(f for f in out if f)
    while len(unique) < MIN_FILTERS + 4:  # more of the same kinds, up to the count
        a, b = pick(2)
        unique.setdefault(rng.choice(["*%s*" % a, "*%s*%s*" % (a, b), _classed(a, rng)]), None)
    return list(unique)


# ------------------------------------------------------------------ the test


def _apis(root: Path) -> List[str]:
    from sphinxext_fmha.analysis.analyze import Tree

    return [info.name for info in Tree.load(root).apis if info.in_generate]


def _filtering_lines(root: Path, api: str) -> List[str]:
    """The lines of generate.py and of the API's codegen module that filter (call
    ``fnmatch`` or split a string), blanks stripped: how the tree applies ``-f``."""
    fmha = root / "example" / "ck_tile" / "01_fmha"
    module = fmha / "codegen" / "ops" / ("fmha_%s.py" % api)
    return [line.strip() for path in (fmha / "generate.py", module) if path.is_file()
            for line in path.read_text(encoding="utf-8").splitlines()
            if "fnmatch" in line or ".split(" in line]


def _apis_to_check(tree_name: str, root: Path, corpus_root) -> List[str]:
    """Every API of the last tree; of an earlier tree, those that filter otherwise."""
    apis = _apis(root)
    if tree_name == TREES[-1]:
        return apis
    last = corpus_root(TREES[-1])
    return [api for api in apis if _filtering_lines(root, api) != _filtering_lines(last, api)]


def _check_page(page, url: str, filters: Sequence[str], expected: Sequence, api: str) -> List[str]:
    """Open the page with the first filter in its URL, then type every filter; the
    mismatches, described."""
    problems = []
    first = filters[0]
    page.goto(url + "?fmha-filter=" + _quote(first))
    page.wait_for_selector(".fmha-playground[data-fmha-ready]")
    box = page.locator(".fmha-pg-input")
    assert box.input_value() == first
    result = page.locator(".fmha-pg-result")
    for pattern, files in zip(filters, expected):
        if pattern != first:
            box.fill(pattern)
            box.press("Enter")
        page.wait_for_function(
            "f => document.querySelector('.fmha-pg-result').getAttribute('data-fmha-filter') === f",
            arg=pattern)
        shown = int(result.get_attribute("data-fmha-count"))
        selected = set(page.evaluate(
            "f => fmhaPlayground.filesFor(document.querySelector('.fmha-playground'), f)", pattern))
        if files is None:
            if not page.locator(".fmha-pg-error").count():
                problems.append("%s -f %r: generate.py fails, the page shows %d" % (api, pattern, shown))
            continue
        if shown != len(files) or selected != files:
            problems.append("%s -f %r: page %d, generate.py %d (%d only on the page, %d only in "
                            "generate.py)" % (api, pattern, shown, len(files), len(selected - files),
                                              len(files - selected)))
        command = page.locator(".fmha-pg-command code").inner_text()
        if not command.startswith("python generate.py -a %s" % api):
            problems.append("%s -f %r: command %r" % (api, pattern, command))
    return problems


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


# a group each, so --dist loadgroup starts these long tests early (conftest.py), not last
@pytest.mark.parametrize("tree_name", [pytest.param(name, marks=pytest.mark.xdist_group(
    "playground-%s" % name)) for name in TREES])
def test_playground_counts_equal_generate_py(tree_name, corpus_root, analysis_sessions,
                                            analysis_cache_dir, tmp_path):
    sync_playwright, chromium = _browser_or_skip()
    root = corpus_root(tree_name)
    assert tree_name in {t.name for t in load_corpus()}
    apis = _apis_to_check(tree_name, root, corpus_root)
    assert apis
    # the analysis tests' session and cache: their probes and models, not a second set
    session = analysis_sessions(tree_name)
    filters = {api: filters_for(session.model(api, Options()), "%s/%s" % (tree_name, api))
               for api in apis}
    started = time.monotonic()
    # The oracle: generate.py itself, one plain interpreter per API, two at a time.
    for api in apis:
        (tmp_path / api).mkdir()
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {api: pool.submit(independent_listings, root, api, tmp_path / api, filters[api])
                   for api in apis}
        expected = {api: futures[api].result() for api in apis}

    oracle_seconds = time.monotonic() - started
    pages = {"%s.rst" % api: "%s\n%s\n\n.. fmha-filter-playground:: %s\n" % (api, "=" * len(api), api)
             for api in apis}
    src = write_project(tmp_path / "src", pages, ck_root=root,
                        conf="fmha_cache_dir = %r" % str(analysis_cache_dir / "runs"))
    app, _status, warnings = build(src, "html")
    assert warnings == ""
    problems: List[str] = []
    checked = 0
    started = time.monotonic()
    errors: List[str] = []

    def run_browser() -> None:
        nonlocal checked
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                for api in apis:
                    url = (Path(app.outdir) / ("%s.html" % api)).as_uri()
                    problems.extend(_check_page(page, url, filters[api], expected[api], api))
                    checked += len(filters[api])
            finally:
                browser.close()

    _in_own_thread(run_browser)
    assert errors == []
    assert not problems, "\n".join(problems[:40])
    assert checked >= MIN_FILTERS * len(apis)
    print("%s: %d filters over %d APIs agree with generate.py (generate.py runs %.0f s, "
          "browser %.0f s)" % (tree_name, checked, len(apis), oracle_seconds,
                               time.monotonic() - started))


def test_filters_cover_what_the_issue_asks():
    """The generator's own contract, on a tiny fake model: classes, '@', no-match."""
    from sphinxext_fmha.model import ApiModel, FilterPart, FilterSpec, KernelType, Segment

    model = ApiModel(api="x", source="", filter=FilterSpec(
        cli_split=",", api_split="@", parts=[FilterPart(0, ["A"]), FilterPart(1, ["B"], "*")]),
        kernel_types=[KernelType("A", True, 0, 1, example="fmha_x_d64_fp16.cpp", segments=[
            Segment("hdim", tokens={"_d64": "", "_d128": ""}),
            Segment("dtype", tokens={"_fp16": "", "_bf16": ""})])])
    filters = filters_for(model, "seed")
    assert len(filters) >= MIN_FILTERS
    assert any(re.search(r"\[!?[^\]]+\]", f) for f in filters)
    assert any("@" in f for f in filters) and "@" in filters
    assert "*_nosuchtoken_*" in filters


def test_trait_members_that_are_not_written(tmp_path):
    """A trait tests the name of a member it does not write (aiter's disabled
    convert_dq kernels): that name must match, and is never listed. Hand-made data:
    traits (a_1, b_1) and (a_2, b_9), b_9 written by no trait."""
    _browser_or_skip()
    from sphinxext_fmha.model import ApiModel, FilterPart, FilterSpec, KernelType, Segment
    from sphinxext_fmha.render.playground_data import playground_data

    def kernel_type(name, tokens):
        return KernelType(name.upper(), True, 0, len(tokens), segments=[
            Segment("literal", tokens={name: ""}, literal=True),
            Segment("index", tokens={t: "" for t in tokens})])

    model = ApiModel(api="x", source="", kernel_types=[kernel_type("a", ["_1", "_2"]),
                                                       kernel_type("b", ["_1"])],
                     filter=FilterSpec(cli_split=",", api_split="@", drops="trait", parts=[
                         FilterPart(0, ["A"], None, ""), FilterPart(1, ["B"], "*", "")],
                         when_empty={"A": "*", "B": "*"}))
    parsed = {"a_1.cpp": ("A", ["a", "_1"]), "a_2.cpp": ("A", ["a", "_2"]), "b_1.cpp": ("B", ["b", "_1"])}
    traits = [[("a_1.cpp", "a_1"), ("b_1.cpp", "b_1")], [("a_2.cpp", "a_2"), (None, "b_9")]]
    data = playground_data(model, parsed, traits, ("python generate.py -a x", "-l kernels.txt"))
    expected = {"*": ["a_1.cpp", "a_2.cpp", "b_1.cpp"], "*@*_1": ["a_1.cpp", "b_1.cpp"],
                "*@*_9": ["a_2.cpp"], "*_2": ["a_2.cpp"], "*@": [], ",": ["a_1.cpp", "a_2.cpp", "b_1.cpp"],
                "a_[!1]@b_[0-8]": []}
    assert _selected_in_browser(data, list(expected)) == expected


def test_kernels_that_follow_another_one(tmp_path):
    """A twin generated after its kernel passed ``-f``, its own name never tested (newer
    batch_prefill's ``_64bit`` kernels): the playground keeps it exactly with that
    kernel. Hand-made data: a_1w follows a_1, a_2w follows a_2."""
    _browser_or_skip()
    from sphinxext_fmha.model import ApiModel, FilterPart, FilterSpec, KernelType, Segment
    from sphinxext_fmha.render.playground_data import playground_data

    model = ApiModel(api="x", source="", kernel_types=[KernelType("A", True, 0, 4, segments=[
        Segment("literal", tokens={"a": ""}, literal=True),
        Segment("index", tokens={"_1": "", "_2": ""}), Segment("wide", tokens={"": "", "w": ""})])],
        filter=FilterSpec(cli_split=",", parts=[FilterPart(0, ["A"])]))
    parsed = {"a_1.cpp": ("A", ["a", "_1", ""]), "a_1w.cpp": ("A", ["a", "_1", "w"]),
              "a_2.cpp": ("A", ["a", "_2", ""]), "a_2w.cpp": ("A", ["a", "_2", "w"])}
    data = playground_data(model, parsed, [], ("python generate.py -a x", "-l kernels.txt"),
                           {"a_1w.cpp": "a_1.cpp", "a_2w.cpp": "a_2.cpp"})
    expected = {"*": ["a_1.cpp", "a_1w.cpp", "a_2.cpp", "a_2w.cpp"], "*w": [],
                "*_1": ["a_1.cpp", "a_1w.cpp"], "a_2*": ["a_2.cpp", "a_2w.cpp"]}
    assert _selected_in_browser(data, list(expected)) == expected


def _selected_in_browser(data, filters: List[str]) -> Dict[str, List[str]]:
    """{filter: the files the playground's script selects} for playground ``data``."""
    from sphinxext_fmha.render.playground_data import to_script_json

    got = _in_blank_page("""([data, filters]) => {
        const model = fmhaPlayground.load(JSON.parse(data));
        return filters.map(f => fmhaPlayground.selectedFiles(model, fmhaPlayground.select(model, f)));
    }""", [to_script_json(data), filters])
    return dict(zip(filters, got))


def _in_blank_page(function: str, arg):
    """``function(arg)`` evaluated in an empty page that loaded the playground's script."""
    sync_playwright, chromium = _browser_or_skip()
    script = Path(__file__).resolve().parents[1] / "sphinxext_fmha" / "static" / "fmha-playground.js"

    def run_browser():
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.set_content("<p>empty</p>")
                page.add_script_tag(path=str(script))
                return page.evaluate(function, arg)
            finally:
                browser.close()

    return _in_own_thread(run_browser)


# ------------------------------------------------------------------ the matcher

#: What the generated patterns and names are made of: every character fnmatch reads
#: specially, a few plain ones, and characters beyond the BMP and the alphabet's end.
PATTERN_CHARS = "*?[]!-^\\ab_1Z\u00e9\U0001f600"
NAME_CHARS = "ab_1Z-!^]\\\u00e9\U0001f600"


def _pattern(rng: random.Random) -> str:
    return "".join(rng.choice(PATTERN_CHARS) for _ in range(rng.randint(0, 10)))


def _pattern_of(name: str, rng: random.Random) -> str:
    """``name`` with some of its characters as '?', '*' or a class that holds them or
    not: patterns that match some names."""
    out = []
    for char in name:
        kind = rng.randrange(7)
        if kind == 0:
            out.append("?")
        elif kind == 1:
            out.append("*")
        elif kind == 2:
            out.append("[%s%s]" % (rng.choice("!^"), rng.choice(NAME_CHARS)))
        elif kind == 3:
            out.append("[%s-%s]" % tuple(sorted((char, rng.choice(NAME_CHARS)))))
        else:
            out.append("[%s]" % char if char in "*?[" else char)
    return "".join(out)


def test_the_matcher_answers_as_fnmatch(tmp_path):
    """The playground's glob matcher against Python's ``fnmatch.fnmatchcase`` (what the
    tree's generate.py runs) on thousands of generated patterns and names: classes,
    negations, ranges (empty and reversed), escapes, '?', stars, code points beyond
    the BMP. A pattern Python refuses must make the matcher throw."""
    import fnmatch

    _browser_or_skip()
    rng = random.Random(41)
    names = list(dict.fromkeys("".join(rng.choice(NAME_CHARS) for _ in range(rng.randint(0, 8)))
                               for _ in range(60)))
    patterns = list(dict.fromkeys([_pattern(rng) for _ in range(2000)]
                                  + [_pattern_of(rng.choice(names), rng) for _ in range(2000)]))
    expected = []
    for pattern in patterns:
        try:
            expected.append([fnmatch.fnmatchcase(name, pattern) for name in names])
        except Exception:  # noqa: BLE001 - re.error and the like: generate.py stops
            expected.append("error")
    got = _in_blank_page("""([patterns, names]) => patterns.map(p => {
        let match;
        try { match = fmhaPlayground.fnmatchMatcher(p); } catch (e) { return "error"; }
        return names.map(n => match(n));
    })""", [patterns, names])
    wrong = [(p, e, g) for p, e, g in zip(patterns, expected, got) if e != g]
    assert not wrong, wrong[:10]
    assert sum(any(row) for row in expected if row != "error") > 1000  # patterns that match


def _long_names_tree(tmp_path: Path) -> Path:
    """The synthetic tree with 20 more '_x' parts in every kernel name: names with 30
    underscores, the kind of names a backtracking matcher drowns in."""
    from helpers.synthetic import make_tree

    root = make_tree(tmp_path, "base")
    ops = root / "example" / "ck_tile" / "01_fmha" / "codegen" / "ops" / "fmha_toy.py"
    text = ops.read_text(encoding="utf-8")
    assert text.count('f"fmha_toy_d{') == 1
    ops.write_text(text.replace('f"fmha_toy_d{', 'f"fmha_toy' + "_x" * 20 + '_d{'), encoding="utf-8")
    return root


@pytest.mark.parametrize("parts", [18, 30])
def test_an_adversarial_link_renders_at_once(tmp_path, parts):
    """``?fmha-filter=*_*_..._Z``: many stars, and an end no name has. A backtracking
    matcher takes minutes on such a link (55-125 s measured); Python's fnmatch does
    not, nor does the page. A filter of 100,000 characters gets a short error."""
    sync_playwright, chromium = _browser_or_skip()
    root = _long_names_tree(tmp_path)
    src = write_project(tmp_path / "src", {"index.rst": "Index\n=====\n\n"
                                           ".. fmha-filter-playground:: toy\n"}, ck_root=root,
                        conf="fmha_cache_dir = %r" % str(tmp_path / "cache"))
    app, _status, warnings = build(src, "html")
    assert warnings == ""
    url = (Path(app.outdir) / "index.html").as_uri()
    adversarial = "*_" * parts + "Z"
    huge = "*" + "a" * 100000

    def run_browser():
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.set_default_timeout(60000)  # the old matcher: a minute or two
                page.goto(url + "?fmha-filter=" + _quote(adversarial))
                page.wait_for_selector(".fmha-playground[data-fmha-ready]")
                shown = page.locator(".fmha-pg-result").get_attribute("data-fmha-count")
                seconds = page.evaluate("""f => {
                    const root = document.querySelector('.fmha-playground');
                    const start = performance.now();
                    fmhaPlayground.select(root.fmhaModel, f);
                    return (performance.now() - start) / 1000;
                }""", adversarial)
                page.goto(url + "?fmha-filter=" + _quote(huge))
                page.wait_for_selector(".fmha-playground[data-fmha-ready]")
                error = page.locator(".fmha-pg-error").inner_text()
                return shown, seconds, error
            finally:
                browser.close()

    shown, seconds, error = _in_own_thread(run_browser)
    assert shown == "0"
    assert seconds < 1, seconds
    assert error == "This filter is 100001 characters long; the playground takes up to 10000."
