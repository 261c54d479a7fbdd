"""Strict data admission: the spec's dtype, values, require_pairs and max_files_unreadable,
written in a committed labelguard.toml, make findings with catalog codes and fail the audit."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from audit_helpers import found
from builders import organic_mask, rgb_image, write_png
from labelguard._audit import audit
from labelguard.cli import main
from labelguard.config import load_config
from labelguard.errors import SpecError

CONTRACT = """[labels]
values = [0, 1, 2]
dtype = "uint8"
require_pairs = true
max_files_unreadable = 0
"""


def _dataset(root, *, wide=False, orphan=False, broken=False, stray=False):
    """images/ + masks/ holding three pairs; each flag plants one breach of the contract."""
    for index in range(3):
        write_png(root / "images" / f"s{index}.png", rgb_image((32, 32), seed=index))
        mask = organic_mask((32, 32), (0, 1, 2), seed=index)
        if stray and index == 0:
            mask[0, :4] = 7
        write_png(root / "masks" / f"s{index}.png", mask, mode="I;16" if wide and index == 1 else None)
    if orphan:
        write_png(root / "masks" / "lonely.png", organic_mask((32, 32), (0, 1), seed=9))
    if broken:
        (root / "masks" / "cut.png").write_bytes(b"\x89PNG\r\n\x1a\n")
        write_png(root / "images" / "cut.png", rgb_image((32, 32)))
    (root / "labelguard.toml").write_text(CONTRACT, encoding="utf-8")
    return root


@pytest.mark.code("LG207", "pass")
@pytest.mark.code("LG002", "pass")
def test_a_dataset_that_keeps_its_contract_passes(tmp_path):
    report = audit(_dataset(tmp_path))
    assert report.findings == []
    assert report.spec.dtype == "uint8" and report.spec.require_pairs and report.spec.max_files_unreadable == 0
    assert "labelguard.toml" in report.spec.describe_origins()


@pytest.mark.code("LG207", "fail")
def test_a_mask_wider_than_the_declared_dtype_is_lg207(tmp_path):
    report = audit(_dataset(tmp_path, wide=True))
    [wide] = found(report, "LG207")
    assert wide.path.endswith("s1.png") and wide.data == {"dtype": "uint16", "declared": "uint8"}
    assert wide.message.startswith("mask stored as uint16 (I;16), the spec (") and "labelguard.toml)" in wide.message
    assert wide.message.endswith('declares dtype = "uint8"')


@pytest.mark.code("LG002", "fail")
def test_require_pairs_names_each_mask_without_an_image_once(tmp_path):
    report = audit(_dataset(tmp_path, orphan=True))
    [orphan] = found(report, "LG002")
    assert orphan.path.endswith("lonely.png")


@pytest.mark.code("LG002", "fail")
def test_require_pairs_names_masks_of_a_dataset_without_images(tmp_path):
    for index in range(2):
        write_png(tmp_path / "masks" / f"m{index}.png", organic_mask((16, 16), (0, 1), seed=index))
    (tmp_path / "labelguard.toml").write_text("[labels]\nnum_classes = 2\nrequire_pairs = true\n")
    report = audit(tmp_path)
    assert sorted(f.path.rsplit("/", 1)[-1] for f in found(report, "LG002")) == ["m0.png", "m1.png"]
    assert "labelguard.toml) requires pairs" in found(report, "LG002")[0].message


@pytest.mark.code("LG001", "fail")
def test_unreadable_files_over_the_bound_are_a_dataset_finding(tmp_path):
    report = audit(_dataset(tmp_path, broken=True))
    per_file = [f for f in found(report, "LG001") if f.path]
    [bound] = [f for f in found(report, "LG001") if f.path is None]
    assert [f.path.rsplit("/", 1)[-1] for f in per_file] == ["cut.png"]
    assert bound.data == {"unreadable": 1, "bound": 0}
    assert bound.message.startswith("1 file cannot be read and the spec (")
    assert bound.message.endswith("labelguard.toml) allows at most 0 (max_files_unreadable)")


def test_values_outside_the_declared_values_are_lg201(tmp_path):
    report = audit(_dataset(tmp_path, stray=True))
    [stray] = found(report, "LG201")
    assert stray.data["values"] == [7]


def test_the_admission_gate_fails_the_command_on_each_breach(tmp_path):
    clean = _dataset(tmp_path / "clean")
    breached = _dataset(tmp_path / "breached", wide=True, orphan=True, broken=True, stray=True)
    runner = CliRunner()
    ok = runner.invoke(main, ["audit", str(clean), "--no-progress", "--workers", "1"])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(main, ["audit", str(breached), "--no-progress", "--workers", "1", "-f", "json"])
    assert bad.exit_code == 1
    for code in ("LG001", "LG002", "LG201", "LG207"):
        assert f'"code": "{code}"' in bad.output


@pytest.mark.parametrize("line, says", [
    ('dtype = "float32"', "dtype must be one of uint8"),
    ("dtype = 8", "dtype must be one of uint8"),
    ('require_pairs = "yes"', "require_pairs must be true or false"),
    ("max_files_unreadable = -1", "max_files_unreadable must be 0 or more"),
    ("max_files_unreadable = 1.5", "max_files_unreadable must be an integer"),
])
def test_a_contract_key_of_the_wrong_type_is_an_error_naming_it(tmp_path, line, says):
    config = tmp_path / "labelguard.toml"
    config.write_text(f"[labels]\nnum_classes = 2\n{line}\n", encoding="utf-8")
    with pytest.raises(SpecError, match=says):
        load_config(str(config))


def test_the_contract_keys_are_in_the_json_spec(tmp_path):
    report = audit(_dataset(tmp_path))
    spec = report.to_dict()["summary"]["spec"]
    assert spec["dtype"] == "uint8" and spec["require_pairs"] is True and spec["max_files_unreadable"] == 0
    assert np.array_equal(spec["values"], [0, 1, 2])
