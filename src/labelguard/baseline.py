"""Baselines: accept the findings a dataset is known to have, fail on new ones.

A team that gates new data in CI commits a baseline next to its ``labelguard.toml``:
``labelguard baseline write DATA`` writes the findings the data has today, and
``labelguard audit DATA --baseline labelguard-baseline.json`` reports those as known and
fails only on findings the baseline does not hold.

A finding is matched by its identity ``(code, path, fingerprint)``:

* ``path`` is the file's path relative to the audited dataset folder it lies in, with ``/``
  separators, so that an audit run from the repository root and one run from inside the
  dataset name the same file the same way; a dataset-level finding has none. It is the path
  as every report shows it (:func:`labelguard.core.text.printable`: control characters and
  the bytes of a non-UTF-8 name escaped, ``bad\\xffname.png``), so that a baseline or a JSON
  report holds valid text for any name and still matches it;
* ``fingerprint`` is the SHA-256 (first 32 hex digits) of the code, that path and the
  finding's identifying data (:data:`IDENTITY_KEYS`: the values, ids, classes or colours it
  is about and the lines, rows, places or entries where it is; its texts as shown, like the
  path). Never the message text, the
  hint, pixel or object counts, shares or shapes: rewording a message or a few more pixels of
  a known bad value leave a finding known; a new bad value, class or line makes it new.
  A finding about a whole dataset that lies below the audited folder (one of several datasets
  under it) has its dataset's root, relative to that folder, hashed in as well: the same class
  missing from two datasets is two findings, and fixing it in one leaves the other known and
  the fixed one absent. A dataset-level finding of the audited folder itself hashes as before.

A baseline of version 1 (written before findings carried their dataset), and a JSON report
whose findings have no ``dataset`` key, are matched without the datasets: what they hold stays
known. ``labelguard baseline write`` writes version 2.

Matching counts: a baseline that holds an identity twice accepts two such findings. A JSON
report (``--output-format json``) serves as a baseline as well: its findings' identities are
computed from their code, path and data the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, overload

from labelguard._version import __version__
from labelguard.core.paths import inside_root
from labelguard.core.text import printable, printable_data
from labelguard.errors import UsageError

BASELINE_VERSION = 2
# Baselines of this version hash no dataset into the fingerprints (see the module docstring).
UNSCOPED_VERSION = 1
BASELINE_KIND = "labelguard-baseline"
DEFAULT_BASELINE = "labelguard-baseline.json"

# The data keys that say which problem a finding is about (what and where); every other key
# (counts, pixels, shares, shapes, suggestions, descriptive texts) may change without making
# the finding another one.
IDENTITY_KEYS = (
    "values", "ids", "class", "classes", "colors", "dtype", "declared", "side", "problem", "unit",
    "line", "lines", "rows", "places", "entry", "entries", "key", "image_key", "label_key", "boxes",
    "looks_like_image", "image_ids",
)

Identity = tuple[str, str | None, str]


@overload
def relative_path(path: str, roots: Sequence[str]) -> str: ...
@overload
def relative_path(path: None, roots: Sequence[str]) -> None: ...


def relative_path(path: str | None, roots: Sequence[str]) -> str | None:
    """``path`` relative to the deepest of ``roots`` (audited folders, or files whose folder
    counts) that holds it, with ``/`` separators; the path itself, normalised, when none does."""
    if path is None:
        return None
    target = os.path.abspath(path)
    best: str | None = None
    for root in roots:
        folder = os.path.abspath(root)
        if os.path.isfile(folder) or (not os.path.isdir(folder) and os.path.splitext(folder)[1]):
            folder = os.path.dirname(folder)
        if not inside_root(target, folder):
            continue
        relative = os.path.relpath(target, folder)
        if best is None or len(relative) < len(best):
            best = relative
    return (best if best is not None else os.path.normpath(path)).replace(os.sep, "/")


def _identity_data(data: Mapping[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key in IDENTITY_KEYS:
        if key not in data:
            continue
        value = data[key]
        if key == "colors" and isinstance(value, Mapping):
            value = sorted(str(colour) for colour in value)
        elif key == "boxes" and isinstance(value, list):
            # Which objects, of which class, with which problem; not their coordinates.
            value = [{k: v for k, v in box.items() if k != "box"} if isinstance(box, Mapping) else box
                     for box in value]
        kept[key] = value
    return printable_data(kept)


def fingerprint(code: str, path: str | None, data: Mapping[str, Any], dataset: str | None = None) -> str:
    """The stable fingerprint of a finding: its code, its dataset-relative path, its identifying
    data and, for a finding about a dataset below the audited folder, that dataset (see the
    module docstring), hashed."""
    identified: dict[str, Any] = {"code": code, "path": path, "data": _identity_data(data)}
    if dataset is not None:
        identified["dataset"] = dataset
    text = json.dumps(identified, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def identity(code: str, path: str | None, data: Mapping[str, Any], roots: Sequence[str],
             dataset: str | None = None) -> Identity:
    """A finding's identity; ``dataset`` (its dataset's root, as shown) counts for a finding
    about a whole dataset only, and only where that dataset is not an audited folder itself."""
    relative = relative_path(path, roots)
    relative = None if relative is None else printable(relative)
    below = None
    if relative is None and dataset is not None:
        below = relative_path(dataset, roots)
        below = None if below == "." else printable(below)
    return code, relative, fingerprint(code, relative, data, below)


def report_identities(report, datasets: bool = True) -> list[Identity]:
    """The identity of each of ``report``'s findings, in order; without ``datasets``, as
    baselines of version 1 name them."""
    return [identity(f.code, f.path, f.data, report.paths, f.dataset if datasets else None)
            for f in report.findings]


@dataclass
class Baseline:
    """The findings a dataset is known to have, read from a file.

    Attributes:
        source: the file, as given.
        entries: each known finding as a mapping with ``code``, ``path``, ``fingerprint``
            (and, for a person reading the file, ``severity`` and ``message``).
        unscoped: its fingerprints hash no dataset (a version 1 baseline, or a JSON report
            whose findings name none): findings are matched by such fingerprints.
    """

    source: str
    entries: list[dict[str, Any]] = field(default_factory=list)
    unscoped: bool = False

    def identities(self) -> Counter:
        return Counter((e["code"], e["path"], e["fingerprint"]) for e in self.entries)


@dataclass
class BaselineMatch:
    """How an audit's findings compare with a baseline.

    Attributes:
        source: the baseline file.
        known: ``id()`` of each finding of the report that the baseline holds.
        absent: the baseline's entries that no finding matched (fixed since, or reworded
            into another finding).
    """

    source: str
    known: set[int] = field(default_factory=set)
    absent: list[dict[str, Any]] = field(default_factory=list)

    def is_known(self, finding) -> bool:
        return id(finding) in self.known


def baseline_document(report) -> dict[str, Any]:
    """The baseline file of ``report``: every finding's identity, with its severity and
    message for the person who reviews the file."""
    entries = [{"code": code, "path": path, "fingerprint": digest, "severity": str(f.severity),
                "message": printable(f.message)}
               for f, (code, path, digest) in zip(report.findings, report_identities(report))]
    entries.sort(key=lambda e: (e["path"] or "", e["code"], e["fingerprint"]))
    return {
        "version": BASELINE_VERSION,
        "kind": BASELINE_KIND,
        "tool": {"name": "labelguard", "version": __version__},
        "identity": "code + path relative to the dataset folder + fingerprint of the finding's identifying data "
                    "and, for a finding about a whole dataset below the audited folder, that dataset (never its "
                    "message text)",
        "findings": entries,
    }


def read_baseline(path: str) -> Baseline:
    """A baseline file (written by ``labelguard baseline write``) or a JSON report; UsageError
    naming the file when it is neither."""
    from labelguard.readers.base import ReadError, parse_json, read_text

    try:
        document = parse_json(read_text(path), path)
    except ReadError as exc:
        raise UsageError(f"--baseline {path}: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("findings"), list):
        raise UsageError(f"--baseline {path}: not a labelguard baseline or JSON report (no 'findings' list)")
    if document.get("kind") == BASELINE_KIND:
        return Baseline(path, [_entry(item, path) for item in document["findings"]],
                        unscoped=document.get("version") == UNSCOPED_VERSION)
    roots = (document.get("summary") or {}).get("paths") or []
    entries = []
    unscoped = True
    for item in document["findings"]:
        if not isinstance(item, dict) or not isinstance(item.get("code"), str):
            raise UsageError(f"--baseline {path}: a finding without a code: {str(item)[:80]}")
        dataset = item.get("dataset")
        unscoped = unscoped and "dataset" not in item
        code, relative, digest = identity(item["code"], item.get("path"), item.get("data") or {}, roots,
                                          dataset if isinstance(dataset, str) else None)
        entries.append({"code": code, "path": relative, "fingerprint": digest,
                        "severity": item.get("severity"), "message": item.get("message")})
    return Baseline(path, entries, unscoped=unscoped)


def _entry(item: Any, path: str) -> dict[str, Any]:
    if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("code", "fingerprint")) \
            or not isinstance(item.get("path"), (str, type(None))):
        raise UsageError(f"--baseline {path}: an entry needs a code, a path (or null) and a fingerprint: "
                         f"{str(item)[:80]}")
    return dict(item)


def match_baseline(report, baseline: Baseline) -> BaselineMatch:
    """Mark the findings of ``report`` that ``baseline`` holds as known (``report.baseline``)
    and return the match; the report's exit code then counts only the new findings."""
    remaining = baseline.identities()
    match = BaselineMatch(baseline.source)
    for finding, found in zip(report.findings, report_identities(report, datasets=not baseline.unscoped)):
        if remaining[found] > 0:
            remaining[found] -= 1
            match.known.add(id(finding))
    for entry in baseline.entries:
        key = (entry["code"], entry["path"], entry["fingerprint"])
        if remaining[key] > 0:
            remaining[key] -= 1
            match.absent.append(entry)
    report.baseline = match
    return match
