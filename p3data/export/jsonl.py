"""Writing an exported split's file as JSON lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

import msgspec

from p3data.export.schema import record_batch

if TYPE_CHECKING:
    import pyarrow as pa


class JsonlShard:
    """One JSON lines file: an object per example, token ids as arrays, keys in schema order."""

    def __init__(self, handle: BinaryIO, schema: pa.Schema):
        self.handle, self.schema = handle, schema
        self.encoder = msgspec.json.Encoder(enc_hook=_plain)

    def write(self, examples: Sequence[Mapping[str, Any]]) -> int:
        batch = record_batch(examples, self.schema)  # checks the types, and measures
        lines = [{name: example[name] for name in self.schema.names} for example in examples]
        self.handle.write(self.encoder.encode_lines(lines))
        return batch.nbytes

    def close(self) -> None:
        pass


def _plain(value: Any) -> Any:
    """numpy arrays and scalars as JSON's lists and numbers."""
    import numpy as np

    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")
