"""bpe train: learn a tokenizer from files, and say what was learnt."""
import argparse
import time
import warnings

from ... import sources
from ...core import PruningWarning, ShortVocabularyWarning
from ...encoding import BPETokenizer
from ..errors import UsageError, library_call, warn
from ..streams import find_files, size
from ..tokens import longest_tokens


def run(args: argparse.Namespace) -> int:
    if args.vocab_size < 256 + len(args.special):
        raise UsageError(f"--vocab-size must be at least {256 + len(args.special)} (the 256 bytes and "
                         f"{len(args.special)} special tokens), got {args.vocab_size}")
    files = find_files(args.files)
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
        tok = library_call(lambda: BPETokenizer.train(texts, vocab_size=args.vocab_size, pattern=args.pattern,
                                                      special_tokens=args.special, threads=args.threads,
                                                      max_memory=args.max_memory))
    pruned = None  # the last of the core's pruning warnings: its total_dropped is the run's
    for w in caught:
        if isinstance(w.message, PruningWarning):
            pruned = w.message
        elif not isinstance(w.message, ShortVocabularyWarning):  # that one is said below, in the command's words
            warn(str(w.message))
    seconds = time.perf_counter() - started
    path = tok.save(args.output)
    merges = len(tok.merges)
    print(f"read {len(files)} file{'s' * (len(files) != 1)}, {size(read[0])}, in {seconds:.1f} s")
    print(f"learned {merges:,} merges: {tok.n_vocab:,} tokens (256 bytes, {merges:,} merges, "
          f"{len(tok.special_tokens)} special), split pattern {tok.pattern!r}")
    if merges:
        shown = [repr(tok.id_to_token(256 + k)) for k in range(min(8, merges))]
        print(f"first merges: {', '.join(shown)}")
        print(f"longest tokens: {', '.join(repr(t) for _, t in longest_tokens(tok, 5))}")
    print(f"wrote {path}")
    wanted = args.vocab_size - 256 - len(args.special)
    if pruned:
        short = (f"; the pairs ran out after {merges:,} merges ({tok.n_vocab:,} tokens, not {args.vocab_size:,})"
                 if merges < wanted else "")
        warn(f"to keep to --max-memory {args.max_memory}, pruning removed {pruned.total_dropped:,} distinct chunks "
             f"counted {pruned.threshold:,} times or fewer, and their pairs with them{short}; the merges may differ "
             "from exact training: raise --max-memory (or leave it out)")
    elif merges < wanted:
        warn(f"the text ran out of pairs to merge after {merges:,} merges: the vocabulary has {tok.n_vocab:,} "
             f"tokens, not {args.vocab_size:,} (more text, or a smaller --vocab-size)")
    return 0
