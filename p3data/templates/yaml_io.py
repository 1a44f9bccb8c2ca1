"""Read promptsource's template YAML (`!Template`, `!TemplateMetadata`) without promptsource.

promptsource loads these files with PyYAML's FullLoader into its own classes, which drags in
pandas and pkg_resources. Here the two tags map onto plain dataclasses through a safe (C) loader.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from p3data.errors import TemplateFileError
from p3data.templates.model import Template, TemplateMetadata

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Tagged(dict):
    """A mapping read under one of promptsource's tags."""

    tag = ""


class _TemplateNode(_Tagged):
    tag = "!Template"


class _MetadataNode(_Tagged):
    tag = "!TemplateMetadata"


class _Loader(_BaseLoader):  # type: ignore[misc,valid-type]
    pass


def _constructor(kind: type[_Tagged]):
    def construct(loader: yaml.Loader, node: yaml.Node) -> _Tagged:
        return kind(loader.construct_mapping(node, deep=True))

    return construct


_Loader.add_constructor("!Template", _constructor(_TemplateNode))
_Loader.add_constructor("!TemplateMetadata", _constructor(_MetadataNode))

ParsedFile = tuple[str, str | None, tuple[Template, ...]]  # dataset, subset, templates
# (file, origin, digest of its text) -> what it parsed to: one entry per version of a file read
_PARSED: dict[tuple[Path, str, bytes], ParsedFile] = {}
# digest of a file's text -> what such a text parses to, templates without their file: from an
# installed set's parse index (`parse_index`)
_INDEXED: dict[bytes, ParsedFile] = {}
_TEMPLATE_KEYS = {"id", "name", "jinja", "reference", "metadata", "answer_choices"}
# `languages` is newer promptsource's (the xP3 fork's) list of the prompt's languages
_METADATA_KEYS = {"original_task", "choices_in_prompt", "metrics", "languages"}


def read_template_file(path: Path, origin: str = "") -> tuple[str, str | None, list[Template]]:
    """Parse one `templates.yaml`; returns (dataset, subset, templates in file order).

    A file read again with the same bytes is not parsed again (templates are immutable):
    building PyYAML's objects is most of the cost of defining the tasks, which a process that
    runs several commands or builds (a test session, a command server) would pay each time."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise TemplateFileError(path, f"cannot read: {err}") from None
    key = (path, origin, text_digest(text))
    if (parsed := _PARSED.get(key)) is None:
        parsed = _PARSED[key] = _from_index(path, origin, key[2]) or parse_text(path, text, origin)
    dataset, subset, templates = parsed
    return dataset, subset, list(templates)


def text_digest(text: str) -> bytes:
    """What names a version of a file's text (in the memo, and in a parse index)."""
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def remember_parsed(parsed: Mapping[bytes, ParsedFile]) -> None:
    """Take what texts with these digests parse to (a parse index's entries): a file read
    later with one of them is not parsed."""
    _INDEXED.update(parsed)


def _from_index(path: Path, origin: str, digest: bytes) -> ParsedFile | None:
    if (indexed := _INDEXED.get(digest)) is None:
        return None
    dataset, subset, templates = indexed
    return dataset, subset, tuple(
        dataclasses.replace(template, dataset=dataset, subset=subset, source=path, origin=origin)
        for template in templates)


def parse_text(path: Path, text: str, origin: str = "") -> ParsedFile:
    """Parse the text of the template file `path` (named in errors and in its templates)."""
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise TemplateFileError(path, f"malformed YAML: {at}{err.problem or err}") from None
    except yaml.YAMLError as err:
        raise TemplateFileError(path, f"cannot read: {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("templates"), dict):
        raise TemplateFileError(path, "expected a mapping with a 'templates' mapping")
    dataset = data.get("dataset")
    if not isinstance(dataset, str) or not dataset:
        raise TemplateFileError(path, "missing 'dataset' name")
    subset = data.get("subset")
    if subset is not None and not isinstance(subset, str):
        raise TemplateFileError(path, f"'subset' must be a string, not {subset!r}")
    templates = tuple(
        _to_template(path, origin=origin, dataset=dataset, subset=subset, key=key, node=node)
        for key, node in data["templates"].items()
    )
    return dataset, subset, templates


def _to_template(
    path: Path, *, origin: str, dataset: str, subset: str | None, key: Any, node: Any
) -> Template:
    where = f"template {key!r}"
    if not isinstance(node, _TemplateNode):
        raise TemplateFileError(path, f"{where}: expected a !Template entry")
    unknown = set(node) - _TEMPLATE_KEYS
    if unknown:
        raise TemplateFileError(path, f"{where}: unknown keys {sorted(unknown)}")
    for required in ("id", "name", "jinja"):
        if not isinstance(node.get(required), str):
            raise TemplateFileError(path, f"{where}: '{required}' must be a string")
    if node["id"] != key:
        raise TemplateFileError(path, f"{where}: key differs from its id {node['id']!r}")
    choices = node.get("answer_choices")
    if choices is not None and not isinstance(choices, str):
        raise TemplateFileError(path, f"{where}: 'answer_choices' must be a string")
    return Template(
        id=node["id"],
        name=node["name"],
        jinja=node["jinja"],
        dataset=dataset,
        subset=subset,
        answer_choices=choices,
        reference=str(node.get("reference") or ""),
        metadata=_to_metadata(path, where, node.get("metadata")),
        source=path,
        origin=origin,
    )


def _to_metadata(path: Path, where: str, node: Any) -> TemplateMetadata:
    if node is None:
        return TemplateMetadata()
    if not isinstance(node, _MetadataNode):
        raise TemplateFileError(path, f"{where}: 'metadata' must be a !TemplateMetadata entry")
    unknown = set(node) - _METADATA_KEYS
    if unknown:
        raise TemplateFileError(path, f"{where}: unknown metadata keys {sorted(unknown)}")
    metrics, languages = (_names(path, where, node, key) for key in ("metrics", "languages"))
    return TemplateMetadata(
        original_task=node.get("original_task"),
        choices_in_prompt=node.get("choices_in_prompt"),
        metrics=metrics,
        languages=languages,
    )


def _names(path: Path, where: str, node: _MetadataNode, key: str) -> tuple[str, ...] | None:
    names = node.get(key)
    if names is None:
        return None
    if not (isinstance(names, list) and all(isinstance(name, str) for name in names)):
        raise TemplateFileError(path, f"{where}: '{key}' must be a list of names")
    return tuple(names)
