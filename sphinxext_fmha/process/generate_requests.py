"""What the runner is asked for and what it returns: one generate.py request (its
options as argv), a driver run for several filters, a listing and a write-mode result.
No Sphinx imports here."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

from ..errors import WarningType
from ..options import GENERATE_OPTIONS, OptionError, check_supported, flag_of
from .launch import GenerateError

__all__ = ["GenerateRequest", "DriverRun", "ListingResult", "ApiFileResult"]

#: Request fields that become generate.py flags, in argv order (see ``options.py``).
_REQUEST_FIELDS = ("filter",) + tuple(spec.dest for spec in GENERATE_OPTIONS)


@dataclass(frozen=True)
class GenerateRequest:
    """One generate.py invocation (without its output option).

    ``filter`` is passed verbatim to ``-f`` ("" = no ``-f``); the other options
    are omitted when None, so generate.py's own defaults apply.
    """

    api: str
    filter: str = ""
    targets: Optional[str] = None
    mask: Optional[str] = None
    receipt: Optional[int] = None
    optdim: Optional[str] = None

    def requested_options(self) -> List[str]:
        """argparse dests this request needs besides the API."""
        return [name for name in _REQUEST_FIELDS if getattr(self, name) not in (None, "")]

    def argv(self, options_supported: Optional[Set[str]] = None) -> List[str]:
        """generate.py arguments, e.g. ``['-a', 'fwd', '-f', '*d64*']``.

        ``options_supported``: the tree's argparse dests (see
        :meth:`sphinxext_fmha.analysis.analyze.Tree.supported_dests`); a requested
        option missing there raises :class:`GenerateError` instead of being dropped.
        None: no check.
        """
        if not self.api or not re.fullmatch(r"[A-Za-z0-9_]+", self.api):
            raise GenerateError(f"invalid API name {self.api!r} (one API per request)",
                                kind=WarningType.API)
        requested = self.requested_options()
        if options_supported is not None:
            try:
                check_supported(requested, options_supported)
            except OptionError as error:
                raise GenerateError(str(error), kind=WarningType.OPTION) from None
        args = ["-a", self.api]
        for name in requested:
            args += [flag_of(name), str(getattr(self, name))]
        return args

    def as_dict(self) -> Dict[str, object]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class DriverRun:
    """One driver run (``batch_script.py``): generate.py once for the union of ``filters``.

    ``request``: the API and options (its ``filter`` is ""); ``separator``: the API's
    sub-filter separator ('' for none)."""

    request: GenerateRequest
    separator: str
    filters: Tuple[str, ...]

    def as_dict(self) -> Dict[str, object]:
        return {"request": self.request.as_dict(), "separator": self.separator,
                "filters": list(self.filters)}


@dataclass
class ListingResult:
    """``generate.py -l``: the kernel ``.cpp`` files it would write."""

    command: str
    files: List[str]
    count: int
    seconds: float
    from_cache: bool = False
    api_file: Optional[str] = None
    request: Optional[GenerateRequest] = None


@dataclass
class ApiFileResult:
    """``generate.py -o``: the dispatch file's text and the kernels written.

    ``kernel_traits`` maps each kernel file to the normalised trait key(s) it
    specialises (:func:`~sphinxext_fmha.cppapi.matching.kernel_trait_key`);
    ``kernel_bytes`` each kernel file to its size and ``api_bytes`` is the dispatch
    file's, as written (empty / 0 when not measured).
    """

    command: str
    api_file: str
    text: str
    kernel_files: List[str]
    kernel_traits: Dict[str, str]
    seconds: float
    from_cache: bool = False
    request: Optional[GenerateRequest] = None
    kernel_bytes: Dict[str, int] = dataclasses.field(default_factory=dict)
    api_bytes: int = 0

    @property
    def count(self) -> int:
        return len(self.kernel_files)
