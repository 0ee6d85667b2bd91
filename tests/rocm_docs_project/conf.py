# A CK-style docs/conf.py (composable_kernel's, trimmed) with sphinxext-fmha added.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if os.environ.get("ROCM_DOCS_OFFLINE"):
    import rocm_docs_offline  # noqa: F401  (local answers for rocm-docs-core's GitHub files)

from rocm_docs import ROCmDocs

html_theme_options = {"flavor": "list"}
left_nav_title = "Composable Kernel Documentation"
project = "Composable Kernel Documentation"
author = "Advanced Micro Devices, Inc."
copyright = "Copyright (c) 2023 Advanced Micro Devices, Inc. All rights reserved."
version = release = "1.1.0"

external_projects_current_project = "composable_kernel"
external_projects_remote_repository = ""
external_projects = []

docs_core = ROCmDocs(left_nav_title)
docs_core.setup()

for sphinx_var in ROCmDocs.SPHINX_VARS:
    globals()[sphinx_var] = getattr(docs_core, sphinx_var)

extensions += ["sphinxext_fmha"]  # noqa: F821 - set by the loop above
fmha_ck_root = os.environ.get("FMHA_CK_ROOT")  # None: found upward from this folder
