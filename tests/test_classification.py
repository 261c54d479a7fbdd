"""Classification datasets: label tables (CSV/TSV/txt lists) and ImageFolder trees."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation_builders import (
    classification_csv, imagefolder, imagenet_txt, mnist_csv, write_image, write_table,
)
from builders import organic_mask, write_png
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileTask
from labelguard.errors import ColumnError
from labelguard.layouts import AuditOptions
from labelguard.layouts.tables import process_table
from labelguard.layouts.tables.reader import read_table
from audit_helpers import codes, found, run


LABELS = {"1.jpg": "dog", "2.jpg": "cat", "3.jpg": "dog", "4.jpg": "cat"}


# ---- tables -----------------------------------------------------------------------------------

@pytest.mark.code("LG101", "pass")
@pytest.mark.code("LG003", "pass")
def test_clean_csv_with_the_spec(tmp_path):
    classification_csv(tmp_path, LABELS)
    report = run(tmp_path, LabelSpec(classes=("cat", "dog")))
    assert report.layouts == ["csv"]
    assert report.findings == []
    assert report.to_dict()["summary"]["classes"] == {"cat": {"objects": 2, "images": 2},
                                                      "dog": {"objects": 2, "images": 2}}


@pytest.mark.code("LG101", "fail")
def test_unknown_label_names_every_line_and_the_closest_class(tmp_path):
    classification_csv(tmp_path, {**LABELS, "5.jpg": "dgo", "6.jpg": "dgo"})
    report = run(tmp_path, LabelSpec(classes=("cat", "dog")))
    [finding] = found(report, "LG101")
    assert "'dgo'" in finding.message and "lines 6, 7" in finding.message
    assert "did you mean 'dog'" in finding.message
    assert finding.path.endswith("train.csv")


@pytest.mark.code("LG105", "fail")
def test_case_and_blank_variants_of_a_label(tmp_path):
    write_table(tmp_path / "train.csv", [("1.jpg", "dog"), ("2.jpg", "Dog "), ("3.jpg", "dog")],
                header=("filename", "label"))
    for k in (1, 2, 3):
        write_image(tmp_path / f"{k}.jpg")
    [finding] = found(run(tmp_path), "LG105")
    assert "'dog' (2 objects)" in finding.message


@pytest.mark.code("LG105", "pass")
def test_distinct_label_names_are_no_variants(tmp_path):
    classification_csv(tmp_path, {"1.jpg": "hot dog", "2.jpg": "dog", "3.jpg": "hotdog stand"})
    assert "LG105" not in codes(run(tmp_path))


def test_labels_txt_beside_the_table_is_the_spec(tmp_path):
    classification_csv(tmp_path, {**LABELS, "5.jpg": "bird"})
    (tmp_path / "labels.txt").write_text("cat\ndog\n")
    report = run(tmp_path)
    assert report.spec.classes == ("cat", "dog")
    [finding] = found(report, "LG101")
    assert "'bird'" in finding.message


@pytest.mark.code("LG102", "fail")
def test_integer_labels_beyond_num_classes(tmp_path):
    classification_csv(tmp_path, {"1.jpg": 0, "2.jpg": 1, "3.jpg": 3}, header=("image", "label"))
    [finding] = found(run(tmp_path, LabelSpec(num_classes=3)), "LG102")
    assert finding.data["ids"] == [3] and finding.data["places"] == [4]


@pytest.mark.code("LG103", "fail")
def test_negative_integer_labels(tmp_path):
    classification_csv(tmp_path, {"1.jpg": 0, "2.jpg": -1}, header=("image", "label"))
    [finding] = found(run(tmp_path, LabelSpec(num_classes=2)), "LG103")
    assert finding.data["ids"] == [-1]


@pytest.mark.code("LG102", "pass")
@pytest.mark.code("LG103", "pass")
def test_integer_labels_inside_the_spec_and_the_ignore_index(tmp_path):
    classification_csv(tmp_path, {"1.jpg": 0, "2.jpg": 2, "3.jpg": -1}, header=("image", "label"))
    report = run(tmp_path, LabelSpec(num_classes=3, ignore=(-1,)))
    assert not codes(report) & {"LG102", "LG103"}


def test_ids_are_checked_against_the_number_of_class_names(tmp_path):
    imagenet_txt(tmp_path, [("1.jpg", 0), ("2.jpg", 2), ("3.jpg", 3)], ["tench", "goldfish", "shark"])
    report = run(tmp_path)
    assert report.spec.classes == ("tench", "goldfish", "shark")
    [finding] = found(report, "LG102")
    assert "3" in finding.message and "num_classes=3" in finding.message and finding.data["places"] == [3]


@pytest.mark.code("LG003", "fail")
def test_rows_naming_missing_files(tmp_path):
    classification_csv(tmp_path, LABELS, missing=["3.jpg"])
    [finding] = found(run(tmp_path), "LG003")
    assert "1 of 4 files" in finding.message and "line 4 '3.jpg'" in finding.message
    assert finding.data["lines"] == [4]


def test_paths_without_extension_and_images_option(tmp_path):
    write_table(tmp_path / "ann.csv", [("1", "dog"), ("2", "cat")], header=("image_name", "label_name"))
    pictures = tmp_path.parent / (tmp_path.name + "_pictures")
    write_image(pictures / "1.jpg")
    write_image(pictures / "2.png")
    report = run(tmp_path, options=AuditOptions(images=str(pictures)))
    assert "LG003" not in codes(report)


@pytest.mark.code("LG005", "fail")
def test_absolute_and_parent_paths_escape(tmp_path):
    classification_csv(tmp_path, {"1.jpg": "dog", "/home/user/2.jpg": "cat", "../3.jpg": "cat"},
                       write_images=False)
    [finding] = found(run(tmp_path), "LG005")
    assert finding.data["count"] == 2 and "line 3 '/home/user/2.jpg'" in finding.message


@pytest.mark.code("LG005", "pass")
def test_relative_paths_in_subfolders_stay_inside(tmp_path):
    classification_csv(tmp_path, {"a/1.jpg": "dog", "b/2.jpg": "cat"})
    assert "LG005" not in codes(run(tmp_path))


@pytest.mark.code("LG001", "fail")
def test_malformed_rows_are_named_by_line_and_the_rest_is_read(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("image,label\n1.jpg,dog\n2.jpg\n3.jpg,cat,extra\n4.jpg,\n5.jpg,dgo\n")
    for k in range(1, 6):
        write_image(tmp_path / f"{k}.jpg")
    report = run(tmp_path, LabelSpec(classes=("cat", "dog")))
    [finding] = found(report, "LG001")
    assert "3 lines cannot be read" in finding.message
    assert "line 3 has 1 field, expected 2" in finding.message
    assert "line 4 has 3 fields" in finding.message and "line 5 has an empty label" in finding.message
    assert finding.data["lines"] == [3, 4, 5]
    assert "did you mean 'dog'" in found(report, "LG101")[0].message


@pytest.mark.code("LG303", "fail")
def test_repeated_rows_and_conflicting_labels(tmp_path):
    write_table(tmp_path / "train.csv", [("1.jpg", "dog"), ("2.jpg", "cat"), ("1.jpg", "dog"), ("2.jpg", "dog")],
                header=("path", "label"))
    write_image(tmp_path / "1.jpg")
    write_image(tmp_path / "2.jpg")
    findings = found(run(tmp_path), "LG303")
    messages = " | ".join(f.message for f in findings)
    assert "line 4 repeats line 2 ('1.jpg', 'dog')" in messages
    assert "'2.jpg' is labelled 'cat', 'dog'" in messages


def test_detection_style_rows_of_one_image_are_not_repeats(tmp_path):
    rows = [("1.jpg", "dog", 0, 1, 1, 2), ("1.jpg", "cat", 1, 2, 3, 3), ("1.jpg", "dog", 0, 0, 1, 1)]
    write_table(tmp_path / "ann.csv", rows, header=("image_name", "label_name", "x1", "y1", "x2", "y2"))
    write_image(tmp_path / "1.jpg")
    report = run(tmp_path)
    assert "LG303" not in codes(report)
    assert report.to_dict()["summary"]["classes"]["dog"] == {"objects": 2, "images": 1}


def test_column_options_choose_the_columns(tmp_path):
    write_table(tmp_path / "meta.tsv", [("a", "1.jpg", "dog"), ("b", "2.jpg", "cat")],
                header=("uid", "picture", "species_name"), separator="\t")
    write_image(tmp_path / "1.jpg")
    write_image(tmp_path / "2.jpg")
    options = AuditOptions(path_column="picture", label_column="species_name")
    report = run(tmp_path / "meta.tsv", options=options)
    assert report.layouts == ["csv"] and codes(report) == {"LG006"}  # no spec given: listed, not checked
    assert set(report.summary.class_objects) == {"dog", "cat"}
    with pytest.raises(ColumnError, match="label column 'nope' is not in the header, whose columns are "
                       "'uid', 'picture', 'species_name'"):
        run(tmp_path / "meta.tsv", options=AuditOptions(label_column="nope", format="csv"))


@pytest.mark.parametrize("rows", [4, 8000])  # read whole when sniffed; longer than the sniffed head
def test_a_table_saved_with_a_byte_order_mark_or_in_latin_1_has_its_columns_by_name(tmp_path, rows):
    """Excel's "CSV UTF-8" starts with a byte order mark; older tools write Latin-1. Either
    way, the header's names are what --path-column and --label-column name."""
    for k in range(4):
        write_image(tmp_path / f"{k}.jpg")
    lines = "".join(f"{k % 4}.jpg,{'café' if k % 2 else 'chat'}\n" for k in range(rows))
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbfpicture,species\n" + lines.encode("utf-8"))
    (tmp_path / "latin1.csv").write_bytes(("picture,species\n" + lines).encode("latin-1"))
    options = AuditOptions(path_column="picture", label_column="species")
    for name in ("bom.csv", "latin1.csv"):
        report = run(tmp_path / name, options=options)
        assert report.layouts == ["csv"] and not report.errors, name
        assert set(report.summary.class_objects) == {"café", "chat"}, (name, report.summary.class_objects)


