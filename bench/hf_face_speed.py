"""tok.as_hf() against transformers' own fast tokenizer and gigatoken's as_hf(), for the
same tokenizer.json, one core, warm: face(batch, padding=True, truncation=True,
max_length=512) over the held-out stories split at blank lines, --batch stories a call;
and, where the datasets library is installed, datasets' Dataset.map(batched=True,
batch_size=--batch) of face(texts, truncation=True, max_length=512) over the same stories.

    python bpe_bench.py hf-face-speed [--rounds 5] [--batch 1000] [--vocab 8192]

The tokenizer is learned here from the training sample (GPT-2's split rule, <|endoftext|>
as pad), written by save_huggingface, and loaded by all three from that folder (gigatoken
reads its tokenizer.json). The ids and masks are checked equal to transformers' first. The
process is pinned to one CPU; ours runs with face.threads = 1, transformers with
TOKENIZERS_PARALLELISM=false. Each round times every call once, in an order shuffled each
round; the table gives the median of the rounds' wall-clock milliseconds for the whole
split and the ratio to transformers'. A datasets.map row includes what datasets does on
every map besides calling the face, as a user's would: naming its cache by pickling the
mapped function, face and all, and turning the lists into Arrow columns. The machine's load
averages before and after are written beside the table (the machine may be shared). Written
to docs/results/hf-face-speed.txt and .json.
"""
import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench import SHARED_DATA
from bench.measure import load_line, load_now, pin_to_one_cpu

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=1000, help="stories a call")
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    sys.path.insert(0, str(ROOT))
    pin_to_one_cpu()
    import numpy as np
    import transformers

    from bench.peers import documents
    from bpe import BPETokenizer

    stories = documents((args.data / "tinystories" / "valid-sample.txt").read_text(encoding="utf-8"))
    train = (args.data / "tinystories" / "train-sample-lowercase.txt").read_text(encoding="utf-8")
    tok = BPETokenizer.train(train, vocab_size=args.vocab, pattern="gpt2", special_tokens=["<|endoftext|>"])
    folder = tok.save_huggingface(Path(tempfile.mkdtemp()) / "stories")
    faces = {"transformers": transformers.AutoTokenizer.from_pretrained(str(folder)), "ours": tok.as_hf()}
    faces["ours"].threads = 1
    try:
        import gigatoken
        faces["gigatoken"] = gigatoken.Tokenizer.from_json((folder / "tokenizer.json").read_text(encoding="utf-8")).as_hf()
    except (ImportError, RuntimeError, ValueError) as e:
        print(f"gigatoken left out: {e}")
    for face in faces.values():
        face.pad_token = "<|endoftext|>"
    batches = [stories[i:i + args.batch] for i in range(0, len(stories), args.batch)]
    options = dict(padding=True, truncation=True, max_length=512)
    calls = {}
    for name, face in faces.items():
        calls[f"{name}: lists"] = lambda f=face: [f(b, **options) for b in batches]
        calls[f"{name}: return_tensors='np'"] = lambda f=face: [f(b, return_tensors="np", **options) for b in batches]
    try:
        import datasets
        datasets.disable_progress_bars()
        table = datasets.Dataset.from_dict({"text": stories})
        for name, face in faces.items():
            calls[f"{name}: datasets.map"] = lambda f=face: table.map(
                lambda rows: dict(f(rows["text"], truncation=True, max_length=512)), batched=True,
                batch_size=args.batch, keep_in_memory=True, load_from_cache_file=False, remove_columns=["text"])
    except ImportError:
        print("datasets is not installed: no datasets.map rows")
    for batch in batches:  # equal first (and warm)
        want = faces["transformers"](batch, return_tensors="np", **options)
        for name, face in faces.items():
            got = face(batch, return_tensors="np", **options)
            for key in ("input_ids", "attention_mask"):
                if not np.array_equal(np.asarray(got[key]), want[key]):
                    raise SystemExit(f"{name}: {key} differs from transformers'")
    mapped = {label: call() for label, call in calls.items() if label.endswith("datasets.map")}
    for label, table_out in mapped.items():
        if table_out["input_ids"] != mapped["transformers: datasets.map"]["input_ids"]:
            raise SystemExit(f"{label}: input_ids differ from transformers'")
    print(f"{len(stories):,} stories, {sum(len(s.encode()) for s in stories) / 1e6:.2f} MB, {len(batches)} calls of "
          f"{args.batch}; {options}; median of {args.rounds} rounds, one core")
    load_before = load_now()
    wall = {label: [] for label in calls}
    order, shuffle = list(calls.items()), random.Random(0)
    for _ in range(args.rounds):
        shuffle.shuffle(order)  # no call always follows the same one
        for label, call in order:
            started = time.perf_counter()
            call()
            wall[label].append(time.perf_counter() - started)
    load = load_line(load_before)
    rows = []
    for label in calls:
        ms = statistics.median(wall[label]) * 1e3
        base = statistics.median(wall["transformers: " + label.split(": ", 1)[1]]) * 1e3
        rows.append({"call": label, "wall_ms": round(ms, 2), "vs_transformers": round(base / ms, 2)})
    lines = [f"{'call':<40} {'wall ms':>9} {'x transformers':>15}"]
    lines += [f"{r['call']:<40} {r['wall_ms']:9.2f} {r['vs_transformers']:15.2f}" for r in rows]
    print("\n".join(lines))
    print(load)
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        header = (f"python bpe_bench.py hf-face-speed --rounds {args.rounds} --batch {args.batch} --vocab {args.vocab}\n"
                  f"{len(stories):,} stories in {len(batches)} calls; {options}; one core; median of {args.rounds}\n")
        (RESULTS / "hf-face-speed.txt").write_text(header + "\n".join(lines) + "\n" + load + "\n", encoding="utf-8")
        (RESULTS / "hf-face-speed.json").write_text(json.dumps(
            {"command": header.splitlines()[0], "stories": len(stories), "options": options, "rows": rows,
             "load": load},
            indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
