"""What the tests compare against, and what they share (not tests themselves).

- ``overlap``, ``metrics``, ``agreement``: plain-Python definitions of what the
  packages compute, slow and obvious on purpose;
- ``helpers``: corpora, hypothesis strategies and builders shared by test files
  (a test file never imports another test file), and scipy.stats from the
  declared floor (1.9.3) to today: what an older scipy lacks or does
  differently;
- ``levels``: the kernels' run-time CPU levels, for tests that run each one;
- ``datadir``: where the shared real data lives (the benchmarks load it by path);
- ``scipy_suite``: scipy's own correlation tests run against ``metrics``.

``tests/`` is on ``sys.path`` under pytest (``tests/conftest.py``'s folder, no
``__init__.py`` above it), so ``from reference import overlap as ref`` works for
``pytest`` and ``python -m pytest`` alike, against an installed package or the
source tree.
"""
