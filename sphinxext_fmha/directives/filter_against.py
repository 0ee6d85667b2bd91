"""``fmha-filter-check`` with ``:against:``: the filter in the tree it was written for
(a CK root path, or a tree of the corpus file, fetched and sha256-checked) and in this
page's tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Tuple

from ..bump import compare_filter
from ..bump_data import FilterComparison
from ..corpus import CorpusError, fetch_tree, load_corpus, tree_by_name
from ..errors import WarningType
from ..locate import find_ck_root
from ..options import OptionError, Options, check_filter_text
from .sphinx_glue import directive_options, session_at

__all__ = ["compare_against", "THIS_TREE"]

#: How the comparison names the page's own tree.
THIS_TREE = "this CK tree"


def _other_root(directive: Any, given: str) -> Path:
    """The CK root ``:against:`` names: a corpus tree (fetched) or a path (absolute, or
    relative to the page; one that starts with ``/`` and is no folder here is taken
    from the source folder, as Sphinx takes such paths)."""
    if given in {tree.name for tree in load_corpus()}:
        try:
            return fetch_tree(tree_by_name(given))
        except CorpusError as error:
            raise OptionError("against: the corpus tree %r cannot be fetched: %s"
                              % (given, error), kind=WarningType.CK_ROOT) from None
    path = Path(given).expanduser()
    if not (path.is_absolute() and path.exists()):
        path = Path(directive.env.relfn2path(given)[1])
    return find_ck_root(path, directive.env.srcdir)


def compare_against(directive: Any, session: Any, api: str, filter: str,
                    options: Options) -> Tuple[FilterComparison, Any]:
    """The comparison of ``filter`` in ``:against:``'s tree (old) and the page's (new),
    and the other tree's Session (the page now depends on its files too)."""
    given = (directive.options.get("against") or "").strip()
    if not given:
        raise OptionError("against: give a CK root path or a corpus tree name (%s)"
                          % ", ".join(tree.name for tree in load_corpus()))
    other = session_at(directive.config, _other_root(directive, given))
    directive.note_tree(other)
    other_options = directive_options(directive.config, other, directive.options)
    model = other.model(api, other_options)
    # the filter is written for the other tree: checked against its semantics
    check_filter_text(api, filter, model.filter.cli_split, model.filter.api_split)
    return compare_filter(other, session, api, filter, other_options, options,
                          old_label=given, new_label=THIS_TREE), other
