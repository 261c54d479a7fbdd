"""``labelguard.audit()``: discover -> per-file work -> merge -> dataset checks -> report."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from labelguard import layouts
from labelguard.core import storage
from labelguard.core.rules import run_rules
from labelguard.rules._dataset import suggested_remap
from labelguard.rules._instances import recognition_notes
from labelguard.rules._unread import LINK_HINT
from labelguard.config import NOT_DETECTED, Config, ConfigFinder, Refusal
from labelguard.core.cache import DEFAULT_MAX_BYTES, CacheSettings, default_cache_dir, open_cache
from labelguard.core.engine import LocalEngine, default_workers
from labelguard.core.findings import Finding, Severity
from labelguard.core.limits import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_PIXELS, ReadLimits, applied_limits
from labelguard.core.paths import applied_roots, display_path, granted_roots
from labelguard.core.spec import NO_SPEC, LabelSpec
from labelguard.core.summary import Summary
from labelguard.core.tasks import FileTask
from labelguard.core.text import clipped, plural, shorten, verb
from labelguard.core.workdir import applied_working_folder, working_folder
from labelguard.errors import OptionError, SpecError, UsageError
from labelguard.layouts.base import (
    CATCH_ALL, IMAGES, LAYOUTS, LISTS, TABLES, AuditOptions, candidates, detection_crashes, discover_datasets,
    layouts_with,
)
from labelguard.layouts.inventory import Claims, inventories_of, inventory_facts, root_key
from labelguard.layouts.folders import describe_contents
from labelguard.readers.colormap import color_proposal
from labelguard.report import DatasetReport, FileList, Report

log = logging.getLogger(__name__)


def resolve_spec(discovered: Iterable[LabelSpec], configs: list, cli: LabelSpec | None = None) -> LabelSpec:
    """The effective spec, layered: dataset metadata < project config < --config < CLI.
    What the user's own config (``--config``) or the flags (or the API's spec) set is
    declared; a config found with the data is the dataset's metadata, as its class files are.
    A convention of the metadata that widens a declared spec is LG210."""
    spec = LabelSpec()
    for found in discovered:
        spec = spec.merged(found)
    for config in configs:
        spec = spec.merged(config.spec.as_declared() if config.use.trusted else config.spec)
    if cli is not None:
        spec = spec.merged(cli.as_declared())
    return spec


def dataset_settings(datasets: Iterable[tuple[layouts.Discovery, str]], finder: ConfigFinder,
                     cli: LabelSpec | None = None) -> list[tuple[LabelSpec, list[Config]]]:
    """Each dataset's effective spec and the configs it came from, for each (discovery, the
    PATH it was found under): its own metadata < the config found above it < ``--config`` <
    the flags. Each dataset gets its own; one's spec never leaks onto another."""
    settings = []
    for discovery, audited in datasets:
        configs = finder.configs(discovery.root, audited)
        settings.append((resolve_spec([discovery.spec], configs, cli), configs))
    return settings


