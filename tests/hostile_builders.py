"""Writers of hostile but plausible files: each small on disk, each claiming or holding far more
than it costs to write (a header declaring terabytes, a member that is no array, a YAML
that expands to a billion nodes, ids of 10**30). Used by the reader tests and the
hostile-dataset audit."""

from __future__ import annotations

import gzip
import io
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np


def _parent(path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def npy_header(header: str, version: int = 1) -> bytes:
    """An NPY preamble (magic, version, length) and ``header``, padded as NumPy pads it."""
    text = header.encode("latin-1")
    size = 10 if version == 1 else 12
    text += b" " * (-(size + len(text) + 1) % 64) + b"\n"
    length = struct.pack("<H", len(text)) if version == 1 else struct.pack("<I", len(text))
    return b"\x93NUMPY" + bytes((version, 0)) + length + text


def write_npy_claiming(path: Path, shape: str, descr: str = "<i8", data: bytes = b"",
                       fortran: str = "False") -> Path:
    """An NPY whose header declares ``shape`` (as written) and ``descr``, followed by ``data``."""
    path = _parent(path)
    header = f"{{'descr': {descr!r}, 'fortran_order': {fortran}, 'shape': {shape}, }}"
    path.write_bytes(npy_header(header) + data)
    return path


def write_npy_raw_header(path: Path, header: str, data: bytes = b"", version: int = 1) -> Path:
    path = _parent(path)
    path.write_bytes(npy_header(header, version) + data)
    return path


def write_npz_members(path: Path, members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    """An NPZ (a zip) holding ``members`` as given: arrays as NPY bytes, or anything else."""
    path = _parent(path)
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def write_zip_bomb_npz(path: Path, nbytes: int) -> Path:
    """An NPZ whose ``label.npy`` is a real NPY of ``nbytes`` zeros (uint8), deflated to about
    a thousandth of that: a zip bomb that is also a valid array."""
    path = _parent(path)
    header = npy_header(f"{{'descr': '|u1', 'fortran_order': False, 'shape': ({nbytes},), }}")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("label.npy", "w", force_zip64=nbytes > 1 << 30) as member:
            member.write(header)
            block = bytes(1 << 20)
            left = nbytes
            while left:
                member.write(block[:min(left, len(block))])
                left -= min(left, len(block))
    return path


def write_npz_claiming(path: Path, declared: int) -> Path:
    """An NPZ whose ``label.npy`` member declares ``declared`` uncompressed bytes in its zip
    entries (local header and central directory) while its deflated data is a few bytes."""
    path = _parent(path)
    data = npy_bytes(np.zeros((2, 2), np.uint8))
    compressed = zlib.compress(data)[2:-4]
    crc = zlib.crc32(data)
    name = b"label.npy"
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(compressed), declared & 0xFFFFFFFF,
                        len(name), 0) + name + compressed
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(compressed),
                          declared & 0xFFFFFFFF, len(name), 0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local), 0)
    path.write_bytes(local + central + end)
    return path


def write_h5_soft_loop(path: Path, good: np.ndarray | None = None) -> Path:
    """An HDF5 file whose ``label`` is a soft link that leads back to itself through ``/a``."""
    import h5py

    path = _parent(path)
    with h5py.File(path, "w") as handle:
        handle["a"] = h5py.SoftLink("/b")
        handle["b"] = h5py.SoftLink("/a")
        handle["label"] = h5py.SoftLink("/a")
        if good is not None:
            handle.create_dataset("image", data=good)
    return path


def write_h5_claiming(path: Path, shape: tuple[int, ...]) -> Path:
    """An HDF5 file of a few kilobytes whose chunked ``label`` declares ``shape`` (no chunk
    written: reading it would make HDF5 fill the whole array)."""
    import h5py

    path = _parent(path)
    with h5py.File(path, "w") as handle:
        handle.create_dataset("label", shape=shape, dtype="u1", chunks=tuple(min(s, 64) for s in shape),
                              compression="gzip")
    return path


