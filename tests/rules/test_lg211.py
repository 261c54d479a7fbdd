"""LG211 label-volume-geometry-mismatch: a label volume's spacing, origin or direction differs from its image's.

Its rules' own examples (``src/labelguard/rules/lg211.py``), audited on real files; the cases
below write nnU-Net datasets with nibabel in ``tmp_path``. ``python tests/code_markers.py
LG211`` lists its other tests."""

import json

import numpy as np
import pytest

from labelguard._audit import audit
from labelguard.core.spec import LabelSpec
from labelguard.layouts.base import AuditOptions
from rule_cases import examples_of, proves

nib = pytest.importorskip("nibabel")


@examples_of("LG211")
def test_lg211_example(registered, example, tmp_path):
    proves(registered, example, tmp_path)


def _affine(spacing=(2.5, 2.5, 3.0), origin=(0.0, 0.0, 0.0), signs=(1, 1, 1)):
    affine = np.diag([*(s * f for s, f in zip(spacing, signs)), 1.0])
    affine[:3, 3] = origin
    return affine


def _nnunet(root, cases, channels=1):
    """An nnU-Net v2 raw dataset: ``cases`` maps a case name to (image affine, label affine),
    each written as .nii.gz with nibabel; every case has ``channels`` channel images."""
    (root / "imagesTr").mkdir(parents=True)
    (root / "labelsTr").mkdir()
    (root / "dataset.json").write_text(json.dumps({
        "channel_names": {str(i): f"MR{i}" for i in range(channels)}, "labels": {"background": 0, "tumour": 1},
        "numTraining": len(cases), "file_ending": ".nii.gz"}))
    rng = np.random.default_rng(0)
    for case, (image_affines, label_affine) in cases.items():
        label = np.zeros((6, 5, 4), np.uint8)
        label[1:4, 1:3, 1:3] = 1
        if not isinstance(image_affines, list):
            image_affines = [image_affines] * channels
        for channel, affine in enumerate(image_affines):
            nib.save(nib.Nifti1Image(rng.random((6, 5, 4)).astype(np.float32), affine),
                     str(root / "imagesTr" / f"{case}_{channel:04d}.nii.gz"))
        nib.save(nib.Nifti1Image(label, label_affine), str(root / "labelsTr" / f"{case}.nii.gz"))
    return root


def _findings(root, code="LG211"):
    report = audit(root, LabelSpec(), options=AuditOptions(), use_project_config=False, workers=1, cache=False)
    return [f for f in report.findings if f.code == code]


@pytest.mark.code("LG211", "fail")
def test_a_spacing_mismatch_names_both_files_and_both_spacings(tmp_path):
    root = _nnunet(tmp_path / "Dataset001", {"case_000": (_affine(), _affine((3.0, 3.0, 3.0))),
                                             "case_001": (_affine(), _affine())})
    [finding] = _findings(root)
    assert finding.path.endswith("labelsTr/case_000.nii.gz")
    assert "imagesTr/case_000_0000.nii.gz" in finding.message
    assert "spacing (3, 3, 3) in the label, (2.5, 2.5, 3) in the image" in finding.message
    assert finding.data["properties"] == ["spacing"]
    assert finding.data["label_geometry"]["spacing"] == [3.0, 3.0, 3.0]
    assert finding.data["image_geometry"]["spacing"] == [2.5, 2.5, 3.0]


@pytest.mark.code("LG211", "fail")
def test_origin_and_direction_mismatches_are_found_in_lps(tmp_path):
    root = _nnunet(tmp_path / "Dataset002", {
        "moved": (_affine(), _affine(origin=(10.0, -4.0, 2.0))),
        "flipped": (_affine(), _affine(signs=(1, -1, 1)))})
    found = {f.path.rsplit("/", 1)[-1]: f for f in _findings(root)}
    assert set(found) == {"moved.nii.gz", "flipped.nii.gz"}
    moved, flipped = found["moved.nii.gz"], found["flipped.nii.gz"]
    assert moved.data["properties"] == ["origin"]
    # NIfTI's RAS (10, -4, 2) is ITK's LPS (-10, 4, 2), as nnU-Net's SimpleITK reader prints it.
    assert "origin (-10, 4, 2) in the label, (0, 0, 0) in the image" in moved.message
    assert flipped.data["properties"] == ["direction"]
    assert "direction ((-1, 0, 0), (0, 1, 0), (0, 0, 1)) in the label" in flipped.message