def audit(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    spec: LabelSpec | Mapping[str, Any] | None = None,
    *,
    options: AuditOptions | Mapping[str, Any] | None = None,
    config_file: str | None = None,
    use_project_config: bool = True,
    workers: int | None | str = 1,
    sample: int | None = None,
    seed: int = 0,
    severity: dict[str, Severity] | None = None,
    progress: Callable[[int, int | None], None] | None = None,
    max_pixels: int | None = None,
    max_file_bytes: int | None = None,
    cache: bool | str | os.PathLike | None = None,
    engine: str | None = None,
    scheduler: str | None = None,
    client: Any = None,
    storage_options: dict | None = None,
    check_images: str | None = None,
    **layout_options: Any,
) -> Report:
    """Audit the datasets at ``paths`` against ``spec`` and return a :class:`Report`.

    Args:
        paths: dataset folders or files.
        spec: the label spec; it overrides what the dataset and config files declare. A
            mapping is read as a ``[labels]`` table is (``{"num_classes": 3, "ignore_index":
            [255]}``); an unknown key or a value of the wrong kind is a SpecError.
        options: layout options (forced format, --images/--masks, lists, npz key, colour map):
            an :class:`AuditOptions`, or a mapping of its fields (``{"format": "voc"}``); an
            unknown field is a UsageError.
        **layout_options: the same fields as keywords (``audit(path, format="voc", key="label")``),
            over those of ``options``; an unknown one is a UsageError.
        config_file: the caller's config file, above the project config in priority: all of
            its settings apply.
        use_project_config: look for labelguard.toml / pyproject.toml at or above the data.
            The config found there is data: it sets the label spec ([labels],
            [tokens]) and layout hints ([audit] format, key, color_map) only, its format
            only where that layout's detection takes the data; its other settings are not
            applied, and the report's notes name each of them. One above a PATH that is not
            this user's own (or root's), or that others may write, is not read at all.
        workers: processes for the per-file work (None: all cores; "config": the config's
            [audit] workers, else all cores).
        sample: audit a seeded random subset of this many files.
        seed: the sampling seed.
        severity: code -> severity overrides (above the config's).
        progress: called with (done, total) as files finish; ``total`` is None while
            discovery is still walking the dataset (the first files are audited meanwhile).
        max_pixels: the most elements one array a file declares may have (default: the
            config's [audit] max_pixels, else 2**31); a file over it is LG001.
        max_file_bytes: the most bytes one file may be read or decoded into (default: the
            config's [audit] max_file_bytes, else 4 GiB); a file over it is LG001.
        cache: where per-file results are cached by content (:mod:`labelguard.core.cache`):
            a folder, True for the config's [audit] cache_dir or the user's cache folder,
            False for no cache; None (the default) as the config says ([audit] cache,
            cache_dir), else the user's cache folder. On a cluster it must be a folder every
            worker sees at the same path (a shared file system). A folder of another user's,
            or one others may write into, is not used (a note says why).
        engine: where the per-file work runs: "local" (this machine: in-process or a pool of
            ``workers`` processes) or "dask" (a Dask cluster: ``client``'s, else the one at
            ``scheduler``, else a LocalCluster of ``workers`` processes); None for the
            config's [audit] engine, else "dask" when a ``client`` is given, else "local".
            Needs the dask extra.
        scheduler: the address of a Dask scheduler (``tcp://host:8786``) for engine "dask";
            None for the config's [audit] scheduler.
        client: a ``dask.distributed.Client`` connected to the cluster to use (the caller
            keeps it open; ``workers`` is then not used).
        storage_options: fsspec storage options (``{"endpoint_url": ...}``, credentials)
            for the paths that are URLs of object storage (``s3://bucket/prefix``, ``gs://``):
            any of ``paths``, ``options.images``, ``options.masks``, ``options.lists`` may
            be one. Without them, the backend's own configuration applies (for S3: the
            ``AWS_*`` environment variables, ``~/.aws``). A ``file://`` URL is a local path.
        check_images: how the images and volumes the datasets reference are checked to be
            whole (LG008): "structure" (what each container says of its own extent, no pixel
            decoded), "full" (a complete decode) or "off"; None for ``options.check_images``
            when it was set, else the config's [audit] check_images, else "structure". A
            config found with the data never sets it (it decides how strict the verdict is).

    Raises:
        OptionError: an option the dataset found cannot use (a table column on a mask
            folder, a file list for a layout that reads none).
        MissingDependency: engine "dask" without the dask extra, or URLs of object storage
            without fsspec's backend for them. A file that needs an extra that is not installed
            (nibabel for NIfTI, h5py for HDF5, pyarrow for Arrow and Parquet) is an LG001
            finding naming the extra; the other files are audited.
        ClusterError: the Dask cluster cannot be reached, has no worker, or its workers
            cannot import this labelguard.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    # The paths as text from here on (a local path, or a URL of object storage).
    named = [storage.local_path(os.fspath(p)) for p in paths]
    spec = _spec_argument(spec)
    options = _local_paths(_options_argument(options, layout_options))
    # What object storage this audit may read: the buckets of the URLs it was given, and no
    # other (a URL spelled by the data is a path that does not exist).
    access = storage.access_for([*named, *_option_paths(options)], storage_options)
    if access is not None:
        storage.grant(access)
    # What a link in the data may lead to: what was named here (labelguard.core.paths).
    roots = granted_roots([*named, *_option_paths(options)])
    finder = ConfigFinder(config_file, use_project_config)
    configs = finder.configs(named[0])
    settings: dict = {}
    overrides: dict[str, Severity] = {}
    for config in configs:
        settings.update(config.audit)
        overrides.update(config.severity)
    overrides.update(severity or {})
    hint = layout_hint(configs, options)
    options = with_settings(options, settings, hint)
    mode, mode_origin = _check_mode(check_images, options, settings, configs)
    options = replace(options, check_images=mode)
    choice = engine_choice(engine, scheduler, client, settings)
    if choice.name == "dask":
        # The workers may run on other machines, from other folders: they get absolute paths.
        named = [absolute_path(p) for p in named]
        options = _absolute_options(options)
    limits = ReadLimits(
        max_pixels=_limit("max_pixels", max_pixels, settings, DEFAULT_MAX_PIXELS),
        max_file_bytes=_limit("max_file_bytes", max_file_bytes, settings, DEFAULT_MAX_FILE_BYTES))
    # The working folder is looked up once for the audit, not once per display path.
    with applied_limits(limits), applied_working_folder(working_folder()), applied_roots(roots), \
            detection_crashes() as crashed:
        report = _audit_paths(named, spec, options, settings, configs, overrides, workers=workers, sample=sample,
                              seed=seed, progress=progress, finder=finder, hint=hint,
                              cache=cache_settings(cache, settings), engine=choice, access=access)
    # Detection outside a discovery (a hinted layout's check, a sub-folder met while walking)
    # that crashed: the datasets found carry the rest.
    report.errors.extend(crashed)
    report.read_limits = limits
    report.read_roots = roots
    if mode == "off":
        report.notes.append("images were not checked to be whole (LG008: truncated or undecodable images), as "
                            f"check_images is off: {mode_origin}")
    return report


def _option_paths(options: AuditOptions) -> list[str]:
    """The paths the options name: --images, --masks, --list, --color-map."""
    return [p for p in (options.images, options.masks, *options.lists, options.color_map) if p]


def _with_option_paths(options: AuditOptions, convert: Callable[[str], str]) -> AuditOptions:
    """``options`` with each path of :func:`_option_paths` passed through ``convert``."""
    def one(path: str | None) -> str | None:
        return convert(path) if path else path

    return replace(options, images=one(options.images), masks=one(options.masks), color_map=one(options.color_map),
                   lists=tuple(convert(p) for p in options.lists))


def _local_paths(options: AuditOptions) -> AuditOptions:
    """``options`` with its ``file://`` URLs as the local paths they name."""
    return _with_option_paths(options, storage.local_path)


