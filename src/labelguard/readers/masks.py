"""Read label masks from images (PNG/TIFF/BMP/JPEG), arrays (NPY/NPZ), HDF5 and NIfTI.

The reader decides the format from the file's bytes, not its name, so a JPEG renamed
``.png`` is still known to be a JPEG. It returns the stored array untouched (colour masks
stay (H, W, 3)); decoding colours and judging values is the checks' work.
"""

from __future__ import annotations

import contextlib
import gzip
import importlib
import pkgutil
import io
import logging
import os
import re
import struct
import warnings
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterable

import numpy as np
from PIL import Image, ImageFile, UnidentifiedImageError

from labelguard._optional import require
from labelguard.core import storage
from labelguard.core.cache import note_bytes, note_uncacheable
from labelguard.core.paths import is_below
from labelguard.core.records import MaskRecord, VolumeGeometry
from labelguard.core.text import clipped, plural, shorten, show_name
from labelguard.readers.arrays import DEFLATE_RATIO, DEFLATE_SLACK, NpzArchive, npy_shape, read_npy
from labelguard.readers.base import (EXTENSION_KINDS, ReadError, ThisFileOnly, check_array, check_decoded, check_holds,
                                     open_regular, read_bytes, read_head, register_container, require_to_read, sniff,
                                     stream_size)
from labelguard.readers import containers
from labelguard.readers.integrity import image_problem, nifti_extent, png_problem
from labelguard.readers.png import array_backed, decode_png

# Array keys as the common tools write them: pytorch-3dunet ``raw``/``label``, ``image``/
# ``label``, ``data``/``seg`` (BraTS-style exports), NumPy's ``arr_0``.
LABEL_KEYS = ("label", "labels", "mask", "masks", "seg", "gt", "arr_0")
IMAGE_KEYS = ("image", "images", "img", "raw", "data", "x")
IMAGE_FORMATS = ("png", "jpeg", "tiff", "bmp", "gif", "riff")
# One read of this many bytes sniffs the format and holds a whole PNG mask of usual size.
FIRST_READ = 1 << 16
# Lossy photo formats: a file of these is a photo, never a mask, unless the user says otherwise.
JPEG_EXTENSIONS = (".jpg", ".jpeg")
# Photo formats: a file list naming only these names no label; a file of these that no
# dataset read is a picture, never a label left unaudited (GIF: web pictures and animations).
PHOTO_EXTENSIONS = (*JPEG_EXTENSIONS, ".webp", ".bmp", ".gif")
# Extensions of files that may hold masks; a container a reader adds registers its own.
MASK_EXTENSIONS: list[str] = [".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".npy", ".npz",
                              ".h5", ".hdf5", ".nii", ".nii.gz", ".gif", ".webp"]


def mask_extension(path: str) -> str:
    lower = path.lower()
    if lower.endswith(".nii.gz"):
        return ".nii.gz"
    return os.path.splitext(lower)[1]


def is_mask_candidate(path: str) -> bool:
    return mask_extension(path) in MASK_EXTENSIONS


def _declared(path: str) -> str | None:
    ext = mask_extension(path)
    if ext == ".nii.gz":
        return "nifti"
    return EXTENSION_KINDS.get(ext)


@dataclass(frozen=True)
class ReadRequest:
    """What a container reader gets: the file, its sniffed container, the kind its name
    declares, the array keys asked for, the bytes already read and, for a local file, the
    file open past them (a reader that reads through it opens the file no second time)."""

    path: str
    container: str
    declared: str | None
    key: str | None
    image_key: str | None
    head: bytes
    handle: BinaryIO | None = None


# container name (as :func:`labelguard.readers.base.sniff` says it) -> reader; the fixers'
# editors are registered under the same names (``labelguard.fix._masks.MASK_EDITORS``).
MASK_READERS: dict[str, Callable[[ReadRequest], MaskRecord]] = {}


def mask_reader(*containers: str, magic: Iterable[bytes] = (), extensions: Iterable[str] = ()):
    """Register the decorated function as the reader of masks stored in ``containers``.

    A new container gives its ``magic`` bytes and ``extensions`` here too: that one
    registration makes it sniffable (:func:`labelguard.readers.base.register_container`), its
    files mask candidates by name, and read by this reader; its module goes in
    ``labelguard/readers/containers/``, which this module imports whole."""
    extensions = tuple(extensions)

    def register(reader: Callable[[ReadRequest], MaskRecord]):
        for container in containers:
            MASK_READERS[container] = reader
            register_container(container, magic=magic, extensions=extensions)
        MASK_EXTENSIONS.extend(e for e in extensions if e not in MASK_EXTENSIONS)
        return reader

    return register


def read_mask(path: str, key: str | None = None, image_key: str | None = None) -> MaskRecord:
    """Read the label array of ``path``; ReadError (-> LG001) when it cannot be read.

    In NPZ/HDF5 files ``key`` names the label array and ``image_key`` the image beside it
    (whose shape the record keeps); each defaults to the first of the usual names present.
    """
    if storage.url_scheme(path):
        # One ranged request for the head: the object is fetched whole only by its reader.
        return _read_mask_head(path, key, image_key, read_head(path, FIRST_READ), None)
    with open_regular(path) as handle:
        return _read_mask_head(path, key, image_key, _read_through(handle, FIRST_READ), handle)


def _read_mask_head(path: str, key: str | None, image_key: str | None, head: bytes,
                    handle: BinaryIO | None) -> MaskRecord:
    if not head:
        raise ReadError("empty file (0 bytes)")
    container = sniff(head)
    declared = _declared(path)
    if container is None:
        raise ReadError(
            f"not a known mask format (named {declared or 'with no known extension'}, "
            f"starts with {head[:8]!r})"
        )
    reader = MASK_READERS.get(container)
    if reader is None:
        raise ReadError(f"unsupported format {container}")
    return reader(ReadRequest(path, container, declared, key, image_key, head, handle))


def _read_through(handle: BinaryIO, size: int | None = None, what: str = "file") -> bytes:
    """The next ``size`` bytes of an open file (all the rest when None, as long as the read
    limits allow a file of its size); ReadError with the OS reason."""
    try:
        if size is None:
            check_decoded(f"the {what}", stream_size(handle), "is")
            return handle.read()
        return handle.read(size)
    except OSError as exc:
        raise ReadError(f"cannot read: {exc.strerror or exc}") from None


