"""Past one machine: BPE training and token shards on Ray Data (docs/scale-out.md).

    import ray
    from bpe import ray_data
    ray.init()                                            # or ray.init(address="HEAD:6379")
    tok = ray_data.train(["stories/"], vocab_size=8192, special_tokens=["<|endoftext|>"])
    ray_data.write_token_folder(["stories/"], tok, "tokens/", before_each="<|endoftext|>")
    shards = ray_data.read_token_folder("tokens/", tok)    # memory-mapped, in order (bpe.token_files)

Training needs only the counts of the distinct chunks, and counts add up. So:
  1. every block of the dataset (every file, for paths) is counted on a worker into a
     ChunkCounter, which
     leaves it pickled: its counts as three buffers (ChunkCounter.counts), its rule, and
     what it dropped to keep to a memory budget (ChunkCounter.pruned);
  2. the blocks' counters are merged in a tree of Ray tasks, two at a time
     (ChunkCounter.merge, which adds up what each dropped too), so that no node adds up
     all the blocks one by one;
  3. the driver learns the merges from the total (BPETokenizer.train_from_counts), and
     says what the workers dropped, if anything.
Without a budget, the merges are those of training on the whole text in one process.

Token files: each block (each file) is encoded by an actor of a pool (the tokenizer is
built once per actor) into a shard of its own, NAME.bin with its sidecar
(bpe.token_files), and a manifest, written last, lists the shards in the input's order
with their token counts, the dtype and the tokenizer's fingerprint.

The input is a ray.data.Dataset with a column of str, or paths (files or folders of
text, JSON Lines or Parquet). Paths are read through bpe.sources, each file by one Ray
task (or actor call) from its start to its end, a batch of texts at a time
(FILE_BATCH_CHARS), so that a worker holds a batch and its counts, never a whole file:
the blocks of a Dataset made from the files would each sit in a worker's memory whole,
and in Ray's object store. Those tasks need neither Ray Data nor pyarrow (but to read
Parquet), which this module imports only where it uses them: a worker that imports it
to run them stays as small as Ray lets it (Ray Data alone adds some 60 MB a process).

Ray is an optional extra (pip install -r requirements-ray.txt); this module is imported
only when used.
"""
import os
import pickle
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

try:
    import ray
except ImportError:  # pragma: no cover - depends on the environment
    raise ImportError("bpe.ray_data needs Ray: pip install -r requirements-ray.txt "
                      '(or pip install "heapbpe[ray]")') from None
import numpy as np

from . import sources
from .core import AllowedSpecial, PathArg, array_dtype, load_core, special_tokens_list
from .encoding import BPETokenizer, _as_memory
from .token_files import (MANIFEST, MANIFEST_FORMAT, fingerprint, read_manifest, read_token_folder,  # noqa: F401
                          sidecar_path, write_manifest, write_token_file)

# A file's texts are counted and encoded this many characters (about) at a time. A task has
# one CPU, so that no threads share a batch: a megabyte keeps the calls few (a text file
# still comes in bpe.sources' pieces of 8 MB, each a call) and the worker small.
FILE_BATCH_CHARS = 1 << 20


# --- the input ---------------------------------------------------------------------

def _is_dataset(source) -> bool:
    from ray.data import Dataset  # not `import ray.data`, which would make `ray` a local name

    return isinstance(source, Dataset)


def _paths(source) -> list:
    """The files that source (a path or a list of paths) names, as str: bpe.sources.find_files."""
    paths = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    return [str(p) for p in sources.find_files(paths)]


def dataset(source: Any, text_column: str = "text", kind: str | None = None, field: str | None = None,
            special_tokens: Iterable[str] = ()) -> tuple[Any, str]:
    """(a Dataset, the name of its column of texts). source: a ray.data.Dataset (whose
    text_column holds the texts), or a path or a list of paths, read by bpe.sources, one
    task a file (field: the JSON key or Parquet column of the text). train and
    write_token_folder read paths without it, a file a task, a batch at a time."""
    from ray.data import from_items

    if _is_dataset(source):
        return source, text_column
    files = _paths(source)
    # One block a file, so that the files are read by tasks side by side.
    files_ds = from_items([{"path": p} for p in files], override_num_blocks=max(len(files), 1))
    return files_ds.flat_map(_FileReader(kind, field, tuple(special_tokens))), "text"


