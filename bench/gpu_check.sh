#!/usr/bin/env bash
# The GPU check of docs/scaling.md ("Measured"): run it on a machine with an NVIDIA GPU and the
# driver installed (the CUDA toolkit is not needed: cudarc loads libcuda at run time). The first
# `--features cuda` build downloads a prebuilt LLVM into ~/.local/share/tracel/ (cubecl-llvm's
# build script): without network, copy that folder there first (see docs/scaling.md).
#
#   bench/gpu_check.sh [MINUTES]        # minutes per training run, default 3
#
# 1. builds `s2s` with `--features cuda`;
# 2. `s2s bench` of the Transformer's training step and greedy decoding on cuda:0 and on the CPU;
# 3. trains transformer-small on a Multi30k slice (N_TRAIN pairs, default 10000) for MINUTES on
#    cuda:0, then on the CPU, and with `--devices cuda:0,cuda:1` when there are two GPUs, plus a
#    one-minute `--devices cpu,cpu` run of the multi-device path;
# 4. prints target tokens/s of each run (from metrics.jsonl) and leaves everything in $OUT.
#
# Environment: MULTI30K (folder with train/val .de/.en; default /work/shared/data/multi30k, else
# the bundled Tatoeba en-zh corpus is used), N_TRAIN, OUT (default runs/gpu-check).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
minutes="${1:-3}"
out="${OUT:-runs/gpu-check}"
n_train="${N_TRAIN:-10000}"
mkdir -p "$out/raw"
log() { echo "== $*" | tee -a "$out/summary.txt"; }
: >"$out/summary.txt"

nvidia-smi -L 2>&1 | tee -a "$out/summary.txt" || true
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)

log "build (release, --features cuda)"
cargo build --release -p s2s-cli --features cuda 2>&1 | tail -2
s2s="$root/target/release/s2s"

m30k="${MULTI30K:-/work/shared/data/multi30k}"
if [ -f "$m30k/train.de" ]; then
    src=de tgt=en valid=val dir="$m30k"
else
    src=en tgt=zh valid=valid dir="$root/data/tatoeba-cmn-eng"
fi
log "data: $dir ($src->$tgt), first $n_train training pairs"
head -n "$n_train" "$dir/train.$src" >"$out/raw/train.$src"
head -n "$n_train" "$dir/train.$tgt" >"$out/raw/train.$tgt"
"$s2s" prepare --train-src "$out/raw/train.$src" --train-tgt "$out/raw/train.$tgt" \
    --valid-src "$dir/$valid.$src" --valid-tgt "$dir/$valid.$tgt" \
    --out "$out/data" --vocab-size 8000 2>&1 | tail -1

log "s2s bench: transformer train step and greedy decoding, batch 64 x 20 tokens"
"$s2s" bench --device cuda:0 --models transformer --phases train,greedy --json \
    | tee "$out/bench-cuda.jsonl"
"$s2s" bench --device cpu --models transformer --phases train,greedy --reps 2 --warmup 1 --json \
    | tee "$out/bench-cpu.jsonl"

train() { # name minutes device-args...
    local name="$1" mins="$2"
    shift 2
    log "train $name: $* for $mins min"
    /usr/bin/time -f "%e s wall, %M KB peak RSS" "$s2s" train --data "$out/data" \
        --arch transformer-small --out "$out/$name" --force --quiet --max-minutes "$mins" "$@" \
        2>&1 | tail -3 | tee -a "$out/summary.txt"
}
train cuda1 "$minutes" --device cuda:0
train cpu "$minutes" --device cpu
train cpu2 1 --devices cpu,cpu
if [ "${gpus:-0}" -ge 2 ]; then
    train cuda2 "$minutes" --devices cuda:0,cuda:1
fi

log "target tokens/s (mean over the run's validation intervals)"
for run in cuda1 cuda2 cpu cpu2; do
    [ -f "$out/$run/metrics.jsonl" ] || continue
    python3 - "$out/$run/metrics.jsonl" "$run" <<'EOF' | tee -a "$out/summary.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
if rows:
    tps = sum(r["tokens_per_sec"] for r in rows) / len(rows)
    last = rows[-1]
    print(f"{sys.argv[2]:<6} {tps:>10.0f} tok/s  steps {last['step']:>6}  "
          f"valid loss {last['valid_loss']:.3f}  BLEU {last['valid_bleu']:.2f}")
EOF
done
log "done: results in $out (summary.txt, bench-*.jsonl, */metrics.jsonl)"