@mask_reader(*IMAGE_FORMATS)
def _image_reader(request: ReadRequest) -> MaskRecord:
    whole = request.head if len(request.head) < FIRST_READ else None
    if whole is None and request.handle is not None and request.container != "tiff":
        whole = request.head + _read_through(request.handle, what="image")
    if whole is not None and request.handle is not None:
        # The result cache hashes these bytes rather than reading the file once more.
        note_bytes(request.path, whole, os.fstat(request.handle.fileno()))
    return _read_image(request.path, request.container, request.declared, whole)


@mask_reader("npy")
def _npy_reader(request: ReadRequest) -> MaskRecord:
    return _read_npy(request.path, request.declared)


@mask_reader("zip")
def _npz_reader(request: ReadRequest) -> MaskRecord:
    return _read_npz(request.path, request.declared, request.key, request.image_key)


@mask_reader("hdf5")
def _hdf5_reader(request: ReadRequest) -> MaskRecord:
    return _read_hdf5(request.path, request.declared, request.key, request.image_key)


@mask_reader("nifti", "gzip")
def _nifti_reader(request: ReadRequest) -> MaskRecord:
    return _read_nifti(request.path, request.declared, request.handle)


def _read_image(path: str, container: str, declared: str | None, data: bytes | None = None) -> MaskRecord:
    """Decode an image file; ``data`` is its whole content when already read."""
    if container == "tiff":
        record = _read_tiff_stack(path, declared)
        if record is not None:
            return record
    try:
        if data is None:
            data = read_bytes(path, "image")
        if container == "png":
            decoded_fast = decode_png(data)
            if decoded_fast is not None:
                plane, mode, palette = decoded_fast
                return MaskRecord(array=plane, container=container, declared=declared, mode=mode, palette=palette)
        image = _open_image(data, container)
        frames = 1
        if container == "tiff":
            _refuse_ome_elsewhere(getattr(image, "tag_v2", {}).get(270), path)
            frames = getattr(image, "n_frames", 1)
        _check_image_size(image, frames)
        if container == "png":
            # Pillow checks no IDAT checksum and no end chunk when decoding: flipped bytes
            # can decode to wrong labels and a cut-off file to a complete-looking one.
            _verify_png(data)
        decoded = _decode_in_place(image) if container == "png" else None
        if decoded is None and frames > 1:
            decoded = _tiff_frames(image)
        if decoded is None:
            image.load()
    except ReadError:
        raise
    except UnidentifiedImageError:
        raise ReadError(f"cannot decode {container.upper()}: Pillow cannot identify the image data") from None
    except (OSError, SyntaxError, ValueError, EOFError, IndexError, TypeError, KeyError, ZeroDivisionError,
            MemoryError, struct.error) as exc:
        # What Pillow's decoders raise on damaged data: each means the bytes do not decode.
        raise ReadError(f"cannot decode {container.upper()}: {exc or type(exc).__name__}") from None
    palette = None
    if image.mode == "P":
        raw = image.getpalette() or []
        palette = tuple(raw)
    mode = image.mode
    if mode in ("I;16B", "I;16L", "I;16N"):
        mode = "I;16"
    try:
        array = decoded if decoded is not None else np.asarray(image)
    except (ValueError, TypeError) as exc:
        raise ReadError(f"cannot convert {container.upper()} mode {image.mode} to an array: {exc}") from None
    return MaskRecord(array=array, container=container, declared=declared, mode=mode, palette=palette)


# The Pillow plugin of each sniffed image container and the format it registers.
_PILLOW_FORMATS = {
    "png": ("PngImagePlugin", "PNG"), "jpeg": ("JpegImagePlugin", "JPEG"), "tiff": ("TiffImagePlugin", "TIFF"),
    "bmp": ("BmpImagePlugin", "BMP"), "gif": ("GifImagePlugin", "GIF"), "riff": ("WebPImagePlugin", "WEBP"),
}
_OPENERS: dict[str, tuple[Callable, Callable | None]] = {}
# Bytes per band of Pillow's modes (the rest store one byte per band).
_MODE_BYTES = {"I": 4, "F": 4, "I;16": 2, "I;16B": 2, "I;16L": 2, "I;16N": 2}


def _opener(container: str) -> tuple[Callable, Callable | None]:
    """(factory, accept) of the Pillow plugin of ``container``, its module imported on first use."""
    opener = _OPENERS.get(container)
    if opener is None:
        module, name = _PILLOW_FORMATS[container]
        importlib.import_module(f"PIL.{module}")
        opener = _OPENERS[container] = Image.OPEN[name]
    return opener


# How much of a paired image in object storage is fetched for its shape at first (one ranged
# request): a PNG's, GIF's or BMP's header is in its first bytes, and a JPEG's frame header
# follows its metadata segments, which rarely pass 64 KiB.
REMOTE_HEADER_BYTES = 1 << 16


