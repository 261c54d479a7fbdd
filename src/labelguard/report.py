"""The audit report: summary, findings, and the versioned JSON schema.

JSON schema, version 1::

    {
      "version": 1,
      "tool": {"name": "labelguard", "version": "0.1.0"},
      "summary": {
        "paths": [...], "layouts": [...],
        "spec": {...} | null, "spec_sources": [...], "spec_origins": {"<part>": str},
        "specs": null | [{"path": str, "spec": {...} | null, "spec_origins": {...}}],
        "samples": int, "sampled": null | {"size": int, "of": int, "seed": int},
        "findings": {"error": int, "warning": int, "info": int},
        "codes": {"LG201": int, ...},
        "values": {"<value>": {"files": int, "pixels": int, "in_spec": bool | null}},
        "values_capped": null | {"kept": int, "other_pixels": int},
        "outside_spec": {"<value>": {"files": int, "pixels": int}},
        "classes": {"<name>": {"objects": int, "images": int}},
        "empty_masks": int, "unreadable": int,
        "suggested_remap": {"<from>": to} | null,
        "suggested_color_map": {"r,g,b": index} | null,
        "notes": [str], "errors": [str],
        "audited_nothing": null | str, "files": [str],
        "from_cache": int,
        "configs": [{"path": str, "trusted": bool, "applied": [str], "refused": [str], "not_read"?: str}]
      },
      "datasets": [{
        "root": str, "layout": str,
        "spec": {...} | null, "spec_sources": [...], "spec_origins": {"<part>": str},
        "samples": int, "counts": {"error": int, "warning": int, "info": int}, "codes": {"LG201": int, ...},
        "values": {...}, "values_capped": ..., "outside_spec": {...}, "classes": {...},
        "empty_masks": int, "unreadable": int,
        "suggested_remap": {"<from>": to} | null, "suggested_color_map": {"r,g,b": index} | null,
        "findings": [int],
        "inventory": null | {
          "root": str, "taken": bool, "why_not": null | str,
          "labels": int, "images": int, "other_images": int, "metadata": int, "other": int,
          "not_audited": [{"kind": str, "reason": str, "count": int, "files": [str], "lg007": bool}]
        }
      }, ...],
      "findings": [{"code", "severity", "path", "message", "hint", "data", "dataset"}, ...]
    }

With ``--baseline``, ``summary.baseline`` is ``{"file": str, "known": int, "new": int,
"absent": [{"code", "path", "fingerprint", ...}]}`` and each finding has ``"baseline":
"known" | "new"`` (see :mod:`labelguard.baseline`); without one neither key is there.

``datasets`` has one entry per dataset the audit found (a PATH may hold several, each with
its own layout and spec), in the order discovery found them: its root (shown as paths are),
layout, spec and tables as an audit of that dataset alone gives them, counted from its own files
only; its dataset-level findings come from its own tables. Its ``findings`` are the places of
its findings in the report's ``findings`` list. ``summary`` holds the totals over every dataset.
Each finding's ``dataset`` is the root of the dataset it belongs to; its ``path`` is the file it
is about, null only for a finding about a dataset as a whole. A dataset's ``inventory`` says what
became of every file under its root (:mod:`labelguard.layouts.inventory`): the labels audited,
the images paired with them, other images, metadata read, other files, and each kind of file
not audited with the reason, its count and its first files (``lg007``: it could hold labels,
and an LG007 finding names it); ``taken`` is false, with ``why_not``, where the files were not
listed (object storage), and the inventory is null where none was taken.

``path`` is relative to the current directory when the file is inside it (a URL for an
object of object storage). Every string of the JSON output (paths, messages, class names,
keys) is shown as every report shows text from the data (:func:`labelguard.core.text.printable`:
``bad\\xffname.png`` for a name whose bytes are no UTF-8, ``\\x1b`` for an escape character);
:meth:`Report.to_dict` keeps the names as they are. ``files`` lists every file audited, in
the order discovery found them; :attr:`Report.files` is a :class:`FileList` that keeps them on
disk past its first 10,000, and the JSON output streams them from there. ``values`` counts
every distinct mask value exactly up to 2,048 of them; past that (an image saved as a label)
``values_capped`` says so: the 1,024 values nearest 0 and the 1,024 farthest are kept and
counted exactly, the pixels of the others are ``other_pixels``, and ``outside_spec`` lists the
kept values only. ``from_cache`` counts the files whose findings and counts came from the
result cache, unchanged since an earlier audit (:mod:`labelguard.core.cache`); the others
were read and checked. ``configs`` names each config file the audit read: ``trusted`` when
the user gave it (``--config``), false for one found at or above the data (which is data: it
may set the label spec and layout hints only); ``applied`` its settings that were taken, as
``table.key`` (``labels.num_classes``, ``audit.fail_on``, ``severity.LG201``; a flag or a
higher config may still override them), ``refused`` those it may not make or that were not
applied (a layout hint the data's layout does not take), each also a warning in ``notes``;
``not_read``, only for a config found above the data that is not this user's own, says why it
was not read at all.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import IO, Any, Iterable, Iterator

from labelguard._version import __version__
from labelguard.core.findings import Finding, Severity
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary


SCHEMA_VERSION = 1


class FileList:
    """The files an audit read (display paths), in the order discovery gave them.

    The first :attr:`IN_MEMORY` are held in memory and the rest written to a temporary file
    (deleted with the list), so that the report of an audit of millions of files costs the
    memory of one of thousands. It iterates, has a length and ``in``, and equals a list of
    the same paths; ``list(report.files)`` reads it whole."""

    IN_MEMORY = 10_000

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self._head: list[str] = []
        self._rest: Any = None  # the temporary file, one JSON string a line
        self._count = 0
        for path in paths:
            self.append(path)

    def append(self, path: str) -> None:
        if self._count < self.IN_MEMORY:
            self._head.append(path)
        else:
            if self._rest is None:
                import tempfile  # only past IN_MEMORY files

                self._rest = tempfile.TemporaryFile("w+", encoding="utf-8", prefix="labelguard-files-")
            self._rest.write(json.dumps(path) + "\n")
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[str]:
        yield from self._head
        if self._rest is not None:
            self._rest.flush()
            self._rest.seek(0)
            for line in self._rest:
                yield json.loads(line)
            self._rest.seek(0, 2)

    def __contains__(self, path: object) -> bool:
        return any(path == kept for kept in self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (FileList, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return f"FileList({self._count} files)"

    def __reduce__(self):
        return FileList, (list(self),)


@dataclass
class DatasetReport:
    """One dataset of an audit: its spec, its tables and its findings, from its own files only
    (what an audit of that dataset alone reports). A report of several datasets has one each."""

    root: str  # as paths are shown
    layout: str
    spec: LabelSpec
    summary: Summary
    # the report's findings that belong to this dataset (the same objects), in report order
    findings: list[Finding] = field(default_factory=list)
    suggested_remap: dict[int, int] | None = None
    suggested_color_map: dict[str, int] | None = None
    # what became of every file under its root (labelguard.layouts.inventory.Inventory)
    inventory: Any = None

    def counts(self) -> dict[str, int]:
        return severity_counts(self.findings)

    def code_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(f.code for f in self.findings).items()))

    def value_in_spec(self, value: int) -> bool | None:
        """Whether ``value`` is legal in this dataset; None when it has no spec."""
        return self.spec.is_legal(value) if self.spec.is_known else None

    def outside_spec(self) -> dict[int, tuple[int, int]]:
        """value -> (files, pixels) for every value found here that the spec does not allow."""
        return outside_spec(self.summary, self.value_in_spec)

    def to_dict(self, places: dict[int, int]) -> dict[str, Any]:
        """The dataset as the JSON schema's ``datasets`` entry; ``places`` maps ``id()`` of each
        finding of the report to its index in the report's list."""
        summary = tables(self.summary, self.value_in_spec)
        return {
            "root": self.root,
            "layout": self.layout,
            **spec_entry(self.spec),
            "samples": summary["samples"],
            "counts": self.counts(),
            "codes": self.code_counts(),
            **tables_entry(summary, self.outside_spec(), self.suggested_remap, self.suggested_color_map),
            "findings": [places[id(f)] for f in self.findings],
            "inventory": self.inventory.to_dict() if self.inventory is not None else None,
        }


