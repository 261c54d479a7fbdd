import numpy as np
import pytest
from PIL import Image

from builders import swin_unet_dataset, voc_palette, write_list, write_png
from fix_data import digests
from labelguard import LabelSpec
from labelguard._audit import audit
from labelguard.fix import clean_list, colors, undo
from labelguard.layouts.base import AuditOptions
from labelguard.readers.masks import read_mask


def list_codes(data, listing) -> set[str]:
    report = audit(str(data), LabelSpec(num_classes=9), options=AuditOptions(lists=(str(listing),)),
                   use_project_config=False)
    return {f.code for f in report.findings if f.code in ("LG003", "LG004")}


def test_clean_list_round_trip(tmp_path):
    data, listing = swin_unet_dataset(tmp_path, n=4)
    names = [p.stem for p in sorted(data.glob("*.npz"))]
    write_list(listing, [names[0] + " ", names[1], "", names[1], "  " + names[2], "case9999_slice000", names[3]],
               newline="\r\n", bom=True)
    original = digests([listing])
    assert list_codes(data, listing) == {"LG003", "LG004"}

    dry = clean_list(str(listing))
    assert dry.changes[0].status == "planned" and dry.changes[0].details["removed"] == ["case9999_slice000"]
    assert digests([listing]) == original

    result = clean_list(str(listing), apply=True)
    assert result.changes[0].status == "written"
    assert listing.read_bytes() == ("".join(n + "\n" for n in names)).encode()
    assert list_codes(data, listing) == set()
    undo(str(listing.parent))
    assert digests([listing]) == original


def test_clean_list_refuses_when_the_root_is_wrong(tmp_path):
    listing = write_list(tmp_path / "deep" / "er" / "lists" / "train.txt", ["a", "b", "c "])
    result = clean_list(str(listing), apply=True)
    assert result.changes[0].status == "refused" and "--root" in result.changes[0].summary
    kept = clean_list(str(listing), drop_missing=False, apply=True)
    assert kept.changes[0].status == "written" and listing.read_bytes() == b"a\nb\nc\n"


def test_clean_list_leaves_a_clean_list_alone(tmp_path):
    data, listing = swin_unet_dataset(tmp_path, n=2)
    assert clean_list(str(listing), apply=True).changes[0].status == "unchanged"
    assert not (listing.parent / ".labelguard").exists()


def _voc_colour_mask(seed: int) -> np.ndarray:
    index = np.zeros((24, 24), dtype=np.uint8)
    index[4:12, 4:12] = 1
    index[14:20, 10:22] = 2 + seed % 2
    palette = np.array(voc_palette(), dtype=np.uint8).reshape(-1, 3)
    return palette[index]


@pytest.mark.parametrize("mode", ["P", "L"])
def test_colors_round_trip(tmp_path, mode):
    files = [write_png(tmp_path / "masks" / f"m{i}.png", _voc_colour_mask(i)) for i in range(2)]
    original = digests(files)
    spec = LabelSpec(num_classes=21)
    assert "LG203" in {f.code for f in audit(str(tmp_path / "masks"), spec, use_project_config=False).findings}
    result = colors(str(tmp_path / "masks"), spec=spec, mode=mode, apply=True)
    assert result.count("written") == 2, result.changes
    record = read_mask(str(files[0]))
    assert record.mode == mode and set(np.unique(record.array)) == {0, 1, 2}
    report = audit(str(tmp_path / "masks"), spec, use_project_config=False)
    assert not [f for f in report.findings if str(f.severity) == "error"]
    undo(str(tmp_path / "masks"))
    assert digests(files) == original


def test_colors_skips_masks_with_colours_outside_the_map(tmp_path):
    mask = _voc_colour_mask(0)
    mask[0, 0] = (1, 2, 3)
    write_png(tmp_path / "m.png", mask)
    result = colors(str(tmp_path / "m.png"), {"0,0,0": 0, "128,0,0": 1, "0,128,0": 2}, apply=True)
    assert result.changes[0].status == "skipped" and "(1, 2, 3)" in result.changes[0].summary
    filled = colors(str(tmp_path / "m.png"), {"0,0,0": 0, "128,0,0": 1, "0,128,0": 2}, unmapped=255, apply=True)
    assert filled.changes[0].status == "written"
    assert Image.open(tmp_path / "m.png").getpixel((0, 0)) == 255


def test_colors_converts_each_dataset_through_its_own_colour_map(tmp_path):
    from builders import datasets_numbering_colours_differently

    datasets_numbering_colours_differently(tmp_path)
    result = colors(str(tmp_path), mode="L", apply=True)
    assert result.count("written") == 2, result.changes
    a = read_mask(str(tmp_path / "a" / "masks" / "x.png")).array
    b = read_mask(str(tmp_path / "b" / "masks" / "x.png")).array
    assert a[3, 3] == 1 and a[10, 10] == 2  # car, tree in a's numbering
    assert b[3, 3] == 2 and b[10, 10] == 1  # car, tree in b's numbering
