"""Where templates come from, and how later sources override earlier ones.

Sources, in order: promptsource 0.1.0's templates (bundled by p3data's build, else an installed
promptsource 0.1.0), the project's `templates/` folder, the folders in `P3DATA_TEMPLATE_DIRS`,
then folders given by the caller. A template
with an id seen before replaces the earlier one (a fix); a new id adds a template. Files are
found up front but parsed only when their dataset is asked for, so registering tasks for a
few datasets does not parse hundreds of files.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import importlib.util
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import yaml

from p3data.dataset_key import DatasetKey
from p3data.errors import NotFoundError, P3DataError, TemplateFileError
from p3data.templates.model import Template
from p3data.templates.yaml_io import read_template_file

TEMPLATE_FILENAME = "templates.yaml"
ENV_TEMPLATE_DIRS = "P3DATA_TEMPLATE_DIRS"


@dataclass(frozen=True)
class TemplateSource:
    """A folder laid out like promptsource's: `<dataset>/[<subset>/]templates.yaml`."""

    root: Path
    origin: str


# promptsource 0.1.0's templates as p3data's build bundles them (see setup.py)
BUNDLED_PROMPTSOURCE = Path(__file__).resolve().parents[1] / "data" / "promptsource" / "templates"
PROMPTSOURCE_VERSION = "0.1.0"


class TemplateSetMissing(P3DataError):
    """A template set cannot be found, or is damaged: promptsource 0.1.0's (T0's), or one
    installed by `p3data templates install` (`templates/install.py`)."""


def promptsource_dir() -> Path:
    """promptsource 0.1.0's template folder: the copy p3data's build bundles, else an installed
    promptsource 0.1.0 (found without importing `promptsource.templates`). Without it T0 has
    no task, so its absence, or a folder without any template file, is an error, never an
    empty registry (a folder missing some of T0's datasets: `t0.define`)."""
    if BUNDLED_PROMPTSOURCE.is_dir():
        return _holding_templates(BUNDLED_PROMPTSOURCE)
    fix = (f"install p3data from a wheel or an sdist (they carry promptsource "
           f"{PROMPTSOURCE_VERSION}'s templates), or run `pip install --no-deps "
           f"--ignore-requires-python promptsource=={PROMPTSOURCE_VERSION}`")
    spec = importlib.util.find_spec("promptsource")
    if spec is None or not spec.submodule_search_locations:
        raise TemplateSetMissing(
            f"promptsource {PROMPTSOURCE_VERSION}'s templates (T0's) are not installed: {fix}")
    folder = Path(next(iter(spec.submodule_search_locations))) / "templates"
    version = importlib.metadata.version("promptsource")
    if version != PROMPTSOURCE_VERSION or not folder.is_dir():
        raise TemplateSetMissing(
            f"{folder.parent} is promptsource {version} without T0's templates (those of "
            f"{PROMPTSOURCE_VERSION}): {fix}")
    return _holding_templates(folder)


def damaged(folder: Path, what: str) -> TemplateSetMissing:
    """The error for promptsource's template `folder` damaged as `what` says, with its repair:
    p3data's build writes its copy again (in a source tree, `pip install -e .`), pip
    promptsource's own."""
    if folder != BUNDLED_PROMPTSOURCE:
        repair = (f"reinstall promptsource: pip install --force-reinstall --no-deps "
                  f"--ignore-requires-python promptsource=={PROMPTSOURCE_VERSION}")
    elif (source_tree := folder.parents[3]).joinpath("setup.py").is_file():
        repair = f"extract them again: pip install -e {source_tree} (or make install there)"
    else:
        repair = "reinstall p3data: pip install --force-reinstall --no-deps p3data"
    return TemplateSetMissing(f"{folder} {what}: a damaged install; {repair}")


def _holding_templates(folder: Path) -> Path:
    if next(folder.rglob(TEMPLATE_FILENAME), None) is None:
        origin = ("where p3data's build put promptsource 0.1.0's" if folder == BUNDLED_PROMPTSOURCE
                  else f"where promptsource {PROMPTSOURCE_VERSION} keeps its")
        raise damaged(folder, f"holds no template files, {origin} (T0's templates)")
    return folder


def project_dir() -> Path | None:
    """The project's own `templates/` folder (installed as `p3data.project_templates`)."""
    spec = importlib.util.find_spec("p3data.project_templates")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def default_sources(extra_dirs: Iterable[str | os.PathLike] = ()) -> list[TemplateSource]:
    """promptsource, then the project's folder, then the environment's, then the caller's."""
    sources = [TemplateSource(promptsource_dir(), "promptsource")]
    if (folder := project_dir()) is not None:
        sources.append(TemplateSource(folder, "project"))
    env_dirs = [d for d in os.environ.get(ENV_TEMPLATE_DIRS, "").split(os.pathsep) if d]
    for folder in [*env_dirs, *extra_dirs]:
        path = Path(folder)
        if not path.is_dir():
            raise TemplateFileError(path, "template folder does not exist")
        sources.append(TemplateSource(path, str(path)))
    return sources


