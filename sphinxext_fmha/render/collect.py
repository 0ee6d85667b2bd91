"""Gather what a guide shows from a :class:`~sphinxext_fmha.session.Session`.

Also: the guide's sections, option parsing/validation shared by the directives and the
CLI, and turning any failure into a :class:`Problem` (kind + message + command + stderr
tail) that the callers report.  No Sphinx, no docutils.
"""

from __future__ import annotations

import datetime
import os
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from ..analysis.analyze import AnalysisError, Options, UnknownApiError
from ..model import ApiModel, FilterCheck, Recommendation
from ..verify.token_facts import (
    TokenCounts,
    TokenDispatch,
    token_counts,
    token_dispatch,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..session import Session

__all__ = [
    "SECTIONS",
    "SECTION_TITLES",
    "RECOMMENDATION_SECTIONS",
    "OptionError",
    "Problem",
    "GuideData",
    "build_date",
    "collect_guide",
    "parse_options",
    "parse_sections",
    "problem_of",
    "source_rel",
    "token_counts",
]

#: (name, title) of every guide section, in order; numbers are 1-based positions.
SECTIONS: Tuple[Tuple[str, str], ...] = (
    ("types", "Kernel sub-types"),
    ("filename", "File name structure"),
    ("filter", "Filter mechanism"),
    ("fields", "Field reference"),
    ("minimal", "Recommended minimal set"),
    ("losses", "What you lose"),
    ("commands", "Filter commands"),
    ("counts", "Kernel counts"),
    ("tiles", "Tiles per architecture"),
    ("rules", "Skip conditions and receipts"),
    ("dispatch", "Dispatch"),
    ("gaps", "Gaps and checks"),
)
SECTION_TITLES = dict(SECTIONS)
#: Sections that need :meth:`Session.recommend`.
RECOMMENDATION_SECTIONS = ("minimal", "losses", "commands")

_ALIASES = {
    "sub-types": "types", "subtypes": "types", "kernel-types": "types",
    "names": "filename", "file-names": "filename", "diagram": "filename",
    "mechanism": "filter", "field": "fields", "reference": "fields",
    "recommended": "minimal", "recommendation": "minimal", "loss": "losses",
    "runs": "commands", "command": "commands", "count": "counts",
    "tile": "tiles", "skips": "rules", "receipts": "rules", "skip": "rules",
    "gap": "gaps", "checks": "gaps",
}


class OptionError(AnalysisError):
    """A directive/CLI option value that cannot be used (checked before running)."""


@dataclass
class Problem:
    """One failure, ready to be reported: ``kind`` is the warning subtype."""

    kind: str
    message: str
    command: str = ""
    stderr_tail: str = ""

    def details(self) -> str:
        """The message, the failed command and the tail of its stderr."""
        lines = [self.message.rstrip()]
        if self.command and self.command not in self.message:
            lines.append("command: " + self.command)
        if self.stderr_tail and self.stderr_tail.strip() not in self.message:
            lines.append("stderr (last lines):")
            lines.extend("    " + line for line in self.stderr_tail.rstrip().splitlines())
        return "\n".join(lines)


def problem_of(exc: BaseException) -> Problem:
    """Classify an exception raised while building a guide."""
    from ..analysis.observe import ProbeError
    from ..locate import CKRootNotFound
    from ..process.runner import GenerateError

    if isinstance(exc, CKRootNotFound):
        return Problem("ck-root", str(exc).splitlines()[0])
    if isinstance(exc, UnknownApiError):
        return Problem("api", str(exc))
    if isinstance(exc, OptionError):
        return Problem("option", str(exc))
    if isinstance(exc, AnalysisError):
        text = str(exc)
        return Problem("option" if " option" in text else "analysis", text)
    if isinstance(exc, GenerateError):
        text = str(exc)
        if text.startswith("invalid API name"):
            return Problem("api", text)
        if "has no option" in text:
            return Problem("option", text)
        return Problem("generate", text, exc.command, exc.stderr_tail)
    if isinstance(exc, ProbeError):
        return Problem("generate", str(exc), exc.command, exc.stderr_tail)
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return Problem("ck-root", "%s: %s" % (type(exc).__name__, exc))
    if isinstance(exc, SyntaxError):
        return Problem("analysis", "cannot read the CK tree's Python source: %s" % exc)
    return Problem("analysis", "%s: %s" % (type(exc).__name__, exc))


# --------------------------------------------------------------------------- options


def _text(value: object) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return ",".join(str(v).strip() for v in value)
    text = str(value).strip()
    return text if text else None


_TARGET_RE = re.compile(r"^[A-Za-z0-9_]+$")
_WORD_RE = re.compile(r"^[A-Za-z0-9_]+$")


def _mask_choices(help_text: str) -> List[str]:
    """Alternatives spelled ``a/b[/c]`` in generate.py's ``-m`` help text."""
    for word in re.findall(r"[A-Za-z_]+(?:/[A-Za-z_]+)+", help_text or ""):
        return word.split("/")
    return []


def parse_options(tree=None, *, targets: object = None, mask: object = None,
                  receipt: object = None, optdim: object = None) -> Options:
    """Check option values and build :class:`Options` (raises :class:`OptionError`).

    ``tree`` (an :class:`~sphinxext_fmha.analysis.analyze.Tree`) adds the checks that
    need the tree: the option exists in its generate.py, and ``mask`` is one of the
    alternatives its ``-m`` help lists.
    """
    targets_text = _text(targets)
    mask_text = _text(mask)
    receipt_text = _text(receipt)
    optdim_text = _text(optdim)
    receipt_value: Optional[int] = None
    if targets_text is not None:
        parts = [p.strip() for p in targets_text.split(",")]
        if not all(_TARGET_RE.match(p) for p in parts):
            raise OptionError("targets: %r is not a comma-separated list of GPU targets "
                              "(e.g. gfx90a,gfx942)" % targets_text)
        targets_text = ",".join(parts)
    if mask_text is not None and not _WORD_RE.match(mask_text):
        raise OptionError("mask: %r is not a mask mode (e.g. simplified, generic)" % mask_text)
    if receipt_text is not None:
        try:
            receipt_value = int(receipt_text)
        except ValueError:
            raise OptionError("receipt: %r is not an integer" % receipt_text) from None
    if optdim_text is not None:
        parts = [p.strip() for p in optdim_text.split(",")]
        if not all(re.fullmatch(r"-?\d+", p) for p in parts):
            raise OptionError("optdim: %r is not a comma-separated list of head dimensions "
                              "(or -1)" % optdim_text)
        optdim_text = ",".join(parts)
    options = Options(targets=targets_text, mask=mask_text, receipt=receipt_value,
                      optdim=optdim_text)
    if tree is not None:
        flags = {"targets": "--targets", "mask": "-m", "receipt": "-r", "optdim": "--optdim"}
        for dest, flag in flags.items():
            if getattr(options, dest) is not None and tree.option(dest) is None:
                have = ", ".join(sorted(o.dest for o in tree.options))
                raise OptionError("%s: this CK tree's generate.py has no %s option "
                                  "(it has: %s)" % (dest, flag, have))
        if mask_text is not None:
            choices = _mask_choices(tree.option("mask").help if tree.option("mask") else "")
            if choices and mask_text not in choices:
                raise OptionError("mask: %r is not one of %s (from generate.py -m's help)"
                                  % (mask_text, ", ".join(choices)))
    return options


def merge_options(base: Options, **overrides: object) -> Dict[str, object]:
    """Option values: the directive's own when given, else the configuration's."""
    values: Dict[str, object] = {}
    for name in ("targets", "mask", "receipt", "optdim"):
        value = overrides.get(name)
        values[name] = value if value not in (None, "") else getattr(base, name)
    return values


def parse_sections(spec: Union[str, Sequence[str], None]) -> List[str]:
    """Section names from ``"1,2,fields,5-8"`` (numbers, ranges, names or aliases);
    None: all."""
    if spec is None:
        return [name for name, _ in SECTIONS]
    items = spec if not isinstance(spec, str) else re.split(r"[,\s]+", spec)
    names: List[str] = []
    for raw in items:
        item = str(raw).strip().lower()
        if not item:
            continue
        if item == "all":
            names.extend(n for n, _ in SECTIONS if n not in names)
            continue
        span = re.fullmatch(r"(\d+)-(\d+)", item)
        if item.isdigit() or span:
            first, last = (int(span.group(1)), int(span.group(2))) if span else (int(item),) * 2
            for index in (first, last):
                if not 1 <= index <= len(SECTIONS):
                    raise OptionError("sections: %s is not a section number (1-%d)"
                                      % (index, len(SECTIONS)))
            if last < first:
                raise OptionError("sections: %s is an empty range" % item)
            names.extend(SECTIONS[i - 1][0] for i in range(first, last + 1)
                         if SECTIONS[i - 1][0] not in names)
            continue
        else:
            name = _ALIASES.get(item, item)
            if name not in SECTION_TITLES:
                raise OptionError("sections: unknown section %r (known: %s, or 1-%d)"
                                  % (item, ", ".join(n for n, _ in SECTIONS), len(SECTIONS)))
        if name not in names:
            names.append(name)
    if not names:
        raise OptionError("sections: no section given")
    return names


# --------------------------------------------------------------------------- data


def build_date() -> str:
    """``YYYY-MM-DD``: from ``SOURCE_DATE_EPOCH`` when set (reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        try:
            stamp = float(epoch)
        except ValueError:
            stamp = time.time()
    else:
        stamp = time.time()
    return datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).strftime("%Y-%m-%d")


def source_rel(model: ApiModel) -> str:
    """The API module relative to the 01_fmha folder: ``codegen/ops/fmha_fwd.py``."""
    source = model.source.replace("\\", "/")
    if "/codegen/" in source:
        return "codegen/" + source.split("/codegen/", 1)[1]
    return source


@dataclass
class GuideData:
    """Everything a guide renders (model, measured counts, recommendation)."""

    api: str
    options: Options
    model: ApiModel
    date: str
    token_counts: TokenCounts = field(default_factory=dict)
    token_dispatch: Optional[TokenDispatch] = None
    dispatch_reading: Optional[dict] = None
    mask_modes: Optional[Any] = None
    api_file: Optional[str] = None
    listing_command: str = ""
    recommendation: Optional[Recommendation] = None
    recommendation_problem: Optional[Problem] = None


def needs_dispatch_reading(sections: Sequence[str]) -> bool:
    """Whether these sections show what the API file and the mask modes say (fields:
    per-token conditions; rules: the mask-mode note; dispatch: entry points, reach)."""
    return bool({"fields", "rules", "dispatch"} & set(sections))


def collect_guide(session: "Session", api: str, options: Options = Options(), *,
                  recommend: bool = True, conditions: bool = True) -> GuideData:
    """Model + per-token counts (+ dispatch conditions, recommendation) of one API.

    Failures of the model raise; a recommendation that cannot be made is recorded as
    ``recommendation_problem`` (kind ``recommend`` when the feature is missing);
    dispatch conditions are shown when they can be read, and left out otherwise.
    """
    model = session.model(api, options)
    listing = session.runner.list_kernels(session.tree.request(api, options))
    data = GuideData(api=api, options=options, model=model, date=build_date(),
                     token_counts=token_counts(model, listing.files),
                     api_file=listing.api_file, listing_command=listing.command)
    if conditions and hasattr(session, "dispatch_reading"):
        try:
            reading = session.dispatch_reading(api, options)
        except Exception:  # noqa: BLE001 - optional: the column is left out
            reading = {}
        if reading:
            data.dispatch_reading = reading
            data.token_dispatch = token_dispatch(model, listing.files, reading)
    if conditions and hasattr(session, "mask_modes"):
        try:
            data.mask_modes = session.mask_modes(api, options)
        except Exception:  # noqa: BLE001 - optional: the note is left out
            data.mask_modes = None
    if recommend:
        try:
            data.recommendation = session.recommend(api, options)
        except (ImportError, NotImplementedError) as exc:
            data.recommendation_problem = Problem(
                "recommend", "the recommended minimal set is not available in this version "
                "of sphinxext-fmha (%s: %s)" % (type(exc).__name__, exc))
        except Exception as exc:  # noqa: BLE001 - reported, never a traceback
            problem = problem_of(exc)
            problem.message = "cannot make the recommended minimal set: " + problem.message
            data.recommendation_problem = problem
    return data


def check_filter(session: "Session", api: str, filter: str,
                 options: Options = Options()) -> FilterCheck:
    """:meth:`Session.check` (kept here so callers need one import)."""
    return session.check(api, filter, options)
