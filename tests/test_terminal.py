"""The report in a terminal and in a pipe: colour on a terminal only, lines wrapped to its
width, the concise format, --quiet, a reader that stops reading, and the report's wording.

The terminal is a real pseudo-terminal (the ``pty`` module) with the command line running in
a subprocess behind it; pipes are real pipes between real processes.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from builders import organic_mask, swin_unet_dataset, voc_segmentation_dataset, write_list, write_png
from labelguard.cli import main
from labelguard.core.text import plural
from labelguard.output._style import Style, visible_length, wants_color, wrapped

pty = pytest.importorskip("pty", reason="a pseudo-terminal needs a POSIX system")

ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
GPU = 'On a GPU this is the "device-side assert triggered" in cross_entropy'


def environment(**changes: str | None) -> dict[str, str]:
    """This process's environment without the settings that decide colour and width, then ``changes``."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES", "FORCE_COLOR")}
    env["TERM"] = "xterm-256color"
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "labelguard", *[str(a) for a in args]]


def in_terminal(args, cwd, columns: int = 80, both: bool = False, **env: str | None) -> tuple[int, str, str]:
    """(exit code, what the terminal showed, stderr) of ``labelguard ARGS`` with a terminal
    of ``columns`` columns as its standard output (``both``: its standard error too, whose text
    then shows on the terminal and the third item is empty)."""
    import fcntl
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    errors = Path(cwd) / f"stderr-{os.getpid()}.txt"
    with open(errors, "w") as stderr:
        process = subprocess.Popen(command(*args), stdin=subprocess.DEVNULL, stdout=follower,
                                   stderr=follower if both else stderr, cwd=cwd, env=environment(**env))
    os.close(follower)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's last writer has exited
            break
        if not chunk:
            break
        shown += chunk
    code = process.wait(timeout=120)
    os.close(leader)
    # The terminal turns each line break into CR LF.
    return code, shown.decode("utf-8").replace("\r\n", "\n"), errors.read_text()


def piped(args, cwd, **env: str | None) -> subprocess.CompletedProcess:
    return subprocess.run(command(*args), cwd=cwd, capture_output=True, text=True, env=environment(**env),
                          timeout=120)


@pytest.fixture
def voc(tmp_path):
    """A VOC segmentation set whose borders (255) are outside num_classes 3 in all six masks:
    six LG201 findings sharing their last sentence."""
    voc_segmentation_dataset(tmp_path / "voc", n=6, num_classes=3)
    return tmp_path


def audit_args(*extra: str) -> list[str]:
    return ["audit", "voc", "--num-classes", "3", "--no-config", "--workers", "1", "--no-progress", *extra]


# ---- colour -------------------------------------------------------------------------------

def test_the_report_is_coloured_on_a_terminal_and_wrapped_to_its_width(voc):
    code, shown, stderr = in_terminal(audit_args(), voc, columns=80)
    assert code == 1 and stderr == ""
    assert "\x1b[1mLG201\x1b[0m \x1b[31merror\x1b[0m mask-value-outside-spec" in shown
    assert "result:    \x1b[31m6 errors\x1b[0m, 0 warnings, 0 info" in shown
    assert "\x1b[31mNO\x1b[0m" in shown  # 255 in the value table
    plain = ESCAPE.sub("", shown)
    assert max(len(line) for line in plain.splitlines()) <= 80
    # a long example continues on the next line, indented under the text it continues
    lines = plain.splitlines()
    example = next(i for i, line in enumerate(lines) if line.startswith("  - voc/"))
    assert re.match(r" {4}\S", lines[example + 1])


def test_a_pipe_gets_plain_one_line_items(voc):
    result = piped(audit_args(), voc)
    assert result.returncode == 1 and "\x1b" not in result.stdout
    examples = [line for line in result.stdout.splitlines() if line.startswith("  - voc/")]
    assert examples and all("is outside [0, 3) (num_classes=3, ignore_index=None)" in line for line in examples)


@pytest.mark.parametrize("env, flag", [({"NO_COLOR": "1"}, None), ({"TERM": "dumb"}, None), ({}, "never")])
def test_no_color_term_dumb_and_never_keep_a_terminal_plain(voc, env, flag):
    code, shown, _ = in_terminal(audit_args(*(["--color", flag] if flag else [])), voc, **env)
    assert code == 1 and "LG201 error mask-value-outside-spec" in shown
    assert "\x1b" not in shown


