"""What Arrow IPC and Parquet files declare they decode to, read from their metadata before
pyarrow decodes anything.

A compressed record batch or Parquet page states the size it decompresses to, and a few bytes
of run-length or dictionary indices can stand for millions of values: a 50 KB file can decode
to gigabytes. :mod:`labelguard.readers.tokens` asks these checks about each record batch and
each row group just before pyarrow reads it; a size past the read limits is a
:class:`~labelguard.readers.base.ReadError` (LG001) naming the batch or the column and the
sizes, and nothing of it is allocated.

* Arrow IPC (the stream and the file format): a message's flatbuffer metadata gives its
  body's length, the length of each of its arrays and its buffers; a compressed buffer
  (LZ4_FRAME or ZSTD) opens with the little-endian int64 length it decompresses to (-1:
  stored as it is).
* Parquet: each page's header (Thrift compact protocol) gives its uncompressed size and how
  many values it holds. The footer's totals are the writer's word, which pyarrow does not
  hold the pages to, so the page headers themselves are read (where the footer, read here
  too, says each column chunk starts).

Only metadata is read, through ``read_at(offset, size)``: a message's flatbuffer and 8 bytes
per compressed buffer, the footer and a header per page; bodies and pages are skipped. Every
offset read from the metadata is checked against it: damaged metadata is a ReadError, never
an IndexError or a read elsewhere.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NamedTuple

from labelguard.core.limits import current_limits
from labelguard.core.text import byte_size
from labelguard.readers.base import ReadError, check_decoded, check_elements

ReadAt = Callable[[int, int], bytes]

_U8, _U16, _I32, _U32, _I64 = (struct.Struct(f) for f in ("<B", "<H", "<i", "<I", "<q"))
_FIELD_NODE = struct.Struct("<qq")  # length, null_count
_BUFFER = struct.Struct("<qq")  # offset in the body, length
_BLOCK = struct.Struct("<qi4xq")  # offset, metaDataLength, bodyLength
_CONTINUATION = 0xFFFFFFFF
_DICTIONARY_BATCH, _RECORD_BATCH = 2, 3  # MessageHeader's union types
_FILE_TRAILER = 10  # the footer's int32 length, then "ARROW1"
# What is read at a message's start: its prefix and, in one read, its metadata as writers make it
# (a few hundred bytes); longer metadata takes a second read.
_MESSAGE_HEAD = 1024
# Absent fields past a vtable's end, up to the last field read here (field 3 of a Message,
# RecordBatch or Footer): reading a field takes no test of the vtable's length.
_ABSENT = (0,) * 4


class _Damaged(Exception):
    """Metadata whose offsets point outside it."""


def _unpack(kind: struct.Struct, data: bytes, at: int) -> Any:
    if at < 0:
        raise _Damaged
    try:
        return kind.unpack_from(data, at)[0]
    except struct.error:  # past the end
        raise _Damaged from None


class _Table:
    """A flatbuffer table of ``data`` at ``at``, its fields read with every offset checked.
    (A table lies at ``at`` >= 0 and its fields after it: only reads past the end can fail.)"""

    __slots__ = ("data", "at", "offsets")

    def __init__(self, data: bytes, at: int) -> None:
        try:
            vtable = at - _I32.unpack_from(data, at)[0] if at >= 0 else -1
            if vtable < 0:
                raise _Damaged
            size = _U16.unpack_from(data, vtable)[0]
            if size < 4 or size % 2:
                raise _Damaged
            self.offsets = _vtable_entries(size).unpack_from(data, vtable + 4) + _ABSENT  # from ``at``; 0: absent
        except struct.error:  # past the end
            raise _Damaged from None
        self.data, self.at = data, at

    def has(self, index: int) -> bool:
        return bool(self.offsets[index])

    def number(self, index: int, kind: struct.Struct, default: int = 0) -> int:
        offset = self.offsets[index]
        if not offset:
            return default
        try:
            return kind.unpack_from(self.data, self.at + offset)[0]
        except struct.error:
            raise _Damaged from None

    def table(self, index: int) -> _Table | None:
        offset = self.offsets[index]
        if not offset:
            return None
        place = self.at + offset
        return _Table(self.data, place + _unpack(_U32, self.data, place))

    def vector(self, index: int, item_size: int) -> memoryview:
        """The bytes of the vector of structs of ``item_size`` bytes at field ``index``."""
        offset = self.offsets[index]
        if not offset:
            return memoryview(b"")
        place = self.at + offset
        start = place + _unpack(_U32, self.data, place) + 4
        end = start + _unpack(_U32, self.data, start - 4) * item_size
        if end > len(self.data):
            raise _Damaged
        return memoryview(self.data)[start:end]

    def structs(self, index: int, kind: struct.Struct) -> list[tuple]:
        return list(kind.iter_unpack(self.vector(index, kind.size)))


@functools.lru_cache(maxsize=None)
def _vtable_entries(size: int) -> struct.Struct:
    return struct.Struct(f"<{(size - 4) // 2}H")


def _root(data: bytes) -> _Table:
    return _Table(data, _unpack(_U32, data, 0))


class _Message(NamedTuple):
    """An encapsulated IPC message: its header (a RecordBatch table, a DictionaryBatch's
    RecordBatch, else None) and where its body lies in the file."""

    kind: int
    header: _Table | None
    body_at: int
    body_length: int


class IpcLimits:
    """The read limits held against an Arrow IPC file's messages, each checked before
    pyarrow reads it: the bytes a record batch or dictionary decodes to (its body, and its
    compressed buffers once decompressed) against ``max_file_bytes``; the length of each of
    its arrays, and the rows of the file so far, against ``max_pixels``.

    ``kind``: ``arrow stream`` (its messages walked in order, as pyarrow's stream reader
    reads them) or ``arrow file`` (the blocks its footer lists). A message costs a read and
    a few microseconds, the text naming a batch made only for one past a limit. With
    ``ahead`` every message is checked at the start, in one pass (for a local file, less than
    half the time of reads taking turns with pyarrow's); without, each just before pyarrow
    reads it, so that both share the ranges of object storage fetched for it."""

    def __init__(self, read_at: ReadAt, size: int, kind: str, ahead: bool) -> None:
        self.read_at, self.size, self.kind, self.ahead = read_at, size, kind, ahead
        self.limits = current_limits()
        self.rows = 0

    def batches(self) -> Iterator[None]:
        """Yields once for each record batch, when it and the dictionaries before it are
        checked; a batch past a limit raises its ReadError where its turn comes, after the
        batches before it."""
        walk = self._stream() if self.kind == "arrow stream" else self._file()
        if not self.ahead:
            yield from walk
            return
        checked: list[ReadError | None] = []
        try:
            for _ in walk:
                checked.append(None)
        except ReadError as error:
            checked.append(error)
        for outcome in checked:
            if outcome is not None:
                raise outcome
            yield

    def _stream(self) -> Iterator[None]:
        """The messages of an IPC stream in order, to the end-of-stream marker or to where
        a message is cut off (pyarrow says why)."""
        at, batches, dictionaries = 0, 0, 0
        while True:
            message = self._message_at(at, "message at byte", at)
            if message is None:
                return
            if message.kind == _DICTIONARY_BATCH:
                self._check(message, "dictionary batch", dictionaries)
                dictionaries += 1
            elif message.kind == _RECORD_BATCH:
                self._check(message, "record batch", batches)
                batches += 1
                yield
            at = message.body_at + message.body_length

    def _file(self) -> Iterator[None]:
        """Every dictionary an IPC file's footer lists (pyarrow reads them all with the first
        record batch), then each record batch it lists. A block the file does not hold is
        pyarrow's to refuse."""
        dictionaries, batches = self._footer()
        for kind, blocks in (("dictionary batch", dictionaries), ("record batch", batches)):
            for index, (offset, _, _) in enumerate(blocks):
                message = self._message_at(offset, kind, index)
                if message is not None:
                    self._check(message, kind, index)
                if kind == "record batch":
                    yield

    def _footer(self) -> tuple[list[tuple], list[tuple]]:
        trailer = self.read_at(self.size - _FILE_TRAILER, 4)
        length = _I32.unpack(trailer)[0] if len(trailer) == 4 else -1
        start = self.size - _FILE_TRAILER - length
        try:
            if length <= 0 or start < 0:
                raise _Damaged
            footer = _root(self.read_at(start, length))
            return footer.structs(2, _BLOCK), footer.structs(3, _BLOCK)
        except _Damaged:
            raise ReadError(f"cannot read the {self.kind}: its footer points outside itself") from None

    def _message_at(self, at: int, kind: str, index: int) -> _Message | None:
        """The message at byte ``at`` (``kind`` ``index``, for messages); None at the
        end-of-stream marker or where the file ends before the message does."""
        head = self.read_at(at, _MESSAGE_HEAD)
        if len(head) < 4:
            return None
        if _U32.unpack_from(head)[0] == _CONTINUATION:
            if len(head) < 8:
                return None
            length, skip = _I32.unpack_from(head, 4)[0], 8
        else:  # before Arrow 0.15 a message opened with its length alone
            length, skip = _I32.unpack_from(head)[0], 4
        if length <= 0:
            return None
        metadata = head[skip:skip + length] if skip + length <= len(head) else self.read_at(at + skip, length)
        if len(metadata) < length:
            return None
        try:
            message = _root(metadata)
            kind_of, body_length = message.number(1, _U8), message.number(3, _I64)
            header = message.table(2) if kind_of in (_DICTIONARY_BATCH, _RECORD_BATCH) else None
            if kind_of == _DICTIONARY_BATCH and header is not None:
                header = header.table(1)  # DictionaryBatch.data: the dictionary as a RecordBatch
        except _Damaged:
            raise self._damaged(kind, index) from None
        if body_length < 0:  # pyarrow refuses it; the walk would go back
            return None
        return _Message(kind_of, header, at + skip + length, body_length)

    def _damaged(self, kind: str, index: int) -> ReadError:
        return ReadError(f"cannot read the {self.kind}: the metadata of its {kind} {index:,} points outside itself")

    def _check(self, message: _Message, kind: str, index: int) -> None:
        header = message.header
        if header is None or message.body_at + message.body_length > self.size:
            return  # a body past the file's end: pyarrow refuses it before allocating anything
        try:
            declared_rows = header.number(0, _I64)
            lengths = header.vector(1, _FIELD_NODE.size).cast("q")[::2]  # each FieldNode's length
            compressed = header.has(3)  # a BodyCompression
            # Only a compressed body can decode to more than it holds: an uncompressed one is
            # bounded by the file's bytes, and pyarrow holds each buffer to the body.
            buffers = header.structs(2, _BUFFER) if compressed else ()
        except _Damaged:
            raise self._damaged(kind, index) from None
        body = message.body_length
        decompressed = sum(self._decompressed_length(message, offset, length) for offset, length in buffers) \
            if compressed else 0
        limits = self.limits
        if body + decompressed > limits.max_file_bytes:
            check_decoded(f"{kind} {index} (a body of {byte_size(body)}, its compressed buffers declaring "
                          f"{byte_size(decompressed)} once decompressed)" if compressed else f"{kind} {index}",
                          body + decompressed)
        longest = max(lengths) if lengths else 0
        if longest > limits.max_pixels:
            check_elements(f"{kind} {index}", longest, "values in one array")
        if kind == "record batch" and declared_rows > 0:
            self.rows += declared_rows
            if self.rows > limits.max_pixels:
                check_elements(f"the {self.kind}'s record batches up to {kind} {index}", self.rows, "rows", "hold")

    def _decompressed_length(self, message: _Message, offset: int, length: int) -> int:
        """What one compressed buffer declares it decompresses to: its first 8 bytes. A buffer
        that does not lie in the body is left to pyarrow, which refuses it."""
        if length < 8 or offset < 0 or offset + length > message.body_length:
            return 0
        prefix = self.read_at(message.body_at + offset, 8)
        return max(_I64.unpack(prefix)[0], 0) if len(prefix) == 8 else 0


