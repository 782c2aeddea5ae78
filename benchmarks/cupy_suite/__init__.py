"""CuPy's own test suite as the yardstick of the proxy's fidelity (issue 9).

``fetch.py`` brings the suite of a CuPy version (its sdist's ``tests/`` and the
real ``cupy.testing``; nothing of it is committed here), ``plugin.py`` is a
pytest plugin that puts one *side* under test (the proxy, local CuPy, or
NumPy posing as CuPy) and records every test's outcome, ``run.py`` runs the
selected folders once per side and ``score.py`` compares the sides: per
folder, the tests that pass on the baseline, those that also pass through
the proxy, and the *proxy bugs* (passed on the baseline, failed through the
proxy) grouped by cause. See docs/fidelity.md.
"""
