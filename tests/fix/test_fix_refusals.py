"""`fix remap` and `fix colors` refuse files the audit flags as images or as JPEG-damaged
(LG202) unless --force: a remap would turn the damage into a clean-looking label."""

import io
import json

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from builders import jpeg_roundtrip, organic_mask, truncate, voc_palette, write_npz, write_png
from fix_data import digests
from labelguard import LabelSpec
from labelguard.rules.lg203 import COLOR_MASK
from labelguard.cli import main
from labelguard.core.tasks import FileResult
from labelguard.fix import colors, remap, undo
from labelguard.fix._masks import not_a_clean_label

SPEC = LabelSpec(num_classes=2)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def binary(seed: int) -> np.ndarray:
    return organic_mask((64, 64), classes=(0, 255), seed=seed).astype(np.uint8)


def write_smeared(folder, container: str):
    """A 0/255 mask that went through JPEG once and was then stored losslessly."""
    smeared = jpeg_roundtrip(binary(7))
    if container == "npz":
        return write_npz(folder / "smeared.npz", image=np.zeros((64, 64), np.float32), label=smeared)
    return write_png(folder / "smeared.png", smeared)


@pytest.mark.parametrize("container", ["png", "npz"])
def test_remap_refuses_a_jpeg_damaged_mask_unless_forced(tmp_path, container):
    folder = tmp_path / "masks"
    clean = write_png(folder / "clean.png", binary(1)) if container == "png" else write_npz(
        folder / "clean.npz", image=np.zeros((64, 64), np.float32), label=binary(1))
    smeared = write_smeared(folder, container)
    original = digests([clean, smeared])

    result = invoke("fix", "remap", folder, "--map", "255:1", "--num-classes", "2", "--apply", "--json")
    assert result.exit_code == 1
    changes = {c["path"].rsplit("/", 1)[-1]: c for c in json.loads(result.stdout)["changes"]}
    assert changes[clean.name]["status"] == "written"
    refusal = changes[smeared.name]
    assert refusal["status"] == "refused"
    assert "LG202" in refusal["summary"] and "JPEG damage" in refusal["summary"] and "--force" in refusal["summary"]
    assert digests([smeared]) == {str(smeared): original[str(smeared)]}

    forced = invoke("fix", "remap", folder, "--map", "255:1", "--num-classes", "2", "--apply", "--force")
    assert forced.exit_code == 0, forced.output
    assert "fixed" in forced.output and smeared.name in forced.output
    assert digests([smeared]) != {str(smeared): original[str(smeared)]}
    undo(str(folder))
    undo(str(folder))
    assert digests([clean, smeared]) == original


@pytest.mark.code("LG202", "fail")
@pytest.mark.parametrize("container", ["png", "npz"])
def test_remap_refuses_a_mask_of_class_ids_that_went_through_jpeg_once(tmp_path, container):
    """Classes 0..2 saved as JPEG once, then as PNG or NPZ: the 3s JPEG left beside the 2s are
    outside the spec, and a remap 3:2 would "clean" them while the damage stays (every class
    edge is smeared). The remap is refused, pointing to the source annotations."""
    folder = tmp_path / "masks"
    clean_mask, damaged_mask = organic_mask((128, 128), (0, 1, 2), seed=4), jpeg_roundtrip(
        organic_mask((128, 128), (0, 1, 2), seed=1), quality=75)
    assert set(np.unique(damaged_mask).tolist()) - {0, 1, 2}
    if container == "png":
        clean, damaged = write_png(folder / "clean.png", clean_mask), write_png(folder / "damaged.png", damaged_mask)
    else:
        clean = write_npz(folder / "clean.npz", label=clean_mask)
        damaged = write_npz(folder / "damaged.npz", label=damaged_mask)
    original = digests([clean, damaged])

    dry = invoke("fix", "remap", folder, "--map", "3:2,4:2", "--num-classes", "3", "--json")
    assert dry.exit_code == 1
    result = invoke("fix", "remap", folder, "--map", "3:2,4:2", "--num-classes", "3", "--apply", "--json")
    assert result.exit_code == 1
    changes = {c["path"].rsplit("/", 1)[-1]: c for c in json.loads(result.stdout)["changes"]}
    refusal = changes[damaged.name]
    assert refusal["status"] == "refused"
    assert "LG202" in refusal["summary"] and "JPEG damage although stored as" in refusal["summary"]
    assert "would hide the lossy damage" in refusal["summary"] and "source annotations" in refusal["summary"]
    assert changes[clean.name]["status"] == "unchanged"
    assert digests([clean, damaged]) == original


def test_remap_names_an_interpolation_fringe_without_calling_it_jpeg(tmp_path):
    folder = tmp_path / "masks"
    resized = np.asarray(Image.fromarray(organic_mask((128, 128), (0, 255), seed=2)).resize((64, 64), Image.BILINEAR))
    path = write_png(folder / "resized.png", resized)
    original = digests([path])
    [change] = remap(str(folder), "255:1", spec=SPEC, apply=True).changes
    assert change.status == "refused" and "LG202" in change.summary
    assert "JPEG or interpolation damage" in change.summary and "JPEG damage" not in change.summary
    assert digests([path]) == original