def test_multi_label_one_hot_table(tmp_path):
    rows = [("1.jpg", 1, 0, 0), ("2.jpg", 0, 1, 1), ("3.jpg", 0, 2, 0)]
    write_table(tmp_path / "ann.csv", rows, header=("image_name", "dog", "cat", "person"))
    for k in (1, 2, 3):
        write_image(tmp_path / f"{k}.jpg")
    report = run(tmp_path)
    assert dict(report.summary.class_objects) == {"dog": 1, "cat": 1, "person": 1}
    [finding] = found(report, "LG001")
    assert "line 4 column 'cat' holds '2', expected 0 or 1" in finding.message


def test_mnist_csv_labels_without_paths(tmp_path):
    mnist_csv(tmp_path / "mnist_train.csv", [5, 0, 4, 1, 12])
    report = run(tmp_path, LabelSpec(num_classes=10))
    assert report.layouts == ["csv"]
    [finding] = found(report, "LG102")
    assert finding.data["ids"] == [12] and finding.data["places"] == [5]
    assert report.summary.samples == 5


def test_mask_file_lists_are_not_label_tables(tmp_path):
    write_table(tmp_path / "train.txt", [("images/1.png", "masks/1.png")], separator=" ")
    write_table(tmp_path / "val.txt", [("case0001_slice000",)])
    write_png(tmp_path / "masks" / "1.png", organic_mask())
    write_png(tmp_path / "images" / "1.png", organic_mask())
    assert run(tmp_path).layouts != ["csv"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.sampled_from(list("ab1.jpg, \t\n\r\"';-0")), max_size=200),
       header=st.sampled_from(["", "image,label\n", "path\tclass\n", "filename,dog,cat\n"]))
