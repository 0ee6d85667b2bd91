"""Layout helpers of the renderers: where long names break, how long commands wrap,
where count columns go, how the diagram's text form is cut.  Oracles: shlex, plain
string arithmetic."""

from __future__ import annotations

import shlex

from docutils import nodes

from sphinxext_fmha.render.diagram import diagram_text
from sphinxext_fmha.render.ir import (
    Code,
    Diagram,
    DiagramPart,
    Para,
    Section,
    Table,
    break_points,
    column_order,
    wrap_commands,
)
from sphinxext_fmha.render.markdown import blocks_markdown
from sphinxext_fmha.render.nodes import blocks_to_nodes, sections_to_nodes

LONG = [
    "my_ns::BlockAttentionBiasEnum::ELEMENTWISE_BIAS",
    "SimplifiedGenericAttentionMask<false>",
    "fmha_fwd_d160_bf16_batch_b128x128x32x160x32x160_r4x1x1.cpp",
    "codegen/ops/fmha_fwd.py:469",
]


def test_long_names_break_only_at_sensible_points():
    for text in LONG:
        pieces = break_points(text)
        assert "".join(pieces) == text and len(pieces) > 1
        for left, right in zip(pieces, pieces[1:]):
            # after ::, <, , or . or a path's /, or between tokens (before an inner _) of
            # a word longer than 12 characters; never inside a token or a number
            assert left.endswith(("::", "<", ",", ".", "/")) or right[0] == "_" or (
                left[-1].isdigit() and right[0] == "x" and right[1].isdigit()), (left, right)
            assert not (left[-1:].isdigit() and right[:1].isdigit()), (left, right)
    assert break_points("my_ns::BlockAttentionBiasEnum::ELEMENTWISE_BIAS") == [
        "my_ns::", "BlockAttentionBiasEnum::", "ELEMENTWISE", "_BIAS"]
    assert break_points("F_pipeline.F_dvpad") == ["F_pipeline.", "F_dvpad"]
    assert break_points("SimplifiedGenericAttentionMask<false>") == [
        "SimplifiedGenericAttentionMask<", "false>"]
    # short words, tokens and file.py:line references stay whole
    # a long tile shape breaks between its numbers only
    assert break_points("_b16x128x128x16")[:2] == ["_b16", "x128"]
    for whole in ("_nbias", "_dropout_wg16_storerandval", "fmha_fwd.py:411",
                  "fmha_batch_prefill.py:1234",
                  "t.hdim_q <= 32 && t.hdim_v <= 32"):
        assert break_points(whole) == [whole]


def test_code_inlines_keep_their_text_for_every_builder():
    para = blocks_to_nodes([Para([Code(LONG[0])])])[0]
    literal = para[0]
    assert isinstance(literal, nodes.literal) and literal.astext() == LONG[0]
    assert "fmha-brk" in literal["classes"]
    assert len(list(literal.findall(lambda n: "fmha-wbr" in n.get("classes", [])
                                    if isinstance(n, nodes.Element) else False))) == 3


def test_long_commands_wrap_into_the_same_command():
    patterns = ["'*@*@*_p%s_*nbias_*ndbias_*ndropout_*ndeterministic*'" % p
                for p in ("sk", "skd", "skddv", "ssk", "sskd")]
    command = "sphinxext-fmha generate --ck-root . --api bwd %s -o generated" % " ".join(
        "-f " + p for p in patterns)
    wrapped = wrap_commands(command, width=76)
    lines = wrapped.split("\n")
    assert len(lines) > 1 and all(len(line) <= 76 for line in lines)
    assert all(line.endswith(" \\") for line in lines[:-1])
    assert shlex.split(wrapped.replace("\\\n", " ")) == shlex.split(command)
    for line in lines[1:]:  # an option and its value stay together
        assert not line.rstrip(" \\").endswith(" -f")
    assert wrap_commands("python generate.py -a fwd -l kernels.txt") == \
        "python generate.py -a fwd -l kernels.txt"


def test_count_columns_come_before_long_text():
    table = Table(header=["Token", "Meaning", "Dispatch condition", "Kernels"],
                  rows=[[["_a"], ["a=1"], ["x <= 1"], ["12"]], [["_b"], ["b"], ["-"], ["3"]]])
    assert column_order(table) == [0, 3, 1, 2]
    table.counts_after = None
    assert column_order(table) == [0, 1, 2, 3]
    table.counts_after = 1
    text = blocks_markdown([table])[0]
    assert text.splitlines()[0] == "| Token | Kernels | Meaning | Dispatch condition |"


def test_diagram_text_is_cut_into_chunks_that_keep_their_ruler():
    tokens = ["fmha_fwd", "_d160", "_bf16", "_batch", "_b128x128x32x160x32x160", "_r4x1x1",
              "_r4x1x1", "_w32x32x16", "_w32x32x16", "_o1", "_qr_async", "_vc", "_psddv",
              "_logits", "_nbias", "_mask", "_lse", "_ndropout", "_nskip", "_nsquant"]
    diagram = Diagram(name="".join(tokens) + ".cpp", suffix=".cpp", suffix_label="extension",
                      parts=[DiagramPart(t, "l%d" % i, i + 1) for i, t in enumerate(tokens)])
    chunks = [chunk.split("\n") for chunk in diagram_text(diagram, width=60).split("\n\n")]
    assert len(chunks) > 1
    assert "".join(chunk[0] for chunk in chunks) == diagram.name
    numbers = []
    for chunk in chunks:
        name, ruler, *labels = chunk
        assert len(name) <= 60 and len(ruler) == len(name)
        for line in labels:
            numbers += line.split()
    assert sorted(int(n) for n in numbers if n != "s") == list(range(1, len(tokens) + 1))
    assert numbers.count("s") == 1  # the suffix


def test_anchored_paragraphs_get_ids_and_a_jump_list():
    blocks = [Para(["intro"]), Para(["Segment hdim"], anchor="hdim"), Para(["x"]),
              Para(["Segment dtype"], anchor="dtype")]
    guide = sections_to_nodes([Section("fields", "Field reference", blocks)], "fwd", "auto")
    section = guide[0]
    jump = section[1]
    assert "fmha-jump" in jump["classes"]
    refs = [r["refid"] for r in jump.findall(nodes.reference)]
    targets = list(section.findall(nodes.target))
    assert refs == ["fmha-fwd-fields-hdim", "fmha-fwd-fields-dtype"]
    assert [t["ids"] for t in targets] == [[r] for r in refs]
    for target in targets:  # each just before the paragraph it marks
        assert target.next_node(descend=False, siblings=True).astext().startswith("Segment")