@pytest.mark.code("LG211", "pass")
@pytest.mark.parametrize("spacing, origin", [
    ((2.5000001, 2.5, 3.0), (0.0, 0.0, 0.0)),
    ((2.50001, 2.5, 3.0), (120.00001, -80.0, 0.0)),  # 4e-6 and 1e-7 of the value: float noise
    ((2.5, 2.5, 3.0), (1e-6, 0.0, 0.0)),  # a zero origin stored with float32 round-off
])
def test_geometry_within_tolerance_gives_nothing(tmp_path, spacing, origin):
    image = _affine(origin=(120.0, -80.0, 0.0) if origin[0] > 100 else (0.0, 0.0, 0.0))
    root = _nnunet(tmp_path / "Dataset003", {"case": (image, _affine(spacing, origin))})
    assert _findings(root) == []


@pytest.mark.code("LG211", "fail")
def test_each_channel_of_a_case_is_compared_with_the_label(tmp_path):
    root = _nnunet(tmp_path / "Dataset004", {"case": ([_affine(), _affine((1.0, 1.0, 1.0))], _affine())},
                   channels=2)
    [finding] = _findings(root)
    assert finding.data["image"].endswith("imagesTr/case_0001.nii.gz")
    assert "spacing (2.5, 2.5, 3) in the label, (1, 1, 1) in the image" in finding.message


@pytest.mark.code("LG211", "pass")
def test_a_png_pair_has_no_volume_geometry(tmp_path):
    from builders import write_png

    write_png(tmp_path / "images" / "a.png", np.zeros((8, 8, 3), np.uint8))
    write_png(tmp_path / "masks" / "a.png", np.zeros((8, 8), np.uint8))
    assert _findings(tmp_path) == []


@pytest.mark.code("LG211", "pass")
def test_sizes_declared_to_differ_turn_it_off(tmp_path):
    root = _nnunet(tmp_path / "Dataset005", {"case": (_affine(), _affine((5.0, 5.0, 6.0)))})
    report = audit(root, LabelSpec(sizes="any"), options=AuditOptions(), use_project_config=False, workers=1,
                   cache=False)
    assert [f for f in report.findings if f.code == "LG211"] == []


REALWORLD = __import__("pathlib").Path(__file__).resolve().parents[2].parent / "shared" / "realworld"


@pytest.mark.code("LG211", "pass")
@pytest.mark.skipif(not (REALWORLD / "monai").is_dir(), reason="../shared/realworld/monai is absent")
def test_monai_volumes_pair_with_their_own_images_and_agree_in_space():
    """MONAI's test volumes: a label whose header keeps the qform (code 1) beside its image's
    sform (code 2), one pair reoriented and moved; each label pairs with its own image, whose
    geometry it shares up to float32 round-off (2e-6 mm of origin)."""
    report = audit(REALWORLD / "monai", LabelSpec(num_classes=2), options=AuditOptions(), use_project_config=False,
                   workers=1, cache=False)
    assert [f for f in report.findings if f.code in ("LG211", "LG206", "LG001")] == []


