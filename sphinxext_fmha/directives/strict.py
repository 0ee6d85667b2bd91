"""``fmha_strict = True``: every problem is a located error line and the build exits
non-zero; problems are kept per document in the environment, so an incremental build fails
until they are fixed.
"""

from __future__ import annotations

from typing import Any, Dict, List, Set

from sphinx.util import logging

from .config import fmha_config

__all__ = ["record_problem", "setup_strict"]

logger = logging.getLogger("sphinxext_fmha")

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
