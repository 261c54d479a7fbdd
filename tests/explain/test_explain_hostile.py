"""A pasted log is untrusted text: explain's work grows linearly with it whatever it repeats,
and nothing in it reaches the terminal as an escape sequence.

The crafted logs repeat the prefix of every pattern the extractor and the knowledge base
search for; each runs in a subprocess with a hang guard (a quadratic pattern takes minutes
on them). Nothing here measures speed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from labelguard.explain import explain
from labelguard.explain._knowledge import ENTRIES
from labelguard.explain._render import render_explanation

HANG_GUARD = 120
PREFIXES = ["block: [", "Assertion ", 'File "', "Cell In [", " File x:", "torch ", "python3.", "Error: ",
            "ValueError: ", "a.", "-", "\x1b[", "\x1b]", "thread: [", "t >= 0 && ", "indexSelect", " " * 7,
            "stack expects each tensor to be equal size, but got [", "CUDA error: ", "but got p=",
            "invalid multinomial distribution (", "at entry 0 and [", "input value should be between 0~1, but got "]


def literal_prefixes() -> list[str]:
    """The leading literal words of the knowledge base's patterns (where a search restarts)."""
    found = set()
    for entry in ENTRIES:
        for pattern in (*entry.conditions, *entry.kernels, *entry.messages, *entry.frames, *entry.requires):
            head = ""
            for char in pattern:
                if not (char.isalnum() or char in " _-:`'"):
                    break
                head += char
            if len(head) >= 4:
                found.add(head)
    return sorted(found)


def test_crafted_logs_are_explained_in_linear_work():
    crafted = [p * (100_000 // len(p)) for p in PREFIXES + literal_prefixes()]
    script = (
        "import sys, json\n"
        "from labelguard.explain import explain\n"
        "for text in json.load(sys.stdin):\n"
        "    explain(text)\n"
        "print('done')\n"
    )
    import json

    done = subprocess.run([sys.executable, "-c", script], input=json.dumps(crafted), capture_output=True,
                          text=True, timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "done"


@pytest.mark.parametrize("sequence", [
    "\x1b]0;owned\x07",  # set the window title
    "\x1b]8;;http://example.invalid\x1b\\",  # a hyperlink
    "\x1b[2J\x1b[H",  # clear the screen
    "\x1bc",  # reset the terminal
    "\x9b31m",  # C1 CSI
    "\x07\x08\x7f",  # bell, backspace, delete
])
def test_escape_sequences_from_the_log_never_reach_the_output(sequence):
    log = ("Traceback (most recent call last):\n"
           f'  File "train.py", line 3, in <module>\n'
           f"RuntimeError: CUDA error: device-side assert triggered{sequence} on sample 3\n")
    explanation = explain(log)
    rendered = render_explanation(explanation)
    text = rendered + repr(explanation.to_dict())
    assert "\x1b" not in rendered and "\x07" not in rendered and "\x9b" not in rendered
    assert "device-side assert" in text


def test_long_runs_and_a_ten_megabyte_line_are_explained_within_the_hang_guard():
    script = (
        "from labelguard.explain import explain\n"
        "for unit in (' ', 'a', '7', 'ab1 ', '[0,0,0]'):\n"
        "    explain(unit * (1_000_000 // len(unit)))\n"
        "result = explain('RuntimeError: CUDA error: device-side assert triggered ' + '9' * 10_000_000)\n"
        "print(result.recognised)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"  # the line's head still carries its message


def test_a_dump_line_is_cut_in_the_middle_and_says_so():
    from labelguard.explain._extract import LONG_LINE, normalise

    line = "tensor([" + "1, " * 100_000 + "])"
    cut = normalise(line)
    assert len(cut) < LONG_LINE + 100 and cut.startswith("tensor([1, 1,") and cut.endswith("1, ])")
    assert f"{len(line) - LONG_LINE:,} characters cut" in cut
    assert normalise("x" * LONG_LINE) == "x" * LONG_LINE
