"""``labelguard fix``: thin click commands over :mod:`labelguard.fix`.

Exit codes: 0 done (or a dry run that refuses nothing), 1 some file was (or, in a dry run, would
be) refused or undo met a conflict, 2 usage error (another fix holding the data's lock included).
"""

from __future__ import annotations

import json
import os

import click

from labelguard._cli_options import storage_options_of
from labelguard.core import storage
from labelguard.core.spec import LabelSpec
from labelguard.core.text import plural, printable, printable_data
from labelguard.errors import SpecError
from labelguard.fix._base import PLANNED, REFUSED, SKIPPED, UNCHANGED, WRITTEN, FixResult, read_json_file
from labelguard.fix._journal import OBJECT_STORAGE_REFUSAL, FixError

class LocalPath(click.Path):
    """A path a fix writes: on this machine (a ``file://`` URL is its path); a URL of object
    storage is refused with the reason and what to do instead."""

    def convert(self, value, param, ctx):
        if storage.in_object_storage(value):
            self.fail(OBJECT_STORAGE_REFUSAL.format(path=value), param, ctx)
        return super().convert(storage.local_path(value), param, ctx)


class DataPath(LocalPath):
    """The data a fix reads: a local path, or a URL of object storage, which the fix copies to
    its local --out folder and fixes there (checked by the fix: :mod:`labelguard.fix._remote`)."""

    def convert(self, value, param, ctx):
        if storage.in_object_storage(value):
            return value
        return super().convert(value, param, ctx)


def remote_options(func):
    """The options of a fix whose PATHS may be URLs of object storage."""
    return click.option(
        "--storage-options", "storage_options_json", metavar="JSON",
        help="fsspec storage options for PATHS that are URLs (as for audit). A dataset in object storage is "
             "never written: it is copied to the local --out folder and fixed there.")(func)


_MARK = {PLANNED: "would fix", WRITTEN: "fixed", UNCHANGED: "unchanged", SKIPPED: "skipped", REFUSED: "refused"}


def _ints(text: str | None, option: str) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of integers", param_hint=option) from None


def _spec(num_classes, values, classes, ignore_index) -> LabelSpec | None:
    if not any((num_classes, values, classes, ignore_index)):
        return None
    try:
        return LabelSpec.from_source("command line", num_classes=num_classes, values=_ints(values, "--values"),
                                     classes=tuple(c.strip() for c in classes.split(",")) if classes else None,
                                     ignore=_ints(",".join(ignore_index), "--ignore-index") or ())
    except SpecError as exc:
        raise click.UsageError(str(exc)) from None


