"""Declared size relations (``sizes``): "equal" (the default), "any", or a scale factor, for
the audit's LG206 (a mask against its image) and LG213 (a sample against the rest of its
dataset) and the guard's LG206 (a target against its input).

Seed 002's own domain: super-resolution pairs whose target is twice the input's size by
design got LG206 on every sample in ``guard`` with no way to say so; a 64x64 slice among
32x32 slices went unreported by the audit and stopped training at collate."""

from __future__ import annotations

import numpy as np
import pytest

from builders import write_png
from labelguard._audit import audit
from labelguard.core.spec import LabelSpec
from labelguard.errors import SpecError

torch = pytest.importorskip("torch")

from labelguard.torch import SampleError, guard  # noqa: E402


def sr_pairs(n: int, scale: int = 2, odd: dict | None = None, channels: int = 3):
    """(low-resolution input, high-resolution target in [0, 1]) pairs, as RCAN's loader gives
    them (``channels=1``: the Y channel alone); ``odd`` maps an index to another target size."""
    generator = torch.Generator().manual_seed(0)
    pairs = []
    for i in range(n):
        size = (odd or {}).get(i, 12 * scale)
        pairs.append((torch.rand(channels, 12, 12, generator=generator),
                      torch.rand(channels, size, size, generator=generator)))
    return pairs


@pytest.mark.code("LG206", "fail")
def test_super_resolution_pairs_are_lg206_unless_their_scale_is_declared():
    pairs = sr_pairs(4, channels=1)
    with pytest.raises(SampleError) as caught:
        guard(pairs, loss="bce")[0]
    assert caught.value.code == "LG206"
    assert "sizes=<scale factor>" in str(caught.value)
    for declared in (2, "2", "x2", 2.0):
        scaled = guard(pairs, loss="bce", sizes=declared)
        assert [scaled[i][1].shape for i in range(4)] == [(1, 24, 24)] * 4
    assert guard(pairs, spec=LabelSpec(sizes=2), loss="bce")[3] is pairs[3]


@pytest.mark.code("LG206", "fail")
def test_a_pair_off_the_declared_scale_is_named():
    pairs = sr_pairs(4, odd={2: 36})
    with pytest.raises(SampleError) as caught:
        for i in range(4):
            guard(pairs, loss="bce", sizes=2)[i]
    assert (caught.value.code, caught.value.index) == ("LG206", 2)
    assert "target shape (3, 36, 36): the target is not 2 times the input's size (sizes=2)" in str(caught.value)


@pytest.mark.code("LG206", "pass")
@pytest.mark.parametrize(("input_shape", "target_shape", "factor"), [
    ((3, 12, 12), (3, 24, 24), 2),        # RGB super-resolution, channels first
    ((12, 12, 3), (24, 24, 3), 2),        # channels last (numpy HWC)
    ((1, 8, 12, 12), (1, 16, 24, 24), 2),  # a volume, every spatial axis scaled
    ((8, 12, 12), (8, 24, 24), 2),        # slices kept, height and width scaled
    ((3, 27, 27), (13, 13), 0.5),         # a mask at half size, rounded down (interpolate)
    ((3, 25, 25), (13, 13), 0.5),         # ... or up (a strided convolution)
])
def test_a_declared_scale_fits_channels_volumes_and_rounding(input_shape, target_shape, factor):
    pair = [(torch.rand(*input_shape), torch.rand(*target_shape))]
    assert guard(pair, sizes=factor)[0] is pair[0]
    assert LabelSpec(sizes=1).sizes == "equal"  # a factor of 1 is the default relation


