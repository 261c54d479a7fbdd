"""What every fix shares: parsed maps, per-file outcomes and the run result."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from labelguard.fix._journal import FixError
from labelguard.errors import CannotFix
from labelguard.readers.base import ReadError, parse_json

PLANNED = "planned"  # dry run: would be written
WRITTEN = "written"
UNCHANGED = "unchanged"
SKIPPED = "skipped"  # cannot be fixed this way (format, unmapped colour...): reported, not written
REFUSED = "refused"  # unsafe to write (a link, a hard link...), or the re-audit or re-read says no


class Refusal(CannotFix):
    """Rewriting this file could change something outside it or lose something (an HDF5 link to
    another file); the message says why and the file is reported as refused."""


@dataclass
class FileChange:
    """One file's outcome.

    Attributes:
        path: the file fixed (the input).
        status: planned, written, unchanged, skipped or refused.
        summary: one line: what changes (values/classes before -> after, counts) or why not.
        target: where the fixed file goes (the input, or its place under ``out``).
        details: machine-readable facts (per-value pixel counts, removed lines...).
    """

    path: str
    status: str
    summary: str
    target: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class FixResult:
    """What a fix did (``applied``) or would do (a dry run)."""

    action: str
    applied: bool
    changes: list[FileChange] = field(default_factory=list)
    run_id: str | None = None
    journal: str | None = None
    notes: list[str] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for c in self.changes if c.status == status)

    def close_run(self, run) -> None:
        """Close the journaled ``run`` (None when nothing was started) and name it here when it wrote."""
        if run is None:
            return
        run.close()
        if run.written:
            self.run_id, self.journal = run.id, run.journal_path

    @property
    def ok(self) -> bool:
        """False when some file was refused (the fix would have made it worse)."""
        return not any(c.status == REFUSED for c in self.changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action, "applied": self.applied, "run": self.run_id, "journal": self.journal,
            "notes": self.notes,
            "changes": [{"path": c.path, "status": c.status, "summary": c.summary, "target": c.target,
                         "details": c.details} for c in self.changes],
        }


def parse_value_map(text: str | dict) -> dict[int, int]:
    """``"255:1,3:2"`` (or ``{255: 1}`` / ``{"255": 1}``) -> ``{255: 1, 3: 2}``.

    Raises:
        FixError: a part is not ``int:int`` or a source value is given twice.
    """
    if isinstance(text, dict):
        try:
            return {int(k): int(v) for k, v in text.items()}
        except (TypeError, ValueError):
            raise FixError(f"a value map needs integer keys and values, got {text!r}") from None
    mapping: dict[int, int] = {}
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        source, sep, target = part.partition(":")
        if not sep:
            source, sep, target = part.partition("=")
        try:
            key, value = int(source), int(target)
        except ValueError:
            raise FixError(f"{part!r} in the map is not FROM:TO with integers (e.g. 255:1)") from None
        if key in mapping and mapping[key] != value:
            raise FixError(f"value {key} is mapped twice ({mapping[key]} and {value})")
        mapping[key] = value
    if not mapping:
        raise FixError("the map is empty; give FROM:TO pairs such as 255:1,3:2")
    return mapping


def parse_name_map(text: str | dict) -> dict[str, str]:
    """``"Dog=dog, dgo=dog"`` -> ``{"Dog": "dog", "dgo": "dog"}``.

    Unquoted names are stripped (names keep inner spaces); a name in single or double quotes is
    taken exactly, so ``"'dog '=dog"`` renames the label ``dog `` (trailing space) to ``dog``,
    and a quoted name may hold ``,`` and ``=``. A dict is taken as it is.

    Raises:
        FixError: a part is not OLD=NEW, a quote is not closed, or a name is mapped twice.
    """
    if isinstance(text, dict):
        return {str(k): str(v) for k, v in text.items()}
    mapping: dict[str, str] = {}
    for part, sides in _name_pairs(str(text)):
        if len(sides) != 2 or not sides[0] or not sides[1].strip():
            raise FixError(f"{part!r} in the map is not OLD=NEW (e.g. Dog=dog; quote a name with "
                           "surrounding spaces: 'dog '=dog)")
        source, target = sides
        if source in mapping and mapping[source] != target:
            raise FixError(f"{source!r} is mapped twice ({mapping[source]!r} and {target!r})")
        mapping[source] = target
    if not mapping:
        raise FixError("the map is empty; give OLD=NEW pairs such as Dog=dog")
    return mapping


def _name_pairs(text: str) -> list[tuple[str, list[str]]]:
    """(the part as written, its sides) for each comma-separated part of a name map."""
    pairs: list[tuple[str, list[str]]] = []
    sides: list[str] = []
    buffer: list[str] = []
    quoted: str | None = None  # the text of a closed quote on this side
    start = position = 0

    def side() -> None:
        nonlocal quoted
        rest = "".join(buffer)
        if quoted is not None and rest.strip():
            raise FixError(f"{text[start:position]!r} in the map has text after a quoted name")
        sides.append(quoted if quoted is not None else rest.strip())
        buffer.clear()
        quoted = None

    while position < len(text):
        char = text[position]
        if char in "'\"" and quoted is None and not "".join(buffer).strip():
            end = text.find(char, position + 1)
            if end < 0:
                raise FixError(f"the quote opened at {text[position:position + 20]!r} in the map is not closed")
            quoted, position = text[position + 1:end], end + 1
            buffer.clear()
            continue
        if char == "=" and not sides:
            side()
        elif char == ",":
            side()
            if "".join(sides).strip() or len(sides) > 1:
                pairs.append((text[start:position], sides))
            sides, start = [], position + 1
        else:
            buffer.append(char)
        position += 1
    side()
    if "".join(sides).strip() or len(sides) > 1:
        pairs.append((text[start:], sides))
    return pairs


def read_json_file(path: str, what: str) -> Any:
    """The JSON document in ``path`` (``what`` it should be, for the message); FixError when
    it cannot be read or is not JSON."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise FixError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise FixError(f"{path} is not JSON: {exc}") from None
    try:
        return parse_json(text)
    except ReadError as exc:
        raise FixError(f"{path} is not the {what}: {exc}") from None


def load_report(path: str) -> dict[str, Any]:
    """A saved audit report (JSON schema v1); FixError when it is not one."""
    data = read_json_file(path, "report")
    if not isinstance(data, dict) or data.get("version") != 1 or "summary" not in data:
        raise FixError(f"{path} is not a labelguard JSON report (schema version 1); "
                       "write one with `labelguard audit DATA -f json -o report.json`")
    return data


def report_paths(report: dict[str, Any]) -> list[str]:
    """The audited paths of a report, checked to exist."""
    paths = list(report["summary"].get("paths") or [])
    missing = [p for p in paths if not os.path.exists(p)]
    if missing or not paths:
        raise FixError("the report's paths " + ", ".join(missing or ["(none)"]) + " do not exist here; "
                       "run from the folder the audit ran in, or name the paths")
    return paths
