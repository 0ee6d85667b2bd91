"""What the minimal set loses, read from the verified set and the dispatch conditions.

For each token with kernels outside the set (that differ from kept kernels in that
segment only), the kernels it takes away are compared with the kept kernels of the
same problem class that differ only there: a kept kernel serves the dropped kernel's
inputs when the dispatcher's conditions allow, and the conditions it adds are the
inputs that lose their kernel. One sentence per group of kernels with the same
answer; conditions of different kernels are never joined.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from typing import (
    AbstractSet,
    Dict,
    FrozenSet,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
)

from ..model import Decision, kept_with_text, token_list
from .policy import PROBLEM
from .standins import by_subject, compare, excluding
from .synthesis import Kernel

__all__ = ["describe_losses", "within"]

def describe_losses(decisions: Sequence[Decision], kernels: Sequence[Kernel], kept: Set[str],
                    categories: Mapping[Tuple[str, str], str],
                    conditions: Mapping[str, Sequence[str]], labels: Mapping[str, List[str]],
                    followers: Mapping[str, str], varying: AbstractSet[str] = frozenset(),
                    never_run: Mapping[str, str] = {},  # noqa: B006 - read only
                    ) -> None:
    """Fill ``decision.losses`` (token -> sentence) for each token with lost kernels.

    ``labels``: sub-type -> its segment labels; ``followers``: follower sub-type ->
    the sub-type it follows; ``varying``: kernels whose dispatch branches differ, whose
    ``conditions`` (the terms all their branches share) hold wherever they are reached
    but do not say where: such a stand-in is never said to serve inputs; ``never_run``:
    kernel file -> why the full API never launches it (dropping it loses no call)."""
    by_type: Dict[str, List[Kernel]] = {}
    for kernel in kernels:
        by_type.setdefault(kernel.kernel_type, []).append(kernel)
    kept_per_type: Dict[str, List[Set[str]]] = {}  # sub-type -> per segment, its kept tokens
    #: sub-type -> its kernels not kept, each with the segments whose token no kept kernel has
    dropped_per_type: Dict[str, List[Tuple[Kernel, Tuple[int, ...]]]] = {}
    only_with = _kept_only_with(decisions, labels)
    #: sub-type -> its kept kernels by problem, with the segments that context leaves out
    #: and its tile segments (see :func:`_kept_by_problem`)
    problem_per_type: Dict[str, Tuple[Dict[Tuple, List[Kernel]], Tuple[int, ...], Set[int]]] = {}
    for decision in decisions:
        own = by_type.get(decision.kernel_type, [])
        seg_labels = labels[decision.kernel_type]
        index = seg_labels.index(decision.segment)
        if decision.kernel_type in followers:
            for token in decision.drop:
                count = sum(1 for k in own if k.tokens[index] == token)
                decision.loss_facts[token] = {"kernels": count,
                                              "follows": followers[decision.kernel_type]}
                decision.losses[token] = (
                    "%d kernels; none is launched with a kept %s kernel, so nothing calls them"
                    % (count, followers[decision.kernel_type]))
            for partial in decision.partial:
                token = partial["token"]
                carrying = [k for k in own if k.tokens[index] == token]
                lost = sum(1 for k in carrying if k.file not in kept)
                if lost:
                    decision.loss_facts[token] = {"kernels": lost, "of": len(carrying),
                                                  "follows": followers[decision.kernel_type]}
                    decision.losses[token] = (
                        "%d of its %d kernels (it is kept only with %s); none of them is "
                        "launched with a kept %s kernel, so nothing calls them"
                        % (lost, len(carrying), kept_with_text(partial["kept_with"]),
                           followers[decision.kernel_type]))
            continue
        # A tile is no choice of the filter, but a tile none of the kept kernels has is
        # lost all the same (newer CK has tiles only some features use): said as for
        # any other value.
        kept_tokens = kept_per_type.get(decision.kernel_type)
        if kept_tokens is None:
            kept_own = [k.tokens for k in own if k.file in kept]
            kept_tokens = kept_per_type[decision.kernel_type] = [
                {tokens[i] for tokens in kept_own} for i in range(len(seg_labels))]
        # With dispatch conditions, a stand-in may differ in tiles and implementation
        # choices (pipeline, layout, ...) as long as its conditions do not contradict;
        # without them, only in tiles.
        free = ("tile", "other") if conditions else ("tile",)
        loose = tuple(i for i, label in enumerate(seg_labels)
                      if categories.get((decision.kernel_type, label)) in free or i == index)
        kept_by_context: Dict[Tuple, List[Kernel]] = {}
        for kernel in own:
            if kernel.file in kept:
                kept_by_context.setdefault(_context(kernel, loose), []).append(kernel)
        problem = problem_per_type.get(decision.kernel_type)
        if problem is None:
            problem = problem_per_type[decision.kernel_type] = _kept_by_problem(
                own, kept, [categories.get((decision.kernel_type, label))
                            for label in seg_labels], bool(conditions))
        dropped = dropped_per_type.get(decision.kernel_type)
        if dropped is None:
            limits = only_with.get(decision.kernel_type, {})
            dropped = dropped_per_type[decision.kernel_type] = [
                (k, tuple(i for i, t in enumerate(k.tokens) if t not in kept_tokens[i]
                          or not within(k, limits.get((i, t)))))
                for k in own if k.file not in kept]
        # per token: the dropped kernels that carry it, and those whose every other token
        # is kept; a kernel that carries another dropped value but this token where the
        # set keeps it (a pad kept only with mode _group) is lost for that other value,
        # not for this one (one whose every value is kept, only not in this combination,
        # stays counted: no value names it better)
        # A kernel with several dropped values is lost for the one a call asks for
        # (a rope kernel that pads fully is lost with rope, not with the padding): it
        # is said under the values of the highest rank it carries, and the others name
        # those values instead of leaving the kernel unsaid under every one of them.
        ranks = [_rank(categories.get((decision.kernel_type, label))) for label in seg_labels]
        total_of: Counter = Counter()
        alone_of: Dict[str, List[Kernel]] = {}
        said_under: Dict[str, Dict[str, None]] = {}  # token -> the values said instead
        for kernel, missing in dropped:
            if missing and index not in missing:
                continue
            token = kernel.tokens[index]
            total_of[token] += 1
            first = min(ranks[i] for i in missing) if missing else ranks[index]
            if not missing or missing == (index,) or ranks[index] == first:
                alone_of.setdefault(token, []).append(kernel)
            else:
                for i in missing:
                    if ranks[i] == first:
                        said_under.setdefault(token, {})[kernel.tokens[i]] = None
        for token in list(decision.drop) + [p["token"] for p in decision.partial]:
            alone = alone_of.get(token, [])
            total = total_of[token]
            elsewhere = list(said_under.get(token, {}))
            if not alone:
                if token in decision.drop:
                    decision.loss_facts[token] = {"kernels": total, "elsewhere": elsewhere}
                    decision.losses[token] = (
                        "%d kernels, each said under a dropped value a call asks for: %s"
                        % (total, token_list(elsewhere)))
                continue
            facts = decision.loss_facts.setdefault(token, {})
            decision.losses[token] = _sentence(alone, total, index, kept_by_context, loose,
                                               conditions, problem, varying, never_run,
                                               elsewhere, facts)


#: what a call asks for (a feature, a mask, the problem): a kernel that lacks one of
#: these is lost for it first; then its sizes (padding); tuning, tiles and the rest last
_ASKED = ("subject", "problem", "optional feature", "mask", "deterministic")


def _rank(category: Optional[str]) -> int:
    return 0 if category in _ASKED else 1 if category == "padding" else 2


def _kept_by_problem(own: Sequence[Kernel], kept: Set[str], categories: Sequence[Optional[str]],
                     with_conditions: bool
                     ) -> Tuple[Dict[Tuple, List[Kernel]], Tuple[int, ...], Set[int]]:
    """Beyond the kept kernels that differ from a dropped one only in its value, any kept
    kernel of the same problem (head dims, data type, mode; arch) whose dispatch
    conditions admit the kernel's inputs takes them (only with conditions to read):
    (kept kernels by that problem context, the segments the context leaves out, the tile
    segments). ``categories``: the sub-type's segment categories, in order."""
    wide = tuple(i for i, category in enumerate(categories) if category not in PROBLEM)
    tiles = {i for i, category in enumerate(categories) if category == "tile"}
    kept_by_problem: Dict[Tuple, List[Kernel]] = {}
    if with_conditions:
        for kernel in own:
            if kernel.file in kept:
                kept_by_problem.setdefault(_context(kernel, wide), []).append(kernel)
    return kept_by_problem, wide, tiles


