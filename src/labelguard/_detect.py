"""``labelguard detect``: what the audit would take each PATH for, and why.

For each PATH: every layout's evidence (the confidence and the reasons for and against), then
the datasets discovery finds there, each with its layout, root and files by role. It reads no
label's values: it answers "why wasn't this read as VOC?" before an audit is run."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable

from labelguard._audit import config_uses, discover_hinted, layout_hint, refuse_hint, with_settings
from labelguard.config import ConfigFinder
from labelguard.core import storage
from labelguard.core.limits import ReadLimits, applied_limits
from labelguard.core.paths import applied_roots, display_path, granted_roots
from labelguard.core.text import plural, printable, shorten
from labelguard.layouts.base import AuditOptions, Candidate, Discovery, candidates
from labelguard.layouts.inventory import Claims, Inventory, inventories_of, root_key


@dataclass
class DatasetFound:
    """One dataset as discovery found it: its files by role, and what discovery said."""

    root: str
    layout: str
    labels: int
    images: int
    examples: list[str] = field(default_factory=list)  # the first label files
    notes: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # discovery's own findings, as "CODE path: message"
    inventory: Inventory | None = None
    errors: list[str] = field(default_factory=list)  # internal errors: a layout's code crashed

    def to_dict(self) -> dict:
        return {"root": self.root, "layout": self.layout, "labels": self.labels, "images": self.images,
                "examples": self.examples, "notes": self.notes, "findings": self.findings, "errors": self.errors,
                "inventory": self.inventory.to_dict() if self.inventory is not None else None}


@dataclass
class Detection:
    """What one PATH was taken for."""

    path: str
    candidates: list[Candidate]
    datasets: list[DatasetFound]
    outside: Inventory | None = None  # the files under the PATH that lie in none of its datasets
    configs: list[str] = field(default_factory=list)  # each config read, what it set and was refused

    def to_dict(self) -> dict:
        return {
            "configs": self.configs,
            "outside_datasets": self.outside.to_dict() if self.outside is not None else None,
            "path": self.path,
            "candidates": [{"layout": c.layout.name, "confidence": c.evidence.confidence,
                            "reasons": list(c.evidence.reasons), "against": list(c.evidence.against)}
                           for c in self.candidates],
            "datasets": [d.to_dict() for d in self.datasets],
        }


# Label files named per dataset in the listing; the counts are always whole.
EXAMPLES = 5


def detect(paths: Iterable[str], options: AuditOptions | None = None, config_file: str | None = None,
           use_project_config: bool = True) -> list[Detection]:
    """The evidence of every layout for each of ``paths`` and the datasets discovery finds
    there, under the same read limits and granted roots as an audit, and with its configs: a
    config's [audit] format, key and colour map apply as in an audit (one found with the data
    hints at a format, which applies only where that layout's detection takes the data)."""
    paths = [storage.local_path(os.fspath(p)) for p in paths]
    options = options or AuditOptions()
    configs = ConfigFinder(config_file, use_project_config).configs(paths[0]) if paths else []
    settings: dict = {}
    for config in configs:
        settings.update(config.audit)
    hint = layout_hint(configs, options)
    options = with_settings(options, settings, hint)
    found = []
    unhinted: list = []
    with applied_limits(ReadLimits()), applied_roots(granted_roots(paths)):
        for path in paths:
            seen = candidates(path, options, every=True) if storage.isdir(path) or storage.isfile(path) else []
            discoveries = discover_hinted(path, options, hint, unhinted)
            claims = Claims()
            datasets = [_dataset(d, claims) for d in discoveries]
            counts = {d.root: found.labels for d, found in zip(discoveries, datasets)}
            taken = inventories_of(path, discoveries, claims, counts, bool(options.lists))
            for discovery, dataset in zip(discoveries, datasets):
                dataset.inventory = taken.get(root_key(discovery.root))
            found.append(Detection(display_path(path), seen, datasets, taken.get(None)))
    if hint is not None and unhinted:
        refuse_hint(hint, unhinted, applied_elsewhere=len(unhinted) < len(paths))
    uses = config_uses(configs)
    for detection in found:
        detection.configs = [use.describe() for use in uses]
    return found


def _dataset(discovery: Discovery, claims: Claims) -> DatasetFound:
    tasks = list(discovery.tasks)
    for task in tasks:
        claims.add_task(task)
    claims.add_read(discovery, discovery.spec.sources)
    return DatasetFound(
        root=display_path(discovery.root), layout=discovery.layout, labels=len(tasks),
        images=sum(1 for task in tasks if task.image), examples=[task.display for task in tasks[:EXAMPLES]],
        notes=list(discovery.notes),
        findings=[f"{f.code} {f.path or '-'}: {f.message}" for f in discovery.findings],
        errors=list(discovery.errors))


def render_text(detections: list[Detection]) -> str:
    """The text ``labelguard detect`` prints."""
    lines: list[str] = []
    for detection in detections:
        lines.append(f"{printable(detection.path)}:")
        lines.extend(f"  config: {printable(config)}" for config in detection.configs)
        lines.append("  layouts, by the evidence seen:")
        unseen = []
        for candidate in detection.candidates:
            evidence = candidate.evidence
            if evidence:
                reasons = printable("; ".join(evidence.reasons))
                lines.append(f"    {candidate.layout.name:<17} {evidence.confidence:.2f}  {reasons}")
                if evidence.against:
                    lines.append(f"    {'':<17}       against: {printable('; '.join(evidence.against))}")
            elif evidence.against:
                lines.append(f"    {candidate.layout.name:<17} no    {printable('; '.join(evidence.against))}")
            else:
                unseen.append(candidate.layout.name)
        if unseen:
            lines.append(f"    nothing seen of: {', '.join(unseen)}")
        lines.append(f"  datasets found: {len(detection.datasets)}")
        for dataset in detection.datasets:
            lines.append(f"    {printable(dataset.root)}: {dataset.layout}, {plural(dataset.labels, 'label file')}, "
                         f"{dataset.images:,} paired with an image")
            for example in dataset.examples:
                lines.append(f"      {printable(example)}")
            if dataset.labels > len(dataset.examples):
                lines.append(f"      ... {dataset.labels - len(dataset.examples)} more")
            lines.extend(f"      note: {printable(note)}" for note in dataset.notes)
            lines.extend(f"      {printable(finding)}" for finding in dataset.findings)
            lines.extend(f"      internal error: {printable(error)}" for error in dataset.errors)
            if dataset.inventory is not None:
                _inventory_lines(dataset.inventory, "      ", lines)
        if detection.outside is not None and detection.outside.unaudited:
            lines.append("  files in no dataset found:")
            _unaudited_lines(detection.outside, "    ", lines)
    return "\n".join(lines) + "\n"


def _inventory_lines(inventory: Inventory, indent: str, lines: list[str]) -> None:
    lines.append(f"{indent}{printable(inventory.coverage(done=False))}")
    _unaudited_lines(inventory, indent, lines)


def _unaudited_lines(inventory: Inventory, indent: str, lines: list[str]) -> None:
    for group in inventory.unaudited.values():
        code = " (LG007)" if group.label else ""
        lines.append(f"{indent}not audited{code}: {printable(plural(group.count, group.kind))}, "
                     f"{printable(group.reason)}: "
                     f"{printable(shorten(group.files, len(group.files), total=group.count))}")
