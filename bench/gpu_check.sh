#!/usr/bin/env bash
# The GPU check of docs/scaling.md: runs a prebuilt `s2s` (no cargo, no network) on a machine with
# an NVIDIA GPU and writes one summary, SUMMARY.md, into the output folder. Build the binary
# anywhere, offline (docs/scaling.md, "Building"):
#
#   cargo build --release -p s2s-cli --features cuda,wgpu
#   bench/gpu_check.sh [--s2s BIN] [--minutes M] [--out DIR] [--device D]
#
# `--device` (default cuda:0) runs the same stages on another device, `cpu` included, which checks
# the script itself where there is no GPU.
# Run time: M + 2 to 3 minutes on an H200 (default M = 3). Every stage has its own time limit and records
# its result whatever the others did, so a failing stage never hides the rest:
#   1. the machine (GPUs, driver, CPU) and the CUDA run-time pieces the C++ backend needs
#      (NVRTC and the CUDA headers; CUDA_PATH is set from nvcc when it is not set);
#   2. `s2s bench` of the Transformer (train step, greedy, beam 5) on cuda:0, on wgpu when the
#      binary has it, and on the CPU;
#   3. a transformer-small training on the bundled Tatoeba en->zh corpus on cuda:0 for M minutes:
#      the validation loss must fall;
#   4. decoding of the model of 3 on cuda:0 against the CPU: greedy and beam-5 translations of
#      200 test sentences (identical lines counted) and teacher-forced scores (per-token difference);
#   5. exact resume on cuda:0: 60 steps in one go against 30 steps, then `--resume` to 60; the
#      losses of both must agree (bit for bit is reported as such);
#   6. `--devices` over every GPU found (two replicas on cuda:0 where there is one GPU), 40 steps.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
s2s="$root/target/release/s2s"
minutes=3
dev=cuda:0
out="${OUT:-$root/runs/gpu-check}"
while [ $# -gt 0 ]; do
    case "$1" in
        --s2s) s2s="$(realpath "$2")"; shift 2 ;;
        --minutes) minutes="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --device) dev="$2"; shift 2 ;;
        *) sed -n '2,/^set /p' "$0" | sed '$d' >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
out="$(realpath "$out")"
work="$out/work"
mkdir -p "$work"
summary="$out/SUMMARY.md"
log="$out/log.txt"
: >"$log"
failures=0

say() { echo "$*" | tee -a "$summary"; }
# row CHECK RESULT DETAIL: one line of the results table.
row() {
    say "| $1 | $2 | $3 |"
    [ "$2" = FAIL ] && failures=$((failures + 1))
    return 0
}
# timed LIMIT_S NAME CMD...: runs CMD with a time limit, its output in log.txt and
# $work/NAME.out; sets $secs and $rc.
timed() {
    local limit="$1" name="$2" start
    shift 2
    start=$(date +%s.%N)
    echo "== $name: $*" >>"$log"
    timeout -k 10 "$limit" "$@" >"$work/$name.out" 2>"$work/$name.err"
    rc=$?
    secs=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
    cat "$work/$name.out" "$work/$name.err" >>"$log"
    echo "== $name: rc $rc after $secs s" >>"$log"
    [ "$rc" -eq 124 ] && echo "(stopped at its $limit s limit)" >>"$work/$name.err"
    return 0
}
# last_err NAME: the last line of a stage's stderr, for the table.
last_err() { tail -n 1 "$work/$1.err" | tr '|' '/' | cut -c1-160; }

: >"$summary"
say "# s2s GPU check, $(date -u '+%Y-%m-%d %H:%M UTC')"
say ""
gpu_list=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | paste -sd ';' -)
say "- GPUs: ${gpu_list:-none found by nvidia-smi}"
say "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) threads"
say "- binary: $s2s ($("$s2s" --version 2>&1 | head -n 1), $(du -m "$s2s" | cut -f1) MB)"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
gpus=${gpus:-0}

