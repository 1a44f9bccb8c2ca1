"""`p3data templates install|list`: template sets no package carries (xP3's), installed per
user at a pinned commit and checked (`p3data/templates/install.py`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from p3data.tables import text_table
from p3data.templates import install as sets
from p3data.templates.collection import (
    PROMPTSOURCE_VERSION,
    TEMPLATE_FILENAME,
    TemplateSetMissing,
    promptsource_dir,
)


def install(args: argparse.Namespace) -> int:
    done = sets.install(args.name, archive=args.archive, home=args.dir)
    spec = done.spec
    if done.already:
        print(f"{spec.name} ({spec.origin}) is already installed, and sound, in {done.folder}: "
              f"nothing to do")
    else:
        print(f"installed {spec.name} ({spec.origin}): {spec.files:,} {TEMPLATE_FILENAME} files "
              f"and its LICENSE, checked, in {done.folder}")
    if args.dir is not None:
        print(f"(p3data finds them there with {sets.ENV_HOME}={args.dir})")
    return 0


def list_sets(args: argparse.Namespace) -> int:
    """Every set p3data knows, with where it is and whether it is sound."""
    rows = [_t0_row()]
    for spec in sets.TEMPLATE_SETS.values():
        folder = sets.set_folder(spec, args.dir)
        status = ("not installed" if not folder.is_dir()
                  else f"damaged: {problem}" if (problem := sets.check(spec, folder))
                  else "installed")
        rows.append([spec.name, f"{spec.origin}", spec.files, status, str(folder)])
    print(text_table(["set", "source", "files", "status", "folder"], rows))
    return 0


def _t0_row() -> list:
    source = f"promptsource {PROMPTSOURCE_VERSION}"
    try:
        folder = promptsource_dir()
    except TemplateSetMissing as err:
        return ["t0", source, None, f"missing: {err}", "-"]
    files = sum(1 for _ in folder.rglob(TEMPLATE_FILENAME))
    return ["t0", source, files, "bundled", str(folder.parent)]


def register(commands: argparse._SubParsersAction) -> None:
    templates = commands.add_parser(
        "templates", help="install template sets no package carries (xP3's), list them")
    actions = templates.add_subparsers(dest="action", required=True)
    names = ", ".join(sets.TEMPLATE_SETS)
    home = (f"p3data's folder to use instead of ${sets.ENV_HOME} (default "
            f"$XDG_CACHE_HOME/p3data, else ~/.cache/p3data)")

    add = actions.add_parser(
        "install", help="fetch a set at its pinned commit, check it, install it")
    add.add_argument("name", help=f"the set: {names}")
    add.add_argument("--archive", type=Path, metavar="FILE",
                     help="install from this tarball of the set's commit (offline), not GitHub")
    add.add_argument("--dir", type=Path, help=home)
    add.set_defaults(run=install)

    listing = actions.add_parser("list", help="every set: where it is, and whether it is sound")
    listing.add_argument("--dir", type=Path, help=home)
    listing.set_defaults(run=list_sets)