def tables_entry(summary: dict, outside: dict[int, tuple[int, int]], remap: dict[int, int] | None,
                 color_map: dict[str, int] | None) -> dict[str, Any]:
    """The value and class tables as the JSON report writes them, for the whole report and for
    each dataset alike (``summary``: what :func:`tables` gives)."""
    return {
        "values": summary["values"],
        "values_capped": summary["values_capped"],
        "outside_spec": {str(v): {"files": f, "pixels": p} for v, (f, p) in outside.items()},
        "classes": summary["classes"],
        "empty_masks": summary["empty_masks"],
        "unreadable": summary["unreadable"],
        "suggested_remap": remap_entry(remap),
        "suggested_color_map": color_map,
    }


def severity_counts(findings: Iterable[Finding]) -> dict[str, int]:
    by = Counter(str(f.severity) for f in findings)
    return {name: by.get(name, 0) for name in ("error", "warning", "info")}


def outside_spec(summary: Summary, in_spec) -> dict[int, tuple[int, int]]:
    """value -> (files, pixels) of ``summary``'s values for which ``in_spec`` says False."""
    return {v: (summary.value_files[v], summary.value_pixels[v]) for v in summary.found_values()
            if in_spec(v) is False}


def tables(summary: Summary, in_spec) -> dict[str, Any]:
    """``summary`` as the JSON schema writes it, each value with its ``in_spec``."""
    data = summary.to_dict()
    for value, entry in data["values"].items():
        entry["in_spec"] = in_spec(int(value))
    return data


