#!/usr/bin/env bash
# Runs `s2s bench --json` and the PyTorch reference (bench/reference.py) on the same shapes, joins
# them on (model, phase), prints a markdown table of times, ratios and peak memory, and writes it
# into docs/performance.md between the `bench:begin KIND` / `bench:end KIND` markers of this CPU
# kind (bench/cpu_kind.py: one table per kind, a new section for a kind not measured before).
#
#   bench/compare.sh [S2S_BINARY] [--rounds N] [-- extra args for both, e.g. --reps 5 --models rnnsearch]
#
# Each (model, phase) is measured by s2s and by PyTorch back to back, in N rounds (default 3) whose
# order alternates (s2s first, then PyTorch first): on a shared VM the speed drifts by 10-30% over
# minutes, and a pair measured seconds apart sees the same drift. The table gives each side's
# median time over the rounds and the median (and range) of the per-round ratios.
#
# S2S_BINARY defaults to $S2S, then target/release/s2s. When it does not exist (or with
# --pytorch-only) only the reference runs and the s2s columns say "pending".
# Environment: PYTHON (default bench/.venv/bin/python, see bench/setup.sh), NO_DOC=1 to leave
# docs/performance.md alone. Raw JSON lines are kept in bench/results/.
#
# Run it on an otherwise idle machine: both sides use 2 threads, and a concurrent build turns
# OpenMP's and rayon's barriers into waits on the scheduler (numbers then mean nothing).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

s2s="${S2S:-target/release/s2s}"
pytorch_only=0
if [ $# -gt 0 ] && [ "$1" != "--" ] && [ "$1" != "--pytorch-only" ]; then
  s2s="$1"
  shift
fi
rounds=3
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    --pytorch-only) pytorch_only=1 ;;
    --rounds) rounds="$2"; shift ;;
    *) echo "unknown option $1 (options for both sides go after --)" >&2; exit 2 ;;
  esac
  shift
done
if [ $# -gt 0 ] && [ "$1" = "--" ]; then
  shift
fi
# --models and --phases are taken out of the shared options: the loop below passes one of each.
models="rnnsearch,transformer,convs2s"
phases="train,greedy,beam"
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models="$2"; shift ;;
    --phases) phases="$2"; shift ;;
    *) extra+=("$1") ;;
  esac
  shift
done
python="${PYTHON:-$root/bench/.venv/bin/python}"
if [ ! -x "$python" ]; then
  echo "no $python: run bench/setup.sh first (or set PYTHON)" >&2
  exit 1
fi
if [ "$pytorch_only" = 0 ] && [ ! -x "$s2s" ]; then
  echo "note: no s2s binary at $s2s (build it with: cargo build --release -p s2s-cli); s2s columns will say pending" >&2
  pytorch_only=1
fi

load="$(cut -d' ' -f1 /proc/loadavg)"
if awk -v l="$load" 'BEGIN { exit !(l > 0.5) }'; then
  echo "warning: load average is $load; other processes will distort the timings" >&2
fi

