"""The kernel model of one FMHA API: the public facade over the dataclasses of
``sphinxext_fmha.schema`` (one module per stage's artifact), their stable JSON form
(``to_json``/``from_json``: keys are attribute names but ``KernelType.class_name``,
written ``"class"``) and how a guide names tokens. Locations (``where``, ``defined_at``)
are ``path:line`` relative to generate.py's folder unless said otherwise."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import typing
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .schema.api import (
    ApiInfo,
    ApiModel,
    Baseline,
    DispatchInfo,
    FieldInfo,
    FilterPart,
    FilterSpec,
    Followers,
    Gap,
    GenerateOption,
    KernelType,
    PatternTrap,
    Receipt,
    Segment,
    SkipCondition,
)
from .schema.checks import (
    FilterCheck,
    FilterFacts,
    FilterMiss,
    PartnerSubset,
    PartnerWrite,
    SegmentBreakdown,
    TargetListing,
    TokenCount,
    UnwrittenMember,
)
from .schema.minimal_set import BuildCost, Decision, FilterRun, Need, Note, Recommendation, Workload
from .schema.tile_model import Factory, TileClass, TileField, TileRow, TileSource, TileTable, TileUse
from .schema.token_dispatch import ConditionGroup, TokenCounts, TokenDispatch

__all__ = [
    "NO_TOKEN", "natural", "token_list", "Gap", "Segment", "KernelType", "FieldInfo", "TileField",
    "TileClass", "Factory", "TileUse", "TileRow", "TileSource", "TileTable", "PatternTrap",
    "FilterPart", "Followers", "FilterSpec", "SkipCondition", "Receipt", "DispatchInfo", "Baseline",
    "GenerateOption", "ApiInfo", "ApiModel", "TokenCount", "SegmentBreakdown", "FilterMiss",
    "FilterCheck", "PartnerSubset", "PartnerWrite", "TargetListing", "UnwrittenMember", "FilterFacts",
    "Decision", "FilterRun", "Need",
    "Note", "Workload", "BuildCost", "Recommendation", "to_dict", "from_dict", "to_json",
    "from_json", "TokenCounts", "ConditionGroup", "TokenDispatch",
]

#: How a page names the empty token (a segment a kernel leaves out of its name).
NO_TOKEN = "(no token)"
_DIGITS = re.compile(r"(\d+)")


def natural(text: str) -> List[Tuple[int, int, str]]:
    """Sort key that orders numbers by value: ``_d32`` < ``_d64`` < ``_d128``."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in _DIGITS.split(text)]


def token_list(tokens: Sequence[str]) -> str:
    """Tokens as a sentence names them (the empty one as :data:`NO_TOKEN`)."""
    return ", ".join(t if t else NO_TOKEN for t in tokens)


_RENAMES = {"class_name": "class"}
_RENAMES_BACK = {v: k for k, v in _RENAMES.items()}


def to_dict(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {_RENAMES.get(f.name, f.name): to_dict(getattr(obj, f.name))
                for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    return obj


def _build(tp: Any, data: Any) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if data is None:
        return None
    if origin is Union:
        non_none = [a for a in args if a is not type(None)]
        return _build(non_none[0], data) if len(non_none) == 1 else data
    if origin in (list, List):
        return [_build(args[0], v) for v in data] if args else list(data)
    if origin in (dict, Dict):
        return {k: _build(args[1], v) for k, v in data.items()} if args else dict(data)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return from_dict(tp, data)
    return data


def from_dict(cls: type, data: Dict[str, Any]) -> Any:
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    return cls(**{name: _build(hints[name], value) for name, value in
                  ((_RENAMES_BACK.get(key, key), value) for key, value in data.items())
                  if name in hints})


def to_json(obj: Any, indent: Optional[int] = 2) -> str:
    return json.dumps(to_dict(obj), indent=indent, sort_keys=False, ensure_ascii=False)


def from_json(cls: type, text: str) -> Any:
    return from_dict(cls, json.loads(text))
