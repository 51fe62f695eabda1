"""The benchmark behind bpe_bench.py (the entry point, whose docstring says what each
subcommand measures).

  texts.py      the texts: distinct, never repeated, cut only where no chunk crosses
  measure.py    timing in interleaved rounds, one core, the machine, the versions, the report
  peers.py      the registry: one entry per library, how it loads each vocabulary and what it calls
  worker.py     a process of its own for each library, pinned to one core from its start
  encode.py     bpe_bench.py encode: warm and cold, lists and arrays, and splitting alone
  threads.py    bpe_bench.py threads
  train.py      bpe_bench.py train
  reference.py  bpe_bench.py reference
  split.py      bpe_bench.py split

The measurements of one question each, bpe_bench.py's other subcommands (bpe_bench.py
NAME runs NAME.py's main, hyphens for underscores): compare_builds.py, profile_encode.py,
split_tiers.py, memory_check.py, train_memory.py, import_speed.py, hf_encode_speed.py,
hf_load_time.py, data_memory.py, scale_out_measure.py, scale_out_reduce.py,
scale_out_demo.py, pipeline_run.py, tekken_speed.py, sentencepiece_speed.py,
long_chunk_speed.py, signal_delay.py, padded_speed.py, hf_face_speed.py, short_calls.py,
thread_sizes.py.
"""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
SHARED_DATA = Path(os.environ.get("BPE_SHARED_DATA", ROOT.parent / "shared" / "data"))

VOCAB_SIZE = 8192  # the episode's vocabulary: 256 bytes + 7,934 merges + 2 special tokens
SPECIAL_TOKENS = ("<|pad|>", "<|endoftext|>")
NUM_MERGES = VOCAB_SIZE - 256 - len(SPECIAL_TOKENS)
REFERENCE_MERGES = 500  # the episode's reference table
THREADS_FLOOR = 1.8  # the floor: encode_array on 2 threads against 1
