"""Encode speed of a tokenizer.json whose pre-tokenizer is one split pattern (Qwen 2.5's
shape: NFC, a Split on Qwen's regex, ByteLevel, added tokens): the compiled core
splitting with the file's regex, against the Python pipeline (the regex module splits,
the core encodes each chunk), which is what such a file ran on before.

    python bpe_bench.py hf-encode-speed --text /path/to/stories.txt --out results.json

The file is made as bpe_bench.py hf-load-time makes it (--file to give one). Both paths'
ids are checked against Hugging Face's first; then each round encodes the text with
both, in turn, in one process, and the medians go to the results file.
"""
import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def python_pipeline(path: str):
    """The tokenizer as it loads when its split is not one pattern: the Python pipeline."""
    from bpe import huggingface
    from bpe.huggingface_tokenizer import HuggingFaceTokenizer
    args, rules = huggingface.read_huggingface(path)
    rules.split_pattern = lambda: None
    return HuggingFaceTokenizer(args, rules, path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--text", required=True, help="a UTF-8 text file to encode")
    parser.add_argument("--file", help="a tokenizer.json (default: make bpe_bench.py hf-load-time's)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default="hf_encode_speed.json")
    args = parser.parse_args(argv)
    import tokenizers

    from bpe import BPETokenizer
    text = Path(args.text).read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as folder:
        path = args.file
        if path is None:
            from bench import hf_load_time
            path = str(Path(folder) / "tokenizer.json")
            hf_load_time.make_file(Path(path), 150_000, pairs=False)
        core, python = BPETokenizer.from_huggingface(path), python_pipeline(path)
        assert core.pattern != "gpt4", "the file's split is not one pattern the core takes"
        hf = tokenizers.Tokenizer.from_file(path)
    hf.encode_special_tokens = True
    expected = hf.encode(text, add_special_tokens=False).ids
    assert core.encode_ordinary(text) == expected and python.encode_ordinary(text) == expected
    times: dict[str, list[float]] = {"core split": [], "python pipeline": []}
    for _ in range(args.rounds):
        for name, tok in (("core split", core), ("python pipeline", python)):
            start = time.perf_counter()
            tok.encode_ordinary(text)
            times[name].append(time.perf_counter() - start)
    mb = len(text.encode("utf-8")) / 1e6
    medians = {name: statistics.median(t) for name, t in times.items()}
    result = {"command": "python " + " ".join(sys.argv), "text_mb": mb, "tokens": len(expected),
              "ids_equal_huggingface": True, "seconds": times, "median_s": medians,
              "mb_per_s": {name: mb / s for name, s in medians.items()},
              "speedup": medians["python pipeline"] / medians["core split"]}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"{mb:.2f} MB, {len(expected)} tokens, ids equal Hugging Face's; median core split "
          f"{medians['core split']:.3f} s ({mb / medians['core split']:.1f} MB/s), Python pipeline "
          f"{medians['python pipeline']:.3f} s ({mb / medians['python pipeline']:.1f} MB/s), "
          f"{result['speedup']:.1f}x")


if __name__ == "__main__":
    main()