_TOP_LEVEL_KEY = re.compile(r"^(dataset|subset):[ \t]*(.*)$", re.MULTILINE)


def _declared_key(path: Path) -> DatasetKey:
    """Read the top-level `dataset:`/`subset:` lines without parsing the whole file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise TemplateFileError(path, f"cannot read: {err}") from None
    found = {}
    for key, raw in _TOP_LEVEL_KEY.findall(text):
        try:
            found[key] = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            raise TemplateFileError(path, f"malformed '{key}:' line") from None
    dataset = found.get("dataset")
    if not isinstance(dataset, str) or not dataset:
        raise TemplateFileError(path, "missing top-level 'dataset:' line")
    subset = found.get("subset")
    return DatasetKey(dataset, str(subset) if subset is not None else None)


def folder_templates(root: Path, folder: str) -> dict[str, Template]:
    """The templates of `<root>/<folder>/templates.yaml` as promptsource's xP3 fork finds them:
    by folder, whatever `dataset:`/`subset:` the file declares, sorted by name; {} without a
    file. A name used twice maps to the last template of that name in the file, the one the
    fork's `DatasetTemplates[name]` returns."""
    path = root / folder / TEMPLATE_FILENAME
    if not path.is_file():
        return {}
    _, _, templates = read_template_file(path)
    by_name = {template.name: template for template in templates}
    return dict(sorted(by_name.items()))


class DatasetTemplates:
    """All templates of one dataset/subset after overrides, by name (sorted like T0)."""

    def __init__(self, key: DatasetKey, files: Sequence[tuple[Path, str]]):
        self.key = key
        self._files = list(files)

    @cached_property
    def _by_name(self) -> dict[str, Template]:
        by_id: dict[str, Template] = {}
        for path, origin in self._files:
            dataset, subset, templates = read_template_file(path, origin)
            if (declared := DatasetKey(dataset, subset)) != self.key:
                raise TemplateFileError(path, f"declares {declared}, expected {self.key}")
            for template in templates:
                by_id[template.id] = template  # later sources override by id
        by_name: dict[str, Template] = {}
        for template in by_id.values():
            if template.name in by_name:
                other = by_name[template.name]
                raise TemplateFileError(
                    template.source or "",
                    f"template name {template.name!r} ({template.id}) is also used by "
                    f"{other.id} in {other.source}; give one of them another name or the same id",
                )
            by_name[template.name] = template
        return dict(sorted(by_name.items()))

    @property
    def names(self) -> list[str]:
        """Template names in Python's default string order, as T0 iterated them."""
        return list(self._by_name)

    def __getitem__(self, name: str) -> Template:
        try:
            return self._by_name[name]
        except KeyError:
            raise NotFoundError(f"{self.key} has no template named {name!r}"
                                + _did_you_mean(name, self._by_name)) from None

    def __iter__(self) -> Iterator[Template]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)


class TemplateCollection:
    """Every dataset/subset with templates in the given sources."""

    def __init__(self, sources: Sequence[TemplateSource]):
        self.sources = list(sources)
        files: dict[DatasetKey, list[tuple[Path, str]]] = {}
        for source in self.sources:
            for path in sorted(source.root.rglob(TEMPLATE_FILENAME)):
                files.setdefault(_declared_key(path), []).append((path, source.origin))
        self._datasets = {key: DatasetTemplates(key, found) for key, found in files.items()}

    @classmethod
    def default(cls, extra_dirs: Iterable[str | os.PathLike] = ()) -> TemplateCollection:
        return cls(default_sources(extra_dirs))

    def keys(self) -> list[DatasetKey]:
        return sorted(self._datasets)

    def __contains__(self, key: DatasetKey) -> bool:
        return key in self._datasets

    def __getitem__(self, key: DatasetKey) -> DatasetTemplates:
        try:
            return self._datasets[key]
        except KeyError:
            raise NotFoundError(f"no templates for dataset {key.name!r}" + _did_you_mean(
                key.name, [known.name for known in self._datasets])) from None

    def get(self, dataset: str, subset: str | None = None) -> DatasetTemplates:
        return self[DatasetKey(dataset, subset)]

    def template(self, dataset: str, subset: str | None, name: str) -> Template:
        return self.get(dataset, subset)[name]


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=3)
    return f"; did you mean {', '.join(map(repr, close))}?" if close else ""