def _header_pair(root, image, label):
    """An nnU-Net dataset of one case whose image and label are the NIfTI images ``image`` and
    ``label`` (nibabel images with their sform and qform codes set)."""
    (root / "imagesTr").mkdir(parents=True)
    (root / "labelsTr").mkdir()
    (root / "dataset.json").write_text(json.dumps({
        "channel_names": {"0": "CT"}, "labels": {"background": 0, "organ": 1}, "numTraining": 1,
        "file_ending": ".nii.gz"}))
    nib.save(image, str(root / "imagesTr" / "case_0000.nii.gz"))
    nib.save(label, str(root / "labelsTr" / "case.nii.gz"))
    return root


def _volume(affine, sform_code, qform_code, qform=None, dtype=np.float32):
    """A 6x5x4 volume whose sform is ``affine`` (code ``sform_code``) and qform ``qform`` (or
    ``affine``; code ``qform_code``); a code of 0 leaves that transform out."""
    data = np.zeros((6, 5, 4), dtype)
    data[1:4, 1:3, 1:3] = 1
    image = nib.Nifti1Image(data, None)
    image.set_qform(affine if qform is None else qform, code=qform_code)
    image.set_sform(affine, code=sform_code)
    return image


OBLIQUE = np.array([[-0.8, 0.0, 0.0, -1234.5678], [0.0, 0.8, 0.0, 345.25], [0.0, 0.0, -2.5, -987.125], [0, 0, 0, 1]])


def _moved(affine, x):
    moved = affine.copy()
    moved[0, 3] += x
    return moved


@pytest.mark.code("LG211", "pass")
def test_a_stale_qform_under_an_aligned_sform_follows_itk_and_gives_nothing(tmp_path):
    """The image's sform (code 2, aligned) lies 5 mm from its qform (code 1): ITK reads the
    qform (a code-2 sform that disagrees with its qform loses), nibabel the sform. A label
    written by SimpleITK from that image holds the qform in both transforms: SimpleITK reads
    the pair aligned, so no error, though nibabel's readings differ by 5 mm."""
    image = _volume(OBLIQUE, 2, 1, qform=_moved(OBLIQUE, 5.0))
    label = _volume(_moved(OBLIQUE, 5.0), 1, 1, dtype=np.uint8)
    assert _findings(_header_pair(tmp_path / "Dataset010", image, label)) == []


@pytest.mark.code("LG211", "pass")
def test_a_sheared_sform_is_not_itks_reading_and_gives_nothing(tmp_path):
    """A sform with a slight shear (code 1) over an orthonormal qform: ITK reads the qform, as
    the label SimpleITK wrote (both transforms the qform) holds it."""
    qform = np.array([[0.8, 0.0, 0.0, -100.0], [0.0, 0.8, 0.0, -120.0], [0.0, 0.0, 2.5, 50.0], [0, 0, 0, 1]])
    sheared = qform.copy()
    sheared[0, 1], sheared[2, 1] = 0.05, 0.3
    image = _volume(sheared, 1, 1, qform=qform)
    label = _volume(qform, 1, 1, dtype=np.uint8)
    assert _findings(_header_pair(tmp_path / "Dataset011", image, label)) == []


@pytest.mark.code("LG211", "pass")
def test_a_header_without_transforms_is_read_at_origin_zero_as_itk_does(tmp_path):
    """Both codes 0: ITK puts the first voxel at 0 with its own axes (nibabel centres the
    volume); the label SimpleITK writes from it says exactly that in LPS."""
    image = nib.Nifti1Image(np.zeros((6, 5, 4), np.float32), None)
    image.header.set_zooms((0.8, 0.8, 2.5))
    image.set_sform(None, code=0)
    image.set_qform(None, code=0)
    label = _volume(np.diag([-0.8, -0.8, 2.5, 1.0]), 1, 1, dtype=np.uint8)
    assert _findings(_header_pair(tmp_path / "Dataset012", image, label)) == []


