"""Start the expensive steps the pages will need before Sphinx reads them: the pages'
sources are scanned for our directives at ``env-before-read-docs``; the scan decides what
starts early, never what a page shows. How: ``docs/internals.md``.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from sphinx.util.parallel import parallel_available

from ..guide import DirectiveUse, steps_ahead
from .sphinx_glue import directive_options, get_session, logger

__all__ = ["scan_directives", "setup_ahead"]

#: The directives that need a CK tree (the warning-types table does not).
DIRECTIVES = ("fmha-kernel-guide", "fmha-kernel-set", "fmha-filter-check", "fmha-filename",
              "fmha-filter-playground", "fmha-api-list")

_RST = re.compile(r"^(?P<indent>[ \t]*)\.\.[ \t]+(?P<name>fmha-[\w-]+)[ \t]*::[ \t]*(?P<arg>.*)$")
_MYST = re.compile(r"^(?P<indent>[ \t]*)(?:`{3,}|~{3,}|:{3,})[ \t]*\{(?P<name>fmha-[\w-]+)\}"
                   r"[ \t]*(?P<arg>.*)$")
_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>.*)$")
#: what introduces an rST literal block: ``::`` ending a line, or a code directive
_LITERAL = re.compile(r"^(?:[ \t]*\.\.[ \t]+(?:code-block|code|sourcecode)::.*"
                      r"|(?![ \t]*\.\.\s).*\S::)[ \t]*$")
_OPTION = re.compile(r"^[ \t]*:(?P<key>[\w-]+):(?:[ \t]+(?P<value>.*))?$")

_LOCK = threading.Lock()
#: Sessions with steps started ahead in this process (stopped at the end of the reading).
_STARTED: List[Any] = []


def _text_of(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".ipynb":
        return text
    try:
        cells = json.loads(text).get("cells", [])
    except (ValueError, AttributeError):
        return ""
    return "\n".join("".join(cell.get("source", "")) if isinstance(cell.get("source"), list)
                     else str(cell.get("source", ""))
                     for cell in cells if cell.get("cell_type") == "markdown")


def scan_directives(text: str) -> Iterator[Tuple[str, str, Dict[str, str]]]:
    """(directive, argument, options) of each of this extension's directives in a
    reStructuredText or MyST source, in order; examples in code blocks (MyST code
    fences, rST literal blocks and ``code-block`` directives) are not directives."""
    lines = text.splitlines()
    directive_fences: List[str] = []  # the fences of the MyST directives open here
    code_fence = ""  # inside a code fence: the fence that closes it
    literal_indent = -1  # inside an rST literal block: the indent of its introduction
    for number, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if code_fence:
            if stripped.startswith(code_fence) and not stripped.strip(code_fence[0]):
                code_fence = ""
            continue
        if literal_indent >= 0:
            if not stripped or indent > literal_indent:
                continue
            literal_indent = -1
        found = _RST.match(line) or _MYST.match(line)
        if found is not None and found.group("name") in DIRECTIVES:
            yield (found.group("name"), found.group("arg").strip(),
                   _options(lines[number + 1:], myst=found.re is _MYST))
        fence = _FENCE.match(line)
        if fence is not None:
            mark, info = fence.group("fence"), fence.group("info").strip()
            if info.startswith("{"):
                directive_fences.append(mark)
            elif not info and directive_fences and directive_fences[-1][0] == mark[0] \
                    and len(mark) >= len(directive_fences[-1]):
                directive_fences.pop()
            elif mark[0] != ":":
                code_fence = mark
        elif found is None and _LITERAL.match(line):
            literal_indent = indent


def _options(lines: List[str], myst: bool) -> Dict[str, str]:
    """The ``:key: value`` lines that follow a directive's first line (MyST reads a
    value as YAML: a quoted one loses its quotes)."""
    options: Dict[str, str] = {}
    for line in lines:
        option = _OPTION.match(line)
        if option is None:
            break
        value = (option.group("value") or "").strip()
        if myst and len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        options[option.group("key")] = value
    return options


def _use(directive: str, argument: str, options: Dict[str, str], config: Any,
         session: Any) -> Optional[DirectiveUse]:
    try:
        effective = directive_options(config, session, options)
    except Exception:  # noqa: BLE001 - a bad option: the page reports it
        return None
    if directive == "fmha-filter-check":
        return DirectiveUse(directive, options.get("api", "").strip(), effective,
                            filter=(options.get("filter") or argument).strip())
    return DirectiveUse(directive, argument.split()[0] if argument else "", effective,
                        sections=options.get("sections"), needs=options.get("need") or "")


def _reads_in_parallel(app: Any) -> bool:
    """Whether Sphinx will read in forked processes (as ``Builder.read`` decides,
    without its warnings about extensions that do not say)."""
    if not parallel_available or getattr(app, "parallel", 0) <= 1:
        return False
    return all(getattr(ext, "parallel_read_safe", None) for ext in app.extensions.values())


def start_ahead(app: Any, env: Any, docnames: List[str]) -> None:
    try:
        found: List[Tuple[str, str, Dict[str, str]]] = []
        for docname in docnames:
            try:
                found.extend(scan_directives(_text_of(Path(env.doc2path(docname)))))
            except OSError:
                continue
        if not found:
            return
        try:
            session = get_session(app.config, Path(env.srcdir))
        except Exception:  # noqa: BLE001 - no tree, no interpreter...: the pages say so
            return
        uses = [use for use in (_use(name, argument, options, app.config, session)
                                for name, argument, options in found) if use]
        parallel = _reads_in_parallel(app)
        # Forked readers already analyse pages side by side: no worker interpreters then.
        steps = steps_ahead(session, uses, workers=not parallel)
        if not steps:
            return
        logger.verbose("[fmha] %d step(s) started ahead of the pages", len(steps))
        with _LOCK:
            _STARTED.append(session)
        session.start_ahead(steps, wait=parallel)
    except Exception as error:  # noqa: BLE001 - only an optimisation: the pages still work
        logger.verbose("[fmha] nothing started ahead of the pages: %s", error)


def stop_ahead(*_args: Any) -> None:
    """Stop what was started ahead and forget its failures (the reading is over)."""
    with _LOCK:
        sessions = list(_STARTED)
        _STARTED.clear()
    for session in sessions:
        session.stop_ahead()


def setup_ahead(app: Any) -> None:
    app.connect("env-before-read-docs", start_ahead)
    app.connect("env-updated", stop_ahead)
    app.connect("build-finished", stop_ahead)