out="$root/bench/results"
mkdir -p "$out"
: > "$out/s2s.jsonl"
: > "$out/pytorch.jsonl"
: > "$out/pytorch.log"
s2s_cmd="(s2s binary missing)"
[ "$pytorch_only" = 0 ] && s2s_cmd="$s2s bench --json --models M --phases P ${extra[*]:-}"
ref_cmd="bench/.venv/bin/python bench/reference.py --models M --phases P ${extra[*]:-}"
run_s2s() {
  [ "$pytorch_only" = 0 ] || return 0
  echo "+ $s2s bench --json --models $1 --phases $2 ${extra[*]:-}" >&2
  "$s2s" bench --json --models "$1" --phases "$2" "${extra[@]}" | tee -a "$out/s2s.jsonl"
}
run_ref() {
  echo "+ bench/.venv/bin/python bench/reference.py --models $1 --phases $2 ${extra[*]:-}" >&2
  "$python" bench/reference.py --models "$1" --phases "$2" "${extra[@]}" \
    2> >(tee -a "$out/pytorch.log" >&2) | tee -a "$out/pytorch.jsonl"
  wait || true
}
for ((round = 1; round <= rounds; round++)); do
  echo "# round $round of $rounds" >&2
  for m in ${models//,/ }; do
    for p in ${phases//,/ }; do
      if ((round % 2)); then
        run_s2s "$m" "$p"
        run_ref "$m" "$p"
      else
        run_ref "$m" "$p"
        run_s2s "$m" "$p"
      fi
    done
  done
done

load_end="$(cut -d' ' -f1 /proc/loadavg)"
ROUNDS="$rounds" LOAD="$load" LOAD_END="$load_end" S2S_CMD="$s2s_cmd" REF_CMD="$ref_cmd" NO_DOC="${NO_DOC:-0}" BENCH_DIR="$root/bench" python3 - "$out" <<'PY'
import datetime, json, os, re, sys

out = sys.argv[1]


def load(name):
    """Every measurement of each (model, phase), in round order."""
    rows = {}
    with open(os.path.join(out, name)) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                rows.setdefault((r["model"], r["phase"]), []).append(r)
    return rows


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def summary(runs):
    """One row per (model, phase): the first run's fields, times and memory as medians."""
    rows = {}
    for k, rs in runs.items():
        r = dict(rs[0])
        r["ms_per_batch"] = median([x["ms_per_batch"] for x in rs])
        r["peak_rss_mb"] = median([x["peak_rss_mb"] for x in rs])
        rows[k] = r
    return rows


s2s_runs, ref_runs = load("s2s.jsonl"), load("pytorch.jsonl")
s2s, ref = summary(s2s_runs), summary(ref_runs)


def ratios(k):
    """s2s / PyTorch of each round in which both sides measured (model, phase)."""
    pairs = zip(s2s_runs.get(k, []), ref_runs.get(k, []))
    return [a["ms_per_batch"] / b["ms_per_batch"] for a, b in pairs]
# Targets of issue #10, ratio s2s / PyTorch (lower is better for s2s); issue 33 holds every CPU
# kind to them, and ConvS2S's training step too.
PHASE_TARGET = {"train": 1.0, "greedy": 0.7, "beam": 0.5}
MEM_TARGET = {"train": 0.5}


def fmt(x, spec):
    return "pending" if x is None else format(x, spec)


def judged(ratio, target):
    if target is None:
        return "-"
    if ratio is None:
        return f"<= {target:.1f}x"
    return f"<= {target:.1f}x {'met' if ratio <= target else 'NOT met'}"


order = {m: i for i, m in enumerate(["rnnsearch", "transformer", "convs2s"])}
porder = {p: i for i, p in enumerate(["train", "greedy", "beam"])}
keys = sorted(set(ref) | set(s2s), key=lambda k: (order.get(k[0], 9), porder.get(k[1], 9)))
lines = [
    "| model | phase | s2s ms | PyTorch ms | s2s/PyTorch | ratio range | target | s2s peak MiB | PyTorch peak MiB | mem s2s/PyTorch | mem target | params s2s / PyTorch |",
    "|---|---|---:|---:|---:|---|---|---:|---:|---:|---|---|",
]
param_notes = []
for k in keys:
    a, b = s2s.get(k), ref.get(k)
    ms_a = a["ms_per_batch"] if a else None
    ms_b = b["ms_per_batch"] if b else None
    mem_a = a["peak_rss_mb"] if a else None
    mem_b = b["peak_rss_mb"] if b else None
    rs = ratios(k)
    ratio = median(rs) if rs else None
    spread = f"{min(rs):.2f}-{max(rs):.2f}x" if len(rs) > 1 else "-"
    mratio = mem_a / mem_b if mem_a and mem_b else None
    t = PHASE_TARGET.get(k[1])
    mt = MEM_TARGET.get(k[1])
    pa, pb = (a or {}).get("params"), (b or {}).get("params")
    params = f"{fmt(pa, ',')} / {fmt(pb, ',')}"
    if pa is not None and pb is not None and pa != pb:
        params += " (DIFFER)"
        param_notes.append(k)
    lines.append(
        f"| {k[0]} | {k[1]} | {fmt(ms_a, '.1f')} | {fmt(ms_b, '.1f')} | "
        f"{fmt(ratio, '.2f') + ('x' if ratio else '')} | {spread} | {judged(ratio, t)} | "
        f"{fmt(mem_a, '.0f')} | {fmt(mem_b, '.0f')} | "
        f"{fmt(mratio, '.2f') + ('x' if mratio else '')} | {judged(mratio, mt)} | {params} |"
    )

# GFLOP/s of every phase: the matrix-product FLOPs PyTorch counts for the same architecture
# and batch (forward + backward for a training step, the whole search for decoding), over each
# side's time; and the rate the target ratio would take, against the measured gemm ceiling.
peak, peak_desc, ceiling = None, "", None
log = os.path.join(out, "pytorch.log")
if os.path.exists(log):
    for line in open(log):
        m = re.search(r"= (\d+) GFLOP/s fp32 peak", line)
        if m:
            peak, peak_desc = float(m.group(1)), line.split(";", 1)[-1].strip()
        m = re.search(r"measured gemm ceiling: (\d+) GFLOP/s", line)
        if m:
            ceiling = max(ceiling or 0.0, float(m.group(1)))
flops = ["", "| model | phase | GFLOP per batch | s2s GFLOP/s | PyTorch GFLOP/s | s2s % of peak | PyTorch % of peak | GFLOP/s the target needs | vs gemm ceiling |",
         "|---|---|---:|---:|---:|---:|---:|---:|---|"]
any_flops = False
for k in keys:
    b = ref.get(k)
    if not b or "gflop_per_batch" not in b:
        continue
    any_flops = True
    g = b["gflop_per_batch"]
    a = s2s.get(k)
    ga = g / (a["ms_per_batch"] / 1e3) if a else None
    gb = g / (b["ms_per_batch"] / 1e3)
    pct = lambda x: "pending" if x is None or not peak else f"{100 * x / peak:.1f}%"
    t = PHASE_TARGET.get(k[1])
    need = g / (t * b["ms_per_batch"] / 1e3) if t else None
    verdict = "-" if need is None or ceiling is None else (
        f"{100 * need / ceiling:.0f}% of it" + (" (out of reach)" if need > ceiling else ""))
    flops.append(f"| {k[0]} | {k[1]} | {g:.1f} | {fmt(ga, '.1f')} | {gb:.1f} | {pct(ga)} | {pct(gb)} | "
                 f"{'-' if need is None else format(need, '.0f')} | {verdict} |")

sys.path.insert(0, os.environ["BENCH_DIR"])
import cpu_kind

kind, cpu = cpu_kind.describe()
cores = os.cpu_count()
torch_v = ""
if os.path.exists(log):
    m = re.search(r"# torch (\S+),", open(log).read())
    torch_v = m.group(1) if m else ""
base = ""
if os.path.exists(log):
    m = re.search(r"baseline peak RSS of `import torch`: ([\d.]+) MB", open(log).read())
    base = m.group(1) if m else ""

stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
block = [
    f"Measured {stamp} on {cpu}, {cores} cores (`lscpu`), torch {torch_v}, 2 threads on both sides; "
    f"1-minute load average {os.environ['LOAD']} before, {os.environ['LOAD_END']} after "
    "(after includes the benchmark itself).",
    "",
    f"{os.environ['ROUNDS']} rounds; in each, every (model, phase) measured by both sides back to "
    "back, in alternating order. Times and memory are medians over the rounds; s2s/PyTorch is the "
    "median of the per-round ratios, with their range.",
    "",
    "```",
    os.environ["S2S_CMD"],
    os.environ["REF_CMD"],
    "```",
    "",
    *lines,
]
# Only the load before counts: the one after includes the benchmark's own two busy threads.
if float(os.environ["LOAD"]) > 0.5:
    block += ["", "**Measured while other processes were running: these timings are distorted "
              "(slower and noisier than on an idle machine) and are not a basis for conclusions.**"]
if not s2s:
    block += ["", "The s2s columns are pending: no `s2s bench` results were produced in this run "
              "(PyTorch-only numbers)."]
if param_notes:
    block += ["", "Parameter counts differ for: " + ", ".join(f"{m} {p}" for m, p in param_notes)
              + " - the comparison is not like for like until they agree."]
if any_flops:
    block += flops
    if peak:
        block += ["", f"Peak: {peak_desc}."]
    if ceiling:
        block += ["", f"Measured gemm ceiling: {ceiling:.0f} GFLOP/s (a 1536^3 fp32 product in "
                  "PyTorch with the same threads, best of 10 in each reference run, best of the runs). A batch's matrix products alone "
                  "cannot run faster than that, so a target that needs more is out of reach for "
                  "any implementation of the same model on this machine."]
if base:
    block += ["", f"PyTorch's peak RSS includes {base} MiB for the interpreter and `import torch` "
              "alone (PyPI's wheel maps the CUDA libraries too, unused)."]
table = "\n".join(block)
print()
print(table)

if os.environ.get("NO_DOC") != "1":
    doc = "docs/performance.md"
    cpu_kind.write_section(doc, "bench", kind, table)
    print(f"\nwrote the table for {kind} into {doc}", file=sys.stderr)
PY
