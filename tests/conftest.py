"""Shared test set-up.

Marking the check codes a test covers
-------------------------------------
Every registered check code needs a test that shows it firing on bad data (a "fail" case)
and a test that shows it silent on good data (a "pass" case); ``tests/test_meta.py`` fails,
naming the code and the missing kind, until both exist. Mark such tests::

    @pytest.mark.code("LG201", "fail")   # asserts LG201 IS reported for this data
    @pytest.mark.code("LG201", "pass")   # asserts LG201 is NOT reported for this data
    def test_...

Stack several markers on one test, give ``pytestmark = [pytest.mark.code(...)]`` for a whole
module, or mark one parameter with ``pytest.param(..., marks=pytest.mark.code(...))``. Write
the arguments as string literals: the meta-test reads the markers from the test sources (see
``code_markers.py``), so it gives the same answer whether it runs alone or in the whole suite.
A marker whose code is not registered or whose kind is not "fail"/"pass" makes its test error.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from code_markers import KINDS  # noqa: E402  (needs the sys.path line above)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        'code(code, kind): the test is a "fail" or "pass" case of a check code (see tests/conftest.py)',
    )


def pytest_runtest_setup(item):
    from labelguard.core.registry import REGISTRY
    import labelguard.checks  # noqa: F401  (registers every code)

    for mark in item.iter_markers("code"):
        if len(mark.args) != 2 or mark.kwargs:
            pytest.fail(f"@pytest.mark.code takes (code, kind), got {mark.args} {mark.kwargs}", pytrace=False)
        code, kind = mark.args
        if code not in REGISTRY:
            pytest.fail(f"@pytest.mark.code names {code!r}, which is not a registered check code", pytrace=False)
        if kind not in KINDS:
            pytest.fail(f"@pytest.mark.code({code!r}, {kind!r}): kind must be one of {', '.join(KINDS)}",
                        pytrace=False)