def _kept_only_with(decisions: Sequence[Decision], labels: Mapping[str, List[str]]
                    ) -> Dict[str, Dict[Tuple[int, str], Dict[int, Set[str]]]]:
    """sub-type -> (segment index, token) -> the values of other segments (by index) the
    set keeps that token with only (a pad kept only with mode _group): outside them the
    token is a dropped value too."""
    found: Dict[str, Dict[Tuple[int, str], Dict[int, Set[str]]]] = {}
    for decision in decisions:
        seg_labels = labels.get(decision.kernel_type, [])
        if decision.segment not in seg_labels:
            continue
        index = seg_labels.index(decision.segment)
        for partial in decision.partial:
            where = {seg_labels.index(label): set(values)
                     for label, values in (partial.get("kept_with") or {}).items()
                     if label in seg_labels}
            if where:
                found.setdefault(decision.kernel_type, {})[(index, partial["token"])] = where
    return found


def within(kernel: Kernel, where: Optional[Mapping[int, Set[str]]]) -> bool:
    """Whether the kernel has one of the values ``where`` names at each of its segments
    (segment index -> values); no such values: yes."""
    return not where or all(kernel.tokens[i] in values for i, values in where.items())


def _context(kernel: Kernel, loose: Tuple[int, ...]) -> Tuple:
    """What follows the kernel's tokens in its file name, then its tokens outside
    ``loose``: made for every kept kernel once per decision (2.8.3 bwd: 7,824 kernels)."""
    stem = kernel.file[:-len(".cpp")] if kernel.file.endswith(".cpp") else kernel.file
    tokens = kernel.tokens
    return (stem[len("".join(tokens)):], *[tokens[i] for i in _outside(loose, len(tokens))])


