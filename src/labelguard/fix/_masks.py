"""Rewriting mask files: value remaps and colour -> index conversion.

Each container is opened as a :class:`LabelFile` by the editor registered for it (the
container names are the mask reader's): the label array plus a writer that stores a new array
with everything else of the file kept (PNG mode, palette, text chunks and dpi; TIFF compression,
resolution, description and ImageJ metadata; the other arrays of an NPZ; the other datasets,
attributes, chunking and compression of an HDF5 file; the NIfTI header, extensions and affine)
and a check that re-reads what was written, that metadata included. A file that keeps labels in
other files is refused before anything is read from them or written: an HDF5 file with external
links, external storage or virtual datasets mapped from other files (a write could land there),
an OME-TIFF placing planes in other files, a NIfTI header/image pair (two files, never replaced
as one). :func:`run_mask_fix` plans every mask with a transform and writes through
:func:`labelguard.fix._engine.apply_edits`.

A file whose audit says it is not a clean label (an image saved as the label, or a mask with
JPEG damage: LG202) is refused unless ``force``: a remap would turn it into a clean-looking
mask that still holds the damage.
"""

from __future__ import annotations

import io
import os
import shutil
import zipfile
from dataclasses import dataclass, field
from typing import Callable, Sequence, TypeVar, cast

import numpy as np
from PIL import Image, PngImagePlugin

from labelguard._optional import available, require
from labelguard.core.spec import LabelSpec
from labelguard.core.tasks import FileResult, FileTask
from labelguard.core.text import LISTED, noun, plural, shorten
from labelguard.errors import MissingDependency
from labelguard.fix._base import PLANNED, REFUSED, SKIPPED, UNCHANGED, CannotFix, FileChange, FixResult, Refusal
from labelguard.fix._engine import (
    Edit, apply_edits, check_out, copy_edit, data_root, dataset_specs, file_state, output_target, preview_edits,
    target_refusal, unknown_spec_note, worse,
)
from labelguard.fix._journal import FixError
from labelguard.core.paths import display_path
from labelguard.layouts.base import AuditOptions
from labelguard.readers.base import ReadError, read_head, sniff
from labelguard.readers.colormap import ColorMap, color_histogram, rgb_color, unpack
from labelguard.readers.masks import (
    IMAGE_FORMATS, SEVERAL_FILES, hdf5_data_elsewhere, named_file, ome_elsewhere, pick_key, read_mask, tiff_file,
)
from labelguard.rules._masks import process_mask


@dataclass
class LabelFile:
    """A mask file opened for rewriting.

    Attributes:
        path: the file.
        container: its format, from the bytes.
        array: the stored label array.
        mode: the Pillow mode or dtype, for messages.
        key: the NPZ/HDF5 array key.
        write: ``write(new_array, dest)`` writes the whole file with ``new_array`` as labels.
        check: ``check(dest, new_array)`` raises FixError when ``dest`` does not hold what it should.
    """

    path: str
    container: str
    array: np.ndarray
    mode: str
    key: str | None
    write: Callable[[np.ndarray, str], None]
    check: Callable[[str, np.ndarray], None]


# editor(path, container, key) -> LabelFile, per container name of the mask reader
MaskEditor = Callable[[str, str, "str | None"], LabelFile]
MASK_EDITORS: dict[str, MaskEditor] = {}
# An editor as its own signature gives it (the TIFF editor's ``container`` has a default).
_Editor = TypeVar("_Editor", bound=MaskEditor)


def mask_editor(*containers: str) -> Callable[[_Editor], _Editor]:
    """Register the editor that rewrites masks stored in ``containers``."""
    def wrap(editor: _Editor) -> _Editor:
        for container in containers:
            MASK_EDITORS[container] = editor
        return editor

    return wrap


def open_label_file(path: str, key: str | None = None) -> LabelFile:
    """Open ``path`` for rewriting; CannotFix for formats that a rewrite would damage."""
    try:
        container = sniff(read_head(path))
    except ReadError as exc:
        raise CannotFix(str(exc)) from None
    if container == "jpeg":
        raise CannotFix("JPEG mask: a rewrite would be lossy again; re-export it losslessly (PNG) "
                        "from the source labels")
    editor = MASK_EDITORS.get(container or "")
    if editor is None:
        raise CannotFix(f"not a mask format labelguard can rewrite ({container or 'unknown bytes'})")
    # Not a user mistake: no editor is registered under an empty name, so the format is known.
    assert container is not None
    return editor(path, container, key)