def _open_image(data: bytes | BinaryIO, container: str) -> ImageFile.ImageFile:
    """The image in ``data`` (its bytes, or the open file), opened (not decoded).

    The bytes name the format, so the image is opened as ``Image.open`` opens that format,
    through its plugin alone: ``Image.open`` of a stream imports five plugins first (some
    10 ms of start-up) and tries formats in turn. What that plugin cannot open goes to
    ``Image.open``, which tries every format and fails as it fails.

    Pillow refuses images over twice ``Image.MAX_IMAGE_PIXELS`` (179 million pixels) as
    decompression bombs; labelguard's own ``max_pixels`` limit decides instead (checked by
    the caller before anything is decoded), so the plugin runs no bomb check, and Pillow's
    global limit is left as it is."""
    stream = io.BytesIO(data) if isinstance(data, bytes) else data
    factory, accept = _opener(container)
    prefix = stream.read(16)
    stream.seek(0)
    accepted = not accept or accept(prefix)
    if accepted and not isinstance(accepted, str):
        try:
            return factory(stream, "")
        except (SyntaxError, IndexError, TypeError, struct.error):  # Image.open's "not this format"
            stream.seek(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            return Image.open(stream)
        except Image.DecompressionBombError:
            stream.seek(0)
    return factory(stream, "")


def _check_image_size(image: Image.Image, frames: int) -> None:
    """ReadError when the image's declared size is over the read limits."""
    width, height = image.size
    bands = len(image.getbands())
    shape: tuple[int, ...] = (frames, height, width) if frames > 1 else (height, width)
    if bands > 1:
        shape += (bands,)
    check_array(f"the {image.format or 'image'} header", shape, _MODE_BYTES.get(image.mode, 1),
                f"{image.mode}-mode")


def _verify_png(data: bytes) -> None:
    """ReadError when a PNG's chunks are not whole (cut short, a critical chunk's checksum
    wrong, no IEND): the walk an image's check makes (:func:`labelguard.readers.integrity.png_problem`)."""
    problem = png_problem(data)
    if problem is not None:
        raise ReadError(f"the PNG file {problem}")


def _decode_in_place(image: Image.Image) -> np.ndarray | None:
    """Decode an 8-bit single-band image straight into a new array (:func:`array_backed`;
    ``np.asarray(image)`` would copy the pixels out through ``tobytes()``, a third of the PNG
    decode itself); None where not possible. The result is used only when Pillow kept that
    memory to the end of the load; otherwise the caller decodes normally."""
    if image.mode not in ("L", "P") or ImageFile.LOAD_TRUNCATED_IMAGES:
        return None
    width, height = image.size
    array, backed = array_backed(image.mode, height, width)
    memory = image.im = backed.im
    image.load()
    if image.im is not memory or image.mode not in ("L", "P"):
        return None
    array.flags.writeable = False
    return array


def _tiff_frames(image: Image.Image) -> np.ndarray:
    """Every page of a multi-page TIFF opened by Pillow, as one (pages, H, W) volume: a stack
    is never read as its first page. ReadError when the pages differ or one cannot be read."""
    frames = []
    for index in range(image.n_frames):  # type: ignore[attr-defined]  # only images of several pages come here
        image.seek(index)
        image.load()
        frames.append(np.asarray(image))
    shapes = sorted({f.shape for f in frames})
    if len(shapes) > 1 or len({f.dtype for f in frames}) > 1:
        raise ReadError(f"inconsistent multi-page TIFF: its {len(frames)} pages differ in shape or type "
                        f"({', '.join(str(s) for s in shapes[:4])}); it is no single volume")
    return np.stack(frames)


class _TiffWarnings(logging.Handler):
    """Collects what tifffile logs while reading: it reports a broken page chain (a file cut
    off after a page) by logging and returning the pages before it."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _read_tiff_stack(path: str, declared: str | None) -> MaskRecord | None:
    """Multi-page, float and 16-bit TIFFs through tifffile when it is installed.

    A truncated stack or one whose pages do not form one volume is a ReadError, never its
    first page or the pages before the cut."""
    try:
        tifffile = require("tifffile")
    except ImportError:
        return None
    logger = logging.getLogger("tifffile")
    problems = _TiffWarnings()
    logger.addHandler(problems)
    try:
        with tiff_file(tifffile, path) as tiff:
            pages = len(tiff.pages)
            _refuse_ome_elsewhere(_first_description(tiff), path)
            series = tiff.series
            if len(series) > 1:
                shapes = shorten(series, 4, lambda s: str(tuple(s.shape)))
                raise ReadError(f"inconsistent multi-page TIFF: its {pages} pages form {len(series)} "
                                f"images of different shapes ({shapes}); it is no single volume")
            if series:
                check_array("the TIFF header", tuple(series[0].shape), series[0].dtype.itemsize, series[0].dtype)
            array = tiff.asarray()
    except ReadError:
        raise
    except Exception as exc:  # tifffile raises many types on corrupt files
        raise ReadError(f"cannot decode TIFF: {exc}") from None
    finally:
        logger.removeHandler(problems)
    if problems.messages:
        raise ReadError(f"truncated or damaged TIFF ({plural(pages, 'page')} readable): "
                        f"{problems.messages[0]}")
    return MaskRecord(array=np.asarray(array), container="tiff", declared=declared, mode=str(array.dtype))


def _read_npy(path: str, declared: str | None) -> MaskRecord:
    array = read_npy(path)
    return MaskRecord(array=array, container="npy", declared=declared, mode=str(array.dtype))


def pick_key(keys: list[str], key: str | None, path_kind: str) -> str:
    """The key of the label array among ``keys`` of an NPZ or HDF5 file: ``key`` (--key) when
    given, else the first of :data:`LABEL_KEYS` there, else the one array; ReadError naming
    the keys otherwise (the audit and fix pick alike)."""
    if key is not None:
        if key not in keys:
            raise ReadError(f"{path_kind} has no array {key!r} (keys: {', '.join(keys) or 'none'})")
        return key
    for candidate in LABEL_KEYS:
        if candidate in keys:
            return candidate
    if len(keys) == 1:
        return keys[0]
    raise ReadError(
        f"{path_kind} has no label array among {', '.join(keys) or 'no keys'}; "
        f"expected one of {', '.join(LABEL_KEYS)} or pass --key"
    )


def _image_key(keys: list[str], label_key: str, key: str | None, path_kind: str) -> str | None:
    if key is not None:
        if key not in keys:
            raise ReadError(f"{path_kind} has no image array {key!r} (keys: {', '.join(keys) or 'none'})")
        if key == label_key:
            raise ReadError(f"the image key and the label key are both {key!r}")
        return key
    return next((k for k in IMAGE_KEYS if k in keys and k != label_key), None)


def _read_npz(path: str, declared: str | None, key: str | None, image_key: str | None = None) -> MaskRecord:
    with NpzArchive(path) as archive:
        chosen = pick_key(archive.keys, key, "NPZ")
        image_key = _image_key(archive.keys, chosen, image_key, "NPZ")
        array = archive.array(chosen)
        image_shape = archive.header(image_key).shape if image_key else None
    return MaskRecord(array=array, container="zip", declared=declared, mode=str(array.dtype),
                      image_shape=image_shape, key=chosen, image_key=image_key)


def _read_hdf5(path: str, declared: str | None, key: str | None, image_key: str | None = None) -> MaskRecord:
    h5py = require_to_read("h5py", "read HDF5 masks")
    remark = None
    try:
        with _hdf5_file(h5py, path) as handle:
            keys, broken, external = _hdf5_datasets(handle, h5py, path)
            chosen = pick_key(keys + list(external) + list(broken), key, "HDF5 file")
            if chosen in broken:
                raise ReadError(broken[chosen])
            if chosen in external:
                array = _read_external(h5py, chosen, *external[chosen])
                remark = EXTERNAL_LABEL
            else:
                array = _read_dataset(handle[chosen], chosen)
            image_key = _image_key(keys, chosen, image_key, "HDF5 file")
            image_shape = tuple(handle[image_key].shape or ()) if image_key else None
    except ReadError:
        raise
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as exc:
        raise ReadError(f"cannot read HDF5: {exc}") from None
    return MaskRecord(array=array, container="hdf5", declared=declared, mode=str(array.dtype),
                      image_shape=image_shape, key=chosen, image_key=image_key, remark=remark)


# Said of the files whose label an HDF5 external link holds (the audit reads it, fix refuses
# to rewrite the file): the report counts them under this remark.
EXTERNAL_LABEL = ("label read through an HDF5 external link to a file beside it (`labelguard fix` refuses "
                  "to rewrite such files: fix the file the link names)")


def _hdf5_file(h5py, path: str):
    """The HDF5 file at ``path`` opened for reading: by its name on this machine, from its
    bytes (an in-memory file) on object storage."""
    if storage.url_scheme(path):
        return h5py.File(open_regular(path, "HDF5 file"), "r")
    return h5py.File(path, "r")


def _read_dataset(dataset, name: str) -> np.ndarray:
    if dataset.shape is None:
        raise ReadError(f"HDF5 dataset {name!r} has a null dataspace: it holds no array")
    check_array(f"HDF5 dataset {name!r}", tuple(dataset.shape), dataset.dtype.itemsize, dataset.dtype)
    return np.asarray(dataset[()])


# Why a container feature that names another file is not read (or, by fix, written).
READS_ONLY_ITS_OWN = "labelguard reads only data stored in the file itself"


def named_file(name: str) -> str:
    """A file name that a container holds, as a message shows it: escaped and cut short (it
    is data, and may hold anything)."""
    return show_name(clipped(name, 160))


def hdf5_data_elsewhere(dataset) -> str | None:
    """Where the h5py ``dataset`` keeps its data outside its own file, in words ("is an HDF5
    virtual dataset mapped from a.h5", "keeps its raw data in external storage: x.bin (HDF5
    external storage)"), or None when its file holds it. HDF5 opens those files by name
    (relative names against the working folder) when the data is read or written, so the
    audit never reads such a dataset and fix never rewrites its file."""
    if dataset.is_virtual:
        files = sorted({source.file_name for source in dataset.virtual_sources() if source.file_name != "."})
        if files:
            return f"is an HDF5 virtual dataset mapped from {shorten(files, 3, named_file)}"
    external = dataset.external
    if external:
        files = list(dict.fromkeys(name for name, _, _ in external))
        return f"keeps its raw data in external storage: {shorten(files, 3, named_file)} (HDF5 external storage)"
    return None


def _read_external(h5py, name: str, target: str, inner: str) -> np.ndarray:
    """The dataset an external link ``name`` names: ``inner`` in ``target`` (a regular file
    beside the linking one, checked before), every part of ``inner`` a plain member of that
    file: a link that leads further is refused, not followed."""
    with open_regular(target, "HDF5 file"):
        pass  # a regular file, never a pipe or a device, before HDF5 opens it by name
    with h5py.File(target, "r") as other:
        node = other
        parts = [part for part in inner.split("/") if part]
        for depth, part in enumerate(parts):
            link = node.get(part, getlink=True)
            if not isinstance(link, h5py.HardLink):
                raise ReadError(f"the HDF5 external link {name!r} leads to {'/'.join(parts[:depth + 1])!r} in "
                                f"{os.path.basename(target)}, which is a link again: not followed")
            node = node[part]
        if not isinstance(node, h5py.Dataset) or node.is_virtual:
            raise ReadError(f"the HDF5 external link {name!r} names {inner!r} in {os.path.basename(target)}, "
                            "which is no plain dataset")
        elsewhere = hdf5_data_elsewhere(node)
        if elsewhere:
            raise ReadError(f"the HDF5 external link {name!r} names {inner!r} in {os.path.basename(target)}, "
                            f"which {elsewhere}; {READS_ONLY_ITS_OWN}")
        return _read_dataset(node, name)


def _hdf5_elsewhere(handle, name: str, h5py) -> str | None:
    """Why the dataset ``name`` is not read when it keeps its data in other files
    (:func:`hdf5_data_elsewhere`), or None (external links are read or refused by
    :func:`_hdf5_datasets`)."""
    item = handle.get(name)
    elsewhere = hdf5_data_elsewhere(item) if isinstance(item, h5py.Dataset) else None
    return f"{name!r} {elsewhere}; {READS_ONLY_ITS_OWN}" if elsewhere else None


def _hdf5_datasets(handle, h5py, path: str) -> tuple[list[str], dict[str, str], dict[str, tuple[str, str]]]:
    """(names of the file's top-level datasets, name -> why for links that cannot be followed
    or are not followed, name -> (file, path) for external links that are read).

    An external link to a regular file in the linking file's folder (or below it) is read
    by :func:`_read_external`; one that leaves that folder, and a virtual dataset mapped from
    other files, is not: the audit reads nothing outside the files it was given. A soft link
    that loops (``label -> /label``, or ``a -> /b -> /a``) makes HDF5 give up after its link
    limit; the link is named with its target, not read."""
    datasets, broken, external = [], {}, {}
    for name in handle.keys():
        try:
            link = handle.get(name, getlink=True)
            if isinstance(link, h5py.ExternalLink):
                # What it reads depends on another file and on links resolved on the way.
                note_uncacheable("an HDF5 external link")
                target = _beside(path, link.filename)
                if target is not None:
                    external[name] = (target, link.path)
                elif storage.url_scheme(path):
                    broken[name] = (f"{name!r} is an HDF5 external link to {_link_text(link)}; links "
                                    "between objects of object storage are not followed: audit that file")
                else:
                    broken[name] = (f"{name!r} is an HDF5 external link to {_link_text(link)}, outside "
                                    "the folder of the file that links to it; labelguard reads nothing outside "
                                    "the files it audits: audit that file")
                continue
            elsewhere = _hdf5_elsewhere(handle, name, h5py)
            if elsewhere:
                broken[name] = elsewhere
            elif isinstance(handle[name], h5py.Dataset):
                datasets.append(name)
        except (KeyError, RuntimeError, OSError, ValueError) as exc:
            link = handle.get(name, getlink=True)
            target = f" to {link.path!r}" if isinstance(link, h5py.SoftLink) else ""
            loops = "too many links" in str(exc)
            broken[name] = (f"the HDF5 link {name!r}{target} cannot be followed: "
                            + ("it loops (soft links that lead back to themselves)" if loops else str(exc)))
    return datasets, broken, external


def _link_text(link) -> str:
    return named_file(f"{link.filename}:{link.path}")


def _beside(path: str, filename: str) -> str | None:
    """The file that the file ``path`` names as ``filename`` (an HDF5 external link, the other
    half of a NIfTI pair), resolved against its folder with links followed, when it is a
    regular file in that folder or below it, and not ``path`` itself; else None (always, for
    a file on object storage)."""
    if storage.url_scheme(path):
        return None
    folder = os.path.dirname(os.path.realpath(path))
    if os.path.isabs(filename):
        return None
    target = os.path.realpath(os.path.join(folder, filename))
    if not (is_below(target, folder) and os.path.isfile(target)) or target == os.path.realpath(path):
        return None
    return target


def _read_nifti(path: str, declared: str | None, handle: BinaryIO | None = None) -> MaskRecord:
    nib = require_to_read("nibabel", "read NIfTI masks")
    try:
        with _nifti_image(nib, path, handle) as (image, size, gzipped):
            _check_nifti_size(image.header, size, gzipped)
            array = np.asanyarray(image.dataobj)
            geometry = nifti_geometry(image.header)
    except ReadError:
        raise
    except Exception as exc:  # nibabel raises ImageFileError, EOFError, zlib.error, ...
        raise ReadError(f"cannot read NIfTI: {exc or type(exc).__name__}") from None
    return MaskRecord(array=np.asarray(array), container="nifti", declared=declared, mode=str(array.dtype),
                      geometry=geometry)


# NIfTI's affine maps voxels to RAS+ millimetres; ITK (and so nnU-Net's SimpleITK reader)
# says positions in LPS: x and y change sign.
RAS_TO_LPS = np.array([[-1.0], [-1.0], [1.0]])

# ITK's NIfTI reader (SimpleITK's, so nnU-Net's) and nibabel's best affine (MONAI's, TorchIO's)
# can place one file's voxels apart, and a label written by one family beside an image written
# by the other is aligned for its own family only. ITK's rule, as its NiftiImageIO applies it:
# * the spacing is always the header's voxel sizes (pixdim, in mm by its unit code), never
#   the lengths of the matrix's columns;
# * with sform and qform codes both 0 the first voxel lies at 0 with ITK's own axes (no
#   direction): nibabel centres such a volume instead;
# * otherwise the sform is taken only when it is a rotation once its column lengths are
#   divided out (a sheared sform never is) and either there is no qform (code 0), or the
#   sform says scanner coordinates (code 1), or it agrees with the qform to 1e-4 in rotation,
#   voxel size and offset (so a code-2 sform that moved away from its qform loses to it);
#   two matrices equal element by element also give the sform. Else the qform is taken; a
#   sheared sform without a qform ITK does not read at all.
# nibabel takes the sform whenever its code is above 0, sheared or not, then the qform.
ITK_TOLERANCE = 1e-4
ITK_SAME_ELEMENT = 1e-5
ITK_SAME_OFFSET = 1e-7
# NIfTI's xyzt_units (its low three bits) as a factor to mm: metre, mm, micron.
SPACE_UNIT_TO_MM = {1: 1e3, 2: 1.0, 3: 1e-3}
NO_TRANSFORM = "no transform (sform and qform codes 0)"


def nifti_geometry(header) -> VolumeGeometry | None:
    """Spacing, origin and direction of a NIfTI volume as ITK (SimpleITK, nnU-Net) reads them,
    in LPS, with nibabel's reading beside it where the two differ (see the rule above). None
    when the header gives no usable geometry (a zero or non-finite voxel size)."""
    spatial = min(len(header.get_data_shape()), 3)
    pixdim = np.asarray(header["pixdim"], dtype=np.float64)
    sizes = np.abs(pixdim[1:4])
    unit = SPACE_UNIT_TO_MM.get(int(header["xyzt_units"]) & 7, 1.0)
    itk = _itk_reading(header, sizes, tuple(float(z) * unit for z in sizes[:spatial]))
    nibabel = _nibabel_reading(header, spatial)
    if itk is None:
        return nibabel if nibabel is None else VolumeGeometry(
            nibabel.spacing, nibabel.origin, nibabel.direction,
            f"{nibabel.source}, as nibabel reads it (ITK reads no sheared sform without a qform)")
    if nibabel is None or (nibabel.spacing, nibabel.origin, nibabel.direction) == (itk.spacing, itk.origin,
                                                                                   itk.direction):
        return itk
    return VolumeGeometry(itk.spacing, itk.origin, itk.direction, itk.source, nibabel)


def _itk_reading(header, sizes: np.ndarray, spacing: tuple[float, ...]) -> VolumeGeometry | None:
    if not (np.isfinite(spacing).all() and all(spacing)):
        return None
    sform_code, qform_code = int(header["sform_code"]), int(header["qform_code"])
    if sform_code <= 0 and qform_code <= 0:
        return VolumeGeometry(spacing, (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), NO_TRANSFORM)
    sform = np.asarray(header.get_sform(), dtype=np.float64) if sform_code > 0 else np.zeros((4, 4))
    qform = _niftilib_qform(header, sizes) if qform_code > 0 else np.diag([*np.where(sizes > 0, sizes, 1.0), 1.0])
    if not np.isfinite(sform).all():
        sform = np.zeros((4, 4))
    if not np.isfinite(qform).all():
        return None
    same = bool(np.all(np.abs(sform[:3, :3] - qform[:3, :3]) <= ITK_SAME_ELEMENT)
                and np.abs(sform[:3, 3] - qform[:3, 3]).sum() <= ITK_SAME_OFFSET)
    rigid = sform_code > 0 and _rotation_once_scaled(sform[:3, :3])
    if same or rigid and (qform_code <= 0 or sform_code == 1 or _agree(sform, qform)):
        chosen, source = sform, "sform"
    elif qform_code > 0:
        chosen, source = qform, "qform"
    else:
        return None
    return _lps_geometry(chosen, spacing, source)


def _nibabel_reading(header, spatial: int) -> VolumeGeometry | None:
    try:
        affine = np.asarray(header.get_best_affine(), dtype=np.float64)
        spacing = tuple(abs(float(z)) for z in header.get_zooms()[:spatial])
    except Exception:  # nibabel refuses a negative voxel size or a qfac other than 1 or -1: no reading
        return None
    sform_code, qform_code = int(header["sform_code"]), int(header["qform_code"])
    source = "sform" if sform_code > 0 else "qform" if qform_code > 0 else "voxel sizes alone (sform and qform " \
        "codes 0: nibabel centres the volume)"
    if not (np.isfinite(spacing).all() and all(spacing)):
        return None
    return _lps_geometry(affine, spacing, source)


def _lps_geometry(affine: np.ndarray, spacing: tuple[float, ...], source: str) -> VolumeGeometry | None:
    lps = affine[:3] * RAS_TO_LPS
    matrix = lps[:, :3]
    lengths = np.linalg.norm(matrix, axis=0)
    if not (np.isfinite(lps).all() and lengths.all()):
        return None
    direction = matrix / lengths
    return VolumeGeometry(spacing, tuple(float(v) for v in lps[:, 3]), tuple(float(v) for v in direction.ravel()),
                          source)


def _niftilib_qform(header, sizes: np.ndarray) -> np.ndarray:
    """The qform's matrix as the NIfTI reference library builds it (which ITK reads): a
    quaternion whose first part is rebuilt from the other three, voxel sizes of 0 taken as 1,
    qfac -1 when pixdim[0] is negative and 1 otherwise."""
    b, c, d = (float(header[name]) for name in ("quatern_b", "quatern_c", "quatern_d"))
    a = 1.0 - (b * b + c * c + d * d)
    if a < 1e-7:
        norm = (b * b + c * c + d * d) ** 0.5 or 1.0
        b, c, d, a = b / norm, c / norm, d / norm, 0.0
    else:
        a = a ** 0.5
    rotation = np.array([
        [a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)],
        [2 * (b * c + a * d), a * a + c * c - b * b - d * d, 2 * (c * d - a * b)],
        [2 * (b * d - a * c), 2 * (c * d + a * b), a * a + d * d - c * c - b * b]])
    scale = np.where(sizes > 0, sizes, 1.0)
    if float(header["pixdim"][0]) < 0:
        scale = scale * np.array([1.0, 1.0, -1.0])
    qform = np.eye(4)
    qform[:3, :3] = rotation * scale
    qform[:3, 3] = [float(header[name]) for name in ("qoffset_x", "qoffset_y", "qoffset_z")]
    return qform


def _rotation_once_scaled(matrix: np.ndarray) -> bool:
    """The matrix is invertible and its columns, each divided by its length, are orthonormal
    (to ITK's 1e-4): no shear."""
    lengths = np.linalg.norm(matrix, axis=0)
    if not lengths.all() or abs(np.linalg.det(matrix)) < np.finfo(np.float64).eps:
        return False
    unit = matrix / lengths
    return bool(np.all(np.abs(unit @ unit.T - np.eye(3)) <= ITK_TOLERANCE))


def _agree(sform: np.ndarray, qform: np.ndarray) -> bool:
    """The sform and the qform agree to ITK's 1e-4 in voxel sizes, rotation and offset."""
    sform_lengths, qform_lengths = np.linalg.norm(sform[:3, :3], axis=0), np.linalg.norm(qform[:3, :3], axis=0)
    if not qform_lengths.all():
        return False
    return bool(np.all(np.abs(sform_lengths - qform_lengths) <= ITK_TOLERANCE)
                and np.all(np.abs(sform[:3, :3] / sform_lengths - qform[:3, :3] / qform_lengths) <= ITK_TOLERANCE)
                and np.all(np.abs(sform[:3, 3] - qform[:3, 3]) <= ITK_TOLERANCE))


# The names nibabel reads as one image of several files, opening the others by the name of the
# one it is given: a NIfTI or Analyze header with its voxels (x.hdr, x.img, and SPM's x.mat),
# Philips PAR/REC, AFNI's HEAD/BRIK.
SEVERAL_FILES = re.compile(r"\.(hdr|img|par|rec|head|brik)(\.gz|\.bz2|\.zst|\.z)?$", re.IGNORECASE)
NIFTI_PAIR_PARTS = {"hdr": ("header", "img"), "img": ("image", "hdr")}


@contextlib.contextmanager
def _nifti_image(nib, path: str, handle: BinaryIO | None = None):
    """(image, bytes of the file its voxels are in, whether that file is gzip-compressed) of
    the NIfTI file at ``path``, open while the caller reads it: read through ``handle``, the
    file already open, when given (a file of one image), else opened here once. The two
    files of a header/image pair are opened here (:func:`_nifti_pair`), an object of object
    storage is read from its bytes."""
    if SEVERAL_FILES.search(path) and not storage.url_scheme(path):
        # What it reads depends on the other file of the pair.
        note_uncacheable("a NIfTI header whose voxels are in the .img beside it")
        with contextlib.ExitStack() as files:
            yield _nifti_pair(nib, path, files)
        return
    with contextlib.ExitStack() as files:
        if handle is None:
            handle = files.enter_context(io.BytesIO(read_bytes(path, "NIfTI file")) if storage.url_scheme(path)
                                         else open_regular(path, "NIfTI file"))
        handle.seek(0)
        gzipped = handle.read(2) == b"\x1f\x8b"
        yield _nifti_from_file(nib, handle), stream_size(handle), gzipped


def _nifti_pair(nib, path: str, files: contextlib.ExitStack):
    """:func:`_nifti_image` of one file of a NIfTI header/image pair (``x.hdr`` with ``x.img``,
    both ``.gz`` or neither), its two files opened into ``files`` and given to nibabel open:
    the other file must be a regular file beside ``path`` (:func:`_beside`), so neither a link
    out of the folder nor a named pipe is ever opened. Other images of several files
    (Analyze, PAR/REC, AFNI) are not read."""
    match = SEVERAL_FILES.search(path)
    assert match is not None  # not a user mistake: called only for a path SEVERAL_FILES matches
    suffix, compression = match.group(1), match.group(2) or ""
    name = os.path.basename(path)
    if suffix.lower() not in NIFTI_PAIR_PARTS or compression.lower() not in ("", ".gz"):
        raise ReadError(f"{named_file(name)} is one of the files of an image that nibabel reads from several "
                        "files; labelguard reads NIfTI files (.nii, .nii.gz) and NIfTI header/image pairs "
                        "(.hdr with .img) only")
    role, other_suffix = NIFTI_PAIR_PARTS[suffix.lower()]
    other_name = name[:len(name) - len(match.group())] + "." + (
        other_suffix.upper() if suffix.isupper() else other_suffix) + compression
    other = _beside(path, other_name)
    if other is None:
        other_path = os.path.join(os.path.dirname(path), other_name)
        leads = os.path.realpath(other_path)
        raise ReadError(f"{named_file(name)} is half of a NIfTI header/image pair whose other file, "
                        f"{named_file(other_name)}, is not a regular file beside it"
                        + (f" (it leads to {named_file(leads)})" if os.path.islink(other_path) else "")
                        + ": not read (labelguard reads a pair only when both its files lie side by side in "
                        "one folder)")
    opened = {role: files.enter_context(open_regular(path, "NIfTI file")),
              "image" if role == "header" else "header": files.enter_context(open_regular(other, "NIfTI file"))}
    gzipped = compression != ""
    streams = {part: files.enter_context(gzip.GzipFile(fileobj=handle)) if gzipped else handle
               for part, handle in opened.items()}
    head = streams["header"].read(540)
    streams["header"].seek(0)
    for kind in (nib.Nifti1Pair, nib.Nifti2Pair):
        if kind.header_class.may_contain_header(head):
            image = kind.from_file_map({part: nib.FileHolder(fileobj=stream) for part, stream in streams.items()})
            return image, os.fstat(opened["image"].fileno()).st_size, gzipped
    raise ReadError("the .hdr of the pair holds no NIfTI-1 or NIfTI-2 header (no NIfTI magic): labelguard reads "
                    "NIfTI header/image pairs, not Analyze 7.5 ones")


def _nifti_from_file(nib, handle: BinaryIO):
    """The NIfTI-1 or NIfTI-2 image in the open file ``handle`` (gzip-compressed or not), its
    voxels read through it when asked for: nibabel's own loading opens the file by name, once
    to sniff and again for the header and the voxels."""
    handle.seek(0)
    stream: BinaryIO = handle
    if handle.read(2) == b"\x1f\x8b":
        handle.seek(0)
        stream = gzip.GzipFile(fileobj=handle)  # type: ignore[assignment]  # a binary file as any other
    stream.seek(0)
    head = stream.read(540)
    stream.seek(0)
    for kind in (nib.Nifti1Image, nib.Nifti2Image):
        if kind.header_class.may_contain_header(head):
            holder = nib.FileHolder(fileobj=stream)
            return kind.from_file_map({"header": holder, "image": holder})
    raise ReadError("no NIfTI-1 or NIfTI-2 header (a .hdr/.img pair is read only from a local folder)")


def _check_nifti_size(header, size: int, gzipped: bool) -> None:
    """ReadError when the volume a NIfTI header declares is over the read limits or more than
    the file of ``size`` bytes can hold: its bytes after the header in a ``.nii``, what
    deflate can expand them into in a ``.nii.gz`` (``gzipped``)."""
    dtype = header.get_data_dtype()
    nbytes = check_array("the NIfTI header", tuple(int(side) for side in header.get_data_shape()),
                         dtype.itemsize, dtype)
    # What the file must hold is reckoned as an image's check reckons it (one policy).
    offset, nbytes = nifti_extent(header.binaryblock, pair=True) or (int(header.get_data_offset()), nbytes)
    if gzipped:
        check_decoded("the NIfTI volume", offset + nbytes, "needs")
        if offset + nbytes > DEFLATE_RATIO * size + DEFLATE_SLACK:
            raise ReadError(f"the NIfTI header declares {nbytes:,} bytes of voxels, more than the "
                            f"{size:,} gzip-compressed bytes of the file can expand to: truncated, or a "
                            "damaged header")
    else:
        check_holds("the NIfTI header", nbytes, size - offset)


# The bytes that tell an image's container: a NIfTI-2 header's 540 and the first bytes of
# every other kind.
HEADER_BYTES = 540


@dataclass(frozen=True)
class ImageHeader:
    """What a paired image's header says: its array shape and, for a volume whose header
    places it in space (NIfTI), where its voxels lie."""

    shape: tuple[int, ...]
    geometry: VolumeGeometry | None = None


def read_image_header(path: str, data: bytes | None = None) -> ImageHeader:
    """The header of an image file, without decoding its pixels: ``data`` is its whole
    content when already read; else a local file is opened once for it.

    2D images give (H, W) or (H, W, C); NIfTI gives its header shape and geometry; arrays
    their shape.
    """
    if data is not None:
        return _image_header(path, data[:FIRST_READ], io.BytesIO(data))
    if storage.url_scheme(path):
        return _image_header(path, read_head(path), None)
    with open_regular(path) as handle:
        return _image_header(path, _read_through(handle, HEADER_BYTES), handle)


def image_shape(path: str) -> tuple[int, ...]:
    """The array shape of an image file from its header (:func:`read_image_header`)."""
    return read_image_header(path).shape


def read_paired_image(path: str, mode: str) -> tuple[ImageHeader, str | None]:
    """The header of the image at ``path`` (:func:`read_image_header`) and what makes it
    unreadable to a loader, checked as ``mode`` says
    (:func:`labelguard.readers.integrity.image_problem`), from one open: the check reads the
    open file in pieces as it needs them (a ``.nii.gz`` its head and tail), never the whole
    file into memory. ReadError when the file cannot be read (LG001)."""
    if storage.url_scheme(path):
        return read_image_header(path), image_problem(path, mode)
    with open_regular(path) as handle:
        problem = image_problem(path, mode, handle=handle)
        handle.seek(0)
        return _image_header(path, _read_through(handle, HEADER_BYTES), handle), problem


def _image_header(path: str, head: bytes, handle: BinaryIO | None) -> ImageHeader:
    """:func:`read_image_header` of the file that starts with ``head``, read through
    ``handle`` where its container allows (a TIFF, an NPY, an NPZ or an HDF5 file is opened
    again by its reader)."""
    if not head:
        raise ReadError("empty file (0 bytes)")
    container = sniff(head)
    if container in IMAGE_FORMATS:
        if handle is not None and container != "tiff":
            handle.seek(0)
            return ImageHeader(_header_shape(handle, container))
        return ImageHeader(_image_header_shape(path, container))
    if container == "npy":
        return ImageHeader(npy_shape(path))
    if container in ("nifti", "gzip"):
        nib = require_to_read("nibabel", "read NIfTI images")
        try:
            with _nifti_image(nib, path, handle) as (image, _, _):
                return ImageHeader(tuple(image.shape), nifti_geometry(image.header))
        except ReadError:
            raise
        except Exception as exc:  # nibabel raises ImageFileError, EOFError, zlib.error, ...
            raise ReadError(f"cannot read NIfTI header: {exc or type(exc).__name__}") from None
    if container in ("zip", "hdf5"):
        return ImageHeader(tuple(read_mask_image_array_shape(path, container)))
    raise ReadError(f"not a known image format (starts with {head[:8]!r})")


def _image_header_shape(path: str, container: str) -> tuple[int, ...]:
    """The shape of a Pillow-read image (a TIFF's from tifffile when installed). An image in
    object storage is first fetched only as far as :data:`REMOTE_HEADER_BYTES` (a pair check
    needs its shape, and images outweigh their masks): a header that does not fit there (a
    JPEG with large metadata segments before its frame header) fetches the whole object."""
    if container == "tiff":
        shape = _tiff_shape(path)
        if shape is not None:
            return shape
    elif storage.url_scheme(path):
        head = read_bytes(path, "image", REMOTE_HEADER_BYTES)
        try:
            return _header_shape(io.BytesIO(head), container)
        except ReadError:
            if len(head) < REMOTE_HEADER_BYTES:
                raise  # that was the whole object
    with open_regular(path, "image") as handle:
        return _header_shape(handle, container)


def _header_shape(handle: BinaryIO, container: str) -> tuple[int, ...]:
    try:
        image = _open_image(handle, container)
        width, height = image.size
        bands = len(image.getbands())
        # Without tifffile a stack is read by Pillow: its pages are slices, as
        # _tiff_frames reads a mask stack, never one page standing for the volume.
        pages = getattr(image, "n_frames", 1) if container == "tiff" else 1
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError, IndexError, TypeError,
            KeyError, ZeroDivisionError, struct.error) as exc:
        raise ReadError(f"cannot read image header: {exc or type(exc).__name__}") from None
    plane = (height, width) if bands == 1 else (height, width, bands)
    return (pages, *plane) if pages > 1 else plane


@contextlib.contextmanager
def tiff_file(tifffile, path: str):
    """``tifffile.TiffFile`` of the regular file at ``path``, which reads no other file."""
    with open_regular(path, "TIFF file") as handle:
        raw = getattr(handle, "raw", None)  # an object of object storage is in memory already
        with (ThisFileOnly(raw) if raw is not None else handle) as stream, \
                tifffile.TiffFile(stream, name=os.path.basename(path)) as tiff:
            yield tiff


def _first_description(tiff) -> str | None:
    return tiff.pages[0].description if len(tiff.pages) else None


def ome_elsewhere(description: object, path: str) -> str | None:
    """Why the TIFF at ``path`` is not read when its OME-XML (``description``, its first
    ImageDescription) places image planes in other files, or None. Each ``TiffData`` names
    its file by a UUID: the file's own (the root's ``UUID``; without one, a ``FileName``
    that is the file's own name) or another's, which tifffile would open by its
    ``FileName``."""
    # tifffile's test of an OME-TIFF: the description ends with the root's end tag.
    if not isinstance(description, str) or not description[-10:].strip().endswith("OME>"):
        return None
    from labelguard.readers.xml import parse_xml  # imported by OME-TIFFs only

    try:
        root = parse_xml(description.encode("utf-8", "surrogateescape"), "OME-XML description")
    except ReadError as exc:
        raise ReadError(f"its OME-XML (the TIFF's description) cannot be read: {exc}") from None
    own_uuid, own_name = root.get("UUID"), os.path.basename(path).lower()
    others = []
    for element in root.iter():
        if not isinstance(element.tag, str) or not element.tag.endswith("TiffData"):
            continue
        for uuid in element:
            if not isinstance(uuid.tag, str) or not uuid.tag.endswith("UUID"):
                continue
            named = uuid.get("FileName")
            if uuid.text != own_uuid if own_uuid is not None else (named or "").lower() != own_name:
                others.append(named if named is not None else f"UUID {uuid.text}")
    if not others:
        return None
    return (f"its OME-XML places image planes in other files: {shorten(dict.fromkeys(others), 3, named_file)} "
            f"(OME-TIFF multi-file); {READS_ONLY_ITS_OWN}")


def _refuse_ome_elsewhere(description: object, path: str) -> None:
    elsewhere = ome_elsewhere(description, path)
    if elsewhere:
        raise ReadError(elsewhere)


def _tiff_shape(path: str) -> tuple[int, ...] | None:
    """The shape of a TIFF's one image (a stack's whole volume) from tifffile, when installed."""
    try:
        tifffile = require("tifffile")
    except ImportError:
        return None
    try:
        with tiff_file(tifffile, path) as tiff:
            _refuse_ome_elsewhere(_first_description(tiff), path)
            if not tiff.series:
                raise ReadError("the TIFF holds no image")
            return tuple(tiff.series[0].shape)
    except ReadError:
        raise
    except Exception as exc:  # tifffile raises many types on corrupt files
        raise ReadError(f"cannot read TIFF header: {exc or type(exc).__name__}") from None


def read_mask_image_array_shape(path: str, container: str) -> tuple[int, ...]:
    """The shape of the image array of an NPZ or HDF5 file (its first image key, else its
    first array), from its header."""
    if container == "zip":
        with NpzArchive(path) as archive:
            key = next((k for k in IMAGE_KEYS if k in archive.keys), archive.keys[0] if archive.keys else None)
            if key is None:
                raise ReadError("NPZ holds no arrays")
            return archive.header(key).shape
    h5py = require_to_read("h5py", "read HDF5 images")
    try:
        with _hdf5_file(h5py, path) as handle:
            keys, broken, _ = _hdf5_datasets(handle, h5py, path)
            key = next((k for k in IMAGE_KEYS if k in keys), keys[0] if keys else None)
            if key is None:
                raise ReadError(next(iter(broken.values()), "HDF5 file holds no datasets"))
            return tuple(handle[key].shape or ())
    except ReadError:
        raise
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as exc:
        raise ReadError(f"cannot read HDF5: {exc}") from None


# Containers added in modules of their own: each registers its reader with @mask_reader.
for _module in sorted(m.name for m in pkgutil.iter_modules(containers.__path__) if not m.name.startswith("_")):
    importlib.import_module(f"{containers.__name__}.{_module}")
