"""Record formats: part writers for the FileSink (Parquet, JSON Lines) and readers for the FileSpout
(text lines, JSON Lines, CSV with a header, Parquet).

A writer takes rows (values in the order of its fields) in batches and reports the bytes it holds; a
reader resumes at a position and returns records with the position after each. Column types are
inferred from the values (pyarrow's inference); later batches of a Parquet part are cast to the first
one's schema.
"""
from __future__ import annotations

import csv
import json
from typing import TYPE_CHECKING, List, NamedTuple, Optional, Protocol, Sequence

if TYPE_CHECKING:  # the Parquet writer's class; pyarrow is imported where a Parquet part is written
    import pyarrow.parquet

class OutputStream(Protocol):
    """A file open for writing (a local file, or a pyarrow stream on HDFS)."""

    def write(self, data: bytes) -> int:
        ...

    def close(self) -> None:
        ...


class InputStream(Protocol):
    """A file open for reading, seekable (a local file, or a pyarrow file on HDFS)."""

    def read(self, n: int = -1) -> bytes:
        ...

    def seek(self, position: int) -> int:
        ...

    def close(self) -> None:
        ...


EXTENSIONS = {"parquet": "parquet", "jsonl": "jsonl"}
ROW_GROUP_ROWS = 65536  # rows buffered before a Parquet row group is written
JSONL_BUFFER = 1 << 20  # bytes of JSON lines buffered before a write


class PartWriter:
    """One open part file."""

    def __init__(self, stream: OutputStream, fields: Sequence[str]):
        self.stream = stream
        self.fields = list(fields)
        self.rows = 0

    def add(self, values: Sequence[object]) -> None:
        raise NotImplementedError

    def size(self) -> int:
        """Bytes written plus an estimate of those buffered."""
        raise NotImplementedError

    def close(self) -> int:
        """Write what is buffered and close the file (it is then whole); returns its size in bytes."""
        raise NotImplementedError


class JsonLinesWriter(PartWriter):
    def __init__(self, stream: OutputStream, fields: Sequence[str]):
        super().__init__(stream, fields)
        self.buffer: List[str] = []
        self.buffered = self.written = 0
        self._dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_jsonable).encode

    def add(self, values: Sequence[object]) -> None:
        line = self._dumps(dict(zip(self.fields, values)))
        self.buffer.append(line)
        self.buffered += len(line) + 1
        self.rows += 1
        if self.buffered >= JSONL_BUFFER:
            self._flush()

    def _flush(self) -> None:
        if self.buffer:
            data = ("\n".join(self.buffer) + "\n").encode()
            self.stream.write(data)
            self.written += len(data)
            self.buffer, self.buffered = [], 0

    def size(self) -> int:
        return self.written + self.buffered

    def close(self) -> int:
        self._flush()
        self.stream.close()
        return self.written


def _jsonable(value: object) -> object:
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, (set, tuple)):
        return list(value)
    raise TypeError(f"a {type(value).__name__} cannot be written as JSON")


class ParquetWriter(PartWriter):
    def __init__(self, stream: OutputStream, fields: Sequence[str]):
        super().__init__(stream, fields)
        self.buffer: List[Sequence[object]] = []
        self.writer: Optional["pyarrow.parquet.ParquetWriter"] = None
        self.bytes_per_row = 64.0  # until the first row group says better

    def add(self, values: Sequence[object]) -> None:
        self.buffer.append(values)
        self.rows += 1
        if len(self.buffer) >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.buffer:
            return
        columns = list(zip(*self.buffer))
        schema = self.writer.schema if self.writer is not None else None
        arrays = {}
        for f, c in zip(self.fields, columns):
            try:
                arrays[f] = pa.array(list(c), type=schema.field(f).type if schema is not None else None)
            except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
                where = f"as {schema.field(f).type}, the type of its first rows" if schema is not None else ""
                raise ValueError(f"field {f!r}: its values cannot be written to one Parquet column {where}"
                                 f"({e})") from None
        table = pa.table(arrays, schema=schema)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.stream, table.schema)
        before = self.stream.tell()
        self.writer.write_table(table)
        self.bytes_per_row = max(1.0, (self.stream.tell() - before) / len(self.buffer))
        self.buffer = []

    def size(self) -> int:
        return int(self.stream.tell() + len(self.buffer) * self.bytes_per_row)

    def close(self) -> int:
        self._flush()
        if self.writer is not None:
            self.writer.close()
        size = self.stream.tell()
        self.stream.close()
        return size


def part_writer(fmt: str, stream: OutputStream, fields: Sequence[str]) -> PartWriter:
    return {"parquet": ParquetWriter, "jsonl": JsonLinesWriter}[fmt](stream, fields)


