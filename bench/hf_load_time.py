"""Load time of a 150,000-token tokenizer.json: ours (BPETokenizer.from_huggingface)
against Hugging Face's (tokenizers.Tokenizer.from_file), on the same file.

    python bpe_bench.py hf-load-time                      # makes the file, 7 rounds
    python bpe_bench.py hf-load-time --file tokenizer.json --rounds 9 --out results.json
    python bpe_bench.py hf-load-time --llama --pairs      # Llama 3's and GLM's shape

The file, unless given, is made as today's models ship theirs (Qwen 2.5's shape): the
first 150,000 of o200k_base's ranks (from the registry: bpe-openai ships them) as a
byte-level BPE, an NFC normalizer, a Split on Qwen's regex then ByteLevel without its
own regex, merges written "a b" (or as pairs, --pairs), special and non-special added
tokens, and a template. Each round loads with both libraries, in turn, in one process
(interleaved, so that a busy machine slows both alike); the medians and their ratio
go to the results file, a JSON that names the command which wrote it.
"""
import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

QWEN_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
              r"\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + [f"<|reserved_{i}|>" for i in range(200)]
ORDINARY = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
            "<|fim_suffix|>"]


def every_split(vocab: dict) -> list:
    """The merges as Hugging Face's converter from tiktoken's ranks writes them (Llama 3's
    and GLM's files): every split of a token into two tokens, ranked by the token made,
    then by the parts' ids; some come before their parts are made."""
    merges = []
    for token, rank in vocab.items():
        splits = [(token[:k], token[k:]) for k in range(1, len(token)) if token[:k] in vocab and token[k:] in vocab]
        merges.extend((rank, vocab[a], vocab[b], a, b) for a, b in splits)
    return [[a, b] for *_, a, b in sorted(merges)]


def make_file(path: Path, n_tokens: int, pairs: bool, llama: bool = False) -> None:
    """A Qwen-shaped tokenizer.json of o200k_base's first n_tokens ranks (llama: Llama 3's
    shape, with every split as a merge and ignore_merges)."""
    from bpe import BPETokenizer, registry
    from bpe.huggingface import huggingface_json
    ranks_path = registry.ranks_file("o200k_base", download=False)
    lines = ranks_path.read_bytes().splitlines()[:n_tokens]
    with tempfile.TemporaryDirectory() as folder:
        cut = Path(folder) / "o200k_cut.tiktoken"
        cut.write_bytes(b"\n".join(lines) + b"\n")
        tok = BPETokenizer.from_tiktoken(cut, pattern="gpt4")
    document = json.loads(huggingface_json(tok.merges, "gpt4", token_ids=tok.token_ids))
    n = len(document["model"]["vocab"])
    document["normalizer"] = {"type": "NFC"}
    document["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"Regex": QWEN_REGEX}
    document["added_tokens"] = [
        {"id": n + k, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": s in ORDINARY, "special": s not in ORDINARY} for k, s in enumerate(SPECIAL + ORDINARY)]
    document["post_processor"] = {
        "type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}},
                                                 {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<|im_start|>": {"id": "<|im_start|>", "ids": [n + 1], "tokens": ["<|im_start|>"]}}}
    if llama:
        document["normalizer"] = None
        document["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"Regex": LLAMA3_REGEX}
        document["model"]["ignore_merges"] = True
        document["model"]["merges"] = every_split(document["model"]["vocab"])
    if not pairs:
        document["model"]["merges"] = [f"{a} {b}" for a, b in document["model"]["merges"]]
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")


def load_ours(path: str):
    from bpe import BPETokenizer
    return BPETokenizer.from_huggingface(path)


def load_hf(path: str):
    import tokenizers
    return tokenizers.Tokenizer.from_file(path)


def measure(path: str, rounds: int) -> dict:
    """Seconds of each load, interleaved: ours, then Hugging Face's, each round."""
    import tokenizers
    load_ours(path), load_hf(path)  # imports and the first reads out of the way
    times: dict[str, list[float]] = {"ours": [], "huggingface": []}
    for _ in range(rounds):
        for name, load in (("ours", load_ours), ("huggingface", load_hf)):
            gc.collect()
            start = time.perf_counter()
            tok = load(path)
            times[name].append(time.perf_counter() - start)
            del tok
    medians = {name: statistics.median(t) for name, t in times.items()}
    hf = tokenizers.Tokenizer.from_file(path)
    return {"file": path, "n_vocab": hf.get_vocab_size(), "rounds": rounds, "seconds": times,
            "median_s": medians, "ratio_ours_to_hf": medians["ours"] / medians["huggingface"],
            "tokenizers_version": tokenizers.__version__}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", help="a tokenizer.json to load (default: make a 150,000-token one)")
    parser.add_argument("--tokens", type=int, default=150_000, help="ranks in the made file")
    parser.add_argument("--pairs", action="store_true", help="the made file writes merges as pairs, not \"a b\"")
    parser.add_argument("--llama", action="store_true", help="the made file in Llama 3's shape: every split of a "
                        "token as a merge (as converted from tiktoken's ranks), ignore_merges, no normalizer")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", default="hf_load_time.json", help="the results file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        path = args.file
        if path is None:
            path = str(Path(folder) / "tokenizer.json")
            make_file(Path(path), args.tokens, args.pairs, args.llama)
        result = measure(path, args.rounds)
    result["command"] = "python " + " ".join(sys.argv)
    if args.file is None:
        result["file"] = f"made: o200k_base's first {args.tokens} ranks, " + \
            ("Llama 3's shape (every split a merge, ignore_merges)" if args.llama else "Qwen 2.5's shape") + \
            ", merges as " + ("pairs" if args.pairs else "\"a b\" strings")
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    m = result["median_s"]
    print(f"{result['file']}: n_vocab {result['n_vocab']}, {args.rounds} interleaved rounds; median ours "
          f"{m['ours']:.3f} s, Hugging Face {m['huggingface']:.3f} s, ratio {result['ratio_ours_to_hf']:.2f}x")


if __name__ == "__main__":
    main()