def _same_array(dest: str, key: str | None, expected: np.ndarray) -> None:
    try:
        record = read_mask(dest, key)
    except ReadError as exc:
        raise FixError(f"the written file cannot be read back: {exc}") from None
    if record.array.shape != expected.shape or not np.array_equal(record.array, expected):
        raise FixError("the written file reads back different labels than intended")


def _refuse_ome_elsewhere(image: Image.Image, path: str) -> None:
    """Refusal of a TIFF whose OME-XML places planes in other files (Pillow reads only this one)."""
    elsewhere = ome_elsewhere(getattr(image, "tag_v2", {}).get(270), path) if image.format == "TIFF" else None
    if elsewhere:
        raise Refusal(elsewhere)


@mask_editor(*(f for f in IMAGE_FORMATS if f not in ("jpeg", "tiff")))
def _open_image(path: str, container: str, key: str | None = None) -> LabelFile:
    with Image.open(path) as image:
        _refuse_ome_elsewhere(image, path)
        image.load()
        mode, fmt, info = image.mode, image.format, dict(image.info)
        image_palette = image.palette if mode == "P" else None
        palette = image.getpalette(rawmode=image_palette.mode) if image_palette else None
        palette_mode = image_palette.mode if image_palette and palette else None
        kept = _image_metadata(image)
        text = dict(getattr(image, "text", None) or {})
        array = np.asarray(image)
    if mode not in ("L", "P", "I;16", "I;16B", "I;16L", "I"):
        raise CannotFix(f"a mode {mode} image is not an index mask"
                        + ("; convert colours with `labelguard fix colors`" if mode in ("RGB", "RGBA") else ""))

    def write(new: np.ndarray, dest: str) -> None:
        if mode == "P":
            out = Image.frombytes("P", (new.shape[1], new.shape[0]), _fit(new, np.uint8, mode).tobytes())
            if palette is not None:
                # The mode is known whenever the palette read holds colours (see above).
                out.putpalette(palette, rawmode=cast(str, palette_mode))
        else:
            out = Image.fromarray(_fit(new, array.dtype, mode))
        out.save(dest, format=fmt, **_save_metadata(fmt, info, text))

    def check(dest: str, new: np.ndarray) -> None:
        _same_array(dest, None, new.astype(array.dtype))
        with Image.open(dest) as written:
            if written.mode != mode and not (mode.startswith("I;16") and written.mode.startswith("I;16")):
                raise FixError(f"the written image has mode {written.mode}, not {mode}")
            if palette is not None and written.getpalette(rawmode=palette_mode) != palette:
                raise FixError("the written image lost its palette")
            lost = [name for name, value in kept.items() if _image_metadata(written).get(name) != value]
            if lost:
                raise FixError(f"the written image lost its {', '.join(lost)}")

    return LabelFile(path, container, array, mode, None, write, check)


# What an image mask carries besides its pixels that a rewrite keeps (Pillow's info keys).
IMAGE_METADATA = ("dpi", "icc_profile", "exif", "transparency", "compression")


def _image_metadata(image: Image.Image) -> dict:
    """The image's text chunks (PNG tEXt/zTXt/iTXt), resolution, colour profile, Exif,
    transparency and compression, as a rewrite must keep them."""
    kept = {name: image.info[name] for name in IMAGE_METADATA if name in image.info}
    if "dpi" in kept:  # stored as dots per metre: compare what the file can hold
        kept["dpi"] = tuple(round(float(v), 2) for v in kept["dpi"])
    text = getattr(image, "text", None)
    if text:
        kept["text chunks"] = {k: (str(v), getattr(v, "lang", None), getattr(v, "tkey", None)) for k, v in text.items()}
    return kept