# The CUDA C++ backend compiles its kernels with NVRTC at run time and includes the toolkit's
# headers: find both when the environment does not say where they are.
if [ -z "${CUDA_PATH:-}" ]; then
    for d in /usr/local/cuda "$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /x/x)")")"; do
        if [ -f "$d/include/cuda.h" ]; then export CUDA_PATH="$d"; break; fi
    done
fi
nvrtc=$( (ldconfig -p 2>/dev/null | grep -o '/[^ ]*libnvrtc\.so[.0-9]*$'; ls "${CUDA_PATH:-/x}"/lib64/libnvrtc.so* "${CUDA_PATH:-/x}"/lib/libnvrtc.so* 2>/dev/null) | head -n 1)
if [ -n "$nvrtc" ]; then
    export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
say "- CUDA_PATH: ${CUDA_PATH:-not found}; NVRTC: ${nvrtc:-not found}"
say "- minutes of training: $minutes"
say ""
say "| check | result | detail |"
say "|---|---|---|"

# --- data: the bundled corpus, as `s2s quickstart` prepares it ---
corpus="$root/data/tatoeba-cmn-eng"
data="$work/data"
timed 300 prepare "$s2s" prepare --train-src "$corpus/train.en" --train-tgt "$corpus/train.zh" \
    --valid-src "$corpus/valid.en" --valid-tgt "$corpus/valid.zh" \
    --test-src "$corpus/test.en" --test-tgt "$corpus/test.zh" \
    --src-lang en --tgt-lang zh --zh-script simplified --vocab-size 4000 --out "$data" --force
if [ "$rc" -eq 0 ]; then row "prepare Tatoeba en->zh (CPU)" ok "$secs s"; else row "prepare" FAIL "$(last_err prepare)"; fi
head -n 200 "$corpus/test.en" >"$work/test200.en"
head -n 200 "$corpus/test.zh" >"$work/test200.zh"

# --- 2. bench ---
bench_row() { # NAME DEVICE LIMIT ARGS...
    local name="$1" device="$2" limit="$3"
    shift 3
    timed "$limit" "bench-$name" "$s2s" bench --device "$device" --models transformer \
        --phases train,greedy,beam --json "$@"
    cp "$work/bench-$name.out" "$out/bench-$name.jsonl" 2>/dev/null
    if [ "$rc" -eq 0 ]; then
        row "s2s bench, $device" ok "$(python3 - "$work/bench-$name.out" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print(", ".join(f"{r['phase']} {r['ms_per_batch']:.1f} ms/batch" for r in rows))
EOF
)"
    elif grep -q "not compiled-in" "$work/bench-$name.err"; then
        row "s2s bench, $device" skipped "this binary was built without it"
    else
        row "s2s bench, $device" FAIL "rc $rc: $(last_err "bench-$name")"
    fi
}
bench_row gpu "$dev" 150 --in-process
bench_row wgpu wgpu 90 --in-process
bench_row cpu cpu 150 --reps 3 --warmup 1
if [ -s "$out/bench-gpu.jsonl" ] && [ -s "$out/bench-cpu.jsonl" ]; then
    row "CPU time / $dev time" ratio "$(python3 - "$out/bench-cpu.jsonl" "$out/bench-gpu.jsonl" <<'EOF'
import json, sys
load = lambda p: {r["phase"]: r["ms_per_batch"] for r in map(json.loads, open(p)) if r}
cpu, gpu = load(sys.argv[1]), load(sys.argv[2])
print(", ".join(f"{k} {cpu[k] / gpu[k]:.1f}x" for k in cpu if k in gpu))
EOF
)"
fi