def remap_entry(remap: dict[int, int] | None) -> dict[str, int] | None:
    return {str(k): v for k, v in remap.items()} if remap else None


def spec_entry(spec: LabelSpec) -> dict[str, Any]:
    """A spec as the JSON schema writes it: its parts, where they came from."""
    return {"spec": spec.to_dict() if spec.is_known else None, "spec_sources": list(spec.sources),
            "spec_origins": dict(spec.origins)}


@dataclass
class Report:
    """What an audit found."""

    paths: list[str]
    spec: LabelSpec
    summary: Summary
    findings: list[Finding]
    layouts: list[str] = field(default_factory=list)
    sampled: dict[str, int] | None = None
    suggested_remap: dict[int, int] | None = None
    suggested_color_map: dict[str, int] | None = None
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)  # the config files' [audit] table
    # Why no label file was audited (what was looked for, where, what was there): the audit
    # verified nothing, which is never an all-clear.
    audited_nothing: str | None = None
    # the label files (or file pairs, by their label file) the audit read, as displayed (a
    # FileList: past its first 10,000 paths, kept on disk)
    files: Any = field(default_factory=FileList)
    # (path, spec) of each dataset when the datasets of one audit have different specs;
    # ``spec`` is then the first one's
    specs: list[tuple[str, LabelSpec]] = field(default_factory=list)
    # How the findings compare with a baseline (labelguard.baseline.match_baseline), if given.
    baseline: Any = None
    # The tasks of the files that have findings, by display path: how to read them again
    # (the HTML report draws their pixels). Never the tasks of every file.
    flagged_tasks: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # The read limits the audit applied, for reading flagged files again under the same bounds.
    read_limits: Any = field(default=None, repr=False, compare=False)
    # The roots the audit was given (labelguard.core.paths.Roots), which a link read again
    # for a picture must not leave either.
    read_roots: Any = field(default=None, repr=False, compare=False)
    # how many of ``files`` had their result taken from the result cache
    from_cache: int = 0
    # what each config file read decided (labelguard.config.ConfigUse)
    configs: list[Any] = field(default_factory=list)
    # each dataset on its own (DatasetReport), in the order discovery found them; the fields
    # above are the totals over all of them
    datasets: list[DatasetReport] = field(default_factory=list)

    def dataset_specs(self) -> list[tuple[str, LabelSpec]]:
        """(path, spec) per dataset when they differ, else one ("", spec)."""
        return self.specs or [("", self.spec)]

    def counts(self) -> dict[str, int]:
        return severity_counts(self.findings)

    def code_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(f.code for f in self.findings).items()))

    def exit_code(self, fail_on: str = "error") -> int:
        """0: nothing at or above ``fail_on``; 1: findings; 2: labelguard itself failed or
        audited no file."""
        if self.errors or self.audited_nothing:
            return 2
        if fail_on == "never":
            return 0
        threshold = Severity.parse(fail_on)
        known = self.baseline.is_known if self.baseline is not None else (lambda finding: False)
        return 1 if any(f.severity >= threshold and not known(f) for f in self.findings) else 0

    def value_in_spec(self, value: int) -> bool | None:
        """Whether ``value`` is legal where it was found; None when that cannot be told from
        the merged counts (no spec, or datasets with different specs that disagree on it)."""
        if self.specs:  # datasets with different specs: legal in all of them, or named by LG201
            if value in self._values_named_outside:
                return False
            if all(spec.is_known and spec.is_legal(value) for _, spec in self.specs):
                return True
            return None
        if not self.spec.is_known:
            return None
        return self.spec.is_legal(value)

    @cached_property
    def _values_named_outside(self) -> frozenset:
        """The values the LG201 findings name, gathered once (the value table asks for each of
        up to 2,048 values; a report's findings are set when it is made)."""
        return frozenset(v for f in self.findings if f.code == "LG201" for v in f.data.get("values", ()))

    def outside_spec(self) -> dict[int, tuple[int, int]]:
        """value -> (files, pixels) for every found value the spec does not allow."""
        return outside_spec(self.summary, self.value_in_spec)

    def write(self, format: str = "text", to: "str | os.PathLike | IO[str] | None" = None,
              **options: Any) -> str | None:
        """Render the report as ``labelguard audit --output-format FORMAT`` does (text, concise,
        json, sarif, junit, github, html, baseline; ``labelguard formats`` lists them) to ``to``:
        a path (the file is written, replacing one there), a text stream, or None to return the
        text. ``options`` are the format's own (``fail_on="warning"``, ``thumbnails=...``; text
        and concise: ``color=True``, ``quiet=True``, text: ``width=100``); an unknown format is
        a UsageError."""
        import io

        from labelguard.output import get_formatter, write_report

        get_formatter(format).check_available()
        if to is None:
            buffer = io.StringIO()
            write_report(self, format, buffer, **options)
            return buffer.getvalue()
        if isinstance(to, (str, os.PathLike)):
            with open(to, "w", encoding="utf-8") as handle:
                write_report(self, format, handle, **options)
            return None
        write_report(self, format, to, **options)
        return None

    def to_dict(self, files: bool = True) -> dict[str, Any]:
        """The report as the JSON schema above; without ``files``, ``summary.files`` is left
        for the caller to write (the JSON output streams it)."""
        summary = tables(self.summary, self.value_in_spec)
        places = {id(f): index for index, f in enumerate(self.findings)}
        return {
            "version": SCHEMA_VERSION,
            "tool": {"name": "labelguard", "version": __version__},
            "summary": {
                "paths": self.paths,
                "layouts": self.layouts,
                **spec_entry(self.spec),
                "specs": [{"path": path, "spec": spec.to_dict() if spec.is_known else None,
                           "spec_origins": dict(spec.origins)} for path, spec in self.specs] or None,
                "samples": summary["samples"],
                "sampled": self.sampled,
                "findings": self.counts(),
                "codes": self.code_counts(),
                **tables_entry(summary, self.outside_spec(), self.suggested_remap, self.suggested_color_map),
                "notes": self.notes,
                "errors": self.errors,
                "audited_nothing": self.audited_nothing,
                "files": list(self.files) if files else None,
                **self._baseline_summary(),
                "from_cache": self.from_cache,
                "configs": [use.to_dict() for use in self.configs],
            },
            "datasets": [dataset.to_dict(places) for dataset in self.datasets],
            "findings": [self._finding_dict(f) for f in self.findings],
        }

    def _baseline_summary(self) -> dict[str, Any]:
        if self.baseline is None:
            return {}
        known = len(self.baseline.known)
        return {"baseline": {"file": self.baseline.source, "known": known, "new": len(self.findings) - known,
                             "absent": self.baseline.absent}}

    def _finding_dict(self, finding: Finding) -> dict[str, Any]:
        data = finding.to_dict()
        if self.baseline is not None:
            data["baseline"] = "known" if self.baseline.is_known(finding) else "new"
        return data
