"""The directives: ``fmha-kernel-guide``, ``fmha-kernel-set`` (the guide's set sections
for a ``:need:`` workload), ``fmha-filter-check`` (with ``:against:``: the filter in the
tree it was written for, a CK root or a corpus tree, and in the page's), ``fmha-api-list``,
``fmha-filename``, ``fmha-warning-types``. They build docutils nodes directly (never ``nested_parse`` of
generated markup), so a reStructuredText page and a MyST page give the same doctree.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, List, Optional, Tuple

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx import addnodes

from ..bump import compare_filter
from ..corpus import CorpusError, fetch_tree, load_corpus, tree_by_name
from ..errors import WarningType
from ..guide_data import (
    RECOMMENDATION_SECTIONS,
    Problem,
    SectionNeed,
    parse_sections,
    problem_of,
    sections_needing,
    source_rel,
)
from ..locate import find_ck_root
from ..model import NO_TOKEN, FilterCheck
from ..options import OptionError, check_filter_text
from ..render.guide_blocks import (
    api_list_table,
    commands_miss_warnings,
    comparison_blocks,
    filename_blocks,
    fill_check_words,
    filter_check_blocks,
    guide_sections,
    header_inlines,
    miss_text,
    miss_warnings,
)
from ..render.ir import Code, Inlines, Para, Table
from ..render.nodes import blocks_to_nodes, sections_to_nodes
from ..render.sections.filter_write import write_warnings
from .sphinx_glue import OPTION_SPEC, FmhaDirective, directive_options, get_session

__all__ = ["DIRECTIVES", "ApiListDirective", "FilenameDirective", "FilterCheckDirective",
           "KernelGuideDirective", "KernelSetDirective", "WarningTypesDirective", "HEADINGS",
           "SET_SECTIONS", "THIS_TREE"]

#: Values of ``:headings:``.
HEADINGS = ("auto", "section", "rubric", "none")
#: The guide's sections ``fmha-kernel-set`` shows.
SET_SECTIONS = list(sections_needing(SectionNeed.SET, SectionNeed.SET_IF_MADE))
#: How a comparison with ``:against:`` names the page's own tree.
THIS_TREE = "this CK tree"
#: A filter check's ``:expect-count:``, ``:expect-keep:`` and ``:expect-drop:``.
_Expected = Tuple[Optional[int], List[Tuple[str, str]], List[Tuple[str, str]]]


def _doc_link(target: str, content: List[nodes.Node]) -> nodes.Node:
    ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget="/" + target.lstrip("/"),
                                refexplicit=True, refwarn=True)
    ref.extend(content)
    return ref


class KernelGuideDirective(FmhaDirective):
    """``.. fmha-kernel-guide:: API`` -- the full kernel selection guide."""

    what = "FMHA kernel guide"
    required_arguments = 1
    option_spec = dict(OPTION_SPEC, **{
        "sections": directives.unchanged,
        "headings": directives.unchanged,
        "no-header": directives.flag,
        "need": directives.unchanged,
    })

    def run_fmha(self) -> List[nodes.Node]:
        api = self.arguments[0].strip()
        headings = (self.options.get("headings") or "auto").strip().lower()
        if headings not in HEADINGS:
            raise OptionError("headings: %r is not one of %s" % (headings, ", ".join(HEADINGS)))
        names = parse_sections(self.options.get("sections"))
        data = self.guide_of(names, "guide")
        before: List[nodes.Node] = []
        if "no-header" not in self.options:
            before.extend(blocks_to_nodes([Para(header_inlines(data), ["fmha-header"])]))
        problem = data.recommendation_problem
        if problem is not None and any(n in names for n in RECOMMENDATION_SECTIONS):
            problem.message = "%s: %s (sections %s are left out)" % (
                api, problem.message, ", ".join(n for n in names if n in RECOMMENDATION_SECTIONS))
            before.extend(self.report(problem))
        for other in (data.dispatch_problem, data.filter_problem):
            if other is not None:
                before.extend(self.report(other.about(api)))
        self.warn_suspicious(data.model)
        if data.recommendation is not None and "commands" in names:
            for line in commands_miss_warnings(api, data.recommendation.runs):
                self.warn(WarningType.FILTER, line)
        self.warn_unmet(data.recommendation)
        # a gap is a warning when a section shown here lacks its fact
        missing = [g for g in data.model.gaps if not g.section or g.section in names]
        if missing:
            self.warn(WarningType.GAP, "%s: the analysis left %d gap(s): %s" % (
                api, len(missing), "; ".join(
                    "%s (%s)%s" % (g.what, g.where, ": " + g.why if g.why else "")
                    for g in missing)))
        return self.located([sections_to_nodes(guide_sections(data, names), api, headings,
                                               _doc_link, before)])


class KernelSetDirective(FmhaDirective):
    """``.. fmha-kernel-set:: API`` with ``:need:``: keep/drop, losses, commands, counts."""

    what = "FMHA kernel set"
    required_arguments = 1  # the API (no content: a directive has none by default)
    option_spec = dict(OPTION_SPEC, need=directives.unchanged)

    def run_fmha(self) -> List[nodes.Node]:
        data = self.guide_of(SET_SECTIONS, "kernel set")
        if data.recommendation_problem is not None:
            return self.report(data.recommendation_problem.about(data.api))
        self.warn_suspicious(data.model)
        self.warn_unmet(data.recommendation)
        return self.located([sections_to_nodes(guide_sections(data, SET_SECTIONS), data.api,
                                               HEADINGS[2], _doc_link, [])])


class FilterCheckDirective(FmhaDirective):
    """``.. fmha-filter-check::`` -- what one ``generate.py -f`` selects, proven."""

    what = "FMHA filter check"
    optional_arguments = 1
    option_spec = dict(OPTION_SPEC, **{
        "api": directives.unchanged,
        "filter": directives.unchanged,
        "expect-count": directives.unchanged,
        "expect-keep": directives.unchanged,
        "expect-drop": directives.unchanged,
        "against": directives.unchanged,
        "expect-same": directives.flag,
    })

    def run_fmha(self) -> List[nodes.Node]:
        api = (self.options.get("api") or "").strip()
        if not api:
            raise OptionError("api: an API is required (e.g. :api: fwd)")
        filter_text = self.options.get("filter")
        if self.arguments:
            if filter_text is not None:
                raise OptionError("filter: give the filter either as the argument or as "
                                  ":filter:, not both")
            filter_text = self.arguments[0]
        filter_text = (filter_text or "").strip()
        if not filter_text:
            raise OptionError("filter: a -f pattern is required (e.g. :filter: *_d128_*)")
        expect = (self._expect_count(), _tokens(self.options.get("expect-keep")),
                  _tokens(self.options.get("expect-drop")))
        session, options = self.session_and_options()
        model = session.model(api, options)
        if self.options.get("against") is not None:
            return self._against(session, api, filter_text, options, expect)
        if "expect-same" in self.options:
            raise OptionError("expect-same: it compares with the tree of :against:, which is "
                              "not given")
        check_filter_text(api, filter_text, model.filter.cli_split, model.filter.api_split)
        try:
            check = fill_check_words(session.check(api, filter_text, options))
        except Exception as exc:  # noqa: BLE001
            problem = problem_of(exc)
            if problem.kind == WarningType.GENERATE:
                problem.kind = WarningType.FILTER
                problem.message = "generate.py rejects the filter %r: %s" % (filter_text,
                                                                         problem.message)
            return self.report(problem)
        if check.count == 0:
            message = "the filter %r selects no kernel of %s" % (filter_text, api)
            if check.misses:
                message += ": " + "; ".join(miss_text(m) for m in check.misses)
            elif check.notes:
                message += " (" + "; ".join(n for n in check.notes
                                            if n != "the filter selects no kernel") + ")"
            return self.report(Problem(WarningType.FILTER, message.replace(" ()", ""), check.command))
        for line in (miss_warnings(api, filter_text, check.misses)
                     + write_warnings(api, filter_text, check)):
            self.warn(WarningType.FILTER, line)
        if not check.verified:
            self.warn(WarningType.MODEL, "%s -f %r: %s" % (api, filter_text, "; ".join(check.notes)
                                                 or "the model's prediction differs"))
        results = self._expectations(check, expect, check.command)
        return self.contained(["fmha-filter-check"], filter_check_blocks(check, results, model))

    def _against(self, session, api: str, filter_text: str, options,
                 expect: _Expected) -> List[nodes.Node]:
        """The filter in the ``:against:`` tree (old) and in this one (a changed set is said
        on the page; a warning only with ``:expect-same:``); the page now depends on the
        other tree's files too."""
        given = (self.options.get("against") or "").strip()
        if not given:
            raise OptionError("against: give a CK root path or a corpus tree name (%s)"
                              % ", ".join(tree.name for tree in load_corpus()))
        other = get_session(self.config, Path(self.env.srcdir), _other_root(self, given))
        self.note_tree(other)
        comparison = compare_filter(other, session, api, filter_text,
                                    directive_options(self.config, other, self.options), options,
                                    old_label=given, new_label=THIS_TREE)
        if "expect-same" in self.options and not comparison.same:
            self.warn(WarningType.EXPECTATION, "%s -f %r: expected the kernels it selects in %s "
                      "(%d), generate.py selects %d here (command: %s)"
                      % (api, filter_text, comparison.old.tree, comparison.old.count,
                         comparison.new.count, comparison.new.command))
        if not comparison.migrated.verified:
            self.warn(WarningType.MODEL, "%s -f %r: the runs that keep the kernels it selects in "
                      "%s are not verified" % (api, filter_text, comparison.old.tree))
        results = self._expectations(session.check(api, filter_text, options), expect,
                                     comparison.new.command)
        return self.contained(["fmha-filter-check", "fmha-filter-diff"],
                              comparison_blocks(comparison, results))

    def _expect_count(self) -> Optional[int]:
        raw = self.options.get("expect-count")
        if raw is None:
            return None
        try:
            return int(str(raw).strip())
        except ValueError:
            raise OptionError("expect-count: %r is not an integer" % raw) from None

    def _expectations(self, check: FilterCheck, expect: _Expected,
                      command: str) -> List[Tuple[str, bool]]:
        """Each expectation and whether it is met (a located warning when not)."""
        count, keep, drop = expect
        results: List[Tuple[str, bool]] = []
        if count is not None:
            results.append(("%d kernels (generate.py selects %d)" % (count, check.count),
                            check.count == count))

        for wanted, kept in ((keep, True), (drop, False)):
            for segment, token in wanted:
                found = [item for row in check.breakdown if not segment or row.segment == segment
                         for item in row.counts if item.token == token and item.baseline]
                shown = ("%s:%s" % (segment, token) if segment else token) or NO_TOKEN
                results.append(("%s %s" % (shown, "kept" if kept else "dropped"), bool(found)
                                and all((i.selected > 0) is kept for i in found)))
        for text, ok in results:
            if not ok:
                self.warn(WarningType.EXPECTATION, "%s -f %r: expected %s (command: %s)"
                          % (check.api, check.filter, text, command))
        return results


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