def _note_unsampled_backgrounds(discovery: layouts.Discovery, tasks: list[FileTask], kept: list[FileTask]) -> None:
    """Say how many images without a label file (YOLO backgrounds, checked with the label
    files they are shared out to) rode on label files the sample left out: not checked."""
    left = sum(len(task.option("backgrounds", ())) for task in tasks) - \
        sum(len(task.option("backgrounds", ())) for task in kept)
    if left:
        discovery.notes.append(
            f"{plural(left, 'image')} without a label file (background images) {verb(left, 'was')} not checked to "
            "be whole (LG008): each is checked with a label file, and --sample left those label files out")


def _check_mode(given: str | None, options: AuditOptions, settings: dict, configs: list) -> tuple[str, str]:
    """How images are checked, and what said so: the argument, else the options' when not
    the default, else the config's [audit] check_images, else the default."""
    from labelguard.readers.integrity import CHECK_MODES, DEFAULT_CHECK_MODE

    mode = given if given is not None else options.check_images
    origin = (f"--check-images {mode} (check_images={mode!r} in the call)" if given is not None
              else f"AuditOptions(check_images={mode!r})")
    if given is None and mode == DEFAULT_CHECK_MODE and "check_images" in settings:
        mode = settings["check_images"]
        named = [config for config in configs if "check_images" in config.audit]
        origin = f"check_images = {mode!r} in [audit] of {display_path(named[-1].path) if named else 'a config'}"
    if mode not in CHECK_MODES:
        raise UsageError(f"check_images must be one of {', '.join(CHECK_MODES)}, got {mode!r}")
    return mode, origin


def _limit(name: str, given: int | None, settings: dict, default: int) -> int:
    """A read limit: the argument, else the config's [audit] value, else the default."""
    value = given if given is not None else settings.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{name} must be a whole number >= 1, got {value!r}")
    return value


def cache_settings(cache: bool | str | os.PathLike | None, settings: dict) -> CacheSettings | None:
    """The result cache an audit uses: the argument, else the config's [audit] ``cache`` and
    ``cache_dir``, else the user's cache folder; None for no cache."""
    if cache is False or (cache is None and settings.get("cache") is False):
        return None
    if isinstance(cache, (str, os.PathLike)):
        directory = os.fspath(cache)
    else:
        directory = settings.get("cache_dir") or default_cache_dir()
    return CacheSettings(os.path.abspath(directory), settings.get("cache_max_bytes", DEFAULT_MAX_BYTES))


@dataclass(frozen=True)
class EngineChoice:
    """Where an audit's per-file work runs.

    Attributes:
        name: "local" or "dask".
        scheduler: a Dask scheduler's address, for "dask" without a client.
        client: the caller's ``dask.distributed.Client``, for "dask".
        unused: why a setting of the config does not apply, for the report's notes.
    """

    name: str = "local"
    scheduler: str | None = None
    client: Any = None
    unused: str | None = None


ENGINES = ("local", "dask")


def engine_choice(engine: str | None, scheduler: str | None, client: Any, settings: dict) -> EngineChoice:
    """The engine asked for by the arguments, else by the config's [audit] ``engine`` and
    ``scheduler``; a scheduler or client given to the local engine is an error, never ignored."""
    if engine is not None and engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    if client is not None and scheduler:
        raise UsageError(f"a Dask client and a scheduler address ({scheduler}) were both given: the client is "
                         "already connected to its scheduler; give one")
    name = engine or ("dask" if client is not None else settings.get("engine", "local"))
    configured = settings.get("scheduler")
    if name == "local":
        if client is not None:
            raise UsageError("a Dask client was given with engine 'local', which runs on this machine: pass "
                             "engine='dask' to run on the client's cluster")
        if scheduler:
            raise UsageError(f"--scheduler {scheduler} is the address of a Dask cluster, and the engine is local "
                             "(it runs on this machine): add --engine dask (engine='dask')")
        if configured and engine is None:
            raise UsageError(f"[audit] scheduler = {configured!r} in the config needs engine = \"dask\" under "
                             "[audit] (or --engine dask); the engine is local")
        unused = f"[audit] scheduler {configured} of the config was not used: the engine is local" \
            if configured else None
        return EngineChoice(unused=unused)
    return EngineChoice("dask", None if client is not None else scheduler or configured, client)


def absolute_path(path: str) -> str:
    """``path`` as a worker on another machine opens it: absolute, against this process's
    working folder. A URL (``s3://...``) is left as it is."""
    return storage.abspath(path)


def _absolute_options(options: AuditOptions) -> AuditOptions:
    """The paths of ``options`` (--images, --masks, --list, --color-map), absolute."""
    return _with_option_paths(options, absolute_path)


