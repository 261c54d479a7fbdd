"""What the whole log shows besides the error: the evidence that ranks the causes.

The error line says what failed; the lines before it often say why. A training log prints
its losses: a loss that grew by orders of magnitude before it became NaN points at a
diverging run, a loss that was NaN from its first value at the data or the setup, a run of
finite losses before a BCE assert away from a head without a sigmoid (that fails at the
first step), and a loss that stayed within one order of magnitude (before its NaN, or up to
the error when no loss was non-finite) away from divergence, towards one bad batch. An fp16
loss scaler that cut its scale during training shows gradients overflowing. A path in a
FileNotFoundError that ends with a space is a list line nobody stripped. Lines labelguard
printed itself (LG504/LG507 frozen parameters, LG508 divergence, LG509 a bad input) are
evidence of what it checked.

Each piece of evidence has a key the knowledge base's causes name (``supported_by``,
``weakened_by``) and a sentence, with the line it was read from, that the explanation
shows. The reading is one pass over the lines; only lines that contain "loss", a path
message or a labelguard code are parsed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from labelguard.core.text import cut, plural

# Keys of evidence, named by the causes of the knowledge base.
# The first non-finite loss: a printed value (nan, inf) or a message the log prints about one.
LOSS_NONFINITE = "loss-nonfinite"
# A loss grew by GROWTH or more between two printed values.
LOSS_GREW = "loss-grew"
# A loss was non-finite from its first printed value.
LOSS_NAN_FROM_START = "loss-nan-from-start"
# A loss printed STEADY_VALUES or more finite values within STABLE_RANGE of each other, then
# became non-finite.
LOSS_STEADY = "loss-steady"
# As LOSS_STEADY, but no loss became non-finite: the values stayed in range up to the error.
LOSS_STABLE = "loss-stable"
# An fp16 loss scaler (apex, DeepSpeed, fairseq) cut its scale after a printed loss value.
LOSS_SCALE_REDUCED = "loss-scale-reduced"
# A box term of a detection loss was printed: the run trains an object detector.
DETECTION_LOSSES = "detection-losses"
# A loss printed two or more finite values: training ran before the error.
TRAINED = "trained"
# labelguard printed LG504 or LG507 (frozen parameters), LG508 (divergence), LG509 (a bad input).
FROZEN_REPORTED = "frozen-reported"
DIVERGENCE_REPORTED = "divergence-reported"
BAD_INPUT_REPORTED = "bad-input-reported"
# -9223372036854775808 (NaN cast to int64), or labelguard's LG204 (a NaN label).
CAST_NAN = "cast-nan"
# A path in a missing or unreadable file's message has whitespace at an edge.
PATH_WHITESPACE = "path-whitespace"
MISSING_FILE = "missing-file"
UNREADABLE_FILE = "unreadable-file"

KEYS = (
    LOSS_NONFINITE, LOSS_GREW, LOSS_NAN_FROM_START, LOSS_STEADY, LOSS_STABLE, LOSS_SCALE_REDUCED, TRAINED,
    DETECTION_LOSSES, FROZEN_REPORTED,
    DIVERGENCE_REPORTED, BAD_INPUT_REPORTED, CAST_NAN, PATH_WHITESPACE, MISSING_FILE, UNREADABLE_FILE,
)

# A loss that grew by this factor between two printed values has diverged.
GROWTH = 100.0
# Finite values a loss must print (before its NaN, or up to the error) for "steady" to mean anything.
STEADY_VALUES = 3
# A loss is steady when its printed values stay within this factor of each other (a loss
# wandering from 0.04 to 3.9 is neither grown by GROWTH nor steady).
STABLE_RANGE = 10.0

# "loss: 0.31", "[G loss: nan]", "train_loss=1.2e3", "'loss': nan", "Loss = tensor(nan", and
# without a separator as Keras and many loops print it, "- loss 0.3987 -", "Loss is nan"; the
# word before "loss" names the series ("G", "train"), read from the text before the match.
# Without a separator the number must stand alone: not a count ("loss 1/50", "loss 2 of 5",
# "loss 10%") nor followed by a word that is not the next printed key ("losses 12 skipped"
# against "loss 0.41 lr 0.001").
_LOSS = re.compile(
    r"(?i)loss(?:es)?\b['\"\]]?"
    r"(?:[ \t]{0,3}[:=][ \t]{0,3}|(?P<bare>[ \t]{1,3}(?:(?:is|became|becomes)[ \t]{1,3})?))"
    r"(?:tensor\()?['\"]?(?P<value>[-+]?(?:nan|inf(?:inity)?|(?:\d{1,30}\.?\d{0,30}|\.\d{1,30})"
    r"(?:e[-+]?\d{1,4})?))(?![\w.])"
    r"(?(bare)(?![ \t]{0,3}(?:of\b|[/%]))"
    r"(?![ \t]{1,3}[a-z_][\w@]{0,30}(?![\w@])(?![ \t]{0,3}[:=]?[ \t]{0,3}[-+(]?[\d.])))"
)
# A non-finite loss in the forms the knowledge base's "loss-nonfinite" entry recognises: a
# printed value ("loss: nan", "Loss is nan."), or a message without one ("Loss became infinite
# or NaN at iteration=5230", "NaN loss encountered").
NONFINITE_LOSS_MESSAGES = (
    r"(?i)\bloss(?:es)?\b['\"\]]?(?:[ \t]{0,3}[:=][ \t]{0,3}|[ \t]{1,3})(?:tensor\()?['\"]?[-+]?(?:nan|inf)\b",
    r"(?i)\bloss (?:is|became|becomes) (?:infinite or )?(?:nan|inf)",
    r"(?i)\b(?:nan|non-finite) loss\b",
)
_NONFINITE_LOSS = tuple(re.compile(pattern) for pattern in NONFINITE_LOSS_MESSAGES)
# An fp16 loss scaler cutting its scale after an overflow: apex ("Gradient overflow.  Skipping
# step, loss scaler 0 reducing loss scale to 32768.0"), DeepSpeed ("Attempted loss scale: 65536,
# reducing to 32768"), fairseq ("setting loss scale to: 64.0", "Minimum loss scale reached").
_SCALE_REDUCED = re.compile(
    r"(?i)\breducing loss scale to (?P<apex>[\d.e+]{1,20})|\bAttempted loss scale: [\d.e+]{1,20}, reducing to "
    r"(?P<deepspeed>[\d.e+]{1,20})|gradient overflow detected.{0,40}setting loss scale to: (?P<fairseq>[\d.e+-]{1,20})"
    r"|\bMinimum loss scale reached \((?P<minimum>[\d.e+-]{1,20})\)"
)
# The box terms of detection losses (torchvision, mmdetection, DETR, YOLO): the run trains a detector.
_BOX_LOSS = re.compile(r"\b(?:loss_(?:box_reg|rpn_box_reg|bbox|giou|objectness)|box_loss|giou_loss)\b")
_LOSS_NAME = re.compile(r"(?i)(?:^|[^a-z0-9])(?P<name>[a-z][a-z0-9]{0,15})[ _]$")
_LOAD_WORDS = (" load", " Load", " open", " Open", " read", " Read")
_NO_SUCH_FILE = re.compile(
    r"No such file or directory:?[ \t]{0,3}(?P<quote>['\"])(?P<path>[^'\"\n]{1,1000})(?P=quote)"
)
_UNABLE_TO_LOAD = re.compile(
    r"(?i)\b(?:unable to|failed to|cannot|can't|could not) (?:load|open|read)\b(?P<what>[^:\n]{0,80}):"
    r"[ \t]?(?P<path>[^\n]{1,1000})"
)
_CODE = re.compile(r"\b(?P<code>LG50[4789]|LG204)\b")
_CAST_NAN = re.compile(r"(?<![\d.])-9223372036854775808\b")
# Whitespace a path keeps from its list line (a real blank, or the escape repr() prints): at
# its start, its end, or before the extension a loader appended ("case0005 .npz").
_BLANK = r"(?:\s|\\[rnt])"
_EDGE_WHITESPACE = (
    (re.compile(rf"^{_BLANK}"), "starts with whitespace"),
    (re.compile(rf"{_BLANK}$"), "ends with whitespace"),
    (re.compile(rf"{_BLANK}\.\w{{1,6}}$"), "has whitespace before its extension"),
)


@dataclass(frozen=True)
class Evidence:
    """One thing the log shows that speaks for or against a cause.

    Attributes:
        key: what kind of evidence (one of :data:`KEYS`).
        text: the evidence in one sentence, with the values and the line it was read from.
        line: the log line (1-based) it was read from.
    """

    key: str
    text: str
    line: int

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "text": self.text, "line": self.line}


@dataclass
class _Series:
    """The values one named loss printed, up to its first non-finite one."""

    name: str
    finite: list[tuple[int, float]]
    nonfinite: tuple[int, str] | None = None


def gather(text: str) -> tuple[Evidence, ...]:
    """The evidence of an already normalised log, in the order of :data:`KEYS`."""
    series: dict[str, _Series] = {}
    found: dict[str, Evidence] = {}
    missing: set[str] = set()
    mentioned: tuple[int, str] | None = None
    reductions: list[tuple[int, str]] = []
    for number, line in enumerate(text.split("\n"), 1):
        if "oss" in line or "OSS" in line:
            _read_losses(line, number, series)
            if mentioned is None and (said := _nonfinite_message(line)):
                mentioned = (number, said)
            if (scale := _SCALE_REDUCED.search(line)) and any(s.finite for s in series.values()):
                reductions.append((number, next(value for value in scale.groups() if value)))
            if DETECTION_LOSSES not in found and (hit := _BOX_LOSS.search(line)):
                found[DETECTION_LOSSES] = Evidence(
                    DETECTION_LOSSES, f"line {number} prints a box loss ({hit.group(0)}): the run trains "
                    "an object detector, whose box targets come from the annotations", number)
        if "No such file" in line:
            hit = _NO_SUCH_FILE.search(line)
            if hit:
                missing.add(hit.group("path"))
                _path_evidence(found, hit.group("path"), number, MISSING_FILE,
                               f"line {number}: {hit.group('path')!r} was not found")
        if any(word in line for word in _LOAD_WORDS):
            hit = _UNABLE_TO_LOAD.search(line)
            if hit:
                _path_evidence(found, hit.group("path"), number, UNREADABLE_FILE,
                               f"line {number}: could not load{hit.group('what').rstrip()} "
                               f"{hit.group('path')!r}")
        if "LG" in line:
            _code_evidence(found, line, number)
        if "9223372036854775808" in line and CAST_NAN not in found and _CAST_NAN.search(line):
            found[CAST_NAN] = Evidence(
                CAST_NAN, f"line {number} shows -9223372036854775808, what NaN becomes when cast "
                "to a 64-bit integer (a label or index that held NaN before .long())", number)
    if len(missing) > 1:
        last = found[MISSING_FILE]
        found[MISSING_FILE] = Evidence(MISSING_FILE, f"{last.text} (and {plural(len(missing) - 1, 'other path')})",
                                       last.line)
    if mentioned is not None:
        _add_mentioned(series, *mentioned)
    if reductions:
        (first_cut, _), (last_cut, lowest) = reductions[0], reductions[-1]
        found[LOSS_SCALE_REDUCED] = Evidence(
            LOSS_SCALE_REDUCED, f"line {first_cut}: the fp16 loss scaler cut its scale after a gradient overflow "
            f"during training ({plural(len(reductions), 'time')}, to {lowest} by line {last_cut}): fp16 overflowed",
            first_cut)
    for item in _loss_evidence(series):
        found.setdefault(item.key, item)
    return tuple(found[key] for key in KEYS if key in found)


def _read_losses(line: str, number: int, series: dict[str, _Series]) -> None:
    for hit in _LOSS.finditer(line):
        before = _LOSS_NAME.search(line, max(0, hit.start() - 18), hit.start())
        name = f"{before.group('name')} loss" if before else "loss"
        value = float(hit.group("value"))
        entry = series.setdefault(name.lower(), _Series(name, []))
        if entry.nonfinite is not None:
            continue
        if math.isfinite(value):
            entry.finite.append((number, value))
        else:
            entry.nonfinite = (number, hit.group("value"))


def _nonfinite_message(line: str) -> str | None:
    """The words of a line that report a non-finite loss, in any form of :data:`NONFINITE_LOSS_MESSAGES`."""
    hit = next((found for pattern in _NONFINITE_LOSS if (found := pattern.search(line))), None)
    return hit.group(0) if hit else None


def _add_mentioned(series: dict[str, _Series], line: int, said: str) -> None:
    """A non-finite loss reported without a value the series read ("Loss became infinite or
    NaN", "nan loss", "Loss is NaN."): it ends the series that printed most before it, so
    that series is not taken as finite to the error. With no value printed before it,
    nothing says where it stood (from the start or not), and no series is made up."""
    if any(s.nonfinite is not None and s.nonfinite[0] <= line for s in series.values()):
        return
    before = [(sum(1 for number, _ in s.finite if number < line), s) for s in series.values()]
    count, main = max(before, key=lambda item: item[0], default=(0, None))
    if main is None or count == 0:
        return
    main.finite = [(number, value) for number, value in main.finite if number < line]
    main.nonfinite = (line, repr(said))


def _loss_evidence(series: dict[str, _Series]) -> list[Evidence]:
    """NaN from the start, growth before the NaN (the series that grew most), a steady run
    (before the NaN, or up to the error when no loss was non-finite), and a run of finite
    values (training ran before the error)."""
    evidence: list[Evidence] = []
    nonfinite = sorted((s for s in series.values() if s.nonfinite), key=lambda s: _nonfinite(s)[0])
    if nonfinite:
        first = nonfinite[0]
        line, raw = _nonfinite(first)
        after = f"after {plural(len(first.finite), 'finite value')}" if first.finite else "its first printed value"
        evidence.append(Evidence(
            LOSS_NONFINITE, f"line {line}: {first.name}: {raw}, the first non-finite loss, {after}", line))
        from_start = next((s for s in nonfinite if not s.finite), None)
        if from_start is not None:
            line, raw = _nonfinite(from_start)
            evidence.append(Evidence(
                LOSS_NAN_FROM_START, f"line {line}: {from_start.name} was {raw} from its first "
                "printed value: the first steps already failed", line))
    grown = [(growth, s) for s in series.values() if (growth := _growth(s.finite)) is not None]
    if grown:
        (ratio, (low_line, low), (high_line, high)), grew = max(grown, key=lambda item: item[0][0])
        evidence.append(Evidence(
            LOSS_GREW, f"{grew.name} grew from {low:g} (line {low_line}) to {high:g} (line {high_line}), "
            f"{ratio:,.0f}x" + (" before it became non-finite" if grew.nonfinite else ""), high_line))
    trained = max(series.values(), key=lambda s: len(s.finite), default=None)
    if not grown and (steady := _steady(nonfinite[0] if nonfinite else trained)) is not None:
        evidence.append(steady)
    if trained is not None and len(trained.finite) >= 2:
        evidence.append(Evidence(
            TRAINED, f"{trained.name} printed {plural(len(trained.finite), 'finite value')} "
            f"(lines {trained.finite[0][0]}-{trained.finite[-1][0]}): training ran before the error",
            trained.finite[0][0]))
    return evidence


def _steady(series: _Series | None) -> Evidence | None:
    """LOSS_STEADY for a series that became non-finite, LOSS_STABLE for one that did not, when
    it printed :data:`STEADY_VALUES` finite values or more within :data:`STABLE_RANGE` of each other."""
    values = [abs(v) for _, v in series.finite] if series is not None else []
    if series is None or len(values) < STEADY_VALUES or not 0 < min(values) or max(values) > STABLE_RANGE * min(values):
        return None
    low, high = min(values), max(values)
    lines = f"lines {series.finite[0][0]}-{series.finite[-1][0]}"
    if series.nonfinite is not None:
        return Evidence(
            LOSS_STEADY, f"{series.name} stayed between {low:g} and {high:g} over "
            f"{plural(len(values), 'printed value')} ({lines}) before it became non-finite: no growth "
            "the log shows (values printed between them are not in the log)", series.nonfinite[0])
    return Evidence(
        LOSS_STABLE, f"{series.name} stayed finite between {low:g} and {high:g} over "
        f"{plural(len(values), 'printed value')} ({lines}) and no non-finite loss was printed: training "
        "ran steadily until one step failed", series.finite[-1][0])


def _nonfinite(series: _Series) -> tuple[int, str]:
    """The first non-finite value of a series picked for having one."""
    # Not a user mistake: only series whose non-finite value is set reach here.
    assert series.nonfinite is not None
    return series.nonfinite


def _growth(values: list[tuple[int, float]]) -> tuple[float, tuple[int, float], tuple[int, float]] | None:
    """(factor, lowest point, later peak) of the largest growth by :data:`GROWTH` or more."""
    best = None
    low: tuple[int, float] | None = None
    for line, value in values:
        magnitude = abs(value)
        if magnitude > 0 and (low is None or magnitude < low[1]):
            low = (line, magnitude)
        elif low is not None and magnitude / low[1] >= GROWTH and (best is None or magnitude / low[1] > best[0]):
            best = (magnitude / low[1], low, (line, magnitude))
    return best


def _path_evidence(found: dict[str, Evidence], path: str, number: int, key: str, text: str) -> None:
    """The last such line names the path (the error message comes after the code that
    raised it in a traceback); any of them can show whitespace."""
    found[key] = Evidence(key, text, number)
    if PATH_WHITESPACE in found:
        return
    for pattern, what in _EDGE_WHITESPACE:
        if pattern.search(path):
            found[PATH_WHITESPACE] = Evidence(
                PATH_WHITESPACE, f"line {number}: the path {path!r} {what}, which a file list's line "
                "keeps when its reader does not strip it", number)
            return


_CODE_KEYS = {"LG504": FROZEN_REPORTED, "LG507": FROZEN_REPORTED, "LG508": DIVERGENCE_REPORTED,
              "LG509": BAD_INPUT_REPORTED, "LG204": CAST_NAN}


def _code_evidence(found: dict[str, Evidence], line: str, number: int) -> None:
    for hit in _CODE.finditer(line):
        key = _CODE_KEYS[hit.group("code")]
        if key not in found:
            shown = cut(" ".join(line.split()), 160)
            found[key] = Evidence(key, f"line {number}: labelguard reported {hit.group('code')}: {shown}", number)
