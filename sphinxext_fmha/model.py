"""The kernel model of one FMHA API: plain dataclasses, JSON round-trippable.

Everything here is data derived from a CK tree; nothing in this module knows about
Sphinx or about any particular CK version. ``to_json``/``from_json`` give a stable JSON
form used by the CLI (``sphinxext-fmha analyze --format json``), the caches and the tests.

:class:`ApiModel` is the public JSON schema: each dataclass becomes a JSON object whose
keys are the attribute names (one exception: :attr:`KernelType.class_name` is written
``"class"``); lists stay lists, dicts stay objects, ``None`` is ``null``. File locations
(``where``, ``defined_at``, ``source``) are ``path:line`` relative to the folder of
``generate.py`` unless said otherwise.

This module is the public facade (the JSON schema page documents it); the classes live
in ``sphinxext_fmha.schema``, one module per stage's artifact.
"""

from __future__ import annotations

from .schema.api import ApiInfo, ApiModel, Baseline, DispatchInfo, GenerateOption, Receipt, SkipCondition
from .schema.checks import (
    FilterCheck,
    FilterFacts,
    FilterMiss,
    PartnerWrite,
    SegmentBreakdown,
    TargetListing,
    TokenCount,
)
from .schema.codec import from_dict, from_json, to_dict, to_json
from .schema.filters import FilterPart, FilterSpec, Followers, PatternTrap
from .schema.kernels import FieldInfo, Gap, KernelType, Segment
from .schema.minimal_set import BuildCost, Decision, FilterRun, Need, Note, Recommendation, Workload
from .schema.names import NO_TOKEN, natural, token_list
from .schema.tile_model import Factory, TileClass, TileField, TileRow, TileSource, TileTable, TileUse
from .schema.token_dispatch import ConditionGroup, TokenCounts, TokenDispatch

__all__ = [
    "NO_TOKEN",
    "natural",
    "token_list",
    "Gap",
    "Segment",
    "KernelType",
    "FieldInfo",
    "TileField",
    "TileClass",
    "Factory",
    "TileUse",
    "TileRow",
    "TileSource",
    "TileTable",
    "PatternTrap",
    "FilterPart",
    "Followers",
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
    "FilterMiss",
    "FilterCheck",
    "PartnerWrite",
    "TargetListing",
    "FilterFacts",
    "Decision",
    "FilterRun",
    "Need",
    "Note",
    "Workload",
    "BuildCost",
    "Recommendation",
    "to_dict",
    "from_dict",
    "to_json",
    "from_json",
    "TokenCounts",
    "ConditionGroup",
    "TokenDispatch",
]