def _save_metadata(fmt: str | None, info: dict, text: dict) -> dict:
    """The ``save`` arguments that write an opened image's ``info`` and PNG ``text`` chunks back
    in format ``fmt``."""
    params = {name: info[name] for name in IMAGE_METADATA if name in info and name != "compression"}
    if fmt == "TIFF" and "compression" in info:
        params["compression"] = info["compression"]
    if fmt == "PNG" and text:
        chunks = PngImagePlugin.PngInfo()
        for name, value in text.items():
            if isinstance(value, PngImagePlugin.iTXt):
                # An iTXt chunk read from a file has both (Pillow decodes them to text).
                chunks.add_itxt(name, value, cast(str, value.lang), cast(str, value.tkey))
            else:
                chunks.add_text(name, value)
        params["pnginfo"] = chunks
    return params


def _fit(new: np.ndarray, dtype, what: str) -> np.ndarray:
    """``new`` as ``dtype``; CannotFix when a value does not fit."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu" and new.size:
        info = np.iinfo(dtype)
        low, high = int(new.min()), int(new.max())
        if low < info.min or high > info.max:
            bad = high if high > info.max else low
            raise CannotFix(f"value {bad} does not fit this file's {dtype} labels ({what}, "
                            f"{info.min}..{info.max})")
    return new.astype(dtype, copy=False)


@mask_editor("tiff")
def _open_tiff(path: str, container: str = "tiff", key: str | None = None) -> LabelFile:
    """Written again with the compression, predictor, resolution, description, software and
    ImageJ metadata the file had; a compression tifffile cannot write here is a skip, not a
    silent change."""
    if not available("tifffile"):
        return _open_image(path, container)
    tifffile = require("tifffile", "rewrite TIFF masks")
    try:
        with tiff_file(tifffile, path) as tif:
            elsewhere = ome_elsewhere(tif.pages[0].description if len(tif.pages) else None, path)
            if elsewhere:
                raise Refusal(elsewhere)
            array = np.asarray(tif.asarray())
            kept = _tiff_metadata(tif)
            axes = tif.series[0].axes
    except CannotFix:
        raise
    except Exception as exc:  # tifffile raises many types on corrupt files
        raise CannotFix(f"cannot decode TIFF: {exc}") from None
    if array.ndim == 3 and array.shape[-1] in (3, 4) and array.dtype == np.uint8:
        raise CannotFix("a colour TIFF is not an index mask; convert colours with `labelguard fix colors`")

    def write(new: np.ndarray, dest: str) -> None:
        predictor = kept["predictor"] if kept["predictor"] > 1 else None
        options = {"compression": kept["compression"], "predictor": predictor,
                   "resolution": kept["resolution"], "resolutionunit": kept["resolution unit"],
                   "photometric": "minisblack", "software": kept["software"] or False}
        if kept["imagej"] is not None:
            options.update(imagej=True, metadata={**kept["imagej"], "axes": axes})
        elif not kept["shaped"]:
            options.update(metadata=None, description=kept["description"])
        try:
            tifffile.imwrite(dest, _fit(new, array.dtype, "TIFF"), **options)
        except KeyError as exc:  # a codec tifffile has no encoder for without imagecodecs
            raise CannotFix(f"its compression cannot be written here ({exc.args[0]}); not rewritten, so that it "
                            "keeps its compression") from None

    def check(dest: str, new: np.ndarray) -> None:
        _same_array(dest, None, new.astype(array.dtype))
        with tifffile.TiffFile(dest) as tif:
            written = _tiff_metadata(tif)
        lost = [name for name, value in kept.items() if written[name] != value]
        if lost:
            raise FixError(f"the written TIFF lost its {', '.join(lost)}")

    return LabelFile(path, "tiff", array, str(array.dtype), None, write, check)


# ImageJ metadata tifffile writes itself, from the array.
_IMAGEJ_COMPUTED = ("ImageJ", "images", "channels", "slices", "frames", "hyperstack")


def _tiff_metadata(tif) -> dict:
    """What a TIFF mask carries besides its pixels that a rewrite keeps (first page)."""
    page = tif.pages[0]
    imagej = tif.imagej_metadata if tif.is_imagej else None
    own_description = tif.is_imagej or tif.is_shaped
    return {
        "compression": int(page.compression), "predictor": int(page.predictor),
        "resolution": tuple(round(float(v), 6) for v in page.resolution), "resolution unit": int(page.resolutionunit),
        "imagej": {k: v for k, v in imagej.items() if k not in _IMAGEJ_COMPUTED} if imagej else None,
        "shaped": bool(tif.is_shaped), "description": None if own_description else (page.description or None),
        "software": page.software or None,
    }


@mask_editor("npy")
def _open_npy(path: str, container: str = "npy", key: str | None = None) -> LabelFile:
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise CannotFix(f"cannot load NPY: {exc}") from None

    def write(new: np.ndarray, dest: str) -> None:
        data = _fit(new, array.dtype, "NPY")
        if np.isfortran(array):
            data = np.asfortranarray(data)
        with open(dest, "wb") as handle:
            np.save(handle, data, allow_pickle=False)

    return LabelFile(path, "npy", array, str(array.dtype), None, write,
                     lambda dest, new: _same_array(dest, None, new.astype(array.dtype)))


def _pick(keys: list[str], key: str | None, what: str) -> str:
    """The label array's key, as the audit picks it (:func:`~labelguard.readers.masks.pick_key`)."""
    try:
        return pick_key(keys, key, what)
    except ReadError as exc:
        raise CannotFix(str(exc)) from None