def test_malformed_tables_never_raise(tmp_path, text, header):
    path = tmp_path / "train.csv"
    path.write_text(header + text, encoding="utf-8")
    task = FileTask(processor=process_table, path=str(path), display="train.csv")
    result = process_table(task, LabelSpec(classes=("dog", "cat")))
    assert result.errors == []
    for finding in result.findings:
        assert finding.message


def test_quoted_fields_and_crlf(tmp_path):
    path = tmp_path / "train.csv"
    path.write_bytes(b'file,label\r\n"a, b.jpg",dog\r\n"c.jpg","cat"\r\n')
    table = read_table(str(path))
    assert table.paths == ["a, b.jpg", "c.jpg"] and table.labels == ["dog", "cat"]


# ---- ImageFolder -----------------------------------------------------------------------------

@pytest.mark.code("LG002", "pass")
@pytest.mark.code("LG104", "pass")
def test_clean_imagefolder_with_splits(tmp_path):
    imagefolder(tmp_path, {"train": {"cat": 3, "dog": 2}, "val": {"cat": 1, "dog": 1}})
    report = run(tmp_path)
    assert report.layouts == ["imagefolder"]
    assert report.findings == []
    assert report.spec.classes == ("cat", "dog")
    assert report.to_dict()["summary"]["classes"] == {"cat": {"objects": 4, "images": 4},
                                                      "dog": {"objects": 3, "images": 3}}


