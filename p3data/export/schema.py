"""An exported task's columns: typed from the cache's `info.<split>.json` (never inferred from
values), as Arrow types, and examples as Arrow record batches of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from p3data.errors import P3DataError
from p3data.fewshot.variants import name_parts
from p3data.format.features import task_features
from p3data.t0 import SCORE_EVAL_SUFFIX

if TYPE_CHECKING:
    import pyarrow as pa

# TensorFlow's dtype names (info.<split>.json) as `datasets` card dtypes.
CARD_DTYPES = {"int32": "int32", "int64": "int64", "float32": "float32", "float64": "float64",
               "bool": "bool", "string": "string"}


class ExportError(P3DataError):
    """A task could not be exported (the message says which file, split or record)."""


class FeatureSpec(msgspec.Struct, frozen=True):
    dtype: str  # TensorFlow's name, as in info.<split>.json
    sequence: bool


def feature_specs(features: Mapping[str, Any]) -> dict[str, FeatureSpec]:
    """Features (anything with a TensorFlow `dtype` name and a `shape`, as info.<split>.json
    gives them) as specs, in name order: P3's column order on the Hub."""
    return {name: FeatureSpec(feature.dtype, bool(feature.shape))
            for name, feature in sorted(features.items())}


def task_specs(task: str, splits: Mapping[str, Mapping[str, Any]]) -> dict[str, FeatureSpec]:
    """The features every split of `task` shares. seqio writes an empty split's info as `{}`,
    so such a split takes its siblings'; a task with no example at all gets T0's plain (or
    score-eval) features."""
    found = {split: feature_specs(features) for split, features in splits.items() if features}
    distinct = {msgspec.json.encode(specs): split for split, specs in found.items()}
    if len(distinct) > 1:
        raise ExportError(f"{task}: its splits {' and '.join(distinct.values())} have different "
                          "features in their info.<split>.json; rebuild the task's cache")
    if found:
        return next(iter(found.values()))
    base, shots = name_parts(task)
    return feature_specs(task_features(score_eval=base.endswith(SCORE_EVAL_SUFFIX),
                                       with_choices=False, fewshot=shots is not None))


def export_arrow_schema(specs: Mapping[str, FeatureSpec]) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([(name, _arrow_type(spec)) for name, spec in specs.items()])


def _arrow_type(spec: FeatureSpec) -> pa.DataType:
    import pyarrow as pa

    scalar = {"int32": pa.int32(), "int64": pa.int64(), "float32": pa.float32(),
              "float64": pa.float64(), "bool": pa.bool_(), "string": pa.string()}.get(spec.dtype)
    if scalar is None:
        raise ExportError(f"dtype {spec.dtype!r} is not one a cache holds "
                          f"({', '.join(CARD_DTYPES)})")
    return pa.list_(scalar) if spec.sequence else scalar


def record_batch(examples: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.RecordBatch:
    """Examples as the reader yields them, in columns of `schema`'s types: token lists go in
    as one concatenated buffer and offsets, not value by value; the rest (texts, the SFT
    shapes' turns and provenance) value by value."""
    import numpy as np
    import pyarrow as pa

    columns = []
    for field in schema:
        values = [example[field.name] for example in examples]
        if pa.types.is_list(field.type) and _numeric(field.type.value_type):
            item = field.type.value_type.to_pandas_dtype()
            offsets = np.zeros(len(values) + 1, dtype=np.int32)
            np.cumsum([len(v) for v in values], out=offsets[1:])
            flat = np.concatenate(values).astype(item, copy=False) if values else np.empty(0, item)
            columns.append(pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat),
                                                    type=field.type))
        else:
            columns.append(pa.array(values, type=field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _numeric(value_type: pa.DataType) -> bool:
    import pyarrow as pa

    return (pa.types.is_integer(value_type) or pa.types.is_floating(value_type)
            or pa.types.is_boolean(value_type))
