"""Names from the data never act on what shows the report: a terminal, a CI log, an XML or JSON
parser, a TOML file.

A dataset's file and class names are the dataset author's: an escape sequence that clears the
terminal, a line break followed by a GitHub workflow command, a bidi override that reverses
what a name seems to say, a control character XML forbids, bytes that are no UTF-8. Every
format shows each such character escaped (``\\x1b``, ``\\n``, ``\\u202e``, ``\\xff`` for a byte),
writes a complete report with the exit code of its findings, and a baseline of such names
matches them again; ``init`` writes class names as TOML that parses back to the same names.
"""

from __future__ import annotations

import html
import json
import os
import re
import unicodedata
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation_builders import coco_categories, coco_dataset, imagefolder
from builders import organic_mask, write_dataset_meta, write_png
from labelguard.cli import main
from labelguard.config import format_config, toml_parser
from labelguard.core.spec import LabelSpec
from labelguard.core.text import printable

# Each hostile file name (the last one's bytes are no UTF-8) and how every report shows it.
NAMES = {
    "esc\x1b[2J\x1b[H all clean.png": "esc\\x1b[2J\\x1b[H all clean.png",
    "ci\n::error file=x::forged\n::add-mask::secret.png": "ci\\n::error file=x::forged\\n::add-mask::secret.png",
    "bidi\u202egnp.exe.png": "bidi\\u202egnp.exe.png",
    "vt\x0b c1\x9b31m.png": "vt\\x0b c1\\u009b31m.png",
    os.fsdecode(b"bad\xffname.png"): "bad\\xffname.png",
}
# What no report may hold raw: controls other than the line feed of its own lines, C1 controls,
# bidi marks, overrides and isolates, line separators, lone surrogates.
FORBIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
                       "\ud800-\udfff]")
FORMATS = ("text", "concise", "json", "sarif", "github", "junit", "html", "baseline")


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def _audit(*args: str):
    return _invoke("audit", "data", "--no-progress", "--no-cache", "--workers", "1", *args)


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    """Masks under ``tmp_path/data`` named by :data:`NAMES`, each holding 255 where the spec
    (``--num-classes 2``) allows 0 and 1; ``tmp_path`` is the current folder."""
    monkeypatch.chdir(tmp_path)
    mask = np.zeros((8, 8), np.uint8)
    mask[2:5, 2:5] = 255
    for name in NAMES:
        write_png(tmp_path / "data" / name, mask)
    assert sorted(os.listdir(b"data"))[0] == b"bad\xffname.png"
    return tmp_path