@mask_editor("zip")
def _open_npz(path: str, container: str, key: str | None) -> LabelFile:
    """Only the label member is rewritten; every other member is copied byte for byte."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            names = [m.filename[:-4] for m in members if m.filename.endswith(".npy")]
            chosen = _pick(names, key, "NPZ")
            with archive.open(chosen + ".npy") as handle:
                array = np.lib.format.read_array(handle, allow_pickle=False)
    except CannotFix:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError) as exc:
        raise CannotFix(f"cannot load NPZ: {exc}") from None

    def write(new: np.ndarray, dest: str) -> None:
        buffer = io.BytesIO()
        np.lib.format.write_array(buffer, _fit(new, array.dtype, f"NPZ {chosen!r}"), allow_pickle=False)
        with zipfile.ZipFile(path) as source, zipfile.ZipFile(dest, "w") as out:
            for member in source.infolist():
                if member.filename == chosen + ".npy":
                    info = zipfile.ZipInfo(member.filename, date_time=member.date_time)
                    info.compress_type = member.compress_type
                    info.external_attr = member.external_attr
                    out.writestr(info, buffer.getvalue())
                else:
                    out.writestr(member, source.read(member.filename))

    def check(dest: str, new: np.ndarray) -> None:
        _same_array(dest, chosen, new.astype(array.dtype))
        with zipfile.ZipFile(path) as source, zipfile.ZipFile(dest) as out:
            for member in source.infolist():
                if member.filename != chosen + ".npy" and out.read(member.filename) != source.read(member.filename):
                    raise FixError(f"NPZ member {member.filename} changed")

    return LabelFile(path, "npz", array, str(array.dtype), chosen, write, check)


@mask_editor("hdf5")
def _open_hdf5(path: str, container: str, key: str | None) -> LabelFile:
    """The file is copied and the label dataset overwritten in place: other datasets, groups,
    attributes, chunking and compression stay as they were. A file with an external link or a
    virtual dataset mapped from another file is refused: its data lives elsewhere, and a write
    through the copy could land in that other file."""
    h5py = require("h5py", "rewrite HDF5 masks")
    try:
        with h5py.File(path, "r") as handle:
            outside = _hdf5_links_out(handle, h5py)
            if outside:
                raise Refusal(f"the HDF5 file reaches into other files ({'; '.join(outside[:3])}"
                              f"{' and more' if len(outside) > 3 else ''}); labelguard rewrites only "
                              "self-contained HDF5 files: fix the file the data lives in")
            keys = [k for k in handle.keys() if isinstance(handle[k], h5py.Dataset)]
            chosen = _pick(keys, key, "HDF5 file")
            array = np.asarray(handle[chosen][()])
            layout = _hdf5_layout(handle, h5py)
    except CannotFix:
        raise
    except (OSError, KeyError, ValueError, TypeError) as exc:
        raise CannotFix(f"cannot read HDF5: {exc}") from None

    def write(new: np.ndarray, dest: str) -> None:
        data = _fit(new, array.dtype, f"HDF5 {chosen!r}")
        shutil.copyfile(path, dest)
        with h5py.File(dest, "r+") as handle:
            handle[chosen][...] = data

    def check(dest: str, new: np.ndarray) -> None:
        _same_array(dest, chosen, new.astype(array.dtype))
        with h5py.File(path, "r") as source, h5py.File(dest, "r") as out:
            if _hdf5_layout(out, h5py) != layout:
                raise FixError("the written HDF5 file lost attributes, chunking or compression")
            for name in source.keys():
                if name == chosen or not isinstance(source[name], h5py.Dataset):
                    continue
                if not np.array_equal(source[name][()], out[name][()]):
                    raise FixError(f"HDF5 dataset {name} changed")

    return LabelFile(path, "hdf5", array, str(array.dtype), chosen, write, check)


def _hdf5_links_out(handle, h5py) -> list[str]:
    """The external links of an open HDF5 file and its datasets whose data lies in other files
    (:func:`~labelguard.readers.masks.hdf5_data_elsewhere`)."""
    found = []
    groups = [("/", handle)]

    def visit(name: str, item) -> None:
        if isinstance(item, h5py.Group):
            groups.append((f"/{name}", item))
        elif isinstance(item, h5py.Dataset):
            elsewhere = hdf5_data_elsewhere(item)
            if elsewhere:
                found.append(f"{named_file('/' + name)} {elsewhere}")

    handle.visititems(visit)
    for where, group in groups:
        for name in group:
            link = group.get(name, getlink=True)
            if isinstance(link, h5py.ExternalLink):
                found.append(f"{named_file(where.rstrip('/') + '/' + name)} is an external link to "
                             f"{named_file(f'{link.filename}:{link.path}')}")
    return found


def _hdf5_layout(handle, h5py) -> dict:
    """Every object's attributes, and every dataset's shape, type, chunking and compression."""
    def attributes(item) -> tuple:
        return tuple(sorted((k, str(np.asarray(v).dtype), repr(np.asarray(v).tolist())) for k, v in item.attrs.items()))

    layout = {"/": attributes(handle)}

    def visit(name: str, item) -> None:
        if isinstance(item, h5py.Dataset):
            layout[name] = (attributes(item), item.shape, str(item.dtype), item.chunks, item.compression,
                            item.compression_opts, item.shuffle)
        else:
            layout[name] = attributes(item)

    handle.visititems(visit)
    return layout


@mask_editor("nifti", "gzip")
def _open_nifti(path: str, container: str = "nifti", key: str | None = None) -> LabelFile:
    if SEVERAL_FILES.search(path):
        raise Refusal(f"{named_file(os.path.basename(path))} is one file of an image stored in several (a "
                      "header/image pair such as NIfTI's .hdr and .img): fix rewrites one file at a time and would "
                      "leave the other as it was; convert the image to a single .nii or .nii.gz file")
    nib = require("nibabel", "rewrite NIfTI masks")
    try:
        image = nib.load(path)
        array = np.asarray(image.dataobj)
    except Exception as exc:  # nibabel raises ImageFileError, EOFError, zlib.error...
        raise CannotFix(f"cannot read NIfTI: {exc}") from None
    slope, inter = image.dataobj.slope, image.dataobj.inter
    if (slope, inter) != (1.0, 0.0):
        raise CannotFix(f"NIfTI with intensity scaling (slope {slope}, intercept {inter}) is not a plain label map")
    stored = image.get_data_dtype()
    header = image.header.copy()

    def write(new: np.ndarray, dest: str) -> None:
        out = type(image)(_fit(new, stored, "NIfTI"), image.affine, header=header.copy())
        out.set_data_dtype(stored)
        nib.save(out, dest)

    def check(dest: str, new: np.ndarray) -> None:
        written = nib.load(dest)
        if not np.array_equal(np.asarray(written.dataobj), new.astype(array.dtype)):
            raise FixError("the written NIfTI reads back different labels than intended")
        if not np.allclose(written.affine, image.affine) or written.get_data_dtype() != stored:
            raise FixError("the written NIfTI lost its affine or data type")
        if written.header.binaryblock != header.binaryblock or written.header.extensions != header.extensions:
            raise FixError("the written NIfTI header differs from the original's")

    return LabelFile(path, "nifti", array, str(array.dtype), None, write, check)


# ---- transforms ---------------------------------------------------------------------------

def remap_array(array: np.ndarray, mapping: dict[int, int]) -> tuple[np.ndarray, dict[int, int]]:
    """``array`` with every value ``v`` in ``mapping`` replaced by ``mapping[v]`` (all at once,
    so ``{1: 2, 2: 1}`` swaps), and the pixel count changed per source value."""
    if array.dtype.kind not in "iu":
        if array.dtype.kind != "f" or not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
            raise CannotFix(f"{array.dtype} labels with non-integer values cannot be remapped; "
                            "fix LG204 first")
    new = array.copy()
    counts: dict[int, int] = {}
    for source, target in mapping.items():
        hit = array == source
        n = int(hit.sum())
        if not n:
            continue
        if array.dtype.kind in "iu" and not _fits(target, array.dtype):
            raise CannotFix(f"value {target} does not fit this file's {array.dtype} labels")
        counts[source] = n
        new[hit] = target
    return new, counts


def _fits(value: int, dtype: np.dtype) -> bool:
    info = np.iinfo(dtype)
    return info.min <= value <= info.max


def color_table(color_map: "ColorMap | dict") -> dict[int, int]:
    """Packed 0xRRGGBB -> index, from a :class:`ColorMap` or a report's ``{"r,g,b": index}``."""
    if isinstance(color_map, ColorMap):
        return color_map.lookup()
    table: dict[int, int] = {}
    for key, index in color_map.items():
        try:
            r, g, b = rgb_color([int(v) for v in str(key).split(",")], f"colour map key {key!r}")
            table[(r << 16) | (g << 8) | b] = int(index)
        except ValueError:
            raise FixError(f"colour map key {key!r} is not 'r,g,b'") from None
        except ReadError as exc:
            raise FixError(str(exc)) from None
    return table


