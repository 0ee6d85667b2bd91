"""A workload (``:need: dtype=fp16,bf16; hdim=64,128``): segments by label, values by
token or field value, and the kernels they allow (:func:`workload_scope`)."""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from ..errors import FmhaError, WarningType
from ..model import NO_TOKEN, ApiModel, Decision, Need, natural
from .synthesis import Kernel

_MOST_COMBINATIONS = 4096  # checked at most (the product of the named values per sub-type)


class NeedError(FmhaError):
    """A need that names no segment or value of the API (the valid ones are listed)."""

    default_kind = WarningType.NEED


def split_needs(text: str) -> List[str]:
    """A directive's ``:need:`` value: needs separated by ``;`` (or lines)."""
    return [item.strip() for item in re.split(r"[;\n]", text or "") if item.strip()]


def parse_needs(items: Iterable[str]) -> List[Tuple[str, List[str]]]:
    """``["dtype=fp16,bf16", ...]`` -> ``[("dtype", ["fp16", "bf16"]), ...]``."""
    parsed: List[Tuple[str, List[str]]] = []
    for item in items:
        segment, equals, values = item.partition("=")
        names = [v.strip() for v in values.split(",") if v.strip()]
        if not equals or not segment.strip() or not names:
            raise NeedError("need %r: write SEGMENT=VALUE[,VALUE...] (e.g. dtype=fp16,bf16)"
                            % item.strip())
        parsed.append((segment.strip(), names))
    return parsed


def _segments_named(model: ApiModel, label: str) -> List[Tuple[str, int]]:
    """(sub-type, segment index) of every segment labelled ``label`` (case aside)."""
    every = [(k.class_name, i, s.label) for k in model.kernel_types
             for i, s in enumerate(k.segments) if not s.literal]
    return [(c, i) for c, i, seen in every if seen == label] or [
        (c, i) for c, i, seen in every if seen.lower() == label.lower()]


def _value_tokens(model: ApiModel, where: Sequence[Tuple[str, int]], value: str) -> List[str]:
    """The tokens of these segments ``value`` names: the token (``_fp16``, ``fp16``,
    ``(no token)``), else those a field value names (``128``), else the same ignoring case."""
    tokens: Dict[str, Dict[str, List[Dict[str, str]]]] = {}
    for class_name, index in where:
        segment = model.kernel_type(class_name).segments[index]
        for token in segment.tokens:
            tokens.setdefault(token, {}).update({class_name: segment.values.get(token, [])})
    if value in (NO_TOKEN, "''", '""'):
        return [""] if "" in tokens else []
    for candidates in ([t for t in tokens if t and t in (value, "_" + value)],
                       [t for t, combos in tokens.items()
                        if any(value in combo.values() for c in combos.values() for combo in c)],
                       [t for t in tokens if t and t.lower() in (value.lower(),
                                                                 "_" + value.lower())]):
        if candidates:
            return sorted(set(candidates), key=natural)
    return []


def resolve_needs(model: ApiModel, parsed: Sequence[Tuple[str, Sequence[str]]]) -> List[Need]:
    """The needs as the model understands them; an unknown segment, a value that names
    no token or more than one raises :class:`NeedError` listing the valid ones."""
    needs: Dict[str, Need] = {}
    labels = list(dict.fromkeys(s.label for k in model.kernel_types for s in k.segments
                                if not s.literal))
    for label, values in parsed:
        where = _segments_named(model, label)
        if not where:
            raise NeedError("need %r: %s has no segment %r (its segments: %s)"
                            % (label, model.api, label, ", ".join(labels)))
        segment_label = model.kernel_type(where[0][0]).segments[where[0][1]].label
        need = needs.setdefault(segment_label, Need(
            segment=segment_label, kernel_types=list(dict.fromkeys(c for c, _ in where))))
        for value in values:
            tokens = _value_tokens(model, where, value)
            if len(tokens) != 1:
                valid = sorted({t for c, i in where
                                for t in model.kernel_type(c).segments[i].tokens}, key=natural)
                said = ("no value of segment %s is %r" % (segment_label, value)
                        if not tokens else "%r is ambiguous in segment %s: it names %s"
                        % (value, segment_label, ", ".join(tokens)))
                raise NeedError("need %s=%s: %s (its values: %s)" % (
                    label, value, said, ", ".join(t or NO_TOKEN for t in valid)))
            if tokens[0] not in need.tokens:
                need.tokens.append(tokens[0])
                need.given.append(value)
    for need in needs.values():
        pairs = sorted(zip(need.tokens, need.given), key=lambda p: natural(p[0]))
        need.tokens, need.given = [t for t, _ in pairs], [g for _, g in pairs]
    return list(needs.values())


