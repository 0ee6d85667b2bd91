"""The gaps section: parse coverage, gaps and analysis checks."""

from __future__ import annotations

from typing import List

from ...guide_data import GuideData
from ...model import Gap
from ..ir import Block, BulletList, Code, Dropdown, Inlines, Para, Strong, Table
from .cells import FOLD_ITEMS, fold


def gaps_section(data: GuideData) -> List[Block]:
    model = data.model
    baseline = model.baseline
    blocks: List[Block] = [Para([
        "All %d listed file names parse with the derived grammar." % baseline.count
        if baseline.parsed == baseline.count else
        "%d of %d listed file names parse with the derived grammar (%d unparsed, %d ambiguous)."
        % (baseline.parsed, baseline.count, len(baseline.unparsed), len(baseline.ambiguous))])]
    odd = sorted(baseline.unparsed) + sorted(baseline.ambiguous)
    if odd:
        blocks.extend(fold(["Names that do not parse: %d" % len(odd)],
                            [BulletList([[Code(n)] for n in odd])], len(odd), FOLD_ITEMS))
    missing = model.gaps
    if missing:
        blocks.append(Para([Strong("Gaps"), ": what the analysis could not determine "
                            "(nothing is guessed):"]))
        blocks.append(BulletList([_gap_item(gap) for gap in missing]))
    else:
        blocks.append(Para(["The analysis left no gap."]))
    if model.checks:
        rows: List[List[Inlines]] = [[[_words(str(k))], [_check_value(v)]]
                                     for k, v in sorted(model.checks.items())]
        blocks.append(Dropdown(title=["Analysis checks (%d)" % len(rows)],
                               blocks=[Table(header=["Check", "Value"], rows=rows,
                                             classes=["fmha-checks"])]))
    return blocks


def _gap_item(gap: Gap) -> Inlines:
    item: Inlines = [gap.what]
    if gap.where:
        item += [" (", Code(gap.where), ")"]
    if gap.why:
        item.append(": " + gap.why)
    return item


def _words(key: str) -> str:
    """An internal check key as words: ``blob_function_takes_targets`` -> "Blob
    function takes targets"."""
    text = " ".join(key.replace("_", " ").split())
    return text[:1].upper() + text[1:]


def _check_value(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join("%s: %s" % (str(k).replace("_", " "), _check_value(v))
                         for k, v in sorted(value.items()))
    if isinstance(value, (list, tuple)):
        return ", ".join(_check_value(v) for v in value) or "none"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)