def test_an_empty_no_color_does_not_turn_colour_off(voc):
    """no-color.org: only a value that is not empty turns colour off."""
    code, shown, _ = in_terminal(audit_args(), voc, NO_COLOR="")
    assert "\x1b[31merror\x1b[0m" in shown


def test_color_always_colours_a_pipe_and_a_report_file_only_when_asked(voc):
    always = piped(audit_args("--color", "always"), voc)
    assert "\x1b[1mLG201\x1b[0m \x1b[31merror\x1b[0m" in always.stdout
    # piped output does not wrap, coloured or not: each example stays one line past 80 columns
    examples = [line for line in always.stdout.splitlines() if line.startswith("  - voc/")]
    assert examples and all(line.endswith("(num_classes=3, ignore_index=None)") for line in examples)
    assert max(visible_length(line) for line in examples) > 100
    code, shown, stderr = in_terminal(audit_args("-o", "report.txt"), voc)
    assert "\x1b" not in (voc / "report.txt").read_text() and "report written to report.txt" in stderr
    in_terminal(audit_args("-o", "coloured.txt", "--color", "always"), voc)
    assert "\x1b[31merror\x1b[0m" in (voc / "coloured.txt").read_text()


def test_colour_never_comes_from_the_data(tmp_path):
    """A file name holding an escape sequence is shown escaped; the only sequences on the
    terminal are the report's own, and none sits inside a name."""
    masks = tmp_path / "masks"
    write_png(masks / "a\x1b[32mgreen.png", organic_mask((16, 16), (0, 1, 7)))
    write_png(masks / "b.png", organic_mask((16, 16), (0, 1), seed=2))
    code, shown, _ = in_terminal(["audit", "masks", "--num-classes", "2", "--no-config", "--no-progress"], tmp_path)
    assert code == 1
    assert "a\\x1b[32mgreen.png" in shown
    assert set(ESCAPE.findall(shown)) <= {"\x1b[0m", "\x1b[1m", "\x1b[31m", "\x1b[33m", "\x1b[36m"}


