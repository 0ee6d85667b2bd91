"""The command line's plain-text views of a tree's APIs (``apis``), a model
(``analyze``) and a filter check (``check``); ``--format json`` prints the data itself."""

from __future__ import annotations

from typing import Any, Sequence

from ..model import ApiModel, FilterCheck, token_list


def apis_text(apis: Sequence[Any], options: Sequence[Any], gaps: Sequence[Any]) -> str:
    """``apis``: each API and its module, generate.py's options, what was not read."""
    lines = ["%-18s %s" % (info.name, info.source) for info in apis]
    lines.append("\ngenerate.py options:")
    lines += ["  %-28s default %s" % (", ".join(option.flags), option.default)
              for option in options]
    lines += ["gap: %s (%s)" % (gap.what, gap.why) for gap in gaps]
    return "\n".join(lines)


def model_text(model: ApiModel) -> str:
    """``analyze``: the sub-types, their segments and the baseline listing."""
    lines = ["API %s (%s)" % (model.api, model.source),
             "options: " + ", ".join("%s=%s" % kv for kv in model.options.items())]
    for kernel_type in model.kernel_types:
        lines += ["", "%s: %d kernels, filter part %s, arch suffixes %s" % (
            kernel_type.class_name, kernel_type.count, kernel_type.filter_position,
            ", ".join(repr(s) for s in kernel_type.arch_suffixes)), "  example: %s" % kernel_type.example]
        for segment in kernel_type.segments:
            tokens = ", ".join(repr(t) for t in list(segment.tokens)[:6])
            more = " ..." if len(segment.tokens) > 6 else ""
            lines.append("  %-16s %s%s" % (segment.label, tokens, more))
    lines += ["", "baseline: %d listed, %d parsed, %d unparsed, %d ambiguous" % (
        model.baseline.count, model.baseline.parsed, len(model.baseline.unparsed),
        len(model.baseline.ambiguous))]
    lines += ["gap: %s at %s (%s)" % (gap.what, gap.where, gap.why) for gap in model.gaps]
    return "\n".join(lines)


def check_text(check: FilterCheck) -> str:
    """``check``: what a filter selects, per sub-type and segment."""
    lines = ["$ " + check.command,
             "selected %d of %d kernels (model predicts %d): %s" % (
                 check.count, check.baseline_count, check.predicted,
                 "verified" if check.verified else "NOT verified")]
    lines += ["  %-32s %d of %d" % (kernel_type, count, check.baseline_per_type.get(kernel_type, 0))
              for kernel_type, count in check.per_type.items()]
    lines += ["  %s / %s: dropped %s" % (row.kernel_type, row.segment, token_list(row.dropped))
              for row in check.breakdown if row.dropped]
    lines += ["side effect: " + effect for effect in check.side_effects]
    if check.untested_matches:
        lines.append("not tested: %d kernels whose names match are generated with another "
                     "kernel, which -f tests instead" % check.untested_matches)
    return "\n".join(lines + ["note: " + note for note in check.notes])