def test_class_folders_without_splits(tmp_path):
    imagefolder(tmp_path, {"cat": 2, "dog": 2})
    write_image(tmp_path / "loose.jpg")
    report = run(tmp_path)
    assert report.layouts == ["imagefolder"] and report.findings == []
    assert any("1 file directly in" in n for n in report.notes)


def test_folder_not_in_the_given_classes(tmp_path):
    imagefolder(tmp_path, {"train": {"cat": 2, "dgo": 2}})
    [finding] = found(run(tmp_path, LabelSpec(classes=("cat", "dog"))), "LG101")
    assert "class folder 'dgo' in train/ (2 images)" in finding.message and "did you mean 'dog'" in finding.message


def test_validation_split_with_an_extra_class_folder(tmp_path):
    imagefolder(tmp_path, {"train": {"cat": 2, "dog": 2}, "val": {"cat": 1, "dog": 1, "fox": 1}})
    [finding] = found(run(tmp_path), "LG101")
    assert "'fox'" in finding.message and finding.path.endswith(os.path.join("val", "fox"))


@pytest.mark.code("LG104", "fail")
def test_validation_split_lacking_a_class_shifts_the_indices(tmp_path):
    imagefolder(tmp_path, {"train": {"bird": 2, "cat": 2, "dog": 2}, "val": {"cat": 1, "dog": 1}})
    [finding] = [f for f in found(run(tmp_path), "LG104") if f.path]
    assert "val/ lacks the class folder 'bird' of train/" in finding.message
    assert "2 classes ('cat', 'dog') get other indices" in finding.message


@pytest.mark.code("LG002", "fail")
def test_class_folder_without_images(tmp_path):
    imagefolder(tmp_path, {"train": {"cat": 2, "dog": 2}})
    (tmp_path / "train" / "empty").mkdir()
    (tmp_path / "train" / "empty" / "notes.txt").write_text("todo")
    [finding] = found(run(tmp_path, options=AuditOptions(format="imagefolder")), "LG002")
    assert "class folder 'empty' holds no image files" in finding.message
    assert "Found no valid file for the classes empty" in finding.message


@pytest.mark.code("LG001", "fail")
def test_empty_and_fake_image_files(tmp_path):
    imagefolder(tmp_path, {"train": {"cat": 2, "dog": 2}})
    (tmp_path / "train" / "cat" / "zero.jpg").write_bytes(b"")
    (tmp_path / "train" / "dog" / "page.jpg").write_text("<html>not found</html>")
    findings = found(run(tmp_path), "LG001")
    messages = " | ".join(f.message for f in findings)
    assert "zero.jpg is empty (0 bytes)" in messages and "page.jpg is not an image" in messages


@pytest.mark.code("LG001", "pass")
def test_real_images_are_readable(tmp_path):
    imagefolder(tmp_path, {"train": {"cat": 2}, "val": {"cat": 1}})
    assert "LG001" not in codes(run(tmp_path))


def test_folder_name_variants(tmp_path):
    imagefolder(tmp_path, {"train": {"dog": 3, "Dog": 1, "cat": 2}})
    [finding] = found(run(tmp_path), "LG105")
    assert "'dog' (3 objects), 'Dog' (1 object)" in finding.message


def test_more_class_folders_than_num_classes(tmp_path):
    imagefolder(tmp_path, {"train": {"ant": 1, "bee": 1, "cat": 1, "dog": 1}})
    [finding] = found(run(tmp_path, LabelSpec(num_classes=3)), "LG102")
    assert "class folder 'dog' (1 image) gets class index 3" in finding.message
    assert "has 4 class folders" in finding.message and finding.data["ids"] == [3]
    assert "LG102" not in codes(run(tmp_path, LabelSpec(num_classes=4)))


