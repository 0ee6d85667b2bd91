"""Kernel sub-types, their name segments and fields, and the analysis gaps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional


@dataclass
class Gap:
    """Something the analysis could not determine; never guessed silently."""

    #: What is unknown, in a few words.
    what: str
    #: The codegen location it concerns (``path:line``), if any.
    where: str = ""
    #: Why it could not be established.
    why: str = ""
    #: The guide section that needs the fact (``""``: the whole guide).
    section: str = ""
    #: The codegen object it concerns (a factory's name), if one.
    subject: str = ""


@dataclass
class Segment:
    """One labelled part of a kernel name.

    ``tokens`` maps the exact text the segment contributes (leading separator
    included, possibly ``""`` for absent-when-off features) to its meaning.
    ``values`` maps the same tokens to the field values that produce them, one
    dict ``{field path: value}`` per distinct combination seen.
    """

    #: A readable name: the field the segment encodes (``hdim``, ``pad``, ...),
    #: ``literal N`` for text that no field writes.
    label: str
    #: Dotted paths of the kernel-object fields that choose the token
    #: (``F_pipeline.F_bias``); empty for a literal segment.
    fields: List[str] = field(default_factory=list)
    #: ``{token: meaning}`` for every token seen in the listing.
    tokens: Dict[str, str] = field(default_factory=dict)
    #: ``{token: [{field path: value}, ...]}``: the field values that produce each token.
    values: Dict[str, List[Dict[str, str]]] = field(default_factory=dict)
    #: True when no field writes the text (``fmha_bwd``): the same in every kernel name.
    literal: bool = False

    @property
    def constant(self) -> bool:
        """A field segment with one token in this tree (a tile part that is always
        ``_r1x4x1``): labelled, but information, never a keep/drop choice. Computed
        from :attr:`literal` and :attr:`tokens`, so not a JSON key."""
        return not self.literal and len(self.tokens) == 1


@dataclass
class KernelType:
    """A kernel sub-type: a codegen class whose objects become ``.cpp`` files.

    A file name of this sub-type is one token of each of :attr:`segments`, in order,
    then one of :attr:`arch_suffixes`, then ``.cpp``.
    """

    #: The codegen class (JSON key ``"class"``), e.g. ``FmhaFwdKernel``.
    class_name: str
    #: Whether the class is a frozen dataclass.
    frozen: bool
    #: Which ``@``-separated part of ``-f`` filters this sub-type (0 when the pattern is
    #: not split); ``null`` when ``-f`` does not filter it.
    filter_position: Optional[int]
    #: How many kernel files generate.py lists for this sub-type.
    count: int
    #: Suffixes between the name and ``.cpp`` (``_gfx9``); ``[""]`` when there are none.
    arch_suffixes: List[str] = field(default_factory=list)
    #: The parts of the kernel name, in order.
    segments: List[Segment] = field(default_factory=list)
    #: One real file name of this sub-type, from the listing.
    example: str = ""
    #: :attr:`example`'s kernel name cut by the grammar, one token per segment (empty
    #: when it cannot be cut): what the file-name diagram shows.
    example_tokens: List[str] = field(default_factory=list)
    #: Where the class is defined (``path:line``).
    defined_at: str = ""
    #: The class's docstring, if it has one.
    description: str = ""


@dataclass
class FieldInfo:
    """A field of a kernel object that reaches the kernel name."""

    #: Dotted path from the kernel object (``F_pipeline.F_mask``).
    path: str
    #: The sub-types (class names) that have the field.
    kernel_types: List[str] = field(default_factory=list)
    #: The :attr:`Segment.label` of the segment it writes.
    segment: str = ""
    #: Every value observed while generate.py ran, in natural order.
    values: List[str] = field(default_factory=list)
    #: The comment next to the field's declaration.
    comment: str = ""
    #: Where the field is declared (``path:line``).
    defined_at: str = ""
    #: Per sub-type (class name), where its own class declares the field and the comment
    #: there: sub-types of one API may each declare a field of the same path (a split-KV
    #: kernel and its combine kernel both have ``F_hdim``), at different lines.
    defined_at_by_type: Dict[str, str] = field(default_factory=dict)
    comment_by_type: Dict[str, str] = field(default_factory=dict)
    #: The codegen dict or function that maps its values to C++ symbols, if any.
    symbol_map: str = ""
    #: ``{value: C++ symbol}`` from that map.
    cpp_symbols: Dict[str, str] = field(default_factory=dict)
    #: Observed values missing from the map (hard-coded somewhere else).
    hard_coded: List[str] = field(default_factory=list)
    #: A coarse kind of field (``pad``, ``mask``, ``bias``, ...), when known.
    category: str = ""
