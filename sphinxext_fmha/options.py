"""The generate.py options the guides can set (:data:`GENERATE_OPTIONS`), validated before
any process runs (against the tree's own help where needed). A leaf: imports only :mod:`.errors`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .errors import FmhaError, WarningType

__all__ = ["FILTER_FLAG", "GENERATE_OPTIONS", "OptionSpec", "Options", "OptionError",
           "check_filter_text", "check_supported", "cli_flag", "flag_of", "known_receipts",
           "mask_choices", "parse_options"]


@dataclass(frozen=True)
class OptionSpec:
    dest: str
    flag: str
    long_flag: str


GENERATE_OPTIONS: Tuple[OptionSpec, ...] = (
    OptionSpec("targets", "--targets", "--targets"),
    OptionSpec("mask", "-m", "--mask"),
    OptionSpec("receipt", "-r", "--receipt"),
    OptionSpec("optdim", "--optdim", "--optdim"),
)
#: The ``-f`` option (a request's filter, not a guide option).
FILTER_FLAG = "-f"

_BY_DEST: Dict[str, OptionSpec] = {spec.dest: spec for spec in GENERATE_OPTIONS}


def flag_of(dest: str) -> str:
    """generate.py's flag for an option dest (``receipt`` -> ``-r``)."""
    return FILTER_FLAG if dest == "filter" else _BY_DEST[dest].flag


def cli_flag(dest: str) -> str:
    """The ``sphinxext-fmha`` CLI's flag for an option dest (``receipt`` -> ``--receipt``)."""
    return _BY_DEST[dest].long_flag


@dataclass(frozen=True)
class Options:
    """The generate.py options a model is built for (None: the tree's default)."""

    targets: Optional[str] = None
    mask: Optional[str] = None
    receipt: Optional[int] = None
    optdim: Optional[str] = None

    def given(self) -> Dict[str, object]:
        """dest -> value of the options that are set."""
        return {spec.dest: getattr(self, spec.dest) for spec in GENERATE_OPTIONS
                if getattr(self, spec.dest) is not None}


class OptionError(FmhaError):
    """An option or configuration value that cannot be used (checked before running)."""

    default_kind = WarningType.OPTION


def check_supported(requested: Iterable[str], supported: Iterable[str],
                    origins: Optional[Mapping[str, str]] = None) -> None:
    """:class:`OptionError` when a requested dest is not one of the tree's (``supported``)."""
    have = set(supported)
    missing = [dest for dest in requested if dest not in have]
    if not missing:
        return
    names = [(origins or {}).get(dest, dest) for dest in missing]
    flags = ", ".join(flag_of(dest) for dest in missing)
    raise OptionError("%s: this CK tree's generate.py has no option %s; remove it "
                      "(it has: %s)" % (", ".join(names), flags, ", ".join(sorted(have)) or "none"))


def mask_choices(help_text: str) -> List[str]:
    """Alternatives spelled ``a/b[/c]`` in generate.py's ``-m`` help text."""
    for word in re.findall(r"[A-Za-z_]+(?:/[A-Za-z_]+)+", help_text or ""):
        return word.split("/")
    return []


_RECEIPT_ENTRY = re.compile(r"(?:^|\n|\.)\s*(\d+)(?:\s*-\s*(\d+))?\s*:")


def known_receipts(help_text: str) -> List[Tuple[int, int]]:
    """The receipts generate.py's ``-r`` help lists (``0: ...``, ``100-199: ...``), as
    inclusive ranges; empty when the help lists none (then any integer is accepted)."""
    return [(int(low), int(high or low)) for low, high in _RECEIPT_ENTRY.findall(help_text or "")]


def _ranges_text(ranges: Sequence[Tuple[int, int]]) -> str:
    return ", ".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in ranges)


def _text(value: object) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return ",".join(str(v).strip() for v in value)
    text = str(value).strip()
    return text if text else None


