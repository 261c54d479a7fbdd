"""Mutation fuzzing of labelguard's readers through the audit, as a user would meet them.

For each format a few valid files are written (NPY, NPZ, HDF5, NIfTI, TIFF, PNG masks, HDF5 with
a dataset in external storage and OME-TIFFs (the other file each names is a named pipe), a VOC
XML, YOLO rows and data.yaml, a COCO JSON, a CSV table, a file list, tokenized data as an
Arrow stream and file (plain, and with zstd or LZ4 buffers), Parquet and JSON lines); each case takes one,
mutates its bytes (bit flips, interesting integers written over header fields, bytes
inserted, deleted, repeated or cut off), lays it out as a one-file dataset and runs
``labelguard.audit`` on it with one worker. A case passes when the audit returns, whatever
it found: an unreadable file is LG001, which is the point. It fails when:

* the audit raises, or its report lists an internal error (a reader or rule that crashed:
  ``report.errors``), or a file is neither audited nor reported;
* the process dies (a C library crashing on the bytes), or a case runs past ``--case-timeout``.

Cases run in worker processes with an address-space limit (``--memory``), so an allocation
that a header claims shows up as a failure instead of swapping the machine; the read limits
of the audit are lowered to match. Each case is reproducible from (seed, format, index):
``--replay FORMAT INDEX`` reruns one and keeps its file. Failing inputs are copied to
``--out`` (default: a new temporary folder) for regression tests.

Usage::

    python fuzz/fuzz_readers.py                       # 600 mutations of each format
    python fuzz/fuzz_readers.py -n 3000 --formats npy,npz,hdf5 --seed 7
    python fuzz/fuzz_readers.py --replay npz 1234

Runs with the labelguard it imports: from a checkout, ``PYTHONPATH=src``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

# ---- valid seed files -------------------------------------------------------------------


def _mask(height: int = 24, width: int = 32, classes: int = 3):
    import numpy as np

    rows, cols = np.mgrid[0:height, 0:width]
    return ((rows // 8 + cols // 11) % classes).astype(np.uint8)


def _npy_seeds() -> list[bytes]:
    import numpy as np

    seeds = []
    for array in (_mask(), _mask().astype(np.int32), np.asfortranarray(_mask().astype(np.int16)),
                  _mask(4, 4).astype(">u2")):
        buffer = io.BytesIO()
        np.save(buffer, array)
        seeds.append(buffer.getvalue())
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, _mask(8, 8), version=(2, 0))
    seeds.append(buffer.getvalue())
    return seeds


def _npz_seeds() -> list[bytes]:
    import numpy as np

    seeds = []
    for save in (np.savez, np.savez_compressed):
        buffer = io.BytesIO()
        save(buffer, image=np.zeros((24, 32), np.float32) + 0.5, label=_mask())
        seeds.append(buffer.getvalue())
    buffer = io.BytesIO()
    np.savez_compressed(buffer, _mask(16, 16))
    seeds.append(buffer.getvalue())
    return seeds


def _hdf5_seeds() -> list[bytes]:
    import h5py
    import numpy as np

    seeds = []
    for chunked in (False, True):
        buffer = io.BytesIO()
        with h5py.File(buffer, "w") as handle:
            options = {"chunks": (8, 8), "compression": "gzip"} if chunked else {}
            handle.create_dataset("label", data=_mask(), **options)
            handle.create_dataset("image", data=np.zeros((24, 32), np.float32), **options)
            if chunked:
                handle["alias"] = h5py.SoftLink("/label")
        seeds.append(buffer.getvalue())
    return seeds


# The file name that the seeds of containers naming other files give (HDF5 external storage,
# OME-TIFF's UUID FileName). Laid out, it becomes a named pipe outside the audited folder (its
# path padded to the same length with leading slashes, so no offset in the file moves): a
# reader that opened it would hang the case.
OTHER_FILE = b"@" * 200


def _other_file_is_a_pipe(root: Path, data: bytes) -> bytes:
    pipe = root / "other.pipe"
    pipe.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(pipe)
    name = os.fsencode(pipe)
    return data.replace(OTHER_FILE, b"/" * (len(OTHER_FILE) - len(name)) + name)


def _hdf5_external_seeds() -> list[bytes]:
    """A label beside a dataset (the image, or another) whose bytes HDF5 external storage
    keeps in another file, in one segment or two."""
    import h5py
    import numpy as np

    seeds = []
    for name, segments in (("image", 1), ("extra", 2)):
        buffer = io.BytesIO()
        size = 24 * 32 * 4 // segments
        with h5py.File(buffer, "w") as handle:
            handle.create_dataset("label", data=_mask())
            handle.create_dataset(name, shape=(24, 32), dtype=np.float32,
                                  external=[(OTHER_FILE.decode(), i * size, size) for i in range(segments)])
        seeds.append(buffer.getvalue())
    return seeds


def _hdf5_external(root: Path, data: bytes, suffix: str):
    path = _put(root / "masks" / "case.h5", _other_file_is_a_pipe(root, data))
    return root / "masks", {"format": "masks"}, path


def _nifti_seeds() -> list[tuple[str, bytes]]:
    import nibabel as nib
    import numpy as np

    seeds = []
    with tempfile.TemporaryDirectory() as folder:
        for suffix in (".nii", ".nii.gz"):
            path = os.path.join(folder, "seed" + suffix)
            nib.save(nib.Nifti1Image(np.stack([_mask(8, 8)] * 4, axis=-1), np.eye(4)), path)
            seeds.append((suffix, Path(path).read_bytes()))
    return seeds


def _tiff_seeds() -> list[bytes]:
    import numpy as np
    import tifffile

    seeds = []
    for array in (_mask(), np.stack([_mask(8, 8)] * 3)):
        buffer = io.BytesIO()
        tifffile.imwrite(buffer, array)
        seeds.append(buffer.getvalue())
    buffer = io.BytesIO()
    tifffile.imwrite(buffer, _mask(), compression="zlib")
    seeds.append(buffer.getvalue())
    return seeds


OME_UUID = "urn:uuid:5eed0000-0000-4000-8000-000000000000"


def _ome_tiff_seeds() -> list[bytes]:
    """Single-file OME-TIFFs: each plane's TiffData names this file by the root's UUID, under a
    FileName that is laid out as a named pipe (:data:`OTHER_FILE`): a mutated UUID makes it
    another file's, which must be refused, not opened. One writes no TiffData at all."""
    import numpy as np

    seeds = []
    for pages in (1, 3):
        planes = "".join(f'<TiffData FirstZ="{z}" IFD="{z}" PlaneCount="1"><UUID FileName="{OTHER_FILE.decode()}">'
                         f"{OME_UUID}</UUID></TiffData>" for z in range(pages))
        seeds.append(_ome_tiff(np.stack([_mask(8, 8) + z for z in range(pages)]), planes))
    seeds.append(_ome_tiff(np.stack([_mask(8, 8)] * 2), ""))
    return seeds