def test_wants_color_reads_the_choice_the_stream_and_the_environment(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert wants_color("auto", Terminal()) and not wants_color("auto", io.StringIO())
    assert wants_color("always", None) and not wants_color("never", Terminal())
    monkeypatch.setenv("NO_COLOR", "0")  # any value that is not empty
    assert not wants_color("auto", Terminal())


# ---- wrapping -----------------------------------------------------------------------------

def test_wrapped_lines_keep_words_whole_and_hang_under_their_text():
    line = "  - masks/" + "a" * 70 + ".png: label value 255 in 136 pixels is outside [0, 3) " + "word " * 20
    parts = wrapped(line, 60)
    assert " ".join(part.strip() for part in parts).split() == line.split()
    assert parts[0] == "  - masks/" + "a" * 70 + ".png:"  # longer than the width, never cut, never alone
    assert parts[1].startswith("    label value 255")
    assert all(len(part) <= 60 for part in parts[1:])
    assert wrapped("hint: " + "x " * 40, 60)[1].startswith(" " * 6 + "x")
    assert wrapped("result:    " + "y " * 40, 60)[1].startswith(" " * 11 + "y")


def test_colour_codes_take_no_width_when_wrapping():
    painted = Style(True).severity("error", "error") + " " + "word " * 11
    assert visible_length(painted) == len("error " + "word " * 11)
    assert wrapped(painted.rstrip(), 60) == [painted.rstrip()]


def test_a_colour_open_at_a_line_break_is_closed_there_and_opened_again():
    """Was: red opened before "7" carried over the line break onto the indent of the next line."""
    line = "x" * 50 + ": 6 files audited: " + Style(True).severity("7 errors", "error") + ", 0 warnings, 0 info"
    parts = wrapped(line, 70)
    assert parts == ["x" * 50 + ": 6 files audited: \x1b[31m7\x1b[0m", "  \x1b[31merrors\x1b[0m, 0 warnings, 0 info"]
    for part in parts:  # each line closes every colour it opens
        assert part.count("\x1b[31m") == part.count("\x1b[0m")


def test_short_spans_in_brackets_backticks_and_quotes_stay_on_one_line():
    line = ("  - masks/a.png: label value 255 in 136 pixels is outside [0, 3) and run "
            "`labelguard fix remap --ignore-index 5` then the file's 'quoted name here' stays")
    for width in range(60, 100):
        parts = wrapped(line, width)
        assert " ".join(part.strip() for part in parts).split() == line.split()
        for span in ("[0, 3)", "`labelguard fix remap --ignore-index 5`", "'quoted name here'"):
            assert sum(span in part for part in parts) == 1, (width, parts)
    # A coloured span is kept the same way: colour codes take no width and split nothing.
    painted = "x " * 30 + Style(True).code("(a b)")
    assert wrapped(painted, 60) == ["x " * 29 + "x", "  " + Style(True).code("(a b)")]
    # A span longer than the limit breaks like the words around it.
    long = "w " * 25 + "(" + "word " * 12 + "end)"
    assert len(wrapped(long, 60)) == 2 and max(visible_length(part) for part in wrapped(long, 60)) <= 60


# ---- the concise format -------------------------------------------------------------------

@pytest.fixture
def swin(tmp_path):
    """Swin-Unet slices with value 9 planted in one, a list entry naming no file on line 7,
    and num_classes 9 of which 5 classes never occur (a dataset-level LG104)."""
    _, listing = swin_unet_dataset(tmp_path / "swin", n=6, num_classes=9, bad={1: 9})
    write_list(listing, [*listing.read_text().split(), "case0009_slice000"])
    return tmp_path


SWIN = ["audit", "swin", "--list", "swin/lists/train.txt", "--num-classes", "9", "--no-config", "--workers", "1",
        "--no-progress"]


def test_concise_prints_one_line_per_finding_then_the_count(swin):
    result = piped([*SWIN, "-f", "concise"], swin)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines == [
        "swin: LG104 [warning] class values 4, 5, 6, 7, 8 of the spec never occur in 6 samples (values found: 0, 1, 2, 3, 9)",
        "swin/lists/train.txt:7: LG003 [error] 'case0009_slice000' does not exist under swin",
        "swin/train_npz/case0001_slice001.npz: LG201 [error] label value 9 in 100 pixels is outside [0, 9) "
        "(num_classes=9, ignore_index=None)",
        "Found 3 findings (2 errors, 1 warning, 0 info): 2 in 2 files, 1 about a whole dataset; 6 files audited.",
    ]


def test_concise_quiet_prints_the_findings_only_and_a_clean_audit_nothing(swin, tmp_path):
    result = piped([*SWIN, "-f", "concise", "-q"], swin)
    assert result.returncode == 1 and len(result.stdout.splitlines()) == 3
    assert all(re.match(r"\S+: LG\d{3} \[(error|warning)\] ", line) for line in result.stdout.splitlines())
    write_png(tmp_path / "clean" / "a.png", organic_mask((16, 16), (0, 1)))
    clean = ["audit", "clean", "--num-classes", "2", "--no-config", "--no-progress", "-f", "concise"]
    assert piped(clean, tmp_path).stdout == "No findings: 1 file audited.\n"
    quiet = piped([*clean, "-q"], tmp_path)
    assert quiet.returncode == 0 and quiet.stdout == ""


def test_concise_is_coloured_on_a_terminal_and_never_wrapped(voc):
    code, shown, _ = in_terminal(audit_args("-f", "concise"), voc, columns=60)
    findings = [line for line in shown.splitlines() if "LG201" in line]
    assert code == 1 and len(findings) == 6
    assert all("\x1b[1mLG201\x1b[0m \x1b[31m[error]\x1b[0m label value 255" in line
               and line.endswith("ignore_index=None)") for line in findings)


def test_formats_and_the_help_name_concise():
    runner = CliRunner()
    formats = runner.invoke(main, ["formats"]).output
    assert "  concise            one line per finding: path:line: CODE [severity] message" in formats
    help_text = " ".join(runner.invoke(main, ["audit", "--help"]).output.split())
    assert "text, concise (one line per finding), json" in help_text
    assert "--color [auto|always|never]" in help_text and "-q, --quiet" in help_text


# ---- --quiet ------------------------------------------------------------------------------

def test_quiet_text_is_the_findings_and_one_result_line(voc):
    result = piped(audit_args("-q"), voc)
    lines = result.stdout.splitlines()
    assert result.returncode == 1
    assert lines[0].startswith("LG201 error mask-value-outside-spec: 6 findings, 6 files")
    assert lines[-1] == "voc: 6 files audited: 6 errors, 0 warnings, 0 info"
    for gone in ("labelguard label audit report", "Found values", "What to run next", "data:"):
        assert gone not in result.stdout


def test_quiet_says_a_clean_dataset_was_audited_and_an_empty_one_still_fails(tmp_path):
    write_png(tmp_path / "clean" / "a.png", organic_mask((16, 16), (0, 1)))
    clean = piped(["audit", "clean", "--num-classes", "2", "--no-config", "--no-progress", "-q"], tmp_path)
    assert clean.returncode == 0 and clean.stdout == "clean: 1 file audited: 0 errors, 0 warnings, 0 info\n"
    (tmp_path / "empty").mkdir()
    empty = piped(["audit", "empty", "--num-classes", "2", "--no-config", "--no-progress", "-q"], tmp_path)
    assert empty.returncode == 2
    assert empty.stdout == "empty: nothing was checked: no file was audited\n"
    assert "labelguard: error:" in empty.stderr


def test_quiet_silences_the_chatter_on_stderr_and_leaves_json_whole(voc):
    written = piped(audit_args("-q", "-f", "json", "-o", "report.json"), voc)
    assert written.returncode == 1 and written.stderr == ""
    loud = piped(audit_args("-f", "json"), voc).stdout
    quiet = piped(audit_args("-f", "json", "-q"), voc).stdout
    assert quiet == loud


def test_quiet_on_a_terminal_shows_no_progress_bar(voc):
    # Standard error on the terminal too: the bar is drawn only there.
    args = ["audit", "voc", "--num-classes", "3", "--no-config", "--workers", "1", "--no-cache"]
    code, shown, _ = in_terminal(args, voc, both=True)
    assert code == 1 and "auditing" in shown  # the bar's label, drawn then erased
    code, shown, _ = in_terminal([*args, "-q"], voc, both=True)
    assert code == 1 and "auditing" not in shown and "6 files audited" in shown


# ---- a reader that stops reading ----------------------------------------------------------

def _into_a_closed_pipe(args, cwd) -> subprocess.CompletedProcess:
    """``labelguard ARGS`` writing into a pipe whose reader closed it before the first line."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run(command(*args), cwd=cwd, stdout=writer, stderr=subprocess.PIPE, text=True,
                              env=environment(), timeout=120)
    finally:
        os.close(writer)


def _into_head(args, cwd) -> tuple[int, str, bytes]:
    """(exit code, stderr, what head printed) of ``labelguard ARGS | head -1``."""
    writer = subprocess.Popen(command(*args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=environment())
    head = subprocess.Popen(["head", "-1"], stdin=writer.stdout, stdout=subprocess.PIPE)
    assert writer.stdout is not None
    writer.stdout.close()  # head holds the only reading end: when it exits, the pipe is broken
    shown, _ = head.communicate(timeout=120)
    _, stderr = writer.communicate(timeout=120)
    return writer.returncode, stderr.decode(), shown


def test_rules_into_head_exits_0_without_a_word(tmp_path):
    # The race: head may exit before or after the last line is written; ten runs see both.
    for _ in range(10):
        code, stderr, shown = _into_head(["rules"], tmp_path)
        assert (code, stderr) == (0, "") and shown.startswith(b"LG001")
    closed = _into_a_closed_pipe(["rules"], tmp_path)
    assert (closed.returncode, closed.stderr) == (0, "")


def test_an_audit_into_a_closed_pipe_exits_as_its_findings_say(voc, tmp_path):
    for fmt in ("text", "concise", "json"):
        closed = _into_a_closed_pipe(audit_args("-f", fmt), voc)
        assert (closed.returncode, closed.stderr) == (1, ""), fmt
    code, stderr, shown = _into_head(audit_args("-f", "concise"), voc)
    assert (code, stderr) == (1, "") and b"LG201" in shown
    write_png(tmp_path / "clean" / "a.png", organic_mask((16, 16), (0, 1)))
    clean = _into_a_closed_pipe(["audit", "clean", "--num-classes", "2", "--no-config", "--no-progress"], tmp_path)
    assert (clean.returncode, clean.stderr) == (0, "")


def _closed(args, cwd) -> subprocess.CompletedProcess:
    """``labelguard ARGS >&-``: standard output closed before the command starts."""
    return subprocess.run(["sh", "-c", '"$0" "$@" >&-', *command(*args)], cwd=cwd, capture_output=True, text=True,
                          env=environment(), timeout=120)


def test_a_closed_standard_output_is_no_error_and_changes_no_exit_code(voc, tmp_path):
    """Was: rules exited 1 with a traceback (AttributeError: 'NoneType' object has no attribute 'flush')."""
    assert (_closed(["rules"], tmp_path).returncode, _closed(["rules"], tmp_path).stderr) == (0, "")
    for fmt in ("text", "json"):
        found = _closed(audit_args("-f", fmt), voc)
        assert (found.returncode, found.stderr) == (1, ""), fmt
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.txt").write_text("hi\n")
    nothing = _closed(["audit", "empty", "--no-config", "--no-progress"], tmp_path)
    assert nothing.returncode == 2 and nothing.stderr.startswith("labelguard: error: nothing was audited")


def _both_into_head(args, cwd, lines: int = 1) -> int:
    """The exit code of ``labelguard ARGS 2>&1 | head -LINES``."""
    writer = subprocess.Popen(command(*args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              env=environment())
    head = subprocess.Popen(["head", f"-{lines}"], stdin=writer.stdout, stdout=subprocess.DEVNULL)
    assert writer.stdout is not None
    writer.stdout.close()
    head.wait(timeout=120)
    return writer.wait(timeout=120)


def test_a_reader_that_stops_reading_both_streams_changes_no_exit_code(voc, tmp_path):
    """Was: ``labelguard audit empty 2>&1 | head -1`` exited 0 or 1 in most runs, not 2: the
    error line on the broken pipe was taken for a reader satisfied with what it read."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.txt").write_text("hi\n")
    nothing = ["audit", "empty", "--no-config", "--no-progress"]
    # The race: head may exit before, between or after the report and the error line; runs see each.
    assert [_both_into_head(nothing, tmp_path) for _ in range(6)] == [2] * 6
    assert [_both_into_head([*nothing, "-f", "json"], tmp_path, lines=20) for _ in range(3)] == [2] * 3
    assert [_both_into_head(audit_args(), voc) for _ in range(4)] == [1] * 4
    # A pipe whose reader is gone before the first word: every write fails, nothing changes the code.
    reader, writer = os.pipe()
    os.close(reader)
    try:
        for args, cwd, expected in ((nothing, tmp_path, 2), (audit_args(), voc, 1), (["rules"], tmp_path, 0)):
            result = subprocess.run(command(*args), cwd=cwd, stdout=writer, stderr=writer, env=environment(),
                                    timeout=120)
            assert result.returncode == expected, args
    finally:
        os.close(writer)