class _FileReader:
    """The texts of one file, as rows: a SourceError names the file (and line)."""

    def __init__(self, kind, field, special_tokens):
        self.kind, self.field, self.special_tokens = kind, field, special_tokens

    def __call__(self, row):
        for text in sources.read_file(row["path"], self.kind, self.field, self.special_tokens):
            yield {"text": text}


def _file_batches(path, kind, field, special_tokens):
    """The texts of one file (bpe.sources.read_file), in lists of about FILE_BATCH_CHARS:
    (is_whole_texts, texts), where is_whole_texts is False for a text file, whose pieces
    are one text."""
    whole = (kind or sources.kind_of(path)) != "text"
    for batch in sources.batches(sources.read_file(path, kind, field, special_tokens), FILE_BATCH_CHARS):
        yield whole, batch


def _no_column(column: str, columns) -> ValueError:
    return ValueError(f"the dataset has no column {column!r} of texts (its columns: "
                      f"{', '.join(map(repr, columns)) or 'none'}): name it with text_column")


def _check_column(source, column: str):
    """A Dataset without the column of texts is refused here, on the driver, before any
    task runs or anything old is removed, by count and write_token_folder alike (a
    block's task would say so too, later, and as Ray's error)."""
    schema = source.schema()  # None where Ray cannot tell without running the dataset
    if schema is not None and column not in schema.names:
        raise _no_column(column, schema.names)


def _texts_of(batch, column: str) -> list:
    """The texts of a block (an Arrow table) of a Dataset."""
    if column not in batch.column_names:
        raise _no_column(column, batch.column_names)
    texts = batch.column(column).to_pylist()
    for text in texts:
        if text is not None and not isinstance(text, str):
            raise TypeError(f"the column {column!r} must hold str, not {type(text).__name__}")
    return [t for t in texts if t is not None]


def _failure(error: Exception, what: str) -> Exception:
    """The error to raise for a task or actor call that failed while doing `what`: its
    own, where it was bad input (a SourceError names the file and line), else one that
    says what it was doing (a worker that died says nothing of its work)."""
    cause: BaseException = error
    # The exception the task raised, under Ray's wrappers: a RayTaskError's cause, and
    # under Ray Data's UserCodeException, its __cause__.
    while isinstance(cause, ray.exceptions.RayError) or type(cause).__name__ == "UserCodeException":
        inner = getattr(cause, "cause", None) or cause.__cause__
        if inner is None or inner is cause:
            break
        cause = inner
    if isinstance(cause, sources.SourceError):
        return sources.SourceError(str(cause))
    if isinstance(cause, (ValueError, TypeError)):
        # Not type(cause): a subclass (UnicodeDecodeError, say) may want other arguments.
        return (TypeError if isinstance(cause, TypeError) else ValueError)(f"{what}: {cause}")
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return RuntimeError(f"{what} failed: {type(error).__name__}" + (f": {first}" if first else "")
                        + " (Ray's logs say more: ray logs, or /tmp/ray/session_latest/logs)")


# --- training ----------------------------------------------------------------------

def _count_block(batch, rule, column):
    """map_batches: one block's texts -> one row, its counter pickled (the counts as
    buffers, and what keeping to the budget dropped)."""
    import pyarrow as pa

    counter = load_core().ChunkCounter(*rule)
    try:
        texts = _texts_of(batch, column)
        if texts:
            counter.add(texts, threads=1)  # Ray gives a task one CPU
    except (ValueError, TypeError) as error:
        # Sent on as the block's row, and raised by the task that adds it up (_counters_of):
        # Ray Data keeps only the text of an exception raised here, not the exception,
        # which a task of the tree keeps, so the driver raises what the local path raises.
        return pa.table({"counter": pa.array([pickle.dumps(error)], pa.large_binary())})
    return pa.table({"counter": pa.array([pickle.dumps(counter)], pa.large_binary())})


