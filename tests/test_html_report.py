"""The HTML report: one self-contained file with the summary, the spec, charts and pictures of
the flagged files with the offending pixels marked (tests/test_html_browser.py opens it in
a real browser)."""

from __future__ import annotations

import base64
import io
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from builders import rgb_image, write_npy, write_png
from detection_builders import voc_xml, write_image
from labelguard._audit import audit
from labelguard.cli import main
from labelguard.output import write_report
from labelguard.output.pictures import MARK, SIDE

pytest.importorskip("matplotlib", reason="the HTML report draws its charts with matplotlib (labelguard[html])")


class Page(HTMLParser):
    """What a browser would load from a page: every tag with its attributes."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def images(self) -> list[dict]:
        return [attrs for tag, attrs in self.tags if tag == "img"]


def _decoded(uri: str) -> Image.Image | bytes:
    head, _, payload = uri.partition(",")
    data = base64.b64decode(payload)
    return Image.open(io.BytesIO(data)) if head == "data:image/png;base64" else data


def _html(report, **options) -> str:
    buffer = io.StringIO()
    write_report(report, "html", buffer, **options)
    return buffer.getvalue()


def _pictures(page: Page, alt_contains: str) -> list[Image.Image]:
    return [_decoded(img["src"]) for img in page.images() if alt_contains in img.get("alt", "")]


@pytest.fixture
def masks(tmp_path):
    """Five 64x64 masks of 0 and 4 for num_classes=5: two with a 7 in a known square, one with
    a line of in-between values (1, 3) along the edge as interpolation leaves it, one whose
    image is 128x64, one clean."""
    root = tmp_path / "data"
    for index in range(5):
        mask = np.zeros((64, 64), np.uint8)
        mask[:, 32:] = 4
        if index < 2:
            mask[4:8, 4:8] = 7
        if index == 2:
            mask[:32, 31] = 1
            mask[32:, 31] = 3
        write_png(root / "masks" / f"m{index}.png", mask)
        write_png(root / "images" / f"m{index}.png", rgb_image((64, 64) if index != 3 else (64, 128), seed=index))
    (root / "labelguard.toml").write_text("[labels]\nnum_classes = 5\n", encoding="utf-8")
    return root


def test_the_page_is_self_contained(masks):
    page = Page(_html(audit(str(masks))))
    assert not [tag for tag, _ in page.tags if tag in ("script", "link", "iframe", "object", "embed")]
    for tag, attrs in page.tags:
        for name in ("src", "href", "srcset", "action"):
            if name in attrs:
                assert attrs[name].startswith(("data:image/png;base64,", "data:image/svg+xml;base64,", "#")), \
                    (tag, name, attrs[name][:60])
    for img in page.images():
        picture = _decoded(img["src"])
        if isinstance(picture, bytes):
            assert picture.lstrip().startswith((b"<?xml", b"<svg")) and b"http://www.w3.org/2000/svg" in picture
            assert b"<text" not in picture and b"@font-face" not in picture  # text drawn as paths
        else:
            picture.load()
            assert max(picture.size) <= SIDE + 1


def test_the_page_has_summary_spec_chart_and_each_code_with_its_docs(masks):
    text = _html(audit(str(masks)))
    assert "labelguard label audit report" in text and "5 files" in text
    assert "num_classes" in text and "labelguard.toml" in text  # the spec and where it came from
    assert 'alt="Values of the audited data"' in text
    for code, name in (("LG201", "mask-value-outside-spec"), ("LG202", "mask-stored-lossily"),
                       ("LG206", "image-label-geometry-mismatch")):
        assert f"<b>{code} {name}</b>" in text and f'id="{code}"' in text
    assert "Why it breaks training" in text


@pytest.mark.code("LG201", "fail")
def test_lg201_pictures_mark_exactly_the_offending_pixels(masks):
    page = Page(_html(audit(str(masks))))
    [first, second] = _pictures(page, "marked pixels in magenta")[:2]
    pixels = np.asarray(first.convert("RGB"))
    assert first.size == (SIDE, SIDE)  # 64x64 enlarged without smoothing
    marked = np.all(pixels == MARK, axis=-1)
    scale = SIDE / 64
    rows, cols = np.nonzero(marked)
    for found in (rows, cols):  # source pixels 4..7, enlarged (Pillow may round an edge by one)
        assert abs(found.min() - 4 * scale) <= 1 and abs(found.max() + 1 - 8 * scale) <= 1
    assert np.asarray(second.convert("RGB")).shape == pixels.shape


def test_lg202_pictures_mark_the_fringe(masks):
    report = audit(str(masks))
    page = Page(_html(report))
    [fringe] = [img for img in page.images() if img["alt"] == "the mask: 64 marked pixels in magenta"]
    pixels = np.asarray(_decoded(fringe["src"]).convert("RGB"))
    marked = np.all(pixels == MARK, axis=-1)
    columns = np.nonzero(marked.any(axis=0))[0]
    scale = SIDE / 64  # source column 31, enlarged (Pillow may round an edge by one)
    assert abs(columns.min() - 31 * scale) <= 1 and abs(columns.max() + 1 - 32 * scale) <= 1
    assert marked.any(axis=1).all()  # the whole edge, top to bottom


def test_lg206_shows_image_and_mask_side_by_side_at_one_scale(masks):
    page = Page(_html(audit(str(masks))))
    [image] = _pictures(page, "images/m3.png: 128x64")
    [mask] = _pictures(page, "masks/m3.png: 64x64")
    assert image.size == (SIDE, SIDE // 2) and mask.size == (SIDE // 2, SIDE // 2)


def test_lg203_shows_the_colours_with_swatches(tmp_path):
    colours = np.zeros((16, 16, 3), np.uint8)
    colours[:8] = (128, 0, 0)
    colours[8:] = (0, 128, 0)
    write_png(tmp_path / "masks" / "a.png", colours)
    text = _html(audit(str(tmp_path / "masks")))
    page = Page(text)
    [picture] = _pictures(page, "the colour mask as stored")
    assert {tuple(p) for p in np.asarray(picture.convert("RGB")).reshape(-1, 3)} == {(128, 0, 0), (0, 128, 0)}
    assert 'class="swatch" style="background:rgb(128,0,0)"' in text


def test_a_volume_shows_the_slice_with_the_offending_voxels(tmp_path):
    volume = np.zeros((6, 20, 20), np.uint8)
    volume[4, 2:5, 2:5] = 9
    write_npy(tmp_path / "labels" / "case.npy", volume)
    (tmp_path / "labels" / "labelguard.toml").write_text("[labels]\nnum_classes = 3\n")
    page = Page(_html(audit(str(tmp_path / "labels"))))
    assert any("the mask (slice 4 of 6 along axis 0): 9 marked pixels" in img["alt"] for img in page.images())


@pytest.mark.code("LG301", "fail")
def test_a_voc_box_outside_its_image_is_drawn_on_the_image(tmp_path):
    (tmp_path / "Annotations").mkdir()
    (tmp_path / "Annotations" / "a.xml").write_text(voc_xml("a.jpg", [("cat", (60, 10, 120, 40))], size=(100, 80)))
    write_image(tmp_path / "JPEGImages" / "a.jpg", (100, 80))
    page = Page(_html(audit(str(tmp_path))))
    [drawn] = _pictures(page, "with the boxes in red")
    pixels = np.asarray(drawn.convert("RGB")).astype(int)
    red = (pixels[..., 0] > 200) & (pixels[..., 1] < 80) & (pixels[..., 2] < 80)
    assert drawn.size[0] > drawn.size[1] and red.any()
    # the canvas reaches x = 120 of a 100-wide image: the box's right edge is inside the picture
    assert np.nonzero(red.any(axis=0))[0].max() >= drawn.size[0] - 4


def test_thumbnails_per_code_are_bounded_and_only_flagged_files_are_kept(masks):
    report = audit(str(masks))
    assert set(report.flagged_tasks) == {f.path for f in report.findings if f.path in report.files}
    assert len(report.flagged_tasks) == 4 and len(report.files) == 5  # m4 is clean: never read again
    one = Page(_html(report, thumbnails=1))
    assert len([img for img in one.images() if "marked pixels" in img.get("alt", "")]) == 2  # LG201, LG202
    none = Page(_html(report, thumbnails=0))
    assert [img for img in none.images() if "chart" not in img.get("class", "")] == []


def test_a_flagged_file_gone_since_the_audit_is_said_not_raised(masks):
    report = audit(str(masks))
    os.remove(masks / "masks" / "m0.png")
    text = _html(report)
    assert "could not read" in text and "m0.png" in text


def test_the_cli_writes_the_file_and_the_option_takes_effect(masks, tmp_path):
    target = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["audit", str(masks), "-f", "html", "-o", str(target), "--html-thumbnails",
                                       "1", "--no-progress", "--workers", "1"])
    assert result.exit_code == 1 and "report written to" in result.output
    assert "--html-thumbnails 1" in target.read_text(encoding="utf-8")


def _run(code: str, cwd: Path, blocked: str | None = None) -> subprocess.CompletedProcess:
    paths = []
    if blocked:
        folder = cwd / "blocked"
        folder.mkdir(exist_ok=True)
        (folder / f"{blocked}.py").write_text(f"raise ImportError({f'No module named {blocked!r}'!r})\n")
        paths.append(str(folder))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*paths, os.environ["PYTHONPATH"]]))
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_other_formats_never_import_matplotlib(masks, tmp_path):
    done = _run("import sys\nfrom labelguard.cli import main\n"
                "try:\n    main(['audit', 'data', '-f', 'sarif', '--no-progress'])\n"
                "except SystemExit:\n    pass\n"
                "print('matplotlib loaded' if 'matplotlib' in sys.modules else 'matplotlib not loaded', "
                "file=sys.stderr)", tmp_path)
    assert "matplotlib not loaded" in done.stderr, done.stderr


def test_without_the_html_extra_the_error_names_it(masks, tmp_path):
    done = _run("from labelguard.cli import main\nmain(['audit', 'data', '-f', 'html', '-o', 'r.html', "
                "'--no-progress'])", tmp_path, blocked="matplotlib")
    assert done.returncode == 2
    assert "pip install 'labelguard[html]'" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r.html").exists()  # asked before the audit: no half-written report


def test_markup_in_a_file_name_is_shown_as_text(tmp_path):
    hostile = '<img src=x onerror=alert(1)>"\'&.png'
    mask = np.zeros((8, 8), np.uint8)
    mask[0, 0] = 9
    write_png(tmp_path / "masks" / hostile, mask)
    (tmp_path / "masks" / "labelguard.toml").write_text("[labels]\nnum_classes = 2\n")
    text = _html(audit(str(tmp_path / "masks")))
    page = Page(text)
    assert not [attrs for tag, attrs in page.tags if "onerror" in attrs]
    assert "&lt;img src=x onerror=alert(1)&gt;&quot;&#x27;&amp;.png" in text
    assert "default-src 'none'" in text  # and a script would not run: the page's policy forbids it


def test_a_flagged_file_replaced_by_a_pipe_is_said_without_hanging(masks):
    report = audit(str(masks))
    target = masks / "masks" / "m0.png"
    os.remove(target)
    os.mkfifo(target)
    text = _html(report)
    assert "could not read" in text and "not a regular file" in text


def test_the_value_chart_judges_each_value_against_every_dataset_spec(tmp_path):
    """Two datasets with their own specs: values legal in both are green, a value an LG201
    finding names is red, a value legal in one spec only (and named by no finding) is blue."""
    from labelguard.output.charts import IN_SPEC, OUTSIDE, UNJUDGED, value_chart

    for name, classes, values in (("binary", 2, (0, 1, 9)), ("three", 3, (0, 2))):
        for index in range(2):
            mask = np.zeros((32, 32), np.uint8)
            mask[:16] = values[1]
            if len(values) > 2 and index == 0:
                mask[:2, :2] = values[2]
            write_png(tmp_path / name / "masks" / f"m{index}.png", mask)
        (tmp_path / name / "labelguard.toml").write_text(f"[labels]\nnum_classes = {classes}\n", encoding="utf-8")
    report = audit(str(tmp_path))
    assert report.specs, "the two datasets keep their own specs"
    svg = _decoded(value_chart(report)).decode()
    fills = [svg.count(f"fill: {colour}") + svg.count(f'fill="{colour}"') for colour in (IN_SPEC, OUTSIDE, UNJUDGED)]
    assert fills == [2, 1, 1], fills  # 0 and 1 legal in both; 9 named by LG201; 2 outside the binary spec