@contextlib.contextmanager
def opened_engine(choice: EngineChoice, workers: int | None) -> Iterator[Any]:
    """The engine ``choice`` names, open for the block: one with ``run(tasks, spec, cache)``
    yielding merged results and ``describe()`` saying where the work ran (or None)."""
    if choice.name == "local":
        yield LocalEngine(workers)
        return
    from labelguard.core.dask_engine import dask_engine

    with dask_engine(choice.client, choice.scheduler, workers or default_workers()) as engine:
        yield engine


def _audit_paths(paths: list[str], spec: LabelSpec | None, options: AuditOptions, settings: dict, configs: list,
                 overrides: dict[str, Severity], *, workers, sample: int | None, seed: int,
                 progress: Callable[[int, int | None], None] | None, finder: ConfigFinder,
                 hint: Config | None, cache: CacheSettings | None, engine: EngineChoice,
                 access: storage.RemoteAccess | None = None) -> Report:
    """:func:`audit` once the settings and read limits are known."""
    if workers == "config":
        workers = settings.get("workers")
    if sample is None and settings.get("sample"):
        sample = int(settings["sample"])
    notes_head: list[str] = [engine.unused] if engine.unused else []
    if engine.name == "dask" and (engine.client is not None or engine.scheduler) and isinstance(workers, int) \
            and workers > 1:
        notes_head.append(f"{plural(workers, 'worker')} asked for were not used: the Dask cluster's own workers "
                          "ran the audit")
        workers = None
    if isinstance(workers, int) and workers > default_workers():
        # More processes than cores only add start-up time and memory.
        notes_head.append(f"{plural(workers, 'worker')} asked for, {default_workers()} used: the cores "
                          "this process may use")
        workers = default_workers()
    discoveries: list[layouts.Discovery] = []
    audited: list[str] = []  # the PATH each dataset was found under
    layout_names: list[str] = []
    named_parts: list[tuple[layouts.Discovery, str]] = []
    unhinted: list[tuple[str, list[layouts.Discovery]]] = []
    for path in paths:
        found = discover_hinted(path, options, hint, unhinted)
        discoveries.extend(found)
        audited.extend(path for _ in found)
        if len(found) > 1:
            base = path if storage.isdir(path) else os.path.dirname(storage.abspath(path))
            named = [f"{d.layout} in {storage.relpath(d.root, base)}" for d in found]
            layout_names.extend(named)
            notes_head.append(f"{display_path(path)} holds {len(found)} datasets, each audited with its own "
                              "layout: " + ", ".join(named))
            named_parts.extend(zip(found, named))
        else:
            layout_names.extend(d.layout for d in found)
    if unhinted:
        assert hint is not None  # not a user mistake: only a hint leaves a PATH unhinted
        refuse_hint(hint, unhinted, applied_elsewhere=len(unhinted) < len(paths))
    _refuse_options_that_do_not_apply(options, discoveries)
    # Each dataset is checked against its own metadata and the config above it; --config and
    # the flags apply to all of them.
    settings_of = dataset_settings(zip(discoveries, audited), finder, spec)
    specs = [own_spec for own_spec, _ in settings_of]
    # Each dataset runs on its own, one after the other: its summary, its dataset rules and
    # its findings are its own, as when it is audited alone.
    stream = _TaskStream(access, len(discoveries))
    sampled = None
    chosen: list[list[FileTask]] | None = None
    if sample is not None:
        # A sample is drawn from the whole set: the tasks are listed first.
        chosen = [list(stream.each(discovery)) for discovery in discoveries]
        total = sum(len(own_tasks) for own_tasks in chosen)
        if 0 < sample < total:
            import random  # only --sample needs it

            picked = set(random.Random(seed).sample(range(total), sample))
            sampled = {"size": sample, "of": total, "seed": seed}
            start = 0
            for index, own_tasks in enumerate(chosen):
                chosen[index] = [t for i, t in enumerate(own_tasks, start) if i in picked]
                _note_unsampled_backgrounds(discoveries[index], own_tasks, chosen[index])
                start += len(own_tasks)
        stream.files = FileList(t.display for own_tasks in chosen for t in own_tasks)
        stream.total = len(stream.files)  # the sample's, not the whole set's
        stream.keyed = any(t.path.lower().endswith(KEYED_EXTENSIONS) for own_tasks in chosen for t in own_tasks)
    findings: list[Finding] = []
    summary = Summary()
    errors: list[str] = []
    flagged: dict[str, FileTask] = {}
    done = from_cache = 0
    refused = open_cache(cache).refused(again=True) if cache is not None else None
    if cache is not None and refused:  # (only a cache is refused)
        note = f"the result cache {display_path(cache.directory)} was not used, so every file was read and checked: " \
            + refused
        log.warning(note)  # also on stderr: a report written to a file may be read late or never
        notes_head.append(note)
        cache = None
    if cache is not None:
        unwritable = open_cache(cache).writable()
        if unwritable:
            notes_head.append(f"the result cache {display_path(cache.directory)} cannot be written ({unwritable}): "
                              "results found in it were used, none were stored")
    # Each dataset's tasks as an iterator, and its first task: the engine opens (a Dask
    # cluster starts) only when there is a file to audit.
    streams = [iter(chosen[index] if chosen is not None else stream.each(discovery))
               for index, discovery in enumerate(discoveries)]
    first = [next(own_tasks, None) for own_tasks in streams]
    parts: list[tuple[Summary, list[Finding]]] = []
    with opened_engine(engine, workers) if any(t is not None for t in first) else contextlib.nullcontext(None) \
            as runner:
        for own_discovery, own_spec, head, rest in zip(discoveries, specs, first, streams):
            own_summary = Summary() if len(discoveries) > 1 else summary
            own_findings: list[Finding] = []
            if head is not None:
                assert runner is not None  # not a user mistake: an engine opens when a dataset has a task
                for batch, result in runner.run(itertools.chain([head], rest), own_spec, cache):
                    own_findings.extend(result.findings)
                    own_summary.update(result.summary)
                    errors.extend(result.errors)
                    done += result.files
                    from_cache += result.cached
                    _keep_flagged(flagged, batch, result)
                    if progress:
                        progress(done, stream.total)
            errors.extend(own_discovery.errors)  # complete: its tasks were all taken
            own_findings.extend(dataset_findings(own_summary, own_spec, errors, display_path(own_discovery.root)))
            if own_summary is not summary:
                summary.update(own_summary)
            parts.append((own_summary, own_findings))
        where = runner.describe() if runner is not None else None
    if where:
        notes_head.append(where)
    if progress and done and stream.total is None:
        progress(done, done)
    if cache is not None and done > from_cache:
        open_cache(cache).sweep()
    inventories = _inventories(paths, discoveries, audited, specs, stream, sampled is not None or bool(options.lists))
    datasets = []
    for discovery, own_spec, (own_summary, own_findings) in zip(discoveries, specs, parts):
        # Discovery's own findings, complete once its tasks were all taken.
        inventory = inventories.get(id(discovery))
        unread: list[Finding] = []
        if inventory:
            run_rules("files", inventory_facts(inventory), own_spec, display_path(discovery.root), unread, errors)
        own_findings = _unpaired_once([*own_findings, *discovery.findings, *unread])
        if overrides:
            own_findings = [f.with_severity(overrides[f.code]) if f.code in overrides else f for f in own_findings]
        root = display_path(discovery.root)
        own_findings = sorted((f.in_dataset(root) for f in own_findings), key=Finding.sort_key)
        findings.extend(own_findings)
        datasets.append(DatasetReport(
            root, discovery.layout, own_spec, own_summary, own_findings,
            suggested_remap=suggested_remap(own_summary, own_spec),
            suggested_color_map=color_proposal(own_summary.colors) if own_summary.colors else None,
            inventory=inventory))
    for path, loose in inventories[None]:
        # Files under a PATH that lie in none of its datasets: their LG007 names the PATH.
        where = display_path(path)
        unread = []
        run_rules("files", inventory_facts(loose), NO_SPEC, where, unread, errors)
        findings.extend(f.in_dataset(where) for f in unread)
    findings.sort(key=Finding.sort_key)
    for discovery, name in named_parts:
        # Each dataset's notes name it; one that gave nothing to audit is said, never
        # hidden behind the files of the others.
        discovery.notes[:] = [f"{name}: {note}" for note in discovery.notes]
        if not stream.counts.get(id(discovery)):
            discovery.notes.append(f"{name}: nothing was audited in this dataset "
                                   f"({describe_contents(discovery.root)})")
    effective = specs[0] if specs else resolve_spec([], configs, spec)
    uses = config_uses([*configs, *(config for _, found in settings_of for config in found)])
    notes = [warning for use in uses for warning in use.warnings()] + notes_head + [n for d in discoveries
                                                                                   for n in d.notes]
    notes.extend(_remark_notes(summary))
    notes.extend(recognition_notes(summary, effective))
    notes.extend(_unused_option_notes(options, stream.keyed, summary, discoveries))
    if any(s.tokens is not None for s in specs) and not summary.kinds.get("tokens"):
        notes.append("the token spec (--model-config, --tokenizer or [tokens]) was compared with itself only "
                     "(LG605): no tokenized dataset was audited")
    distinct = any(other != effective or other.origins != effective.origins for other in specs[1:])
    for discovery, own_spec in zip(discoveries, specs):
        where = f"{display_path(discovery.root)}: " if distinct else ""
        notes.extend(where + note for note in own_spec.provenance_notes() if where + note not in notes)
    nothing = None if len(stream.files) else nothing_audited(paths, discoveries, options)
    reported = {f.path for f in findings}
    return Report(
        paths=[display_path(p) for p in paths],
        spec=effective,
        summary=summary,
        findings=findings,
        layouts=layout_names,
        sampled=sampled,
        suggested_remap=suggested_remap(summary, effective) if not distinct else None,
        suggested_color_map=color_proposal(summary.colors) if summary.colors else None,
        notes=notes,
        errors=errors,
        settings=settings,
        specs=[(display_path(d.root), own_spec) for d, own_spec in zip(discoveries, specs)]
        if distinct else [],
        audited_nothing=nothing,
        files=stream.files,
        flagged_tasks={path: task for path, task in sorted(flagged.items()) if path in reported},
        from_cache=from_cache,
        configs=uses,
        datasets=datasets,
    )