def test_mask_datasets_are_not_taken_for_class_folders(tmp_path):
    for k in range(2):
        write_image(tmp_path / "a" / "images" / f"{k}.jpg")
        write_png(tmp_path / "a" / "masks" / f"{k}.png", organic_mask(seed=k))
    assert run(tmp_path / "a").layouts == ["paired"]
    for case in ("case_01", "case_02"):
        for k in range(2):
            write_png(tmp_path / "b" / case / f"{k}.png", organic_mask(seed=k))
    assert run(tmp_path / "b").layouts == ["masks"]
    for split in ("train", "val"):
        write_png(tmp_path / "c" / split / "case_01" / "0.png", organic_mask())
    assert run(tmp_path / "c").layouts != ["imagefolder"]


def test_png_photos_are_class_folders(tmp_path):
    imagefolder(tmp_path, {"train": {"0": 2, "1": 2}}, ext=".png")
    assert run(tmp_path).layouts == ["imagefolder"]


def test_numbered_class_folders_sorted_as_text_are_explained(tmp_path):
    imagefolder(tmp_path, {"train": {str(k): 1 for k in range(12)}})
    report = run(tmp_path)
    assert any("sorts them as text (0, 1, 10, 11" in n for n in report.notes)


# ---- column options that name no column ---------------------------------------------------------

def _cli_audit(*args: str):
    from click.testing import CliRunner

    from labelguard.cli import main

    return CliRunner().invoke(main, ["audit", *args, "--no-config", "--no-progress"])


@pytest.mark.parametrize("target, flags", [
    (".", ["--path-column", "pth"]),
    ("train.csv", ["--label-column", "lbl"]),
    ("train.csv", ["--format", "csv", "--path-column", "image_name", "--label-column", "lbl"]),
])
def test_a_column_option_naming_no_column_is_an_error_listing_the_columns(tmp_path, monkeypatch, target, flags):
    classification_csv(tmp_path, LABELS)
    monkeypatch.chdir(tmp_path)
    result = _cli_audit(target, *flags)
    assert result.exit_code == 2, result.output
    assert "is not in the header, whose columns are 'image_name', 'label_name'" in result.output
    assert "No findings" not in result.output and "Traceback" not in result.output


def test_a_column_option_picks_the_table_that_has_the_column(tmp_path):
    classification_csv(tmp_path, LABELS)
    write_table(tmp_path / "stats.csv", [("a", 1)], header=("metric", "value"))
    report = run(tmp_path, LabelSpec(classes=("cat", "dog")), options=AuditOptions(label_column="label_name"))
    assert report.layouts == ["csv"] and report.findings == []
    assert report.summary.samples == len(LABELS)


# ---- blanks around label cells -------------------------------------------------------------------

def test_label_cells_keep_their_blanks_and_ids_are_numbers(tmp_path):
    path = write_table(tmp_path / "t.csv", [("1.jpg", "dog "), ("2.jpg", " dog"), ("3.jpg", " 3 ")],
                       header=("path", "label"))
    assert read_table(str(path)).labels == ["dog ", " dog", "3"]


@pytest.mark.code("LG105", "fail")
def test_a_label_with_a_trailing_blank_is_a_variant_and_the_hint_proposes_the_spec_spelling(tmp_path):
    classification_csv(tmp_path, {"1.jpg": "dog ", "2.jpg": "dog", "3.jpg": "dog ", "4.jpg": "cat"})
    [finding] = found(run(tmp_path, LabelSpec(classes=("cat", "Dog"))), "LG105")
    assert finding.data["names"] == ["dog ", "dog"]
    assert finding.data["canonical"] == "Dog"
    # quoted so that `fix rename` keeps the blank of the old name
    assert '--map "\'dog \'=Dog,dog=Dog"' in finding.hint
    [unspecified] = found(run(tmp_path), "LG105")
    assert unspecified.data["canonical"] == "dog"  # the spelling without blanks, though rarer
    assert "'dog ' (2 objects), 'dog' (1 object)" in unspecified.message


@pytest.mark.code("LG101", "fail")
def test_a_label_with_a_trailing_blank_is_not_the_class_of_the_spec(tmp_path):
    classification_csv(tmp_path, {"1.jpg": "dog ", "2.jpg": "cat"})
    [finding] = found(run(tmp_path, LabelSpec(classes=("cat", "dog"))), "LG101")
    assert finding.data["class"] == "dog " and "class 'dog ' is not one of the 2 classes" in finding.message
    assert finding.data["suggestions"] == ["dog"]