def _ome_tiff(planes, tiff_data: str) -> bytes:
    import tifffile

    xml = ('<?xml version="1.0" encoding="UTF-8"?>'
           f'<OME xmlns="http://www.openmicroscopy.org/Schemas/OME/2016-06" UUID="{OME_UUID}">'
           '<Image ID="Image:0"><Pixels ID="Pixels:0" DimensionOrder="XYZCT" Type="uint8" '
           f'SizeX="{planes.shape[2]}" SizeY="{planes.shape[1]}" SizeZ="{len(planes)}" SizeC="1" SizeT="1">'
           f'<Channel ID="Channel:0:0" SamplesPerPixel="1"/>{tiff_data}</Pixels></Image></OME>')
    buffer = io.BytesIO()
    tifffile.imwrite(buffer, planes, description=xml, metadata=None, photometric="minisblack")
    return buffer.getvalue()


def _inside_ome(data: bytes, change: Callable[[bytes], bytes]) -> bytes:
    """The OME-TIFF written again with its OME-XML changed."""
    import tifffile

    with tifffile.TiffFile(io.BytesIO(data)) as tiff:
        planes, xml = tiff.asarray(), tiff.pages[0].description
    buffer = io.BytesIO()
    tifffile.imwrite(buffer, planes, description=change(xml.encode()), metadata=None, photometric="minisblack")
    return buffer.getvalue()


