"""Read label masks from images (PNG/TIFF/BMP/JPEG), arrays (NPY/NPZ), HDF5 and NIfTI.

The reader decides the format from the file's bytes, not its name, so a JPEG renamed
``.png`` is still known to be a JPEG. It returns the stored array untouched (colour masks
stay (H, W, 3)); decoding colours and judging values is the checks' work.
"""

from __future__ import annotations

import io
import logging
import os
import warnings
import zipfile
from dataclasses import dataclass
from typing import Callable

import numpy as np
from PIL import Image, ImageFile, PngImagePlugin, UnidentifiedImageError

from labelguard._optional import require
from labelguard.core.records import MaskRecord
from labelguard.readers.base import EXTENSION_KINDS, ReadError, read_head, sniff

# Array keys as the common tools write them: pytorch-3dunet ``raw``/``label``, ``image``/
# ``label``, ``data``/``seg`` (BraTS-style exports), NumPy's ``arr_0``.
LABEL_KEYS = ("label", "labels", "mask", "masks", "seg", "gt", "arr_0")
IMAGE_KEYS = ("image", "images", "img", "raw", "data", "x")
IMAGE_FORMATS = ("png", "jpeg", "tiff", "bmp", "gif", "riff")
# One read of this many bytes sniffs the format and holds a whole PNG mask of usual size.
FIRST_READ = 1 << 16
MASK_EXTENSIONS = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".npy", ".npz",
                   ".h5", ".hdf5", ".nii", ".nii.gz", ".gif", ".webp")


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
    declares, the array keys asked for and the bytes already read."""

    path: str
    container: str
    declared: str | None
    key: str | None
    image_key: str | None
    head: bytes


# container name (as :func:`labelguard.readers.base.sniff` says it) -> reader; the fixers'
# editors are registered under the same names (``labelguard.fix.masks.MASK_EDITORS``).
MASK_READERS: dict[str, Callable[[ReadRequest], MaskRecord]] = {}


def mask_reader(*containers: str):
    """Register the decorated function as the reader of masks stored in ``containers``."""
    def register(reader: Callable[[ReadRequest], MaskRecord]):
        for container in containers:
            MASK_READERS[container] = reader
        return reader

    return register


def read_mask(path: str, key: str | None = None, image_key: str | None = None) -> MaskRecord:
    """Read the label array of ``path``; ReadError (-> LG001) when it cannot be read.

    In NPZ/HDF5 files ``key`` names the label array and ``image_key`` the image beside it
    (whose shape the record keeps); each defaults to the first of the usual names present.
    """
    head = read_head(path, FIRST_READ)
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
    return reader(ReadRequest(path, container, declared, key, image_key, head))


@mask_reader(*IMAGE_FORMATS)
def _image_reader(request: ReadRequest) -> MaskRecord:
    whole = request.head if len(request.head) < FIRST_READ else None
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
    return _read_nifti(request.path, request.declared)


def _read_image(path: str, container: str, declared: str | None, data: bytes | None = None) -> MaskRecord:
    """Decode an image file; ``data`` is its whole content when already read."""
    if container == "tiff":
        record = _read_tiff_stack(path, declared)
        if record is not None:
            return record
    try:
        if data is None:
            with open(path, "rb") as handle:
                data = handle.read()
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            if container == "png":
                # Pillow checks no IDAT checksum and no end chunk when decoding: flipped bytes
                # can decode to wrong labels and a cut-off file to a complete-looking one.
                _verify_png(image, data)
            decoded = _decode_in_place(image) if container == "png" else None
            if decoded is None and container == "tiff" and getattr(image, "n_frames", 1) > 1:
                decoded = _tiff_frames(image)
            if decoded is None:
                image.load()
    except UnidentifiedImageError:
        raise ReadError(f"cannot decode {container.upper()}: Pillow cannot identify the image data") from None
    except (OSError, SyntaxError, ValueError,
            Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ReadError(f"cannot decode {container.upper()}: {exc}") from None
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


def _verify_png(image: Image.Image, data: bytes) -> None:
    """``PngImageFile.verify()`` (every chunk's checksum from the first IDAT to IEND) on the
    bytes of the opened ``image``, which stays loadable: no second ``Image.open``."""
    stream = PngImagePlugin.ChunkStream(io.BytesIO(data))
    stream.fp.seek(image.tile[0][2] - 8)
    stream.verify()


def _decode_in_place(image: Image.Image) -> np.ndarray | None:
    """Decode an 8-bit single-band image straight into a new array; None where not possible.

    ``np.asarray(image)`` copies the pixels out through ``tobytes()``, which costs a third of
    the PNG decode itself. Here Pillow's image memory is an array's buffer (``frombuffer``),
    so the decoder writes the pixels where numpy reads them. The result is used only when
    Pillow kept that memory to the end of the load; otherwise the caller decodes normally.
    """
    if image.mode not in ("L", "P") or ImageFile.LOAD_TRUNCATED_IMAGES:
        return None
    width, height = image.size
    array = np.empty((height, width), dtype=np.uint8)
    memory = Image.frombuffer(image.mode, (width, height), array, "raw", image.mode, 0, 1).im
    image.im = memory
    image.load()
    if image.im is not memory or image.mode not in ("L", "P"):
        return None
    array.flags.writeable = False
    return array


def _tiff_frames(image: Image.Image) -> np.ndarray:
    """Every page of a multi-page TIFF opened by Pillow, as one (pages, H, W) volume: a stack
    is never read as its first page. ReadError when the pages differ or one cannot be read."""
    frames = []
    for index in range(image.n_frames):
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
        with tifffile.TiffFile(path) as tiff:
            pages = len(tiff.pages)
            series = tiff.series
            if len(series) > 1:
                shapes = ", ".join(str(tuple(s.shape)) for s in series[:4])
                raise ReadError(f"inconsistent multi-page TIFF: its {pages} pages form {len(series)} "
                                f"images of different shapes ({shapes}); it is no single volume")
            array = tiff.asarray()
    except ReadError:
        raise
    except Exception as exc:  # tifffile raises many types on corrupt files
        raise ReadError(f"cannot decode TIFF: {exc}") from None
    finally:
        logger.removeHandler(problems)
    if problems.messages:
        raise ReadError(f"truncated or damaged TIFF ({pages} page{'s' if pages != 1 else ''} readable): "
                        f"{problems.messages[0]}")
    return MaskRecord(array=np.asarray(array), container="tiff", declared=declared, mode=str(array.dtype))


def _read_npy(path: str, declared: str | None) -> MaskRecord:
    try:
        array = np.load(path, allow_pickle=False)
    except ValueError as exc:
        raise ReadError(f"cannot load NPY: {exc}") from None
    except (OSError, EOFError) as exc:
        raise ReadError(f"cannot load NPY (truncated?): {exc}") from None
    return MaskRecord(array=array, container="npy", declared=declared, mode=str(array.dtype))


def _pick_key(keys: list[str], key: str | None, path_kind: str) -> str:
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
    try:
        with np.load(path, allow_pickle=False) as archive:
            keys = list(archive.files)
            chosen = _pick_key(keys, key, "NPZ")
            array = archive[chosen]
            image_key = _image_key(keys, chosen, image_key, "NPZ")
            image_shape = tuple(archive[image_key].shape) if image_key else None
    except ReadError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise ReadError(f"cannot load NPZ: {exc}") from None
    return MaskRecord(array=array, container="zip", declared=declared, mode=str(array.dtype),
                      image_shape=image_shape, key=chosen, image_key=image_key)


def _read_hdf5(path: str, declared: str | None, key: str | None, image_key: str | None = None) -> MaskRecord:
    h5py = require("h5py", "read HDF5 masks")
    try:
        with h5py.File(path, "r") as handle:
            elsewhere = {k: why for k in handle.keys() if (why := _hdf5_elsewhere(handle, k, h5py))}
            keys = [k for k in handle.keys() if k in elsewhere or isinstance(handle[k], h5py.Dataset)]
            chosen = _pick_key(keys, key, "HDF5 file")
            if chosen in elsewhere:
                raise ReadError(f"the label {elsewhere[chosen]}; labelguard reads nothing outside the file it "
                                "audits: audit that file")
            array = np.asarray(handle[chosen][()])
            keys = [k for k in keys if k not in elsewhere]
            image_key = _image_key(keys, chosen, image_key, "HDF5 file")
            image_shape = tuple(handle[image_key].shape) if image_key else None
    except ReadError:
        raise
    except (OSError, KeyError, ValueError, TypeError) as exc:
        raise ReadError(f"cannot read HDF5: {exc}") from None
    return MaskRecord(array=array, container="hdf5", declared=declared, mode=str(array.dtype),
                      image_shape=image_shape, key=chosen, image_key=image_key)


def _hdf5_elsewhere(handle, name: str, h5py) -> str | None:
    """Where the data of ``name`` lives when not in this file (an external link, a virtual
    dataset mapped from other files), or None."""
    link = handle.get(name, getlink=True)
    if isinstance(link, h5py.ExternalLink):
        return f"{name!r} is an HDF5 external link to {link.filename}:{link.path}"
    item = handle.get(name)
    if isinstance(item, h5py.Dataset) and item.is_virtual:
        files = sorted({source.file_name for source in item.virtual_sources() if source.file_name != "."})
        if files:
            return f"{name!r} is an HDF5 virtual dataset mapped from {', '.join(files)}"
    return None


def _read_nifti(path: str, declared: str | None) -> MaskRecord:
    nib = require("nibabel", "read NIfTI masks")
    try:
        image = nib.load(path)
        array = np.asanyarray(image.dataobj)
    except Exception as exc:  # nibabel raises ImageFileError, EOFError, zlib.error, ...
        raise ReadError(f"cannot read NIfTI: {exc}") from None
    return MaskRecord(array=np.asarray(array), container="nifti", declared=declared, mode=str(array.dtype))


def image_shape(path: str) -> tuple[int, ...]:
    """The array shape of an image file without decoding its pixels where the format allows.

    2D images give (H, W) or (H, W, C); NIfTI gives its header shape; arrays their shape.
    """
    head = read_head(path)
    if not head:
        raise ReadError("empty file (0 bytes)")
    container = sniff(head)
    if container in IMAGE_FORMATS:
        if container == "tiff":
            record = _read_tiff_stack(path, None)
            if record is not None:
                return tuple(record.array.shape)
        try:
            with Image.open(path) as image:
                width, height = image.size
                bands = len(image.getbands())
                # Without tifffile a stack is read by Pillow: its pages are slices, as
                # _tiff_frames reads a mask stack, never one page standing for the volume.
                pages = getattr(image, "n_frames", 1) if container == "tiff" else 1
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            raise ReadError(f"cannot read image header: {exc}") from None
        plane = (height, width) if bands == 1 else (height, width, bands)
        return (pages, *plane) if pages > 1 else plane
    if container == "npy":
        try:
            return tuple(np.load(path, mmap_mode="r", allow_pickle=False).shape)
        except (ValueError, OSError) as exc:
            raise ReadError(f"cannot load NPY: {exc}") from None
    if container in ("nifti", "gzip"):
        nib = require("nibabel", "read NIfTI images")
        try:
            return tuple(nib.load(path).shape)
        except Exception as exc:
            raise ReadError(f"cannot read NIfTI header: {exc}") from None
    if container in ("zip", "hdf5"):
        return tuple(read_mask_image_array_shape(path, container))
    raise ReadError(f"not a known image format (starts with {head[:8]!r})")


def read_mask_image_array_shape(path: str, container: str) -> tuple[int, ...]:
    if container == "zip":
        try:
            with np.load(path, allow_pickle=False) as archive:
                keys = list(archive.files)
                key = next((k for k in IMAGE_KEYS if k in keys), keys[0] if keys else None)
                if key is None:
                    raise ReadError("NPZ holds no arrays")
                return tuple(archive[key].shape)
        except (ValueError, OSError, zipfile.BadZipFile) as exc:
            raise ReadError(f"cannot load NPZ: {exc}") from None
    h5py = require("h5py", "read HDF5 images")
    try:
        with h5py.File(path, "r") as handle:
            keys = [k for k in handle.keys() if not _hdf5_elsewhere(handle, k, h5py)]
            key = next((k for k in IMAGE_KEYS if k in keys), keys[0] if keys else None)
            if key is None:
                raise ReadError("HDF5 file holds no datasets")
            return tuple(handle[key].shape)
    except (OSError, KeyError) as exc:
        raise ReadError(f"cannot read HDF5: {exc}") from None