def common_options(func):
    """Options every writing fix shares."""
    options = [
        click.option("--apply", is_flag=True, help="Write the changes (default: a dry run that only shows them)."),
        click.option("--out", type=LocalPath(file_okay=False),
                     help="Write fixed files under this folder (same relative paths), which must lie outside the "
                          "data; the input stays untouched."),
        click.option("--from-report", type=click.Path(exists=True, dir_okay=False),
                     help="A JSON audit report (audit -f json -o FILE) whose suggestions to apply."),
        click.option("--json", "as_json", is_flag=True, help="Print the result as JSON."),
        click.option("--force", is_flag=True,
                     help="Also rewrite what is refused by default: read-only files (they stay read-only), files "
                          "with other hard links (this name gets the new bytes, the others keep the old), and for "
                          "remap/colors masks the audit flags as images or JPEG-damaged (LG202). Symbolic links "
                          "and HDF5 files that reach into other files are refused even so."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def spec_options(func):
    """The spec the re-audit of each written file checks against."""
    options = [
        click.option("--num-classes", type=click.IntRange(min=1), help="Number of classes, background included."),
        click.option("--values", help="Legal values, e.g. 0,1,2."),
        click.option("--classes", help="Class names in index order, comma separated."),
        click.option("--ignore-index", multiple=True, help="A value the loss ignores (e.g. 255); repeatable."),
        click.option("--key", help="Array key of the label in NPZ/HDF5 files."),
        click.option("--format", "layout", help="Force a layout (see `labelguard formats`)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _layout(layout, key):
    from labelguard.layouts.base import AuditOptions

    return AuditOptions(format=layout, key=key)


def _show(result: FixResult, as_json: bool) -> None:
    # Names of the data are shown as the audit's reports show them (escaped, never acting on
    # the terminal or starting a line of a CI log).
    if as_json:
        click.echo(json.dumps(printable_data(result.to_dict()), indent=2))
    else:
        for change in result.changes:
            where = f" -> {change.target}" if change.target and change.target != change.path else ""
            click.echo(printable(f"{_MARK.get(change.status, change.status):<10} {change.path}{where}: "
                                 f"{change.summary}"))
        for note in result.notes:
            click.echo(printable(f"note: {note}"), err=True)
        counts = {status: result.count(status) for status in _MARK if result.count(status)}
        click.echo(", ".join(f"{n} {_MARK[s]}" for s, n in counts.items()) or "no files", err=True)
        if not result.applied and result.count(PLANNED):
            click.echo("dry run: nothing was written; add --apply to write (originals are backed up)", err=True)
        if result.run_id:
            assert result.journal is not None  # not a user mistake: a run's id and journal are set together
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(result.journal))))
            click.echo(printable(f"run {result.run_id} journaled; undo with: labelguard fix undo {root}"), err=True)
    if not result.ok:
        raise SystemExit(1)


@click.group()
def fix() -> None:
    """Repair what audit found: remap values, convert colours, clean lists, drop foreign files; undo a run.

    Every command is a dry run unless --apply; applied runs replace each file atomically,
    keep the originals under DATA/.labelguard/backups/ and journal every write, so
    `labelguard fix undo DATA` restores the exact bytes.
    """


@fix.command("remap")
@click.argument("paths", nargs=-1, type=DataPath(exists=True))
@click.option("--map", "mapping", help="FROM:TO pairs, e.g. 255:1,3:2 (default: the report's suggested remap).")
@click.option("--ids", is_flag=True,
              help="Remap class ids in YOLO label rows, COCO JSON and CSV/TSV label tables instead of mask values.")
@click.option("--from-mapping", type=click.Path(exists=True, dir_okay=False),
              help="A mapping file from `labelguard harmonize`: apply its value and id maps to its datasets.")
@spec_options
@common_options
@remote_options
def remap_command(paths, mapping, ids, from_mapping, num_classes, values, classes, ignore_index, key, layout,
                  apply, out, from_report, as_json, force, storage_options_json):
    """Replace mask values in every mask under PATHS (PNG, TIFF, NPY, NPZ, HDF5, NIfTI), or with
    --ids the class ids of YOLO rows, COCO categories and CSV/TSV label tables."""
    from labelguard.fix._api import remap, remap_ids

    if from_mapping:
        if mapping or paths or from_report or out:
            raise click.UsageError("--from-mapping takes its datasets and maps from the file; drop PATHS, --map, "
                                   "--from-report and --out")
        _show_all(from_mapping, ("values", "ids"), apply, as_json, force)
        return
    if not mapping and not from_report:
        raise click.UsageError("give --map FROM:TO,..., --from-report REPORT or --from-mapping FILE")
    spec = _spec(num_classes, values, classes, ignore_index)
    if ids:
        if not mapping or not paths:
            raise click.UsageError("--ids needs PATHS and --map")
        _show(remap_ids(list(paths), mapping, spec=spec, apply=apply, out=out, force=force,
                        storage_options=storage_options_of(storage_options_json)), as_json)
        return
    result = remap(list(paths) or None, mapping, spec=spec, options=_layout(layout, key), from_report=from_report,
                   apply=apply, out=out, force=force, storage_options=storage_options_of(storage_options_json))
    _show(result, as_json)


@fix.command("rename")
@click.argument("paths", nargs=-1, type=DataPath(exists=True))
@click.option("--map", "mapping",
              help="OLD=NEW pairs, e.g. \"Dog=dog,dgo=dog\"; quote a name to keep its spaces: \"'dog '=dog\".")
@click.option("--map-file", type=click.Path(exists=True, dir_okay=False),
              help='A JSON object of OLD: NEW names, taken exactly (e.g. {"dog ": "dog"}).')
@click.option("--from-mapping", type=click.Path(exists=True, dir_okay=False),
              help="A mapping file from `labelguard harmonize`: apply its name maps to its datasets.")
@click.option("--classes", help="The class names the re-audit checks against, comma separated.")
@common_options
@remote_options
def rename_command(paths, mapping, map_file, from_mapping, classes, apply, out, from_report, as_json, force,
                   storage_options_json):
    """Rename classes under PATHS: VOC XML <name> texts, COCO categories, CSV/TSV label cells, and
    ImageFolder class folders (merged file by file into a folder that already has the new name)."""
    from labelguard.fix._api import rename

    if from_report:
        raise click.UsageError("rename takes --map; a report suggests no renames")
    if from_mapping:
        if mapping or paths or out:
            raise click.UsageError("--from-mapping takes its datasets and maps from the file; drop PATHS, --map "
                                   "and --out")
        _show_all(from_mapping, ("names",), apply, as_json, force)
        return
    if mapping and map_file:
        raise click.UsageError("give --map or --map-file, not both")
    if map_file:
        mapping = _name_map_file(map_file)
    if not mapping or not paths:
        raise click.UsageError("give PATHS and --map OLD=NEW,... (or --map-file FILE), or --from-mapping FILE")
    _show(rename(list(paths), mapping, spec=_spec(None, None, classes, ()), apply=apply, out=out, force=force,
                 storage_options=storage_options_of(storage_options_json)), as_json)


def _name_map_file(path: str) -> dict[str, str]:
    try:
        data = read_json_file(path, "name map")
    except FixError as exc:
        raise click.BadParameter(str(exc), param_hint="--map-file") from None
    if not isinstance(data, dict) or not data or not all(isinstance(k, str) and isinstance(v, str) and k and v.strip()
                                                         for k, v in data.items()):
        raise click.BadParameter(f"{path} must hold a JSON object of OLD: NEW class names, e.g. "
                                 '{"dog ": "dog"}', param_hint="--map-file")
    return data


def _show_all(mapping_file: str, kinds: tuple[str, ...], apply: bool, as_json: bool, force: bool) -> None:
    from labelguard.fix._harmonize import apply_mapping

    results = apply_mapping(mapping_file, kinds=kinds, apply=apply, force=force)
    if not results:
        click.echo(f"nothing to do: no {' or '.join(kinds)} map in {mapping_file} changes anything", err=True)
        return
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in results], indent=2))
    else:
        for result in results:
            try:
                _show(result, False)
            except SystemExit:  # a refused file: show the other datasets, then exit 1
                pass
    if not all(result.ok for result in results):
        raise SystemExit(1)


