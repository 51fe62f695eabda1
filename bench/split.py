"""The split rules: each named rule splitting alone; the general engine
(csrc/pattern.h) against Python's `regex` on the same patterns; and whole encodes with
o200k and qwen2 against cl100k, and with a made-up pattern against `regex`'s split alone.

    python bpe_bench.py split      # writes docs/results/bench-split.json and .txt

One process, pinned to one CPU; every table's rows are timed in interleaved rounds
(bench.measure.interleaved), medians. Ids are checked against tiktoken's before the
encodes are timed, chunk counts against `regex`'s before the splits are.
"""
import os
import time

import regex

from bench.measure import Column, Contender, Report, Table, affinity_supported, import_bpe, interleaved, median
from bench.texts import held_out_texts

NAMED = ("default", "gpt2", "gpt4", "qwen2", "o200k")

# A pattern's text with an alternative that never matches: the same rule, but no name
# stands for it, so the general engine runs it (bpe.pretokenize takes a named rule's
# text for the name).
NEVER = "|(?!)"
# tiktoken's current text of cl100k_base (the general engine's by nature: \s++$ makes it
# differ from the named gpt4 at the end of a text), and a made-up pattern that no
# library names: case runs, digit pairs, punctuation, whitespace.
CL100K_NOW = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
              r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
