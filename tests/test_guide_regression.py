"""The whole Markdown guide, as a reviewed regression file.

Every sentence of a guide is made in ``render/``; these files hold the whole text
of the guide the CLI writes for three synthetic trees (offline, fast) and one small
corpus API, so that any change of wording, order or count is a diff in review.
Regenerate with ``--force-regen`` and read the diff before committing it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sphinxext_fmha.cli import main

#: synthetic trees (tests/synthetic.py) whose guides differ in kind: the base shape, a
#: field that tells its value only past a split point, and v2/v3 entry points
SYNTHETIC_VARIANTS = ("base", "at_split", "v2_v3")


def _guide(root: Path, api: str, tmp_path: Path, capsys) -> str:
    out = tmp_path / f"{api}.md"
    code = main(["guide", api, "--ck-root", str(root), "--cache-dir", str(tmp_path / "cache"),
                 "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    _substitutes_are_said_unmeasured(text)
    return text


def _substitutes_are_said_unmeasured(text: str) -> None:
    """Where a dropped variant's calls run a kept variant instead, the loss section says
    that the set is chosen for coverage and the substitute's speed is not measured."""
    losses = text.partition("## What you lose")[2].partition("\n## ")[0]
    substitutes = re.search(r"run the kept .+ variant instead", losses) is not None
    assert substitutes == ("chosen for coverage, not speed" in losses)


@pytest.mark.usefixtures("reproducible_build")
@pytest.mark.parametrize("variant", SYNTHETIC_VARIANTS)
def test_synthetic_guide(variant, synthetic_tree, tmp_path, capsys, file_regression):
    text = _guide(synthetic_tree(variant), "toy", tmp_path, capsys)
    file_regression.check(text, extension=".md", basename=f"synthetic_{variant}_toy")


@pytest.mark.corpus
@pytest.mark.usefixtures("reproducible_build")
def test_corpus_guide(corpus_root, tmp_path, capsys, file_regression):
    text = _guide(corpus_root("flash-attn-2.8.3"), "fwd_appendkv", tmp_path, capsys)
    file_regression.check(text, extension=".md", basename="flash_attn_2_8_3_fwd_appendkv")
