"""The bpe command: train a tokenizer on your own text, and look at what it does.

    bpe train stories/ --vocab-size 8192 --special '<|endoftext|>' -o tok.bpe
    bpe count -t tok.bpe story.txt             # tokens per file, and in total
    bpe show -t tok.bpe "Once upon a time"     # each token coloured in turn
    bpe explain -t tok.bpe " upon"             # the merges that make the word's tokens
    echo hello | bpe encode -t cl100k | bpe decode -t cl100k

`python -m bpe` runs it, and `pip install` puts it on the path as `bpe`. Each
subcommand's --help shows an example. Conventions, the same for every subcommand:
- A tokenizer is named with -t FILE (or $BPE_TOKENIZER): this library's .bpe file, a
  tiktoken .tiktoken file, GPT-2's vocab.json (with its merges.txt beside it), a Hugging
  Face tokenizer.json, a folder that holds one of them, or the name of one of OpenAI's
  published encodings (cl100k_base, or cl100k; o200k_base; bpe.registry), taken from a
  package that ships it or else downloaded once into the cache, as bpe.get_encoding does.
  There is no default: the repository's stories.bpe is not installed with the package.
- Text is UTF-8, read from the files named or from standard input, in pieces, so files of
  any size go through in the same memory. Bytes that are not UTF-8 are an error that
  names the byte. Special-token text (<|endoftext|>) is ordinary text unless
  --allow-special is given.
- Errors are one line on stderr, no traceback: exit status 2 for bad usage (a missing or
  malformed argument), 1 for bad input (a file that is missing or not what it should be).
- Progress bars go to stderr, and only to a terminal. Colour only goes to a terminal, and
  not when NO_COLOR is set (--color always|never overrides both).
"""
import argparse
import json
import os
import re
import shutil
import sys
import time
import unicodedata
import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from . import __version__, formats, registry, sources, token_files
from .encoding import BPETokenizer, get_encoding
from .explain import explain
from .files import WriteError, atomic_write
from .formats import FILE_NAME

PROG = "bpe"
TOKENIZER_ENV = "BPE_TOKENIZER"
# GPT-4's vocabulary, by the names people know it by.
CL100K_NAMES = ("cl100k", "cl100k_base")
# What `bpe show` puts between tokens where there is no colour to tell them apart.
MARK = "|"
# Backgrounds from the 256-colour palette, light enough for black text on any terminal.
BACKGROUNDS = (153, 229, 157, 217, 189, 223)
RESET = "\x1b[0m"
# How many of the longest tokens `bpe info` lists.
LONGEST = 10
# A token id has at most this many digits (ids are below 2**32): a longer number is not
# one, and is refused before int() (whose digit limit would raise) reads it.
MAX_ID_DIGITS = 10
# The arguments that are text (the rest are file names, which may be any bytes).
TEXT_ARGUMENTS = ("text", "word", "special")


class UsageError(Exception):
    """A mistake in how the command was called: exit status 2. prog: the (sub)command
    whose usage it is, when the arguments were not parsed far enough to know it."""

    def __init__(self, message: str, prog: str | None = None) -> None:
        super().__init__(message)
        self.prog = prog


class InputError(Exception):
    """Input that is not what it should be (a missing file, bytes that are not UTF-8, a
    bad tokenizer file): exit status 1."""


