"""The sentence a rule ends each finding of its code with to say what the fault does in training
(LG201: "On a GPU this is the device-side assert...") is said once per code in the text report
and left out of each concise line; only that sentence, named by the rule, never a guess at where
a message's sentences end (a path "my. data" or an "e.g." would be cut)."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import numpy as np
from click.testing import CliRunner

from audit_helpers import run
from builders import organic_mask, swin_unet_dataset, write_list, write_png
from labelguard.cli import main
from labelguard.core.findings import CONSEQUENCE, Finding, Severity
from labelguard.output import write_report
from labelguard.output.text import consequence_of, said_once, without

GPU = 'On a GPU this is the "device-side assert triggered" in cross_entropy'


def _audit(*args: str):
    return CliRunner().invoke(main, ["audit", *args, "--no-config", "--workers", "1", "--no-progress", "--no-cache"])


def test_lg201_names_its_gpu_sentence_and_the_report_says_it_once(tmp_path):
    for name in ("a", "b", "c"):
        mask = organic_mask((24, 24), (0, 1, 2), seed=len(name))
        mask[0, :4] = 7
        write_png(tmp_path / "masks" / f"{name}.png", mask)
    text = _audit(str(tmp_path / "masks"), "--num-classes", "3").output
    assert text.count(GPU) == 1
    assert f"(>= num_classes and not the ignore index). {GPU}" in text
    concise = _audit(str(tmp_path / "masks"), "--num-classes", "3", "-f", "concise").output
    lines = [line for line in concise.splitlines() if " LG201 " in line]
    assert len(lines) == 3 and all(line.endswith("(num_classes=3, ignore_index=None)") for line in lines)
    findings = json.loads(_audit(str(tmp_path / "masks"), "--num-classes", "3", "-f", "json").output)["findings"]
    assert all(f["message"].endswith(". " + GPU) and f["data"][CONSEQUENCE] == GPU
               for f in findings if f["code"] == "LG201")


def test_a_path_with_a_sentence_break_in_it_is_never_cut(tmp_path):
    """Each LG003 message ends with the dataset's path: "my. data" is no sentence of its own."""
    root = tmp_path / "my. data"
    swin_unet_dataset(root, n=3, num_classes=4)
    write_list(root / "lists" / "train.txt", [p.stem for p in sorted((root / "train_npz").glob("*.npz"))]
               + ["missing_a", "missing_b"])
    args = (str(root), "--list", str(root / "lists" / "train.txt"), "--num-classes", "4")
    text = _audit(*args).output
    missing = [line for line in text.splitlines() if "missing_" in line]
    assert len(missing) == 2 and all(line.endswith("my. data") for line in missing), missing
    concise = [line for line in _audit(*args, "-f", "concise").output.splitlines() if " LG003 " in line]
    assert len(concise) == 2 and all(line.endswith("my. data") for line in concise), concise


def test_float_values_e_g_stay_whole(tmp_path):
    """LG204 messages hold "(e.g. 0.5)": a full stop inside a sentence."""
    folder = tmp_path / "masks"
    folder.mkdir()
    for name, count in (("a", 1), ("b", 2)):
        mask = np.ones((4, 4), np.float32)
        mask.flat[:count] = 0.5
        np.save(folder / f"{name}.npy", mask)
    for fmt in ("text", "concise"):
        lines = [line for line in _audit(str(folder), "--num-classes", "2", "-f", fmt).output.splitlines()
                 if "non-integer values (e.g." in line]
        assert len(lines) == 2 and all("(e.g. 0.5); a label array must hold whole class numbers" in line for line in lines), (fmt, lines)


def _finding(message: str, consequence: str | None) -> Finding:
    data = {CONSEQUENCE: consequence} if consequence is not None else {}
    return Finding("LG201", Severity.ERROR, "m.png", message, data=data)


def test_said_once_needs_every_finding_to_name_and_end_with_the_same_sentence():
    same = [_finding(f"value {v} is outside. {GPU}", GPU) for v in (3, 4)]
    assert said_once(same) == GPU
    assert [without(f.message, GPU) for f in same] == ["value 3 is outside", "value 4 is outside"]
    assert said_once(same[:1]) == ""  # one finding says it itself
    assert said_once([same[0], _finding("value 5 is outside. Something else", "Something else")]) == ""
    assert said_once([same[0], _finding(f"value 5 is outside. {GPU}", None)]) == ""  # not named by its rule
    assert said_once([_finding(GPU, GPU), _finding(GPU, GPU)]) == ""  # a message would be left empty
    assert without("unchanged", "") == "unchanged"
    assert consequence_of(same[0]) == GPU and consequence_of(_finding(GPU, GPU)) == ""
    assert consequence_of(_finding(f"value 5 is outside. {GPU}", None)) == ""


def test_a_report_of_findings_that_do_not_share_it_keeps_every_message_whole(tmp_path):
    write_png(tmp_path / "masks" / "a.png", organic_mask((16, 16), (0, 1)))
    report = run(tmp_path / "masks")
    findings = [_finding(f"value 3 is outside. {GPU}", GPU), _finding("value 4 is outside. Other words", "Other words")]
    stream = io.StringIO()
    write_report(replace(report, findings=findings), "text", stream)
    assert f"value 3 is outside. {GPU}" in stream.getvalue() and "value 4 is outside. Other words" in stream.getvalue()


def test_concise_counts_findings_about_a_whole_dataset_apart_from_those_in_files(tmp_path):
    """LG104 (a class never seen) is about the dataset, in no file: never "in 0 files"."""
    for name in ("a", "b"):
        write_png(tmp_path / "masks" / f"{name}.png", organic_mask((16, 16), (0, 1), seed=len(name)))
    last = _audit(str(tmp_path / "masks"), "--num-classes", "3", "-f", "concise").output.splitlines()[-1]
    assert last == "Found 1 finding (0 errors, 1 warning, 0 info), about a whole dataset; 2 files audited.", last
