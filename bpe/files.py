"""Writing a file so that a crash never leaves half of one.

The new content goes to a temporary file beside the target, is flushed to disk, and
is then renamed over the target in one step: a reader sees the old file or the new
one. The tokenizer's file uses this; so do the pipeline's text, token and checkpoint
files, which import it from here rather than keep a copy.
"""
import contextlib
import os
import tempfile
from pathlib import Path


def temporary_name_pattern(path) -> str:
    """The glob of the temporary files that atomic_write(path) makes beside path."""
    return f".{Path(path).name}.*.tmp"


@contextlib.contextmanager
def atomic_write(path):
    """A temporary path beside `path` to write to. On success it is flushed to disk and
    renamed over path (and the folder's entry flushed too); on failure it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes it private; the file is not
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
        if hasattr(os, "O_DIRECTORY"):  # the rename is on disk only once the folder's entry is
            folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def remove_stale_temporaries(path):
    """Remove what a write of path killed before its rename left behind: nothing reads it."""
    path = Path(path)
    for tmp in path.parent.glob(temporary_name_pattern(path)):
        tmp.unlink(missing_ok=True)