def _inventories(paths: list[str], discoveries: list, audited: list[str], specs: list[LabelSpec],
                 stream: _TaskStream, chosen: bool) -> dict:
    """The inventory of each dataset (by ``id()`` of its discovery), and under None the
    (PATH, inventory) of the files of each PATH that lie in none of its datasets. ``chosen``:
    the files were chosen by a list or a sample, so the others are not listed, not LG007."""
    claims = stream.claims
    for discovery, own_spec in zip(discoveries, specs):
        claims.add_read(discovery, own_spec.sources)
    found: dict = {None: []}
    for path in dict.fromkeys(paths):
        own = [d for d, under in zip(discoveries, audited) if under == path]
        counts = {d.root: stream.counts.get(id(d), 0) for d in own}
        taken = inventories_of(path, own, claims, counts, chosen)
        for discovery in own:
            found[id(discovery)] = taken.get(root_key(discovery.root))
        if taken.get(None) is not None:
            found[None].append((path, taken[None]))
    return found


def dataset_findings(summary: Summary, spec: LabelSpec, errors: list[str], where: str = "the dataset") -> list[Finding]:
    """The dataset rules' findings on one dataset's merged ``summary``, through the one
    runner: a rule that crashes is an entry of ``errors``, and the others still run."""
    findings: list[Finding] = []
    run_rules("dataset", summary, spec, where, findings, errors)
    return findings


