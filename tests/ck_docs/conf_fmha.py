# --- sphinxext-fmha: FMHA kernel selection guides -------------------------
import os
import sys

# the CK tree these docs belong to is found upward from this folder
extensions += ["sphinxext_fmha"]  # noqa: F821 - set by the loop above

# Building without a network (ROCM_DOCS_OFFLINE=1): rocm_docs_offline.py,
# next to this file, answers rocm-docs-core's reads of its files on GitHub,
# and no project list or inventory of the other ROCm projects is fetched.
if os.environ.get("ROCM_DOCS_OFFLINE"):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import rocm_docs_offline  # noqa: E402, F401

    external_projects_remote_repository = ""
    external_projects = []
