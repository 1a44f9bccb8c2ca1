"""The intermediate files between the two stages: one part (records + meta) per task, split
and source shard, under `<output>/.p3data-work/<task>/<split>/`.

A part's meta is written after its records, so a meta with the right fingerprint means the
part is complete: that is what makes a rerun skip finished shards.

A plain task's part holds its final TFRecords, copied as they are into the output shards. A
`_score_eval` twin's records are its examples without the `idx` feature, prefixed by the
example's number within the shard and the choice number: `idx[0]` counts kept examples over
the whole split, which is only known once every shard is done.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from p3data.cache import fs
from p3data.cache.example import varint

MAX_ERRORS_KEPT = 5  # row errors quoted per part (all are counted)


@dataclass
class PartMeta:
    fingerprint: str
    rows: list[int]  # [start, stop) of the source shard: a rerun cut differently redoes it
    rows_read: int = 0
    kept: int = 0  # kept source examples (for twins: before expanding the choices)
    examples: int = 0  # records in the part
    inputs_tokens: int = 0
    inputs_max_tokens: int = 0
    targets_tokens: int = 0
    targets_max_tokens: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # the first few row errors, verbatim
    schema: dict[str, int] = field(default_factory=dict)  # rows per schema mismatch category
    failed: str = ""  # why the shard could not be processed at all
    traceback: str = ""  # when that was an unexpected error (a bug)

    def add_example(self, n_in: int, n_out: int) -> None:
        """Count one record with `n_in` input and `n_out` target tokens (see `tokens`)."""
        self.examples += 1
        self.inputs_tokens += n_in
        self.targets_tokens += n_out
        self.inputs_max_tokens = max(self.inputs_max_tokens, n_in)
        self.targets_max_tokens = max(self.targets_max_tokens, n_out)

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> PartMeta:
        return cls(**json.loads(data))


def tokens(ids: list[int]) -> int:
    """seqio's stats count ids that are neither EOS (1) nor padding (0)."""
    return len(ids) - ids.count(0) - ids.count(1)


def read_meta(path: str) -> PartMeta | None:
    """A finished part's meta; None when there is none (or one this version cannot read,
    which means the part is redone)."""
    try:
        return PartMeta.from_json(fs.read_bytes(path))
    except (OSError, ValueError, TypeError):
        return None


def twin_record(ordinal: int, choice: int, entries: bytes) -> bytes:
    return varint(ordinal) + varint(choice) + entries


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7


def unpack_twin(record: bytes) -> tuple[int, int, bytes]:
    """(example number within the shard, choice number, the other map entries)."""
    ordinal, pos = _read_varint(record, 0)
    choice, pos = _read_varint(record, pos)
    return ordinal, choice, record[pos:]
