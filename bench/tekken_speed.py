"""Encoding with Mistral's Tekken files: BPETokenizer.from_tekken against mistral-common's
Tekkenizer (tiktoken underneath, whose own encode_ordinary is a row too), on one core.

    python bpe_bench.py tekken-speed [--repeats 7] [--out docs/results] [tekken_240911.json ...]

The files default to the two that mistral-common ships. Texts: the held-out stories and
about 1 MB of Python source (each warmed by other text of the same kind: the training
stories, other source files). Every contender's ids are checked against mistral-common's
Tekkenizer.encode(text, bos=False, eos=False) before it is timed; then each round runs
every contender once, in turn, in this process pinned to one CPU, and the table gives the
medians of the wall-clock seconds. Saved as OUT/bench-tekken-speed.json and .txt.
"""
import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import SHARED_DATA  # noqa: E402
from bench.measure import Contender, Report, import_bpe, interleaved, median, timing  # noqa: E402
from bench.texts import cut_to, held_out_and_warm_up_source, stories  # noqa: E402


def shipped_files() -> list[Path]:
    """The Tekken files that mistral-common ships."""
    import mistral_common

    folder = Path(mistral_common.__file__).parent / "data"
    return sorted(folder.glob("tekken_*.json"))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path, help="tekken.json files (default: mistral-common's)")
    parser.add_argument("--repeats", type=int, default=7, help="rounds; the table gives medians (default: 7)")
    parser.add_argument("--source-mb", type=float, default=1.0, help="megabytes of Python source (default: 1)")
    parser.add_argument("--warm-mb", type=float, default=0.5, help="megabytes of other text of the same kind "
                        "each tokenizer encodes before it is timed (default: 0.5)")
    parser.add_argument("--data", type=Path, default=SHARED_DATA, help=f"the shared data folder (default: {SHARED_DATA})")
    parser.add_argument("--out", type=Path, default=None, help="where bench-tekken-speed.json and .txt go "
                        "(default: print only)")
    args = parser.parse_args(argv)
    if args.repeats < 5:
        parser.error("--repeats must be at least 5")
    bpe = import_bpe()
    try:
        from importlib import metadata

        from mistral_common.tokens.tokenizers.tekken import Tekkenizer
    except ImportError as error:
        sys.exit(f"bpe_bench.py tekken-speed needs mistral-common (requirements-tekken.txt says how): {error}")
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    report = Report("tekken-speed", args)
    report.data["versions"]["mistral-common"] = metadata.version("mistral-common")
    story_texts = stories(args.data)
    warm = int(args.warm_mb * 1e6)
    source, warm_source, facts = held_out_and_warm_up_source(int(args.source_mb * 1e6), warm)
    texts = {"held-out stories": (story_texts["valid"], cut_to(story_texts["train"], warm)),
             "Python source": (source, warm_source)}
    report.data["texts"] = {name: {"mb": len(t.encode("utf-8")) / 1e6} for name, (t, _) in texts.items()}
    report.data["texts"]["Python source"].update(facts)
    report.data["rows"] = []
    for path in args.files or shipped_files():
        ours = bpe.BPETokenizer.from_tekken(path)
        theirs = Tekkenizer.from_file(path)
        tiktoken_encoding = theirs._model  # the tiktoken Encoding that Tekkenizer.encode calls, offsets aside
        n_special = theirs.num_special_tokens
        for text_name, (text, warm_text) in texts.items():
            contenders = [
                Contender("bpe encode_ordinary", "bpe", lambda: ours, lambda t, x=text: t.encode_ordinary(x)),
                Contender("bpe encode_array(threads=1)", "bpe", lambda: ours,
                          lambda t, x=text: t.encode_array(x, disallowed_special=(), threads=1)),
                Contender("mistral-common Tekkenizer.encode", "mistral-common", lambda: theirs,
                          lambda t, x=text: t.encode(x, bos=False, eos=False)),
                Contender("tiktoken encode_ordinary (under it)", "tiktoken", lambda: tiktoken_encoding,
                          lambda t, x=text: t.encode_ordinary(x)),
            ]
            expected = theirs.encode(text, bos=False, eos=False)
            # Warm: each has encoded other text of the same kind first (tiktoken's is theirs).
            ours.encode_ordinary(warm_text), theirs.encode(warm_text, bos=False, eos=False)
            checks = {
                "bpe encode_ordinary": ours.encode_ordinary(text) == expected,
                "bpe encode_array(threads=1)": ours.encode_array(text, disallowed_special=(),
                                                                 threads=1).tolist() == expected,
                "mistral-common Tekkenizer.encode": True,
                "tiktoken encode_ordinary (under it)": [i + n_special for i in
                                                        tiktoken_encoding.encode_ordinary(text)] == expected,
            }
            if not all(checks.values()):
                sys.exit(f"{path.name}, {text_name}: ids differ from mistral-common's: {checks}")
            samples = interleaved(contenders, args.repeats)
            mb = len(text.encode("utf-8")) / 1e6
            report.say(f"{path.name}, {text_name} ({mb:.2f} MB, {len(expected):,} tokens; ids equal "
                       "mistral-common's for every row): median MB/s of "
                       f"{args.repeats} interleaved rounds, one core, warm")
            base = median(samples["mistral-common Tekkenizer.encode"])
            for c in contenders:
                m = median(samples[c.name])
                report.say(f"  {c.name:<40} {mb / m:8.1f} MB/s   {base / m:5.2f} of mistral-common's speed")
                report.data["rows"].append({"file": path.name, "text": text_name, "contender": c.name, "mb": mb,
                                            "tokens": len(expected), "ids_equal": checks[c.name],
                                            "mb_per_s": mb / m, **timing(samples[c.name])})
    report.save(args.out)


if __name__ == "__main__":
    main()