@pytest.mark.code("LG206", "pass")
def test_sizes_any_checks_no_size_and_equal_is_the_default():
    pairs = sr_pairs(3, odd={1: 30})
    loose = guard(pairs, loss="bce", sizes="any")
    assert [loose[i][1].shape[-1] for i in range(3)] == [24, 30, 24]
    masks = [(torch.zeros(1, 8, 8), torch.zeros(8, 8, dtype=torch.int64)), (torch.zeros(1, 8, 8),
                                                                          torch.zeros(6, 8, dtype=torch.int64))]
    strict = guard(masks, num_classes=2, sizes="equal")
    strict[0]
    with pytest.raises(SampleError, match="LG206"):
        strict[1]
    with pytest.raises(SpecError, match="sizes must be"):
        guard(masks, num_classes=2, sizes="big")
    with pytest.raises(SpecError, match="sizes must be"):
        guard(masks, num_classes=2, sizes=-2)


def pair_folder(root, image_size: int, mask_size: int):
    for name in ("a", "b"):
        write_png(root / "images" / f"{name}.png", np.zeros((image_size, image_size, 3), np.uint8))
        write_png(root / "masks" / f"{name}.png", np.eye(mask_size, dtype=np.uint8))
    return root


@pytest.mark.code("LG206", "fail")
@pytest.mark.code("LG206", "pass")
def test_the_audit_reads_the_declared_scale_between_mask_and_image(tmp_path):
    root = pair_folder(tmp_path, 8, 16)
    assert "LG206" in {f.code for f in audit([root], spec={"num_classes": 2}).findings}
    assert "LG206" not in {f.code for f in audit([root], spec={"num_classes": 2, "sizes": 2}).findings}
    assert "LG206" not in {f.code for f in audit([root], spec={"num_classes": 2, "sizes": "any"}).findings}
    off = audit([root], spec={"num_classes": 2, "sizes": 3}).findings
    assert [f.message for f in off if f.code == "LG206"][0].startswith("mask 16x16 is not 3 times the size of image")
    assert [f.message for f in off if f.code == "LG206"][0].endswith("8x8 (3 channels) (sizes=3)")


@pytest.mark.code("LG213", "fail")
def test_a_slice_at_another_resolution_is_lg213_naming_it_and_the_majority(tmp_path):
    for i in range(12):
        n = 64 if i == 7 else 32
        np.savez(tmp_path / f"case0005_slice{i:03d}.npz", image=np.zeros((n, n), np.float32),
                 label=np.zeros((n, n), np.uint8))
    [finding] = [f for f in audit([tmp_path], spec={"num_classes": 3}).findings if f.code == "LG213"]
    assert f"1 mask of {tmp_path} differs in shape from the 11 of 12 there that are 32x32: 64x64 in 1" \
        in finding.message
    assert finding.data["examples"]["64x64"][0].endswith("case0005_slice007.npz")
    assert "LG213" not in {f.code for f in audit([tmp_path], spec={"num_classes": 3, "sizes": "any"}).findings}


@pytest.mark.code("LG213", "pass")
def test_masks_of_many_sizes_are_a_loader_that_resizes_not_lg213(tmp_path):
    for i in range(70):  # more shapes than are counted: sizes vary by design
        write_png(tmp_path / "masks" / f"{i}.png", np.zeros((20 + i, 30), np.uint8))
    report = audit([tmp_path / "masks"], spec={"num_classes": 2})
    assert "LG213" not in {f.code for f in report.findings}


def test_a_config_shipped_with_the_data_cannot_declare_sizes(tmp_path):
    root = pair_folder(tmp_path / "data", 8, 16)
    (root / "labelguard.toml").write_text('[labels]\nnum_classes = 2\nsizes = "any"\n')
    report = audit([root])
    assert "LG206" in {f.code for f in report.findings}
    [use] = [use for use in report.configs if use.path.endswith("labelguard.toml")]
    assert "labels.sizes" in {refusal.setting for refusal in use.refused}
    assert "labels.num_classes" in use.applied
    mine = tmp_path / "mine.toml"
    mine.write_text('[labels]\nnum_classes = 2\nsizes = "any"\n')
    assert "LG206" not in {f.code for f in audit([root], config_file=str(mine)).findings}