@ray.remote
def _count_file(path, rule, kind, field):
    """One file counted as it is read, a batch of texts at a time, into a counter."""
    counter = load_core().ChunkCounter(*rule)
    for _, texts in _file_batches(path, kind, field, rule[1]):
        counter.add(texts, threads=1)  # Ray gives a task one CPU
    return counter


def _counters_of(part) -> list:
    """The counters in part: a counter (a file's, or a node's of the tree), or an Arrow
    table of a Dataset's blocks' pickled counters."""
    if isinstance(part, load_core().ChunkCounter):
        return [part]
    counters = [pickle.loads(row) for row in part.column("counter").to_pylist()]
    for counter in counters:
        if isinstance(counter, Exception):  # a block's bad input (_count_block)
            raise counter
    return counters


@ray.remote
def _merge_counts(*parts):
    """One node of the tree: the counters of parts merged into one. merge keeps to the
    budget and adds up what the others dropped (pruned), so the root's pruned is all
    that any worker dropped."""
    counters = [counter for part in parts for counter in _counters_of(part)]
    total = counters[0]
    with warnings.catch_warnings():
        # A node's own warning would stay in its worker's log: the driver reports the total.
        warnings.simplefilter("ignore", RuntimeWarning)
        for other in counters[1:]:
            total.merge(other, threads=1)
    return total


def count(source: Any, pattern: str = "default", special_tokens: Iterable[str] = (), text_column: str = "text",
          max_memory: int | str | None = None, progress: bool | None = None, kind: str | None = None,
          field: str | None = None) -> Any:
    """The counts of every chunk of source (see dataset), as one bpe.ChunkCounter: a
    block of a Dataset counted by a task of map_batches, a file by a task, and the
    counters merged in a tree of tasks. max_memory: each counter's budget
    (bpe.ChunkCounter), the tree's nodes' included; the counter's pruned is then what
    all of them dropped to keep to it. A file that cannot be read is a SourceError that
    names it; a worker that dies, a RuntimeError (Ray's logs name its task, "count FILE")."""
    from tqdm import tqdm

    special_tokens = list(special_tokens_list(special_tokens))
    rule = (pattern, special_tokens, _as_memory(max_memory))
    load_core().ChunkCounter(*rule)  # a bad pattern or special token is refused here, not on a worker
    if _is_dataset(source):
        _check_column(source, text_column)
        counted = source.map_batches(_count_block, fn_kwargs={"rule": rule, "column": text_column},
                                     batch_format="pyarrow", batch_size=None)
        try:
            leaves = counted.to_arrow_refs()  # Ray Data shows its progress, and raises a block's error
        except (ray.exceptions.RayError, OSError) as error:
            raise _failure(error, "counting the dataset's blocks") from None
        started = 0
    else:
        # Each task named by its file: Ray's logs and its state API (ray list tasks) say which one failed.
        leaves = [_count_file.options(name=f"count {Path(path).name}").remote(path, rule, kind, field)
                  for path in _paths(source)]
        started = len(leaves)
    if not leaves:
        return load_core().ChunkCounter(*rule)
    # The tree: each level adds pairs of the one below; an odd one out is a task of one
    # input, so that every level is tasks that the loop below can wait for alike.
    waiting, level = list(leaves) if started else [], leaves
    while len(level) > 1 or level is leaves:
        level = [_merge_counts.remote(*level[k:k + 2]) for k in range(0, len(level), 2)]
        waiting += level
    root = level[0]
    # Only `waiting` holds the refs from here, and drops each as its task ends: a level's
    # counters leave the object store once the level above has taken them in.
    del leaves, level
    disable = None if progress is None else not progress
    with tqdm(desc="counting, adding up", total=len(waiting), unit=" tasks", disable=disable, leave=False) as bar:
        while waiting:
            # Not fetched: the counts stay on the workers until the root's come here. A
            # task's error fails the tasks above it, and so the root's ray.get.
            done, waiting = ray.wait(waiting, num_returns=1, fetch_local=False)
            bar.update(len(done))
            del done
    try:
        return ray.get(root)
    except (ray.exceptions.RayError, OSError) as error:
        raise _failure(error, "counting the dataset's blocks" if _is_dataset(source) else
                       "counting the files, or adding up their counts (Ray's task named 'count FILE' for a file)") from None


