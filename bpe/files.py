"""Writing a file so that a crash never leaves half of one.

The new content goes to a temporary file beside the target, is flushed to disk, and
is then renamed over the target in one step: a reader sees the old file or the new
one. The tokenizer's file uses this; so do the pipeline's text, token and checkpoint
files, which import it from here rather than keep a copy.
"""
import contextlib
import os
import secrets
from pathlib import Path


def temporary_name_pattern(path) -> str:
    """The glob of the temporary files that atomic_write(path) makes beside path."""
    return f".{Path(path).name}.*.tmp"


def _create_temporary(path: Path) -> str:
    """Create an empty temporary file beside path and return its name.

    It is created with mode 0o666, which the process's umask then narrows as it does
    for any new file: readable by all under the usual umask 022, private under 077.
    (mkstemp makes a file private whatever the umask, and widening it afterwards needs
    the umask, which can only be read by setting it: for that moment, every other
    thread's new files were made with umask 0.)
    """
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return str(tmp)
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


@contextlib.contextmanager
def atomic_write(path):
    """A temporary path beside `path` to write to. On success it is flushed to disk and
    renamed over path (and the folder's entry flushed too); on failure it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _create_temporary(path)
    try:
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


def remove_stale_temporaries(path) -> list[tuple[Path, int]]:
    """Remove what a write of path killed before its rename left behind: nothing reads it.
    Returns each file removed, with its size."""
    path = Path(path)
    removed = []
    for tmp in path.parent.glob(temporary_name_pattern(path)):
        try:
            size = tmp.stat().st_size
            tmp.unlink()
        except FileNotFoundError:
            continue  # removed meanwhile
        removed.append((tmp, size))
    return removed
