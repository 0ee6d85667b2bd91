"""The test suite's shared helpers: synthetic CK trees, the independent generate.py
runner, Sphinx project builds, child-process and browser tools.

Test modules import from here (``from helpers.synthetic import make_tree``), never from
one another or from ``conftest``; ``tests/`` is on ``sys.path`` (pytest's rootdir
insertion, and ``conftest.py`` makes sure)."""