# --- 3. a timed training on the device ---
cat >"$work/train.toml" <<'EOF'
arch = "transformer-small"
[train]
lr = 1e-3
warmup_steps = 200
schedule = "inverse-sqrt"
valid_every = 100
valid_bleu_sentences = 200
bleu_tokenize = "zh"
patience = 0
EOF
metrics_rows() { # METRICS.JSONL: "step:valid_loss:BLEU:tok/s" per validation
    python3 - "$1" <<'EOF' 2>/dev/null
import json, sys
for line in open(sys.argv[1]):
    if line.strip():
        r = json.loads(line)
        print(f"{r['step']}:{r['valid_loss']:.4f}:{r['valid_bleu']:.2f}:{r['tokens_per_sec']:.0f}")
EOF
}
limit=$(python3 -c "print(int($minutes * 60 + 150))")
timed "$limit" train "$s2s" train --data "$data" --config "$work/train.toml" \
    --out "$work/model" --force --quiet --max-minutes "$minutes" --device "$dev"
rows=$(metrics_rows "$work/model/metrics.jsonl")
cp "$work/model/metrics.jsonl" "$out/train-metrics.jsonl" 2>/dev/null
first=$(echo "$rows" | head -n 1)
last=$(echo "$rows" | tail -n 1)
detail="$(echo "$rows" | wc -w) validations; step:valid loss:BLEU:tok/s first $first, last $last; $secs s"
if [ "$rc" -eq 0 ] && [ -n "$first" ] && python3 -c "import sys; a=float(sys.argv[1].split(':')[1]); b=float(sys.argv[2].split(':')[1]); sys.exit(0 if b < a else 1)" "$first" "$last"; then
    row "train transformer-small, $dev, $minutes min: loss falls" ok "$detail"
else
    row "train transformer-small, $dev, $minutes min: loss falls" FAIL "rc $rc; $detail; $(last_err train)"
fi

# --- 4. decoding on the device against the CPU ---
model="$work/model"
if [ -f "$model/config.toml" ]; then
    for search in greedy beam; do
        for side in dev cpu; do
            device=$dev
            [ "$side" = cpu ] && device=cpu
            timed 120 "translate-$search-$side" "$s2s" translate --model "$model" \
                --search "$search" --beam 5 --device "$device" --input "$work/test200.en"
        done
        a="$work/translate-$search-dev.out"
        b="$work/translate-$search-cpu.out"
        same=$(paste -d '\t' "$a" "$b" | awk -F'\t' '$1 == $2' | wc -l)
        total=$(wc -l <"$b")
        verdict=$(python3 -c "import sys; n=int(sys.argv[2]); print('ok' if n >= 100 and int(sys.argv[1]) >= 0.95 * n else 'FAIL')" "$same" "$total")
        row "translate 200 test sentences, $search: $dev = CPU" "$verdict" "$same of $total identical"
    done
    for side in dev cpu; do
        device=$dev
        [ "$side" = cpu ] && device=cpu
        timed 120 "score-$side" "$s2s" score --model "$model" --src "$work/test200.en" \
            --ref "$work/test200.zh" --per-sentence --device "$device"
    done
    detail=$(python3 - "$work/score-dev.out" "$work/score-cpu.out" <<'EOF'
import sys
def load(p):
    return [tuple(map(float, l.split("\t"))) for l in open(p) if l.strip()]
a, b = load(sys.argv[1]), load(sys.argv[2])
if not a or len(a) != len(b):
    print(f"FAIL {len(a)} and {len(b)} scores")
else:
    per_token = max(abs(x[0] - y[0]) / max(x[1], 1) for x, y in zip(a, b))
    total = max(abs(x[0] - y[0]) for x, y in zip(a, b))
    ok = "ok" if per_token <= 1e-3 else "FAIL"
    print(f"{ok} max difference {total:.2e} per sentence, {per_token:.2e} per token, {len(a)} pairs")
EOF
)
    row "teacher-forced scores, $dev vs CPU (tolerance 1e-3 per token)" "${detail%% *}" "${detail#* }"
else
    row "decoding, $dev vs CPU" FAIL "no trained model"
fi

# --- 5. exact resume on the device ---
sed 's/^valid_every = .*/valid_every = 20/; s/^valid_bleu_sentences = .*/valid_bleu_sentences = 50/' \
    "$work/train.toml" >"$work/resume.toml"