@functools.lru_cache(maxsize=256)
def _outside(loose: Tuple[int, ...], count: int) -> Tuple[int, ...]:
    return tuple(i for i in range(count) if i not in loose)


#: The stand-in of kernels whose dispatch conditions are not read (see :func:`_sentence`).
_UNREAD = ("?",)
#: The condition of a stand-in whose branches differ: where it is reached is not read.
_UNSETTLED = ("~",)


def _sentence(alone: Sequence[Kernel], total: int, index: int,
              kept_by_context: Mapping[Tuple, List[Kernel]], loose: Tuple[int, ...],
              conditions: Mapping[str, Sequence[str]],
              problem: Tuple[Mapping[Tuple, List[Kernel]], Tuple[int, ...], Set[int]],
              varying: AbstractSet[str] = frozenset(),
              never_run: Mapping[str, str] = {},  # noqa: B006 - read only
              elsewhere: Sequence[str] = (),
              facts: Optional[Dict[str, object]] = None,
              ) -> str:
    """The sentence; ``facts`` gets how many kernels each kind of clause says (the
    keys of :attr:`~sphinxext_fmha.model.Decision.loss_facts`) and the kept tokens that
    take their inputs."""
    said: Counter = Counter()
    served_by: Dict[str, None] = {}
    groups: Counter = Counter()
    idle: Dict[str, int] = {}  # why the API never launches them -> how many
    orphans: List[Kernel] = []  # no kept kernel of their problem class takes their inputs
    # (stand-in, the kernel's own terms) -> _compare: kernels of one problem share both
    compared: Dict[Tuple[str, FrozenSet[str]], Tuple[List[str], List[str], List[str]]] = {}
    # Whether a stand-in further away excludes a kernel's inputs is asked for every kernel
    # of its problem (2.8.3 bwd: 451,008 times): each problem's stand-ins are told by
    # their terms as bits, and a kernel's excluding terms, worked out once over the terms
    # they have among them, rule out every stand-in that has one (see ``excluding``).
    term_bits_of: Dict[Tuple, Tuple[Dict[str, int], Dict[str, int]]] = {}
    kept_by_problem, wide, tiles = problem
    for kernel in alone:
        if kernel.file in never_run:
            idle[never_run[kernel.file]] = idle.get(never_run[kernel.file], 0) + 1
            continue
        own = frozenset(conditions.get(kernel.file, ()))
        if conditions and not own:
            # no term common to every branch that reaches it (newer CK dispatches each
            # kernel from two functions): nothing to compare a stand-in's terms with
            groups[(_UNREAD, (), (), ())] += 1
            continue
        subjects = by_subject(own)
        near = [k for k in kept_by_context.get(_context(kernel, loose), [])
                if k.tokens[index] != kernel.tokens[index]]
        near_files = {k.file for k in near}
        problem_context = _context(kernel, wide)
        pool = kept_by_problem.get(problem_context, [])
        bits = term_bits_of.get(problem_context)
        if bits is None:
            bits = term_bits_of[problem_context] = _term_bits(pool, conditions)
        term_bit, stand_in_bits = bits
        shut = 0
        for term in excluding(term_bit, own, subjects):
            shut |= term_bit[term]
        # a kernel further away that excludes the inputs is never an option (most of
        # them, for a value no kept kernel has)
        further = [k for k in pool
                   if k.tokens[index] != kernel.tokens[index] and k.file not in near_files
                   and not stand_in_bits[k.file] & shut]
        options = []
        for candidate in near + further:
            is_near = candidate.file in near_files
            found = compared.get((candidate.file, own))
            if found is None:
                theirs = conditions.get(candidate.file, ())
                extra = [t for t in theirs if t not in own]
                found = compared[(candidate.file, own)] = compare(extra, subjects)
            own_side, their_side, also_needed = found
            if their_side and not is_near:
                continue  # a kernel further away counts only where it can take the inputs
            # terms a stand-in reached from differing branches lacks may be on each of its
            # branches: that it takes the inputs is not established (its shared terms that
            # exclude them still do)
            unsettled = not their_side and candidate.file in varying
            if unsettled:
                also_needed = list(_UNSETTLED)
            # a near stand-in is named by this segment's token; one further away by
            # every token it differs in (tiles aside)
            named = (candidate.tokens[index],) if is_near else (
                candidate.tokens[index], *(c for i, (c, t) in enumerate(zip(candidate.tokens,
                                                                            kernel.tokens))
                                           if c != t and i != index and i not in tiles))
            options.append((len(their_side), unsettled, len(also_needed), named,
                            tuple(also_needed), tuple(own_side), tuple(their_side)))
        if options:
            best = min(options)
            groups[best[3:]] += 1
        else:
            groups[((), (), (), ())] += 1
            orphans.append(kernel)
    # a clause is said once with its kernels added up: groups that differ only in what
    # the clause leaves unsaid (what else a stand-in that excludes the inputs needs)
    # read alike
    clauses: Dict[str, int] = {}
    for (stand_in, plain, mine, theirs), count in _merge_numbers(groups):
        kind = ("unread" if stand_in == _UNREAD else "no_kernel" if not stand_in or theirs
                else "unsettled" if plain == _UNSETTLED else "partly" if plain else "served")
        said[kind] += count
        if kind in ("served", "partly"):
            served_by.update(dict.fromkeys(stand_in))
        if stand_in == _UNREAD:
            clause = ("are reached under dispatch conditions with no term common to all "
                      "their branches, so whether a kept kernel serves their inputs is not "
                      "established")
        elif not stand_in:
            clause = ("served inputs (%s) that no kept kernel of their problem class takes"
                      % ("; ".join(_own_terms(orphans, index, conditions)) or "as named"))
        elif plain == _UNSETTLED:
            clause = ("may be served by the kept %s variant, which is reached from branches "
                      "with different conditions: whether it takes their inputs is not "
                      "established" % token_list(stand_in))
        elif theirs:
            clause = ("were reached when %s: those inputs now find no kernel (the kept %s "
                      "variant is reached only when %s)"
                      % (" and ".join(mine), token_list(stand_in), " and ".join(theirs)))
        elif plain:
            clause = ("are served by the kept %s variant only when %s; other inputs lose "
                      "their kernel" % (token_list(stand_in), " and ".join(plain)))
        else:
            clause = "are served by the kept %s variant" % token_list(stand_in)
        clauses[clause] = clauses.get(clause, 0) + count
    for why, count in idle.items():
        clause = "are never launched by the API (%s): no call loses them" % why
        clauses[clause] = clauses.get(clause, 0) + count
        said["never"] += count
    if facts is not None:
        facts.update(kernels=len(alone), more=total - len(alone), elsewhere=list(elsewhere),
                     served_by=list(served_by), **said)
    parts = ["%d %s" % (count, clause) for clause, count in clauses.items()]
    head = "%d kernels not generated" % len(alone)
    if total > len(alone):
        head += " (and %d more, said under %s)" % (total - len(alone), token_list(elsewhere))
    return head + ": " + "; ".join(parts) + "."


