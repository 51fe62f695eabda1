"""The tokenizer that -t names: a file of any of the formats the library reads, told
apart by its name and, for JSON, by what it holds; a folder that holds one; or the name
of a published encoding."""
import json
import os
from pathlib import Path

from .. import formats, registry, sentencepiece, tekken
from ..encoding import BPETokenizer, get_encoding
from ..formats import FILE_NAME
from .errors import InputError, UsageError, library_call

TOKENIZER_ENV = "BPE_TOKENIZER"
# GPT-4's vocabulary, by the names people know it by.
CL100K_NAMES = ("cl100k", "cl100k_base")


def is_published(name: str) -> bool:
    return name in CL100K_NAMES or name in registry.PUBLISHED


def shown_name(name: str | None) -> str | None:
    """What the command calls the tokenizer (in a token file's sidecar, in `bpe info`):
    a published encoding's name, or the file's name without its folder."""
    if name is None:
        return None
    return name if is_published(name) else Path(name).name


def load_tokenizer(name: str | None) -> BPETokenizer:
    """The tokenizer that -t names (see bpe.cli's docstring for what it may name)."""
    if name is None:
        raise UsageError(f"no tokenizer: name one with -t FILE (a .bpe file, a .tiktoken file, GPT-2's vocab.json, "
                         f"a tokenizer.json, a tekken.json, a SentencePiece .model, or cl100k) or set {TOKENIZER_ENV}")
    if is_published(name):
        published = "cl100k_base" if name in CL100K_NAMES else name
        try:
            return library_call(lambda: get_encoding(published))
        except OSError as e:
            raise InputError(str(e)) from None
    path = Path(name)
    if path.is_dir():
        found = [p for p in (path / FILE_NAME, path / "tokenizer.json", path / "tekken.json", path / "tokenizer.model",
                             path / "vocab.json") if p.exists()]
        if not found:
            raise InputError(f"{path} holds no {FILE_NAME}, tokenizer.json, tekken.json, tokenizer.model or vocab.json")
        path = found[0]
    if not path.exists():
        raise InputError(f"{path}: no such tokenizer file")
    if path.suffix == ".tiktoken":
        return library_call(lambda: BPETokenizer.from_tiktoken(path))
    if path.suffix == ".model" or looks_like_sentencepiece(path):
        return library_call(lambda: BPETokenizer.from_sentencepiece(path))
    if path.suffix == ".json":
        try:
            document = formats.parse_json(path.read_text(encoding="utf-8"), path)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise InputError(f"{path} is not a tokenizer: it is not readable JSON ({e})") from None
        except ValueError as e:  # nested too deep
            raise InputError(str(e)) from None
        if formats.is_huggingface(document):
            return library_call(lambda: BPETokenizer.from_huggingface(path))
        if tekken.is_tekken(document):
            return library_call(lambda: BPETokenizer.from_tekken(path))
        if isinstance(document, dict) and "format" not in document:
            merges = gpt2_paths(path)[1]
            if not merges.exists():
                raise InputError(f"{path} looks like GPT-2's vocab.json, but there is no {merges.name} beside it")
            return library_call(lambda: BPETokenizer.from_gpt2(path, merges))
    return library_call(lambda: BPETokenizer.load(path))


def looks_like_sentencepiece(path: Path) -> bool:
    """Whether the file at path begins as a SentencePiece model does (Mistral's
    tokenizer.model.v3 has no .model suffix)."""
    try:
        with open(path, "rb") as f:
            return sentencepiece.looks_like_model(f.read(1024))
    except OSError:
        return False


def default_tokenizer() -> str | None:
    """-t's default: $BPE_TOKENIZER, when set and not empty."""
    return os.environ.get(TOKENIZER_ENV) or None


def gpt2_paths(path: Path):
    """vocab.json and merges.txt: in the folder path, or path and the merges file named
    like it (gpt2_vocab.json -> gpt2_merges.txt)."""
    if path.suffix != ".json":
        return path / "vocab.json", path / "merges.txt"
    stem = path.stem
    at = stem.rfind("vocab")
    merges = stem[:at] + "merges" + stem[at + len("vocab"):] if at >= 0 else stem + "-merges"
    return path, path.with_name(merges + ".txt")