@fix.command("colors")
@click.argument("paths", nargs=-1, type=DataPath(exists=True))
@click.option("--color-map", type=click.Path(exists=True, dir_okay=False),
              help="Colour map file (default: the report's proposal, the dataset's map, or a fresh proposal).")
@click.option("--unmapped", type=int, help="Index for colours not in the map (default: skip such files).")
@click.option("--mode", type=click.Choice(["P", "L"]), default="P", show_default=True,
              help="P: index mask with the colours as palette; L: plain grey index mask.")
@spec_options
@common_options
@remote_options
def colors_command(paths, color_map, unmapped, mode, num_classes, values, classes, ignore_index, key, layout,
                   apply, out, from_report, as_json, force, storage_options_json):
    """Convert colour masks under PATHS to index masks."""
    from labelguard.fix._api import colors

    if not paths and not from_report:
        raise click.UsageError("give the PATHS of the colour masks, or --from-report REPORT")
    result = colors(list(paths) or None, color_map, spec=_spec(num_classes, values, classes, ignore_index),
                    options=_layout(layout, key), from_report=from_report, unmapped=unmapped, mode=mode,
                    apply=apply, out=out, force=force, storage_options=storage_options_of(storage_options_json))
    _show(result, as_json)


@fix.command("list")
@click.argument("lists", nargs=-1, type=DataPath(exists=True, dir_okay=False))
@click.option("--root", type=DataPath(exists=True, file_okay=False),
              help="The dataset root the entries are relative to (default: found above the list; needed for "
                   "lists in object storage). With --from-report: the dataset whose lists are cleaned (default: "
                   "the paths the report audited).")
@click.option("--keep-missing", is_flag=True, help="Keep entries whose file does not exist.")
@common_options
@remote_options
def list_command(lists, root, keep_missing, apply, out, from_report, as_json, force, storage_options_json):
    """Clean file lists: BOM, CRLF, whitespace, blank and duplicate lines, entries without a file."""
    from labelguard.fix._lists import clean_list

    if not lists and not from_report:
        raise click.UsageError("give the LISTS to clean, or --from-report REPORT")
    result = clean_list(list(lists) or None, root=root, drop_missing=not keep_missing, from_report=from_report,
                        apply=apply, out=out, force=force, storage_options=storage_options_of(storage_options_json))
    _show(result, as_json)


@fix.command("drop")
@click.argument("files", nargs=-1, required=True, type=LocalPath(exists=True, dir_okay=False))
@click.option("--root", type=LocalPath(exists=True, file_okay=False),
              help="The dataset root: only files inside it are read or touched, its list files are searched and "
                   "the journal goes there (default: the folder above the files' folder, VOC's Annotations/..).")
