"""A mask container is one module of ``labelguard/readers/containers/`` and its test: the
module's ``@mask_reader(name, magic=..., extensions=...)`` makes the format sniffable, its files
mask candidates by name, and read, so every mask rule judges them; nothing else is edited."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import labelguard

# A made-up container: b"LGRAW1\n", then height and width as one byte each, then the pixels.
CONTAINER = '''"""LGRAW, a test container: a magic line, height and width, uint8 pixels."""

import numpy as np

from labelguard.core.records import MaskRecord
from labelguard.readers.base import ReadError, check_array, read_bytes
from labelguard.readers.masks import mask_reader

MAGIC = b"LGRAW1\\n"


@mask_reader("lgraw", magic=(MAGIC,), extensions=(".lgraw",))
def read_lgraw(request):
    data = read_bytes(request.path, "LGRAW mask")
    if len(data) < len(MAGIC) + 2:
        raise ReadError("an LGRAW file without its size")
    height, width = data[len(MAGIC)], data[len(MAGIC) + 1]
    check_array("the LGRAW header", (height, width), 1, np.uint8)
    pixels = data[len(MAGIC) + 2:]
    if len(pixels) != height * width:
        raise ReadError(f"an LGRAW file of {height}x{width} holds {len(pixels)} pixels")
    array = np.frombuffer(pixels, np.uint8).reshape(height, width)
    return MaskRecord(array, request.container, request.declared, "uint8")
'''

AUDIT = """
import json, sys
from labelguard._audit import audit
report = audit(sys.argv[1], {"num_classes": 3}, workers=1, cache=False, use_project_config=False)
print(json.dumps({"files": sorted(report.files), "codes": sorted(((f.path or "").rsplit("/", 1)[-1], f.code)
                  for f in report.findings)}))
"""


def lgraw(array: np.ndarray) -> bytes:
    return b"LGRAW1\n" + bytes(array.shape) + array.astype(np.uint8).tobytes()


def test_a_container_written_as_one_module_is_read_and_judged_by_the_mask_rules(tmp_path):
    copy = tmp_path / "src" / "labelguard"
    shutil.copytree(Path(labelguard.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "readers" / "containers" / "lgraw.py").write_text(CONTAINER, encoding="utf-8")
    data = tmp_path / "masks"
    data.mkdir()
    (data / "good.lgraw").write_bytes(lgraw(np.eye(4) * 2))
    (data / "bad.lgraw").write_bytes(lgraw(np.eye(4) * 7))
    (data / "cut.lgraw").write_bytes(lgraw(np.eye(4))[:-3])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(copy.parent), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", AUDIT, str(data)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert [Path(f).name for f in found["files"]] == ["bad.lgraw", "cut.lgraw", "good.lgraw"]
    assert ["bad.lgraw", "LG201"] in found["codes"]
    assert ["cut.lgraw", "LG001"] in found["codes"]
    assert not [c for c in found["codes"] if c[0] == "good.lgraw"]


def test_without_the_module_such_files_are_no_masks(tmp_path):
    """The package itself knows no such container: only the module's registration adds it."""
    (tmp_path / "a.lgraw").write_bytes(lgraw(np.eye(4) * 7))
    from labelguard.readers.masks import is_mask_candidate

    assert not is_mask_candidate(str(tmp_path / "a.lgraw"))