def write_nifti_claiming(path: Path, dims: tuple[int, int, int]) -> Path:
    """A valid NIfTI-1 header (and 8 voxels) whose dim fields are patched to ``dims``;
    gzip-compressed when ``path`` ends ``.gz``."""
    import nibabel as nib

    path = _parent(path)
    image = nib.Nifti1Image(np.zeros((2, 2, 2), np.uint8), np.eye(4))
    raw = bytearray(image.header.binaryblock + b"\x00" * 4 + bytes(8))
    struct.pack_into("<8h", raw, 40, 3, *dims, 1, 1, 1, 1)
    path.write_bytes(gzip.compress(bytes(raw), mtime=0) if path.name.endswith(".gz") else bytes(raw))
    return path


def write_png_claiming(path: Path, width: int, height: int) -> Path:
    """A PNG whose IHDR declares ``width`` x ``height`` (CRC correct) over one tiny IDAT."""
    path = _parent(path)
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
                     + chunk(b"IEND", b""))
    return path


def write_tiff_claiming(path: Path, width: int, height: int) -> Path:
    """A little-endian TIFF whose one page declares ``width`` x ``height`` 8-bit pixels in one
    strip of 16 bytes."""
    path = _parent(path)
    entries = [(256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1),
               (273, 4, 1, 8 + 2 + 12 * 9 + 4), (277, 3, 1, 1), (278, 4, 1, height), (279, 4, 1, 16)]
    ifd = struct.pack("<H", len(entries)) + b"".join(struct.pack("<HHII", *entry) for entry in entries) \
        + struct.pack("<I", 0)
    path.write_bytes(b"II*\x00" + struct.pack("<I", 8) + ifd + bytes(16))
    return path


