"""bpe_bench.py train: learning merges, ours against rustbpe and Hugging Face tokenizers,
on all cores; our peak memory; counting chunks alone on 1 and 2 threads."""
import os
import sys
import time

from bench import NUM_MERGES, SPECIAL_TOKENS, VOCAB_SIZE
from bench.measure import (Contender, Report, import_bpe, interleaved, median, optional_import, parallel_ceiling,
                           peak_memory_mb, timing, write_temporary)
from bench.peers import same_merges
from bench.texts import cut_to, distinct_text, generated_words, pieces, python_source, stories


def corpora(story_texts, stories_text, args) -> dict:
    """The texts to learn from: {name: (text, what it is)}; a row given 0 MB is left out
    (--stories-mb 0 --many-mb 0: the 40 MB row alone). stories_text: every story, the
    training ones then the held-out ones."""
    out = {}
    if args.stories_mb > 0:
        out["stories"] = (cut_to(stories_text, int(args.stories_mb * 1e6)), "the stories")
    if args.distinct_mb > 0:
        out["distinct"] = distinct_text(story_texts, int(args.distinct_mb * 1e6))
    if args.many_mb <= 0:
        return out
    size = int(args.many_mb * 1e6)
    source_size = int(size * 0.4)
    source = cut_to(python_source(source_size)[0], source_size)
    words = generated_words(size - len(source.encode("utf-8")))
    out["many"] = (cut_to(source + "\n" + words, size), "Python source (40%) + generated words (60%)")
    return out


def chunk_counts(bpe, text: str) -> tuple[int, int]:
    """(chunks, distinct chunks) of the text under our split rule."""
    total = 0
    for part in pieces(text, 8 << 20):
        total += len(bpe.pretokenize(part.encode("utf-8")))
    counter = bpe.ChunkCounter()
    counter.add(text.encode("utf-8"))
    return total, len(counter)


# Our training in a fresh process, for its peak memory: the text comes as a file.
TRAIN_PROCESS = """
import sys
from bpe import BPETokenizer
text = open(sys.argv[1], encoding="utf-8").read()
BPETokenizer.train(text, int(sys.argv[2]), special_tokens=sys.argv[3].split(","), progress=False)
"""


def bench_train(args):
    report = Report("train", args)
    bpe = import_bpe()
    rustbpe, tokenizers = optional_import("rustbpe", report), optional_import("tokenizers", report)
    story_texts = stories(args.data)
    stories_text = story_texts["train"] + "\n" + story_texts["valid"]
    texts = corpora(story_texts, stories_text, args)
    report.say(f"Learning {NUM_MERGES:,} merges (vocabulary {VOCAB_SIZE:,}: 256 bytes, the merges, "
               f"{len(SPECIAL_TOKENS)} special tokens), on all cores ({os.cpu_count()}); medians of {args.repeats}.")
    report.say("ours: BPETokenizer.train(text). rustbpe: given our split rule and the text in pieces cut where no "
               "chunk crosses. tokenizers: its ByteLevel pre-tokenizer (GPT-2's split), so its merges differ.\n")
    check_against_reference(report, bpe, stories_text, args)
    report.data["tables"] = [training_table(report, bpe, rustbpe, tokenizers if name in args.hf_on else None,
                                            name, text, what, args.repeats)
                             for name, (text, what) in texts.items()]
    if tokenizers and set(texts) - set(args.hf_on):
        report.note(f"tokenizers was left out on {', '.join(sorted(set(texts) - set(args.hf_on)))} (--hf-on)")
    if "distinct" in texts:
        counting_table(report, bpe, *texts["distinct"], args.repeats)
    report.save(args.out)


def check_against_reference(report, bpe, stories_text, args):
    """Our merges against the reference's, on a prefix of the stories (the reference is
    slow); exits on a difference."""
    import bpe_reference

    prefix = cut_to(stories_text, int(args.reference_mb * 1e6))
    start = time.perf_counter()
    reference = bpe_reference.train(prefix.encode("utf-8"), NUM_MERGES, special_tokens=[s.encode() for s in
                                                                                          SPECIAL_TOKENS])
    reference_s = time.perf_counter() - start
    ours = bpe.BPETokenizer.train(prefix, VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, progress=False).merges
    same = [tuple(m) for m in reference] == [tuple(m) for m in ours]
    report.say(f"merges {'identical to' if same else 'DIFFERENT from'} the reference's on the first "
               f"{len(prefix.encode()) / 1e6:.2f} MB of the stories ({len(ours):,} merges; the reference took "
               f"{reference_s:.0f} s)\n")
    report.data["reference_check"] = {"bytes": len(prefix.encode("utf-8")), "merges": len(ours), "identical": same,
                                      "reference_s": reference_s}
    if not same:
        sys.exit("MISMATCH: our merges differ from the reference's, so no time is printed")


