"""Token files: ids as a flat little-endian array with no header, and beside each one
its sidecar, NAME.bin.json, which says how to read it and which tokenizer wrote it.

    path.bin        the ids, little-endian uint16 ("<u2") when every id fits, else uint32
                    ("<u4"); no header, so that numpy memory-maps the file as it is
    path.bin.json   {"dtype": "<u2", "tokens": 1234, "tokenizer": "tok.bpe",
                     "tokenizer_sha256": "...", "n_vocab": 8192, ...}

The sha256 is the tokenizer's fingerprint (a hash of its content), so that ids written
by one tokenizer are never read with another. This is the format of data.py's token
files (train-bpe.bin and its train-bpe.bin.json); `bpe encode --format bin` writes it
and `bpe decode` reads it. A token folder is shards of this format and a manifest that
lists them in order (read_token_folder; bpe.ray_data writes them).
"""
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .core import PathArg, array_dtype
from .atomic_writes import WriteError, atomic_write_all, write_text
from .formats import parse_json

SIDECAR_FIELDS = ("dtype", "tokens", "tokenizer_sha256")
# A token folder (bpe.ray_data.write_token_folder): shards, each a token file, and a
# manifest, written last, that lists them in order.
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "bpe token folder"
DTYPES = ("<u2", "<u4")