def train(source: Any, vocab_size: int, pattern: str = "default", special_tokens: Iterable[str] = (),
          text_column: str = "text", max_memory: int | str | None = None, progress: bool | None = None, kind: str | None = None,
          field: str | None = None) -> BPETokenizer:
    """A tokenizer learnt from source (a Dataset or paths, see dataset) on the Ray
    cluster: the counting is spread over it, the merges are learnt on the driver, and
    equal those of BPETokenizer.train on the same texts in one process. With max_memory,
    each counter keeps to it by dropping the rarest chunks, and a RuntimeWarning says
    how many the workers dropped in all (the merges may then differ)."""
    special_tokens = special_tokens_list(special_tokens)  # a generator is read once, here
    counter = count(source, pattern, special_tokens, text_column, max_memory, progress, kind, field)
    dropped, threshold = counter.pruned
    if dropped:
        warnings.warn(f"to keep to max_memory ({counter.max_memory:,} bytes a counter), the workers dropped "
                      f"{dropped:,} distinct chunks counted {threshold:,} times or fewer; the merges may differ "
                      "from exact training (no max_memory)", RuntimeWarning, stacklevel=2)
    return BPETokenizer.train_from_counts(counter, vocab_size, pattern=pattern, special_tokens=special_tokens,
                                          progress=progress)


# --- token files -------------------------------------------------------------------

def shard_name(index: int) -> str:
    return f"shard-{index:06d}.bin"


@ray.remote
class _ShardWriter:
    """Holds a tokenizer, built once, and writes blocks' or files' ids to shards."""

    def __init__(self, state, folder, tokenizer_name, allowed_special, before_each):
        self.tokenizer = BPETokenizer.from_state(state)
        self.folder, self.tokenizer_name, self.allowed_special = Path(folder), tokenizer_name, allowed_special
        dtype = array_dtype(self.tokenizer.n_vocab)  # encode_array's
        self.before = None if before_each is None else np.array([self.tokenizer.special_ids[before_each]], dtype)
        self.empty = np.zeros(0, dtype)

    def _ids(self, texts, whole: bool, first: bool):
        """The ids of a batch of texts, one array: each text's after before_each's id
        where whole (else the texts are the pieces of one text, which gets it first)."""
        encode = self.tokenizer.encode_array
        parts = []
        for text in texts:
            if self.before is not None and (whole or first):
                parts.append(self.before)
                first = False
            parts.append(encode(text, allowed_special=self.allowed_special, threads=1))  # one CPU a task
        return np.concatenate(parts) if parts else self.empty

    def _write(self, index: int, batches):
        # write_token_file writes the ids under a temporary name, renamed when whole, and
        # the sidecar after them: a crash never leaves a sidecar beside half the ids.
        tokens = write_token_file(self.folder / shard_name(index), batches, self.tokenizer, self.tokenizer_name,
                                  writer="bpe.ray_data")
        return index, tokens

    def write(self, index: int, column: str, block):
        return self._write(index, [self._ids(_texts_of(block, column), True, True)])

    def write_file(self, index: int, path: str, kind, field):
        batches = _file_batches(path, kind, field, self.tokenizer.special_tokens)
        return self._write(index, (self._ids(texts, whole, k == 0) for k, (whole, texts) in enumerate(batches)))


