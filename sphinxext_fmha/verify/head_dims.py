"""Per head-dim token, the (hdim_q, hdim_v) bounds of the dispatch buckets its kernels
are tried under (``_d192``: ``t.hdim_q <= 192 && t.hdim_v <= 128``)."""

from __future__ import annotations

import re
from typing import Dict, List, Mapping, Optional, Tuple

from ..analysis.grammar import short_name
from ..model import ApiModel

#: (kernel class, segment index) -> token -> its buckets' (hdim_q, hdim_v) bounds
Buckets = Dict[Tuple[str, int], Dict[str, List[Tuple[int, Optional[int]]]]]

_BOUND = re.compile(r"^(?:t|a)\.(hdim_q|hdim_v)\s*<=\s*(\d+)$")


def head_dim_buckets(model: ApiModel, parsed: Mapping[str, Tuple[str, List[str]]],
                     reading: Mapping) -> Buckets:
    """See the module docstring; empty when no kernel's terms bound a head dim."""
    segments = {}
    for kernel_type in model.kernel_types:
        for index, segment in enumerate(kernel_type.segments):
            if segment.fields and all("hdim" in short_name(f).lower() for f in segment.fields):
                segments[kernel_type.class_name] = index
                break
    kernels = reading.get("kernels", {})
    found: Dict[Tuple[str, int], Dict[str, set]] = {}
    for name, (class_name, tokens) in parsed.items():
        at = segments.get(class_name)
        info = kernels.get(name)
        if at is None or info is None:
            continue
        bounds: Dict[str, int] = {}
        for _, cpp, _ in info.get("terms", ()):
            for part in cpp.split("&&"):
                match = _BOUND.match(part.strip(" ()"))
                if match:
                    bounds[match.group(1)] = min(int(match.group(2)),
                                                 bounds.get(match.group(1), 1 << 30))
        if "hdim_q" in bounds:
            found.setdefault((class_name, at), {}).setdefault(tokens[at], set()).add(
                (bounds["hdim_q"], bounds.get("hdim_v")))
    return {key: {token: sorted(pairs, key=lambda p: (p[0], p[1] or 0))
                  for token, pairs in by_token.items()} for key, by_token in found.items()}
