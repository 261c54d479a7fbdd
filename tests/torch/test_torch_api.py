"""labelguard.torch's errors, and labelguard without torch (the exact names: tests/test_api.py)."""

import subprocess
import sys

import pytest

pytest.importorskip("torch")

import labelguard  # noqa: E402
import labelguard.torch as lgt  # noqa: E402
from labelguard import LabelError, MissingDependency  # noqa: E402
from labelguard._optional import available  # noqa: E402


def test_every_error_is_a_label_error_and_a_value_error():
    for error in (lgt.SampleError, lgt.NonFiniteError, lgt.PreflightError):
        assert issubclass(error, LabelError) and issubclass(error, ValueError)


def run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_import_labelguard_does_not_import_torch():
    result = run("import sys, labelguard, labelguard.rules, labelguard.explain, labelguard.fix\n"
                 "print('torch' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_without_torch_the_message_names_the_extra():
    result = run(
        "import sys; sys.modules['torch'] = None\n"  # what an environment without torch gives
        "import labelguard\n"
        "try:\n"
        "    import labelguard.torch\n"
        "except labelguard.MissingDependency as error:\n"
        "    print(error)\n"
    )
    assert result.returncode == 0, result.stderr
    assert "pip install 'labelguard[torch]'" in result.stdout


@pytest.mark.skipif(available("lightning") or available("pytorch_lightning"), reason="Lightning installed")
def test_lightning_callback_without_lightning_names_the_install():
    with pytest.raises(MissingDependency, match="pip install lightning"):
        import labelguard.torch.lightning  # noqa: F401


def test_version_is_exported():
    assert labelguard.__version__
