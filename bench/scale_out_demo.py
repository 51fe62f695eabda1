"""bpe.ray_data against one process, on a local Ray: the same merges, the same ids.

    pip install -r requirements-ray.txt
    python bpe_bench.py scale-out-demo ../shared/data/tinystories/train-sample-lowercase.txt

The file is cut at its blank lines into stories, each a text of its own in both runs.
The times show Ray's fixed costs (start-up, scheduling) more than its speed: on a few
megabytes, one process is far quicker (docs/scale-out.md).
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bpe import BPETokenizer  # noqa: E402

VOCAB_SIZE, BLOCKS, CPUS = 8192, 16, 2


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", help="a text file of stories, cut at its blank lines")
    path = parser.parse_args(argv).path
    import ray

    from bpe import ray_data

    ray.init(num_cpus=CPUS, include_dashboard=False, log_to_driver=False)
    text = Path(path).read_text(encoding="utf-8")
    stories = text.split("\n\n")
    t = time.perf_counter()
    one = BPETokenizer.train(stories, VOCAB_SIZE, special_tokens=["<|endoftext|>"], progress=False)
    one_s = time.perf_counter() - t
    ds = ray.data.from_items([{"text": s} for s in stories], override_num_blocks=BLOCKS)
    t = time.perf_counter()
    tok = ray_data.train(ds, VOCAB_SIZE, special_tokens=["<|endoftext|>"], progress=False)
    ray_s = time.perf_counter() - t
    print(f"{len(stories):,} stories, {len(text.encode()):,} bytes; one process: {one_s:.2f} s; "
          f"ray, {BLOCKS} blocks, {CPUS} CPUs: {ray_s:.2f} s; same merges: {tok.merges == one.merges}")
    with tempfile.TemporaryDirectory() as folder:
        t = time.perf_counter()
        manifest = ray_data.write_token_folder(ds, tok, folder, workers=CPUS, progress=False)
        ids = np.concatenate(ray_data.read_token_folder(folder, tok))
        took = time.perf_counter() - t
        same = np.array_equal(ids, np.concatenate([tok.encode_array(s, allowed_special="all") for s in stories]))
    print(f"token folder: {len(manifest['shards'])} shards, {manifest['tokens']:,} tokens, {manifest['dtype']}, "
          f"{took:.2f} s; equal to one process: {same}")


if __name__ == "__main__":
    main()
