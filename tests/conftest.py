"""Shared test set-up.

Marking the check codes a test covers
-------------------------------------
Every registered check code needs a test that shows it firing on bad data (a "fail" case)
and a test that shows it silent on good data (a "pass" case); ``tests/test_meta.py`` fails,
naming the code and the missing kind, until both exist. A rule's own failing and passing
``Example``s count (``tests/test_rules.py`` audits each on real files); other tests are marked::

    @pytest.mark.code("LG201", "fail")   # asserts LG201 IS reported for this data
    @pytest.mark.code("LG201", "pass")   # asserts LG201 is NOT reported for this data
    def test_...

Stack several markers on one test, give ``pytestmark = [pytest.mark.code(...)]`` for a whole
module, or mark one parameter with ``pytest.param(..., marks=pytest.mark.code(...))``. Write
the arguments as string literals: the meta-test reads the markers from the test sources (see
``code_markers.py``), so it gives the same answer whether it runs alone or in the whole suite.
A marker whose code is not registered or whose kind is not "fail"/"pass" makes its test error.

Tests write only to temporary folders
-------------------------------------
Hypothesis keeps its caches under a temporary folder removed at the end of the run, and
keeps no example database (``.hypothesis/`` would otherwise appear in the current folder).
A run that leaves a new untracked or ignored file in the checkout fails, naming the file:
write to ``tmp_path`` (or run a script with ``cwd=tmp_path``) instead.

Each test's audits cache their results in a folder of its own (``LABELGUARD_CACHE_DIR`` and
``XDG_CACHE_HOME``, which the commands a test starts inherit), beside its ``tmp_path`` rather
than in it, so that a test comparing the files under ``tmp_path`` sees only its own; a
cached result never leaks from one test into another. Outside a test (collection, session
fixtures) both point into a folder the session makes and removes: the user's real cache
folder is never the default during a run, whatever other labelguard processes on the
machine write there (``tests/test_cache.py`` checks the default).
"""

import os
import signal
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

sys.path.insert(0, str(Path(__file__).parent))

from code_markers import KINDS  # noqa: E402  (needs the sys.path line above)

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
# Caches that Python and pytest themselves write into the checkout (and .gitignore lists).
TOOL_CACHES = ("__pycache__/", ".pytest_cache/")

settings.register_profile("labelguard", database=None)
settings.load_profile("labelguard")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        'code(code, kind): the test is a "fail" or "pass" case of a check code (see tests/conftest.py)',
    )
    # Scripts and commands the tests start (with cwd=tmp_path) import this checkout's labelguard,
    # not whichever one the interpreter would find from their folder.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
    # A suite started as a background job of a non-interactive shell (`.ci/run &`, nohup)
    # inherits SIGINT ignored, and so would every command it starts: the tests of Ctrl-C would
    # see an audit that cannot be interrupted. A caught handler is reset to the default by
    # exec, so the commands get Python's own Ctrl-C again.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    config.hypothesis_home = tempfile.mkdtemp(prefix="labelguard-hypothesis-")
    set_hypothesis_home_dir(config.hypothesis_home)
    config.checkout_before = _checkout_junk()
    from labelguard.core.cache import default_cache_dir

    os.environ["LABELGUARD_TEST_USER_CACHE"] = default_cache_dir()  # what the user's audits use
    config.session_cache = tempfile.mkdtemp(prefix="labelguard-test-cache-")
    os.environ["XDG_CACHE_HOME"] = config.session_cache
    os.environ["LABELGUARD_CACHE_DIR"] = os.path.join(config.session_cache, "labelguard")
    os.environ["LABELGUARD_TEST_SESSION_CACHE"] = config.session_cache


@pytest.fixture(autouse=True)
def _own_result_cache(tmp_path_factory, monkeypatch):
    """Every test's audits cache in a fresh folder outside its tmp_path (see the docstring)."""
    folder = tmp_path_factory.mktemp("result-cache")
    monkeypatch.setenv("LABELGUARD_CACHE_DIR", str(folder / "labelguard"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))


def pytest_unconfigure(config):
    shutil.rmtree(config.hypothesis_home, ignore_errors=True)
    if getattr(config, "session_cache", None):  # absent when configure failed before making it
        shutil.rmtree(config.session_cache, ignore_errors=True)


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    before = config.checkout_before
    if before is None:
        return
    left = sorted(_checkout_junk() - before)
    if left:
        _fail_session(session, "the test run left files in the checkout (tests write only to tmp_path): "
                      + ", ".join(left))


def _fail_session(session, message: str) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_line(message, red=True)
    else:
        print(message, file=sys.stderr)
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _checkout_junk() -> set[str] | None:
    """Untracked and ignored paths of the checkout, or None outside a git checkout."""
    try:
        result = subprocess.run(
            ["git", "status", "--porcelain", "--ignored", "-z"],
            cwd=REPO, capture_output=True, text=True, timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    paths = set()
    for entry in result.stdout.split("\0"):
        status, path = entry[:2], entry[3:]
        if status in ("??", "!!") and not any(
            path.startswith(cache) or f"/{cache}" in path for cache in TOOL_CACHES
        ):
            paths.add(path)
    return paths


def pytest_runtest_setup(item):
    from labelguard.core.registry import REGISTRY
    import labelguard.rules  # noqa: F401  (registers every code)

    for mark in item.iter_markers("code"):
        if len(mark.args) != 2 or mark.kwargs:
            pytest.fail(f"@pytest.mark.code takes (code, kind), got {mark.args} {mark.kwargs}", pytrace=False)
        code, kind = mark.args
        if code not in REGISTRY:
            pytest.fail(f"@pytest.mark.code names {code!r}, which is not a registered check code", pytrace=False)
        if kind not in KINDS:
            pytest.fail(f"@pytest.mark.code({code!r}, {kind!r}): kind must be one of {', '.join(KINDS)}",
                        pytrace=False)
