"""``labelguard.audit()``: discover -> per-file work -> merge -> dataset checks -> report."""

from __future__ import annotations

import logging
import os
import random
from dataclasses import replace
from typing import Callable, Iterable, Sequence

from labelguard import layouts
from labelguard.checks.dataset import DATASET_CHECKS, suggested_remap
from labelguard.config import find_project_config, load_config
from labelguard.core.engine import run_tasks
from labelguard.core.findings import Finding, Severity
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.tasks import FileTask
from labelguard.layouts.base import LAYOUTS, AuditOptions, discover_datasets, display_path
from labelguard.layouts.pairing import describe_contents
from labelguard.layouts.masks import color_proposal
from labelguard.report import Report

log = logging.getLogger(__name__)


def load_settings(data_path: str, config_file: str | None, use_project_config: bool) -> list:
    """The config files that apply to ``data_path``, lowest priority first, parsed."""
    paths = []
    if use_project_config:
        project = find_project_config(data_path)
        if project:
            paths.append(project)
    if config_file:
        paths.append(config_file)
    return [load_config(path) for path in paths]


def resolve_spec(discovered: Iterable[LabelSpec], configs: list, cli: LabelSpec | None = None) -> LabelSpec:
    """The effective spec, layered: dataset metadata < project config < --config < CLI."""
    spec = LabelSpec()
    for found in discovered:
        spec = spec.merged(found)
    for config in configs:
        spec = spec.merged(config.spec)
    if cli is not None:
        spec = spec.merged(cli)
    return spec


def audit(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    spec: LabelSpec | None = None,
    *,
    options: AuditOptions | None = None,
    config_file: str | None = None,
    use_project_config: bool = True,
    workers: int | None | str = 1,
    sample: int | None = None,
    seed: int = 0,
    severity: dict[str, Severity] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    """Audit the datasets at ``paths`` against ``spec`` and return a :class:`Report`.

    Args:
        paths: dataset folders or files.
        spec: the label spec; it overrides what the dataset and config files declare.
        options: layout options (forced format, --images/--masks, lists, npz key, colour map).
        config_file: a config file above the project config in priority.
        use_project_config: look for labelguard.toml / pyproject.toml above the data.
        workers: processes for the per-file work (None: all cores; "config": the config's
            [audit] workers, else all cores).
        sample: audit a seeded random subset of this many files.
        seed: the sampling seed.
        severity: code -> severity overrides (above the config's).
        progress: called with (done, total) as files finish.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(p) for p in paths]
    configs = load_settings(paths[0], config_file, use_project_config)
    notes_head: list[str] = []
    settings: dict = {}
    overrides: dict[str, Severity] = {}
    for config in configs:
        settings.update(config.audit)
        overrides.update(config.severity)
    overrides.update(severity or {})
    options = _with_settings(options or AuditOptions(), settings)
    if workers == "config":
        workers = settings.get("workers")
    if sample is None and settings.get("sample"):
        sample = int(settings["sample"])
    discoveries: list[layouts.Discovery] = []
    layout_names: list[str] = []
    for path in paths:
        found = discover_datasets(path, options)
        discoveries.extend(found)
        if len(found) > 1:
            base = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
            named = [f"{d.layout} in {os.path.relpath(d.root, base)}" for d in found]
            layout_names.extend(named)
            notes_head.append(f"{display_path(path)} holds {len(found)} datasets, each audited with its own "
                              "layout: " + ", ".join(named))
        else:
            layout_names.extend(d.layout for d in found)
    effective = resolve_spec((d.spec for d in discoveries), configs, spec)
    # Each dataset is checked against its own declared spec (under the config and CLI
    # layers): one dataset's class list must not judge another's files.
    spec_of: dict[int, LabelSpec] = {}
    group_specs: dict[LabelSpec, LabelSpec] = {}
    for d in discoveries:
        group_specs.setdefault(d.spec, resolve_spec([d.spec], configs, spec))
        for task in d.tasks:
            spec_of[id(task)] = d.spec
    if len(group_specs) == 1:
        effective = next(iter(group_specs.values()))
    tasks: list[FileTask] = [t for d in discoveries for t in d.tasks]
    sampled = None
    if sample is not None and 0 < sample < len(tasks):
        chosen = sorted(random.Random(seed).sample(range(len(tasks)), sample))
        sampled = {"size": sample, "of": len(tasks), "seed": seed}
        tasks = [tasks[i] for i in chosen]
    findings: list[Finding] = [f for d in discoveries for f in d.findings]
    summary = Summary()
    errors: list[str] = []
    done = 0
    for declared, checked in group_specs.items():
        group = [t for t in tasks if spec_of[id(t)] == declared] if len(group_specs) > 1 else tasks
        group_summary = Summary()
        for result in run_tasks(group, checked, workers):
            findings.extend(result.findings)
            group_summary.update(result.summary)
            errors.extend(result.errors)
            done += result.files
            if progress:
                progress(done, len(tasks))
        for check in DATASET_CHECKS:
            try:
                findings.extend(check(group_summary, checked))
            except Exception as exc:  # one crashing check must not lose the others
                log.debug("dataset check %s failed", check.__name__, exc_info=True)
                errors.append(f"dataset check {check.__name__} crashed: {type(exc).__name__}: {exc}")
        summary.update(group_summary)
    if len(group_specs) > 1:
        notes_head.append("the datasets declare different label specs; each was checked against its own: "
                          + "; ".join(f"{checked.describe()} from {', '.join(checked.sources) or 'no file'}"
                                      for checked in group_specs.values()))
    if overrides:
        findings = [f.with_severity(overrides[f.code]) if f.code in overrides else f for f in findings]
    findings.sort(key=Finding.sort_key)
    notes = notes_head + [n for d in discoveries for n in d.notes]
    nothing = None if tasks else nothing_audited(paths, discoveries)
    if nothing:
        notes.append(nothing)
    return Report(
        paths=[display_path(p) for p in paths],
        spec=effective,
        summary=summary,
        findings=findings,
        layouts=layout_names,
        sampled=sampled,
        suggested_remap=suggested_remap(summary, effective),
        suggested_color_map=color_proposal(summary.colors) if summary.colors else None,
        notes=notes,
        errors=errors,
        settings=settings,
        audited_nothing=nothing,
    )


def nothing_audited(paths: list[str], discoveries: list[layouts.Discovery]) -> str:
    """Why an audit that found no file to audit audited nothing: what it looked for, where,
    and what it found there instead."""
    looked = "; ".join(dict.fromkeys(
        f"{LAYOUTS[d.layout].description} ({d.layout} layout)" if d.layout in LAYOUTS else d.layout
        for d in discoveries))
    where = ", ".join(f"{display_path(p)} ({describe_contents(p)})" for p in paths)
    return (f"nothing was audited: no label file (mask, annotation, table or class folder) was found. "
            f"Looked for {looked} under {where}. Pass --format, --masks DIR or --list FILE if the labels "
            "are there under other names")


def _with_settings(options: AuditOptions, settings: dict) -> AuditOptions:
    """Options the caller left unset take the config's [audit] values."""
    changes = {}
    for key in ("format", "key", "color_map"):
        if getattr(options, key) is None and settings.get(key):
            changes[key] = settings[key]
    return replace(options, **changes) if changes else options