def colors_to_indices(rgb: np.ndarray, table: dict[int, int], unmapped: int | None) -> tuple[np.ndarray, dict]:
    """Index labels of a colour mask, and the pixel count per index; CannotFix naming colours
    not in the map (unless ``unmapped`` gives them a value)."""
    codes, counts, inverse = color_histogram(rgb[..., :3])
    index_of = np.array([table.get(int(c), -1) for c in codes], dtype=np.int64)
    missing = {unpack(int(c)): int(n) for c, n, i in zip(codes, counts, index_of) if i < 0}
    if missing:
        if unmapped is None:
            listed = shorten(sorted(missing.items(), key=lambda i: -i[1]), 6,
                             lambda item: f"{item[0]} in {plural(item[1], 'pixel')}", what="colour")
            them = "it" if len(missing) == 1 else "them"
            raise CannotFix(f"{noun(len(missing), 'colour')} not in the map: {listed}; add {them} to the map "
                            "or pass --unmapped VALUE")
        index_of[index_of < 0] = unmapped
    indices = index_of[inverse].reshape(rgb.shape[:2])
    per_color = {"%d,%d,%d" % unpack(int(c)): [int(i), int(n)] for c, n, i in zip(codes, counts, index_of)}
    return indices, per_color


def open_color_file(path: str, table: dict[int, int], mode: str = "P") -> LabelFile:
    """A colour image mask, rewritten as an index mask: mode P with the map's colours as its
    palette (it looks the same in a viewer), or mode L."""
    try:
        container = sniff(read_head(path))
    except ReadError as exc:
        raise CannotFix(str(exc)) from None
    if container == "jpeg":
        raise CannotFix("JPEG colour mask: its colours are smeared along edges; re-export it losslessly")
    if container not in IMAGE_FORMATS:
        raise CannotFix(f"not an image ({container or 'unknown bytes'}): only colour images are converted")
    with Image.open(path) as image:
        _refuse_ome_elsewhere(image, path)
        image.load()
        fmt = image.format
        if image.mode not in ("RGB", "RGBA", "P"):
            raise CannotFix(f"mode {image.mode} is not a colour mask")
        if image.mode == "P":
            raise CannotFix("already an index mask (mode P)")
        rgb = np.asarray(image.convert("RGB"))
    palette = [0] * 768
    for packed, index in sorted(table.items(), key=lambda item: -item[0]):
        if 0 <= index < 256:
            palette[3 * index: 3 * index + 3] = list(unpack(packed))

    def write(new: np.ndarray, dest: str) -> None:
        data = _fit(new, np.uint8, f"mode {mode}")
        if mode == "P":
            out = Image.frombytes("P", (data.shape[1], data.shape[0]), data.tobytes())
            out.putpalette(palette)
        else:
            out = Image.fromarray(data)
        out.save(dest, format=fmt if fmt in ("PNG", "TIFF", "BMP") else "PNG")

    return LabelFile(path, container, rgb, "RGB", None, write,
                     lambda dest, new: _same_array(dest, None, new.astype(np.uint8)))