short() { # NAME STEPS --force|--resume
    local name="$1" steps="$2" config=()
    [ "$3" = --force ] && config=(--config "$work/resume.toml")
    timed 180 "$name-$steps" "$s2s" train --data "$data" "${config[@]}" \
        --out "$work/$name" --quiet --max-steps "$steps" --device "$dev" "$3"
}
compare_runs() { # A B: max |difference| of the losses both runs logged over the same steps
    python3 - "$1" "$2" <<'EOF'
import json, sys
def load(p):
    rows = [json.loads(l) for l in open(p) if l.strip()]
    # train_loss is the mean since the previous validation: comparable only over the same window.
    return {r["step"]: (prev, r) for prev, r in zip([0] + [r["step"] for r in rows], rows)}
a, b = load(sys.argv[1]), load(sys.argv[2])
steps = sorted(set(a) & set(b))
d = 0.0
for s in steps:
    (pa, ra), (pb, rb) = a[s], b[s]
    d = max(d, abs(ra["valid_loss"] - rb["valid_loss"]))
    if pa == pb:
        d = max(d, abs(ra["train_loss"] - rb["train_loss"]))
print(f"{d:.3g} {','.join(map(str, steps))}")
EOF
}
short whole 60 --force
short split 30 --force
short split 60 --resume
resume_rc=$rc
if [ -f "$work/whole/metrics.jsonl" ] && [ -f "$work/split/metrics.jsonl" ]; then
    read -r diff steps < <(compare_runs "$work/whole/metrics.jsonl" "$work/split/metrics.jsonl")
    if [ "$diff" = 0 ]; then
        row "exact resume, $dev (60 steps vs 30 + --resume 30)" ok "bit for bit: losses equal at steps $steps"
    else
        # Distinguish an inexact resume from a GPU that does not repeat itself: a second
        # uninterrupted run.
        short again 60 --force
        read -r noise _ < <(compare_runs "$work/whole/metrics.jsonl" "$work/again/metrics.jsonl")
        verdict=$(python3 -c "import sys; print('ok' if float(sys.argv[1]) <= max(1e-3, 2 * float(sys.argv[2])) else 'FAIL')" "$diff" "$noise")
        row "exact resume, $dev (60 steps vs 30 + --resume 30)" "$verdict" "max loss difference $diff at steps $steps; two uninterrupted runs differ by $noise"
    fi
else
    row "exact resume, $dev" FAIL "rc $resume_rc: $(last_err split-60)"
fi

# --- 6. --devices over every GPU ---
if [ "$gpus" -ge 2 ] && [ "${dev%%:*}" = cuda ]; then
    devices=$(seq -s, 0 $((gpus - 1)) | sed 's/\([0-9]\+\)/cuda:\1/g')
else
    devices="$dev,$dev"
fi
sed 's/^valid_every = .*/valid_every = 20/; s/^valid_bleu_sentences = .*/valid_bleu_sentences = 50/' \
    "$work/train.toml" >"$work/devices.toml"
timed 240 devices "$s2s" train --data "$data" --config "$work/devices.toml" --out "$work/devices" \
    --force --quiet --max-steps 40 --devices "$devices"
rows=$(metrics_rows "$work/devices/metrics.jsonl")
if [ "$rc" -eq 0 ] && python3 -c "import sys; r=[float(x.split(':')[1]) for x in sys.argv[1].split()]; sys.exit(0 if len(r) >= 2 and r[-1] < r[0] else 1)" "$rows"; then
    row "train --devices $devices, 40 steps" ok "step:valid loss:BLEU:tok/s $(echo $rows); $secs s"
else
    row "train --devices $devices, 40 steps" FAIL "rc $rc; $(echo $rows); $(last_err devices)"
fi

say ""
say "$failures failed. Logs: log.txt; bench-*.jsonl and train-metrics.jsonl beside this file."
[ "$failures" -eq 0 ]
