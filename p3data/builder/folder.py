"""What a cache's output folder may hold, checked before a run writes anything in it: a run
writes only into an empty (or new) folder or a cache p3data built, so it never deletes nor
overwrites a file it did not write (a rebuild replaces a task folder's files)."""

from __future__ import annotations

import fnmatch

from p3data import fs
from p3data.errors import P3DataError
from p3data.format import layout
from p3data.lock import LOCK

ROOT_FILES = (LOCK, layout.P3_INDEX, layout.TEMP_PREFIX + "*")


def check_output_folder(root: str) -> None:
    """Refuse a folder holding a file a cache build would not have written: at the root, the
    lock, P3's index and temporaries; below, seqio's and p3data's task files and the work
    folder."""
    for path in fs.walk_files(root):
        parts = path[len(root) + 1:].split("/")
        if not parts[-1] or parts[0] == layout.WORK_DIR:  # object stores' folder markers
            continue
        if not any(fnmatch.fnmatchcase(parts[-1], pattern)
                   for pattern in (ROOT_FILES if len(parts) == 1 else layout.TASK_FILES)):
            raise P3DataError(f"{root} is neither empty nor a p3data cache: it holds {path}; "
                              "choose an empty or new folder, or a cache p3data built")
