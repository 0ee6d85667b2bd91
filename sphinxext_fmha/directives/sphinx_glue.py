"""Shared Sphinx glue. The ``fmha_*`` configuration: one typed object (as MyST-Parser's
``MdParserConfig``) validated once at ``config-inited``; a bad value is one ``fmha.config``
warning and its default is used. The per-process Session memo. Problems: every failure is
one located ``fmha.<kind>`` warning (with the failed command and its stderr tail) and a short
admonition in the page; ``fmha_strict = True``: an error line, and the build exits non-zero
(problems kept per document, so an incremental build fails until fixed).
"""

from __future__ import annotations

import math
import os
import sys
import threading
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePath
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from ..cppapi.allocation import collector_paused
from ..errors import WarningType
from ..guide import collect_guide, open_session, suspicious_problems
from ..guide_data import GuideData, Problem, problem_of
from ..locate import find_ck_root, forget_roots
from ..options import GENERATE_OPTIONS, OptionError, Options, parse_options
from ..process.cache import cache_dir_problem
from ..render.nodes import blocks_to_nodes, problem_node

logger = logging.getLogger("sphinxext_fmha")

__all__ = ["ConfigProblem", "FmhaConfig", "FmhaDirective", "OPTION_SPEC", "add_config_values",
           "clear_sessions", "directive_options", "fmha_config", "get_session", "logger",
           "read_config", "setup_strict", "validate_config"]

_PATH_TYPES = (str, type(Path()), PurePath, type(None))


class ConfigProblem(ValueError):
    """A configuration value that cannot be used; ``kind`` is its warning subtype."""

    def __init__(self, message: str, kind: WarningType = WarningType.CONFIG) -> None:
        super().__init__(message)
        self.kind = kind


def _path(value: Any, confdir: Path) -> Optional[str]:
    if value is None or str(value).strip() == "":
        return None
    path = Path(os.path.expanduser(str(value)))
    return str(path if path.is_absolute() else Path(confdir) / path)


def _cache_dir(value: Any, confdir: Path) -> Optional[str]:
    path = _path(value, confdir)
    problem = cache_dir_problem(Path(path)) if path is not None else None
    if problem:
        raise ConfigProblem("fmha_cache_dir: %s; the default cache is used instead" % problem,
                            WarningType.CACHE)
    return path