@pytest.mark.code("LG211", "pass")
def test_a_pair_that_only_itk_reads_apart_gives_nothing(tmp_path):
    """The label's qform (code 1) lies 7 mm off, its sform (code 2) on the image: ITK reads
    the label's qform, nibabel its sform: nibabel's loaders see the pair aligned."""
    image = _volume(OBLIQUE, 1, 1)
    label = _volume(OBLIQUE, 2, 1, qform=_moved(OBLIQUE, 7.0), dtype=np.uint8)
    assert _findings(_header_pair(tmp_path / "Dataset013", image, label)) == []


@pytest.mark.code("LG211", "fail")
def test_a_pair_apart_in_both_readings_states_itks_values_and_which_transform(tmp_path):
    image = _volume(OBLIQUE, 2, 1, qform=_moved(OBLIQUE, 5.0))
    label = _volume(_moved(OBLIQUE, 12.0), 1, 1, dtype=np.uint8)
    [finding] = _findings(_header_pair(tmp_path / "Dataset014", image, label))
    # ITK reads the image's qform: x = -(-1234.5678 + 5) in LPS; the label's sform: -(-1234.5678 + 12).
    assert "as SimpleITK reads them (nnU-Net's reader; the label's sform, the image's qform), and as nibabel does" \
        in finding.message
    assert "origin (1222.57, -345.25, -987.125) in the label, (1229.57, -345.25, -987.125) in the image" \
        in finding.message
    assert (finding.data["label_reading"], finding.data["image_reading"]) == ("sform", "qform")


@pytest.mark.parametrize("sform_code, qform_code, shear, qform_moved, expected", [
    (1, 1, False, 5.0, "sform"),    # a scanner sform wins over any qform
    (2, 1, False, 5.0, "qform"),    # an aligned sform apart from its qform loses to it
    (2, 1, False, 0.0, "sform"),    # ... and wins where they agree
    (2, 0, False, 0.0, "sform"),    # no qform: the sform
    (1, 1, True, 0.0, "qform"),     # a sheared sform never counts
    (0, 1, False, 0.0, "qform"),
    (0, 0, False, 0.0, "no transform (sform and qform codes 0)"),
])
def test_itks_choice_between_sform_and_qform(sform_code, qform_code, shear, qform_moved, expected):
    from labelguard.readers.masks import nifti_geometry

    sform = OBLIQUE.copy()
    if shear:
        sform[0, 1] = 0.05
    image = _volume(sform, sform_code, qform_code, qform=_moved(OBLIQUE, qform_moved))
    geometry = nifti_geometry(image.header)
    assert geometry.source == expected
    if expected == "qform":
        assert geometry.origin[0] == pytest.approx(-(OBLIQUE[0, 3] + qform_moved), abs=1e-3)


def test_a_sheared_sform_without_qform_is_nibabels_reading_said_so():
    """ITK reads no file whose only transform is sheared: nibabel's reading stands, named."""
    from labelguard.readers.masks import nifti_geometry

    sform = OBLIQUE.copy()
    sform[0, 1] = 0.05
    geometry = nifti_geometry(_volume(sform, 1, 0).header)
    assert geometry.source.startswith("sform, as nibabel reads it (ITK reads no sheared sform without a qform)")
    assert geometry.nibabel is None


def test_case_ids_differing_in_case_are_other_cases_not_channels(tmp_path):
    """nnU-Net's case ids are case-sensitive: ``Case_0001`` is a channel of case ``Case``, not of
    ``case``, so it is not among the channels whose geometry ``case``'s label is compared with."""
    from labelguard.layouts.nnunet import _other_channels
    from labelguard.layouts.pairing import channel_case

    images = [str(tmp_path / "imagesTr" / name) for name in ("case_0000.nii.gz", "case_0001.nii.gz",
                                                              "Case_0000.nii.gz", "Case_0001.nii.gz")]
    assert channel_case(images[0]) == (str(tmp_path / "imagesTr"), "case")
    assert channel_case(images[3]) == (str(tmp_path / "imagesTr"), "Case")
    label = str(tmp_path / "labelsTr" / "case.nii.gz")
    assert _other_channels({label: images[0]}, images) == {label: [images[1]]}