def config_uses(configs: list) -> list:
    """What each config file decided (:class:`labelguard.config.ConfigUse`), once per file,
    its path as the report shows paths."""
    uses: dict[str, Any] = {}
    for config in configs:
        uses.setdefault(config.path, replace(config.use, path=display_path(config.path)))
    return list(uses.values())


class _TaskStream:
    """The tasks of the datasets as discovery yields them, on their way to the engine: the
    report's list of files grows with them (on disk past a few thousand), each dataset's
    count is kept, a task that reads object storage takes the audit's access to it along
    (:mod:`labelguard.core.storage`), and ``total`` is known once the discovery of every one
    of its ``datasets`` is done."""

    def __init__(self, access: storage.RemoteAccess | None, datasets: int) -> None:
        self.access = access
        self.files = FileList()
        self.counts: dict[int, int] = {}
        self.keyed = False  # an NPZ or HDF5 file was audited (--key applies)
        self.claims = Claims()  # what the datasets read, for the inventory
        self.total: int | None = None
        self._datasets_left = datasets

    def each(self, discovery: layouts.Discovery) -> Iterator[FileTask]:
        """The tasks of one dataset, in order."""
        try:
            count = 0
            for task in discovery.tasks:
                if self.access is not None and storage.url_scheme(task.path):
                    task = replace(task, options=(*task.options, ("storage", self.access)))
                if not self.keyed and task.path.lower().endswith(KEYED_EXTENSIONS):
                    self.keyed = True
                self.claims.add_task(task)
                self.files.append(task.display)
                count += 1
                yield task
            self.counts[id(discovery)] = self.counts.get(id(discovery), 0) + count
        finally:
            self._datasets_left -= 1
        if not self._datasets_left:
            self.total = len(self.files)


def _keep_flagged(flagged: dict[str, FileTask], batch: Sequence[FileTask], result) -> None:
    """Keep the tasks of the files of ``batch`` that its result has findings about: a report
    keeps what it needs to read them again (for pictures of their pixels), never a task per
    file of the dataset."""
    if not result.findings:
        return
    named = {f.path for f in result.findings}
    for task in batch:
        if task.display in named:
            flagged.setdefault(task.display, task)


def _unpaired_once(findings: list[Finding]) -> list[Finding]:
    """One LG002 per mask without its image: a mask that discovery found unpaired among
    paired folders is also one that the spec's require_pairs names (discovery's, first, is
    kept)."""
    seen: set[str] = set()
    kept = []
    for finding in findings:
        if finding.code == "LG002" and finding.path is not None and finding.data.get("side") == "mask":
            if finding.path in seen:
                continue
            seen.add(finding.path)
        kept.append(finding)
    return kept


def nothing_audited(paths: list[str], discoveries: list[layouts.Discovery],
                    options: AuditOptions | None = None) -> str:
    """Why an audit that found no file to audit audited nothing: what it looked for, where,
    what it found there instead, and which of the options that point at labels are left to
    try (those already given are named as given, not suggested again)."""
    looked = "; ".join(dict.fromkeys(
        f"{LAYOUTS[d.layout].description} ({d.layout} layout)" if d.layout in LAYOUTS else d.layout
        for d in discoveries))
    where = ", ".join(f"{display_path(p)} ({describe_contents(p)})" for p in paths)
    options = options or AuditOptions()
    pointers = [("--format", options.format, "--format"), ("--masks", options.masks, "--masks DIR"),
                ("--list", options.lists, "--list FILE")]
    given = [flag for flag, value, _ in pointers if value]
    left = [usage for flag, value, usage in pointers if not value and _takes(options.format, flag)]
    advice = [f"{' and '.join(given)} {verb(len(given), 'was')} given"] if given else []
    if left:
        advice.append(f"Pass {' or '.join(left)} if the labels are there under other names")
    elif given != ["--format"]:
        advice.append("Check that they name the folders and files that hold the labels")
    if options.format:
        advice.append(_forced_format_advice(paths, options))
    # Labels behind a link that leads out of the data were there, and refused: say so first.
    links = sum(1 for d in discoveries for f in d.findings if f.code == "LG005" and f.hint == LINK_HINT)
    refused = (f" {plural(links, 'path')} under it led outside the audited data through a link and "
               f"{verb(links, 'was')} not read (LG005): audit a folder that holds the links' targets too."
               if links else "")
    return (f"nothing was audited: no label file (mask, annotation, table or class folder) was found. "
            f"Looked for {looked} under {where}.{refused} {'. '.join(advice)}")