#: dest -> (what each comma-separated item must match, what the value must be)
_FORMS = {"targets": (r"[A-Za-z0-9_]+", "a comma-separated list of GPU targets (e.g. gfx90a,gfx942)"),
          "mask": (r"[A-Za-z0-9_]+", "a mask mode (e.g. simplified, generic)"),
          "optdim": (r"-?\d+", "a comma-separated list of head dimensions (or -1)")}


def parse_options(tree: Any = None, *, targets: object = None,
                  mask: object = None, receipt: object = None, optdim: object = None,
                  origins: Optional[Mapping[str, str]] = None) -> Options:
    """Check option values and build :class:`Options` (or :class:`OptionError`, starting
    with where the value came from, ``origins``: ``fmha_receipt``, ``:receipt:``...);
    ``tree`` (its generate.py options and ``receipt_values()``) adds the tree's checks."""
    def name(dest: str) -> str:
        return (origins or {}).get(dest, dest)

    values: Dict[str, Any] = {}
    for dest, raw in (("targets", targets), ("mask", mask), ("receipt", receipt),
                      ("optdim", optdim)):
        text = values[dest] = _text(raw)
        if text is None:
            continue
        if dest == "receipt":
            try:
                values[dest] = int(text)
            except ValueError:
                raise OptionError("%s: %r is not an integer" % (name(dest), text)) from None
            continue
        item, form = _FORMS[dest]
        parts = [text] if dest == "mask" else [p.strip() for p in text.split(",")]
        if not all(re.fullmatch(item, p) for p in parts):
            raise OptionError("%s: %r is not %s" % (name(dest), text, form))
        values[dest] = ",".join(parts)
    options = Options(**values)
    if tree is not None:
        _check_against_tree(tree, options, name)
    return options


def _check_against_tree(tree: Any, options: Options, name) -> None:
    helps = {option.dest: option.help or "" for option in tree.options}
    given = options.given()
    check_supported(given, helps, {dest: name(dest) for dest in given})
    if options.mask is not None:
        choices = mask_choices(helps["mask"])
        if choices and options.mask not in choices:
            raise OptionError("%s: %r is not one of %s (from generate.py -m's help)"
                              % (name("mask"), options.mask, ", ".join(choices)))
    if options.receipt is not None:
        listed = known_receipts(helps["receipt"])
        reader = getattr(tree, "receipt_values", None)
        compared = list(reader()) if callable(reader) else []
        known = listed + compared
        if listed and not any(low <= options.receipt <= high for low, high in known):
            raise OptionError(
                "%s: %d is not a receipt this tree's generate.py knows; its -r help lists %s%s"
                % (name("receipt"), options.receipt, _ranges_text(listed),
                   "; its codegen also tests %s" % _ranges_text(compared) if compared else ""))


def check_filter_text(api: str, filter_text: str, cli_split: Optional[str],
                      api_split: Optional[str]) -> None:
    """Reject a ``-f`` pattern for one API that generate.py would cut up silently: at
    ``cli_split`` (one filter per API: a second part is dropped), or at an ``api_split``
    this API does not have (the separator would be matched literally). Both as observed."""
    if cli_split and cli_split in filter_text:
        first = filter_text.split(cli_split)[0]
        raise OptionError(
            "filter: %r contains %r, which generate.py splits -f on into one filter per API; "
            "for -a %s only %r would be used. Give one pattern (fnmatch has no "
            "alternatives: run generate.py once per pattern, or use the "
            "'sphinxext-fmha generate' driver)" % (filter_text, cli_split, api, first),
            kind=WarningType.FILTER)
    if "@" in filter_text and not api_split and (cli_split or "") != "@":
        raise OptionError(
            "filter: %r contains '@', but generate.py does not split %s's filter into "
            "sub-filters (only APIs with several kernel kinds per trait, such as bwd in "
            "newer trees, do); '@' would be matched literally and select nothing"
            % (filter_text, api), kind=WarningType.FILTER)
