"""The main run of the README, on a folder of stories, with every output kept for the docs.

    python bpe_bench.py pipeline-run --source ../shared/data/tinystories

Runs, from the repository's root, what the README's main run does, on the small model
that trains in minutes on a CPU:

    python data.py --source DIR --lowercase              (the word-level files)
    python data.py --bpe --source DIR --lowercase        (the BPE files)
    python pretrain.py --rope SMALL                      (450 steps)
    python pretrain.py --rope --bpe SMALL                (450 steps)
    python bits.py runs/pretrain-rope runs/pretrain-rope-bpe
    python sample.py runs/pretrain-rope-bpe ...  and  runs/pretrain-rope ...

and writes what they printed to docs/results/: pipeline-run.txt (all of it, with the
wall time of each command), bits.txt (bits.py's table), samples.txt (the stories), and
the two runs' log.jsonl to docs/results/logs/, which figures.py draws the loss curves
from. Paths are printed relative to the repository, so no page shows the machine's.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
# A budget in steps, not minutes (pretrain.py's default is 10 minutes): both models get the same
# number of steps and the same schedule whatever else the machine is doing, so the numbers
# repeat and compare like with like.
SMALL = ("--max-steps 450 --decay-steps 450 --minutes 60 --n-layer 4 --n-head 4 --n-embd 128 --context 128 "
         "--batch-size 16 --eval-interval 50 --eval-batches 4 --warmup-steps 20").split()
PROMPT = "Once upon a time, Zorblax"


def run(command: list, transcript: list) -> str:
    """Run a command from the repository's root; keep and return what it printed."""
    shown = " ".join(a if " " not in a and "," not in a else f'"{a}"' for a in command)
    print(f"$ {shown}", flush=True)
    start = time.perf_counter()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    result = subprocess.run([sys.executable, *command[1:]], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{shown} failed:\n{result.stdout}{result.stderr}")
    print(result.stdout, end="", flush=True)
    transcript.append(f"$ {shown}\n{result.stdout}(wall {wall:.2f} s)\n")
    return result.stdout


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, required=True, help="the folder of stories, as data.py's --source")
    args = parser.parse_args(argv)
    source = os.path.relpath(args.source.resolve(), ROOT)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    transcript = [f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
                  f"load before: {load}\n"]
    common = ["--data-dir", "data"]
    run(["python", "data.py", "--source", source, "--lowercase", *common, "--no-progress"], transcript)
    run(["python", "data.py", "--bpe", "--source", source, "--lowercase", *common, "--no-progress"], transcript)
    for flags in (["--rope"], ["--rope", "--bpe"]):
        run(["python", "pretrain.py", *flags, *SMALL, *common, "--runs-dir", "runs", "--overwrite"], transcript)
    bits = run(["python", "bits.py", "runs/pretrain-rope", "runs/pretrain-rope-bpe", *common], transcript)
    samples = [run(["python", "sample.py", f"runs/{name}", "--prompt", PROMPT, "--seed", "1", "--tokens", "40"],
                   transcript) for name in ("pretrain-rope-bpe", "pretrain-rope")]

    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "pipeline-run.txt").write_text("\n".join(transcript), encoding="utf-8")
    (RESULTS / "bits.txt").write_text(bits, encoding="utf-8")
    (RESULTS / "samples.txt").write_text("".join(
        f"$ python sample.py runs/{name} --prompt \"{PROMPT}\" --seed 1 --tokens 40\n{story}\n"
        for name, story in zip(("pretrain-rope-bpe", "pretrain-rope"), samples)), encoding="utf-8")
    (RESULTS / "logs").mkdir(exist_ok=True)
    for name in ("pretrain-rope", "pretrain-rope-bpe"):
        shutil.copyfile(ROOT / "runs" / name / "log.jsonl", RESULTS / "logs" / f"{name}.jsonl")
    written = [RESULTS / name for name in ("pipeline-run.txt", "bits.txt", "samples.txt")]
    print(f"wrote {', '.join(p.relative_to(ROOT).as_posix() for p in written)} and the runs' logs in docs/results/logs")


if __name__ == "__main__":
    main()