def billion_laughs_yaml(levels: int = 9) -> str:
    """A YAML document whose ``names`` is ten aliases of ten aliases ... ``levels`` deep."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    return "\n".join(lines + [f"names: *a{levels - 1}", "train: images/train", "nc: 1"]) + "\n"


def coco_with_huge_ids() -> str:
    """A COCO document whose ids of 10**30 JSON allows and int64 does not hold, beside a good image."""
    huge = 10 ** 30
    return ('{"images": [{"id": %d, "file_name": "a.jpg", "width": 32, "height": 24}, '
            '{"id": 2, "file_name": "a.jpg", "width": 32, "height": 24}], '
            '"annotations": [{"id": %d, "image_id": %d, "category_id": %d, "bbox": [1, 1, 4, 4]}, '
            '{"id": 3, "image_id": 2, "category_id": 1, "bbox": [1, 1, 4, 4]}], '
            '"categories": [{"id": %d, "name": "big"}, {"id": 1, "name": "cat"}]}'
            % (huge, huge, huge, huge, huge))


def flipped(data: bytes, seed: int, flips: int = 8) -> bytes:
    """``data`` with ``flips`` bytes past its first 16 replaced, the same for the same seed."""
    import random

    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(flips):
        at = rng.randrange(16, len(out))
        out[at] ^= rng.randrange(1, 256)
    return bytes(out)


# The read limit an audit of the hostile dataset sets (a flag: a config found with the data
# does not set limits): 64 MiB.
HOSTILE_MAX_FILE_BYTES = 67_108_864


def hostile_dataset(root: Path) -> dict[str, list[str]]:
    """A folder of datasets holding every hostile case above beside good files.

    Returns {"broken": [...], "good": [...]}: the files (relative to ``root``) the audit must
    report as LG001 and the label files it must still audit, when audited with
    ``--max-file-bytes`` :data:`HOSTILE_MAX_FILE_BYTES`, under the 256 MiB zip bomb."""
    import os

    from PIL import Image

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    broken: list[str] = []
    good: list[str] = []

    def put(relative: str, data: bytes | str, is_broken: bool) -> None:
        path = _parent(root / relative)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        (broken if is_broken else good).append(relative)

    mask = ((np.arange(24)[:, None] // 8 + np.arange(32)[None, :] // 11) % 3).astype(np.uint8)
    (root / "labelguard.toml").write_text("[labels]\nnum_classes = 3\n")

    # masks: every container, declared sizes, members, links, byte flips, a pipe
    png = io.BytesIO()
    Image.fromarray(mask).save(png, format="PNG")
    put("masks/good.png", png.getvalue(), False)
    put("masks/good.npy", npy_bytes(mask), False)
    npz = io.BytesIO()
    np.savez_compressed(npz, image=np.zeros((24, 32), np.float32), label=mask)
    put("masks/good.npz", npz.getvalue(), False)
    put("masks/huge.npy", npy_header("{'descr': '<i8', 'fortran_order': False, 'shape': (100000, 100000, 1000), }"),
        True)
    put("masks/absurd.npy", npy_header("{'descr': '<i8', 'fortran_order': False, 'shape': (10**30,), }"), True)
    put("masks/unclosed.npy", npy_header("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3"), True)
    write_npz_members(root / "masks/text.npz", {"label.txt": b"not an array"})
    broken.append("masks/text.npz")
    write_npz_claiming(root / "masks/liar.npz", 3_000_000_000)
    broken.append("masks/liar.npz")
    write_zip_bomb_npz(root / "masks/bomb.npz", 256 << 20)
    broken.append("masks/bomb.npz")
    write_h5_soft_loop(root / "masks/loop.h5")
    broken.append("masks/loop.h5")
    write_h5_claiming(root / "masks/huge.h5", (100000, 100000, 100))
    broken.append("masks/huge.h5")
    write_nifti_claiming(root / "masks/huge.nii.gz", (30000, 30000, 30000))
    broken.append("masks/huge.nii.gz")
    write_tiff_claiming(root / "masks/huge.tif", 100000, 100000)
    broken.append("masks/huge.tif")
    write_png_claiming(root / "masks/huge.png", 100000, 100000)
    broken.append("masks/huge.png")
    put("masks/flipped.npy", flipped(npy_bytes(mask), 1, 4)[:60] + b"\x00", True)
    put("masks/flipped.npz", flipped(npz.getvalue(), 2)[:-30], True)
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "masks/pipe.png")
        broken.append("masks/pipe.png")

    # VOC: a document nested 100,000 deep and one declaring entities, beside a good one
    annotation = ("<annotation><filename>{0}.jpg</filename><size><width>32</width><height>24</height></size>"
                  "<object><name>cat</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>9</xmax><ymax>9</ymax>"
                  "</bndbox></object>{1}</annotation>")
    put("voc/Annotations/good.xml", annotation.format("good", ""), False)
    put("voc/Annotations/deep.xml", annotation.format("deep", "<a>" * 100_000 + "</a>" * 100_000), True)
    put("voc/Annotations/laughs.xml", '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY a "lol">]>'
        + annotation.format("laughs", "&a;"), True)
    for name in ("good", "deep", "laughs"):
        Image.new("RGB", (32, 24)).save(_parent(root / f"voc/JPEGImages/{name}.jpg"))
    (root / "voc/labels.txt").write_text("cat\n")

    # YOLO: class ids of 10**30 and 5,000 digits in one label file, a good one beside it
    put("yolo/labels/train/a.txt", f"0 0.5 0.5 0.2 0.2\n{10**30} 0.5 0.5 0.1 0.1\n{'9' * 5000} 0.5 0.5 0.1 0.1\n",
        True)
    put("yolo/labels/train/b.txt", "0 0.5 0.5 0.2 0.2\n", False)
    for name in ("a", "b"):
        Image.new("RGB", (32, 24)).save(_parent(root / f"yolo/images/train/{name}.jpg"))
    (root / "yolo/data.yaml").write_text("train: images/train\nnames: [cat, dog, bird]\n")
    # a data.yaml that expands to a billion nodes
    put("laughs/data.yaml", billion_laughs_yaml(), True)
    put("laughs/labels/train/a.txt", "0 0.5 0.5 0.2 0.2\n", False)
    good.remove("laughs/labels/train/a.txt")  # its dataset cannot be read: nothing in it is audited
    Image.new("RGB", (32, 24)).save(_parent(root / "laughs/images/train/a.jpg"))

    # COCO: ids of 10**30 (the file is still read), and a number of 5,000 digits (it is not)
    put("coco/annotations/instances_train.json", coco_with_huge_ids(), True)
    Image.new("RGB", (32, 24)).save(_parent(root / "coco/images/train/a.jpg"))
    put("coco5000/annotations/instances_train.json",
        coco_with_huge_ids().replace('"bbox": [1, 1, 4, 4]}]', '"bbox": [1, 1, 4, %s]}]' % ("9" * 5000)), True)

    # CSV: a label of 5,000 digits beside good rows, and a field past the csv module's limit
    put("csv/train.csv", "image_name,label\na.jpg,1\nb.jpg," + "9" * 5000 + "\n", True)
    for name in ("a", "b"):
        Image.new("RGB", (32, 24)).save(_parent(root / f"csv/{name}.jpg"))
    put("csvwide/train.csv", "image_name,label\na.jpg,cat\nb.jpg," + "x" * 200_000 + "\n", True)
    Image.new("RGB", (32, 24)).save(_parent(root / "csvwide/a.jpg"))

    # a colour-map file nested 100,000 deep beside colour masks
    colours = np.zeros((24, 32, 3), np.uint8)
    colours[:, 16:] = (128, 0, 0)
    image = io.BytesIO()
    Image.fromarray(colours).save(image, format="PNG")
    put("colour/masks/a.png", image.getvalue(), False)
    put("colour/dataset_meta.json", '{"segmentation_colors": ' + "[" * 100_000 + "]" * 100_000 + "}", True)
    return {"broken": broken, "good": good}


# ---- containers whose data lies in other files ------------------------------------------------

def write_h5_external_storage(path: Path, raw: Path, key: str = "label", shape: tuple[int, int] = (32, 32),
                              others: dict[str, np.ndarray] | None = None) -> Path:
    """An HDF5 file whose uint8 dataset ``key`` keeps its bytes in ``raw`` (HDF5 external
    storage, not a link), beside the datasets ``others``. Nothing is written to ``raw``: it may
    be a file written before, a named pipe, or nothing yet."""
    import h5py

    path = _parent(path)
    with h5py.File(path, "w") as handle:
        handle.create_dataset(key, shape=shape, dtype=np.uint8, external=[(str(raw), 0, int(np.prod(shape)))])
        for name, array in (others or {}).items():
            handle.create_dataset(name, data=array)
    return path


def ome_xml(planes: list[tuple[str, str, int]], height: int, width: int, uuid: str = "urn:uuid:0-own") -> str:
    """OME-XML of one image of ``len(planes)`` Z planes, plane ``z`` page ``planes[z][2]`` of the
    file named ``planes[z][0]`` under the UUID ``planes[z][1]`` (``uuid`` is the describing
    file's own)."""
    tiff_data = "".join(f'<TiffData FirstZ="{z}" IFD="{page}" PlaneCount="1"><UUID FileName="{name}">{file_uuid}'
                        "</UUID></TiffData>" for z, (name, file_uuid, page) in enumerate(planes))
    return ('<?xml version="1.0" encoding="UTF-8"?>'
            f'<OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06" UUID="{uuid}">'
            '<Image ID="Image:0"><Pixels ID="Pixels:0" DimensionOrder="XYZCT" Type="uint8" '
            f'SizeX="{width}" SizeY="{height}" SizeZ="{len(planes)}" SizeC="1" SizeT="1">'
            f'<Channel ID="Channel:0:0" SamplesPerPixel="1"/>{tiff_data}</Pixels></Image></OME>')


def write_ome_tiff_elsewhere(path: Path, plane: np.ndarray, other: Path | str) -> Path:
    """An OME-TIFF holding one plane whose OME-XML places a second Z plane in ``other`` (an
    OME-TIFF multi-file set, as Bio-Formats writes one): tifffile reads that plane from
    ``other`` by its name."""
    import tifffile

    path = _parent(path)
    xml = ome_xml([(path.name, "urn:uuid:0-own", 0), (str(other), "urn:uuid:1-other", 0)], *plane.shape)
    tifffile.imwrite(path, plane, description=xml, metadata=None)
    return path


def write_ome_tiff(path: Path, planes: np.ndarray) -> Path:
    """A single-file OME-TIFF of ``planes`` (Z, H, W) whose OME-XML names the file itself."""
    import tifffile

    path = _parent(path)
    xml = ome_xml([(path.name, "urn:uuid:0-own", z) for z in range(len(planes))], *planes.shape[1:])
    tifffile.imwrite(path, planes, description=xml, metadata=None, photometric="minisblack")
    return path


def write_nifti_pair(header: Path, volume: np.ndarray) -> tuple[Path, Path]:
    """A NIfTI-1 header/image pair (``x.hdr`` with magic ``ni1``, its voxels in ``x.img``) as
    nibabel writes one; returns (header, image)."""
    import nibabel as nib

    header = _parent(header)
    nib.save(nib.Nifti1Pair(volume, np.eye(4)), str(header))
    return header, header.with_suffix(".img")