def _tokens(raw: Optional[str]) -> List[Tuple[str, str]]:
    """``"_nbias, bias:_alibi"`` -> [("", "_nbias"), ("bias", "_alibi")]."""
    if raw is None:
        return []
    items = [item.strip().rpartition(":") for item in re.split(r"[,\n]", raw) if item.strip()]
    out = [(segment.strip(), "" if token.strip() in (NO_TOKEN, "''", '""') else token.strip())
           for segment, _, token in items]
    if not out:
        raise OptionError("expect-keep/expect-drop: no token given")
    return out


class ApiListDirective(FmhaDirective):
    """``.. fmha-api-list::`` -- the tree's APIs with their kernel counts."""

    what = "FMHA API list"
    option_spec = dict(OPTION_SPEC, link=directives.unchanged)

    def run_fmha(self) -> List[nodes.Node]:
        link = self.options.get("link")
        if link is not None and "{api}" not in link:
            raise OptionError("link: %r must contain {api} (e.g. gallery/{api})" % link)
        session, options = self.session_and_options()
        rows = []
        for info in session.apis():
            count, note = None, ""
            if info.in_generate:
                try:
                    count = session.listing(session.tree.request(info.name, options)).count
                except Exception as exc:  # noqa: BLE001 - one failed API, reported
                    self.report(problem_of(exc).about(info.name), render=False)
                    note = "listing failed (see the build log)"
            else:
                note = "in codegen/ops but not in generate.py's API table"
            rows.append((info.name, source_rel(info), count, note))
        return self.located(blocks_to_nodes([api_list_table(rows, link)], _doc_link))