@click.option("--list", "lists", multiple=True, type=LocalPath(exists=True, dir_okay=False),
              help="Another list file whose lines naming FILES go too (repeatable); the lists and label tables the "
                   "dataset reads and VOC's ImageSets/*/*.txt are searched without it.")
@click.option("--apply", is_flag=True, help="Remove and rewrite (default: a dry run that only shows them).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--force", is_flag=True,
              help="Also remove read-only files and files with other hard links (and rewrite such lists), and drop "
                   "FILES although a list the data reads lies outside --root and cannot be searched (it is named).")
def drop_command(files, root, lists, apply, as_json, force):
    """Remove FILES that do not belong to the dataset (a VOC XML from another dataset, whose class
    names the spec lacks: LG101), with the lines of its list files that name them (ImageSets/Main
    ids, per-class lists, split lists, the rows of a label table such as ImageNet's train.txt).
    The files' bytes go into the run's backup and every list is rewritten atomically, so
    `labelguard fix undo DATA` restores them byte for byte (a file's mode and time too)."""
    from labelguard.fix._drop import drop

    _show(drop(list(files), root=root, lists=list(lists), apply=apply, force=force), as_json)


@fix.command("undo")
@click.argument("path", default=".", type=LocalPath(exists=True))
@click.option("--run", "run_id", help="The run to undo (id or prefix; default: the latest not undone).")
@click.option("--force", is_flag=True, help="Also restore files changed after the run.")
@click.option("--list", "show_runs", is_flag=True, help="List the recorded runs instead.")
def undo_command(path, run_id, force, show_runs):
    """Restore the exact bytes every file had before a fix run (PATH: the data root)."""
    from labelguard.fix._journal import find_runs, undo

    if show_runs:
        runs = find_runs(path)
        if not runs:
            click.echo("no fix runs recorded", err=True)
        for info in runs:
            state = "undone" if info.undone else "partly undone" if info.partly_undone else (
                "complete" if info.finished else "interrupted")
            files = plural(len(info.entries), "file")
            click.echo(f"{info.id}  {state:<13}  {files:>11}  {info.command}")
        return
    result = undo(path, run_id, force=force)
    for target in result.restored:
        click.echo(f"restored   {target}")
    for target in result.removed:
        click.echo(f"removed    {target}")
    for target, reason in result.conflicts:
        click.echo(f"conflict   {target}: {reason}")
    click.echo(f"run {result.run}: {len(result.restored)} restored, {len(result.removed)} removed, "
               f"{len(result.unchanged)} already as before, {len(result.conflicts)} conflicts", err=True)
    if result.conflicts:
        raise SystemExit(1)


@click.command("harmonize")
@click.argument("paths", nargs=-1, required=True, type=LocalPath(exists=True))
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the mapping file here (JSON).")
@click.option("--classes", help="The common class names, comma separated (default: proposed from the data).")
@click.option("--num-classes", type=click.IntRange(min=1), help="The common number of classes (mask values).")
@click.option("--ignore-index", multiple=True, help="A value the loss ignores (e.g. 255); repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the proposal as JSON.")
def harmonize_command(paths, output, classes, num_classes, ignore_index, as_json):
    """Compare the label sets of datasets PATHS (one per site) and propose one map per dataset
    onto a common spec; -o writes it as a file that `labelguard fix remap --from-mapping FILE`
    (values, ids) and `labelguard fix rename --from-mapping FILE` (names) apply."""
    from labelguard.fix._harmonize import harmonize

    if len(paths) < 2:
        raise click.UsageError("give two or more datasets to compare")
    plan = harmonize(list(paths), _spec(num_classes, None, classes, ignore_index))
    if as_json:
        click.echo(json.dumps(plan.to_dict(), indent=2, ensure_ascii=False))
    else:
        common = f"classes {', '.join(plan.spec.classes)}" if plan.spec.classes else plan.spec.describe()
        click.echo(f"common spec: {common}")
        for dataset in plan.datasets:
            shown = ", ".join(f"{k} ({n})" for k, n in sorted(dataset.labels.items()))
            click.echo(f"{dataset.path} [{dataset.layout}, {dataset.kind}]: {shown}")
        differences = plan.differences
        click.echo("proposed maps:" if differences else "the datasets already agree", err=not differences)
        for line in differences:
            click.echo(f"  {line}")
        for note in plan.notes:
            click.echo(f"note: {note}", err=True)
    if output:
        plan.save(output)
        click.echo(f"wrote {output}; review it, then: labelguard fix remap --from-mapping {output} --apply "
                   f"and labelguard fix rename --from-mapping {output} --apply", err=True)
