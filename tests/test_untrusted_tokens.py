"""Compression bombs in tokenized data: what a record batch, a Parquet page or a JSON line
decodes to is held to the read limits before it is paid.

Each hostile file is real and small: a zstd or LZ4 Arrow file whose compressed buffers hold
hundreds of megabytes of zeros, a Parquet list column of dictionary indices that run-length
encoding keeps to a few hundred bytes, a Parquet page whose footer understates it, a text
column where ids belong that repeats a long string, and JSON whose parsed objects cost tens
of times its bytes. The Arrow and Parquet files are audited by the command line in a
subprocess under an address-space limit, its peak resident memory read when it ends; the
JSON lines in this process, their Python objects measured by tracemalloc.

And a data file is opened once, everything of it read from the descriptor that was checked
to be a regular file: a link put at its path once the check is done is never followed."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit_helpers import found, peak_of, run
from nlp_builders import arrow_stream_claiming_a_terabyte_body
from s3_server import s3_server  # noqa: F401  (the fixture)
from labelguard.core.spec import LabelSpec
from labelguard.core.spec import TokenSpec
from test_hostile_dataset import audit_limited

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/status"),
                                reason="the audit's peak memory is read from /proc/self/status (VmHWM)")

LIMIT = 50_000_000  # --max-file-bytes of the subprocess audits
DECLARED = 400_000_000  # what each bomb decodes to: eight times the limit
PEAK = 250 << 20  # an audit of any of them (labelguard and pyarrow loaded: about 80 MiB)
SPEC = LabelSpec(tokens=TokenSpec(vocab_size=100, origins=(("vocab_size", "the test"),)))


def zero_rows(values: int, width: int = 512):
    """An ``input_ids`` column of ``values`` zeros, ``width`` a row: what compresses to nothing."""
    offsets = np.arange(0, values + 1, width, dtype=np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(np.zeros(int(offsets[-1]), np.int32)))


def write_ipc(path, table, codec: str, kind: str) -> None:
    new = pa.ipc.new_file if kind == "file" else pa.ipc.new_stream
    with pa.OSFile(str(path), "wb") as sink, new(sink, table.schema,
                                               options=pa.ipc.IpcWriteOptions(compression=codec)) as writer:
        writer.write_table(table)


def arrow_ids_bomb(path, codec: str, kind: str) -> str:
    write_ipc(path, pa.table({"input_ids": zero_rows(DECLARED // 4)}), codec, kind)
    return "record batch 0"


def arrow_dictionary_bomb(path, codec: str, kind: str) -> str:
    """Three rows of ids beside a dictionary-encoded column whose dictionary holds the zeros."""
    split = pa.DictionaryArray.from_arrays(pa.array([0, 0, 1], pa.int32()),
                                           pa.array(np.zeros(DECLARED // 8, np.int64)))
    write_ipc(path, pa.table({"input_ids": pa.array([[1, 2], [3], [4]], pa.list_(pa.int32())), "split": split}),
              codec, kind)
    return "dictionary batch 0"


def audit_bomb(tmp_path, path) -> tuple[dict, int]:
    """(the JSON report, peak resident bytes) of ``labelguard audit`` of ``path``, one worker,
    under the address-space limit of the hostile dataset test."""
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 100}))
    work = tmp_path / "work"
    work.mkdir()
    code, stdout, stderr, peak = audit_limited(
        [str(path), "--model-config", str(tmp_path / "config.json"), "--max-file-bytes", str(LIMIT),
         "-f", "json", "--no-progress", "--no-config", "--workers", "1"], work)
    assert "Traceback" not in stderr and code == 1, stderr
    report = json.loads(stdout)
    assert report["summary"]["errors"] == []
    return report, peak


def unreadable(report: dict) -> str:
    [finding] = [f for f in report["findings"] if f["code"] == "LG001"]
    return finding["message"]


@needs_proc
@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("build, codec, kind", [
    (arrow_ids_bomb, "zstd", "file"), (arrow_ids_bomb, "zstd", "stream"),
    (arrow_ids_bomb, "lz4", "file"), (arrow_ids_bomb, "lz4", "stream"),
    (arrow_dictionary_bomb, "zstd", "stream"), (arrow_dictionary_bomb, "zstd", "file"),
])
def test_a_compressed_arrow_file_declaring_far_more_than_max_file_bytes_is_lg001_before_it_is_decompressed(
        tmp_path, build, codec, kind):
    path = tmp_path / "train.arrow"
    what = build(path, codec, kind)
    assert path.stat().st_size < DECLARED / 100
    report, peak = audit_bomb(tmp_path, path)
    message = unreadable(report)
    assert message.startswith(f"{what} (a body of ") and "once decompressed) decodes to" in message
    assert "over the limit of 47.7 MiB (max_file_bytes)" in message and "--max-file-bytes N" in message
    assert peak < PEAK, f"peak resident memory {peak / 2**20:.0f} MiB for a {path.stat().st_size:,}-byte file"


def parquet_dictionary_bomb(path) -> str:
    """One row of DECLARED / 4 zeros: a dictionary of one value and a run of its index, a
    few hundred bytes in all (the row group's total_byte_size says as much)."""
    pq.write_table(pa.table({"input_ids": zero_rows(DECLARED // 4, DECLARED // 4)}), str(path),
                   compression="zstd", use_dictionary=True)
    assert pq.ParquetFile(str(path)).metadata.row_group(0).total_byte_size < 1000
    return "row group 0 column input_ids.list.element (100,000,000 values of 4 bytes and a dictionary of 4 bytes)"


def zigzag_varint(value: int, width: int | None = None) -> bytes:
    """``value`` as Thrift's compact protocol writes an integer; padded to ``width`` bytes
    with continuation bytes when given (readers take the padded form as the same number)."""
    value = value << 1  # zigzag of a value >= 0
    out = bytearray()
    while True:
        out.append(value & 0x7F)
        value >>= 7
        if not value and (width is None or len(out) >= width):
            break
        out[-1] |= 0x80
    return bytes(out)


def parquet_understated_page(path) -> str:
    """One page of DECLARED bytes of zstd zeros whose footer says the row group and its column
    hold 1,000 bytes: pyarrow follows the page header, not the footer."""
    pq.write_table(pa.table({"input_ids": zero_rows(DECLARED // 4, DECLARED // 4)}), str(path),
                   compression="zstd", use_dictionary=False, data_page_size=1 << 30)
    data = path.read_bytes()
    footer_length = struct.unpack("<i", data[-8:-4])[0]
    footer = data[-8 - footer_length:-8]
    metadata = pq.ParquetFile(str(path)).metadata.row_group(0)
    size = metadata.total_byte_size
    assert size == metadata.column(0).total_uncompressed_size > DECLARED and footer.count(zigzag_varint(size)) == 2
    footer = footer.replace(zigzag_varint(size), zigzag_varint(1000, len(zigzag_varint(size))))
    path.write_bytes(data[:-8 - footer_length] + footer + data[-8:])
    assert pq.ParquetFile(str(path)).metadata.row_group(0).total_byte_size == 1000
    return "row group 0 column input_ids.list.element: the page at byte 4 decompresses to 381.5 MiB"


@needs_proc
@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("build", [parquet_dictionary_bomb, parquet_understated_page])
def test_a_parquet_column_declaring_far_more_than_max_file_bytes_is_lg001_before_it_is_decoded(tmp_path, build):
    path = tmp_path / "train.parquet"
    what = build(path)
    assert path.stat().st_size < DECLARED / 10_000
    report, peak = audit_bomb(tmp_path, path)
    message = unreadable(report)
    assert message.startswith(what) and "over the limit of 47.7 MiB (max_file_bytes)" in message
    assert peak < PEAK, f"peak resident memory {peak / 2**20:.0f} MiB for a {path.stat().st_size:,}-byte file"


@needs_proc
@pytest.mark.code("LG001", "fail")
def test_a_parquet_text_column_where_ids_belong_is_named_from_its_schema_and_never_decoded(tmp_path):
    """2,000 rows of one 200 KB string, dictionary-encoded: 400 MB once decoded, a few
    hundred bytes in the file. Without the Arrow schema beside it, pyarrow reads the column
    as plain strings."""
    text = pa.DictionaryArray.from_arrays(pa.array(np.zeros(2000, np.int32)), pa.array(["x" * 200_000]))
    path = tmp_path / "train.parquet"
    pq.write_table(pa.table({"input_ids": text}), str(path), compression="zstd", store_schema=False)
    assert pq.ParquetFile(str(path)).schema_arrow.field("input_ids").type == pa.string()
    assert path.stat().st_size < DECLARED / 100
    report, peak = audit_bomb(tmp_path, path)
    assert unreadable(report).startswith("column 'input_ids' holds string values, not ids")
    assert report["summary"]["samples"] == 2000
    assert peak < PEAK, f"peak resident memory {peak / 2**20:.0f} MiB for a {path.stat().st_size:,}-byte file"


@needs_proc
def test_a_parquet_footer_whose_column_metadata_aborts_pyarrow_is_lg001(tmp_path):
    """A repetition-level histogram of three entries for a column of one list level: pyarrow's
    own reader refuses it, but asking pyarrow for the chunk's metadata (``row_group(0).column(0)``)
    ends the process (a C++ exception past Cython). The limits read the footer themselves."""
    path = tmp_path / "train.parquet"
    pq.write_table(pa.table({"input_ids": pa.array([[1, 2, 3], [4, 5]] * 3, pa.list_(pa.int32()))}), str(path),
                   row_group_size=2)
    data = path.read_bytes()
    length = struct.unpack("<i", data[-8:-4])[0]
    footer = data[-8 - length:-8]
    assert footer.count(b"\x29\x26") == 3  # SizeStatistics field 2: a list of two i64, in each row group
    footer = footer.replace(b"\x29\x26", b"\x29\x36\x00")  # three, the first 0
    path.write_bytes(data[:-8 - length] + footer + struct.pack("<i", len(footer)) + b"PAR1")
    report, _ = audit_bomb(tmp_path, path)
    assert unreadable(report).startswith("cannot read the parquet: Repetition level histogram size mismatch")


@needs_proc
def test_a_parquet_page_header_holding_a_map_of_a_trillion_booleans_is_lg001(tmp_path):
    """Found by fuzzing the page-header reader: the entries of a Thrift map of booleans took
    no bytes, so a count of 2**40 read nothing for ever. Each entry takes a byte: a count past
    the bytes left is a damaged header. (pyarrow refuses the header too, by its own bound.)"""
    path = tmp_path / "train.parquet"
    pq.write_table(pa.table({"input_ids": pa.array([[1, 2, 3], [4, 5]] * 100, pa.list_(pa.int32()))}), str(path),
                   use_dictionary=False, compression="none")
    assert pq.ParquetFile(str(path)).metadata.row_group(0).column(0).data_page_offset == 4
    # type DATA_PAGE, sizes 100 and 100, then field 4 a map of 2**40 (boolean, boolean) entries
    header = b"\x15\x00" + b"\x15" + zigzag_varint(100) + b"\x15" + zigzag_varint(100) + b"\x1b" \
        + zigzag_varint(1 << 39) + b"\x11"  # a plain varint of 2**40: zigzag doubles
    data = bytearray(path.read_bytes())
    data[4:4 + len(header)] = header
    path.write_bytes(bytes(data))
    report, _ = audit_bomb(tmp_path, path)
    assert unreadable(report).startswith("cannot read the parquet: row group 0 column input_ids.list.element: the "
                                         "page header at byte 4 is damaged")


@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("kind", ["stream", "file"])
def test_record_batches_declaring_more_rows_than_max_pixels_are_lg001(tmp_path, kind):
    """A column of nulls costs the file nothing a row: 3,000,000 of them in a 300-byte
    batch, where each batch of rows is still work for the audit."""
    path = tmp_path / "train.arrow"
    write_ipc(path, pa.table({"input_ids": pa.nulls(3_000_000)}), None, kind)
    assert path.stat().st_size < 1000
    report = run(path, SPEC, max_pixels=1_000_000)
    [finding] = found(report, "LG001")
    assert finding.message.startswith("record batch 0 declares 3,000,000 values in one array, over the limit of "
                                      "1,000,000 elements per array (max_pixels)")


@pytest.mark.code("LG001", "fail")
@pytest.mark.parametrize("kind", ["arrow", "parquet"])
def test_a_schema_naming_a_column_of_ids_twice_is_lg001(tmp_path, kind):
    """Found by the fuzzer (a byte of a field name changed): reading the column by its name
    was an internal error."""
    ids = pa.array([[1, 2], [3]], pa.list_(pa.int32()))
    table = pa.Table.from_arrays([ids, ids], names=["input_ids", "input_ids"])
    path = tmp_path / f"train.{kind}"
    if kind == "parquet":
        pq.write_table(table, str(path))
    else:
        write_ipc(path, table, None, "stream")
    report = run(path, SPEC)
    assert report.errors == []
    [finding] = found(report, "LG001")
    assert finding.message.startswith("the schema names column 'input_ids' 2 times: which one holds the values")


@pytest.mark.parametrize("codec, kind", [("zstd", "file"), ("lz4", "stream")])
def test_a_compressed_arrow_file_under_the_limits_is_read_and_audited(tmp_path, codec, kind):
    rows = [[1, 2, 3] if i % 7 else [1, 200] for i in range(2500)]  # every 7th row holds id 200
    table = pa.table({"input_ids": pa.array(rows, pa.list_(pa.int32())), "label": pa.array(np.zeros(2500, np.int64))})
    path = tmp_path / "train.arrow"
    new = pa.ipc.new_file if kind == "file" else pa.ipc.new_stream
    with pa.OSFile(str(path), "wb") as sink, new(sink, table.schema,
                                               options=pa.ipc.IpcWriteOptions(compression=codec)) as writer:
        for first in range(0, 2500, 300):
            writer.write_batch(table.to_batches()[0].slice(first, 300))
    report = run(path, SPEC)
    [ids] = found(report, "LG601")
    assert ids.data["row_count"] == 358 and ids.data["rows"][:3] == [0, 7, 14]
    assert report.summary.samples == 2500 and not found(report, "LG001")


def test_a_compressed_parquet_file_under_the_limits_is_read_and_audited(tmp_path):
    rows = [[1, 2, 3] if i % 7 else [1, 200] for i in range(2500)]
    path = tmp_path / "train.parquet"
    pq.write_table(pa.table({"input_ids": pa.array(rows, pa.list_(pa.int32()))}), str(path),
                   compression="zstd", row_group_size=600, data_page_size=512)
    assert pq.ParquetFile(str(path)).metadata.num_row_groups == 5
    report = run(path, SPEC, max_file_bytes=1 << 20)
    [ids] = found(report, "LG601")
    assert ids.data["row_count"] == 358 and ids.data["rows"][:3] == [0, 7, 14]
    assert report.summary.samples == 2500 and not found(report, "LG001")


# ---- JSON lines: a line's cost, once parsed ----------------------------------------------------

JSON_LIMIT = 2 << 20  # max_file_bytes of the JSON-lines audits: a line may hold 32 KiB, and what the
# audit allocates besides (the file read, its findings) keeps the peak under twice the limit


def test_a_json_line_whose_objects_would_cost_more_than_max_file_bytes_is_lg001_unparsed(tmp_path):
    """1 MB of empty lists, half max_file_bytes on disk, takes 38 MB as Python objects."""
    path = tmp_path / "train.jsonl"
    path.write_text('{"input_ids": [1, 2]}\n{"input_ids": [' + "[]," * 350_000 + "[]]}\n")
    assert path.stat().st_size < JSON_LIMIT
    report, peak = peak_of(lambda: run(path, SPEC, max_file_bytes=JSON_LIMIT, workers=1))
    [finding] = found(report, "LG001")
    assert finding.message.startswith("line 2 holds 1.0 MiB of JSON; parsed into Python objects (up to 64 bytes "
                                      "a byte), it may take 64.1 MiB, over the limit of 2.0 MiB (max_file_bytes)")
    assert report.summary.samples == 1
    assert peak < 2 * JSON_LIMIT, f"{peak / 2**20:.1f} MiB"


def test_json_lines_are_parsed_a_batch_of_at_most_max_file_bytes_worth_at_a_time(tmp_path):
    """60 lines of 24 KB, each under the line bound, 1.4 MB in all: parsed at once they would
    take 55 MB. Batched by their bytes, the rows keep their numbers across the batches."""
    padding = "[" + "[]," * 8_000 + "[]]"
    lines = [f'{{"input_ids": {[1, 200] if i % 7 == 0 else [1, 2]}, "pad": {padding}}}' for i in range(60)]
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(lines) + "\n")
    report, peak = peak_of(lambda: run(path, SPEC, max_file_bytes=JSON_LIMIT, workers=1))
    [ids] = found(report, "LG601")
    assert ids.data["rows"] == list(range(0, 60, 7)) and report.summary.samples == 60
    assert not found(report, "LG001")
    assert peak < 2 * JSON_LIMIT, f"{peak / 2**20:.1f} MiB"


# ---- the metadata walks on any bytes -----------------------------------------------------------

def _compressed_seeds() -> list[bytes]:
    table = pa.table({"input_ids": pa.array([[1, 2, 3], [4, 5]] * 3, pa.list_(pa.int32())),
                      "split": pa.array(["a", "b"] * 3).dictionary_encode()})
    seeds = []
    for new in (pa.ipc.new_stream, pa.ipc.new_file):
        sink = pa.BufferOutputStream()
        with new(sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")) as writer:
            for batch in table.to_batches(max_chunksize=2):
                writer.write_batch(batch)
        seeds.append(sink.getvalue().to_pybytes())
    sink = pa.BufferOutputStream()
    pq.write_table(table.select(["input_ids"]), sink, compression="zstd", row_group_size=2, data_page_size=16)
    seeds.append(sink.getvalue().to_pybytes())
    return seeds


SEEDS = _compressed_seeds()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(SEEDS))), st.lists(st.tuples(st.floats(0, 1, exclude_max=True),
                                                                st.sampled_from([0, 1, 0x7F, 0x80, 0xFF]),
                                                                st.integers(1, 8)), min_size=1, max_size=6),
       st.booleans())
def test_the_metadata_walks_end_on_any_bytes_with_a_read_error_at_most(which, changes, ahead):
    """Any bytes written over a compressed Arrow stream, file or Parquet file: walking their
    metadata (not the audit around it) ends, and raises nothing but ReadError."""
    from labelguard.core.limits import ReadLimits, applied_limits
    from labelguard.readers.base import ReadError
    from labelguard.readers.columnar import IpcLimits, ParquetLimits

    data = bytearray(SEEDS[which])
    for place, value, width in changes:
        at = int(place * len(data))
        data[at:at + width] = bytes([value]) * width
    data = bytes(data)

    def read_at(offset, count):
        return data[offset:offset + count] if offset >= 0 else b""

    with applied_limits(ReadLimits(max_pixels=1 << 20, max_file_bytes=1 << 20)):
        try:
            if which < 2:
                limits = IpcLimits(read_at, len(data), "arrow stream" if which == 0 else "arrow file", ahead)
                for _ in limits.batches():
                    pass
            else:
                try:
                    parquet = pq.ParquetFile(pa.BufferReader(data))
                except (pa.ArrowException, OSError, UnicodeDecodeError):
                    return  # pyarrow opens no such file: nothing of it is read
                limits = ParquetLimits(read_at, len(data), ["input_ids"])
                for group in range(parquet.num_row_groups):
                    limits.check_row_group(group)
        except ReadError:
            pass


SWAP_AFTER_THE_CHECK = """
import json, os, sys

from labelguard.readers.tokens import read_token_file

data, link = sys.argv[1], sys.argv[2]
opens, swaps = [], []


def swap_once_checked(event, args):
    # open_regular wraps the descriptor it checked in a file object (an "open" of an int):
    # from then on the path is the attacker's, and a link to another file takes its place.
    if event != "open":
        return
    if args[0] == data:
        opens.append(args[0])
    elif isinstance(args[0], int) and opens and not swaps:
        swaps.append(args[0])
        os.replace(link, data)


sys.addaudithook(swap_once_checked)
ids = [int(value) for batch in read_token_file(data, "data") for value in batch.columns["input_ids"].values]
print(json.dumps({"opens": len(opens), "swapped": bool(swaps), "ids": ids}))
"""


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
@pytest.mark.parametrize("kind", ["arrow stream", "arrow file", "parquet", "jsonl"])
def test_a_data_file_is_opened_once_and_a_link_put_at_its_path_after_the_check_is_never_read(tmp_path, kind):
    """Python's audit hook sees every open by name (os.open, open) of the reader, in a
    subprocess: the data file's path is opened once, and once that descriptor is checked a
    link to a file outside the dataset replaces the file. What is read is the file checked."""
    from nlp_builders import write_arrow_file, write_jsonl, write_parquet

    def write(path, ids):
        columns = {"input_ids": ids}
        if kind == "parquet":
            write_parquet(path, columns)
        elif kind == "jsonl":
            write_jsonl(path, columns)
        elif kind == "arrow file":
            write_arrow_file(path, columns)
        else:
            write_ipc(path, pa.table(columns), None, "stream")

    suffix = {"parquet": ".parquet", "jsonl": ".jsonl"}.get(kind, ".arrow")
    data, outside, link = tmp_path / "data" / f"train{suffix}", tmp_path / f"outside{suffix}", tmp_path / "link"
    data.parent.mkdir()
    write(data, [[1, 2, 3], [4, 5]])
    write(outside, [[99, 99, 99, 99]])
    link.symlink_to(outside)
    done = subprocess.run([sys.executable, "-c", SWAP_AFTER_THE_CHECK, str(data), str(link)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    read = json.loads(done.stdout)
    assert read["swapped"] and data.is_symlink()  # the link did take the file's place mid-read
    assert read["ids"] == [1, 2, 3, 4, 5]
    assert read["opens"] == 1


def test_an_object_whose_record_batch_claims_a_terabyte_body_is_lg001_and_nothing_is_allocated_for_it(s3_server):
    """Streamed from object storage, an Arrow file reaches pyarrow through a Python file
    object: the reads pyarrow asks for are held to what the object holds, never allocated
    at the length a message declares (Python's read(n) allocates n bytes first)."""
    from labelguard import audit

    bucket = s3_server.bucket("terabyte-claims")
    s3_server.put(f"{bucket}/train.arrow", arrow_stream_claiming_a_terabyte_body())
    report = audit(bucket, SPEC, use_project_config=False, cache=False, storage_options=s3_server.options)
    assert report.errors == []
    [unreadable] = found(report, "LG001")
    assert "cannot read the arrow stream" in unreadable.message and "1099511627776 bytes" in unreadable.message
    assert report.summary.samples == 60  # the first batch was read and checked
