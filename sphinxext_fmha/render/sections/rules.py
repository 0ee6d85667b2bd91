"""The rules section: skip conditions and receipts, the codegen's Python conditions
(handed over as source text) read in words (``x in [a, b]`` -> ``x is a or b``)."""

from __future__ import annotations

import ast
import re
from typing import Any, Dict, List, Sequence, Tuple

from ...guide_data import GuideData
from ...model import Receipt, SkipCondition
from ..ir import Block, BulletList, Code, Dropdown, Inlines, Para, Table, codes, join
from .cells import fold, plural

#: Reference tables of this section (the codegen's own rules) fold above this many rows.
FOLD_SHORT = 4


def rules_section(data: GuideData) -> List[Block]:
    model = data.model
    blocks: List[Block] = _skip_blocks(model.skip_conditions)
    blocks.extend(_receipt_blocks(model.receipts))
    blocks.extend(_mask_modes(data))
    return blocks


def _skip_blocks(skips: Sequence[SkipCondition]) -> List[Block]:
    """One row per distinct condition (the places it occurs together); the reading only
    for an assertion, whose message says why."""
    if not skips:
        return [Para(["No skip condition was found."])]
    merged: Dict[Tuple[str, str, str], List[SkipCondition]] = {}
    for skip in skips:
        merged.setdefault((skip.kind, skip.source, skip.name), []).append(skip)
    rows: List[List[Inlines]] = []
    for (kind, source, name), found in merged.items():
        condition: Inlines = [Code(source)]
        if kind == "assert":
            condition.append(" (%s)" % skip_words(found[0]))
        elif name:
            condition = _rule_cell(found[0])
        rows.append([[kind], condition, codes([s.where for s in found if s.where])])
    table = Table(header=["Kind", "Condition", "Where"], rows=rows, classes=["fmha-skips"])
    return [Para(["Conditions under which the codegen skips a combination or a kernel (",
                  plural(len(rows), "condition"), "):"])] + fold(
        ["Skip conditions: %s" % plural(len(rows), "condition")], [table], len(rows), FOLD_SHORT)


def _rule_cell(rule: SkipCondition) -> Inlines:
    """A rule function: its name, what it keeps (its returns in order, the first whose
    conditions hold decides), its comment, the base class whose rules its list extends."""
    parts = []
    for condition, value in rule.returns:
        verdict = {"True": "keeps the kernel", "False": "drops the kernel"}.get(value) or \
            "keeps the kernel only if " + python_condition_words(value)
        parts.append("if %s, %s" % (python_condition_words(condition), verdict) if condition else verdict)
    cell: Inlines = [Code(rule.name), ": ", "; otherwise ".join(parts)]
    cell += [" (its comment: %s)" % rule.message] if rule.message else []
    method = rule.name.rpartition(".")[0]
    return cell + ([". ", Code(method), " lists it after the rules of ", Code(rule.extends)]
                   if rule.extends else [])


def _observed(receipt: Receipt) -> Inlines:
    """What the kernels listed without ``-r`` make of the rule: it keeps none of them
    (a term none meets), or it drops none (every term each meets)."""
    if receipt.unmet:
        return [". No kernel generate.py lists without ", Code("-r"), " meets ",
                *_terms(receipt.unmet), ", so this rule keeps none"]
    if receipt.met:
        return [". Every kernel generate.py lists without ", Code("-r"), " meets ",
                *_terms(receipt.met), ", so this rule drops none of them"]
    return []


def _terms(terms: Sequence[Sequence[str]]) -> Inlines:
    return join([[Code(condition), " (their ", Code(path), ": %s)" % values]
                 for condition, path, values in terms], "; ")


def _receipt_blocks(receipts: Sequence[Receipt]) -> List[Block]:
    if not receipts:
        return [Para(["This API has no receipt-specific rule."])]
    used = [r for r in receipts if r.kind != "unreferenced"]
    unused = [r for r in receipts if r not in used]
    blocks: List[Block] = [Para(["Receipts (", Code("-r"), ") narrow the set for an integration:"])]
    if used:
        keeps = [re.sub(r"^receipt %s: " % re.escape(r.value), "", receipt_reading(r))
                 for r in used]
        prefix = "keeps only kernels where "
        common = all(k.startswith(prefix) for k in keeps)
        header = "Keeps only kernels where" if common else "Keeps"
        keeps = [k[len(prefix):] if common else k for k in keeps]
        suffix = re.search(r" \(in [\w.]+\)$", keeps[0])  # the function, said once
        if suffix and all(k.endswith(suffix.group(0)) for k in keeps):
            keeps = [k[:-len(suffix.group(0))] for k in keeps]
            header += suffix.group(0)
        rows: List[List[Inlines]] = [
            [[Code(r.value)], [r.label], [k, *_observed(r)], [Code(r.where)] if r.where else []]
            for r, k in zip(used, keeps)]
        table = Table(header=["Receipt", "Label", header, "Where"], rows=rows,
                      classes=["fmha-receipts"])
        blocks.extend(fold(["Receipts: %s" % plural(len(rows), "receipt")], [table], len(rows),
                           FOLD_SHORT))
    if unused:
        wheres = sorted({r.where for r in unused if r.where})
        named: List[Inlines] = [[Code(r.value), *([" (%s)" % r.label] if r.label else [])]
                                for r in unused]
        # (a branch for any other receipt takes them: newest fwd's default drops fp32)
        other = any(r.kind in ("other", "rule-other") for r in used)
        lead: Inlines = [plural(len(unused), "receipt"), " not referenced in this module, so "]
        lead += ["the row ", Code("other"), " above applies to them"] if other else \
            ["only the conditions that apply to every receipt hold"]
        lead += [" (", *codes(wheres), ")"] if wheres else []
        if len(named) > FOLD_SHORT:
            blocks.append(Para(lead + ["."]))
            blocks.append(Dropdown(["Not referenced: %s" % plural(len(named), "receipt")],
                                   [BulletList(named)]))
        else:
            blocks.append(Para(lead + [": ", *join(named), "."]))
    return blocks


