"""The renderers: the guide's document model, docutils nodes, Markdown, diagrams,
option/section parsing and failure classification.

Most tests use small hand-made data; the guide tests use the real flash-attn 2.8.3
tree (fwd_appendkv and bwd; cached after the first run).
"""

from __future__ import annotations

import re

import pytest
from docutils import nodes

from sphinxext_fmha.analysis.analyze import AnalysisError, Options, UnknownApiError
from sphinxext_fmha.analysis.observe import ProbeError
from sphinxext_fmha.corpus import tree_by_name
from sphinxext_fmha.guide import collect_guide
from sphinxext_fmha.guide_data import GuideData, build_date, parse_sections, problem_of
from sphinxext_fmha.locate import CKRootNotFound
from sphinxext_fmha.model import (
    Decision,
    FilterCheck,
    FilterRun,
    Recommendation,
    SegmentBreakdown,
    TokenCount,
)
from sphinxext_fmha.options import OptionError, parse_options
from sphinxext_fmha.process.runner import GenerateError
from sphinxext_fmha.render.diagram import diagram_html, diagram_text
from sphinxext_fmha.render.guide_blocks import (
    filter_check_blocks,
    guide_sections,
    header_inlines,
    recommendation_sections,
)
from sphinxext_fmha.render.ir import (
    Admonition,
    BulletList,
    Code,
    CodeBlock,
    Diagram,
    DiagramPart,
    Dropdown,
    Emph,
    Para,
    Strong,
    SubHeading,
    Table,
    text_of,
)
from sphinxext_fmha.render.markdown import (
    blocks_markdown,
    guide_markdown,
    render_recommendation_markdown,
)
from sphinxext_fmha.render.nodes import blocks_to_nodes, fmha_diagram, sections_to_nodes

from helpers.analysis_fixtures import shared_listing
from helpers.outline import carrying

TREE = "flash-attn-2.8.3"
FWD_APPENDKV_KERNELS = tree_by_name(TREE).apis["fwd_appendkv"]  # measured (ck-corpus.toml)



