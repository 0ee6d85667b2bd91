"""Shared Sphinx glue: the per-process Session memo, problem reporting: every failure
is one located ``fmha.<kind>`` warning with the failed command and its stderr tail,
and a short admonition in the page; ``fmha_strict = True``: an error line, and the build
exits non-zero (problems kept per document, so an incremental build fails until fixed).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, Set, Tuple

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from ..cppapi.allocation import collector_paused
from ..errors import WarningType
from ..guide import open_session, suspicious_problems
from ..guide_data import Problem, problem_of
from ..locate import find_ck_root, forget_roots
from ..options import GENERATE_OPTIONS, OptionError, Options, merge_options, parse_options
from ..render.nodes import problem_node
from .config import fmha_config

logger = logging.getLogger("sphinxext_fmha")

__all__ = ["FmhaDirective", "OPTION_SPEC", "clear_sessions", "directive_options", "get_session",
           "logger", "record_problem", "session_at", "setup_strict"]

#: Options every directive takes (generate.py options; they override the config).
OPTION_SPEC = {spec.dest: directives.unchanged for spec in GENERATE_OPTIONS}

_LOCK = threading.Lock()
#: (ck_root, python, cache_dir, timeout) -> Session
_SESSIONS: Dict[Tuple[str, str, str, float], Any] = {}


def clear_sessions() -> None:
    """Forget every memoised Session and CK root (tests); stop what they run ahead."""
    with _LOCK:
        sessions = list(_SESSIONS.values())
        _SESSIONS.clear()
    forget_roots()
    for session in sessions:
        session.stop_ahead()


def directive_options(config: Any, session: Any, given: Dict[str, Any]) -> Options:
    """The options in effect for a directive (:meth:`FmhaDirective.session_and_options`)."""
    own = {k: given.get(k) for k in OPTION_SPEC}
    values = merge_options(fmha_config(config).options(), **own)
    origins = {k: k if own[k] not in (None, "") else "fmha_" + k for k in OPTION_SPEC}
    return parse_options(session.tree if session is not None else None, origins=origins,
                         **values)


def _progress(message: str) -> None:
    from ..process.progress import StepLine

    if isinstance(message, StepLine):  # a finished expensive step: shown unless -q
        logger.info(message)
    else:
        logger.verbose("[fmha] %s", message)


def _notice(kind: WarningType, message: str) -> None:
    """A warning that is not a failure (:mod:`~sphinxext_fmha.process.notices`)."""
    logger.warning(message, type="fmha", subtype=kind.value)


def get_session(config: Any, confdir: Path, srcdir: Path):
    """The Session for this configuration, one per (CK root, python, cache dir, timeout),
    renewed when the tree's codegen was written since (an undone edit must not bring
    back what was computed meanwhile)."""
    return session_at(config, find_ck_root(fmha_config(config).ck_root, srcdir))


def session_at(config: Any, root: Path):
    """:func:`get_session` for the tree at ``root`` (a filter check's ``:against:``)."""
    from ..process.notices import set_handler

    set_handler(_notice)
    settings = fmha_config(config)
    python = str(settings.python or sys.executable)
    cache_dir = Path(settings.cache_dir) if settings.cache_dir else None
    key = (str(root), python, str(cache_dir or ""), settings.timeout)
    with _LOCK:
        cached = _SESSIONS.get(key)
    if cached is not None and not cached.inputs.changed():
        return cached
    session = open_session(root, "fmha_python", python=python, cache_dir=cache_dir,
                           timeout=settings.timeout, progress=_progress)
    with _LOCK:
        cached = _SESSIONS.get(key)
        if cached is not None and cached.inputs.stamp == session.inputs.stamp:
            return cached
        _SESSIONS[key] = session
    return session


class FmhaDirective(SphinxDirective):
    """Base class: config + options -> :class:`Options`, problems -> warnings."""

    #: What the admonition says failed ("FMHA kernel guide", ...).
    what = "FMHA"

    def session_and_options(self):
        """The Session (this page now depends on its tree) and the options in effect: the
        configuration's, overridden by the directive's own, checked against the tree (a
        message names where a bad value came from: ``receipt`` or ``fmha_receipt``)."""
        srcdir = Path(self.env.srcdir)
        session = get_session(self.config, srcdir, srcdir)
        self.note_tree(session)
        return session, directive_options(self.config, session, self.options)

    def note_tree(self, session) -> None:
        """Rebuild this page when generate.py or any codegen file changes."""
        for path in session.dependencies():
            self.env.note_dependency(str(path))

    def report(self, problem: Problem, *, render: bool = True,
               error: bool = False) -> List[nodes.Node]:
        """Log ``problem`` (an error line in strict mode, or with ``error``: an input the
        directive cannot take); return the admonition to show."""
        node = problem_node("%s not available:" % self.what, _first_line(problem.message))
        self.set_source_info(node)
        self._log(problem.kind, "%s: %s" % (self.name, problem.details()), node, error)
        return [node] if render else []

    def warn(self, kind: WarningType, message: str) -> None:
        """A located warning that does not replace the directive's output."""
        node = nodes.paragraph()
        self.set_source_info(node)
        self._log(WarningType(kind), "%s: %s" % (self.name, message), node)

    def fmha_needs(self, session: Any, api: str, options: Options) -> List[Any]:
        """The directive's ``:need:`` (needs separated by ``;``), as the model of ``api``
        understands them; none without the option."""
        from ..verify.needs import split_needs

        raw = self.options.get("need")
        if raw is None:
            return []
        items = split_needs(raw)
        if not items:
            raise OptionError("need: no need given (e.g. :need: dtype=fp16,bf16; hdim=128)")
        return session.needs(api, items, options)

    def warn_unmet(self, recommendation: Any) -> None:
        """A located warning when the workload's values do not all exist together."""
        from ..render.sections.workload import unmet_text

        if recommendation is not None and recommendation.needs_unmet:
            self.warn(WarningType.NEED, "%s: %s" % (recommendation.api,
                                                    unmet_text(recommendation)))

    def warn_suspicious(self, model: Any) -> None:
        """Warn about a success that should not be trusted (an empty listing...)."""
        for problem in suspicious_problems(model):
            self.warn(problem.kind, problem.message)

    def _log(self, kind: WarningType, message: str, node: nodes.Node,
             error: bool = False) -> None:
        subtype = WarningType(kind).value
        strict = fmha_config(self.config).strict
        log = logger.error if strict or error else logger.warning
        log(message, location=node, type="fmha", subtype=subtype)
        if strict and not suppressed(self.config, subtype):
            source, line = self.get_source_info()
            record_problem(self.env, self.env.docname, "%s:%s: %s" % (source, line, message))

    def run(self) -> List[nodes.Node]:
        try:
            # a page's analysis and nodes survive it: no collector passes over them
            with collector_paused():
                return self.run_fmha()
        except Exception as exc:  # noqa: BLE001 - every failure is reported, located
            problem = problem_of(exc)
            # a need the API does not have is an error (it lists the valid ones)
            return self.report(problem, error=problem.kind == WarningType.NEED)

    def run_fmha(self) -> List[nodes.Node]:  # pragma: no cover - abstract
        raise NotImplementedError


def _first_line(text: str) -> str:
    """The first line of a message, without absolute paths (it goes into the page)."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else "unknown error"
    words = []
    for word in line.split(" "):
        if os.path.isabs(word.strip("'\",:;()")) and len(word) > 1:
            word = "<path>"
        words.append(word)
    return " ".join(words) + ("" if line.endswith(".") else ".") + " See the build log."


# --------------------------------------------------------------------------- strict

_ATTR = "fmha_problems"


def _problems(env: Any) -> Dict[str, List[str]]:
    return vars(env).setdefault(_ATTR, {})


def suppressed(config: Any, subtype: str) -> bool:
    """True when ``suppress_warnings`` silences ``fmha.<subtype>``."""
    wanted = getattr(config, "suppress_warnings", None) or []
    return "fmha" in wanted or ("fmha." + subtype) in wanted or "fmha.*" in wanted


def record_problem(env: Any, docname: str, text: str) -> None:
    """Remember one problem of ``docname`` (strict mode)."""
    _problems(env).setdefault(docname, []).append(text)


def _purge(app: Any, env: Any, docname: str) -> None:
    _problems(env).pop(docname, None)


def _merge(app: Any, env: Any, docnames: Set[str], other: Any) -> None:
    mine = _problems(env)
    for docname, texts in _problems(other).items():
        if docname in docnames:
            mine.setdefault(docname, []).extend(texts)


def _outdated(app: Any, env: Any, added: Set[str], changed: Set[str],
              removed: Set[str]) -> List[str]:
    if not fmha_config(app.config).strict:
        return []
    return sorted(d for d in _problems(env) if d not in removed and d in env.found_docs)


def _finished(app: Any, exception: Any) -> None:
    if exception is not None or not fmha_config(app.config).strict:
        return
    count = sum(len(texts) for texts in _problems(app.env).values())
    count += len(app.config.__dict__.get("_fmha_config_problems", []))
    if count:
        logger.error("fmha_strict: %d problem(s) reported above; the build fails", count)
        app.statuscode = 1


def setup_strict(app: Any) -> None:
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-get-outdated", _outdated)
    app.connect("build-finished", _finished)
