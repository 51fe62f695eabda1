"""How the command says what went wrong: the two kinds of mistake and their exit
statuses, the library's errors translated into them, and warnings and notes, each one
line on stderr with no traceback."""
import sys

from .. import sources
from ..atomic_writes import WriteError

PROG = "bpe"


class UsageError(Exception):
    """A mistake in how the command was called: exit status 2. prog: the (sub)command
    whose usage it is, when the arguments were not parsed far enough to know it."""

    def __init__(self, message: str, prog: str | None = None) -> None:
        super().__init__(message)
        self.prog = prog


class InputError(Exception):
    """Input that is not what it should be (a missing file, bytes that are not UTF-8, a
    bad tokenizer file): exit status 1."""


def library_call(call):
    """call(), with the library's errors for bad input (a bad file, a bad vocabulary) as
    InputError."""
    try:
        return call()
    except sources.SourceError as e:
        raise InputError(str(e)) from None
    except (ValueError, TypeError) as e:
        raise InputError(str(e)) from None
    except BrokenPipeError:
        raise
    except OSError as e:
        raise InputError(os_error(e)) from None


def os_error(e: OSError) -> str:
    """An OSError in one line: "FILE: reason" for a file read, "reason: FILE" for one
    written (bpe.atomic_writes.WriteError: "No space left on device: out.bin")."""
    if isinstance(e, WriteError):
        return str(e)
    return f"{e.filename}: {e.strerror or e}" if e.filename else str(e.strerror or e)


def warn(message: str):
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def note(message: str):
    print(f"{PROG}: note: {message}", file=sys.stderr)