class FilenameDirective(FmhaDirective):
    """``.. fmha-filename:: API`` -- the file-name diagram(s) alone."""

    what = "FMHA file name diagram"
    required_arguments = 1
    option_spec = dict(OPTION_SPEC, **{"type": directives.unchanged, "legend": directives.flag})

    def run_fmha(self) -> List[nodes.Node]:
        api = self.arguments[0].strip()
        session, options = self.session_and_options()
        model = session.model(api, options)
        kernel_types = model.kernel_types
        wanted = (self.options.get("type") or "").strip()
        if wanted:
            kernel_types = [k for k in model.kernel_types if k.class_name == wanted]
            if not kernel_types:
                raise OptionError("type: %r is not a kernel sub-type of %s (it has: %s)" % (
                    wanted, api, ", ".join(k.class_name for k in model.kernel_types)))
        return self.contained(["fmha-filename"], filename_blocks(
            model, kernel_types, legend="legend" in self.options, headings=not wanted))


class WarningTypesDirective(FmhaDirective):
    """``.. fmha-warning-types::``: ``fmha.<subtype>`` and when it is reported, from
    :class:`~sphinxext_fmha.errors.WarningType` (so the documentation cannot drift)."""

    def run_fmha(self) -> List[nodes.Node]:
        rows: List[List[Inlines]] = [
            [[Code(kind.subtype)],
             [Code(part) if index % 2 else part  # ``a `code` b``: text and literals
              for index, part in enumerate(re.split(r"`([^`]*)`", kind.when[0].upper()
                                                    + kind.when[1:])) if part]]
            for kind in WarningType]
        return self.located(blocks_to_nodes([Table(["Subtype", "When"], rows, counts_after=None,
                                                   classes=["fmha-warning-types"])]))


#: Each directive of this module by its name.
DIRECTIVES = {"fmha-kernel-guide": KernelGuideDirective, "fmha-kernel-set": KernelSetDirective,
              "fmha-filter-check": FilterCheckDirective, "fmha-api-list": ApiListDirective,
              "fmha-filename": FilenameDirective, "fmha-warning-types": WarningTypesDirective}
