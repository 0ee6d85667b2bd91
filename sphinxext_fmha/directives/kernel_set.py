"""``.. fmha-kernel-set:: API`` -- just the set for a workload: keep/drop, what you
lose, the commands (each with what its pattern keeps), the counts and the build cost.

``:need: dtype=fp16,bf16; hdim=64,128`` names the workload (else the default minimal
set); its sections are the guide's 5-8, built by the same renderers.
"""

from __future__ import annotations

from typing import List

from docutils import nodes
from docutils.parsers.rst import directives

from ..guide import collect_guide
from ..guide_data import SectionNeed, sections_needing
from ..render.guide_blocks import guide_sections
from ..render.nodes import sections_to_nodes
from .kernel_guide import HEADINGS, _doc_link
from .sphinx_glue import OPTION_SPEC, FmhaDirective, logger

__all__ = ["KernelSetDirective", "SET_SECTIONS"]

#: The guide's sections the set shows.
SET_SECTIONS = list(sections_needing(SectionNeed.SET, SectionNeed.SET_IF_MADE))


class KernelSetDirective(FmhaDirective):
    """``.. fmha-kernel-set:: API`` with ``:need:``."""

    what = "FMHA kernel set"
    required_arguments = 1  # the API (no content: a directive has none by default)
    option_spec = dict(OPTION_SPEC, need=directives.unchanged)

    def run_fmha(self) -> List[nodes.Node]:
        api = self.arguments[0].strip()
        session, options = self.session_and_options()
        needs = self.fmha_needs(session, api, options)
        logger.verbose("[fmha] %s: kernel set for %s", self.env.docname, api)
        data = collect_guide(session, api, options, SET_SECTIONS, needs)
        if data.recommendation_problem is not None:
            data.recommendation_problem.message = "%s: %s" % (
                api, data.recommendation_problem.message)
            return self.report(data.recommendation_problem)
        self.warn_suspicious(data.model)
        self.warn_unmet(data.recommendation)
        node = sections_to_nodes(guide_sections(data, SET_SECTIONS), api, HEADINGS[2],
                                 _doc_link, [])
        self.set_source_info(node)
        return [node]
