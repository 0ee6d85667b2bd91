"""The kernel model of one FMHA API: plain dataclasses, JSON round-trippable.

Everything here is data derived from a CK tree; nothing in this module knows about
Sphinx or about any particular CK version. ``to_json``/``from_json`` give a stable,
sorted JSON form used by the CLI, the caches and the tests.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

__all__ = [
    "Gap",
    "Segment",
    "KernelType",
    "FieldInfo",
    "TileField",
    "TileClass",
    "Factory",
    "FilterPart",
    "FilterSpec",
    "SkipCondition",
    "Receipt",
    "DispatchInfo",
    "Baseline",
    "GenerateOption",
    "ApiInfo",
    "ApiModel",
    "TokenCount",
    "SegmentBreakdown",
    "FilterCheck",
    "Decision",
    "FilterRun",
    "Recommendation",
    "to_dict",
    "from_dict",
    "to_json",
    "from_json",
]


@dataclass
class Gap:
    """Something the analysis could not determine; never guessed silently."""

    what: str
    where: str = ""
    why: str = ""


@dataclass
class Segment:
    """One labelled part of a kernel name.

    ``tokens`` maps the exact text the segment contributes (leading separator
    included, possibly ``""`` for absent-when-off features) to its meaning.
    ``values`` maps the same tokens to the field values that produce them, one
    dict ``{field path: value}`` per distinct combination seen.
    """

    label: str
    fields: List[str] = field(default_factory=list)
    tokens: Dict[str, str] = field(default_factory=dict)
    values: Dict[str, List[Dict[str, str]]] = field(default_factory=dict)
    literal: bool = False


@dataclass
class KernelType:
    """A kernel sub-type: a codegen class whose objects become ``.cpp`` files."""

    class_name: str
    frozen: bool
    filter_position: Optional[int]
    count: int
    arch_suffixes: List[str] = field(default_factory=list)
    segments: List[Segment] = field(default_factory=list)
    example: str = ""
    defined_at: str = ""
    description: str = ""


@dataclass
class FieldInfo:
    """A field of a kernel object that reaches the kernel name."""

    path: str
    kernel_types: List[str] = field(default_factory=list)
    segment: str = ""
    values: List[str] = field(default_factory=list)
    comment: str = ""
    defined_at: str = ""
    symbol_map: str = ""
    cpp_symbols: Dict[str, str] = field(default_factory=dict)
    hard_coded: List[str] = field(default_factory=list)
    category: str = ""


@dataclass
class TileField:
    name: str
    comment: str = ""


@dataclass
class TileClass:
    class_name: str
    defined_at: str = ""
    imported_from: str = ""
    fields: List[TileField] = field(default_factory=list)
    name_source: str = ""
    optional_parts: List[str] = field(default_factory=list)


@dataclass
class Factory:
    class_name: str
    bases: List[str] = field(default_factory=list)
    arch: str = ""
    defined_at: str = ""
    selected_by: str = ""
    dtypes: List[str] = field(default_factory=list)
    unsupported_dtypes: List[str] = field(default_factory=list)
    tiles: Dict[str, Dict[str, List[str]]] = field(default_factory=dict)


@dataclass
class FilterPart:
    """One ``api_split``-separated part of an API's filter.

    ``missing_becomes``/``empty_becomes``: the pattern fnmatch receives when the part
    is missing / given but empty; None: the part is then not applied at all.
    """

    position: int
    applies_to: List[str] = field(default_factory=list)
    missing_becomes: Optional[str] = None
    empty_becomes: Optional[str] = None


@dataclass
class FilterSpec:
    """How ``generate.py -f`` reaches fnmatch for this API, as observed.

    ``when_empty``: kernel class -> the pattern fnmatch receives when this API's
    filter text is empty (``-f ''``, or nothing before the first ``cli_split``);
    None: not applied.  ``fnmatch_lowercases``/``fnmatch_backslashes``: what
    ``os.path.normcase`` does in the interpreter that runs generate.py.
    """

    cli_split: Optional[str] = None
    api_split: Optional[str] = None
    parts: List[FilterPart] = field(default_factory=list)
    empty_filter: str = ""
    drops: str = "kernel"
    unfiltered_types: List[str] = field(default_factory=list)
    source: List[str] = field(default_factory=list)
    when_empty: Dict[str, Optional[str]] = field(default_factory=dict)
    fnmatch_lowercases: bool = False
    fnmatch_backslashes: bool = False


@dataclass
class SkipCondition:
    source: str
    reading: str = ""
    where: str = ""
    kind: str = "continue"


@dataclass
class Receipt:
    value: str
    label: str = ""
    conditions: List[str] = field(default_factory=list)
    reading: str = ""
    where: str = ""


@dataclass
class DispatchInfo:
    mechanism: str = ""
    where: str = ""
    order: List[str] = field(default_factory=list)
    sorts: List[str] = field(default_factory=list)
    padding_order: str = ""
    unreachable: List[Dict[str, str]] = field(default_factory=list)


@dataclass
class Baseline:
    count: int = 0
    parsed: int = 0
    unparsed: List[str] = field(default_factory=list)
    ambiguous: List[str] = field(default_factory=list)


@dataclass
class GenerateOption:
    """One argparse option of generate.py."""

    flags: List[str]
    dest: str
    default: Optional[str] = None
    help: str = ""


@dataclass
class ApiInfo:
    """An API found in ``codegen/ops`` and/or in generate.py's handler table."""

    name: str
    module: str
    source: str
    in_generate: bool = True