def test_remap_refuses_a_photo_in_the_label_folder(tmp_path):
    folder = tmp_path / "masks"
    write_png(folder / "a.png", binary(0))
    photo = np.random.default_rng(3).integers(0, 60000, size=(64, 64)).astype(np.uint16)
    photo[:4, :4] = 255
    path = write_png(folder / "scan_0001.png", photo, mode="I;16")
    original = digests([path])

    result = remap(str(folder), "255:1", spec=SPEC, apply=True)
    refused = [c for c in result.changes if c.status == "refused"]
    assert [c.path.rsplit("/", 1)[-1] for c in refused] == ["scan_0001.png"] and not result.ok
    assert "an image, not a label" in refused[0].summary
    assert digests([path]) == original

    forced = remap(str(path), "255:1", spec=SPEC, apply=True, force=True)
    assert [c.status for c in forced.changes] == ["written"]
    undo(str(folder))
    assert digests([path]) == original


def test_a_jpeg_file_is_refused_and_with_force_still_not_rewritten(tmp_path):
    folder = tmp_path / "masks"
    buffer = io.BytesIO()
    Image.fromarray(binary(2)).save(buffer, format="JPEG", quality=90)
    path = folder / "b.png"  # JPEG bytes under a .png name, as some exporters leave them
    folder.mkdir()
    path.write_bytes(buffer.getvalue())
    [change] = remap(str(folder), "255:1", spec=SPEC, apply=True).changes
    assert change.status == "refused" and "LG202" in change.summary
    [forced] = remap(str(folder), "255:1", spec=SPEC, apply=True, force=True).changes
    assert forced.status == "skipped" and "lossy" in forced.summary
    assert path.read_bytes() == buffer.getvalue()


def test_colors_refuses_a_jpeg_colour_mask_and_converts_the_others(tmp_path):
    folder = tmp_path / "masks"
    palette = np.array(voc_palette(), dtype=np.uint8).reshape(-1, 3)
    index = organic_mask((32, 32), classes=(0, 1, 2), seed=4)
    good = write_png(folder / "good.png", palette[index])
    jpeg = folder / "bad.png"
    buffer = io.BytesIO()
    Image.fromarray(palette[index]).save(buffer, format="JPEG", quality=95)
    jpeg.write_bytes(buffer.getvalue())
    table = {"0,0,0": 0, "128,0,0": 1, "0,128,0": 2}
    result = colors(str(folder), table, spec=LabelSpec(num_classes=3), unmapped=0, apply=True)
    status = {c.path.rsplit("/", 1)[-1]: (c.status, c.summary) for c in result.changes}
    assert status["good.png"][0] == "written"
    assert status["bad.png"][0] == "refused" and "LG202" in status["bad.png"][1]
    assert jpeg.read_bytes() == buffer.getvalue()
    undo(str(folder))
    assert good.read_bytes() == write_png(tmp_path / "again.png", palette[index]).read_bytes()


def test_any_finding_marked_as_an_image_refuses_the_file():
    # A photo in a colour-label folder is flagged on its colour finding, not on LG201.
    flagged = COLOR_MASK.finding("masks/photo.png", "colour mask with 4096 colours", looks_like_image=True)
    assert "an image, not a label" in not_a_clean_label(FileResult("masks/photo.png", [flagged]))
    plain = COLOR_MASK.finding("masks/m.png", "colour mask with 3 colours")
    assert not_a_clean_label(FileResult("masks/m.png", [plain])) is None


@pytest.mark.parametrize("command", ["remap", "colors"])
def test_a_damaged_mask_is_skipped_and_the_others_are_fixed(tmp_path, command):
    """One truncated PNG among the masks: the fix names it (LG001) and fixes the rest; it
    never aborts the run (it did: Pillow's OSError left the whole fix at exit 2)."""
    masks = tmp_path / "masks"
    if command == "remap":
        write_png(masks / "a.png", binary(1))
        damaged = write_png(masks / "b.png", binary(2))
    else:
        colours = np.zeros((16, 16, 3), np.uint8)
        colours[4:8, 4:8] = (128, 0, 0)
        write_png(masks / "a.png", colours)
        damaged = write_png(masks / "b.png", colours)
    truncate(damaged)
    files = [masks / "a.png", damaged]
    before = digests(files)
    result = invoke("fix", command, masks, *(["--map", "255:1"] if command == "remap" else ["--unmapped", "0"]),
                    "--num-classes", "2", "--apply", "--json")
    assert result.exit_code == 0, result.output
    changes = {c["path"].rsplit("/", 1)[-1]: c for c in json.loads(result.output)["changes"]}
    assert changes["b.png"]["status"] == "skipped" and "LG001" in changes["b.png"]["summary"]
    assert changes["a.png"]["status"] == "written"
    after = digests(files)
    assert after[str(damaged)] == before[str(damaged)] and after[str(masks / "a.png")] != before[str(masks / "a.png")]
