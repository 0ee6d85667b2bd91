"""A listing parsed with the model's grammar once, shared by the token facts, filter
checks and recommendation (a filtered listing reuses the unfiltered one's parses)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..analysis.analyze import grammars_of, parse_filename, split_filename
from ..model import ApiModel


@dataclass
class ParsedListing:
    """A listing parsed with the model's grammar: file -> (kernel type, tokens)."""

    files: List[str]
    parsed: Dict[str, Tuple[str, List[str]]]
    unparsed: List[str]
    #: (the model, file -> kernel name) once :meth:`kernel_names` computed them
    _names: Optional[Tuple[ApiModel, Dict[str, str]]] = field(default=None, repr=False,
                                                             compare=False)

    @classmethod
    def of(cls, model: ApiModel, files: Sequence[str],
           known: Optional[ParsedListing] = None) -> ParsedListing:
        """``known``: a listing parsed with the same model, whose files are not parsed again."""
        grammars = None
        parsed: Dict[str, Tuple[str, List[str]]] = {}
        unparsed: List[str] = []
        done = known.parsed if known is not None else {}
        failed = set(known.unparsed) if known is not None else set()
        for filename in files:
            if filename in done:
                parsed[filename] = done[filename]
                continue
            if filename not in failed:
                grammars = grammars or grammars_of(model)
                found = parse_filename(model, grammars, filename)
                if len(found) == 1:
                    parsed[filename] = (found[0][0].class_name, found[0][1])
                    continue
            unparsed.append(filename)
        return cls(list(files), parsed, unparsed)

    def per_type(self) -> Dict[str, int]:
        return dict(sorted(Counter(t for t, _ in self.parsed.values()).items()))

    def by_type(self) -> Dict[str, List[Tuple[str, List[str]]]]:
        """kernel type -> (file, tokens) of each of its parsed files, in listing order."""
        rows: Dict[str, List[Tuple[str, List[str]]]] = {}
        for filename, (kernel_type, tokens) in self.parsed.items():
            rows.setdefault(kernel_type, []).append((filename, tokens))
        return rows

    def kernel_name(self, model: ApiModel, filename: str) -> str:
        kernel_type = model.kernel_type(self.parsed[filename][0])
        return split_filename(filename, kernel_type.arch_suffixes) or filename

    def kernel_names(self, model: ApiModel) -> Dict[str, str]:
        """file -> :meth:`kernel_name` of every parsed file (once per model: every filter
        predicted against this listing needs them)."""
        if self._names is None or self._names[0] is not model:
            self._names = (model, {f: self.kernel_name(model, f) for f in self.parsed})
        return self._names[1]
