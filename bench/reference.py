"""bpe_bench.py reference: the episode's table, the C++ core against bpe_reference.py."""
import sys
from pathlib import Path

from bench import REFERENCE_MERGES, ROOT
from bench.measure import Contender, Report, import_bpe, interleaved, timing


def bench_reference(args):
    report = Report("reference", args)
    bpe = import_bpe()
    import bpe_reference

    if args.text:
        text, source = Path(args.text).read_bytes(), args.text
    elif (args.data / "tinystories" / "train-sample-lowercase.txt").exists():
        source = str(args.data / "tinystories" / "train-sample-lowercase.txt")
        text = Path(source).read_bytes()
    else:
        sys.path.insert(0, str(ROOT / "tests"))
        from sample_text import made_up_stories
        text, source = made_up_stories(int(max(args.sizes_mb) * 1e6)).encode("utf-8"), "made-up stories"
    sizes = [int(mb * 1e6) for mb in args.sizes_mb]
    report.say(f"text: {source}; medians of {args.repeats}, each round running the reference and the C++ in turn")
    report.say("C++: bpe.train(text, 500, threads=1), then a fresh bpe.Encoder(merges).encode(text) (lists): one "
               "thread, as the reference.\n")
    rows = []
    for task in ("train", "encode"):
        for size in sizes:
            part = text[:size]
            if task == "train":
                contenders = [Contender("reference", "bpe_reference", lambda: part,
                                        lambda part: bpe_reference.train(part, REFERENCE_MERGES)),
                              Contender("C++", "bpe", lambda: part, lambda part: bpe.train(part, REFERENCE_MERGES,
                                                                                           threads=1))]
            else:
                merges = bpe.train(part, REFERENCE_MERGES)
                # A fresh Encoder each round, untimed: its cache starts empty.
                contenders = [Contender("reference", "bpe_reference", lambda: part,
                                        lambda part: bpe_reference.encode(part, merges)),
                              Contender("C++", "bpe", lambda: bpe.Encoder(merges), lambda enc: enc.encode(part))]
            if contenders[0].once() != contenders[1].once():
                sys.exit(f"MISMATCH in {task} on {size:,} bytes: the C++ and the reference disagree")
            samples = interleaved(contenders, args.repeats)
            rows.append({"task": f"train {REFERENCE_MERGES} merges" if task == "train" else "encode",
                         "mb": len(part) / 1e6, "reference": timing(samples["reference"]), "cpp": timing(samples["C++"]),
                         "identical": True})
    report.say(f"{'task':<20} {'MB':>5} {'Python (s)':>11} {'C++ (s)':>9} {'faster':>8}")
    for row in rows:
        ref_s, cpp_s = row["reference"]["median_s"], row["cpp"]["median_s"]
        row["faster"] = ref_s / cpp_s
        report.say(f"{row['task']:<20} {row['mb']:>5g} {ref_s:>11.3f} {cpp_s:>9.4f} {ref_s / cpp_s:>7.0f}x")
    report.data.update({"text": source, "merges": REFERENCE_MERGES, "threads": 1, "rows": rows})
    report.save(args.out)