def _takes(layout: str | None, flag: str) -> bool:
    """Whether the forced ``layout`` (None: detection's) reads ``flag``: ``--list`` in the
    layouts that select files through lists, ``--masks`` in the paired layout and the mask
    layout that pairs through it."""
    if layout is None:
        return True
    if flag == "--list":
        return _can(layout, LISTS)
    if flag == "--masks":
        return layout == "paired" or _can(layout, CATCH_ALL)
    return False


def _forced_format_advice(paths: list[str], options: AuditOptions) -> str:
    """What detection takes each of ``paths`` for, where ``--format`` found nothing of its
    layout there: the format that reads it, and the command that shows every layout's
    evidence."""
    unforced = replace(options, format=None)
    said = []
    for path in paths:
        found = candidates(path, unforced) if storage.exists(path) else []
        shown = display_path(path)
        if not found:
            said.append(f"No layout's detection takes {shown} itself for a dataset")
        elif found[0].layout.name == options.format:
            said.append(f"Detection takes {shown} for {options.format} too ({'; '.join(found[0].evidence.reasons)}), "
                        "and it holds no label file of it")
        else:
            best = found[0]
            said.append(f"Detection takes {shown} for {best.layout.name} ({'; '.join(best.evidence.reasons)}): "
                        f"drop --format {options.format} or give --format {best.layout.name}")
    commands = " and ".join(f"`labelguard detect {display_path(path)}`" for path in paths)
    return (f"{'. '.join(said)}. {commands} {verb(len(paths), 'shows')} every layout's evidence and the datasets "
            "found there")


def _spec_argument(spec: LabelSpec | Mapping[str, Any] | None) -> LabelSpec | None:
    """``audit``'s spec argument as a spec: a mapping is read as a [labels] table."""
    if spec is None or isinstance(spec, LabelSpec):
        return spec
    if isinstance(spec, Mapping):
        return LabelSpec.from_mapping(spec)
    raise SpecError(f"spec must be a LabelSpec or a mapping such as {{'num_classes': 3}}, not a "
                    f"{type(spec).__name__}")


def _options_argument(options: AuditOptions | Mapping[str, Any] | None,
                      keywords: Mapping[str, Any] | None = None) -> AuditOptions:
    """``audit``'s options argument as AuditOptions: a mapping names its fields; ``keywords``
    (the fields given as keyword arguments) go over it. Paths may be ``os.PathLike``."""
    if isinstance(options, AuditOptions):
        options = {f.name: getattr(options, f.name) for f in fields(AuditOptions)}
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise UsageError(f"options must be AuditOptions or a mapping of its fields, not a {type(options).__name__}")
    options = {**options, **(keywords or {})}
    known = {field.name for field in fields(AuditOptions)}
    unknown = sorted(str(key) for key in options if key not in known)
    if unknown:
        raise UsageError(f"unknown audit {'option' if len(unknown) == 1 else 'options'} {', '.join(unknown)}; "
                         f"known layout options: {', '.join(sorted(known))} (and audit()'s own arguments)")
    given = dict(options)
    for name in ("images", "masks", "color_map"):  # paths may be given as Path objects
        if isinstance(given.get(name), os.PathLike):
            given[name] = os.fspath(given[name])
    if isinstance(given.get("lists"), (str, os.PathLike)):
        given["lists"] = (given["lists"],)
    if given.get("lists") is not None:
        given["lists"] = tuple(os.fspath(path) for path in given["lists"])
    return AuditOptions(**given)


def with_settings(options: AuditOptions, settings: dict, hint: Config | None) -> AuditOptions:
    """Options the caller left unset take the config's [audit] values; a format that is only
    a ``hint`` (:func:`layout_hint`) is applied per PATH (:func:`discover_hinted`)."""
    changes = {}
    for key in ("format", "key", "color_map"):
        if getattr(options, key) is None and settings.get(key) and not (key == "format" and hint):
            changes[key] = settings[key]
    return replace(options, **changes) if changes else options


def layout_hint(configs: list[Config], options: AuditOptions) -> Config | None:
    """The config found with the data whose [audit] format the audit takes, when neither a
    flag nor a config of the user's names the format: then it is a hint, not an order."""
    setters = [config for config in configs if "format" in config.audit]
    if options.format is None and setters and not setters[-1].use.trusted:
        return setters[-1]
    return None


def discover_hinted(path: str, options: AuditOptions, hint: Config | None,
                     unhinted: list[tuple[str, list[layouts.Discovery]]]) -> list[layouts.Discovery]:
    """The datasets at ``path``. The format a config found with the data hints at is applied
    only where that layout's own detection takes ``path``: a layout hint from the data never
    makes the audit skip the labels that detection finds (masks audited as ImageFolder
    classes). The catch-all mask layout takes any folder, so as a hint it only agrees with
    what detection finds. Where detection finds another layout, ``path`` and what it found
    are added to ``unhinted``."""
    if hint is None:
        return discover_datasets(path, options, stream=True)
    name = hint.audit["format"]
    layout = LAYOUTS.get(name)
    if layout is not None and not layout.can(CATCH_ALL) and layout.detect(path, options):
        return discover_datasets(path, replace(options, format=name), stream=True)
    found = discover_datasets(path, options, stream=True)
    if any(discovery.layout != name for discovery in found):
        unhinted.append((path, found))
    return found