# ------------------------------------------------------------------ readers
class Record(NamedTuple):
    offset: int  # line or row number in the file, from 0
    end: int  # the reader's position after it (bytes for line formats, rows for Parquet)
    record: object  # the record, or None when it could not be decoded
    error: Optional[str]  # why it could not be decoded


class RecordReader:
    """Reads one file from a position: ``(offset, position)`` of the next record."""

    def __init__(self, source: InputStream, offset: int, position: int):
        self.source = source
        self.offset = offset
        self.position = position
        self.done = False

    def read(self, n: int) -> List[Record]:
        raise NotImplementedError

    def close(self) -> None:
        self.source.close()


CHUNK = 1 << 20


class LineReader(RecordReader):
    """Lines (``\\n``-terminated; a last line without one counts) from a byte position."""

    def __init__(self, source: InputStream, offset: int, position: int):
        super().__init__(source, offset, position)
        source.seek(position)
        self.pending = b""
        self.lines: List[bytes] = []
        self.eof = False

    def _fill(self) -> None:
        while not self.lines and not self.eof:
            chunk = self.source.read(CHUNK)
            if not chunk:
                self.eof = True
                if self.pending:
                    self.lines.append(self.pending)
                    self.pending = b""
                return
            parts = (self.pending + chunk).split(b"\n")
            self.pending = parts.pop()
            for p in parts:
                self.lines.append(p + b"\n")

    def read(self, n: int) -> List[Record]:
        out: List[Record] = []
        while len(out) < n:
            if not self.lines:
                self._fill()
                if not self.lines:
                    self.done = True
                    break
            take = self.lines[:n - len(out)]
            del self.lines[:len(take)]
            for raw in take:
                self.position += len(raw)
                record, error = self.decode(raw.rstrip(b"\r\n") if raw.endswith(b"\n") else raw)
                out.append(Record(self.offset, self.position, record, error))
                self.offset += 1
        return out

    def decode(self, raw: bytes) -> tuple:
        try:
            return raw.decode("utf-8"), None
        except UnicodeDecodeError as e:
            return None, f"not UTF-8: {e.reason} at byte {e.start}"


class JsonLinesReader(LineReader):
    def decode(self, raw: bytes) -> tuple:
        try:
            value = json.loads(raw)
        except (UnicodeDecodeError, ValueError) as e:
            return None, f"not JSON: {e}"
        if not isinstance(value, dict):
            return None, f"not a JSON object: {type(value).__name__}"
        return value, None


class CsvReader(LineReader):
    """CSV with a header line naming the fields; a record is a dict of strings. Offsets count data rows
    (the header is not one). A field may not hold a line break."""

    def __init__(self, source: InputStream, offset: int, position: int):
        source.seek(0)
        header = source.read(CHUNK).split(b"\n", 1)
        self.header = next(csv.reader([header[0].decode("utf-8", "replace").rstrip("\r")]), [])
        super().__init__(source, offset, position if position else len(header[0]) + (len(header) > 1))

    def decode(self, raw: bytes) -> tuple:
        try:
            row = next(csv.reader([raw.decode("utf-8")]), [])
        except (UnicodeDecodeError, csv.Error) as e:
            return None, f"not CSV: {e}"
        if len(row) != len(self.header):
            return None, f"{len(row)} fields where the header has {len(self.header)}"
        return dict(zip(self.header, row)), None


class ParquetReader(RecordReader):
    """Rows as dicts; the position is the row number."""

    def __init__(self, source: InputStream, offset: int, position: int):
        import pyarrow.parquet as pq

        super().__init__(source, offset, offset)
        self.file = pq.ParquetFile(source)
        self.rows: list = []
        self.group, skip = 0, offset
        meta = self.file.metadata
        while self.group < meta.num_row_groups and skip >= meta.row_group(self.group).num_rows:
            skip -= meta.row_group(self.group).num_rows
            self.group += 1
        self.skip = skip

    def read(self, n: int) -> List[Record]:
        out: List[Record] = []
        while len(out) < n:
            if not self.rows:
                if self.group >= self.file.metadata.num_row_groups:
                    self.done = True
                    break
                self.rows = self.file.read_row_group(self.group).to_pylist()[self.skip:]
                self.group, self.skip = self.group + 1, 0
                continue
            take = self.rows[:n - len(out)]
            del self.rows[:len(take)]
            for row in take:
                self.offset += 1
                out.append(Record(self.offset - 1, self.offset, row, None))
        return out


READERS = {"text": LineReader, "jsonl": JsonLinesReader, "csv": CsvReader, "parquet": ParquetReader}


def record_reader(fmt: str, source: InputStream, offset: int, position: int) -> RecordReader:
    return READERS[fmt](source, offset, position)