def describe_counts(counts: dict[int, int], mapping: dict[int, int]) -> str:
    """What a remap changes in one mask: "2 -> 1 in 662 pixels, 255 -> 0 in 1 pixel"."""
    return ", ".join(f"{src} -> {mapping[src]} in {plural(n, 'pixel')}" for src, n in sorted(counts.items()))


def shown_values(values: list[int]) -> str:
    """A mask's values as a fix's line lists them: "0, 1, 2", the first few of many."""
    return shorten(values, LISTED, what="value") if values else "none"


def values_of(array: np.ndarray) -> list[int]:
    return [int(v) for v in np.unique(array)] if array.size else []


# ---- the mask fix run ---------------------------------------------------------------------

# transform(label_file) -> (new array or None when nothing changes, one-line summary, details)
Transform = Callable[[LabelFile], "tuple[np.ndarray | None, str, dict]"]
Opener = Callable[[str, "str | None"], LabelFile]


@dataclass
class Dataset:
    """The mask files a fix works on, their common root, and the spec each one is checked
    against (its own dataset's: one dataset's spec never leaks onto another).

    Attributes:
        color_maps: each file's dataset's colour map, when it declares one.
        unspecified: the dataset folders for which no spec is known.
    """

    files: list[str]
    root: str
    specs: dict[str, LabelSpec]
    color_maps: dict[str, ColorMap | None]
    notes: list[str]
    unspecified: list[str] = field(default_factory=list)