def _strings(value):
    """Every string a parsed JSON document holds, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _shown_paths() -> set[str]:
    return {f"data/{shown}" for shown in NAMES.values()}


def _check_text(text: str) -> None:
    assert text.rstrip("\n").endswith("to name the sample at load time")  # its last line: the report is whole
    assert sum(shown in text for shown in NAMES.values()) == len(NAMES)


def _check_concise(text: str) -> None:
    lines = text.splitlines()
    assert lines[-1].startswith("Found ")  # its last line: the report is whole
    # one line per finding: no name adds a line of its own
    assert sorted(line.partition(": LG201 ")[0] for line in lines if ": LG201 " in line) == sorted(_shown_paths())


def _check_json(text: str) -> None:
    report = json.loads(text)
    assert {f["path"] for f in report["findings"] if f["code"] == "LG201"} == _shown_paths()
    assert set(report["summary"]["files"]) == _shown_paths()
    assert not any(FORBIDDEN.search(string) for string in _strings(report))


def _check_sarif(text: str) -> None:
    log = json.loads(text)
    uris = {location["physicalLocation"]["artifactLocation"]["uri"]
            for result in log["runs"][0]["results"] for location in result["locations"]}
    # An artifact URI percent-encodes the name's bytes: it names the very file.
    assert {"data/" + quote(os.fsencode(name)) for name in NAMES} <= uris
    assert not any(FORBIDDEN.search(string) for string in _strings(log))


def _check_github(text: str) -> None:
    lines = text.splitlines()
    assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines)
    assert len([line for line in lines if "LG201" in line]) == len(NAMES)  # no line forged by a name
    assert "file=data/bad\\xffname.png" in text


def _check_junit(text: str) -> None:
    suite = ElementTree.fromstring(text.encode("utf-8")).find("testsuite")
    assert {case.get("name") for case in suite.iter("testcase")} - {"(dataset)"} == _shown_paths()


def _check_html(text: str) -> None:
    assert text.rstrip().endswith("</html>")
    assert all(html.escape(shown) in text for shown in NAMES.values())
    assert "Content-Security-Policy" in text


def _check_baseline(text: str) -> None:
    document = json.loads(text)
    assert {entry["path"] for entry in document["findings"] if entry["path"]} == set(NAMES.values())
    assert not any(FORBIDDEN.search(string) for string in _strings(document))


CHECKS = {"text": _check_text, "concise": _check_concise, "json": _check_json, "sarif": _check_sarif,
          "github": _check_github, "junit": _check_junit, "html": _check_html, "baseline": _check_baseline}


@pytest.mark.parametrize("to_file", [False, True], ids=["stdout", "output-file"])
@pytest.mark.parametrize("output_format", FORMATS)
def test_every_format_writes_its_whole_report_with_hostile_names_escaped(hostile, output_format, to_file):
    if output_format == "html":
        pytest.importorskip("matplotlib", reason="the HTML report draws charts (labelguard[html])")
    result = _audit("--num-classes", "2", "-f", output_format, *(["-o", "report.out"] if to_file else []))
    assert result.exit_code == 1, result.output  # the findings decide it, never a failed write
    text = Path("report.out").read_text(encoding="utf-8") if to_file else result.stdout
    assert not FORBIDDEN.search(text), FORBIDDEN.search(text)
    if output_format != "github":
        # A CI log runs a workflow command at the start of a line, whatever the format.
        assert not [line for line in text.splitlines() if line.lstrip().startswith("::")]
    CHECKS[output_format](text)


def test_the_text_report_cannot_be_cleared_or_forged_by_a_name(hostile):
    text = _audit("--num-classes", "2").stdout
    assert "\x1b" not in text and "\x0b" not in text and "\u202e" not in text
    assert "  - data/esc\\x1b[2J\\x1b[H all clean.png: " in text
    assert "  - data/ci\\n::error file=x::forged\\n::add-mask::secret.png: " in text
    assert not [line for line in text.splitlines() if line.lstrip().startswith("::")]


def test_a_baseline_of_hostile_names_knows_their_findings_on_the_next_run(hostile):
    written = _invoke("baseline", "write", "data", "--num-classes", "2", "--no-progress", "--no-cache",
                      "-o", "baseline.json")
    assert written.exit_code == 0, written.output
    _check_baseline(Path("baseline.json").read_text(encoding="utf-8"))
    again = _audit("--num-classes", "2", "--baseline", "baseline.json", "-f", "json")
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert {f["baseline"] for f in report["findings"]} == {"known"}
    assert report["summary"]["baseline"]["absent"] == []

    # A JSON report serves as a baseline as well.
    assert _audit("--num-classes", "2", "-f", "json", "-o", "report.json").exit_code == 1
    assert _audit("--num-classes", "2", "--baseline", "report.json").exit_code == 0


def test_fix_from_a_report_of_hostile_names_fixes_those_files_and_prints_them_escaped(hostile):
    assert _audit("--num-classes", "2", "-f", "json", "-o", "report.json").exit_code == 1
    assert json.loads(Path("report.json").read_text(encoding="utf-8"))["summary"]["suggested_remap"] == {"255": 1}
    dry = _invoke("fix", "remap", "--from-report", "report.json")
    assert dry.exit_code == 0, dry.output
    assert not FORBIDDEN.search(dry.output)
    assert all(shown in dry.output for shown in NAMES.values())
    assert _invoke("fix", "remap", "--from-report", "report.json", "--apply").exit_code == 0
    assert _audit("--num-classes", "2").exit_code == 0


def test_stderr_shows_text_from_the_data_escaped(tmp_path, monkeypatch):
    """A config file found with the data is data too: a key it names is said on stderr escaped."""
    monkeypatch.chdir(tmp_path)
    write_png(tmp_path / "data" / "a.png", np.zeros((8, 8), np.uint8))
    (tmp_path / "data" / "labelguard.toml").write_text('[audit]\n"x\\u001b[2J\\n::error::forged" = 1\n',
                                                       encoding="utf-8")
    result = _audit()
    assert "x\\x1b[2J\\n::error::forged" in result.stderr, result.stderr
    assert not FORBIDDEN.search(result.stderr)
    assert not [line for line in result.stderr.splitlines() if line.lstrip().startswith("::")]


# ---- class names -----------------------------------------------------------------------------

HOSTILE_CLASSES = ["cat\nsecond line\a", 'say "hi"', "back\\slash", "\u00fcber caf\u00e9 \u732b", "tab\there",
                   "esc\x1b[31mred", "bidi\u202etxt.exe", "ci\n::add-mask::x"]


def test_init_writes_toml_that_parses_back_to_the_class_names_and_later_audits_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    coco_dataset(tmp_path / "data", n_images=len(HOSTILE_CLASSES), categories=coco_categories(HOSTILE_CLASSES))
    result = _invoke("init", "data")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "data" / "labelguard.toml").read_text(encoding="utf-8")
    assert sorted(toml_parser().loads(text)["labels"]["classes"]) == sorted(HOSTILE_CLASSES)
    assert not FORBIDDEN.search(text)
    assert not [line for line in result.stdout.splitlines() if line.lstrip().startswith("::")]

    audited = _audit()
    assert audited.exit_code == 0, audited.output  # the spec it wrote holds every name the data has
    assert "labelguard.toml" in audited.stdout and "No findings." in audited.stdout
    assert not FORBIDDEN.search(audited.stdout)
    assert not [line for line in audited.stdout.splitlines() if line.lstrip().startswith("::")]


@pytest.mark.parametrize("output_format", FORMATS)
def test_class_names_a_dataset_declares_are_escaped_in_every_format(tmp_path, monkeypatch, output_format):
    """Class names from the dataset's metadata reach messages ("class value 2 (...) never
    occurs") and the spec's description: escaped like file names."""
    if output_format == "html":
        pytest.importorskip("matplotlib", reason="the HTML report draws charts (labelguard[html])")
    monkeypatch.chdir(tmp_path)
    for index in range(3):
        write_png(tmp_path / "data" / "masks" / f"{index}.png", organic_mask((16, 16), (0, 1), seed=index))
    write_dataset_meta(tmp_path / "data" / "dataset_meta.json", ["bg", "cat", "esc\x1b[2J\n::error::forged\u202e"],
                       [(0, 0, 0), (128, 0, 0), (0, 128, 0)])
    result = _audit("-f", output_format, "--fail-on", "warning")
    assert result.exit_code == 1, result.output  # LG104: class value 2 never occurs
    assert not FORBIDDEN.search(result.stdout), FORBIDDEN.search(result.stdout)
    if output_format != "github":
        assert not [line for line in result.stdout.splitlines() if line.lstrip().startswith("::")]
    if output_format == "junit":
        ElementTree.fromstring(result.stdout.encode("utf-8"))
    shown = "esc\\x1b[2J\\n::error::forged\\u202e"
    if output_format in ("json", "sarif", "baseline"):
        strings = list(_strings(json.loads(result.stdout)))
        assert not any(FORBIDDEN.search(string) for string in strings)
        assert any(shown in string for string in strings)
    else:
        assert (html.escape(shown) if output_format == "html" else shown) in result.stdout