def _ome_tiff_file(root: Path, data: bytes, suffix: str):
    path = _put(root / "masks" / "case.ome.tif", _other_file_is_a_pipe(root, data))
    return root / "masks", {"format": "masks"}, path


def _png_seeds() -> list[bytes]:
    import numpy as np
    from PIL import Image

    seeds = []
    palette = Image.fromarray(_mask(), mode="L").convert("P")
    palette.putpalette([0, 0, 0, 128, 0, 0, 0, 128, 0] + [0] * 759)
    for image in (Image.fromarray(_mask()), palette, Image.fromarray(_mask().astype(np.uint16) * 300)):
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        seeds.append(buffer.getvalue())
    return seeds


VOC = b"""<annotation>
    <folder>VOC2007</folder>
    <filename>a.jpg</filename>
    <size><width>32</width><height>24</height><depth>3</depth></size>
    <object>
        <name>cat</name><pose>Unspecified</pose><truncated>0</truncated><difficult>0</difficult>
        <bndbox><xmin>1</xmin><ymin>2</ymin><xmax>20</xmax><ymax>18</ymax></bndbox>
    </object>
    <object>
        <name>dog</name>
        <bndbox><xmin>4</xmin><ymin>4</ymin><xmax>30</xmax><ymax>22</ymax></bndbox>
        <part><name>head</name><bndbox><xmin>5</xmin><ymin>5</ymin><xmax>9</xmax><ymax>9</ymax></bndbox></part>
    </object>
</annotation>
"""
VOC_TREE = VOC.replace(b"<annotation>", b'<?xml version="1.0"?>\n<!-- CVAT -->\n<annotation verified="yes">')
YOLO_ROWS = b"0 0.5 0.5 0.25 0.25\n1 0.1 0.2 0.3 0.4 0.5 0.6\n2 0.9 0.9 0.05 0.05\n"
DATA_YAML = b"""path: .
train: images/train
val: images/train
nc: 3
names: &names
  0: cat
  1: dog
  2: bird
extra: *names
"""
COCO = json.dumps({
    "info": {"year": 2024}, "licenses": [],
    "images": [{"id": 1, "file_name": "a.jpg", "width": 32, "height": 24},
               {"id": 2, "file_name": "b.jpg", "width": 32, "height": 24}],
    "annotations": [
        {"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 10, 8], "area": 80, "iscrowd": 0,
         "segmentation": [[1, 2, 11, 2, 11, 10, 1, 10]]},
        {"id": 2, "image_id": 2, "category_id": 2, "bbox": [3, 3, 5.5, 4], "area": 22, "iscrowd": 1,
         "segmentation": {"size": [24, 32], "counts": "abc"}},
    ],
    "categories": [{"id": 1, "name": "cat", "supercategory": "animal"}, {"id": 2, "name": "dog"}],
}, indent=1).encode()
CSV = b"image_name,label_name\na.jpg,cat\nb.jpg,dog\nc.jpg,7\n"
CLASS_TABLE = b"Pixel Value, Class\n0, background\n1, door\n2, wall\n"
LIST = b"a\nb\n"
TOKEN_LINES = (b'{"input_ids": [101, 7, 8, 102], "token_type_ids": [0, 0, 0, 0], "label": 1}\n'
               b'{"input_ids": [101, 9, 102, 5, 102], "token_type_ids": [0, 0, 0, 1, 1], "label": 0}\n'
               b'{"input_ids": [101, 102], "token_type_ids": [0, 0], "label": 1}\n')
# Multiple choice (SWAG): a sequence per choice, the label the right choice.
CHOICE_LINES = (b'{"input_ids": [[101, 9, 102], [101, 5, 102]], "label": 1}\n'
                b'{"input_ids": [[101, 7, 102], [101, 8, 8, 102]], "label": 0}\n')