def find_masks(paths: Sequence[str], spec: LabelSpec | None = None,
               options: AuditOptions | None = None, use_project_config: bool = True) -> Dataset:
    """The mask files under ``paths`` as the audit discovers them, each with its dataset's spec."""
    if not paths:
        raise FixError("no paths given")
    for path in paths:
        if not os.path.exists(path):
            raise FixError(f"{path}: no such file or directory")
    options = options or AuditOptions()
    dataset = Dataset([], data_root(paths), {}, {}, [])
    for path in paths:
        for discovery, dataset_spec in dataset_specs(path, options, spec, use_project_config):
            tasks = [t for t in discovery.tasks if t.processor is process_mask and t.path not in dataset.specs]
            masks = [t.path for t in tasks]
            for task in tasks:
                dataset.files.append(task.path)
                dataset.specs[task.path] = dataset_spec
                # The map the audit decodes this mask through (its dataset's own), if any.
                # (A discovery's colour map is typed as any object; it is a ColorMap.)
                dataset.color_maps[task.path] = cast("ColorMap | None", task.option("color_map") or discovery.color_map)
            if masks and not dataset_spec.is_known:
                dataset.unspecified.append(display_path(discovery.root))
            dataset.notes.extend(discovery.notes)
    return dataset


def audit_file(path: str, spec: LabelSpec, key: str | None, color_map: ColorMap | None = None) -> FileResult:
    """The audit's per-file processing of the mask ``path``."""
    options: list[tuple[str, str | ColorMap]] = []
    if key:
        options.append(("key", key))
    if color_map is not None:
        options.append(("color_map", color_map))
    return process_mask(FileTask(process_mask, path, path, options=tuple(options)), spec)