class Parser(argparse.ArgumentParser):
    """argparse, with its errors in one line (and a pointer to --help) instead of the usage."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)", self.prog)


# --- the subcommands ---------------------------------------------------------------------

def cmd_train(args: argparse.Namespace) -> int:
    if args.vocab_size < 256 + len(args.special):
        raise UsageError(f"--vocab-size must be at least {256 + len(args.special)} (the 256 bytes and "
                         f"{len(args.special)} special tokens), got {args.vocab_size}")
    files = _find_files(args.files)
    read = [0]

    def count(n):
        read[0] += n

    started = time.perf_counter()
    texts = sources.read_texts(files, kind=args.input_format, field=args.field, special_tokens=args.special,
                               progress=count, pattern=args.pattern)
    # The library's warnings (with their source lines) are said once here, in the
    # command's words: --max-memory rather than max_memory.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok = _library_call(lambda: BPETokenizer.train(texts, vocab_size=args.vocab_size, pattern=args.pattern,
                                                       special_tokens=args.special, threads=args.threads,
                                                       max_memory=args.max_memory))
    pruned = None  # the last of the core's pruning warnings: its count "so far" is the total
    for w in caught:
        if issubclass(w.category, RuntimeWarning) and "max_memory" in str(w.message):
            pruned = str(w.message)
        elif "n_vocab is" not in str(w.message):  # that one is said below, in the command's words
            _warn(str(w.message))
    seconds = time.perf_counter() - started
    path = tok.save(args.output)
    merges = len(tok.merges)
    print(f"read {len(files)} file{'s' * (len(files) != 1)}, {_size(read[0])}, in {seconds:.1f} s")
    print(f"learned {merges:,} merges: {tok.n_vocab:,} tokens (256 bytes, {merges:,} merges, "
          f"{len(tok.special_tokens)} special), split pattern {tok.pattern!r}")
    if merges:
        shown = [repr(tok.id_to_token(256 + k)) for k in range(min(8, merges))]
        print(f"first merges: {', '.join(shown)}")
        print(f"longest tokens: {', '.join(repr(t) for _, t in _longest_tokens(tok, 5))}")
    print(f"wrote {path}")
    wanted = args.vocab_size - 256 - len(args.special)
    if pruned:
        found = re.search(r"counted (\d+) times or fewer \((\d+) so far\)", pruned)
        said = (f"{int(found[2]):,} distinct chunks counted {int(found[1]):,} times or fewer" if found else
                "the rarest chunks")
        short = (f"; the pairs ran out after {merges:,} merges ({tok.n_vocab:,} tokens, not {args.vocab_size:,})"
                 if merges < wanted else "")
        _warn(f"to keep to --max-memory {args.max_memory}, pruning removed {said}, and their pairs with them"
              f"{short}; the merges may differ from exact training: raise --max-memory (or leave it out)")
    elif merges < wanted:
        _warn(f"the text ran out of pairs to merge after {merges:,} merges: the vocabulary has {tok.n_vocab:,} "
              f"tokens, not {args.vocab_size:,} (more text, or a smaller --vocab-size)")
    return 0


def cmd_encode(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.tokenizer)
    allowed = "all" if args.allow_special else ()
    if args.format == "bin" and args.output is None:
        raise UsageError("--format bin writes a token file and its sidecar: name it with -o FILE.bin")
    sizes = [os.path.getsize(f) for f in args.files if f != "-" and os.path.isfile(f)]
    bar = _bar("encoding", sum(sizes) if len(sizes) == len(args.files) and sizes else None)
    if args.format == "bin":
        with bar:
            pieces = (tok.encode_array(piece, allowed_special=allowed, disallowed_special=())
                      for name, stream in _inputs(args.files) for piece in _pieces(stream, name, tok, bar.update))
            path = Path(args.output)
            tokens = _library_call(lambda: token_files.write_token_file(
                path, pieces, tok, tokenizer_name=args.tokenizer_name, text_name=", ".join(args.files) or "stdin"))
        print(f"wrote {tokens:,} tokens to {path} ({token_files.token_dtype(tok.n_vocab)}) "
              f"and {token_files.sidecar_path(path).name}", file=sys.stderr)
        return 0
    with bar, _output(args.output, binary=False) as out:
        json_list = args.format == "json"
        between = ", " if json_list else " "
        for name, stream in _inputs(args.files):
            first = True
            out.write("[" if json_list else "")
            for piece in _pieces(stream, name, tok, bar.update):
                ids = tok.encode(piece, allowed_special=allowed, disallowed_special=())
                if ids:
                    out.write(("" if first else between) + between.join(map(str, ids)))
                    first = False
            out.write("]\n" if json_list else "\n")
    return 0


def cmd_decode(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.tokenizer)
    with _output(args.output, binary=True) as out:
        for name, stream in _inputs(args.files):
            form = args.format or ("bin" if name.endswith(".bin") else None)
            if form == "bin":
                if stream is sys.stdin.buffer:
                    raise UsageError("--format bin reads a token file and its sidecar: name the file")
                stream.close()
                try:
                    ids = token_files.read_token_file(name, tok)
                except ValueError as e:
                    raise InputError(str(e)) from None
                step = 1 << 20
                for k in range(0, len(ids), step):  # a piece at a time: the file is memory-mapped
                    out.write(tok.decode_bytes(ids[k:k + step]))
                continue
            data = stream.read()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(f"{name} is not a list of ids: it is not even UTF-8 text (byte {e.start:,})") from None
            ids = _parse_ids(text, name, form or ("json" if text.lstrip().startswith("[") else "text"))  # type: ignore[assignment]  # a list here, an array above
            try:
                out.write(tok.decode_bytes(ids))
            except ValueError as e:
                raise InputError(f"{name}: {e}") from None
    return 0


def cmd_count(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.tokenizer)
    allowed = "all" if args.allow_special else ()
    total, rows = 0, []
    files = [path for name in args.files or ["-"] for path in ([Path("-")] if name == "-" else _find_files([name]))]
    with _bar("counting", sum(os.path.getsize(f) for f in files if str(f) != "-") or None) as bar:
        for path in files:
            if str(path) == "-":
                pieces = _pieces(sys.stdin.buffer, "stdin", tok, bar.update)
            else:
                pieces = sources.read_file(path, kind=args.input_format, field=args.field,
                                           special_tokens=tok.special_tokens, progress=bar.update, pattern=tok.pattern)
            n = 0
            for piece in _with_errors(pieces):
                n += _library_call(lambda: tok.count(piece, allowed_special=allowed, disallowed_special=(),
                                                     threads=args.threads))
            rows.append((n, "stdin" if str(path) == "-" else str(path)))
            total += n
    if len(rows) > 1:
        rows.append((total, "total"))
    width = max(len(str(n)) for n, _ in rows)
    for n, name in rows:
        print(f"{n:>{width}} {name}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.tokenizer)
    text = _text_argument(args)
    ids = tok.encode(text, allowed_special="all" if args.allow_special else (), disallowed_special=())
    colour = _colour(args.color, sys.stdout)
    tokens = [_visible(tok.decode_single_token_bytes(i)) for i in ids]
    if not args.ids:
        sys.stdout.write("".join(_paint(t, k, colour) for k, t in enumerate(tokens)) + "\n")
        return 0
    # Rows of cells, a cell per token: the token above its id, each padded to the wider
    # of the two. Without colour the mark ends each token's cell and the padding goes
    # before it (tokens often begin with a space, seldom end with one); with colour the
    # cell is one wider, so that ids never touch. A new row after a line break, and where
    # the terminal's width would be passed.
    width = shutil.get_terminal_size((100, 24)).columns
    rows: list = []
    row: list = []
    used = 0
    for k, (token, i) in enumerate(zip(tokens, ids)):
        shown = token.rstrip("\n")
        cell = max(_width(shown), len(str(i)) + (1 if colour else 0))
        if row and used + cell + 1 > width:
            rows.append(row)
            row, used = [], 0
        row.append((k, shown, i, cell))
        used += cell + (0 if colour else len(MARK))
        if token.endswith("\n"):
            rows.append(row)
            row, used = [], 0
    if row:
        rows.append(row)
    gap = "" if colour else " " * len(MARK)
    for row in rows:
        if colour:
            top = "".join(_paint(shown, k, True) + " " * (cell - _width(shown)) for k, shown, i, cell in row)
        else:
            top = "".join(shown + " " * (cell - _width(shown)) + MARK for k, shown, i, cell in row)
        bottom = "".join(_paint(str(i), k, colour, mark=False) + " " * (cell - len(str(i))) + gap
                         for k, shown, i, cell in row)
        print(top)
        print(bottom.rstrip())
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.tokenizer)
    text = " ".join(args.word)
    chunks = explain(tok, text)
    if len(chunks) > 1:
        print(f"{text!r} is {len(chunks)} chunks by the {tok.pattern!r} split pattern; merges never cross "
              "from one chunk to the next, so each is merged on its own:")
    for n, chunk in enumerate(chunks, 1):
        if len(chunks) > 1:
            print()
            print(f"chunk {n}: {_bytes_text(chunk.text)!r}")
        print(f"  bytes: {_tokens(tok, chunk.start)}")
        if not chunk.steps:
            print("  no merge applies: the bytes stay as they are")
        for step in chunk.steps:
            a, b = (_bytes_text(tok.decode_single_token_bytes(i)) for i in step.pair)
            made = _bytes_text(tok.decode_single_token_bytes(step.token))
            times = f" (x{step.times})" if step.times > 1 else ""
            print(f"  merge rank {step.rank:>{len(str(len(tok.merges)))}}: {a!r} + {b!r} -> {made!r} "
                  f"(id {step.token}){times}: {_tokens(tok, step.parts)}")
        print(f"  tokens: {' '.join(map(str, chunk.ids))}")
    if len(chunks) > 1:
        print()
        print(f"tokens: {' '.join(str(i) for chunk in chunks for i in chunk.ids)}")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    name = args.tokenizer_file or args.tokenizer
    tok = load_tokenizer(name)
    merges = len(tok.merges)
    print(f"tokenizer: {args.tokenizer_name}")
    print(f"tokens: {256 + merges + len(tok.special_tokens):,} (256 bytes, {merges:,} merges, "
          f"{len(tok.special_tokens)} special); ids 0 to {tok.n_vocab - 1:,}")
    rules = getattr(tok, "rules", None)  # a tokenizer.json's own split, added tokens and template
    if rules is None:
        regex = formats.pattern_regex(formats.TIKTOKEN_PATTERNS, tok.pattern)
        print(f"split pattern: {tok.pattern}" + (f" ({regex})" if regex != tok.pattern else " (a regex)"))
    else:
        print("\n".join(rules.describe()))
    if rules is None:  # a tokenizer.json's are its added tokens, listed above
        specials = ", ".join(f"{t} = {i}" for t, i in tok.special_ids.items()) or "none"
        print(f"special tokens: {specials}")
    print("longest tokens:")
    for length, token in _longest_tokens(tok, LONGEST):
        print(f"  {length:>4} bytes  {token!r}")
    words = sum(_is_whole_word(tok.decode_single_token_bytes(i)) for i in _merge_ids(tok))
    share = words / merges if merges else 0.0
    print(f"whole words: {words:,} of the {merges:,} merged tokens ({share:.1%}): a space and then letters only, "
          "as the split patterns begin a word (' once', ' upon')")
    print(f"sha256: {token_files.fingerprint(tok)}")
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    tok = load_tokenizer(args.input)
    out = Path(args.output)
    if args.to == "bpe":
        written = [_library_call(lambda: tok.save(out))]  # a tokenizer.json's own rules do not fit: refused
    elif args.to == "tiktoken":
        _library_call(lambda: tok.save_tiktoken(out))
        written = [out]
        _note(f"a .tiktoken file holds neither the split pattern ({tok.pattern!r}: "
              f"bpe.formats.TIKTOKEN_PATTERNS[{tok.pattern!r}]) nor the special tokens "
              f"({', '.join(f'{t}={i}' for t, i in tok.special_ids.items()) or 'none'}): tiktoken.Encoding takes them "
              "apart; bpe reads a .tiktoken file with GPT-4's pattern and no special tokens")
    elif args.to == "gpt2":
        vocab, merges = _gpt2_paths(out)
        vocab.parent.mkdir(parents=True, exist_ok=True)
        _library_call(lambda: tok.save_gpt2(vocab, merges))
        written = [vocab, merges]
        if tok.pattern != "gpt2":
            _note(f"GPT-2's files hold no split pattern and readers take GPT-2's; this tokenizer splits with "
                  f"{tok.pattern!r}, so they will split text differently (convert --to bpe or huggingface keeps it)")
    else:
        if out.is_dir() or str(out).endswith(("/", os.sep)):
            out = out / "tokenizer.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        _library_call(lambda: tok.save_huggingface(out))
        written = [out]
    print(f"wrote {' and '.join(map(str, written))}: {256 + len(tok.merges) + len(tok.special_tokens):,} tokens "
          f"({args.to})")
    return 0


# --- tokenizers by name -----------------------------------------------------------------

def load_tokenizer(name: str | None) -> BPETokenizer:
    """The tokenizer that -t names (see the module's docstring for what it may name)."""
    if name is None:
        raise UsageError(f"no tokenizer: name one with -t FILE (a .bpe file, a .tiktoken file, GPT-2's vocab.json, "
                         f"a tokenizer.json, or cl100k) or set {TOKENIZER_ENV}")
    if name in CL100K_NAMES or name in registry.PUBLISHED:
        published = "cl100k_base" if name in CL100K_NAMES else name
        try:
            return _library_call(lambda: get_encoding(published))
        except OSError as e:
            raise InputError(str(e)) from None
    path = Path(name)
    if path.is_dir():
        found = [p for p in (path / FILE_NAME, path / "tokenizer.json", path / "vocab.json") if p.exists()]
        if not found:
            raise InputError(f"{path} holds no {FILE_NAME}, tokenizer.json or vocab.json")
        path = found[0]
    if not path.exists():
        raise InputError(f"{path}: no such tokenizer file")
    if path.suffix == ".tiktoken":
        return _library_call(lambda: BPETokenizer.from_tiktoken(path))
    if path.suffix == ".json":
        try:
            document = formats.parse_json(path.read_text(encoding="utf-8"), path)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise InputError(f"{path} is not a tokenizer: it is not readable JSON ({e})") from None
        except ValueError as e:  # nested too deep
            raise InputError(str(e)) from None
        if formats.is_huggingface(document):
            return _library_call(lambda: BPETokenizer.from_huggingface(path))
        if isinstance(document, dict) and "format" not in document:
            merges = _gpt2_paths(path)[1]
            if not merges.exists():
                raise InputError(f"{path} looks like GPT-2's vocab.json, but there is no {merges.name} beside it")
            return _library_call(lambda: BPETokenizer.from_gpt2(path, merges))
    return _library_call(lambda: BPETokenizer.load(path))


def _gpt2_paths(path: Path):
    """vocab.json and merges.txt: in the folder path, or path and the merges file named
    like it (gpt2_vocab.json -> gpt2_merges.txt)."""
    if path.suffix != ".json":
        return path / "vocab.json", path / "merges.txt"
    stem = path.stem
    at = stem.rfind("vocab")
    merges = stem[:at] + "merges" + stem[at + len("vocab"):] if at >= 0 else stem + "-merges"
    return path, path.with_name(merges + ".txt")


# --- reading and writing ------------------------------------------------------------------

def _find_files(names):
    try:
        return sources.find_files(names)
    except sources.SourceError as e:
        raise InputError(str(e)) from None


def _inputs(names):
    """(name, binary stream) of each input: the files named, or stdin."""
    if not names:
        yield "stdin", sys.stdin.buffer
        return
    for name in names:
        if name == "-":
            yield "stdin", sys.stdin.buffer
            continue
        try:
            stream = open(name, "rb")
        except OSError as e:
            raise InputError(f"{name}: {e.strerror}") from None
        with stream:
            yield name, stream


def _pieces(stream, name, tok, progress=None):
    """The text of a stream in pieces that encode as the whole text does."""
    return _with_errors(sources.text_pieces(stream, name, tok.special_tokens, progress, pattern=tok.pattern))


def _bar(desc: str, total=None):
    """A progress bar of bytes on stderr, shown only when stderr is a terminal."""
    from tqdm import tqdm

    return tqdm(desc=desc, total=total, unit="B", unit_scale=True, disable=None, leave=False, file=sys.stderr)


def _with_errors(texts):
    try:
        yield from texts
    except sources.SourceError as e:
        raise InputError(str(e)) from None
    except OSError as e:
        raise InputError(f"{getattr(e, 'filename', None) or 'input'}: {e.strerror or e}") from None


@contextmanager
def _output(path, binary: bool):
    """stdout, or the file -o names: written to a temporary file of this run's own beside
    it, which replaces the old file only when complete (bpe.files.atomic_write)."""
    if path is None:
        yield sys.stdout.buffer if binary else sys.stdout
        return
    with atomic_write(path) as tmp, open(tmp, "wb" if binary else "w", encoding=None if binary else "utf-8") as f:
        yield f


def _parse_ids(text: str, name: str, form: str) -> list:
    """The ids in text: ints separated by white space ("text"), or JSON lists of ints
    one after another ("json")."""
    if form == "text":
        ids = []
        for number, line in enumerate(text.splitlines(), 1):
            for word in line.split():
                if not (word.isascii() and word.isdigit()):
                    raise InputError(f"{name}, line {number}: {word[:20]!r} is not a token id (expected ids "
                                     "separated by spaces; --format json reads JSON lists)")
                if len(word) > MAX_ID_DIGITS:
                    raise InputError(f"{name}, line {number}: {word[:20]}... ({len(word):,} digits) is too large "
                                     "to be a token id")
                ids.append(int(word))
        return ids
    decoder, at, ids = json.JSONDecoder(), 0, []
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return ids
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as e:
            raise InputError(f"{name} is not JSON lists of ids: {e}") from None
        except (ValueError, RecursionError):  # a number past int()'s digit limit; lists nested too deep
            raise InputError(f"{name}: {text[at:at + 20]}... is not a JSON list of token ids (a number too long to "
                             "be an id, or lists nested too deep)") from None
        if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
            raise InputError(f"{name}: expected JSON lists of ints, got {json.dumps(value)[:40]}")
        ids.extend(value)


def _text_argument(args) -> str:
    if args.file is not None and args.text is not None:
        raise UsageError("give the text or -f FILE, not both")
    if args.text is not None:
        return args.text
    name = args.file or "-"
    stream = sys.stdin.buffer if name == "-" else None
    try:
        data = stream.read() if stream else Path(name).read_bytes()
    except OSError as e:
        raise InputError(f"{name}: {e.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        shown = "stdin" if name == "-" else name
        raise InputError(f"{shown} is not UTF-8 text (byte {e.start:,}: {e.reason})") from None


def _library_call(call):
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
        raise InputError(_os_error(e)) from None


def _os_error(e: OSError) -> str:
    """An OSError in one line: "FILE: reason" for a file read, "reason: FILE" for one
    written (bpe.files.WriteError: "No space left on device: out.bin")."""
    if isinstance(e, WriteError):
        return str(e)
    return f"{e.filename}: {e.strerror or e}" if e.filename else str(e.strerror or e)


# --- showing tokens -----------------------------------------------------------------------

def _colour(choice: str, stream) -> bool:
    """Whether to write colour to stream: always, never, or (auto) only to a terminal and
    only when NO_COLOR is unset or empty (no-color.org)."""
    if choice != "auto":
        return choice == "always"
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _paint(text: str, k: int, colour: bool, mark: bool = True) -> str:
    """Token k of a row: on its background colour (black text), or followed by MARK."""
    if not colour:
        if not mark:
            return text
        return text[:-1] + MARK + "\n" if text.endswith("\n") else text + MARK
    lines = text.split("\n")  # the colour stops at each line break, so it never fills the rest of the line
    on = f"\x1b[48;5;{BACKGROUNDS[k % len(BACKGROUNDS)]}m\x1b[38;5;16m"
    return "\n".join(f"{on}{line}{RESET}" if line else "" for line in lines)


def _visible(data: bytes) -> str:
    """A token's text for showing: bytes that are not whole UTF-8 characters (a token
    can end in the middle of one) as \\xNN, a line break as a visible ↵ before it, and a
    carriage return as ␍."""
    return data.decode("utf-8", errors="backslashreplace").replace("\r", "␍").replace("\n", "↵\n")


def _width(text: str) -> int:
    """Columns that text takes on a terminal: wide East Asian characters take two,
    combining marks none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _bytes_text(data: bytes) -> str:
    return data.decode("utf-8", errors="backslashreplace")


def _tokens(tok, ids) -> str:
    return " ".join(repr(_bytes_text(tok.decode_single_token_bytes(i))) for i in ids)


def _merge_ids(tok):
    return (tok.token_ids[256 + k] if tok.token_ids else 256 + k for k in range(len(tok.merges)))


def _longest_tokens(tok, n):
    """The n longest merged tokens, as (bytes, text), longest first, then earliest."""
    tokens = [(len(data), _bytes_text(data)) for data in map(tok.decode_single_token_bytes, _merge_ids(tok))]
    order = sorted(range(len(tokens)), key=lambda k: (-tokens[k][0], k))
    return [tokens[k] for k in order[:n]]


def _is_whole_word(data: bytes) -> bool:
    """A token that is a space and then letters only (' once'): the split patterns put
    the space before a word into the word's chunk, so such a token starts a word, and
    most are a whole word; a piece from inside a word ('ing') has no space."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return len(text) > 1 and text[0] == " " and text[1:].isalpha()


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n:,} bytes"


def _warn(message: str):
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def _note(message: str):
    print(f"{PROG}: note: {message}", file=sys.stderr)


# --- the command line ----------------------------------------------------------------------

EXAMPLES = {
    "train": "bpe train stories/ --vocab-size 8192 --special '<|endoftext|>' -o tok.bpe\n"
             "  bpe train data.jsonl --field text --vocab-size 4096 -o tok.bpe",
    "encode": "echo 'Once upon a time' | bpe encode -t tok.bpe\n"
              "  bpe encode -t tok.bpe story.txt --format bin -o story.bin",
    "decode": "echo '46 1011 263 367' | bpe decode -t tok.bpe\n"
              "  bpe decode -t tok.bpe story.bin",
    "count": "bpe count -t cl100k *.txt",
    "show": "bpe show -t tok.bpe 'Once upon a time' --ids\n"
            "  bpe show -t tok.bpe -f story.txt | less -R",
    "explain": "bpe explain -t tok.bpe ' upon'",
    "info": "bpe info tok.bpe",
    "convert": "bpe convert tok.bpe tokenizer.json --to huggingface\n"
               "  bpe convert cl100k cl100k.bpe --to bpe",
}


def _threads(value: str) -> int:
    """--threads: 0 (one per core) up to bpe.MAX_THREADS."""
    from . import MAX_THREADS

    if not (value.isascii() and value.isdigit()) or int(value) > MAX_THREADS:
        raise argparse.ArgumentTypeError(f"expected 0 (one per core) to {MAX_THREADS}, got {value!r}")
    return int(value)


def build_parser() -> Parser:
    parser = Parser(prog=PROG, description="Byte-level BPE: train a tokenizer, encode and decode, and look at "
                    "how text splits. `bpe COMMAND --help` shows each command with an example.",
                    epilog="examples:\n  " + "\n  ".join(e.split("\n")[0] for e in EXAMPLES.values()),
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"bpe {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    def command(name, help, description=None):
        sub = commands.add_parser(name, help=help, description=description or help,
                                  epilog=f"example:\n  {EXAMPLES[name]}",
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        return sub

    def tokenizer_option(sub):
        sub.add_argument("-t", "--tokenizer", default=os.environ.get(TOKENIZER_ENV) or None, metavar="FILE",
                         help="the tokenizer: a .bpe, .tiktoken, vocab.json or tokenizer.json file, or cl100k "
                              f"(default: ${TOKENIZER_ENV})")

    def special_option(sub):
        sub.add_argument("--allow-special", action="store_true",
                         help="special-token text (<|endoftext|>) becomes the special token's id (default: it is "
                              "ordinary text)")

    sub = command("train", "learn a tokenizer from text files, JSON Lines or Parquet",
                  "Learn a tokenizer from your own text: plain text files, JSON Lines (a field of each "
                  "object) and Parquet (a text column), and folders of them, read as a stream and counted "
                  "on every core.")
    sub.add_argument("files", nargs="+", metavar="FILE", help="text, .jsonl or .parquet files, or folders of them")
    sub.add_argument("--vocab-size", type=int, required=True, metavar="N",
                     help="tokens in all: the 256 bytes, the merges and the special tokens")
    sub.add_argument("--pattern", default="default", metavar="NAME|REGEX",
                     help="the split rule: this project's (default), GPT-2's (gpt2), GPT-4's (gpt4), or a regex "
                          "in tiktoken's dialect (\\p{L}, (?i:...), \\s+(?!\\S), ...)")
    sub.add_argument("--special", action="append", default=[], metavar="TOKEN",
                     help="a special token, numbered after the merges (repeat for more)")
    sub.add_argument("--field", default=None, metavar="NAME",
                     help='the JSON field or Parquet column that holds the text (default: "text")')
    sub.add_argument("--input-format", choices=sources.KINDS, default=None,
                     help="read every file as this kind (default: by its name: .jsonl, .ndjson, .parquet, else text)")
    sub.add_argument("--threads", type=_threads, default=0, help="threads for counting (default: one per core)")
    sub.add_argument("--max-memory", default=None, metavar="SIZE",
                     help="a memory budget for training, such as 2GB: past it the rarest chunks are dropped, with a "
                          "warning, and the merges may differ from exact training (default: none, exact)")
    sub.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the tokenizer (.bpe)")
    sub.set_defaults(run=cmd_train)

    sub = command("encode", "text to token ids",
                  "Encode UTF-8 text (the files named, or stdin) to token ids: one line per input (text, json), "
                  "or a token file with its sidecar (bin).")
    sub.add_argument("files", nargs="*", metavar="FILE", help="text files (default: stdin)")
    tokenizer_option(sub)
    sub.add_argument("--format", choices=("text", "json", "bin"), default="text",
                     help="ids separated by spaces (text), a JSON list (json), or a token file: little-endian "
                          "uint16/uint32 with its FILE.json sidecar (bin, needs -o)")
    sub.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    special_option(sub)
    sub.set_defaults(run=cmd_encode)

    sub = command("decode", "token ids to text",
                  "Decode token ids back to the exact bytes of the text. Reads ids separated by white space, "
                  "JSON lists, or a token file (.bin with its sidecar, which must name this tokenizer).")
    sub.add_argument("files", nargs="*", metavar="FILE", help="files of ids (default: stdin)")
    tokenizer_option(sub)
    sub.add_argument("--format", choices=("text", "json", "bin"), default=None,
                     help="how the ids are written (default: bin for a .bin file, json if it starts with [, "
                          "else text)")
    sub.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    sub.set_defaults(run=cmd_decode)

    sub = command("count", "tokens per file and in total",
                  "Count the tokens of each file (or stdin) and in total, encoding on every core without "
                  "keeping the ids. .jsonl and .parquet files count the texts of --field.")
    sub.add_argument("files", nargs="*", metavar="FILE", help="text, .jsonl or .parquet files (default: stdin)")
    tokenizer_option(sub)
    special_option(sub)
    sub.add_argument("--field", default=None, metavar="NAME", help='the JSON field or Parquet column (default: "text")')
    sub.add_argument("--input-format", choices=sources.KINDS, default=None, help="read every file as this kind")
    sub.add_argument("--threads", type=_threads, default=0, help="threads for encoding (default: one per core)")
    sub.set_defaults(run=cmd_count)

    sub = command("show", "the text with each token coloured in turn",
                  f"Show how a text splits: each token on a background colour of its own in turn, or, where "
                  f"there is no colour (a pipe, NO_COLOR), followed by {MARK}. A line break shows as ↵, bytes "
                  "that are part of a character as \\xNN.")
    sub.add_argument("text", nargs="?", metavar="TEXT", help="the text (or -f FILE, or stdin)")
    sub.add_argument("-f", "--file", metavar="FILE", help="show the text of this file")
    tokenizer_option(sub)
    sub.add_argument("--ids", action="store_true", help="print each token's id under it")
    sub.add_argument("--color", "--colour", choices=("auto", "always", "never"), default="auto",
                     help="auto: on a terminal, unless NO_COLOR is set")
    special_option(sub)
    sub.set_defaults(run=cmd_show)

    sub = command("explain", "why a word splits the way it does",
                  "The merges that make a word's tokens, step by step in the order encoding applies them (the "
                  "lowest rank first), with each merge's rank and the pair it joins. Text of several chunks "
                  "(several words, punctuation) is explained chunk by chunk, since no merge crosses two.")
    sub.add_argument("word", nargs="+", metavar="WORD", help="the word or text (several are joined by spaces)")
    tokenizer_option(sub)
    sub.set_defaults(run=cmd_explain)

    sub = command("info", "what a tokenizer holds",
                  "A tokenizer's size, split pattern and special tokens, its longest tokens, and the share of "
                  "its merged tokens that are whole words (a space and then letters only, as ' once').")
    sub.add_argument("tokenizer_file", nargs="?", metavar="TOKENIZER", help="the tokenizer (or -t)")
    tokenizer_option(sub)
    sub.set_defaults(run=cmd_info)

    sub = command("convert", "a tokenizer from one library's files to another's",
                  "Convert between this library's .bpe file, tiktoken's .tiktoken, GPT-2's vocab.json + "
                  "merges.txt, and a Hugging Face tokenizer.json. IN is anything -t takes.")
    sub.add_argument("input", metavar="IN", help="the tokenizer to read (anything -t takes)")
    sub.add_argument("output", metavar="OUT", help="the file to write (for gpt2: vocab.json, with merges.txt "
                                                     "beside it, or a folder for both)")
    sub.add_argument("--to", required=True, choices=("bpe", "tiktoken", "gpt2", "huggingface"),
                     help="the format to write")
    sub.set_defaults(run=cmd_convert)
    return parser


class _ClosedStream:
    """What stands for stdin or stdout when the command was started with it closed
    (`bpe encode <&-`, where Python has None): using it is an error that says so."""

    closed = False  # so that Python's flush at exit finds nothing to do

    def __init__(self, name: str, hint: str):
        self.name, self.hint = name, hint

    def flush(self):
        pass

    def __getattr__(self, attribute):
        raise InputError(f"{self.name} is closed: {self.hint}")


def _open_streams():
    """Stand-ins for streams the command was started without (see _ClosedStream)."""
    if sys.stdin is None:
        sys.stdin = _ClosedStream("stdin", "nothing to read (name a file, or pipe text in)")
    if sys.stdout is None:
        sys.stdout = _ClosedStream("stdout", "nowhere to write (name a file with -o)")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")


def _check_text_arguments(args):
    """Text arguments (bpe show's text, explain's words, train's --special) must be UTF-8;
    Python hands bytes that are not as lone surrogates, which no encoder takes."""
    for key in TEXT_ARGUMENTS:
        values = getattr(args, key, None)
        for value in values if isinstance(values, list) else [values]:
            if not isinstance(value, str):
                continue
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as e:
                raw = os.fsencode(value)
                raise InputError(f"the argument {raw.decode('utf-8', 'backslashreplace')!r} is not UTF-8 text (byte "
                                 f"{e.start:,}): give text as UTF-8, or in a file with -f") from None


def main(argv: Sequence[str] | None = None) -> int:
    _open_streams()
    parser = build_parser()
    prog = PROG
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        prog = f"{PROG} {args.command}"
        name = getattr(args, "tokenizer_file", None) or getattr(args, "tokenizer", None) or \
            getattr(args, "input", None)
        args.tokenizer_name = None if name is None else (name if name in CL100K_NAMES or name in registry.PUBLISHED
                                                           else Path(name).name)
        _check_text_arguments(args)
        return args.run(args)
    except UsageError as e:
        print(f"{e.prog or prog}: error: {e}", file=sys.stderr)
        return 2
    except InputError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # before OSError, of which it is one
        # The reader went away (bpe encode big.txt | head): stop quietly, as cat does,
        # and keep Python from complaining again when it flushes stdout on the way out.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as e:  # writing: a folder that is not there, a full disk
        print(f"{prog}: error: {_os_error(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
