"""Command line: ``sphinxext-fmha {apis,analyze,check,recommend,guide,generate}``."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

from .analysis.analyze import AnalysisError, Options
from .analysis.observe import ProbeError
from .locate import CKRootNotFound, locate_ck_root
from .model import to_dict, to_json
from .process.runner import GenerateError

DRIVER_SCRIPT = Path(__file__).with_name("process") / "driver_script.py"


def _common(parser: argparse.ArgumentParser, api: bool = True) -> None:
    parser.add_argument("--ck-root", help="CK checkout (default: search upward from here)")
    parser.add_argument("--python", help="interpreter that runs generate.py")
    parser.add_argument("--cache-dir", help="on-disk cache (default ~/.cache/sphinxext-fmha)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per generate.py run")
    if api:
        parser.add_argument("--targets")
        parser.add_argument("--mask", choices=["simplified", "generic"])
        parser.add_argument("--receipt", type=int)
        parser.add_argument("--optdim")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sphinxext-fmha",
                                     description="Kernel selection guides for CK's FMHA codegen")
    sub = parser.add_subparsers(dest="command", required=True)

    apis = sub.add_parser("apis", help="the APIs and generate.py's options")
    _common(apis, api=False)
    apis.add_argument("--format", choices=["json", "text"], default="text")

    analyze = sub.add_parser("analyze", help="the kernel model of one API")
    _common(analyze)
    analyze.add_argument("--api", required=True)
    analyze.add_argument("--format", choices=["json", "text"], default="text")

    check = sub.add_parser("check", help="what a -f filter selects, measured and predicted")
    _common(check)
    check.add_argument("--api", required=True)
    check.add_argument("--filter", required=True)
    check.add_argument("--format", choices=["json", "text"], default="text")

    recommend = sub.add_parser("recommend", help="the minimal kernel set and its filters")
    _common(recommend)
    recommend.add_argument("--api", required=True)
    recommend.add_argument("--format", choices=["json", "markdown"], default="markdown")

    guide = sub.add_parser("guide", help="write the kernel selection guide as Markdown")
    _common(guide)
    guide.add_argument("api")
    guide.add_argument("-o", "--output", help="file to write (default: standard output)")

    generate = sub.add_parser("generate", help="run generate.py once for several filters")
    _common(generate)
    generate.add_argument("--api", required=True)
    generate.add_argument("-f", "--filter", action="append", required=True)
    out = generate.add_mutually_exclusive_group(required=True)
    out.add_argument("-o", "--output-dir")
    out.add_argument("-l", "--list-blobs")
    return parser


def _session(args):
    from .session import Session

    root = locate_ck_root(path=Path(args.ck_root) if args.ck_root else None,
                          start=None if args.ck_root else Path.cwd())
    progress = (lambda message: print(message, file=sys.stderr)) if sys.stderr.isatty() else None
    return Session(root, python=args.python, cache_dir=Path(args.cache_dir) if args.cache_dir else None,
                   timeout=args.timeout, progress=progress)


def _options(args) -> Options:
    return Options(targets=args.targets, mask=args.mask, receipt=args.receipt, optdim=args.optdim)


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except (CKRootNotFound, AnalysisError, GenerateError, ProbeError) as error:
        print("sphinxext-fmha: %s" % error, file=sys.stderr)
        tail = getattr(error, "stderr_tail", "")
        if tail and tail not in str(error):
            print(tail, file=sys.stderr)
        return 2


def _run(args) -> int:
    session = _session(args)
    if args.command == "apis":
        apis = session.apis()
        options = session.tree.options
        if args.format == "json":
            print(json.dumps({"apis": to_dict(apis), "options": to_dict(options),
                              "gaps": to_dict(session.tree.gaps)}, indent=2))
        else:
            for info in apis:
                print("%-18s %s" % (info.name, info.source))
            print("\ngenerate.py options:")
            for option in options:
                print("  %-28s default %s" % (", ".join(option.flags), option.default))
            for gap in session.tree.gaps:
                print("gap: %s (%s)" % (gap.what, gap.why))
        return 0
    if args.command == "analyze":
        model = session.model(args.api, _options(args))
        if args.format == "json":
            print(to_json(model))
        else:
            print(_model_text(model))
        return 0
    if args.command == "check":
        check = session.check(args.api, args.filter, _options(args))
        if args.format == "json":
            print(to_json(check))
        else:
            print(_check_text(check))
        return 0 if check.verified else 1
    if args.command == "recommend":
        recommendation = session.recommend(args.api, _options(args))
        if args.format == "json":
            print(to_json(recommendation))
        else:
            from .render.markdown import render_recommendation_markdown

            print(render_recommendation_markdown(recommendation))
        return 0 if recommendation.verified else 1
    if args.command == "guide":
        from .render.markdown import render_guide_markdown

        text = render_guide_markdown(session, args.api, _options(args))
        if args.output:
            output = Path(args.output)
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
        return 0
    if args.command == "generate":
        return _generate(session, args)
    return 2


def run_driver(session, api: str, options: Options, filters: List[str], out_args: List[str]) -> None:
    """Run the driver (one generate.py run for the union of ``filters``)."""
    model = session.model(api, options)
    request = session.tree.request(api, options)
    generate_args = [a for a in request.argv(session.tree.supported_dests())]
    command = [session.python, "-B", str(DRIVER_SCRIPT), str(session.tree.fmha_dir),
               model.filter.api_split or ""] + list(filters) + ["--"] + generate_args + out_args
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run(command, cwd=str(session.tree.fmha_dir), env=env, capture_output=True,
                          text=True, timeout=session.timeout)
    if proc.returncode != 0:
        raise GenerateError("the driver run failed (exit code %d)" % proc.returncode,
                            command=" ".join(command[2:]),
                            stderr_tail="\n".join(proc.stderr.strip().splitlines()[-20:]))


def driver_listing(session, api: str, options: Options, filters: List[str]) -> List[str]:
    with tempfile.TemporaryDirectory(prefix="fmha-driver-") as tmp:
        listing = Path(tmp) / "kernels.txt"
        run_driver(session, api, options, filters, ["-l", str(listing)])
        names = [Path(line.strip()).name for line in listing.read_text().splitlines() if line.strip()]
    return sorted(n for n in names if not n.endswith("_api.cpp"))


def _generate(session, args) -> int:
    options = _options(args)
    if args.list_blobs:
        out = ["-l", str(Path(args.list_blobs).resolve())]
    else:
        out = ["-o", str(Path(args.output_dir).resolve())]
    run_driver(session, args.api, options, args.filter, out)
    return 0


def _model_text(model) -> str:
    lines = ["API %s (%s)" % (model.api, model.source),
             "options: " + ", ".join("%s=%s" % kv for kv in model.options.items())]
    for kernel_type in model.kernel_types:
        lines.append("")
        lines.append("%s: %d kernels, filter part %s, arch suffixes %s" % (
            kernel_type.class_name, kernel_type.count, kernel_type.filter_position,
            ", ".join(repr(s) for s in kernel_type.arch_suffixes)))
        lines.append("  example: %s" % kernel_type.example)
        for segment in kernel_type.segments:
            tokens = ", ".join(repr(t) for t in list(segment.tokens)[:6])
            more = " ..." if len(segment.tokens) > 6 else ""
            lines.append("  %-16s %s%s" % (segment.label, tokens, more))
    lines.append("")
    lines.append("baseline: %d listed, %d parsed, %d unparsed, %d ambiguous" % (
        model.baseline.count, model.baseline.parsed, len(model.baseline.unparsed),
        len(model.baseline.ambiguous)))
    for gap in model.gaps:
        lines.append("gap: %s at %s (%s)" % (gap.what, gap.where, gap.why))
    return "\n".join(lines)


def _check_text(check) -> str:
    lines = ["$ " + check.command,
             "selected %d of %d kernels (model predicts %d): %s" % (
                 check.count, check.baseline_count, check.predicted,
                 "verified" if check.verified else "NOT verified")]
    for kernel_type, count in check.per_type.items():
        lines.append("  %-32s %d of %d" % (kernel_type, count, check.baseline_per_type.get(kernel_type, 0)))
    for row in check.breakdown:
        if row.dropped:
            lines.append("  %s / %s: dropped %s" % (row.kernel_type, row.segment,
                                                   ", ".join(t or "(no token)" for t in row.dropped)))
    for effect in check.side_effects:
        lines.append("side effect: " + effect)
    for note in check.notes:
        lines.append("note: " + note)
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
