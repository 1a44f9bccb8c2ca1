"""Writing an exported split's file as parquet."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

from p3data.export.schema import record_batch

if TYPE_CHECKING:
    import pyarrow as pa


class ParquetShard:
    """One parquet file: a row group per batch."""

    def __init__(self, handle: BinaryIO, schema: pa.Schema):
        import pyarrow.parquet as pq

        self.schema = schema
        self.writer = pq.ParquetWriter(handle, schema)

    def write(self, examples: Sequence[Mapping[str, Any]]) -> int:
        """Write a row group; returns its size in Arrow."""
        batch = record_batch(examples, self.schema)
        self.writer.write_batch(batch)
        return batch.nbytes

    def close(self) -> None:
        self.writer.close()
