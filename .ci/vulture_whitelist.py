# Reviewed false positives of `vulture sphinxext_fmha --min-confidence 80` (.ci/lint):
# parameters that a caller outside the package passes by its signature.
templatename  # noqa: B018, F821  # Sphinx's html-page-context event (directives/playground.py)
context  # noqa: B018, F821  # Sphinx's html-page-context event (directives/playground.py)
added  # noqa: B018, F821  # Sphinx's env-get-outdated event (directives/sphinx_glue.py)
frame  # noqa: B018, F821  # a signal.signal handler (process/launch.py)
