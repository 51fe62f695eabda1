"""Writing a file so that a crash, a full disk or another writer never leaves half of one.

The new content goes to a temporary file beside the target, is flushed to disk, and
is then renamed over the target in one step: a reader sees the old file or the new
one. Files that belong together (a token file and its sidecar, GPT-2's vocab.json and
merges.txt, a Hugging Face folder) are written the same way, all of them, and renamed
only once every one is whole; so a failure while writing (a full disk, bad input read
meanwhile) leaves the old set as it was. The tokenizer's file uses this; so do the
pipeline's text, token and checkpoint files, which import it from here rather than keep
a copy.

Every writer has temporary names of its own (random, created exclusively), so writers
of one output at the same time never write into each other's files; the renames of a
set happen under a lock on its folder, so the last writer's set is the one left, never
a mix. A failed write raises WriteError, which names the file that was being written:
"No space left on device: tok.bpe".
"""
import contextlib
import errno
import os
import secrets
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # Windows: no flock; the renames of a set are then not serialised
    fcntl = None


class WriteError(OSError):
    """Writing a file failed: "REASON: PATH", with PATH the file being written (not its
    temporary name)."""

    def __str__(self) -> str:
        return f"{self.strerror}: {self.filename}"


def temporary_name_pattern(path: str | os.PathLike[str]) -> str:
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
        tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return str(tmp)
        except FileExistsError:
            continue
        except OSError as e:
            raise WriteError(e.errno, e.strerror, str(path)) from None
    raise WriteError(errno.EEXIST, "no free temporary name beside it", str(path))


def _check_target(path: Path):
    """A target that is a folder is refused before anything is written."""
    if path.is_dir():
        raise WriteError(errno.EISDIR, "Is a directory, not a file to write", str(path))


@contextlib.contextmanager
def _folder_lock(folders):
    """An exclusive lock on each folder (flock on the folder itself: no lock file is
    left behind), taken in one order so that two writers never wait on each other."""
    held = []
    try:
        for folder in sorted(set(map(str, folders))):
            if fcntl is None:
                break
            try:
                fd = os.open(folder, os.O_RDONLY)
            except OSError:
                continue
            held.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:  # a file system without flock: the renames are still atomic each
                pass
        yield
    finally:
        for fd in held:
            os.close(fd)  # closing releases the lock


def _flush_folder(folder: Path):
    """A rename is on disk only once the folder's entry is."""
    if hasattr(os, "O_DIRECTORY"):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_write_all(targets: Sequence[str | os.PathLike[str]]) -> Iterator[list[str]]:
    """Temporary paths, one beside each of `targets`, to write to. When the block ends
    without an error, each is flushed to disk and then all are renamed over their
    targets, together under the folders' lock; on an error before the renames all are
    removed and the old files stay as they were (a rename that fails midway leaves the
    vouching file missing, never beside files it does not describe). An OSError in writing a temporary file comes out as
    WriteError naming its target.

    The last path is the one that vouches for the others (a token file's sidecar): it is
    removed before the others are renamed and put back last, so that a crash between
    the renames leaves it missing rather than beside files it does not describe."""
    paths = [Path(p) for p in targets]
    for path in paths:
        _check_target(path)
        path.parent.mkdir(parents=True, exist_ok=True)
    tmps = []
    try:
        for path in paths:
            tmps.append(_create_temporary(path))
        try:
            yield list(tmps)
        except OSError as e:
            if isinstance(e, WriteError) or (e.filename is not None and e.filename not in tmps):
                raise  # not the writing of ours that failed (reading an input, say)
            # An error without a name (a buffered write's) is the first file's: writers of
            # several files name theirs (write_texts).
            target = paths[tmps.index(e.filename)] if e.filename in tmps else paths[0]
            raise WriteError(e.errno or errno.EIO, e.strerror or str(e), str(target)) from None
        for tmp, path in zip(tmps, paths):
            try:
                with open(tmp, "rb+") as f:
                    os.fsync(f.fileno())
            except OSError as e:
                raise WriteError(e.errno, e.strerror, str(path)) from None
        with _folder_lock(p.parent for p in paths):
            if len(paths) > 1:
                paths[-1].unlink(missing_ok=True)
            for tmp, path in zip(tmps, paths):
                try:
                    os.replace(tmp, path)
                except OSError as e:
                    raise WriteError(e.errno, e.strerror, str(path)) from None
            for folder in sorted({p.parent for p in paths}):
                _flush_folder(folder)
    finally:
        for tmp in tmps:
            if os.path.exists(tmp):
                os.remove(tmp)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str]) -> Iterator[str]:
    """A temporary path beside `path` to write to. On success it is flushed to disk and
    renamed over path (and the folder's entry flushed too); on failure it is removed,
    and an OSError in writing it comes out as WriteError naming path."""
    with atomic_write_all([path]) as (tmp,):
        yield tmp


def write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Path.write_text, atomically (atomic_write)."""
    write_texts({path: text}, encoding)


def write_texts(texts: Mapping[str | os.PathLike[str], str], encoding: str = "utf-8") -> None:
    """{path: text}, written together (atomic_write_all): all new, or all as they were.
    The last path vouches for the others."""
    with atomic_write_all(list(texts)) as tmps:
        for tmp, (path, text) in zip(tmps, texts.items()):
            try:
                with open(tmp, "w", encoding=encoding, newline="") as f:
                    f.write(text)
            except OSError as e:
                raise WriteError(e.errno, e.strerror, str(path)) from None


def remove_stale_temporaries(path: str | os.PathLike[str]) -> list[tuple[Path, int]]:
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