# ---- labelguard rule NAME -----------------------------------------------------------------

def test_rule_takes_a_code_in_any_case_or_the_name_rules_lists():
    runner = CliRunner()
    by_code = runner.invoke(main, ["rule", "LG201"])
    assert by_code.exit_code == 0
    for given in ("lg201", "Lg201", "mask-value-outside-spec", " Mask-Value-Outside-Spec "):
        assert runner.invoke(main, ["rule", given]).output == by_code.output
    listed = runner.invoke(main, ["rules"]).output
    assert "mask-value-outside-spec" in listed


def test_an_unknown_rule_suggests_the_closest_codes_and_names():
    runner = CliRunner()
    name = runner.invoke(main, ["rule", "mask-value-outside"])
    assert name.exit_code == 2
    assert "unknown check 'mask-value-outside'; did you mean mask-value-outside-spec" in name.output
    code = runner.invoke(main, ["rule", "LG2011"])
    assert code.exit_code == 2 and "did you mean LG201 or LG211?" in code.output
    nothing = runner.invoke(main, ["rule", "zzzz"])
    assert "unknown check 'zzzz' (`labelguard rules` lists every code and name)" in nothing.output


@pytest.mark.parametrize("typed, meant", [("LG2O1", "LG201, LG202 or LG203"), ("lg2o1", "LG201, LG202 or LG203"),
                                          ("LG2l4", "LG214, LG213 or LG212"), ("LGI02", "LG102, LG101 or LG103"),
                                          ("lg-201", "LG201, LG202 or LG203")])