def _token_table():
    """A small tokenized dataset as datasets writes it: list columns, a ClassLabel label and the
    ``huggingface`` schema metadata."""
    import pyarrow as pa

    features = {"input_ids": {"feature": {"dtype": "int32", "_type": "Value"}, "_type": "List"},
                "token_type_ids": {"feature": {"dtype": "int8", "_type": "Value"}, "_type": "List"},
                "label": {"names": ["neg", "pos"], "_type": "ClassLabel"}}
    table = pa.table({"input_ids": pa.array([[101, 7, 8, 102], [101, 9, 102], [101, 102]], pa.list_(pa.int32())),
                      "token_type_ids": pa.array([[0, 0, 0, 0], [0, 0, 1], [0, 0]], pa.list_(pa.int8())),
                      "label": pa.array([1, 0, 1], pa.int64())})
    return table.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": features}})})


def _arrow_seeds() -> list[tuple[str, bytes]]:
    import pyarrow as pa

    table = _token_table()
    seeds = []
    for new in (pa.ipc.new_stream, pa.ipc.new_file):
        sink = pa.BufferOutputStream()
        with new(sink, table.schema) as writer:
            for batch in table.to_batches(max_chunksize=2):
                writer.write_batch(batch)
        seeds.append((".arrow", sink.getvalue().to_pybytes()))
    return seeds


def _compressed_arrow_seeds() -> list[tuple[str, bytes]]:
    """Arrow streams and files whose buffers are compressed (each opens with the length it
    decompresses to), with a dictionary-encoded column, so that dictionary batches are too."""
    import pyarrow as pa

    table = _token_table()
    table = table.append_column("split", pa.array(["train", "test", "train"]).dictionary_encode())
    seeds = []
    for codec in ("zstd", "lz4"):
        for new in (pa.ipc.new_stream, pa.ipc.new_file):
            sink = pa.BufferOutputStream()
            with new(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression=codec)) as writer:
                for batch in table.to_batches(max_chunksize=2):
                    writer.write_batch(batch)
            seeds.append((".arrow", sink.getvalue().to_pybytes()))
    return seeds


def _parquet_seeds() -> list[tuple[str, bytes]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(_token_table(), sink, row_group_size=2)
    return [(".parquet", sink.getvalue().to_pybytes())]


def _token_file(root: Path, data: bytes, suffix: str):
    path = _put(root / f"train{suffix or '.jsonl'}", data)
    return path, {"format": "tokens"}, path


def _inside_zip(data: bytes, change: Callable[[bytes], bytes]) -> bytes:
    """Each member of the zip ``data`` changed, re-zipped as it was stored (CRCs recomputed)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            target.writestr(info.filename, change(source.read(info)), compress_type=info.compress_type)
    return out.getvalue()


def _inside_gzip(data: bytes, change: Callable[[bytes], bytes]) -> bytes:
    import gzip

    if not data.startswith(b"\x1f\x8b"):
        return change(data)
    return gzip.compress(change(gzip.decompress(data)), mtime=0)


def _inside_png(data: bytes, change: Callable[[bytes], bytes]) -> bytes:
    """The PNG's chunks, one of them (or the inflated image data) changed, CRCs recomputed."""
    import zlib

    chunks, at = [], 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        chunks.append([kind, data[at + 8:at + 8 + length]])
        at += 12 + length
    idat = [chunk for chunk in chunks if chunk[0] == b"IDAT"]
    if idat and len(data) % 2:
        idat[0][1] = zlib.compress(change(zlib.decompress(b"".join(c[1] for c in idat))))
        chunks = [chunk for chunk in chunks if chunk[0] != b"IDAT" or chunk is idat[0]]
    elif chunks:
        chunk = chunks[len(data) % len(chunks)]
        chunk[1] = change(chunk[1])
    return data[:8] + b"".join(struct.pack(">I", len(body)) + kind + body
                               + struct.pack(">I", zlib.crc32(kind + body)) for kind, body in chunks)


@dataclass
class Format:
    """One fuzzed format: its seed files and how a mutated file becomes a dataset to audit.

    ``lay_out(root, data, suffix)`` writes the dataset into ``root`` and returns
    (path to audit, the audit options, the mutated file's path). ``inside(data, change)``,
    when given, applies ``change`` to what the container wraps and wraps it again with valid
    checksums (a zip member re-zipped, a gzip stream re-compressed, PNG chunks with their
    CRCs), so that half of the mutations get past the container to the parser behind it."""

    name: str
    seeds: Callable[[], list]
    lay_out: Callable[[Path, bytes, str], tuple[Path, dict, Path]]
    text: bool = False
    inside: Callable[[bytes, Callable[[bytes], bytes]], bytes] | None = None
    loaded: list = field(default_factory=list)
    tokens: bool = False  # audited with a token spec too, so that every token rule runs

    def spec(self):
        import labelguard

        if not self.tokens:
            return labelguard.LabelSpec(num_classes=3)
        from labelguard.core.spec import TokenSpec

        return labelguard.LabelSpec(num_classes=3, tokens=TokenSpec(
            vocab_size=200, max_position_embeddings=8, position_offset=2, pad_token_id=1, type_vocab_size=2,
            num_labels=2))

    def seed_files(self) -> list[tuple[str, bytes]]:
        if not self.loaded:
            for seed in self.seeds():
                self.loaded.append(seed if isinstance(seed, tuple) else ("", seed))
        return self.loaded


def _image(path: Path) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (32, 24)).save(path)