# ---- Parquet ---------------------------------------------------------------------------------

# Bytes per value of each physical type once read (by its Thrift enum); a byte array's values
# are bounded by its pages, or by its dictionary.
_BOOLEAN, _INT32, _INT64, _INT96, _FLOAT, _DOUBLE, _BYTE_ARRAY, _FIXED_LEN_BYTE_ARRAY = range(8)
_PHYSICAL_WIDTH = {_BOOLEAN: 1, _INT32: 4, _INT64: 8, _INT96: 12, _FLOAT: 4, _DOUBLE: 8}
_DATA_PAGE, _DICTIONARY_PAGE, _DATA_PAGE_V2 = 0, 2, 3
# A page header is read in growing pieces, up to 1 MiB. parquet-cpp takes up to 16 MiB, but a
# header of the numeric columns read here is a few dozen bytes: past 1 MiB it is crafted.
_HEADER_READS = (256, 1 << 16, 1 << 20)
_PARQUET_TRAILER = 8  # the footer's int32 length, then "PAR1"
_THRIFT_DEPTH = 64


class _Short(Exception):
    """The bytes end inside the Thrift value."""


class _Thrift:
    """A reader of the Thrift compact protocol: a struct becomes {field id: value}, a list a
    list, a string its bytes; doubles and maps are skipped."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        if self.at >= len(self.data):
            raise _Short
        self.at += 1
        return self.data[self.at - 1]

    def varint(self) -> int:
        result = shift = 0
        while True:
            byte = self.byte()
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise _Damaged

    def integer(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def bytes(self, count: int) -> bytes:
        if self.at + count > len(self.data):
            raise _Short
        self.at += count
        return self.data[self.at - count:self.at]

    def struct(self, depth: int = 0) -> dict[int, Any]:
        if depth > _THRIFT_DEPTH:
            raise _Damaged
        fields: dict[int, Any] = {}
        last = 0
        while True:
            head = self.byte()
            if not head & 0x0F:
                return fields
            last = last + (head >> 4) if head >> 4 else self.integer()
            fields[last] = self.value(head & 0x0F, depth)

    def value(self, kind: int, depth: int) -> Any:
        if kind in (1, 2):  # a boolean field holds its value in its type
            return kind == 1
        if kind == 3:
            return self.byte()
        if kind in (4, 5, 6):
            return self.integer()
        if kind == 7:
            self.bytes(8)
            return None
        if kind == 8:
            return self.bytes(self.varint())
        if kind in (9, 10):  # list, set: size and element type in one byte (size 15: a varint follows)
            head = self.byte()
            count = self.elements(head >> 4 if head >> 4 != 15 else self.varint())
            return [self.element(head & 0x0F, depth + 1) for _ in range(count)]
        if kind == 11:
            count = self.elements(self.varint())
            kinds = self.byte() if count else 0
            for _ in range(count):
                self.element(kinds >> 4, depth + 1)
                self.element(kinds & 0x0F, depth + 1)
            return None
        if kind == 12:
            return self.struct(depth + 1)
        raise _Damaged

    def elements(self, count: int) -> int:
        """``count``, the elements of a collection: each takes a byte at least, so a count past
        the bytes left cannot be read from them."""
        if count > len(self.data) - self.at:
            raise _Short
        return count

    def element(self, kind: int, depth: int) -> Any:
        if kind in (1, 2):  # a boolean in a collection takes a byte
            return self.byte() == 1
        return self.value(kind, depth)


def _integer(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _struct(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


@dataclass(frozen=True)
class _Page:
    kind: int
    uncompressed: int
    compressed: int
    values: int
    header_length: int


def _page_at(read_at: ReadAt, at: int) -> _Page:
    """The page header at byte ``at``; _Damaged when it cannot be one."""
    for size in _HEADER_READS:
        data = read_at(at, size)
        reader = _Thrift(data)
        try:
            header = reader.struct()
        except _Short:
            if len(data) < size:
                raise _Damaged from None  # the file ends inside the header
            continue
        kind, uncompressed, compressed = (_integer(header.get(field), -1) for field in (1, 2, 3))
        if kind < 0 or uncompressed < 0 or compressed < 0:
            raise _Damaged
        details = _struct(header.get({_DATA_PAGE: 5, _DICTIONARY_PAGE: 7, _DATA_PAGE_V2: 8}.get(kind, 0)))
        return _Page(kind, uncompressed, compressed, max(_integer(details.get(1)), 0), reader.at)
    raise _Damaged


@dataclass(frozen=True)
class _Chunk:
    """What the footer says of one column chunk read."""

    path: str
    physical_type: int
    width: int  # a fixed-length byte array's length
    start: int  # where parquet-cpp starts reading it: its dictionary page, or its first data page
    length: int
    values: int


class ParquetLimits:
    """The read limits held against a Parquet file's row groups, each checked just before
    pyarrow reads it: each page's uncompressed size, and what each column chunk read decodes
    to (its values at their width, and its dictionary), against ``max_file_bytes``; the
    values of a column chunk, and the rows of the file so far, against ``max_pixels``.

    The footer is read here too, not through pyarrow's metadata objects: a column chunk's
    (pyarrow's ``RowGroupMetaData.column``) aborts the process on some damaged footers."""

    def __init__(self, read_at: ReadAt, size: int, columns: list[str]) -> None:
        """``columns``: the top-level columns pyarrow is to read."""
        self.read_at, self.size, self.columns = read_at, size, set(columns)
        self.rows = 0
        try:
            trailer = read_at(size - _PARQUET_TRAILER, 4)
            length = _I32.unpack(trailer)[0] if len(trailer) == 4 else -1
            if length <= 0 or length > size - _PARQUET_TRAILER:
                raise _Damaged
            footer = _Thrift(read_at(size - _PARQUET_TRAILER - length, length)).struct()
        except (_Damaged, _Short):
            raise ReadError("cannot read the parquet: its footer is damaged") from None
        # The leaves of the schema (elements without children), in the order of a row group's chunks.
        elements = [_struct(element) for element in _list(footer.get(2))[1:]]
        self.leaves = [element for element in elements if not _integer(element.get(5))]
        self.row_groups = [_struct(group) for group in _list(footer.get(4))]

    def check_row_group(self, group: int) -> None:
        if group >= len(self.row_groups):
            raise ReadError(f"cannot read the parquet: its footer lists no row group {group}")
        row_group = self.row_groups[group]
        check_decoded(f"row group {group}", _integer(row_group.get(2)))
        self.rows += max(_integer(row_group.get(3)), 0)
        check_elements(f"the parquet's row groups up to row group {group}", self.rows, "rows", "hold")
        for leaf, chunk in enumerate(_list(row_group.get(1))):
            found = self._chunk(leaf, _struct(_struct(chunk).get(3)))
            if found is not None:
                self._check_chunk(f"row group {group} column {found.path}", found)

    def _chunk(self, leaf: int, metadata: dict) -> _Chunk | None:
        """The chunk of ``metadata`` (a ColumnMetaData) when pyarrow is to read it. Without
        one (an encrypted column) pyarrow cannot read it either."""
        path = [part.decode("utf-8", "replace") for part in _list(metadata.get(3)) if isinstance(part, bytes)]
        if not path or path[0] not in self.columns:
            return None
        start = _integer(metadata.get(9))
        dictionary = _integer(metadata.get(11))
        if 0 < dictionary < start:
            start = dictionary
        physical_type = _integer(metadata.get(1), -1)
        width = _integer(self.leaves[leaf].get(2)) if leaf < len(self.leaves) else 0
        return _Chunk(".".join(path), physical_type, width, start, _integer(metadata.get(7)),
                      _integer(metadata.get(5)))

    def _check_chunk(self, what: str, chunk: _Chunk) -> None:
        end = min(chunk.start + max(chunk.length, 0), self.size)
        values = dictionary = 0
        at = chunk.start
        while at < end and values < chunk.values:  # parquet-cpp stops at the footer's count of values
            try:
                page = _page_at(self.read_at, at)
            except _Damaged:
                raise ReadError(f"cannot read the parquet: {what}: the page header at byte {at:,} is damaged") \
                    from None
            if page.kind in (_DATA_PAGE, _DATA_PAGE_V2, _DICTIONARY_PAGE):
                check_decoded(f"{what}: the page at byte {at:,}", page.uncompressed, "decompresses to")
            if page.kind == _DICTIONARY_PAGE:
                dictionary = max(dictionary, page.uncompressed)
            elif page.kind in (_DATA_PAGE, _DATA_PAGE_V2):
                values += page.values
            at += page.header_length + page.compressed
        check_elements(what, values, "values")
        width = chunk.width if chunk.physical_type == _FIXED_LEN_BYTE_ARRAY else \
            _PHYSICAL_WIDTH.get(chunk.physical_type, max(dictionary, 1))
        check_decoded(f"{what} ({values:,} values of {width} bytes"
                      f"{f' and a dictionary of {byte_size(dictionary)}' if dictionary else ''})",
                      values * width + dictionary)