def _mask_modes(data: GuideData) -> List[Block]:
    """What ``--mask`` changes, measured by listing the API in both modes."""
    modes = data.mask_modes
    if modes is None:
        return []
    lead: Inlines = ["Mask mode: this guide lists ", Code("--mask %s" % modes.this_mode),
                     " (%d kernels); " % modes.this_count, Code("-m %s" % modes.other_mode),
                     " lists %d." % modes.other_count]
    if modes.changes:
        lead += [" The mask words of the kernel names change: ",
                 *(codes(modes.only_this) or ["-"]), " occur only with ",
                 Code(modes.this_mode), ", ", *(codes(modes.only_other) or ["-"]),
                 " only with ", Code(modes.other_mode),
                 "; a filter written for one mode selects nothing of these in the other."]
    else:
        lead += [" The kernel names carry the same words in both modes."]
    blocks: List[Block] = [Para(lead)]
    if modes.hard_coded:
        blocks.append(Para(["Hard-coded mask values: ", *join(
            [[Code(word), " (%d kernels)" % count] for word, count in modes.hard_coded.items()]),
            " occur with ", Code("--mask %s" % modes.this_mode), " too, although they belong "
            "to the other mode's words: some pipeline sets this mask value whatever the mask "
            "mode."]))
    return blocks


def skip_words(skip: SkipCondition) -> str:
    """What an assertion requires, with its message; "" for another kind."""
    if skip.kind != "assert":
        return ""
    return "requires " + python_condition_words(skip.source) + (
        " (%s)" % skip.message if skip.message else "")


def receipt_reading(receipt: Receipt) -> str:
    """What a receipt keeps, in words (``receipt 2: keeps only kernels where ...``)."""
    if receipt.kind == "unreferenced":
        return "not referenced in this module"
    if receipt.kind in ("rule", "rule-other"):
        head = ("receipt %s" % receipt.value if receipt.kind == "rule" else
                "any receipt other than %s" % ", ".join(receipt.before))
        return "%s (%s): %s (rule object returned by %s)" % (
            head, receipt.rule_name, "keeps only kernels where " + "; ".join(map(
                _term_words, receipt.keeps)) if receipt.keeps else "no restriction",
            receipt.function)
    parts = [verb + "; ".join(map(_term_words, terms)) for verb, terms in (
        ("keeps only kernels where ", receipt.keeps), ("drops kernels where ", receipt.drops)) if terms]
    if receipt.kind == "other":
        body = "; ".join(parts) or ("runs " + "; ".join(receipt.effects) if receipt.effects
                                    else "no restriction")
        return "any receipt other than %s: %s (in %s)" % (
            ", ".join(receipt.before), body, receipt.function)
    head = "receipt %s" % receipt.value
    if receipt.skips:
        # the function's kernels only: another blob function of the module keeps its own
        parts = ["drops kernels where " + " and ".join(map(python_condition_words, receipt.when))
                 if receipt.when else "drops every kernel of the function"]
    else:
        if receipt.effects:
            parts.append("runs " + "; ".join(receipt.effects))
        if receipt.when:
            head += " when " + " and ".join(map(python_condition_words, receipt.when))
    return "%s: %s (in %s)" % (head, "; ".join(parts) or "no restriction", receipt.function)


def _term_words(term: Sequence[str]) -> str:
    condition, guard = term
    return python_condition_words(condition) + (" when " + python_condition_words(guard) if guard else "")


def python_condition_words(source: str) -> str:
    """A Python condition's source text in words (the text itself if it does not parse)."""
    try:
        return read_condition(ast.parse(source.strip(), mode="eval").body)
    except SyntaxError:
        return source


_BARE = re.compile(r"^[\w.\-/*+]+$")
_PREFIX = re.compile(r"^[A-Z]_(?=[A-Za-z0-9])")
_NEGATED = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
            ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
            ast.Gt: ast.LtE, ast.LtE: ast.Gt}


def _const(v: Any) -> str:
    if isinstance(v, str):
        return '""' if v == "" else v if _BARE.match(v) else repr(v).replace("'", '"')
    return repr(v)