def _put(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _mask_file(extension: str):
    def lay_out(root: Path, data: bytes, suffix: str) -> tuple[Path, dict, Path]:
        path = _put(root / "masks" / f"case{suffix or extension}", data)
        return root / "masks", {"format": "masks"}, path
    return lay_out


def _voc(root: Path, data: bytes, suffix: str):
    _image(root / "JPEGImages" / "a.jpg")
    return root, {"format": "voc"}, _put(root / "Annotations" / "a.xml", data)


def _yolo_rows(root: Path, data: bytes, suffix: str):
    _image(root / "images" / "train" / "a.jpg")
    _put(root / "data.yaml", DATA_YAML)
    return root / "data.yaml", {}, _put(root / "labels" / "train" / "a.txt", data)


def _data_yaml(root: Path, data: bytes, suffix: str):
    _put(root / "labels" / "train" / "a.txt", YOLO_ROWS)
    _image(root / "images" / "train" / "a.jpg")
    path = _put(root / "data.yaml", data)
    return path, {}, path


def _coco(root: Path, data: bytes, suffix: str):
    _image(root / "images" / "a.jpg")
    return root, {"format": "coco"}, _put(root / "annotations" / "instances_train.json", data)


def _csv(root: Path, data: bytes, suffix: str):
    path = _put(root / "train.csv", data)
    _image(root / "a.jpg")
    return path, {"format": "csv"}, path


def _class_table(root: Path, data: bytes, suffix: str):
    """A split of Roboflow's PNG-mask export: a photo, its mask and the class table."""
    from PIL import Image

    _image(root / "test" / "a.jpg")
    Image.fromarray(_mask()).save(root / "test" / "a_mask.png")
    return root / "test", {}, _put(root / "test" / "_classes.csv", data)


def _file_list(root: Path, data: bytes, suffix: str):
    import numpy as np

    for name in ("a", "b"):
        buffer = io.BytesIO()
        np.save(buffer, _mask(4, 4))
        _put(root / "masks" / f"{name}.npy", buffer.getvalue())
    path = _put(root / "train.txt", data)
    return root, {"format": "masks", "lists": (str(path),)}, path


FORMATS = {format.name: format for format in (
    Format("npy", _npy_seeds, _mask_file(".npy")),
    Format("npz", _npz_seeds, _mask_file(".npz"), inside=_inside_zip),
    Format("hdf5", _hdf5_seeds, _mask_file(".h5")),
    Format("nifti", _nifti_seeds, _mask_file(".nii.gz"), inside=_inside_gzip),
    Format("tiff", _tiff_seeds, _mask_file(".tif")),
    Format("hdf5-external", _hdf5_external_seeds, _hdf5_external),
    Format("ome-tiff", _ome_tiff_seeds, _ome_tiff_file, text=True, inside=_inside_ome),
    Format("png", _png_seeds, _mask_file(".png"), inside=_inside_png),
    Format("voc", lambda: [VOC, VOC_TREE], _voc, text=True),
    Format("yolo", lambda: [YOLO_ROWS], _yolo_rows, text=True),
    Format("data.yaml", lambda: [DATA_YAML], _data_yaml, text=True),
    Format("coco", lambda: [COCO], _coco, text=True),
    Format("csv", lambda: [CSV], _csv, text=True),
    Format("class-table", lambda: [CLASS_TABLE], _class_table, text=True),
    Format("list", lambda: [LIST], _file_list, text=True),
    Format("arrow", _arrow_seeds, _token_file, tokens=True),
    Format("arrow-compressed", _compressed_arrow_seeds, _token_file, tokens=True),
    Format("parquet", _parquet_seeds, _token_file, tokens=True),
    Format("jsonl", lambda: [TOKEN_LINES, CHOICE_LINES], _token_file, text=True, tokens=True),
)}


# ---- mutations ----------------------------------------------------------------------------

INTERESTING = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
               0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 1 << 20, 1 << 31, 1 << 40]