def not_a_clean_label(audited: FileResult) -> str | None:
    """Why the audit says this file must not be rewritten as a label: it carries lossy damage
    (LG202: a JPEG file, a lossless file that went through JPEG once, or stray values along its
    class edges; named first, as a certainty for a JPEG), or it looks like an image saved where
    the label should be; else None."""
    for finding in audited.findings:
        if finding.code == "LG202":
            data = finding.data if isinstance(finding.data, dict) else {}
            if data.get("jpeg_damage") or data.get("container") == "jpeg":
                return (f"the audit found JPEG damage (LG202: {finding.message}); remapping its stray values "
                        "would hide the lossy damage, not undo it")
            return f"the audit found JPEG or interpolation damage (LG202: {finding.message})"
    for finding in audited.findings:
        data = finding.data if isinstance(finding.data, dict) else {}
        if data.get("looks_like_image"):
            return f"the audit says it is an image, not a label ({finding.code}: {finding.message})"
    return None


def run_mask_fix(action: str, dataset: Dataset, opener: Opener, transform: Transform, *,
                 key: str | None = None, apply: bool = False, out: str | None = None, command: str = "",
                 audit_color_maps: dict[str, ColorMap | None] | None = None, force: bool = False) -> FixResult:
    """Plan ``transform`` on every mask of ``dataset`` and, with ``apply``, write through the engine:
    each written file must read back as intended and its re-audit (through its colour map in
    ``audit_color_maps``, when it has one) must not be worse. A dry run
    writes each new file into a scratch folder outside the data and checks it the same way."""
    check_out(dataset.root, out)
    result = FixResult(action, apply, notes=list(dataset.notes))
    if dataset.unspecified:
        result.notes.append(unknown_spec_note(dataset.unspecified))
    edits = [_plan_mask(path, output_target(path, dataset.root, out), dataset.root, out, dataset.specs[path], opener,
                        transform, key, audit_color_maps.get(path) if audit_color_maps else None, force)
             for path in dataset.files]
    result.changes.extend(edit.change for edit in edits)
    if not dataset.files:
        result.notes.append("no mask files found")
    if apply:
        apply_edits(result, edits, out if out is not None else dataset.root, command or action)
    else:
        preview_edits(result, edits)
    return result


def _plan_mask(path: str, target: str, root: str, out: str | None, spec: LabelSpec, opener: Opener,
               transform: Transform, key: str | None, audit_color_map: ColorMap | None, force: bool) -> Edit:
    shown, shown_target = display_path(path), display_path(target)
    refusal = target_refusal(path, target, root, out, force)
    if refusal:
        return Edit(FileChange(shown, REFUSED, f"not fixed: {refusal}", shown_target), target)
    state = file_state(path)
    # The audit comes first: a JPEG mask is refused for its damage before its container is.
    before = audit_file(path, spec, key, audit_color_map)
    reason = None if force else not_a_clean_label(before)
    if reason:
        return Edit(FileChange(shown, REFUSED, f"not fixed: {reason}; re-export it from the source annotations, "
                               "or pass --force to rewrite it anyway", shown_target), target)
    try:
        label_file = opener(path, key)
        new, summary, details = transform(label_file)
    except Refusal as exc:
        return Edit(FileChange(shown, REFUSED, f"not fixed: {exc}", shown_target), target)
    except (CannotFix, MissingDependency) as exc:
        return Edit(FileChange(shown, SKIPPED, str(exc), shown_target), target)
    except Exception:
        unreadable = next((f for f in before.findings if f.code == "LG001"), None)
        if unreadable is None:
            raise
        # A file the audit could not read either (truncated, damaged): it has no labels to
        # rewrite, and the other files are fixed as planned.
        return Edit(FileChange(shown, SKIPPED, f"not fixed: it cannot be read (LG001: {unreadable.message})",
                               shown_target), target)
    if new is None:
        change = FileChange(shown, UNCHANGED, summary, shown_target, details)
        return copy_edit(path, target, change) if out is not None else Edit(change, target)

    def write(temp: str) -> None:
        label_file.write(new, temp)

    def verify(temp: str) -> str | None:
        label_file.check(temp, new)
        return worse(before, audit_file(temp, spec, label_file.key))

    return Edit(FileChange(shown, PLANNED, summary, shown_target, details), target, write, verify,
                source=path, state=state)