def test_a_code_typed_with_a_letter_for_a_digit_suggests_the_code_it_looks_like_first(typed, meant):
    """Was: LG2O1 (letter O) suggested 'LG214' or 'LG213' or 'LG212', never LG201."""
    result = CliRunner().invoke(main, ["rule", typed])
    assert result.exit_code == 2
    assert f"unknown check {typed!r}; did you mean {meant}? (`labelguard rules`" in result.output


# ---- wording ------------------------------------------------------------------------------

def test_counts_group_their_thousands_as_the_rest_of_the_report():
    assert plural(3000, "file") == "3,000 files"
    assert plural(1, "file") == "1 file" and plural(999, "pixel") == "999 pixels"


def test_the_cache_line_groups_thousands_on_both_sides(tmp_path):
    """Was "1,200 of 1200 files": the count before "of" had its thousands grouped, the total not."""
    then = time.time() - 3600  # files written this second are read again (their signature could not tell a change)
    for i in range(1200):
        path = write_png(tmp_path / "masks" / f"{i:04d}.png", np.full((2, 2), i % 2, np.uint8))
        os.utime(path, (then, then))
    args = ["audit", str(tmp_path / "masks"), "--num-classes", "2", "--no-config", "--no-progress", "--workers", "1",
            "--cache-dir", str(tmp_path / "cache")]
    runner = CliRunner()
    assert runner.invoke(main, args).exit_code == 0
    second = runner.invoke(main, args).output
    assert "cache:     1,200 of 1,200 files unchanged since an earlier audit" in second
    assert "audited:   1,200 files" in second