TOKENS = [b"9" * 5000, b"1" + b"0" * 30, b"-1", b"1e400", b"NaN", b"[" * 5000, b"{" * 300, b"<a>" * 300,
          b"&x;", b"*x", b"&x [*x]", b"\x00", b"\xff\xfe", b'"', b"\\", b"\n" * 3, b"\r\n", b" " * 70000]


def mutate(data: bytes, rng: random.Random, text: bool) -> tuple[bytes, str]:
    """One to four stacked mutations of ``data``; the result and what was done."""
    data = bytearray(data)
    done = []
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
        kind = rng.choice(("flip", "byte", "integer", "insert", "delete", "repeat", "truncate", "token")
                          if text else ("flip", "flip", "byte", "integer", "integer", "insert", "delete",
                                        "repeat", "truncate"))
        at = rng.randrange(len(data)) if data else 0
        if kind == "flip" and data:
            data[at] ^= 1 << rng.randrange(8)
        elif kind == "byte" and data:
            data[at] = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))
        elif kind == "integer" and data:
            value = rng.choice(INTERESTING)
            width, order = rng.choice(((2, "<H"), (4, "<I"), (8, "<Q"), (4, ">I"), (8, ">Q")))
            data[at:at + width] = struct.pack(order, value & ((1 << (8 * width)) - 1))
        elif kind == "insert":
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.choice((1, 4, 16, 256))))
        elif kind == "delete" and data:
            del data[at:at + rng.choice((1, 4, 16, 256))]
        elif kind == "repeat" and data:
            span = data[at:at + rng.choice((4, 64, 1024))]
            data[at:at] = span * rng.choice((2, 16, 256))
        elif kind == "truncate" and data:
            del data[at:]
        elif kind == "token":
            token = rng.choice(TOKENS)
            data[at:at + rng.choice((0, 1, 4))] = token
        done.append(f"{kind}@{at}")
    return bytes(data), " ".join(done)


# ---- running one case -----------------------------------------------------------------------

@dataclass
class Outcome:
    format: str
    index: int
    kind: str  # "ok", "internal", "crash", "hang"
    detail: str = ""
    mutation: str = ""


def case(format: Format, index: int, seed: int) -> tuple[str, bytes, str]:
    """(suffix, mutated bytes, mutation) of case ``index``, the same on every run."""
    rng = random.Random(f"{seed}/{format.name}/{index}")
    suffix, data = rng.choice(format.seed_files())
    if format.inside is not None and rng.random() < 0.5:
        done = []

        def change(inner: bytes) -> bytes:
            mutated, how = mutate(inner, rng, format.text)
            done.append(how)
            return mutated

        return suffix, format.inside(data, change), "inside: " + " | ".join(done)
    mutated, how = mutate(data, rng, format.text)
    return suffix, mutated, how


