"""Command line: ``sphinxext-fmha {apis,analyze,check,recommend,guide,prepare,diff,generate}``.

Exit status: 0 success (``diff``: it could compare, whatever the verdict); 1 a run
failed (generate.py, the analysis, an unverified check, recommendation or ``diff``, a
guide ``prepare`` could not complete); 2 a usage or input error (bad option, path, CK
root, API, interpreter, section); 130 interrupted. Errors are one line on stderr (plus
generate.py's stderr tail), never a traceback; a closed stdout or stderr is no error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import List, Optional

from .cppapi.allocation import collector_paused, freeze_at_exit
from .errors import FmhaError, WarningType, tail_shown
from .locate import find_ck_root
from .model import to_dict, to_json
from .options import GENERATE_OPTIONS, OptionError, Options, check_filter_text, parse_options
from .process.batch import run_driver
from .process.cache import cache_dir_problem
from .process.launch import install_handlers
from .process.notices import to_stderr
from .render.cli_text import apis_text, check_text, model_text
from .render.guide_blocks import fill_check_words

__all__ = ["main", "build_parser", "EXIT_FAILED", "EXIT_USAGE", "EXIT_INTERRUPTED"]

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

#: Error kinds that are the user's input to fix (exit 2); every other kind is a failed run.
_INPUT_KINDS = {WarningType.CONFIG, WarningType.CK_ROOT, WarningType.CACHE, WarningType.API,
                WarningType.OPTION, WarningType.FILTER, WarningType.NEED}
#: What ``--need`` takes (repeatable).
_NEED_HELP = ("a workload: SEGMENT=V1,V2 (the field reference's segment; tokens with or "
              "without their leading _, or a field's value such as 128 for _d128); "
              "repeat it for several segments")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number of seconds" % text) from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a number of seconds greater than 0, not %s"
                                         % text)
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sphinxext-fmha",
                                     description="Kernel selection guides for CK's FMHA codegen")
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help: str, *, api: bool = True) -> argparse.ArgumentParser:
        one = sub.add_parser(name, help=help)
        one.add_argument("--ck-root", help="CK checkout (default: search upward from here)")
        one.add_argument("--python", help="interpreter that runs generate.py")
        one.add_argument("--cache-dir", help="on-disk cache (default ~/.cache/sphinxext-fmha)")
        one.add_argument("--timeout", type=_seconds, default=900,
                         help="seconds per generate.py run (> 0)")
        for spec in GENERATE_OPTIONS if api else ():
            one.add_argument(spec.long_flag, dest=spec.dest,
                             help="generate.py %s (checked against the tree's own help)"
                             % spec.flag)
        return one

    def formats(one: argparse.ArgumentParser, other: str = "text") -> None:
        one.add_argument("--format", choices=["json", other], default=other)

    def need(one: argparse.ArgumentParser) -> None:
        one.add_argument("--need", action="append", default=[], metavar="SEGMENT=VALUES",
                         help=_NEED_HELP)

    def progress(one: argparse.ArgumentParser, what: str) -> None:
        one.add_argument("--progress", choices=["auto", "always", "never"], default="auto",
                         help="%s on stderr (auto: when it is a terminal)" % what)

    formats(command("apis", "the APIs and generate.py's options", api=False))
    analyze = command("analyze", "the kernel model of one API")
    analyze.add_argument("--api", required=True)
    formats(analyze)
    check = command("check", "what a -f filter selects, measured and predicted")
    check.add_argument("--api", required=True)
    check.add_argument("--filter", required=True)
    formats(check)
    recommend = command("recommend", "the minimal kernel set and its filters")
    recommend.add_argument("--api", required=True)
    formats(recommend, "markdown")
    need(recommend)
    guide = command("guide", "write the kernel selection guide as Markdown")
    guide.add_argument("api")
    need(guide)
    guide.add_argument("-o", "--output", help="file to write (default: standard output)")
    prepare = command("prepare", "compute the guides of APIs into the cache (pre-warm it, "
                      "e.g. in CI, or ahead of a docs build's pages)")
    prepare.add_argument("apis", nargs="+", metavar="API")
    prepare.add_argument("--sections", help="the guide sections to prepare, as the "
                         "directive's :sections: (default: all)")
    formats(prepare)
    progress(prepare, "step lines")
    diff = command("diff", "what a -f filter selects in an old and a new CK tree, why the "
                   "sets differ, and the runs that keep the old set")
    diff.add_argument("--from-ck-root", required=True, help="the old CK checkout (--ck-root: "
                      "the new one)")
    diff.add_argument("--api", required=True)
    diff.add_argument("-f", "--filter", required=True)
    formats(diff)
    generate = command("generate", "run generate.py once for several filters")
    generate.add_argument("--api", required=True)
    generate.add_argument("-f", "--filter", action="append", required=True)
    out = generate.add_mutually_exclusive_group(required=True)
    out.add_argument("-o", "--output-dir")
    out.add_argument("-l", "--list-blobs")
    progress(generate, "'still running' lines")
    return parser


def _session(args, ck_root: Optional[str] = None):
    from .guide import open_session

    cache_dir = Path(args.cache_dir).expanduser() if args.cache_dir else None
    problem = cache_dir_problem(cache_dir) if cache_dir is not None else None
    if problem:
        raise OptionError("--cache-dir: %s" % problem, kind=WarningType.CACHE)
    root = find_ck_root(ck_root if ck_root is not None else args.ck_root, Path.cwd())
    shown = getattr(args, "progress", "auto")
    progress = (to_stderr if shown == "always" or (shown == "auto" and _stderr_is_a_terminal())
                else None)
    return open_session(root, "--python", python=args.python, cache_dir=cache_dir,
                        timeout=args.timeout, progress=progress)


def _options(args, session) -> Options:
    return parse_options(session.tree, origins={s.dest: s.long_flag for s in GENERATE_OPTIONS},
                         **{spec.dest: getattr(args, spec.dest) for spec in GENERATE_OPTIONS})


def _stderr_is_a_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (OSError, ValueError):
        return False


def _say(message: str) -> None:
    to_stderr("sphinxext-fmha: %s" % message)


def _quiet_stdout() -> None:
    """After a broken pipe: the rest to /dev/null, so the final flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: Optional[List[str]] = None) -> int:
    """Run the command; return the exit status (see the module docstring)."""
    freeze_at_exit()  # a worker interpreter ends holding a guide's whole analysis
    try:
        args = build_parser().parse_args(argv)
        return _run(args)
    except KeyboardInterrupt:
        _say("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except FmhaError as error:
        _say(str(error))
        if error.stderr_tail and not tail_shown(str(error), error.stderr_tail):
            _say("last lines of its stderr:\n" + error.stderr_tail)
        return EXIT_USAGE if error.kind in _INPUT_KINDS else EXIT_FAILED
    except (SyntaxError, UnicodeDecodeError) as error:
        _say("cannot read the CK tree's Python source: %s: %s" % (type(error).__name__, error))
        return EXIT_FAILED
    except OSError as error:  # one we did not expect: say what we know of it
        _say("%s: %s" % (error.filename or "an unnamed file", error.strerror or error))
        return EXIT_FAILED
    except Exception as error:  # noqa: BLE001 - a bug of ours: one line, not a traceback
        if os.environ.get("FMHA_DEBUG"):
            raise
        _say("internal error: %s: %s (set FMHA_DEBUG=1 to see where; please report it)"
             % (type(error).__name__, error))
        return EXIT_FAILED


def _output_path(path_text: str, folder: bool, flag: str) -> Path:
    """A folder (``-o``) or listing file (``-l``) for generate.py, checked before it runs."""
    path = Path(path_text).expanduser().resolve()
    target = path if folder else path.parent
    blocking = next((p for p in [target, *target.parents] if p.exists()), None)
    if blocking is not None and not blocking.is_dir():
        raise OptionError("%s: %s is a file, not a folder" % (flag, blocking))
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OptionError("%s: cannot create %s: %s" % (flag, target, error.strerror or error)) from None
    if not folder and path.is_dir():
        raise OptionError("%s: %s is a folder; give a file path" % (flag, path))
    if not os.access(target, os.W_OK):
        raise OptionError("%s: %s is not writable" % (flag, target))
    return path


def _run(args) -> int:
    session = _session(args)
    if args.command == "apis":
        apis = session.apis()
        options = session.tree.options
        if args.format == "json":
            print(json.dumps({"apis": to_dict(apis), "options": to_dict(options),
                              "gaps": to_dict(session.tree.gaps)}, indent=2))
        else:
            print(apis_text(apis, options, session.tree.gaps))
        return 0
    options = _options(args, session)
    if args.command == "analyze":
        model = session.model(args.api, options)
        _warn_suspicious(model)
        print(to_json(model) if args.format == "json" else model_text(model))
        return 0
    if args.command == "check":
        model = session.model(args.api, options)
        check_filter_text(args.api, args.filter, model.filter.cli_split, model.filter.api_split)
        check = fill_check_words(session.check(args.api, args.filter, options))
        print(to_json(check) if args.format == "json" else check_text(check), flush=True)
        if not check.baseline_count:  # no kernel to select from: nothing was verified
            from .guide import suspicious_problems

            why = [problem.message for problem in suspicious_problems(model)]
            _say("%s; nothing was verified" % (why[0] if why else "%s: generate.py listed no "
                                               "kernel" % args.api))
            return EXIT_FAILED
        from .render.guide_blocks import miss_warnings
        from .render.sections.filter_write import write_warnings

        _warn(miss_warnings(args.api, args.filter, check.misses)
              + write_warnings(args.api, args.filter, check))
        if not check.count:
            _say("error: %s -f %r selects no kernel" % (args.api, args.filter))
        return 0 if check.verified and check.write_verified and check.count else EXIT_FAILED
    if args.command == "recommend":
        from .render.sections.loss_words import fill_words

        needs = session.needs(args.api, args.need, options) if args.need else []
        recommendation = session.recommend(args.api, options, needs)
        _warn_unmet(recommendation)
        if args.format == "json":
            fill_words(recommendation)
            print(to_json(recommendation))
        else:
            from .render.markdown import render_recommendation_markdown

            print(render_recommendation_markdown(recommendation))
        return 0 if recommendation.verified else EXIT_FAILED
    if args.command == "guide":
        from .guide import collect_guide
        from .render.markdown import guide_markdown

        if args.output:
            _output_path(args.output, folder=False, flag="-o")  # fail before the long run
        needs = session.needs(args.api, args.need, options) if args.need else []
        data = collect_guide(session, args.api, options, needs=needs)
        text = guide_markdown(data)
        from .render.guide_blocks import commands_miss_warnings

        if data.recommendation is not None:
            _warn_unmet(data.recommendation)
        _warn_suspicious(data.model)
        _warn([problem.message for problem in (data.recommendation_problem,
                                               data.dispatch_problem, data.filter_problem)
               if problem is not None])
        _warn(commands_miss_warnings(args.api, data.recommendation.runs
                                     if data.recommendation else []))
        if args.output:
            path = Path(args.output).expanduser()
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            except OSError as error:
                raise OptionError("cannot write the guide to %s: %s (give a file path in a folder "
                                  "you can write)" % (path, error.strerror or error)) from None
        elif sys.stdout is not None:  # (closed: ``>&-``)
            sys.stdout.write(text)
            sys.stdout.flush()
        return 0
    if args.command == "generate":
        return _generate(session, args, options)
    if args.command == "diff":
        return _diff(session, args, options)
    if args.command == "prepare":
        return _prepare(session, args, options)
    return EXIT_USAGE


def _prepare(session, args, options: Options) -> int:
    """The guides of ``args.apis`` into the cache a docs build reads, one line per API
    (text or JSON); a failing API does not stop the others, nor is its failure kept."""
    from .guide import collect_guide
    from .guide_data import parse_sections

    sections = parse_sections(args.sections)  # a bad value is a usage error, before any work
    for api in args.apis:
        session.tree.request(api, options)  # an unknown API or option too
    install_handlers()  # SIGTERM ends our generate.py runs with us (they run in threads too)
    failed = False
    for api in args.apis:
        start = time.monotonic()
        try:
            with collector_paused():  # what a guide is made of survives until it is kept
                data = collect_guide(session, api, options, sections)
            problems = [problem.message for problem in (data.recommendation_problem,
                                                        data.dispatch_problem,
                                                        data.filter_problem) if problem]
        except KeyboardInterrupt:
            raise
        except Exception as error:  # noqa: BLE001 - said below; the next API still runs
            if os.environ.get("FMHA_DEBUG"):
                raise
            problems = [str(error).strip().splitlines()[0] if str(error).strip()
                        else type(error).__name__]
        seconds = time.monotonic() - start
        failed = failed or bool(problems)
        if args.format == "json":
            print(json.dumps({"api": api, "seconds": round(seconds, 3), "problems": problems}),
                  flush=True)
        else:
            print("%s: %s in %.1f s" % (api, "not complete" if problems else "prepared",
                                        seconds), flush=True)
        for message in problems:
            _say("%s: %s" % (api, message))
    return EXIT_FAILED if failed else 0


def _diff(session, args, options: Options) -> int:
    from .bump import compare_filter
    from .render.markdown import comparison_markdown
    from .render.sections.filter_diff import comparison_json

    old = _session(args, args.from_ck_root)
    comparison = compare_filter(old, session, args.api, args.filter, _options(args, old), options,
                                old_label=args.from_ck_root,
                                new_label=args.ck_root or str(session.ck_root))
    if args.format == "json":
        print(json.dumps(comparison_json(comparison), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(comparison_markdown(comparison))
    return 0 if comparison.migrated.verified else EXIT_FAILED


def _warn(lines: List[str]) -> None:
    for line in lines:
        _say("warning: " + line)


def _warn_unmet(recommendation) -> None:
    from .render.sections.workload import unmet_text

    _warn([unmet_text(recommendation)] if recommendation.needs_unmet else [])


def _warn_suspicious(model) -> None:
    from .guide import suspicious_problems

    _warn([problem.message for problem in suspicious_problems(model)])


def _generate(session, args, options: Options) -> int:
    model = session.model(args.api, options)
    for text in args.filter:
        check_filter_text(args.api, text, model.filter.cli_split, model.filter.api_split)
    if args.list_blobs:
        out = ["-l", str(_output_path(args.list_blobs, folder=False, flag="-l"))]
    else:
        out = ["-o", str(_output_path(args.output_dir, folder=True, flag="-o"))]
    run_driver(session.python, session.tree.fmha_dir, model.filter.api_split or "", args.filter,
               list(session.tree.request(args.api, options).argv(session.tree.supported_dests())),
               out, session.timeout, session.progress)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
