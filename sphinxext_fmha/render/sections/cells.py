"""Small helpers every section uses: natural sort, token cells, plurals, folding, where
the commands run."""

from __future__ import annotations

import posixpath
import re
from typing import List, Optional, Sequence

from ...model import NO_TOKEN, ApiModel, KernelType, natural
from ...schema.token_dispatch import Condition
from ..ir import Block, Code, Dropdown, Emph, Inlines, codes, join
from .condition_words import condition_words

#: Tables with more rows, lists with more items than this are folded into a dropdown.
FOLD_ROWS = FOLD_ITEMS = 8


def token_cell(token: str) -> Inlines:
    return [Code(token)] if token else [Emph(NO_TOKEN)]


def plural(count: int, word: str, plural: Optional[str] = None) -> str:
    return "%d %s" % (count, word if count == 1 else (plural or word + "s"))


def percent(part: int, whole: int) -> str:
    return "%.1f %%" % (100.0 * part / whole) if whole else "-"


def fold(title: Inlines, blocks: List[Block], size: int, limit: int = FOLD_ROWS) -> List[Block]:
    """``blocks`` as they are, or folded into a dropdown when ``size`` > ``limit``."""
    return [Dropdown(title=title, blocks=blocks)] if size > limit else blocks


def _plain(condition: str) -> str:
    """A condition read the way its plain words are written (``t.x == false`` ->
    ``not x``, ``&&`` -> ``and``), blanks and parentheses dropped."""
    text = re.sub(r"\b[a-z]\.(?=[A-Za-z_])", "", condition)
    text = re.sub(r"(\w+)\s*==\s*true\b", r"\1", text)
    text = re.sub(r"(\w+)\s*==\s*false\b", r"not \1", text)
    text = re.sub(r"!(?!=)", " not ", text)
    text = text.replace("&&", " and ").replace("||", " or ").replace(";", " and ")
    return re.sub(r"[\s()]+", "", text)


def words_say_more(cpp: str, words: str) -> bool:
    """The plain words of a C++ condition say more than the C++ itself
    (``data_type == "fp16"`` for ``t.data_type.compare("fp16") == 0``), so both are
    shown; otherwise the C++ alone says it."""
    return bool(words.strip()) and _plain(words) != _plain(cpp)


def short_field(path: str) -> str:
    return path.split(".")[-1][2:] if path.split(".")[-1].startswith("F_") else path.split(".")[-1]


def filterable(model: ApiModel, kernel_type: KernelType) -> bool:
    return (kernel_type.filter_position is not None
            and kernel_type.class_name not in model.filter.unfiltered_types)


def part_label(kernel_type: KernelType, model: ApiModel) -> Inlines:
    if not filterable(model, kernel_type):
        return [Emph("not filtered")]
    if model.filter.api_split:
        return ["part %s" % kernel_type.filter_position]
    return ["the whole pattern"]


def arch_suffixes(kernel_type: KernelType) -> Inlines:
    return codes([s for s in kernel_type.arch_suffixes if s]) or [Emph("none")]


def tokens_natural(tokens: Sequence[str]) -> Inlines:
    return join([token_cell(t) for t in sorted(tokens, key=natural)]) or ["-"]


def verified_text(flag: bool) -> str:
    return "verified with generate.py" if flag else "NOT verified"


def condition_inlines(cpp: str, form: Condition) -> Inlines:
    """A C++ condition, with its plain words only where they say more (:func:`words_say_more`)."""
    out: Inlines = [Code(cpp)]
    words = condition_words(form)
    if words_say_more(cpp, words):
        out.append(" (%s)" % words)
    return out


def where_commands_run(model: ApiModel, driver: bool = False, several: bool = True) -> Inlines:
    """"Run these commands in example/ck_tile/01_fmha ..." (``driver``: a
    ``sphinxext-fmha generate`` command is among them)."""
    folder = model.fmha_dir or "the folder of generate.py"
    out: Inlines = ["Run %s in " % ("these commands" if several else "this command"),
                    Code(folder), " of the CK tree (where generate.py is)"]
    if driver and model.fmha_dir:
        out += ["; the driver command runs there too (", Code("--ck-root %s" % posixpath.relpath(
            ".", model.fmha_dir)), " is the CK tree's root)"]
    out.append(".")
    if model.list_appends:
        out += [" This tree's generate.py appends to the ", Code("-l"), " file instead of "
                "writing it afresh, so each listing command removes its file first."]
    return out