def run_case(format: Format, index: int, seed: int, workdir: Path, limits: dict) -> Outcome:
    import inspect

    import labelguard
    from labelguard.layouts.base import AuditOptions

    # An older labelguard (to compare before and after a fix) takes no read limits.
    accepted = inspect.signature(labelguard.audit).parameters
    limits = {key: value for key, value in limits.items() if key in accepted and value}
    suffix, data, how = case(format, index, seed)
    root = workdir / f"{format.name}-{index}"
    shutil.rmtree(root, ignore_errors=True)
    try:
        target, options, _ = format.lay_out(root, data, suffix)
        try:
            report = labelguard.audit(str(target), format.spec(),
                                      options=AuditOptions(**options), use_project_config=False,
                                      workers=1, **limits)
        except labelguard.errors.LabelguardError as exc:
            # A usage error about the dataset as a whole (nothing to audit in it) is an answer.
            return Outcome(format.name, index, "ok", f"usage: {exc}", how)
        except Exception:
            return Outcome(format.name, index, "internal", traceback.format_exc(limit=-6), how)
        if report.errors:
            return Outcome(format.name, index, "internal", "\n".join(report.errors), how)
        return Outcome(format.name, index, "ok", ",".join(sorted(report.code_counts())), how)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ---- worker and driver ------------------------------------------------------------------------


def worker(args) -> None:
    """Run cases ``start..stop`` of one format, writing each index to the progress file before it
    runs and each outcome as a JSON line after: the driver knows where a dead worker died."""
    import resource

    if args.memory:
        limit = args.memory << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    format = FORMATS[args.worker]
    limits = {"max_file_bytes": args.memory << 18 or None, "max_pixels": args.memory << 16 or None}
    workdir = Path(tempfile.mkdtemp(prefix=f"lgfuzz-{format.name}-"))
    try:
        with open(args.progress, "a", encoding="utf-8") as progress:
            for index in range(args.start, args.stop):
                progress.write(json.dumps({"start": index}) + "\n")
                progress.flush()
                outcome = run_case(format, index, args.seed, workdir, limits)
                progress.write(json.dumps(outcome.__dict__) + "\n")
                progress.flush()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def drive(args) -> int:
    names = args.formats.split(",") if args.formats else list(FORMATS)
    unknown = [n for n in names if n not in FORMATS]
    if unknown:
        sys.exit(f"unknown format {', '.join(unknown)}; known: {', '.join(FORMATS)}")
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="lgfuzz-found-"))
    out.mkdir(parents=True, exist_ok=True)
    failures: list[Outcome] = []
    print(f"seed {args.seed}, {args.mutations} mutations per format, memory limit {args.memory} MiB; "
          f"failing inputs go to {out}")
    for name in names:
        _check_seeds(FORMATS[name])
        started = time.monotonic()
        outcomes = _drive_format(name, args)
        counts = {kind: sum(o.kind == kind for o in outcomes) for kind in ("ok", "internal", "crash", "hang")}
        found = [o for o in outcomes if o.kind != "ok"]
        failures.extend(found)
        for outcome in found:
            suffix, data, _ = case(FORMATS[name], outcome.index, args.seed)
            (out / f"{name}-{outcome.index}{suffix}.bin").write_bytes(data)
        lg001 = sum("LG001" in o.detail.split(",") for o in outcomes if o.kind == "ok")
        print(f"{name:>10}: {len(outcomes)} mutations in {time.monotonic() - started:.0f} s: "
              f"{counts['ok']} audited ({lg001} with LG001), {counts['internal']} internal errors, "
              f"{counts['crash']} crashes, {counts['hang']} hangs", flush=True)
    distinct: dict[str, list[Outcome]] = {}
    for outcome in failures:
        last = (outcome.detail.strip().splitlines() or [""])[-1]
        # "<temporary path>: check crashed: zlib.error: ..." -> the error, without the path
        key = outcome.kind + ": " + last.rpartition("check crashed: ")[2][:160]
        distinct.setdefault(key, []).append(outcome)
    for key, group in sorted(distinct.items(), key=lambda item: -len(item[1])):
        first = group[0]
        print(f"\n{len(group)} x {key}\n  first: --replay {first.format} {first.index} ({first.mutation})")
    return 1 if failures else 0


