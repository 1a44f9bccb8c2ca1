"""An installed template set's parse index: every file's parsed templates, written once.

Registering xP3's and xP3mt's tasks needs the templates of their 4,479 prompt folders, and
building PyYAML's objects for them was two thirds of `import p3data.xp3`. `p3data templates
install` writes, beside the set's checked files, what each file parsed to, keyed by the digest
of its text and stamped with the digest of the parser's own source; `load` hands those entries
to `yaml_io`, which still reads every file and uses an entry only for a file whose text has
that digest. So a changed file is parsed again, never served stale; an index written by
another version of the parser, a damaged or a missing one (an older install) is ignored. The
format is `marshal`'s: plain values, fast to read, and no code runs when it is loaded.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from collections.abc import Iterable
from pathlib import Path

from p3data.errors import P3DataError
from p3data.templates import model, yaml_io
from p3data.templates.model import Template, TemplateMetadata

INDEX_FILE = "parsed.marshal"  # in the set's folder, beside `LICENSE` and `templates/`

Fields = tuple  # a template's fields as the index stores them (`_fields`)


def parser_stamp() -> bytes:
    """The digest of the code that turns a file's text into templates: an index written by
    other code is not used."""
    digest = hashlib.blake2b(digest_size=16)
    for module in (yaml_io, model):
        digest.update(Path(module.__file__).read_bytes())
    return digest.digest()


def write(set_folder: Path, files: Iterable[Path]) -> int:
    """Parse `files` (the set's `templates.yaml` files) and write the index into `set_folder`
    atomically; a file the parser refuses is left out (reading it says why). Returns how many
    files the index holds."""
    entries = {}
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
            dataset, subset, templates = yaml_io.parse_text(path, text)
        except (OSError, UnicodeDecodeError, P3DataError):
            continue
        entries[yaml_io.text_digest(text)] = (dataset, subset, tuple(map(_fields, templates)))
    target = set_folder / INDEX_FILE
    partial = target.with_name(f".{INDEX_FILE}.{os.getpid()}")
    partial.write_bytes(marshal.dumps((parser_stamp(), entries)))
    partial.replace(target)
    return len(entries)


def load(set_folder: Path) -> int:
    """Hand the index of `set_folder` to the template reader; how many files it holds (0 when
    there is no index, or one that cannot be used)."""
    try:
        stamp, entries = marshal.loads((set_folder / INDEX_FILE).read_bytes())
        if stamp != parser_stamp():
            return 0
        parsed = {digest: (dataset, subset, tuple(_template(fields) for fields in templates))
                  for digest, (dataset, subset, templates) in entries.items()}
    except (OSError, EOFError, ValueError, TypeError, AttributeError):
        return 0  # no index, or a damaged one: the files are parsed
    yaml_io.remember_parsed(parsed)
    return len(parsed)


def _fields(template: Template) -> Fields:
    meta = template.metadata
    return (template.id, template.name, template.jinja, template.answer_choices,
            template.reference,
            (meta.original_task, meta.choices_in_prompt, meta.metrics, meta.languages))


def _template(fields: Fields) -> Template:
    """A template as the index stores it, without its file: `yaml_io` gives it its source."""
    id_, name, jinja, answer_choices, reference, meta = fields
    original_task, choices_in_prompt, metrics, languages = meta
    return Template(id=id_, name=name, jinja=jinja, dataset="", answer_choices=answer_choices,
                    reference=reference,
                    metadata=TemplateMetadata(original_task, choices_in_prompt, metrics,
                                              languages))
