"""``labelguard.audit()``: discover -> per-file work -> merge -> dataset checks -> report."""

from __future__ import annotations

import logging
import os
import random
from typing import Callable, Iterable, Sequence

from labelguard import layouts
from labelguard.checks.dataset import DATASET_CHECKS, suggested_remap
from labelguard.config import find_project_config, load_config
from labelguard.core.engine import run_tasks
from labelguard.core.findings import Finding, Severity
from labelguard.core.spec import LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.tasks import FileTask
from labelguard.layouts.base import AuditOptions, display_path
from labelguard.layouts.masks import color_proposal
from labelguard.report import Report

log = logging.getLogger(__name__)


def resolve_spec(
    discovered: Iterable[LabelSpec],
    data_path: str,
    config_file: str | None = None,
    cli: LabelSpec | None = None,
    use_project_config: bool = True,
) -> tuple[LabelSpec, dict]:
    """The effective spec, layered: dataset metadata < project config < --config < CLI.

    Returns the spec and the [audit]/[severity] settings of the config files used.
    """
    spec = LabelSpec()
    for found in discovered:
        spec = spec.merged(found)
    settings: dict = {"audit": {}, "severity": {}}
    config_paths = []
    if use_project_config:
        project = find_project_config(data_path)
        if project:
            config_paths.append(project)
    if config_file:
        config_paths.append(config_file)
    for path in config_paths:
        config = load_config(path)
        spec = spec.merged(config.spec)
        settings["audit"].update(config.audit)
        settings["severity"].update(config.severity)
    if cli is not None:
        spec = spec.merged(cli)
    return spec, settings


def audit(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    spec: LabelSpec | None = None,
    *,
    options: AuditOptions | None = None,
    config_file: str | None = None,
    use_project_config: bool = True,
    workers: int | None = 1,
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
        workers: processes for the per-file work (None: all cores).
        sample: audit a seeded random subset of this many files.
        seed: the sampling seed.
        severity: code -> severity overrides (above the config's).
        progress: called with (done, total) as files finish.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(p) for p in paths]
    options = options or AuditOptions()
    discoveries = [layouts.discover(path, options) for path in paths]
    effective, settings = resolve_spec(
        (d.spec for d in discoveries), paths[0], config_file, spec, use_project_config)
    overrides = {**settings["severity"], **(severity or {})}
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
    for result in run_tasks(tasks, effective, workers):
        findings.extend(result.findings)
        summary.update(result.summary)
        errors.extend(result.errors)
        done += 1
        if progress:
            progress(done, len(tasks))
    for check in DATASET_CHECKS:
        try:
            findings.extend(check(summary, effective))
        except Exception as exc:  # one crashing check must not lose the others
            log.debug("dataset check %s failed", check.__name__, exc_info=True)
            errors.append(f"dataset check {check.__name__} crashed: {type(exc).__name__}: {exc}")
    if overrides:
        findings = [f.with_severity(overrides[f.code]) if f.code in overrides else f for f in findings]
    findings.sort(key=Finding.sort_key)
    notes = [n for d in discoveries for n in d.notes]
    if not tasks and not any(f.code == "LG001" for f in findings):
        notes.append("no mask or annotation files were found under " + ", ".join(display_path(p) for p in paths))
    return Report(
        paths=[display_path(p) for p in paths],
        spec=effective,
        summary=summary,
        findings=findings,
        layouts=[d.layout for d in discoveries],
        sampled=sampled,
        suggested_remap=suggested_remap(summary, effective),
        suggested_color_map=color_proposal(summary.colors) if summary.colors else None,
        notes=notes,
        errors=errors,
    )