def training_contenders(bpe, rustbpe, tokenizers, text, parts) -> list:
    """Ours on the text; rustbpe (our split rule) and tokenizers (GPT-2's split) on its parts."""
    from bpe import formats

    contenders = [Contender("ours", "bpe", lambda: text, lambda text: bpe.BPETokenizer.train(
        text, VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, progress=False))]
    if rustbpe:
        def train_rustbpe(parts):
            tok = rustbpe.Tokenizer()
            tok.train_from_iterator(iter(parts), 256 + NUM_MERGES, pattern=formats.DEFAULT_PATTERN)
            return tok
        contenders.append(Contender("rustbpe", "rustbpe", lambda: parts, train_rustbpe))
    if tokenizers:
        def train_tokenizers(parts):
            from tokenizers import Tokenizer, models, pre_tokenizers, trainers
            tok = Tokenizer(models.BPE())
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            trainer = trainers.BpeTrainer(vocab_size=256 + NUM_MERGES, show_progress=False,
                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
            tok.train_from_iterator(parts, trainer)
            return tok
        contenders.append(Contender("tokenizers", "tokenizers", lambda: parts, train_tokenizers))
    return contenders


def training_table(report, bpe, rustbpe, tokenizers, name, text, what, repeats) -> dict:
    """Training on one corpus, every library in turn; rustbpe's merges checked against ours."""
    cores = os.cpu_count()
    mb = len(text.encode("utf-8")) / 1e6
    chunks, distinct = chunk_counts(bpe, text)
    contenders = training_contenders(bpe, rustbpe, tokenizers, text, pieces(text, 1 << 20))
    # The check, on the first round's results (a run of rustbpe on 100 MB takes a
    # minute): rustbpe's merges must be ours.
    first = {}
    samples = interleaved(contenders, repeats, first)
    notes = {"ours": ""}
    if rustbpe:
        same = same_merges(first["rustbpe"], first["ours"].merges)
        notes["rustbpe"] = "the same merges" if same else "OTHER merges than ours"
    if "tokenizers" in first:
        notes["tokenizers"] = "other merges: its split (GPT-2's)"
    del first
    peak = peak_memory_mb(TRAIN_PROCESS, write_temporary(text), VOCAB_SIZE, ",".join(SPECIAL_TOKENS))
    title = (f"Training on {mb:.1f} MB: {what}; {chunks:,} chunks, {distinct:,} distinct; all cores ({cores}); "
             f"medians of {repeats}")
    report.say(title)
    report.say(f"{'':<12} {'s':>9} {'time/ours':>10}  merges")
    ours_s = median(samples["ours"])
    rows = []
    for c in contenders:
        s = median(samples[c.name])
        report.say(f"{c.name:<12} {s:>9.3f} {s / ours_s:>9.2f}x  {notes[c.name] or '(ours)'}")
        rows.append({"name": c.name, "library": c.library, **timing(samples[c.name]), "time_over_ours": s / ours_s,
                     "merges_match": None if c.name == "ours" else (notes[c.name] == "the same merges"),
                     "note": notes[c.name]})
    report.say(f"peak memory of ours, in a fresh process that reads the text and trains: {peak:,.0f} MB "
               f"(the text itself: {mb:.0f} MB)\n")
    return {"corpus": name, "what": what, "mb": mb, "chunks": chunks, "distinct_chunks": distinct,
            "threads": "all", "cores": cores, "repeats": repeats, "title": title,
            "ours_peak_rss_mb": peak, "rows": rows}


def counting_table(report, bpe, text, what, repeats):
    """Counting alone, on 1 thread and on 2: a fresh counter each round."""
    data = text.encode("utf-8")
    mb = len(data) / 1e6
    contenders = [Contender(f"ChunkCounter().add(threads={k})", "bpe",
                            bpe.ChunkCounter, lambda counter, k=k: counter.add(data, threads=k))
                  for k in (1, 2)]
    samples = interleaved(contenders, repeats)
    one_s, two_s = (median(samples[c.name]) for c in contenders)
    ceiling = parallel_ceiling(2, repeats)
    report.say(f"Counting the chunks of {mb:.1f} MB ({what}) alone, 2 threads against 1; medians of {repeats}")
    for c in contenders:
        s = median(samples[c.name])
        report.say(f"{c.name:<32} {s:>8.4f} s {mb / s:>7.1f} MB/s")
    report.say(f"2 threads against 1: {one_s / two_s:.2f}x (the ceiling now: a plain Python loop in 2 processes "
               f"did {ceiling['ratio']:.2f}x the work of one)")
    report.data["counting"] = {"corpus": "distinct", "mb": mb, "rows": [
        {"name": c.name, "threads": k, **timing(samples[c.name]), "mb_per_s": mb / median(samples[c.name])}
        for c, k in zip(contenders, (1, 2))], "ratio": one_s / two_s, "ceiling": ceiling}