def refuse_hint(hint: Config, unhinted: list[tuple[str, list[layouts.Discovery]]], applied_elsewhere: bool) -> None:
    """Name, in the hinting config's use, the PATHs its format was not applied to and the
    layouts detected there instead (a warning in every report)."""
    name = hint.audit["format"]
    if name not in LAYOUTS:
        why = f"no layout is named so (known: {', '.join(sorted(LAYOUTS))})"
    elif LAYOUTS[name].can(CATCH_ALL):
        why = "the mask layout takes any folder, so as a hint it applies only where detection finds masks alone"
    else:
        why = f"the {name} layout's detection does not take it for one of its datasets"
    detected = "; ".join(f"{display_path(path)}: {', '.join(dict.fromkeys(d.layout for d in found))}"
                         for path, found in unhinted)
    where = ", ".join(display_path(path) for path, _ in unhinted)
    hint.use = hint.use.refusing(Refusal(
        "audit.format", NOT_DETECTED,
        f"audit.format = {clipped(repr(name))} was not applied to {where}: {why}; the layout detected there was "
        f"used instead ({detected}). A layout hint from the data applies only where its layout's detection takes "
        "the data, so that it never makes the audit skip labels; --format forces a layout"), applied_elsewhere)


# Containers that hold named arrays, where --key chooses one.
KEYED_EXTENSIONS = (".npz", ".h5", ".hdf5", ".hdf")


def _refuse_options_that_do_not_apply(options: AuditOptions, discoveries: list) -> None:
    """Options that would change what is audited but that the layout found cannot use: an
    error, since the audit would otherwise check other files than the ones asked for."""
    for discovery in discoveries:
        where = f"{display_path(discovery.root)} is a {discovery.layout} dataset"
        columns = [flag for flag, value in (("--path-column", options.path_column),
                                            ("--label-column", options.label_column)) if value]
        if columns and not _can(discovery.layout, TABLES):
            raise OptionError(f"{' and '.join(columns)} {verb(len(columns), 'applies')} to a CSV/TSV "
                              f"table, but {where}")
        if options.lists and not _can(discovery.layout, LISTS):
            raise OptionError(f"--list selects files of a mask, VOC or YOLO dataset, but {where}, which names its "
                              "files itself; audit the list's dataset, or drop --list")
        if options.images and not _can(discovery.layout, IMAGES):
            raise OptionError(f"--images names the image folder of a {', '.join(layouts_with(IMAGES))} dataset, "
                              f"but {where}, which finds its images itself; drop --images")
        if options.masks and discovery.layout != "paired":
            # The mask layout pairs through the paired layout; every other layout finds its labels itself.
            forced = f"--format {options.format}" if options.format else "the config's [audit] format"
            raise OptionError(f"--masks names a folder of masks to pair with their images (the paired layout, or "
                              f"--format masks), but {where} ({forced}), which finds its labels itself; drop "
                              f"--masks, or {forced}")


def _can(layout: str, capability: str) -> bool:
    return layout in LAYOUTS and LAYOUTS[layout].can(capability)


def _remark_notes(summary: Summary) -> list[str]:
    """How files were read, where the report must say so (readers' remarks), with counts."""
    notes = []
    for remark, count in sorted(summary.remarks.items()):
        examples = summary.remark_examples.get(remark, [])
        notes.append(f"{plural(count, 'file')}: {remark} ({shorten(examples, len(examples), total=count)})")
    return notes


def _names(discovery: layouts.Discovery, path: str) -> bool:
    """Whether a finding of ``discovery``'s own is about the file ``path``."""
    shown = display_path(path)
    return any(finding.path == shown for finding in discovery.findings)


def _unused_option_notes(options: AuditOptions, keyed: bool, summary: Summary,
                         discoveries: Sequence[layouts.Discovery] = ()) -> list[str]:
    """Options that apply to kinds of files the audit did not read (``keyed``: an NPZ or HDF5
    file was read), or that the layouts of ``discoveries`` do not use: said, not silently
    dropped."""
    notes = []
    if options.key and not keyed:
        notes.append(f"--key {options.key} was not used: no NPZ or HDF5 file was audited (it picks an array "
                     "in those)")
    if options.image_key and not keyed:
        notes.append(f"--image-key {options.image_key} was not used: no NPZ or HDF5 file was audited (it "
                     "picks the image array stored beside the labels in those)")
    if options.color_map and not summary.kinds.get("mask"):
        notes.append(f"--color-map {display_path(options.color_map)} was not used: no mask was audited "
                     "(it decodes colour masks)")
    elif options.color_map and not any(discovery.color_map is not None or _names(discovery, options.color_map)
                                       for discovery in discoveries):
        # ADE20K and Mapillary masks carry their classes in a coding of their own (a map that
        # could not be read is an LG001 of its own instead).
        own = ", ".join(dict.fromkeys(discovery.layout for discovery in discoveries))
        notes.append(f"--color-map {display_path(options.color_map)} was not used: the masks of the {own} layout "
                     "were decoded as that format stores its classes, not through a colour map")
    return notes