@dataclass
class ApiModel:
    api: str
    source: str
    options: Dict[str, Any] = field(default_factory=dict)
    kernel_types: List[KernelType] = field(default_factory=list)
    fields: List[FieldInfo] = field(default_factory=list)
    tiles: List[TileClass] = field(default_factory=list)
    factories: List[Factory] = field(default_factory=list)
    filter: FilterSpec = field(default_factory=FilterSpec)
    enumeration: Dict[str, Any] = field(default_factory=dict)
    skip_conditions: List[SkipCondition] = field(default_factory=list)
    receipts: List[Receipt] = field(default_factory=list)
    dispatch: DispatchInfo = field(default_factory=DispatchInfo)
    checks: Dict[str, Any] = field(default_factory=dict)
    gaps: List[Gap] = field(default_factory=list)
    baseline: Baseline = field(default_factory=Baseline)

    def kernel_type(self, class_name: str) -> KernelType:
        for kernel_type in self.kernel_types:
            if kernel_type.class_name == class_name:
                return kernel_type
        raise KeyError(class_name)


@dataclass
class TokenCount:
    """How many kernels carry one token of one segment, before and after a filter."""

    token: str
    meaning: str = ""
    baseline: int = 0
    selected: int = 0


@dataclass
class SegmentBreakdown:
    kernel_type: str
    segment: str
    counts: List[TokenCount] = field(default_factory=list)
    kept: List[str] = field(default_factory=list)
    dropped: List[str] = field(default_factory=list)
    side_effect: bool = False


@dataclass
class FilterCheck:
    """What one ``generate.py -f`` selects, measured and predicted."""

    api: str
    filter: str
    command: str
    count: int = 0
    per_type: Dict[str, int] = field(default_factory=dict)
    baseline_count: int = 0
    baseline_per_type: Dict[str, int] = field(default_factory=dict)
    breakdown: List[SegmentBreakdown] = field(default_factory=list)
    side_effects: List[str] = field(default_factory=list)
    predicted: int = 0
    predicted_per_type: Dict[str, int] = field(default_factory=dict)
    verified: bool = False
    notes: List[str] = field(default_factory=list)
    files: List[str] = field(default_factory=list)
    dispatch_checked: bool = False
    dispatch_unmatched: int = 0
    dispatch_unreached: List[str] = field(default_factory=list)
    dispatch_order: List[str] = field(default_factory=list)


@dataclass
class Decision:
    """Keep/drop advice for one filterable segment of one kernel sub-type."""

    kernel_type: str
    segment: str
    fields: List[str] = field(default_factory=list)
    category: str = "other"
    keep: List[str] = field(default_factory=list)
    drop: List[str] = field(default_factory=list)
    reason: str = ""
    losses: Dict[str, str] = field(default_factory=dict)


@dataclass
class FilterRun:
    filter: str
    command: str
    count: int = 0
    verified: bool = False


@dataclass
class Recommendation:
    api: str
    decisions: List[Decision] = field(default_factory=list)
    runs: List[FilterRun] = field(default_factory=list)
    keep_count: int = 0
    union_count: int = 0
    verified: bool = False
    merge_command: str = ""
    merge_caution: str = ""
    driver_command: str = ""
    driver_verified: bool = False
    counts: Dict[str, Dict[str, int]] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)


# JSON: the public key for KernelType.class_name is "class".
_RENAMES = {"class_name": "class"}
_RENAMES_BACK = {v: k for k, v in _RENAMES.items()}


def to_dict(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            _RENAMES.get(f.name, f.name): to_dict(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
        }
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    return obj


def _hints(cls: type) -> Dict[str, Any]:
    return typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))


def _build(tp: Any, data: Any) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if data is None:
        return None
    if origin is Union:
        non_none = [a for a in args if a is not type(None)]
        return _build(non_none[0], data) if len(non_none) == 1 else data
    if origin in (list, List):
        return [_build(args[0], v) for v in data] if args else list(data)
    if origin in (dict, Dict):
        return {k: _build(args[1], v) for k, v in data.items()} if args else dict(data)
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, data)
    return data


def from_dict(cls: type, data: Dict[str, Any]) -> Any:
    hints = _hints(cls)
    kwargs = {}
    for key, value in data.items():
        name = _RENAMES_BACK.get(key, key)
        if name in hints:
            kwargs[name] = _build(hints[name], value)
    return cls(**kwargs)


def to_json(obj: Any, indent: Optional[int] = 2) -> str:
    return json.dumps(to_dict(obj), indent=indent, sort_keys=False, ensure_ascii=False)


def from_json(cls: type, text: str) -> Any:
    return from_dict(cls, json.loads(text))
