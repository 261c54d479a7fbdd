"""File lists: the parser (with hypothesis), entry resolution and LG003/LG004/LG005."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import organic_mask, swin_unet_dataset, write_list, write_npz, write_png
from labelguard._audit import audit
from labelguard.core.spec import LabelSpec
from labelguard.layouts import AuditOptions
from labelguard.readers.base import ReadError
from labelguard.readers.lists import parse_list
from audit_helpers import found

NINE = LabelSpec(num_classes=9)


def run_list(data: Path, *lists: Path, spec: LabelSpec = NINE):
    return audit(data, spec, options=AuditOptions(lists=tuple(str(p) for p in lists)), use_project_config=False)


def audited(report) -> list[str]:
    return sorted(Path(p).name for p in report.summary.value_examples.get(0, []))


# ---- the parser -------------------------------------------------------------------------

def test_parser_notes_every_unclean_line(tmp_path):
    path = tmp_path / "train.txt"
    path.write_bytes(b"\xef\xbb\xbfa\r\n b\n\nc \n# comment\na\n")
    listing = parse_list(str(path))
    assert [e.text for e in listing.entries] == ["a", "b", "c"]
    assert [e.line for e in listing.entries] == [1, 2, 4]
    assert listing.problems == {"bom": [1], "crlf": [1], "whitespace": [2, 4], "blank": [3],
                                "comment": [5], "duplicate": [6]}


def test_parser_splits_image_mask_pairs(tmp_path):
    listing = parse_list(str(write_list(tmp_path / "train.txt", ["/train/a.png /trainannot/a.png"])))
    assert listing.entries[0].fields == ("/train/a.png", "/trainannot/a.png")


def test_binary_file_is_not_a_list(tmp_path):
    path = write_npz(tmp_path / "archive.npz", label=np.zeros((4, 4), np.uint8)).rename(tmp_path / "train.txt")
    with pytest.raises(ReadError, match="binary"):
        parse_list(str(path))


NAME = st.text(alphabet="abcXYZ_019.-/", min_size=1, max_size=12)
PAD = st.sampled_from(["", " ", "\t", "  "])


@st.composite
def list_lines(draw):
    """(raw lines as written, newline per line) of a list with random dirt."""
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["name", "name", "name", "blank", "comment"]))
        if kind == "name":
            lines.append(draw(PAD) + draw(NAME) + draw(PAD))
        elif kind == "blank":
            lines.append(draw(PAD))
        else:
            lines.append("#" + draw(NAME))
    endings = [draw(st.sampled_from(["\n", "\r\n"])) for _ in lines]
    return lines, endings


@settings(max_examples=150, deadline=None)
@given(list_lines(), st.booleans())
def test_parser_against_a_reference_reading(tmp_path_factory, drawn, bom):
    lines, endings = drawn
    path = tmp_path_factory.mktemp("lists") / "train.txt"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + "".join(l + e for l, e in zip(lines, endings)).encode())
    listing = parse_list(str(path))

    expected_entries, seen = [], set()
    expected = {"whitespace": [], "blank": [], "comment": [], "duplicate": [], "crlf": []}
    for number, (line, ending) in enumerate(zip(lines, endings), 1):
        if ending == "\r\n":
            expected["crlf"].append(number)
        text = line.strip()
        if not text:
            expected["blank"].append(number)
        elif text.startswith("#"):
            expected["comment"].append(number)
        else:
            if text != line:
                expected["whitespace"].append(number)
            if text in seen:
                expected["duplicate"].append(number)
            else:
                seen.add(text)
                expected_entries.append((number, text))
    if bom:
        expected["bom"] = [1]
    assert [(e.line, e.text) for e in listing.entries] == expected_entries
    assert all(e.fields == tuple(e.text.split()) for e in listing.entries)
    assert listing.problems == {k: v for k, v in expected.items() if v}


# ---- resolution and findings ----------------------------------------------------------------

@pytest.mark.code("LG003", "pass")
@pytest.mark.code("LG004", "pass")
@pytest.mark.code("LG005", "pass")
def test_clean_list_without_extensions_selects_only_the_listed_files(tmp_path):
    data, listing = swin_unet_dataset(tmp_path, n=6, bad={5: 9})
    write_list(listing, ["case0001_slice000", "case0001_slice002", "case0002_slice000"])
    report = run_list(data, listing)
    assert not {"LG003", "LG004", "LG005"} & set(report.code_counts())
    assert report.summary.samples == 3
    assert not found(report, "LG201")  # slice 5 holds the bad value but is not listed
    assert audited(report) == ["case0001_slice000.npz", "case0001_slice002.npz", "case0002_slice000.npz"]


def test_entries_with_extension_and_subfolders_resolve(tmp_path):
    write_png(tmp_path / "masks" / "city" / "a.png", organic_mask((16, 16), (0, 1)))
    write_png(tmp_path / "masks" / "city" / "b.png", organic_mask((16, 16), (0, 1)))
    listing = write_list(tmp_path / "val.txt", ["city/a.png", "city/b"])
    report = run_list(tmp_path / "masks", listing, spec=LabelSpec(num_classes=2))
    assert report.summary.samples == 2 and report.code_counts() == {}


@pytest.mark.code("LG003", "fail")
def test_missing_listed_file(tmp_path):
    data, listing = swin_unet_dataset(tmp_path, n=3)
    write_list(listing, ["case0001_slice000", "case0031_slice007"])
    [finding] = found(run_list(data, listing), "LG003")
    assert finding.data == {"line": 2, "entry": "case0031_slice007"}
    assert Path(finding.path).name == "train.txt"


@pytest.mark.code("LG005", "fail")
def test_entries_escaping_the_root(tmp_path):
    data, listing = swin_unet_dataset(tmp_path / "dataset", n=3)
    write_npz(tmp_path / "elsewhere" / "x.npz", label=np.zeros((4, 4), np.uint8))
    outside = tmp_path / "elsewhere" / "x.npz"
    write_list(listing, ["case0001_slice000", "../../elsewhere/x.npz", str(outside), "../../../etc/shadow"])
    report = run_list(data, listing)
    assert sorted(f.data["line"] for f in found(report, "LG005")) == [2, 3, 4]
    assert report.summary.samples == 1  # files outside the root are never audited


def test_unreadable_list_is_lg001(tmp_path):
    data, listing = swin_unet_dataset(tmp_path, n=2)
    listing.write_bytes(b"\x00\x01\x02binary")
    [finding] = found(run_list(data, listing), "LG001")
    assert Path(finding.path).name == "train.txt"


def test_camvid_list_pairs_image_and_mask_on_one_line(tmp_path):
    mask = organic_mask((16, 16), (0, 1))
    write_png(tmp_path / "trainannot" / "0001TP_006690.png", mask)
    write_png(tmp_path / "train" / "0001TP_006690.png", np.zeros((8, 8, 3), np.uint8))
    write_png(tmp_path / "trainannot" / "0001TP_006720.png", mask)
    write_png(tmp_path / "train" / "0001TP_006720.png", np.zeros((16, 16, 3), np.uint8))
    listing = write_list(tmp_path / "train.txt", ["/train/0001TP_006690.png /trainannot/0001TP_006690.png"])
    report = run_list(tmp_path, listing, spec=LabelSpec(num_classes=2))
    assert report.summary.samples == 1
    [geometry] = found(report, "LG206")  # the pair named on the line is the one compared
    assert geometry.data["image_shape"] == [8, 8, 3]


def test_several_lists_are_unioned(tmp_path):
    data, listing = swin_unet_dataset(tmp_path, n=6)
    write_list(listing, ["case0001_slice000", "case0001_slice001"])
    other = write_list(tmp_path / "lists" / "val.txt", ["case0001_slice001", "case0002_slice002"])
    assert run_list(data, listing, other).summary.samples == 3


def image_mask_folders(root: Path) -> None:
    """images/ + masks/ with one image that has no mask (c.png)."""
    rng = np.random.default_rng(0)
    for name in ("a", "b", "c"):
        write_png(root / "images" / f"{name}.png", rng.integers(0, 255, (16, 16, 3), dtype=np.uint8))
    for name in ("a", "b"):
        write_png(root / "masks" / f"{name}.png", organic_mask((16, 16), (0, 1)))


@pytest.mark.code("LG003", "fail")
def test_a_list_naming_an_image_without_a_mask_never_audits_the_image_as_a_mask(tmp_path):
    image_mask_folders(tmp_path)
    write_list(tmp_path / "train.txt", ["images/a.png", "images/c.png"])
    report = audit(tmp_path, LabelSpec(num_classes=2), options=AuditOptions(lists=(str(tmp_path / "train.txt"),)),
                   workers=1)
    assert [Path(f).name for f in report.files] == ["a.png"], report.files
    assert all("images" not in Path(f).parts for f in report.files), report.files
    [missing] = found(report, "LG003")
    assert "images/c.png" in missing.message and "without a mask" in missing.message


@pytest.mark.code("LG003", "pass")
def test_a_list_naming_images_selects_their_masks(tmp_path):
    image_mask_folders(tmp_path)
    write_list(tmp_path / "train.txt", ["images/a.png", "images/b.png"])
    report = audit(tmp_path, LabelSpec(num_classes=2), options=AuditOptions(lists=(str(tmp_path / "train.txt"),)),
                   workers=1)
    assert sorted(Path(f).name for f in report.files) == ["a.png", "b.png"]
    assert all("masks" in Path(f).parts for f in report.files), report.files
    assert not found(report, "LG003") and not found(report, "LG206")


def test_a_list_that_names_only_photos_is_images_without_labels_never_masks(tmp_path):
    """mmpretrain's ann_without_labels.txt: an inference list of JPEGs. Read as a list of
    masks, its photos gave LG202/LG203 (or LG001 for git symlink stubs)."""
    from annotation_builders import write_image
    from click.testing import CliRunner
    from labelguard.cli import main

    for name in ("1.jpg", "2.jpeg"):
        write_image(tmp_path / "dataset" / name, (32, 24))
    listing = tmp_path / "dataset" / "ann_without_labels.txt"
    listing.write_text("1.jpg\n2.jpeg\n")
    result = CliRunner().invoke(main, ["audit", str(listing), "--no-cache", "--no-progress", "--no-config"])
    assert result.exit_code == 2, result.output
    assert "names 2 photos" in result.output and "images without labels" in result.output
    assert "LG20" not in result.output and "LG001" not in result.output


def test_a_lists_dataset_is_never_taken_from_another_dataset_found_below_a_parent(tmp_path):
    """Looking up from a list for its dataset, a parent whose only evidence lies in a sibling
    folder (an ADE20K tree beside the list's) is not the list's dataset."""
    import numpy as np
    from annotation_builders import write_ade20k, write_image
    from labelguard.layouts.base import discover_datasets

    write_ade20k(tmp_path / "other" / "ade" / "training" / "street", "x", np.ones((8, 8), np.int32))
    for name in ("1.jpg", "2.jpeg"):
        write_image(tmp_path / "a" / "b" / "dataset" / name, (32, 24))
    listing = tmp_path / "a" / "b" / "dataset" / "ann_without_labels.txt"
    listing.write_text("1.jpg\n2.jpeg\n")
    [found] = discover_datasets(str(listing), AuditOptions())
    assert found.layout != "ade20k" and not list(found.tasks)