MADE_UP = r"""\p{Lu}?\p{Ll}+|\p{Lu}+(?!\p{Ll})|\p{N}{1,2}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

ENGINE_FLOOR, MADE_UP_ENCODE_FLOOR, NAMED_ENCODE_FLOOR = 10.0, 3.0, 0.8

SPLIT_COLUMNS = [Column("pattern", "pattern", -8), Column("chunks", "chunks", 9, ",d"),
                 Column("gb_per_s", "GB/s", 6, ".2f"), Column("m_chunks_per_s", "M chunks/s", 10)]
ENGINE_COLUMNS = [Column("pattern", "pattern", -22), Column("chunks", "chunks", 9, ",d"),
                  Column("ours_count_mb_per_s", "ours count MB/s", 15),
                  Column("ours_list_mb_per_s", "ours list MB/s", 14), Column("regex_mb_per_s", "regex MB/s", 10),
                  Column("ratio", "count/regex", 11, ".1f"), Column("list_ratio", "list/regex", 10, ".1f")]
ENCODE_COLUMNS = [Column("name", "", -26), Column("pattern", "pattern", -8), Column("tokens", "tokens", 9, ",d"),
                  Column("mb_per_s", "MB/s", 7), Column("ratio", "/cl100k", 7, ".2f")]


def pattern_texts():
    """The patterns' texts: the library's copies of the named ones (bpe.formats)."""
    from bpe import formats
    return {"cl100k (tiktoken's text)": CL100K_NOW, "o200k (as a regex)": formats.O200K_PATTERN + NEVER,
            "qwen2 (as a regex)": formats.QWEN2_PATTERN + NEVER, "made-up": MADE_UP}


def named_split_table(report, bpe, name: str, text: str, repeats: int, clock) -> dict:
    data = text.encode("utf-8")
    mb = len(data) / 1e6
    contenders = [Contender(p, "bpe", lambda: data, lambda d, p=p: bpe._core.count_chunks(d, p)) for p in NAMED]
    first = {}
    samples = interleaved(contenders, repeats, first, clock)
    table = Table(report, f"Splitting {name} ({mb:.2f} MB) alone by each named rule: bpe._core.count_chunks, "
                  f"medians of {repeats}", SPLIT_COLUMNS, kind="named split", text=name, mb=mb, repeats=repeats)
    for p in NAMED:
        s = median(samples[p])
        table.row(pattern=p, chunks=first[p], median_s=s, samples_s=samples[p], gb_per_s=mb / s / 1e3,
                  m_chunks_per_s=first[p] / s / 1e6)
    return table.done()


def engine_table(report, bpe, name: str, text: str, repeats: int, clock) -> dict:
    data = text.encode("utf-8")
    mb = len(data) / 1e6
    table = Table(report, f"The general engine against regex on {name} ({mb:.2f} MB), the same pattern: "
                  "bpe._core.count_chunks (no objects) and bpe._core.pretokenize (a list of bytes) against "
                  f"regex.findall (a list of str), compiled once; medians of {repeats}", ENGINE_COLUMNS,
                  kind="engine", text=name, mb=mb, repeats=repeats)
    for label, pattern in pattern_texts().items():
        compiled = regex.compile(pattern)
        theirs = compiled.findall(text)
        ours = bpe._core.pretokenize(data, pattern)
        assert [c.decode("utf-8") for c in ours] == theirs, f"{label}: our chunks differ from regex's on {name}"
        contenders = [Contender("count", "bpe", lambda: data, lambda d: bpe._core.count_chunks(d, pattern)),
                      Contender("list", "bpe", lambda: data, lambda d: bpe._core.pretokenize(d, pattern)),
                      Contender("regex", "regex", lambda: text, compiled.findall)]
        samples = interleaved(contenders, repeats, clock=clock)
        s = {k: median(v) for k, v in samples.items()}
        # Splitting alone is the count (chunks found, as regex finds them); the list
        # adds a Python bytes object per chunk, which regex's list of str has too.
        ratio = s["regex"] / s["count"]
        table.row(pattern=label, regex=pattern, chunks=len(ours), ours_count_mb_per_s=mb / s["count"],
                  ours_list_mb_per_s=mb / s["list"], regex_mb_per_s=mb / s["regex"], ratio=ratio,
                  list_ratio=s["regex"] / s["list"],
                  samples_s=samples, floor=f"ours >= {ENGINE_FLOOR:g}x regex", met=ratio >= ENGINE_FLOOR)
    return table.done()


def encode_table(report, bpe, name: str, text: str, warm: str, repeats: int, vocab: dict, tiktoken, clock) -> dict:
    """Encoding lists on one core: a new tokenizer, warmed on other text of the kind,
    encode_ordinary on the held-out text."""
    mb = len(text.encode("utf-8")) / 1e6
    for label, (tok, theirs) in vocab.items():
        if theirs is not None:
            assert tok.encode_ordinary(text) == theirs.encode_ordinary(text), f"{label}: ids differ from tiktoken's"

    def make(tok):
        def fresh():
            new = type(tok)(tok.merges, pattern=tok.pattern, special_tokens=tok.special_tokens, token_ids=tok.token_ids)
            new.encode_ordinary(warm)
            return new
        return fresh

    contenders = [Contender(label, "bpe", make(tok), lambda t: t.encode_ordinary(text))
                  for label, (tok, _) in vocab.items()]
    samples = interleaved(contenders, repeats, clock=clock)
    table = Table(report, f"Encoding {name} ({mb:.2f} MB) as lists, one core: encode_ordinary of a new tokenizer "
                  f"warmed on {len(warm.encode('utf-8')) / 1e6:.1f} MB of other text of the kind; ids checked "
                  f"against tiktoken's; medians of {repeats}", ENCODE_COLUMNS, kind="encode", text=name, mb=mb,
                  repeats=repeats)
    base = median(samples["cl100k_base"])
    for label, (tok, theirs) in vocab.items():
        s = median(samples[label])
        row = dict(name=label, pattern=tok.pattern, tokens=len(tok.encode_ordinary(text)), mb_per_s=mb / s,
                   ratio=base / s, samples_s=samples[label], checked_against_tiktoken=theirs is not None)
        if label != "cl100k_base" and tok.pattern in ("o200k", "qwen2"):
            row.update(floor=f"{tok.pattern} >= {NAMED_ENCODE_FLOOR:g}x cl100k", met=base / s >= NAMED_ENCODE_FLOOR)
        table.row(**row)
    return table.done()


def made_up_encode_table(report, bpe, name: str, text: str, warm: str, repeats: int, tok, clock) -> dict:
    """A whole encode with the made-up pattern (cl100k's ranks) against regex's split alone."""
    mb = len(text.encode("utf-8")) / 1e6
    compiled = regex.compile(MADE_UP)

    def fresh():
        new = type(tok)(tok.merges, pattern=tok.pattern, special_tokens=tok.special_tokens, token_ids=tok.token_ids)
        new.encode_ordinary(warm)
        return new

    samples = interleaved([Contender("ours", "bpe", fresh, lambda t: t.encode_ordinary(text)),
                           Contender("regex", "regex", lambda: text, compiled.findall)], repeats, clock=clock)
    ours, theirs = median(samples["ours"]), median(samples["regex"])
    table = Table(report, f"A made-up pattern on {name} ({mb:.2f} MB): our whole encode (cl100k's ranks, warmed "
                  f"as above) against regex.findall's split alone; medians of {repeats}",
                  [Column("name", "", -34), Column("mb_per_s", "MB/s", 7), Column("ratio", "x regex", 7, ".1f")],
                  kind="made-up encode", text=name, mb=mb, repeats=repeats, pattern=MADE_UP)
    table.row(name="ours, encode_ordinary", mb_per_s=mb / ours, ratio=theirs / ours, samples_s=samples["ours"],
              floor=f"encode >= {MADE_UP_ENCODE_FLOOR:g}x regex's split", met=theirs / ours >= MADE_UP_ENCODE_FLOOR)
    table.row(name="regex.findall, splitting alone", mb_per_s=mb / theirs, ratio=1.0, samples_s=samples["regex"])
    return table.done()


def vocabularies(report, bpe, tiktoken) -> dict | None:
    """cl100k_base, o200k_base and Qwen2's pattern on cl100k's ranks, with tiktoken's own
    encodings of the same ranks and patterns to check the ids against."""
    from bpe import BPETokenizer, formats, registry
    try:
        cl100k, o200k = (registry.ranks_file(n, download=False) for n in ("cl100k_base", "o200k_base"))
    except FileNotFoundError as error:
        report.note(f"{error}: the encode tables are left out")
        return None

    def theirs(path, pat_str):
        if tiktoken is None:
            return None
        return tiktoken.Encoding("bench", pat_str=pat_str, mergeable_ranks=formats.read_tiktoken(path), special_tokens={})

    return {"cl100k_base": (BPETokenizer.from_tiktoken(cl100k), theirs(cl100k, formats.GPT4_PATTERN)),
            "o200k_base": (BPETokenizer.from_tiktoken(o200k), theirs(o200k, formats.O200K_PATTERN)),
            "qwen2 (cl100k's ranks)": (BPETokenizer.from_tiktoken(cl100k, pattern="qwen2"),
                                       theirs(cl100k, formats.QWEN2_PATTERN))}


def bench_split(args):
    report = Report("split", args)
    bpe = import_bpe()
    if affinity_supported():
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    report.data["clock"] = args.clock
    report.say(f"pinned to CPU {min(os.sched_getaffinity(0))}; SIMD tier {bpe.simd_tier()}; "
               + ("CPU seconds of each call (--clock cpu: on a machine that other work shares, what the call "
                  "itself cost)" if args.clock == "cpu" else "wall-clock seconds of each call"))
    texts = held_out_texts(args, report)
    for name, (text, _) in texts.items():
        named_split_table(report, bpe, name, text, args.repeats, clock)
    for name, (text, _) in texts.items():
        engine_table(report, bpe, name, text, args.repeats, clock)
    try:
        import tiktoken
    except ImportError:
        tiktoken = None
        report.note("tiktoken is not installed: ids are not checked against it (pip install -r requirements-bench.txt)")
    vocab = vocabularies(report, bpe, tiktoken)
    if vocab is not None:
        for name, (text, warm) in texts.items():
            encode_table(report, bpe, name, text, warm, args.repeats, vocab, tiktoken, clock)
        from bpe import BPETokenizer, registry
        made_up = BPETokenizer.from_tiktoken(registry.ranks_file("cl100k_base", download=False),
                                             pattern=MADE_UP)
        for name, (text, warm) in texts.items():
            made_up_encode_table(report, bpe, name, text, warm, args.repeats, made_up, clock)
    floors = [dict(text=t["text"], kind=t["kind"], **{k: r[k] for k in ("floor", "met")},
                   ratio=r["ratio"], row=r.get("pattern") or r.get("name"))
              for t in report.data.get("tables", []) for r in t["rows"] if "floor" in r]
    report.say("Issue 30's floors:")
    for f in floors:
        report.say(f"  {f['text']:<17} {f['row']:<26} {f['floor']:<34} {f['ratio']:6.2f}x  "
                   f"{'met' if f['met'] else 'NOT met'}")
    report.data["floors"] = floors
    report.save(args.out)