def fingerprint(tokenizer: Any) -> str:
    """A sha256 of a tokenizer's content: of its state() as canonical JSON. Equal
    tokenizers have equal fingerprints, and any change to the merges, the pattern, the
    specials or the numbering changes it."""
    canonical = json.dumps(tokenizer.state(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def sidecar_path(path: PathArg) -> Path:
    """The sidecar of a token file: train.bin -> train.bin.json."""
    path = Path(path)
    return path.with_name(path.name + ".json")


def token_dtype(n_vocab: int) -> str:
    """The ids' type in a token file: "<u2" when every id fits in 16 bits, else "<u4"."""
    return "<u2" if array_dtype(n_vocab) == np.uint16 else "<u4"


def write_token_file(path: PathArg, pieces: Iterable[Any], tokenizer: Any, tokenizer_name: str | None = None,
                     text_name: str | None = None,
                     writer: str = "bpe encode") -> int:
    """Write ids (pieces: arrays or lists of ids, appended as they come) to a token file
    and its sidecar; returns the number of ids. The two are replaced together, once the
    pieces are all read and written (bpe.atomic_writes.atomic_write_all): an error meanwhile (an
    input that is missing or not UTF-8, a full disk) leaves the old pair as it was, and
    a crash leaves the old pair, the new one, or ids without a sidecar (refused when
    read), never a sidecar beside ids it does not describe."""
    path, sidecar = Path(path), sidecar_path(path)
    n_vocab = len(tokenizer)  # n_vocab, for the library's class and the pipeline's word-level one alike
    dtype = token_dtype(n_vocab)
    tokens = 0
    with atomic_write_all([path, sidecar]) as (ids_tmp, sidecar_tmp):
        with open(ids_tmp, "wb") as f:
            for ids in pieces:
                data = np.ascontiguousarray(np.asarray(ids).astype(dtype, copy=False))
                try:
                    f.write(memoryview(data).cast("B"))  # type: ignore[arg-type]  # an ndarray is a buffer; its stubs do not say so
                except OSError as e:
                    raise WriteError(e.errno, e.strerror, str(path)) from None
                tokens += len(data)
        about = {
            "about": f"the token ids in {path.name}: {dtype} (little-endian uint{8 * int(dtype[-1])}), no header; "
                     f"written by {writer}",
            "dtype": dtype,
            "tokens": tokens,
            "tokenizer": tokenizer_name,
            "tokenizer_sha256": fingerprint(tokenizer),
            "n_vocab": n_vocab,
            "text": text_name,
        }
        try:
            Path(sidecar_tmp).write_text(json.dumps(about, indent=2) + "\n", encoding="utf-8")
        except OSError as e:
            raise WriteError(e.errno, e.strerror, str(sidecar)) from None
    return tokens


def _read_json(path: Path):
    """What a sidecar or a manifest holds; ValueError if it is not JSON (or nests too
    deep to read)."""
    try:
        return parse_json(path.read_text(encoding="utf-8"), path)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path} is not readable JSON ({e})") from None


def read_sidecar(path: PathArg) -> dict:
    """A token file's sidecar, checked to describe a token file of its size. ValueError
    says what is wrong."""
    path, sidecar = Path(path), sidecar_path(path)
    if not sidecar.exists():
        raise ValueError(f"{path} has no sidecar {sidecar.name} to say how to read it and which tokenizer wrote it")
    about = _read_json(sidecar)
    if not isinstance(about, dict) or not all(k in about for k in SIDECAR_FIELDS):
        raise ValueError(f"{sidecar} does not describe a token file (it needs {', '.join(SIDECAR_FIELDS)})")
    if about["dtype"] not in DTYPES:
        raise ValueError(f"{sidecar}: dtype {about['dtype']!r} is not one of {', '.join(DTYPES)}")
    size = os.path.getsize(path)
    width = int(about["dtype"][-1])
    if size % width:
        raise ValueError(f"{path} is {size:,} bytes, not a whole number of {about['dtype']} ids (cut short?)")
    if about["tokens"] != size // width:
        said = f"{about['tokens']:,}" if isinstance(about["tokens"], int) else repr(about["tokens"])
        raise ValueError(f"{path} holds {size // width:,} ids, its {sidecar.name} says {said} (changed, cut short or "
                         "copied since?)")
    return about


def read_token_file(path: PathArg, tokenizer: Any) -> np.ndarray:
    """A token file's ids as a read-only array (memory-mapped, not read into memory),
    checked against its sidecar: written by this very tokenizer (the same fingerprint),
    whole, and every id one of the tokenizer's. ValueError says what is wrong."""
    path = Path(path)
    about = read_sidecar(path)
    ours = fingerprint(tokenizer)
    if about["tokenizer_sha256"] != ours:
        raise ValueError(f"{path} was written by another tokenizer ({about.get('tokenizer') or 'unnamed'}, sha256 "
                         f"{str(about['tokenizer_sha256'])[:12]}...) than the one given (sha256 {ours[:12]}...)")
    if about["tokens"] == 0:
        return np.zeros(0, dtype=about["dtype"])
    ids = np.memmap(path, dtype=about["dtype"], mode="r")
    top = int(ids.max())
    if top >= tokenizer.n_vocab:
        raise ValueError(f"{path} holds id {top}, outside the tokenizer's {tokenizer.n_vocab:,} ids")
    return ids


def write_manifest(folder: PathArg, shards: Sequence[tuple[str, int]], tokenizer: Any,
                   tokenizer_name: str | None = None) -> dict:
    """Write a token folder's manifest (atomically, after its shards): shards are
    (file name, number of ids) in reading order. Returns the manifest."""
    manifest = {
        "about": "token shards, read in this order; each NAME.bin is ids with no header, its NAME.bin.json says so",
        "format": MANIFEST_FORMAT,
        "version": 1,
        "dtype": token_dtype(tokenizer.n_vocab),
        "n_vocab": tokenizer.n_vocab,
        "tokenizer": tokenizer_name,
        "tokenizer_sha256": fingerprint(tokenizer),
        "tokens": sum(n for _, n in shards),
        "shards": [{"file": name, "tokens": n} for name, n in shards],
    }
    write_text(Path(folder) / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    return manifest


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def read_manifest(folder: PathArg) -> dict:
    """A token folder's manifest, checked whole: its format, its dtype, each shard an
    object with a file of the folder (listed once) and a count of ids, the counts adding
    up to its total, and a tokenizer's fingerprint. ValueError says what is wrong."""
    path = Path(folder) / MANIFEST
    if not path.exists():
        raise ValueError(f"{folder} has no {MANIFEST}: not a token folder, or its writing did not finish")
    manifest = _read_json(path)
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT or not isinstance(
            manifest.get("shards"), list):
        raise ValueError(f"{path} is not the manifest of a token folder")
    dtype = manifest.get("dtype")
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise ValueError(f"{path}: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    if not isinstance(manifest.get("tokenizer_sha256"), str):
        raise ValueError(f"{path}: tokenizer_sha256 is {manifest.get('tokenizer_sha256')!r}, not a fingerprint")
    names = set()
    for k, entry in enumerate(manifest["shards"]):
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: shard {k} is {json.dumps(entry)[:40]}, not an object with its file and tokens")
        name = entry.get("file")
        if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
            raise ValueError(f"{path}: shard {k}'s name {name!r} is not a file in the folder")
        if name in names:
            raise ValueError(f"{path}: shard {k}, {name}, is listed twice")
        names.add(name)
        if not _is_count(entry.get("tokens")):
            raise ValueError(f"{path}: shard {k}'s tokens {entry.get('tokens')!r} is not a count of ids")
    total = sum(entry["tokens"] for entry in manifest["shards"])
    if not _is_count(manifest.get("tokens")) or manifest["tokens"] != total:
        raise ValueError(f"{path}: tokens is {manifest.get('tokens')!r}, but its shards list {total:,}")
    return manifest


def read_token_folder(folder: PathArg, tokenizer: Any) -> list[np.ndarray]:
    """The shards of a token folder, in the manifest's order, each a read-only memory-
    mapped array, checked against the manifest and its sidecar (bpe.token_files): the
    same tokenizer, the same dtype, whole. ValueError names the shard at fault."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    ours = fingerprint(tokenizer)
    if manifest["tokenizer_sha256"] != ours:
        raise ValueError(f"{folder / MANIFEST}: the shards were written by another tokenizer "
                         f"({manifest.get('tokenizer') or 'unnamed'}, sha256 {manifest['tokenizer_sha256'][:12]}...) "
                         f"than the one given (sha256 {ours[:12]}...)")
    shards = []
    for entry in manifest["shards"]:
        path = folder / entry["file"]
        try:
            ids = read_token_file(path, tokenizer)
        except (OSError, ValueError) as e:
            raise ValueError(f"shard {path.name} of {folder}: {e}") from None
        if len(ids) != entry.get("tokens") or ids.dtype != np.dtype(manifest["dtype"]):
            raise ValueError(f"shard {path.name} of {folder} holds {len(ids):,} ids of {ids.dtype}, not the "
                             f"{entry.get('tokens')!r} of {manifest['dtype']} the manifest lists")
        shards.append(ids)
    return shards