def _term(node: ast.AST) -> str:
    if isinstance(node, ast.Constant):
        return _const(node.value)
    if isinstance(node, (ast.BoolOp, ast.Compare)):  # compared itself: ``(a and b) == c``
        return "(%s)" % read_condition(node)
    chain = node
    while isinstance(chain, ast.Attribute):
        chain = chain.value
    if isinstance(chain, ast.Name):  # ``self.F_pipeline.F_spad`` -> ``pipeline.spad``
        parts = ast.unparse(node).split(".")
        parts = parts[1:] if parts[0] == "self" and len(parts) > 1 else parts
        return ".".join(_PREFIX.sub("", p) for p in parts)
    if isinstance(node, ast.List):
        return "[" + ", ".join(map(_term, node.elts)) + "]"
    if isinstance(node, (ast.Tuple, ast.Set)):
        return "(" + ", ".join(map(_term, node.elts)) + ")"
    if isinstance(node, ast.Call):
        f = node.func
        words = {"startswith": "starts with", "endswith": "ends with"}
        if isinstance(f, ast.Attribute) and len(node.args) == 1 and not node.keywords \
                and f.attr in words:
            return f"{_term(f.value)} {words[f.attr]} {_term(node.args[0])}"
    if isinstance(node, ast.Subscript):
        piece = node.slice
        inner = (f"{_term(piece.lower) if piece.lower else ''}:"
                 f"{_term(piece.upper) if piece.upper else ''}"
                 if isinstance(piece, ast.Slice) else _term(piece))
        return _term(node.value) + "[" + inner + "]"
    return ast.unparse(node)


def _alts(elts: Sequence[ast.AST]) -> str:
    items = [_term(e) for e in elts]
    if len(items) < 2:
        return items[0] if items else "nothing"
    return ", ".join(items[:-1]) + " or " + items[-1]


#: What a comparison says; two names compared (``dpad == dvpad``) read as ``_BETWEEN``
#: ("dpad is dvpad" would read as a value named dvpad).
_SAYS = {ast.Eq: "is", ast.Is: "is", ast.NotEq: "is not", ast.IsNot: "is not",
         ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_BETWEEN = {ast.Eq: "equals", ast.NotEq: "differs from"}


def _compare_one(left: ast.AST, op: ast.cmpop, right: ast.AST, negate: bool = False) -> str:
    if negate:
        op = _NEGATED[type(op)]()
    lhs = _term(left)
    seq = isinstance(right, (ast.List, ast.Tuple, ast.Set))
    text_in = isinstance(left, ast.Constant) and isinstance(left.value, str)
    if isinstance(op, ast.In):
        if seq:
            return f"{lhs} is {_alts(right.elts)}"  # type: ignore[attr-defined]
        return f"{_term(right)} contains {lhs}" if text_in else f"{lhs} is in {_term(right)}"
    if isinstance(op, ast.NotIn):
        if seq:
            elts = right.elts  # type: ignore[attr-defined]
            if len(elts) == 1:
                return f"{lhs} is not {_term(elts[0])}"
            if len(elts) == 2:
                return f"{lhs} is neither {_term(elts[0])} nor {_term(elts[1])}"
            return f"{lhs} is none of {_alts(elts)}"
        return (f"{_term(right)} does not contain {lhs}" if text_in
                else f"{lhs} is not in {_term(right)}")
    says = _BETWEEN.get(type(op)) if not isinstance(right, ast.Constant) else None
    return f"{lhs} {says or _SAYS.get(type(op), '?')} {_term(right)}"


def read_condition(node: ast.AST, negate: bool = False) -> str:
    """A boolean expression in words (``x in [a, b]`` -> ``x is a or b``)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return read_condition(node.operand, not negate)
    if isinstance(node, ast.BoolOp):
        is_and = isinstance(node.op, ast.And) != negate  # De Morgan
        parts = []
        for v in node.values:
            text = read_condition(v, negate)
            inner = v.operand if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not) else v
            if isinstance(inner, ast.BoolOp):
                inner_and = isinstance(inner.op, ast.And) != (negate != (inner is not v))
                if inner_and != is_and:
                    text = f"({text})"
            parts.append(text)
        return (" and " if is_and else " or ").join(parts)
    if isinstance(node, ast.Compare):
        if negate and len(node.ops) == 1:
            return _compare_one(node.left, node.ops[0], node.comparators[0], negate=True)
        lefts = [node.left] + node.comparators[:-1]
        text = " and ".join(map(_compare_one, lefts, node.ops, node.comparators))
        return f"not ({text})" if negate else text
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            return str(node.value != negate).lower()
        return f"not {_const(node.value)}" if negate else _const(node.value)
    text = _term(node)
    if negate:
        for word, negated in ((" starts with ", " does not start with "),
                              (" ends with ", " does not end with ")):
            if isinstance(node, ast.Call) and word in text:
                return text.replace(word, negated, 1)
        return f"not {text}" if re.match(r"^[\w.]+$", text) else f"not ({text})"
    return text