def test_a_class_name_that_reads_as_mathtext_is_drawn_as_it_is(tmp_path, monkeypatch):
    """The HTML report's charts draw class names with matplotlib, which reads "$...$" as math:
    a name that is bad math must not fail the report."""
    pytest.importorskip("matplotlib", reason="the HTML report draws charts (labelguard[html])")
    monkeypatch.chdir(tmp_path)
    names = ["$\\foo$ bar", "$x^{$", "cat"]
    coco_dataset(tmp_path / "data", n_images=3, categories=coco_categories(names))
    result = _audit("-f", "html", "-o", "report.html")
    assert result.exit_code == 0, result.output
    text = Path("report.html").read_text(encoding="utf-8")
    assert text.rstrip().endswith("</html>") and 'alt="Classes of the audited data"' in text


@given(st.lists(st.text(st.characters(codec="utf-8"), min_size=1).filter(str.strip), min_size=1, max_size=4,
                unique=True))
@settings(max_examples=200, deadline=None)
def test_format_config_writes_toml_that_parses_back_to_any_class_names(names):
    text = format_config(LabelSpec(classes=tuple(names)), [f"class {name}" for name in names])
    assert toml_parser().loads(text)["labels"]["classes"] == names


def test_init_refuses_a_class_name_toml_cannot_hold(tmp_path, monkeypatch):
    """A folder name that is no UTF-8 names a class TOML has no string for: init says so and
    writes nothing, rather than a spec that names another class."""
    monkeypatch.chdir(tmp_path)
    imagefolder(tmp_path / "data", {"cat": 2, os.fsdecode(b"bad\xffdog"): 2})
    result = _invoke("init", "data")
    assert result.exit_code == 2
    assert "bad\\xffdog" in result.output and not FORBIDDEN.search(result.output)
    assert not (tmp_path / "data" / "labelguard.toml").exists()


