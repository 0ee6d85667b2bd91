# CK's docs/conf.py (trimmed), with sphinxext-fmha added.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if os.environ.get("ROCM_DOCS_OFFLINE"):
    # local answers for the files rocm-docs-core reads from GitHub
    import rocm_docs_offline  # noqa: F401

from rocm_docs import ROCmDocs

html_theme_options = {"flavor": "list"}
left_nav_title = "Composable Kernel Documentation"
project = "Composable Kernel Documentation"
author = "Advanced Micro Devices, Inc."
copyright = "Copyright (c) 2023 Advanced Micro Devices, Inc."
version = release = "1.1.0"

external_projects_current_project = "composable_kernel"
external_projects_remote_repository = ""
external_projects = []

docs_core = ROCmDocs(left_nav_title)
docs_core.setup()

for sphinx_var in ROCmDocs.SPHINX_VARS:
    globals()[sphinx_var] = getattr(docs_core, sphinx_var)

extensions += ["sphinxext_fmha"]  # noqa: F821 - set by the loop
# None (unset): the CK tree is found upward from this folder
fmha_ck_root = os.environ.get("FMHA_CK_ROOT")