def needs_key(needs: Sequence[Need]) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    """What a set for these needs depends on (the cache's key)."""
    return tuple(sorted((need.segment, tuple(need.tokens)) for need in needs))


def _named(model: ApiModel, needs: Sequence[Need]) -> Dict[str, Dict[int, Set[str]]]:
    """sub-type -> segment index -> the needed tokens."""
    named: Dict[str, Dict[int, Set[str]]] = {}
    for need in needs:
        for class_name, index in _segments_named(model, need.segment):
            named.setdefault(class_name, {})[index] = set(need.tokens)
    return named


def workload_scope(model: ApiModel, kernels: Sequence[Kernel], needs: Sequence[Need],
                   deciding: Sequence[str],
                   partners: Optional[Mapping[str, Set[str]]] = None) -> Set[str]:
    """The kernel files the workload allows: of the sub-types that decide for themselves,
    those whose named segments each carry a needed token; of the followers, the
    ``partners`` (main file -> files launched with it) of those, or without partners
    the followers that carry the needed tokens."""
    named = _named(model, needs)
    scope = {k.file for k in kernels if k.kernel_type in deciding and _carries(k, named)}
    if partners:
        return scope | {p for f in scope for p in partners.get(f, ())}
    return scope | {k.file for k in kernels if k.kernel_type not in deciding and _carries(k, named)}


def _carries(kernel: Kernel, named: Mapping[str, Mapping[int, Set[str]]]) -> bool:
    return all(kernel.tokens[i] in tokens
               for i, tokens in named.get(kernel.kernel_type, {}).items())


def unmet_combinations(model: ApiModel, kernels: Sequence[Kernel], needs: Sequence[Need],
                       deciding: Sequence[str]) -> List[Dict[str, str]]:
    """The combinations of needed tokens (one per named segment) no kernel of a sub-type
    deciding for itself carries; too many to list: checked value by value only."""
    named = _named(model, needs)
    unmet: List[Dict[str, str]] = []
    for kernel_type in model.kernel_types:
        mine = named.get(kernel_type.class_name)
        if kernel_type.class_name not in deciding or not mine:
            continue
        indices = sorted(mine)
        labels = [kernel_type.segments[i].label for i in indices]
        carried = {tuple(k.tokens[i] for i in indices) for k in kernels
                   if k.kernel_type == kernel_type.class_name}
        choices = [sorted(mine[i], key=natural) for i in indices]
        if math.prod(map(len, choices)) <= _MOST_COMBINATIONS:
            missing = [dict(zip(labels, combo)) for combo in itertools.product(*choices)
                       if combo not in carried]
        else:
            missing = [{labels[n]: token} for n, choice in enumerate(choices)
                       for token in choice if not any(c[n] == token for c in carried)]
        unmet += [entry for entry in missing if entry not in unmet]
    return unmet


def needed_decisions(decisions: Sequence[Decision], kernels: Sequence[Kernel],
                     union: Set[str], labels: Mapping[str, List[str]]) -> None:
    """A segment the workload names keeps its needed values and drops the others of the
    full listing; what a dropped one loses is that the workload does not call it."""
    for decision in decisions:
        if decision.category != "needed":
            continue
        index = labels[decision.kernel_type].index(decision.segment)
        own = [k for k in kernels if k.kernel_type == decision.kernel_type]
        present = Counter(k.tokens[index] for k in own)
        kept = {k.tokens[index] for k in own if k.file in union}
        order = sorted(present, key=natural)
        decision.keep = [t for t in order if t in kept]
        decision.drop = [t for t in order if t not in kept]
        for token in decision.drop:
            decision.loss_facts[token] = {"kernels": present[token], "not_needed": True}
            if decision.follows:
                decision.loss_facts[token]["follows"] = decision.follows