def test_a_sentence_ending_every_finding_of_a_code_is_said_once(voc):
    result = piped(audit_args(), voc)
    lines = result.stdout.splitlines()
    start = lines.index("LG201 error mask-value-outside-spec: 6 findings, 6 files")
    group = lines[start:lines.index("", start)]
    assert group[1] == f"  a mask value is outside the spec (>= num_classes and not the ignore index). {GPU}"
    assert sum(GPU in line for line in group) == 1
    assert all(line.endswith("(num_classes=3, ignore_index=None)") for line in group if line.startswith("  - "))
    import json

    report = json.loads(piped(audit_args("-f", "json"), voc).stdout)
    assert all(f["message"].endswith(GPU) for f in report["findings"] if f["code"] == "LG201")


def test_concise_leaves_the_gpu_sentence_out_of_every_line(voc, swin):
    lines = [line for line in piped(audit_args("-f", "concise"), voc).stdout.splitlines() if " LG201 " in line]
    assert len(lines) == 6 and not any(GPU in line for line in lines)
    assert all(line.endswith("(num_classes=3, ignore_index=None)") for line in lines)
    # A code found once reads the same: a line holds the facts of its place, whatever the others.
    [single] = [line for line in piped([*SWIN, "-f", "concise"], swin).stdout.splitlines() if " LG201 " in line]
    assert single.endswith("(num_classes=9, ignore_index=None)") and GPU not in single


def test_a_single_finding_keeps_its_whole_message(swin):
    result = piped(SWIN, swin)
    assert f"is outside [0, 9) (num_classes=9, ignore_index=None). {GPU}" in result.stdout


def test_a_coloured_audit_does_not_import_rich(voc):
    """Colour is a few ANSI codes: rich, and its import time, stay with the progress bar."""
    driver = ("import sys\nfrom labelguard.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n"
              "    pass\nprint('rich' in sys.modules, file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", driver, *audit_args("--color", "always")], cwd=voc,
                            capture_output=True, text=True, env=environment(), timeout=120)
    assert "\x1b[31merror\x1b[0m" in result.stdout
    assert result.stderr.strip().splitlines()[-1] == "False"