def _check_seeds(format: Format) -> None:
    """Stop when an unmutated seed is unreadable or crashes: its mutations would test nothing."""
    import labelguard
    from labelguard.layouts.base import AuditOptions

    for number, (suffix, data) in enumerate(format.seed_files()):
        with tempfile.TemporaryDirectory(prefix="lgfuzz-seed-") as folder:
            target, options, _ = format.lay_out(Path(folder) / "seed", data, suffix)
            report = labelguard.audit(str(target), format.spec(),
                                      options=AuditOptions(**options), use_project_config=False, workers=1)
        unreadable = [f.message for f in report.findings if f.code == "LG001"]
        if report.errors or unreadable or not report.summary.samples:
            why = report.errors or unreadable or "no sample audited"
            sys.exit(f"seed {number} of {format.name} is not a valid file: {why}")


def _drive_format(name: str, args) -> list[Outcome]:
    outcomes: list[Outcome] = []
    index = 0
    with tempfile.TemporaryDirectory(prefix="lgfuzz-progress-") as folder:
        progress = Path(folder) / "progress.jsonl"
        while index < args.mutations:
            progress.write_text("")
            command = [sys.executable, __file__, "--worker", name, "--start", str(index), "--stop",
                       str(args.mutations), "--seed", str(args.seed), "--progress", str(progress),
                       "--memory", str(args.memory)]
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            last, current, seen = time.monotonic(), None, 0
            while process.poll() is None:
                time.sleep(0.2)
                lines = progress.read_text().splitlines()
                if len(lines) != seen:
                    seen, last = len(lines), time.monotonic()
                    current = _current(lines)
                elif current is not None and time.monotonic() - last > args.case_timeout:
                    process.kill()
                    process.wait()
            lines = progress.read_text().splitlines()
            finished = [json.loads(line) for line in lines if '"kind"' in line]
            outcomes.extend(Outcome(**entry) for entry in finished)
            current = _current(lines)
            if process.returncode == 0 and current is None:
                break
            if current is None:  # died before its first case: nothing to blame on a file
                sys.exit(f"the {name} worker failed to start:\n{process.stderr.read()}")
            kind = "hang" if process.returncode in (-9, 137) else "crash"
            detail = f"process ended with {process.returncode}: {process.stderr.read()[-2000:]}"
            outcomes.append(Outcome(name, current, kind, detail, case(FORMATS[name], current, args.seed)[2]))
            index = current + 1
    return outcomes


def _current(lines: list[str]) -> int | None:
    """The index a worker started and did not finish, from its progress lines."""
    if lines and '"start"' in lines[-1]:
        return json.loads(lines[-1])["start"]
    return None


def replay(args) -> int:
    format = FORMATS[args.replay[0]]
    index = int(args.replay[1])
    workdir = Path(tempfile.mkdtemp(prefix="lgfuzz-replay-"))
    suffix, data, how = case(format, index, args.seed)
    kept = workdir / f"{format.name}-{index}{suffix}.bin"
    kept.write_bytes(data)
    limits = {"max_file_bytes": args.memory << 18, "max_pixels": args.memory << 16}
    outcome = run_case(format, index, args.seed, workdir, limits)
    print(f"{format.name} case {index} ({how}): {outcome.kind}\n{outcome.detail}\nthe input: {kept}")
    return 0 if outcome.kind == "ok" else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--mutations", type=int, default=600, help="cases per format (default 600)")
    parser.add_argument("--formats", help=f"comma-separated, of {', '.join(FORMATS)} (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory", type=int, default=2048,
                        help="address-space limit of a worker in MiB; the audit's read limits follow it")
    parser.add_argument("--case-timeout", type=float, default=60.0, help="seconds one case may take")
    parser.add_argument("--out", help="folder for the failing inputs (default: a new temporary folder)")
    parser.add_argument("--replay", nargs=2, metavar=("FORMAT", "INDEX"))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--stop", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--progress", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    if args.replay:
        return replay(args)
    return drive(args)


if __name__ == "__main__":
    sys.exit(main())