# ---- the escape itself -----------------------------------------------------------------------

ANY_CHARACTER = st.characters(codec=None, categories=("L", "M", "N", "P", "S", "Z", "C"))
UNSAFE_TEXT = st.text(st.characters(codec=None, categories=("Cc", "Cf", "Cs", "Zl", "Zp", "Zs")), max_size=6)


@given(st.text(ANY_CHARACTER, max_size=40))
@settings(max_examples=500, deadline=None)
def test_printable_leaves_nothing_that_acts_and_is_stable(text):
    shown = printable(text)
    assert not FORBIDDEN.search(shown)
    assert not [char for char in shown if unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp")]
    shown.encode("utf-8")  # no lone surrogate is left: every UTF-8 writer takes it
    assert printable(text) == shown and printable(shown) == shown
    if text.isprintable():
        assert shown == text


@given(st.lists(st.tuples(st.text("ab/. ", max_size=3), UNSAFE_TEXT), min_size=1, max_size=4),
       st.lists(UNSAFE_TEXT, min_size=4, max_size=4))
@settings(max_examples=500, deadline=None)
def test_texts_that_differ_only_in_unsafe_characters_are_shown_differently(parts, others):
    """The same kept text with other characters between: their escapes differ, so two such
    names never share a report line or a baseline identity."""
    first = "".join(kept + unsafe for kept, unsafe in parts)
    second = "".join(kept + other for (kept, _), other in zip(parts, others))
    if first != second:
        assert printable(first) != printable(second)


def test_the_escape_of_each_kind_of_character():
    assert printable("plain name.png") == "plain name.png"
    assert printable("a\x1b[2Jb\x00\x7f") == "a\\x1b[2Jb\\x00\\x7f"
    assert printable("x\ny\rz\t") == "x\\ny\\rz\\t"
    assert printable("\x85\x9b") == "\\u0085\\u009b"  # C1 controls: never read as the bytes 0x85, 0x9b
    assert printable(os.fsdecode(b"\xff\x80")) == "\\xff\\x80"
    assert printable("\u202e\u2066\u200f\u061c\u2028\ufeff\u00a0") == \
        "\\u202e\\u2066\\u200f\\u061c\\u2028\\ufeff\\u00a0"
    assert printable("\ud800") == "\\ud800"  # a lone surrogate that is no byte of a name
    assert printable("caf\u00e9 \u732b \u05e9\u05dc\u05d5\u05dd") == "caf\u00e9 \u732b \u05e9\u05dc\u05d5\u05dd"