def write_token_folder(source: Any, tokenizer: BPETokenizer, folder: PathArg, text_column: str = "text",
                       workers: int | None = None, allowed_special: AllowedSpecial = "all", tokenizer_name: str | None = None, progress: bool | None = None,
                       kind: str | None = None, field: str | None = None, before_each: str | None = None) -> dict:
    """Encode source (a Dataset or paths, see dataset) into folder: one shard a block
    (a file, for paths), by a pool of `workers` actors (None: one per CPU of the
    cluster), and the manifest, last; returns the manifest. The shards, read in the
    manifest's order, hold the ids of the texts in the input's order, whatever the
    number of workers. before_each, a special token of the tokenizer, puts its id
    before each text's ids (a row of a Dataset, a record of JSON Lines or Parquet, a
    whole text file), as GPT-2's data puts <|endoftext|> before each document.

    A rerun after a crash starts again: the old manifest goes first, so that a folder
    is never read while its shards change, and shards of the old run past the new ones
    are removed once the new manifest is written. A file that cannot be read is a
    SourceError that names it; a worker that dies, a RuntimeError that names the shard."""
    from tqdm import tqdm

    if before_each is not None and before_each not in tokenizer.special_tokens:
        raise ValueError(f"before_each must be one of the tokenizer's special tokens "
                         f"({', '.join(map(repr, tokenizer.special_tokens)) or 'it has none'}), got {before_each!r}")
    if _is_dataset(source):
        _check_column(source, text_column)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MANIFEST).unlink(missing_ok=True)
    if _is_dataset(source):
        from ray.data import DataContext

        # The blocks in the dataset's order, which numbers the shards: Ray Data keeps the
        # order only when asked to (its tasks may finish in any order).
        context = DataContext.get_current()
        kept = context.execution_options.preserve_order
        context.execution_options.preserve_order = True
        try:
            blocks = source.to_arrow_refs()
        finally:
            context.execution_options.preserve_order = kept
        jobs = [(k, f"block {k} of the dataset", block) for k, block in enumerate(blocks)]

        def submit(actor, job):
            return actor.write.remote(job[0], text_column, job[2])
    else:
        # A file an actor call, read and encoded a batch at a time: the shards follow the files' order.
        jobs = [(k, path, path) for k, path in enumerate(_paths(source))]

        def submit(actor, job):
            return actor.write_file.remote(job[0], job[2], kind, field)
    if workers is None:
        workers = max(1, int(ray.available_resources().get("CPU", 1)))
    workers = max(1, min(workers, len(jobs) or 1))
    state = tokenizer.state()
    # _ShardWriter.remote is made by @ray.remote, which mypy does not see.
    idle = [_ShardWriter.remote(state, str(folder), tokenizer_name, allowed_special, before_each)  # type: ignore[attr-defined]
            for _ in range(workers)]
    tokens = [0] * len(jobs)
    disable = None if progress is None else not progress
    with tqdm(desc="writing shards", total=len(jobs), unit=" shards", disable=disable, leave=False) as bar:
        # A job an idle actor at a time, in order: the running ones by their call.
        todo = list(reversed(jobs))
        running: dict = {}
        while todo or running:
            while todo and idle:
                job, actor = todo.pop(), idle.pop()
                running[submit(actor, job)] = (actor, job)
            done, _ = ray.wait(list(running), num_returns=1)
            actor, job = running.pop(done[0])
            try:
                index, n = ray.get(done[0])
            except (ray.exceptions.RayError, OSError) as error:
                raise _failure(error, f"writing {shard_name(job[0])} from {job[1]}") from None
            tokens[index] = n
            idle.append(actor)
            bar.update(1)
    manifest = write_manifest(folder, [(shard_name(k), n) for k, n in enumerate(tokens)], tokenizer, tokenizer_name)
    listed = {s["file"] for s in manifest["shards"]}
    for old in folder.glob("shard-*.bin"):
        if old.name not in listed:
            old.unlink(missing_ok=True)
            sidecar_path(old).unlink(missing_ok=True)
    return manifest
