#!/usr/bin/env bash
# A prepared GPU run, at most 4 minutes: how fast the default model trains on a GPU, and
# how much of the GPU it uses (MFU), with and without torch.compile.
#
# It builds the core, makes the word-level and BPE token files from a folder of stories,
# trains the default model (13.8 M parameters, --rope) with each tokenizer, eager and then
# with --compile, for a budget each, prints each run's tokens per second and MFU,
# and runs bits.py on the two eager models. Everything it prints also goes to LOG.
#
# The GPU machine has no network (no pip install) and no ../shared, so fill gpu-data/ (git
# ignores it; give it to the machine with the working tree) first, from the repository's
# root on a machine that has the shared data:
#
#     mkdir -p gpu-data/site
#     cp ../shared/data/tinystories/train-sample-lowercase.txt ../shared/data/tinystories/valid-sample.txt gpu-data/
#     # pure-Python packages the GPU machine may lack; put on PYTHONPATH by this script:
#     cp -r "$(python -c 'import pybind11, os; print(os.path.dirname(pybind11.__file__))')" gpu-data/site/
#     cp -r "$(python -c 'import tqdm, os; print(os.path.dirname(tqdm.__file__))')" gpu-data/site/
#
# (about 7 MB; remove gpu-data/work/, which a run leaves, before it travels). Then, on the GPU
# machine, from the repository's root (the torch installed there is used):
#
#     bash tools/gpu_check.sh "$OUT/gpu_check.log"
#
# Knobs, from the environment:
#     GPU_CHECK_MINUTES  each eager run's budget, evaluations included (default 0.4)
#     GPU_CHECK_COMPILE_MINUTES  each compiled run's, the compiler's wait included (default 0.7); with
#                        the build (about 40 s), the data and bits.py, the 4 runs fit in 4 minutes
#     GPU_CHECK_DEVICE   the device pretrain.py and bits.py run on (default cuda)
#     GPU_CHECK_MODEL    more pretrain.py flags (default none: the default model)
#     GPU_CHECK_CHARS    bits.py's --chars (default: bits.py's own)
# Its logic was checked on a CPU machine with a tiny model and budget:
#     GPU_CHECK_DEVICE=cpu GPU_CHECK_MINUTES=0.3 GPU_CHECK_COMPILE_MINUTES=1.5 \
#     GPU_CHECK_MODEL="--n-layer 1 --n-head 2 --n-embd 32 --context 32 --batch-size 4 --log-interval 2" \
#     GPU_CHECK_CHARS=100000 bash tools/gpu_check.sh /tmp/gpu_check.log
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bash tools/gpu_check.sh LOG   (e.g. \"\$OUT/gpu_check.log\"; see the script's header)" >&2
    exit 2
fi
LOG=$1
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DATA_SRC=$ROOT/gpu-data
WORK=$DATA_SRC/work
MINUTES=${GPU_CHECK_MINUTES:-0.4}
COMPILE_MINUTES=${GPU_CHECK_COMPILE_MINUTES:-0.7}
DEVICE=${GPU_CHECK_DEVICE:-cuda}
read -r -a MODEL <<< "${GPU_CHECK_MODEL:-}"
CHARS=()
if [ -n "${GPU_CHECK_CHARS:-}" ]; then CHARS=(--chars "$GPU_CHECK_CHARS"); fi
PY=${PYTHON:-python}
export PYTHONPATH="$DATA_SRC/site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1

mkdir -p "$(dirname "$LOG")"
: > "$LOG"
exec > >(tee -a "$LOG") 2>&1
START=$SECONDS
say() { printf '\n[%3ds] == %s\n' $((SECONDS - START)) "$*"; }
die() { echo "gpu_check: $*"; exit 1; }

say "machine"
date -u
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
git log -1 --format='commit %H %s' 2>/dev/null || true

say "what the run needs"
for module in torch numpy tqdm pybind11 setuptools; do
    if ! "$PY" -c "import $module" 2> /dev/null; then
        die "python cannot import $module, and this machine cannot pip install it: copy it into gpu-data/site/ \
before the run (see the header of tools/gpu_check.sh); pybind11 and setuptools build the core, tqdm is bits.py's"
    fi
done
"$PY" - "$DEVICE" << 'EOF'
import sys
import torch
device = sys.argv[1]
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, CUDA {torch.version.cuda}")
if device.startswith("cuda"):
    if not torch.cuda.is_available():
        sys.exit(f"gpu_check: device {device} asked for, but torch {torch.__version__} sees no CUDA GPU")
    print(f"GPU: {torch.cuda.get_device_name(device)}, bf16 {torch.cuda.is_bf16_supported()}")
EOF
for f in train-sample-lowercase.txt valid-sample.txt; do
    [ -f "$DATA_SRC/$f" ] || die "no $DATA_SRC/$f: fill gpu-data/ from ../shared/data/tinystories first (see the header)"
done

say "build the core"
"$PY" setup.py build_ext --inplace > "$DATA_SRC/build.log" 2>&1 || { tail -20 "$DATA_SRC/build.log"; die "the build failed"; }
tail -1 "$DATA_SRC/build.log"

say "data.py: word level, then BPE"
rm -rf "$WORK" && mkdir -p "$WORK"
"$PY" data.py --source "$DATA_SRC" --lowercase --data-dir "$WORK/data" --no-progress
"$PY" data.py --bpe --source "$DATA_SRC" --lowercase --data-dir "$WORK/data" --no-progress

# The speed of a run: the median of its progress records but the first, which holds the
# first steps' warm-up (and, with --compile, the compiler's wait).
summary() {
    "$PY" - "$1" "$2" << 'EOF'
import json, statistics, sys
records = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
start = records[0]
train = [r for r in records if r["event"] == "train"][1:]
if not train:
    sys.exit(f"RESULT {sys.argv[2]}: too few progress records to measure (give a larger GPU_CHECK_MINUTES)")
speed = statistics.median(r["tokens_per_s"] for r in train)
mfu = [r["mfu"] for r in train if r["mfu"] is not None]
shown = f"{statistics.median(mfu):.1%}" if mfu else "n/a (no peak figure: not CUDA, or a GPU model.PEAK_BF16_FLOPS lacks)"
first = [r for r in records if r["event"] == "train"][0]
print(f"RESULT {sys.argv[2]}: {speed:,.0f} tokens/s, MFU {shown} (median of {len(train)} progress records "
      f"after the first, which came {first['elapsed_s']:.1f} s in, at step {first['step']}; "
      f"{start['flops_per_token'] / 1e6:.1f} M FLOPs per token; {records[-1]['step']} steps)")
EOF
}

for tokenizer in word bpe; do
    for compile in eager compile; do
        minutes=$MINUTES
        [ "$compile" = compile ] && minutes=$COMPILE_MINUTES
        flags=(--rope --minutes "$minutes" --device "$DEVICE" --overwrite "${MODEL[@]}")
        [ "$tokenizer" = bpe ] && flags+=(--bpe)
        [ "$compile" = compile ] && flags+=(--compile)
        runs=$WORK/runs-$compile
        say "pretrain.py ${flags[*]}"
        # The budget counts the run's own time; the limit leaves room for starting and saving.
        # A run that fails, or runs past its limit, is reported, and the others still run.
        if ! timeout $(awk "BEGIN { print int($minutes * 60 + 90) }") \
                "$PY" pretrain.py "${flags[@]}" --data-dir "$WORK/data" --runs-dir "$runs" \
                | awk '!/ \| MFU / || ++n % 5 == 1'; then  # every fifth progress line, and all the others
            echo "RESULT $tokenizer $compile: pretrain.py failed or ran past its limit (exit ${PIPESTATUS[0]})"
            continue
        fi
        name=pretrain-rope$([ "$tokenizer" = bpe ] && echo -bpe || true)
        summary "$runs/$name/log.jsonl" "$tokenizer $compile" || true
    done
done

say "bits.py on the eager runs"
"$PY" bits.py "$WORK/runs-eager/pretrain-rope" "$WORK/runs-eager/pretrain-rope-bpe" --data-dir "$WORK/data" \
    --device "$DEVICE" "${CHARS[@]}"

say "the results"
grep '^RESULT' "$LOG"
say "done in $((SECONDS - START)) s; the log is $LOG"