@pytest.fixture(autouse=True)
def _reproducible(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")


@pytest.fixture(scope="module")
def session(corpus_root):
    from sphinxext_fmha.session import Session

    return Session(corpus_root(TREE))







# --------------------------------------------------------------------------- diagram


def _diagram(*tokens, suffix=".cpp"):
    parts = [DiagramPart(token=t, label="seg%d" % i, number=i + 1, literal=i == 0)
             for i, t in enumerate(tokens)]
    return Diagram(name="".join(tokens) + suffix, parts=parts, suffix=suffix,
                   suffix_label="extension", kernel_type="K")


def test_diagram_text_ruler_marks_every_segment():
    text = diagram_text(_diagram("fmha", "_a", "_bb", "", "_ccc", suffix="_gfx9.cpp"))
    assert text.splitlines() == [
        "fmha_a_bb_ccc_gfx9.cpp",
        "====--===----.........",
        "1   2 3  5   s",
    ]


def test_diagram_html_says_which_segments_are_constant():
    parts = [DiagramPart("fmha", "literal", 1, literal=True), DiagramPart("_r1x4x1", "tile r0", 2,
                                                                           constant=True)]
    html = diagram_html(Diagram(name="fmha_r1x4x1.cpp", parts=parts, suffix=".cpp"))
    assert 'title="2: tile r0 (constant in this tree)"' in html
    assert 'title="1: literal"' in html


def test_diagram_text_labels_never_overlap():
    tokens = ["f"] + ["_%d" % i for i in range(11)]  # 2-char tokens, 2-digit labels
    text = diagram_text(_diagram(*tokens, suffix=""))
    lines = text.splitlines()
    assert lines[0] == "".join(tokens)
    assert len(lines[1]) == len(lines[0])
    numbers = re.findall(r"\d+", " ".join(lines[2:]))
    assert sorted(map(int, numbers)) == list(range(1, 13))
    assert len(lines) > 3  # some labels moved to a second line
    for line in lines[2:]:
        for match in re.finditer(r"\d+", line):  # each label starts where its segment starts
            start = match.start()
            assert lines[1][start] in "=-" and (start == 0 or lines[1][start - 1] != lines[1][start])


def test_diagram_html_is_escaped_and_labelled():
    html = diagram_html(_diagram("fmha", "_<x>", suffix=".cpp"))
    assert "_&lt;x&gt;" in html and "<x>" not in html
    assert html.count('class="fmha-seg') == 3
    assert 'class="fmha-seg fmha-lit"' in html and 'class="fmha-seg fmha-sfx"' in html
    assert html.startswith('<div class="fmha-name"') and html.endswith("</div>")


# --------------------------------------------------------------------------- options


def test_parse_options():
    assert parse_options() == Options()
    options = parse_options(targets=["gfx90a", "gfx942"], mask="generic", receipt="2",
                            optdim="64, 128")
    assert options == Options(targets="gfx90a,gfx942", mask="generic", receipt=2,
                              optdim="64,128")
    assert parse_options(receipt=0).receipt == 0
    for kwargs, message in [
        ({"receipt": "two"}, "receipt: 'two' is not an integer"),
        ({"optdim": "64;128"}, "optdim"),
        ({"targets": "gfx 90a"}, "targets"),
        ({"mask": "a b"}, "mask"),
    ]:
        with pytest.raises(OptionError, match=re.escape(message)):
            parse_options(**kwargs)


def test_parse_options_against_a_tree(session):
    tree = session.tree
    assert parse_options(tree, mask="generic").mask == "generic"
    with pytest.raises(OptionError, match="not one of simplified, generic"):
        parse_options(tree, mask="bogus")
    with pytest.raises(OptionError, match="has no option --targets"):
        parse_options(tree, targets="gfx942")


GUIDE_SECTIONS = ["types", "filename", "filter", "fields", "minimal", "losses", "commands",
                  "counts", "examples", "tiles", "rules", "dispatch", "gaps"]


def test_parse_sections():
    names = GUIDE_SECTIONS
    assert parse_sections(None) == names
    assert parse_sections("1, 2,fields") == ["types", "filename", "fields"]
    assert parse_sections("recommended losses 7 8") == ["minimal", "losses", "commands", "counts"]
    assert parse_sections("3,3,filter") == ["filter"]
    assert parse_sections("2, 5-8, 1") == ["filename", "minimal", "losses", "commands",
                                           "counts", "types"]
    assert parse_sections("all") == names
    assert parse_sections(["counts", "1"]) == ["counts", "types"]
    assert parse_sections("13") == ["examples"]  # the example workloads keep 1-12
    for bad in ("0", "14", "nope", " , ", "8-5", "1-14"):
        with pytest.raises(OptionError):
            parse_sections(bad)


def test_build_date(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    assert build_date() == "1970-01-01"
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", build_date())


def test_problem_of():
    cases = [
        (CKRootNotFound("no tree here", ["/x"]), "ck-root"),
        (UnknownApiError("nope", ["fwd"]), "api"),
        (OptionError("mask: bad"), "option"),
        # the kind is data: a message that mentions an option does not make it an option error
        (AnalysisError("this CK tree's generate.py has no --targets option; remove it"),
         "analysis"),
        (AnalysisError("something else"), "analysis"),
        (GenerateError("python generate.py -a fwd failed", command="python generate.py -a fwd",
                       stderr_tail="Traceback\nValueError: boom"), "generate"),
        (ProbeError("probe failed", "python generate.py -a fwd", "KeyError: x"), "generate"),
        (ValueError("unexpected"), "analysis"),
    ]
    for exc, kind in cases:
        problem = problem_of(exc)
        assert problem.kind == kind, exc
    details = problem_of(cases[5][0]).details()
    assert "ValueError: boom" in details and "failed" in details
    details = problem_of(cases[6][0]).details()
    assert "command: python generate.py -a fwd" in details and "KeyError: x" in details


# --------------------------------------------------------------------------- markdown


def test_markdown_blocks_escape_tables_and_code():
    table = Table(header=["A|B", "C"], rows=[[[Code("x|y")], ["a*b_c"]], [[Code("`q`")], []]],
                  title=["T ", Strong("s")])
    chunks = blocks_markdown([table, CodeBlock("```\ninner\n```", "bash"),
                              Dropdown(["Fold ", Code("x")], [Para(["inside"])]),
                              Admonition("caution", [Para(["careful"]), Para(["twice"])]),
                              SubHeading(["Sub"]), BulletList([["one"], [Emph("two")]])])
    assert chunks[0].splitlines() == [
        "**T s**",
        "",
        "| A\\|B | C |",
        "| --- | --- |",
        "| `x\\|y` | a\\*b\\_c |",
        "| `` `q` `` |  |",
    ]
    assert chunks[1].startswith("````bash\n```\ninner\n```\n````")
    assert chunks[2] == "<details>\n<summary>Fold <code>x</code></summary>\n\ninside\n\n</details>"
    assert chunks[3] == "> [!CAUTION]\n> careful\n>\n> twice"
    assert chunks[4] == "### Sub"
    assert chunks[5] == "- one\n- *two*"


def _recommendation() -> Recommendation:
    return Recommendation(
        api="toy",
        decisions=[
            Decision(kernel_type="ToyKernel", segment="bias", keep=["_nbias"],
                     drop=["_bias", "_alibi"], category="optional feature",
                     loss_parts={"_bias": {"follows": "ToyMain", "kernels": 3}}),
            Decision(kernel_type="ToyKernel", segment="hdim", keep=["_d64", "_d128"],
                     category="problem"),
        ],
        runs=[FilterRun("*_nbias_*", "python generate.py -a toy -f '*_nbias_*' -l kernels.txt",
                        40, True),
              FilterRun("*_d256_*", "python generate.py -a toy -f '*_d256_*' -l kernels.txt",
                        8, True)],
        keep_count=44, union_count=44, verified=True,
        merge_command="sort -u kernels_1.txt kernels_2.txt > kernels.txt",
        merge_caution="each run rewrites the API dispatch file",
        driver_command="sphinxext-fmha generate --ck-root . --api toy -f '*_nbias_*' -o generated",
        driver_verified=True,
        counts={"ToyKernel": {"full": 120, "minimal": 44}, "total": {"full": 120, "minimal": 44}},
    )


def test_render_recommendation_markdown():
    text = render_recommendation_markdown(_recommendation())
    assert text.startswith("# Recommended minimal set: `toy`\n")
    for title in ("## Recommended minimal set", "## What you lose", "## Filter commands",
                  "## Kernel counts"):
        assert title in text
    assert "- `_bias` (bias): 3 kernels; none is launched with a kept ToyMain kernel, so " \
        "nothing calls them" in text
    assert "- `_alibi` (bias)" in text
    assert "```bash\npython generate.py -a toy -f '*_nbias_*' -l kernels.txt\n```" in text
    assert "sort -u kernels_1.txt kernels_2.txt > kernels.txt" in text
    assert "> [!CAUTION]\n> each run rewrites the API dispatch file" in text
    assert "| `ToyKernel` | 120 | 44 | 63.3 % |" in text
    assert "| **Total** | **120** | **44** | **63.3 %** |" in text


def test_recommendation_sections_single_run_has_no_merge_and_no_driver():
    rec = _recommendation()
    rec.runs = rec.runs[:1]
    rec.runs[0].written = True
    rec.merge_command = rec.driver_command = ""
    rec.write_verified = True
    blocks = recommendation_sections(rec)[2].blocks
    assert not any(isinstance(b, Admonition) for b in blocks)
    assert [b.text for b in blocks if isinstance(b, CodeBlock)] == [rec.runs[0].command]
    # whether the set links is said all the same, of the one command
    assert "The command also succeeds in write mode (-o). The set links" in \
        render_recommendation_markdown(rec)


def test_receipt_rows_say_what_the_listed_kernels_make_of_the_rule():
    """A rule no listed kernel meets keeps none of them; one every listed kernel meets
    drops none; a rule with neither note says only what it keeps."""
    from types import SimpleNamespace

    from sphinxext_fmha.model import Receipt
    from sphinxext_fmha.render.sections.rules import rules_section

    where = "codegen/ops/fmha_toy.py:%d"
    receipts = [
        Receipt(value="4", label="PyTorch", conditions=["dtype in ['fp16, bf16']"],
                keeps=[["dtype in ['fp16, bf16']", ""]], function="f",
                where=where % 1, unmet=[["dtype in ['fp16, bf16']", "F_dtype", "bf16, fp16"]]),
        Receipt(value="600", label="aiter", conditions=["dtype in ['fp16', 'bf16']"],
                keeps=[["dtype in ['fp16', 'bf16']", ""]], function="f",
                where=where % 2, met=[["dtype in ['fp16', 'bf16']", "F_dtype", "bf16, fp16"]]),
        Receipt(value="2", label="flash", conditions=["dpad == dvpad"],
                keeps=[["dpad == dvpad", ""]], function="f",
                where=where % 3)]
    data = SimpleNamespace(model=SimpleNamespace(skip_conditions=[], receipts=receipts),
                           mask_modes=None)
    (table,) = [b for block in rules_section(data)  # type: ignore[arg-type]
                for b in ([block] if isinstance(block, Table) else
                          getattr(block, "blocks", [])) if isinstance(b, Table)]
    keeps = {text_of(row[0]): text_of(row[2]) for row in table.rows}
    assert keeps["4"].endswith("No kernel generate.py lists without -r meets dtype in "
                               "['fp16, bf16'] (their F_dtype: bf16, fp16), so this rule "
                               "keeps none")
    assert keeps["600"].endswith("Every kernel generate.py lists without -r meets dtype in "
                                 "['fp16', 'bf16'] (their F_dtype: bf16, fp16), so this rule "
                                 "drops none of them")
    assert keeps["2"] == "dpad equals dvpad"


def _check() -> FilterCheck:
    return FilterCheck(
        api="toy", filter="*_nbias_*", command="python generate.py -a toy -f '*_nbias_*' -l k.txt",
        count=40, per_type={"ToyKernel": 40}, baseline_count=120,
        baseline_per_type={"ToyKernel": 120}, predicted=40, predicted_per_type={"ToyKernel": 40},
        verified=True,
        breakdown=[
            SegmentBreakdown("ToyKernel", "bias", [TokenCount("_nbias", "bias=no", 40, 40),
                                                   TokenCount("_bias", "bias=bias", 40, 0),
                                                   TokenCount("_alibi", "bias=alibi", 40, 0)],
                             kept=["_nbias"], dropped=["_bias", "_alibi"]),
            SegmentBreakdown("ToyKernel", "hdim", [TokenCount("_d64", "hdim=64", 60, 20),
                                                   TokenCount("_d128", "hdim=128", 60, 20)],
                             kept=["_d64", "_d128"]),
            SegmentBreakdown("ToyKernel", "mode", [TokenCount("", "mode=batch", 120, 40)],
                             kept=[""]),
        ],
    )


def test_filter_check_blocks_and_markdown():
    blocks = filter_check_blocks(_check(), [("40 kernels", True), ("_d64 dropped", False)])
    assert isinstance(blocks[0], CodeBlock) and blocks[0].text.startswith("python generate.py")
    text = "\n\n".join(blocks_markdown(filter_check_blocks(_check()), 1))
    assert "generate.py selects **40** of 120 kernels; the model predicts the same set." in text
    assert "| `ToyKernel` | 120 | 40 | 40 |" in text
    assert "| bias | `_bias` | 40 | 0 | bias=bias |" in text
    assert "| mode | *(no token)* | 120 | 40 | mode=batch |" in text
    failed, met = blocks[-2:]
    assert isinstance(failed, Admonition) and failed.kind == "warning"
    assert [text_of(i) for i in failed.blocks[1].items] == ["Expected _d64 dropped."]
    assert isinstance(met, BulletList)
    assert [text_of(i) for i in met.items] == ["40 kernels: met"]


# --------------------------------------------------------------------------- docutils


def test_blocks_to_nodes_shapes():
    out = blocks_to_nodes([
        Para(["a ", Code("b"), Strong("c"), Emph("d")]),
        Table(header=["H1", "H2"], rows=[[["x"], []]], title=["Title"]),
        Dropdown(["Fold"], [Para(["inside"])]),
        Admonition("caution", [Para(["careful"])]),
        _diagram("fmha", "_a"),
        CodeBlock("echo hi", "bash"),
        SubHeading(["Sub"]),
    ])
    para, table, dropdown, caution, diagram, code, rubric = out
    assert [type(n).__name__ for n in para.children] == ["Text", "literal", "strong", "emphasis"]
    assert table["classes"][:2] == ["colwidths-auto", "fmha-table"]
    assert table[0].astext() == "Title"
    entries = list(table.findall(nodes.entry))
    assert len(entries) == 4 and not entries[-1].children  # an empty cell stays empty
    # the node shape sphinx-design's dropdown post-transform expects
    assert dropdown["design_component"] == "dropdown" and dropdown["has_title"]
    for key in ("opened", "icon", "chevron", "container_classes", "title_classes", "body_classes"):
        assert key in dropdown.attributes
    assert isinstance(dropdown[0], nodes.rubric) and dropdown[0].astext() == "Fold"
    assert isinstance(caution, nodes.caution)
    assert isinstance(diagram, fmha_diagram) and diagram["html"].startswith('<div class="fmha-name"')
    assert isinstance(diagram[0], nodes.literal_block) and diagram[0].astext().startswith("fmha_a.cpp")
    assert code["language"] == "bash"
    assert isinstance(rubric, nodes.rubric)


# --------------------------------------------------------------------------- real guides


@pytest.fixture(scope="module")
def appendkv(session) -> GuideData:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", "1700000000")
        return collect_guide(session, "fwd_appendkv")


def test_header_line(appendkv):
    header = text_of(header_inlines(appendkv))
    assert header == ("Generated: 2023-11-14 | Source: codegen/ops/fmha_fwd_appendkv.py | "
                      "Targets: all (not selectable in this tree) | Mask mode: simplified")


GUIDE_TITLES = ["Kernel sub-types", "File name structure", "Filter mechanism", "Field reference",
                "Recommended minimal set", "What you lose", "Filter commands", "Kernel counts",
                "Example workloads", "Tiles", "Skip conditions and receipts", "Dispatch",
                "Gaps and checks"]


def markdown_outline(text: str) -> str:
    """The headings and the file-name diagram (the first fenced block without a language)
    of a Markdown guide: the part of it worth a reviewed snapshot."""
    lines = [line for line in text.splitlines() if line.startswith("#")]
    diagram = re.search(r"^```\n(.*?)^```$", text, re.M | re.S)
    assert diagram, "no file-name diagram"
    return "\n".join(lines) + "\n\n" + diagram.group(1)


def test_guide_markdown(session, appendkv, file_regression):
    text = guide_markdown(collect_guide(session, "fwd_appendkv"))
    assert text == guide_markdown(appendkv)  # deterministic
    assert re.findall(r"^## (.*)$", text, re.M) == GUIDE_TITLES
    assert "/" + "root" not in text and str(session.ck_root) not in text
    assert text.count("Generated: ") == 1
    file_regression.check(markdown_outline(text), basename="guide_fwd_appendkv_outline",
                          extension=".md")
    # the numbers are generate.py's: the full listing, and the union of the commands shown
    full = shared_listing(session.ck_root, "fwd_appendkv")
    commands = text.split("## Filter commands", 1)[1].split("\n## ", 1)[0]
    filters = re.findall(r"^python generate\.py -a fwd_appendkv -f '([^']*)'", commands, re.M)
    assert filters
    union = set()
    for pattern in filters:
        union |= shared_listing(session.ck_root, "fwd_appendkv", "-f", pattern)
    assert "| `FmhaFwdAppendKVKernel` | %d | %d |" % (len(full), len(union)) in text
    diagram_name = markdown_outline(text).split("\n\n", 1)[1].splitlines()[0]
    assert diagram_name in full


def test_guide_sections_subset_and_counts(appendkv):
    sections = guide_sections(appendkv, ["counts", "types"])
    assert [s.name for s in sections] == ["counts", "types"]
    without = GuideData(api=appendkv.api, options=appendkv.options, model=appendkv.model,
                        date=appendkv.date, token_counts=appendkv.token_counts)
    names = [s.name for s in guide_sections(without, parse_sections(None))]
    assert "minimal" not in names and "commands" not in names and "counts" in names
    table = guide_sections(without, ["counts"])[0].blocks[1]
    assert table.header == ["Sub-type", "Full"]
    assert text_of(table.rows[0][1]) == str(FWD_APPENDKV_KERNELS)


def test_field_reference_counts_add_up(appendkv, session):
    """Each segment's token counts add up to the listing, and each count is the number
    of listed names (an independent generate.py run) that carry the token."""
    listed = shared_listing(session.ck_root, "fwd_appendkv")
    assert len(listed) == FWD_APPENDKV_KERNELS
    (kernel_type,) = appendkv.model.kernel_types
    checked = 0
    for index, segment in enumerate(kernel_type.segments):
        counts = appendkv.token_counts[(kernel_type.class_name, index)]
        assert sum(counts.values()) == len(listed), segment.label
        assert set(counts) <= set(segment.tokens)
        for token, count in counts.items():
            if token and not segment.literal:
                assert count == carrying(listed, token), (segment.label, token)
                checked += 1
    assert checked >= 10


def test_bwd_constant_segments_are_labelled_not_literal(session):
    """Issue 9 item 6: in 2.8.3 bwd the tile parts ``_r1x4x1_r4x1x1`` never vary; the
    legend names them by the fields the codegen's format string writes there (read
    from the source with a regex), marks them constant, and the field reference lists
    them in one line instead of a table; only ``fmha_bwd`` is literal text."""
    data = collect_guide(session, "bwd", sections=["filename", "fields"])
    text = guide_markdown(data, ["filename", "fields"])
    source = (session.ck_root / "example/ck_tile/01_fmha/codegen/ops/fmha_bwd.py").read_text()
    written = re.search(r"_r\{self\.(\w+)\}x\{self\.(\w+)\}x\{self\.(\w+)\}", source)
    assert written, "the bwd tile name is no longer _r{...}x{...}x{...}"
    fields = ", ".join("`F_tile.%s`" % f for f in sorted(written.groups()))
    dq_dk_dv = text.split("### `FmhaBwdDQDKDVKernel`")[1].split("### ")[0]
    rows = [line for line in dq_dk_dv.splitlines() if line.startswith("| ")]
    tile = next(line for line in rows if "| `_r1x4x1` |" in line)
    assert fields in tile and "*(constant)*" in tile, tile
    literal = [line for line in rows if "*literal text*" in line]
    assert literal == ["| 1 | literal | `fmha_bwd` | *literal text* | `fmha_bwd` |"], literal
    assert re.search(r"Constant in this tree \(one token each.*\*\*tile r0\*\* `_r1x4x1`",
                     text), text[-2000:]
    assert "Segment **tile r0**" not in text


def test_bwd_filter_mechanism(session):
    data = collect_guide(session, "bwd", sections=["filter", "fields"])
    text = guide_markdown(data, ["filter", "fields"])
    assert "`@` separates 3 parts" in text
    assert "one failed match drops the whole trait" in text
    assert "| 1 | `FmhaBwdConvertQGradKernel` | `*` |" in text
    assert "Shape of a filter: `-f '<fmha_bwd_dot_do_o*>@<fmha_bwd_convert_dq*>@<fmha_bwd*>'`" in text
    # one sub-heading per filtered sub-type in the field reference
    assert re.findall(r"^### `(\w+)` \(filter part (\d)\)$", text, re.M) == [
        ("FmhaBwdOGradDotOKernel", "0"), ("FmhaBwdDQDKDVKernel", "2"),
        ("FmhaBwdConvertQGradKernel", "1")]


def test_each_sub_type_cites_its_own_declaration_of_a_shared_field(session):
    """All three bwd sub-types declare ``F_hdim``; each one's field reference cites the
    line in its own class (the class bodies read here from the file)."""
    data = collect_guide(session, "bwd", sections=["fields"])
    text = guide_markdown(data, ["fields"])
    lines = (session.ck_root / "example/ck_tile/01_fmha/codegen/ops/fmha_bwd.py"
             ).read_text().splitlines()
    starts = {m.group(1): i for i, line in enumerate(lines)
              for m in [re.match(r"class (\w+)", line)] if m}
    cited = {}
    for name, section in re.findall(r"^### `(\w+)`.*?$(.*?)(?=^### |\Z)", text, re.M | re.S):
        found = re.search(r"^- `F_hdim`.*\(`codegen/ops/fmha_bwd\.py:(\d+)`\)", section, re.M)
        if found:
            line = int(found.group(1)) - 1
            owner = max((start, cls) for cls, start in starts.items() if start <= line)[1]
            assert owner == name and re.match(r"\s+F_hdim\s*:", lines[line]), (name, line + 1)
            cited[name] = line + 1
    assert len(set(cited.values())) == len(cited) == 3, cited


def test_the_checks_count_the_skip_conditions_the_skip_table_shows(session):
    """fwd_splitkv's codegen tests ``d == None`` in two places: one condition, one row
    of the skip table, counted once in the checks table too (it said 7 beside 5 rows)."""
    data = collect_guide(session, "fwd_splitkv", sections=["rules", "gaps"])
    text = guide_markdown(data, ["rules", "gaps"])
    table = text.split("| Kind | Condition | Where |")[1].split("\n\n")[0]
    rows = [line for line in table.splitlines()[2:] if line.startswith("| ")]
    places = sum(line.split(" | ")[-1].count("`codegen/") for line in rows)
    assert places > len(rows) > 1  # (a condition in two places: the case at hand)
    assert "| Skip conditions | %d |" % len(rows) in text


def test_sections_to_nodes_wraps_sections(appendkv):
    guide = sections_to_nodes(guide_sections(appendkv, ["types", "filename"]), "fwd_appendkv",
                              "auto")
    assert guide["api"] == "fwd_appendkv" and guide["headings"] == "auto"
    assert [c["name"] for c in guide.children] == ["types", "filename"]
    assert [c["title"] for c in guide.children] == ["Kernel sub-types", "File name structure"]
    assert list(guide.findall(fmha_diagram))


def test_cli_guide_writes_markdown(session, tmp_path):
    from sphinxext_fmha import cli

    out = tmp_path / "guide.md"
    code = cli.main(["guide", "fwd_appendkv", "--ck-root", str(session.ck_root), "-o", str(out)])
    assert code == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# FMHA kernel guide: `fwd_appendkv`\n")
    assert text == guide_markdown(collect_guide(session, "fwd_appendkv"))  # the CLI adds nothing


# --------------------------------------------------------------------------- said once


def test_local_link_resolves_in_markdown_and_docutils():
    from sphinxext_fmha.render.ir import LocalLink, Section

    blocks = [SubHeading([Code("K"), " (filter pattern)"]),
              Para(["Segment hdim"], anchor="hdim"), Para(["Segment pad"], anchor="pad"),
              Table(header=["Token", "Dispatch condition"],
                    rows=[[[Code("_b64")], ["as ", LocalLink("K (filter pattern)", "hdim",
                                                            ["hdim ", Code("_d64")])]]])]
    text = "\n\n".join(blocks_markdown(blocks))
    assert '<a id="k-filter-pattern-hdim"></a>Segment hdim' in text
    assert "| `_b64` | as [hdim `_d64`](#k-filter-pattern-hdim) |" in text
    guide = sections_to_nodes([Section("fields", "Field reference", blocks)], "toy", "auto")
    (reference,) = [r for r in guide.findall(nodes.reference) if r.astext() == "hdim _d64"]
    targets = {i for t in guide.findall(nodes.target) for i in t["ids"]}
    assert reference["refid"] in targets and reference["refid"].endswith("hdim")
    # without the section wrapper (no ids known) the link is plain text
    (cell,) = [n for n in blocks_to_nodes(blocks[-1:])[0].findall(nodes.inline)
               if n.get("fmha_local")]
    assert cell.astext() == "hdim _d64"


def test_words_said_only_where_they_say_more():
    from sphinxext_fmha.render.sections.cells import words_say_more

    assert not words_say_more("t.hdim_q <= 32 && t.hdim_v <= 32", "hdim_q <= 32; hdim_v <= 32")
    assert not words_say_more("t.is_group_mode == false", "not is_group_mode")
    assert not words_say_more("t.has_lse && !(t.x)", "has_lse; not (x)")
    assert words_say_more('t.data_type.compare("fp16") == 0', 'data_type == "fp16"')
    assert words_say_more("(a.block_table_ptr != nullptr) == false", "block_table_ptr == nullptr")


def test_condition_groups_as_a_truth_table():
    """Each row's cells, prefixed by their column's C++ name and joined with &&, give
    back the group's condition exactly (the reader's reconstruction, done here)."""
    from sphinxext_fmha.model import ConditionGroup
    from sphinxext_fmha.render.sections.field_conditions import condition_details

    def group(cpp, hdim, tile, kernels=4):
        return ConditionGroup(cpp=cpp, forms=[], where={"hdim": [hdim], "tile": [tile]},
                              kernels=kernels)

    by_token = {
        "_npad": [group(["a.seqlen_k % 128 == 0", "a.hdim_q % 64 == 0"], "_d64", "_b64"),
                  group(["a.seqlen_k % 128 == 0", "a.hdim_q % 32 == 0"], "_d32", "_b32")],
        "_pd": [group(["a.hdim_q % 64 != 0"], "_d64", "_b64"),
                group(["a.hdim_q % 32 != 0"], "_d32", "_b32")],
    }
    marks: set = set()
    blocks = condition_details(by_token, "pad", marks)
    assert marks == {"pivoted"} and not isinstance(blocks[0], Dropdown)  # 4 rows: not folded
    note, table = blocks
    assert isinstance(table, Table)
    # tile goes with hdim one to one: said once, not a column
    assert text_of(note.inlines).startswith("tile goes with hdim one to one")
    assert table.header == ["Token", "hdim", "a.seqlen_k", "a.hdim_q"]
    assert text_of(table.title) == "Dispatch conditions of pad (4 groups of 4 kernels)"
    rebuilt = {}
    for row in table.rows:
        terms = ["%s %s" % (name, text_of(cell)) for name, cell in zip(table.header[2:], row[2:])
                 if text_of(cell)]
        rebuilt[(text_of(row[0]), text_of(row[1]))] = " && ".join(terms)
    assert rebuilt == {("_npad", "_d64"): "a.seqlen_k % 128 == 0 && a.hdim_q % 64 == 0",
                       ("_npad", "_d32"): "a.seqlen_k % 128 == 0 && a.hdim_q % 32 == 0",
                       ("_pd", "_d64"): "a.hdim_q % 64 != 0", ("_pd", "_d32"): "a.hdim_q % 32 != 0"}


@pytest.mark.parametrize("tree", ["flash-attn-2.7.4.post1", "flash-attn-2.8.3"])
def test_empty_filter_sentence_says_what_generate_py_does(corpus_root, tree):
    """2.7.4 passes ``-f ''`` to fnmatch (it tests ``!= None``): nothing is generated;
    2.8.3 treats it as no filter. The sentence follows an ``-f ''`` run made here."""
    root = corpus_root(tree)
    full = shared_listing(root, "fwd")
    empty = shared_listing(root, "fwd", "-f", "")
    from sphinxext_fmha.session import Session

    text = guide_markdown(collect_guide(Session(root), "fwd", sections=parse_sections("filter")))
    line = next(li for li in text.splitlines() if li.startswith("- Without `-f`"))
    if not empty:
        assert "**no** `FmhaFwdKernel` kernel is generated" in line, line
    else:
        assert empty == full and "or with an empty one" in line, line


def test_a_call_after_another_of_its_caller_is_not_unconditional():
    """The newest CK entry: `fmha_fwd_v2` runs only when the `fmha_fwd_v3` call before
    it did not return (it declined with r < 0), though no condition guards it."""
    from sphinxext_fmha.render.sections.dispatch import _entry_points

    calls = [{"caller": "fmha_fwd", "callee": "fmha_fwd_v3", "when": "args.max_seqlen_q > 1",
              "form": "max_seqlen_q > 1", "never": False, "statement": "v3(...)"},
             {"caller": "fmha_fwd", "callee": "fmha_fwd_v2", "when": "", "form": "",
              "never": False, "statement": "return fmha_fwd_v2(...)"}]
    text = "\n".join(blocks_markdown(_entry_points({"entries": ["fmha_fwd"], "calls": calls})))
    assert "`fmha_fwd` calls `fmha_fwd_v2` when the calls before it have not returned" in text
    assert "unconditionally" not in text
    alone = "\n".join(blocks_markdown(_entry_points({"entries": ["fmha_fwd"],
                                                     "calls": calls[1:]})))
    assert "`fmha_fwd` calls `fmha_fwd_v2` unconditionally" in alone