def _timeout(value: Any, confdir: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigProblem("fmha_timeout: %r is not a number of seconds" % (value,))
    if not value > 0 or math.isinf(value):
        raise ConfigProblem("fmha_timeout: %r must be a number of seconds greater than 0"
                            % (value,))
    return float(value)


def _strict(value: Any, confdir: Path) -> bool:
    if not isinstance(value, bool):
        raise ConfigProblem("fmha_strict: %r is not True or False" % (value,))
    return value


def _generate_option(name: str, value: Any) -> Any:
    try:
        options = parse_options(**{name: value}, origins={name: "fmha_" + name})
    except OptionError as error:
        raise ConfigProblem("%s; the tree's default is used instead" % error) from None
    return getattr(options, name)


def _spec(default: Any, rebuild: str, types: Tuple[type, ...],
          validate: Optional[Callable[[Any, Path], Any]] = None) -> Any:
    """A value's default, rebuild, types and validator (none: a generate.py option's)."""
    return field(default=default, metadata={"rebuild": rebuild, "types": types,
                                            "validate": validate})


@dataclass(frozen=True)
class FmhaConfig:
    """The validated ``fmha_*`` values (the field name without ``fmha_``)."""

    ck_root: Optional[str] = _spec(None, "env", _PATH_TYPES, _path)
    targets: Optional[str] = _spec(None, "env", (str, list, tuple, type(None)))
    mask: Optional[str] = _spec(None, "env", (str, type(None)))
    receipt: Optional[int] = _spec(None, "env", (int, str, type(None)))
    optdim: Optional[str] = _spec(None, "env", (str, int, list, tuple, type(None)))
    cache_dir: Optional[str] = _spec(None, "", _PATH_TYPES, _cache_dir)  # (another cache: no rebuild)
    # (an interpreter's name is looked up on PATH: never made absolute)
    python: Optional[str] = _spec(None, "env", (str, type(None)),
                                  lambda value, _confdir: str(value) if str(value or "").strip() else None)
    timeout: float = _spec(900, "env", (int, float), _timeout)
    strict: bool = _spec(False, "env", (bool,), _strict)

    def options(self) -> Options:
        """The generate.py options every directive starts from."""
        return Options(targets=self.targets, mask=self.mask, receipt=self.receipt,
                       optdim=self.optdim)


def add_config_values(app: Any) -> None:
    """Register every ``fmha_*`` value with Sphinx."""
    for item in fields(FmhaConfig):
        app.add_config_value("fmha_" + item.name, item.default, item.metadata["rebuild"],
                             types=item.metadata["types"])


def read_config(config: Any, confdir: Path) -> Tuple[FmhaConfig, Dict[str, ConfigProblem]]:
    """Validate every ``fmha_*`` value; return the config and the problems (by name)."""
    values: Dict[str, Any] = {}
    problems: Dict[str, ConfigProblem] = {}
    for item in fields(FmhaConfig):
        raw = getattr(config, "fmha_" + item.name, item.default)
        try:
            validate = item.metadata["validate"]
            values[item.name] = (validate(raw, Path(confdir)) if validate
                                 else _generate_option(item.name, raw))
        except ConfigProblem as problem:
            problems["fmha_" + item.name] = problem
            values[item.name] = item.default
    return FmhaConfig(**values), problems


def validate_config(app: Any, config: Any) -> None:
    """``config-inited``: validate once, warn about each bad value, keep the result."""
    result, problems = read_config(config, Path(app.confdir))
    log = logger.error if result.strict else logger.warning
    for problem in problems.values():
        log("%s", problem, type="fmha", subtype=problem.kind.value)
    # the normalised values (absolute paths...) are what Sphinx compares across builds
    for item in fields(FmhaConfig):
        setattr(config, "fmha_" + item.name, getattr(result, item.name))
    config.__dict__["_fmha_config"] = result
    config.__dict__["_fmha_config_problems"] = list(problems.values())


def fmha_config(config: Any) -> FmhaConfig:
    """The validated configuration (validated on first use when ``config-inited`` did not
    run, as in tests that build a config by hand)."""
    cached = config.__dict__.get("_fmha_config") if hasattr(config, "__dict__") else None
    if cached is None:
        cached, _problems = read_config(config, Path(getattr(config, "confdir", ".") or "."))
    return cached


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
    """The directive's own options, else the configuration's, checked against the tree (a
    message names where a bad value came from: ``receipt`` or ``fmha_receipt``)."""
    base = fmha_config(config).options()
    own = {k: given.get(k) for k in OPTION_SPEC if given.get(k) not in (None, "")}
    return parse_options(session.tree if session is not None else None,
                         origins={k: k if k in own else "fmha_" + k for k in OPTION_SPEC},
                         **{k: own.get(k, getattr(base, k)) for k in OPTION_SPEC})


def _progress(message: str) -> None:
    from ..process.progress import StepLine

    if isinstance(message, StepLine):  # a finished expensive step: shown unless -q
        logger.info(message)
    else:
        logger.verbose("[fmha] %s", message)


def _notice(kind: WarningType, message: str) -> None:
    """A warning that is not a failure (:mod:`~sphinxext_fmha.process.notices`)."""
    logger.warning(message, type="fmha", subtype=kind.value)


def get_session(config: Any, srcdir: Path, root: Optional[Path] = None):
    """The Session for this configuration (``root``: of that tree, a filter check's
    ``:against:``), one per (CK root, python, cache dir, timeout), renewed when the tree's
    codegen was written since (an undone edit must not bring back what was computed meanwhile)."""
    from ..process.notices import set_handler

    settings = fmha_config(config)
    root = root or find_ck_root(settings.ck_root, srcdir)
    set_handler(_notice)
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
        """The Session (this page now depends on its tree) and the options in effect."""
        session = get_session(self.config, Path(self.env.srcdir))
        self.note_tree(session)
        return session, directive_options(self.config, session, self.options)

    def located(self, made: List[nodes.Node]) -> List[nodes.Node]:
        """``made``, each node with this directive's source and line."""
        for node in made:
            self.set_source_info(node)
        return made

    def contained(self, classes: List[str], blocks: List[Any]) -> List[nodes.Node]:
        """``blocks`` as nodes in one located container of ``classes``."""
        container = nodes.container(classes=classes)
        container.extend(blocks_to_nodes(blocks))
        return self.located([container])

    def note_tree(self, session) -> None:
        """Rebuild this page when generate.py or any codegen file changes."""
        for path in session.dependencies():
            self.env.note_dependency(str(path))

    def report(self, problem: Problem, *, render: bool = True,
               error: bool = False) -> List[nodes.Node]:
        """Log ``problem`` (``error``: an input the directive cannot take); the admonition."""
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
        """The directive's ``:need:`` (``;``-separated), as the model of ``api`` reads them."""
        from ..verify.needs import split_needs

        raw = self.options.get("need")
        if raw is None:
            return []
        items = split_needs(raw)
        if not items:
            raise OptionError("need: no need given (e.g. :need: dtype=fp16,bf16; hdim=128)")
        return session.needs(api, items, options)

    def guide_of(self, names: List[str], what: str) -> GuideData:
        """The guide of the argument's API in ``names`` for the ``:need:``."""
        api = self.arguments[0].strip()
        session, options = self.session_and_options()
        needs = self.fmha_needs(session, api, options)
        logger.verbose("[fmha] %s: %s for %s", self.env.docname, what, api)
        return collect_guide(session, api, options, names, needs)

    def warn_unmet(self, recommendation: Any) -> None:
        from ..render.sections.workload import unmet_text

        if recommendation is not None and recommendation.needs_unmet:
            self.warn(WarningType.NEED, "%s: %s" % (recommendation.api,
                                                    unmet_text(recommendation)))

    def warn_suspicious(self, model: Any) -> None:
        for problem in suspicious_problems(model):
            self.warn(problem.kind, problem.message)

    def _log(self, kind: WarningType, message: str, node: nodes.Node,
             error: bool = False) -> None:
        subtype = WarningType(kind).value
        strict = fmha_config(self.config).strict
        log = logger.error if strict or error else logger.warning
        log(message, location=node, type="fmha", subtype=subtype)
        silenced = {"fmha", "fmha.*", "fmha." + subtype} & set(self.config.suppress_warnings or [])
        if strict and not silenced:
            source, line = self.get_source_info()
            _problems(self.env).setdefault(self.env.docname, []).append(
                "%s:%s: %s" % (source, line, message))

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
    words = ["<path>" if os.path.isabs(word.strip("'\",:;()")) and len(word) > 1 else word
             for word in line.split(" ")]
    return " ".join(words) + ("" if line.endswith(".") else ".") + " See the build log."


# --------------------------------------------------------------------------- strict

_ATTR = "fmha_problems"


def _problems(env: Any) -> Dict[str, List[str]]:
    return vars(env).setdefault(_ATTR, {})


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