def _term_bits(pool: Sequence[Kernel], conditions: Mapping[str, Sequence[str]]
               ) -> Tuple[Dict[str, int], Dict[str, int]]:
    """(term -> its bit, kernel file -> the bits of its terms) of the kernels ``pool``."""
    term_bit: Dict[str, int] = {}
    stand_in_bits: Dict[str, int] = {}
    for kernel in pool:
        mask = 0
        for term in conditions.get(kernel.file, ()):
            bit = term_bit.get(term)
            if bit is None:
                bit = term_bit[term] = 1 << len(term_bit)
            mask |= bit
        stand_in_bits[kernel.file] = mask
    return term_bit, stand_in_bits


_NUMBER = re.compile(r"\d+")


def _merge_numbers(groups: Counter) -> List[Tuple[Tuple[Tuple[str, ...], ...], int]]:
    """Groups that differ only in numbers (``hdim_q % 64`` / ``% 128``) said once,
    with the numbers listed: ``hdim_q % 64/128 == 0``."""
    merged: Dict[Tuple, List[Tuple[Tuple, int]]] = {}
    for key, count in groups.items():
        shape = tuple(tuple(_NUMBER.sub("#", t) for t in part) for part in key)
        merged.setdefault(shape, []).append((key, count))
    out = []
    for shape, members in merged.items():
        if len(members) == 1:
            out.append(members[0])
            continue
        parts = []
        for index, part in enumerate(shape):
            terms = []
            for position, template in enumerate(part):
                numbers = [_NUMBER.findall(key[index][position]) for key, _ in members]
                pieces = template.split("#")
                text = pieces[0]
                for slot, piece in enumerate(pieces[1:]):
                    values = sorted({n[slot] for n in numbers}, key=int)
                    text += "/".join(values) + piece
                terms.append(text)
            parts.append(tuple(terms))
        out.append((tuple(parts), sum(count for _, count in members)))
    return sorted(out, key=lambda kv: (-kv[1], kv[0]))


def _own_terms(alone: Sequence[Kernel], index: int,
               conditions: Mapping[str, Sequence[str]]) -> List[str]:
    """The conditions every one of these kernels has (what identifies their inputs)."""
    if not alone:
        return []
    first = conditions.get(alone[0].file, ())
    common = set(first)
    for kernel in alone[1:]:
        if not common:
            break
        common.intersection_update(conditions.get(kernel.file, ()))
    return [t for t in first if t in common]
