#!/usr/bin/env bash
# Speed of s2s against CTranslate2 (fp32 and int8) on one model and one test set: the same
# model (exported by s2s, converted by ct2-transformers-converter; quantised by `s2s quantize`
# for s2s's int8 runs), the same machine, threads,
# beams, max length, length penalty and batch sizes. Prints and writes OUT/summary.md, and
# (unless --no-doc) this CPU kind's table in the section "## s2s against CTranslate2" of
# docs/performance.md (bench/cpu_kind.py: one table per kind). A benchmark, not part of CI.
#
#   bench/ct2.sh --s2s BIN --model MODEL_DIR --src FILE --ref FILE [--out DIR] [--rounds 3]
#       [--threads 2] [--max-len 100] [--alpha 0.75] [--beam 5] [--batches 1,16,64]
#       [--tokens 1024] [--exact] [--lines N] [--cpus LIST] [--bleu-tokenize 13a]
#       [--ct2-padstart auto|yes|no] [--no-int8] [--no-doc]
#
# Steps:
#   1. BIN quantize MODEL_DIR --out OUT/s2s-int8 --force (s2s's int8 model, unless --no-int8);
#      BIN export hf-marian MODEL_DIR --out OUT/hf --force; ct2-transformers-converter into
#      OUT/ct2 (fp32) and OUT/ct2-int8 (--quantization int8). When the decoder-start (<pad>) row
#      of the export is not zero, the stock conversion (which starts from a zero vector) is a
#      different model: then (--ct2-padstart auto) bench/marian_live.py's convert_padstart is
#      used instead and <pad> is banned at decoding time (see bench/marian_live.py).
#   2. The first --lines sentences (default all) are split into pieces once, with the export's
#      MarianTokenizer (OUT/src.pieces); CTranslate2 reads those and writes pieces, which are
#      detokenised afterwards. s2s reads the text and writes text (and its pieces, --json):
#      its tokenising and detokenising are inside its timed process, CTranslate2's are not.
#   3. Settings: greedy (beam 1) and beam K, each at --batches sentences per batch; for CT2
#      also a token-batched row (batch_type="tokens", max_batch_size = --tokens source tokens,
#      0 to skip; its s2s columns are s2s's run at the largest --batches); with --exact one more
#      beam-K row with patience = max-len + 2 on both sides, CT2's exact search
#      (bench/marian_live.py) and so s2s's, at batch 16 (or the largest); and a "load" row: one sentence, beam K, batch 1, i.e. the
#      cost of starting the process and loading the model.
#   4. --rounds rounds; in each, every setting is run by every system back to back, in an
#      order that alternates between rounds (s2s, s2s-int8, ct2, ct2-int8, then reversed), as
#      bench/compare.sh does. Every run is a whole process timed from outside: wall time
#      INCLUDES starting the process and loading the model, for both sides (the load row says
#      how much that is); peak RSS is GNU time's maximum resident set size of that process.
#
# Search settings (as bench/marian_live.py, so that both rank hypotheses alike):
#   s2s   translate --search greedy --length-penalty none | --search beam --beam K --alpha A
#         --length-penalty alpha --patience P; --max-len N --max-len-ratio N (only N binds);
#         --batch-size B; --json; RAYON_NUM_THREADS = --threads (s2s's only thread pool)
#   CT2   bench/ct2_decode.py: Translator(intra_threads = --threads, inter_threads = 1),
#         OMP_NUM_THREADS = --threads; beam_size K, length_penalty A (0 for greedy),
#         patience P (1, CTranslate2's default stopping, on both sides: a sentence ends once K
#         hypotheses have finished), max_decoding_length N, min_decoding_length 0,
#         max_input_length 0, max_batch_size B, batch_type examples (or tokens)
# Both sort the whole input by source length before cutting it into batches.
#
# Target tokens (for tokens/s): the output's pieces of the model's target vocabulary, </s> not
# counted, summed over the test set; tokens/s = that / the median wall time.
# --cpus LIST runs both under `taskset -c LIST` (use as many CPUs as --threads).
# CTranslate2's environment passes through (e.g. CT2_USE_MKL=1: on AMD CPUs it picks oneDNN, not
# MKL, by default); the summary lists the ISA, GEMM backends and compute type it selected.
# Environment: PYTHON (default bench/.venv/bin/python; ct2-transformers-converter from its
# folder). OUT defaults to bench/results/ct2/<basename of MODEL_DIR>. Run it on an otherwise
# idle machine: the load average is printed first, with a warning above 0.5.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cmdline="bench/ct2.sh"
for arg in "$@"; do
  if [[ "$arg" =~ ^[A-Za-z0-9_./,:=+-]+$ ]]; then cmdline+=" $arg"; else cmdline+=" $(printf '%q' "$arg")"; fi
done

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

s2s="" model="" src="" ref="" out=""
rounds=3 threads=2 max_len=100 alpha=0.75 beam=5 batches="1,16,64" tokens=1024 exact=0
lines=0 cpus="" bleu_tok=13a padstart=auto doc=1 int8=1
while [ $# -gt 0 ]; do
  case "$1" in
    --s2s) s2s="$2"; shift ;;
    --model) model="$2"; shift ;;
    --src) src="$2"; shift ;;
    --ref) ref="$2"; shift ;;
    --out) out="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --threads) threads="$2"; shift ;;
    --max-len) max_len="$2"; shift ;;
    --alpha) alpha="$2"; shift ;;
    --beam) beam="$2"; shift ;;
    --batches) batches="$2"; shift ;;
    --tokens) tokens="$2"; shift ;;
    --exact) exact=1 ;;
    --lines) lines="$2"; shift ;;
    --cpus) cpus="$2"; shift ;;
    --bleu-tokenize) bleu_tok="$2"; shift ;;
    --ct2-padstart) padstart="$2"; shift ;;
    --no-doc) doc=0 ;;
    --no-int8) int8=0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for v in s2s model src ref; do
  if [ -z "${!v}" ]; then echo "--$v is required (see --help)" >&2; exit 2; fi
done
[ -x "$s2s" ] || { echo "no s2s binary at $s2s" >&2; exit 1; }
[ -d "$model" ] || { echo "no MODEL_DIR at $model" >&2; exit 1; }
[ -f "$src" ] && [ -f "$ref" ] || { echo "no $src or $ref" >&2; exit 1; }
[ "$beam" -ge 2 ] || { echo "--beam must be >= 2 (greedy is always run)" >&2; exit 2; }
[ "$rounds" -ge 1 ] || { echo "--rounds must be >= 1" >&2; exit 2; }
case "$padstart" in auto|yes|no) ;; *) echo "--ct2-padstart auto|yes|no" >&2; exit 2 ;; esac
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }
python="${PYTHON:-$root/bench/.venv/bin/python}"
[ -x "$python" ] || { echo "no $python: run bench/setup.sh first (or set PYTHON)" >&2; exit 1; }
converter="$(dirname "$python")/ct2-transformers-converter"
[ -x "$converter" ] || { echo "no $converter: $(dirname "$python")/pip install ctranslate2" >&2; exit 1; }
"$python" -c 'import sacrebleu, ctranslate2, transformers, sentencepiece' 2>/dev/null \
  || { echo "$python lacks sacrebleu, ctranslate2, transformers or sentencepiece" >&2; exit 1; }
pin=()
if [ -n "$cpus" ]; then
  command -v taskset >/dev/null || { echo "--cpus needs taskset" >&2; exit 1; }
  pin=(taskset -c "$cpus")
fi
IFS=, read -r -a batch_list <<<"$batches"
largest=0
for b in "${batch_list[@]}"; do
  [[ "$b" =~ ^[1-9][0-9]*$ ]] || { echo "--batches: $b is not a batch size" >&2; exit 2; }
  [ "$b" -gt "$largest" ] && largest="$b"
done
exact_batch="$largest"
for b in "${batch_list[@]}"; do [ "$b" = 16 ] && exact_batch=16; done

load="$(cut -d' ' -f1 /proc/loadavg)"
echo "load average: $load ($(nproc) CPUs)" >&2
if awk -v l="$load" 'BEGIN { exit !(l > 0.5) }'; then
  echo "warning: load average is $load; other processes will distort the timings" >&2
fi

out="${out:-$root/bench/results/ct2/$(basename "$(cd "$model" && pwd)")}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -rf "$out/runs" "$out/ct2" "$out/ct2-int8" "$out/s2s-int8"
mkdir -p "$out/runs"
rm -f "$out"/runs.tsv "$out"/settings.tsv "$out"/summary.md "$out"/prep.json "$out"/ct2-info.log
start=$EPOCHREALTIME

s2s_systems=s2s
if [ "$int8" = 1 ]; then
  echo "== quantize $model -> $out/s2s-int8" >&2
  "$s2s" quantize "$model" --out "$out/s2s-int8" --force | tee "$out/quantize.log" >&2
  s2s_systems=s2s,s2s-int8
fi

echo "== export $model -> $out/hf" >&2
"$s2s" export hf-marian "$model" --out "$out/hf" --force >&2

echo "== tokenise the source once (MarianTokenizer of the export)" >&2
"$python" - "$out" "$src" "$ref" "$lines" "$padstart" <<'PY'
import json, os, sys, warnings
warnings.filterwarnings("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
from safetensors import safe_open
from transformers import MarianTokenizer

out, src, ref, lines, padstart = sys.argv[1:]
read = lambda p: open(p, encoding="utf-8").read().splitlines()
s, r = read(src), read(ref)
if len(s) != len(r):
    sys.exit(f"{src} has {len(s)} lines but {ref} has {len(r)}")
if int(lines) > 0:
    s, r = s[: int(lines)], r[: int(lines)]
hf = os.path.join(out, "hf")
tok = MarianTokenizer.from_pretrained(hf)
pieces = [tok.convert_ids_to_tokens(tok(t)["input_ids"]) for t in s]
for name, rows in [("src.txt", s), ("ref.txt", r), ("src1.txt", s[:1]),
                   ("src.pieces", [" ".join(p) for p in pieces]),
                   ("src1.pieces", [" ".join(p) for p in pieces[:1]])]:
    with open(os.path.join(out, name), "w", encoding="utf-8") as f:
        f.write("".join(x + "\n" for x in rows))
cfg = json.load(open(os.path.join(hf, "config.json")))
with safe_open(os.path.join(hf, "model.safetensors"), "np") as f:
    key = next(k for k in ("model.shared.weight", "model.decoder.embed_tokens.weight")
               if k in f.keys())
    zero = bool((f.get_tensor(key)[cfg["decoder_start_token_id"]] == 0).all())
use = padstart == "yes" or (padstart == "auto" and not zero)
json.dump(dict(sentences=len(s), src_tokens=sum(len(p) for p in pieces), start_row_zero=zero,
               padstart=use), open(os.path.join(out, "prep.json"), "w"))
print(f"{len(s)} sentences, {sum(len(p) for p in pieces)} source pieces (with </s>); decoder "
      f"start row {'zero' if zero else 'NOT zero'}", file=sys.stderr)
PY
suppress=()
if "$python" -c 'import json,sys; sys.exit(not json.load(open(sys.argv[1]))["padstart"])' "$out/prep.json"; then
  suppress=(--suppress-pad)
  echo "== convert (decoder starting from the <pad> row: bench/marian_live.py's convert_padstart)" >&2
  "$python" - "$out" "$root/bench" <<'PY' >&2
import os, sys, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, sys.argv[2])
from marian_live import convert_padstart
out = sys.argv[1]
convert_padstart(os.path.join(out, "hf"), os.path.join(out, "ct2"))
convert_padstart(os.path.join(out, "hf"), os.path.join(out, "ct2-int8"), quantization="int8")
PY
else
  echo "== ct2-transformers-converter -> $out/ct2, $out/ct2-int8" >&2
  "$converter" --model "$out/hf" --output_dir "$out/ct2" --force >/dev/null 2>"$out/ct2.log" \
    || { cat "$out/ct2.log" >&2; exit 1; }
  "$converter" --model "$out/hf" --output_dir "$out/ct2-int8" --quantization int8 --force \
    >/dev/null 2>>"$out/ct2.log" || { cat "$out/ct2.log" >&2; exit 1; }
fi

# What CTranslate2 selects on this CPU (ISA, GEMM backends, compute type), and the RSS of the
# interpreter with ctranslate2 imported and nothing loaded: not timed.
for m in ct2 ct2-int8; do
  CT2_VERBOSE=1 OMP_NUM_THREADS="$threads" "$python" "$root/bench/ct2_decode.py" "$out/$m" \
    "$out/src1.pieces" "$out/runs/info.$m.pieces" --threads "$threads" ${suppress[@]+"${suppress[@]}"} \
    2>&1 | sed -n 's/.*\[info\] *//p' | sed "s|^|$m: |" >>"$out/ct2-info.log"
done
/usr/bin/time -f '%M' -o "$out/runs/import-only.rss" "$python" "$root/bench/ct2_decode.py" \
  --import-only 2>/dev/null

# The settings: name, system list, beam, batch, batch type, patience, input, s2s row to compare.
settings=() # "name beam batch type patience input ref systems"
settings+=("load $beam 1 examples 1 src1 load $s2s_systems,ct2,ct2-int8")
for k in 1 "$beam"; do
  if [ "$k" = 1 ]; then name=greedy; else name="beam$k"; fi
  for b in "${batch_list[@]}"; do
    settings+=("$name-b$b $k $b examples 1 src $name-b$b $s2s_systems,ct2,ct2-int8")
  done
  if [ "$tokens" -gt 0 ]; then
    settings+=("$name-t$tokens $k $tokens tokens 1 src $name-b$largest ct2,ct2-int8")
  fi
done
if [ "$exact" = 1 ]; then
  settings+=("beam$beam-b$exact_batch-exact $beam $exact_batch examples $((max_len + 2)) src beam$beam-b$exact_batch-exact $s2s_systems,ct2,ct2-int8")
fi
printf '%s\n' "${settings[@]}" | tr ' ' '\t' >"$out/settings.tsv"

run() { # round setting system beam batch type patience input
  local r=$1 name=$2 system=$3 k=$4 b=$5 type=$6 patience=$7 input=$8 dest cmd
  if [ "$system" = s2s ] || [ "$system" = s2s-int8 ]; then
    dest="$out/runs/$name.$system.jsonl"
    local search=(--search greedy --length-penalty none) dir="$model"
    [ "$system" = s2s-int8 ] && dir="$out/s2s-int8"
    [ "$k" -gt 1 ] && search=(--search beam --beam "$k" --alpha "$alpha" --length-penalty alpha
      --patience "$patience")
    cmd=(env RAYON_NUM_THREADS="$threads" ${pin[@]+"${pin[@]}"} "$s2s" translate --model "$dir"
      "${search[@]}" --max-len "$max_len" --max-len-ratio "$max_len" --batch-size "$b" --json
      --input "$out/$input.txt" --output "$dest")
  else
    dest="$out/runs/$name.$system.pieces"
    cmd=(env OMP_NUM_THREADS="$threads" ${pin[@]+"${pin[@]}"} "$python" "$root/bench/ct2_decode.py"
      "$out/$system" "$out/$input.pieces" "$dest" --beam "$k" --batch "$b" --batch-type "$type"
      --max-len "$max_len" --alpha "$alpha" --patience "$patience" --threads "$threads"
      ${suppress[@]+"${suppress[@]}"})
  fi
  [ "$r" = 1 ] && echo "+ ${cmd[*]}" >>"$out/commands.log"
  local t0=$EPOCHREALTIME
  /usr/bin/time -f '%M' -o "$out/runs/rss.tmp" "${cmd[@]}" 2>"$out/runs/$name.$system.err" \
    || { echo "failed: ${cmd[*]}" >&2; cat "$out/runs/$name.$system.err" >&2; exit 1; }
  local t1=$EPOCHREALTIME
  local wall rss sum info
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  rss=$(tail -1 "$out/runs/rss.tmp")
  sum=$(md5sum <"$dest" | cut -c1-12)
  info=$(grep '^{' "$out/runs/$name.$system.err" | tail -1 || true)
  [ -n "$info" ] || info='{}'
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$name" "$system" "$wall" "$rss" "$sum" "$info" \
    >>"$out/runs.tsv"
  printf '  %-22s %-9s %8s s %6s MiB\n' "$name" "$system" "$wall" "$((rss / 1024))" >&2
}

: >"$out/commands.log"
for ((round = 1; round <= rounds; round++)); do
  echo "# round $round of $rounds" >&2
  for s in "${settings[@]}"; do
    read -r name k b type patience input _ systems <<<"$s"
    IFS=, read -r -a sys_list <<<"$systems"
    if ((round % 2 == 0)); then
      rev=()
      for ((i = ${#sys_list[@]} - 1; i >= 0; i--)); do rev+=("${sys_list[$i]}"); done
      sys_list=("${rev[@]}")
    fi
    for system in "${sys_list[@]}"; do
      run "$round" "$name" "$system" "$k" "$b" "$type" "$patience" "$input"
    done
  done
done
load_end="$(cut -d' ' -f1 /proc/loadavg)"

echo "== report" >&2
OUT="$out" MODEL="$model" S2S="$s2s" SRC="$src" REF="$ref" ROUNDS="$rounds" THREADS="$threads" \
  MAX_LEN="$max_len" ALPHA="$alpha" BEAM="$beam" TOKENS="$tokens" BLEU_TOK="$bleu_tok" \
  CPUS="$cpus" LOAD="$load" LOAD_END="$load_end" CMDLINE="$cmdline" DOC="$doc" ROOT="$root" \
  INT8_KERNEL="$(grep -o 'int8 kernel: [a-z0-9]*' "$out/quantize.log" 2>/dev/null | cut -d' ' -f3)" \
  KV_CACHE="$(grep -o 'kv cache: [a-z0-9]*' "$out/quantize.log" 2>/dev/null | cut -d' ' -f3)" \
  "$python" - <<'PY'
import datetime, json, os, platform, subprocess, sys, warnings
warnings.filterwarnings("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
import ctranslate2, sacrebleu
from transformers import MarianTokenizer

E = os.environ
out = E["OUT"]
runs_dir = os.path.join(out, "runs")
read = lambda p: open(p, encoding="utf-8").read().splitlines()
prep = json.load(open(os.path.join(out, "prep.json")))
ref = read(os.path.join(out, "ref.txt"))
n = len(ref)
tok = MarianTokenizer.from_pretrained(os.path.join(out, "hf"))
SYSTEMS = ["s2s", "s2s-int8", "ct2", "ct2-int8"]

settings = []  # (name, beam, batch, type, patience, input, ref, systems)
for line in read(os.path.join(out, "settings.tsv")):
    name, k, b, t, p, inp, rs, systems = line.split("\t")
    settings.append(dict(name=name, beam=int(k), batch=int(b), type=t, patience=int(p),
                         input=inp, ref=rs, systems=systems.split(",")))
meas = {}  # (name, system) -> list of (round, wall, rss_kb, md5, info)
for line in read(os.path.join(out, "runs.tsv")):
    r, name, system, wall, rss, md5, info = line.split("\t")
    meas.setdefault((name, system), []).append(
        dict(round=int(r), wall=float(wall), rss=int(rss), md5=md5, info=json.loads(info)))


def median(xs):
    xs = sorted(xs)
    m = len(xs)
    return xs[m // 2] if m % 2 else (xs[m // 2 - 1] + xs[m // 2]) / 2


def shown(pieces):
    """Pieces as s2s's --json prints them: the word marker removed, a bare marker as " "."""
    return [" " if p and all(c == "\u2581" for c in p) else p.replace("\u2581", "") for p in pieces]


outputs = {}  # (name, system) -> dict(text, tokens)
for (name, system) in meas:
    if system.startswith("s2s"):
        rows = [json.loads(l) for l in read(os.path.join(runs_dir, f"{name}.{system}.jsonl"))]
        text = [r["hyps"][0]["text"] if r["hyps"] else "" for r in rows]
        toks = [r["hyps"][0]["tokens"] if r["hyps"] else [] for r in rows]
    else:
        pcs = [l.split() for l in read(os.path.join(runs_dir, f"{name}.{system}.pieces"))]
        text = [tok.decode(tok.convert_tokens_to_ids(p), skip_special_tokens=True) for p in pcs]
        toks = [shown(p) for p in pcs]
    outputs[(name, system)] = dict(text=text, tokens=toks)
    with open(os.path.join(runs_dir, f"{name}.{system}.txt"), "w", encoding="utf-8") as f:
        f.write("".join(t.replace("\n", " ") + "\n" for t in text))


def fmt_time(ms):
    ws = [m["wall"] for m in ms]
    if len(ws) == 1:
        return f"{ws[0]:.2f}"
    return f"{median(ws):.2f} ({min(ws):.2f}-{max(ws):.2f})"


def ratio(a, b):
    """Per-round ratios of the walls of measurements a and b: median (min-max)."""
    by = {m["round"]: m["wall"] for m in b}
    rs = [m["wall"] / by[m["round"]] for m in a if m["round"] in by and by[m["round"]] > 0]
    if not rs:
        return "-"
    if len(rs) == 1:
        return f"{rs[0]:.2f}x"
    return f"{median(rs):.2f}x ({min(rs):.2f}-{max(rs):.2f})"


head = ("| setting | s2s s | s2s-int8 s | ct2 s | ct2-int8 s | s2s/ct2 | s2s-int8/ct2-int8 "
        "| s2s/ct2-int8 | s2s tok/s | s2s-int8 tok/s | ct2 tok/s | ct2-int8 tok/s | s2s MiB "
        "| s2s-int8 MiB | ct2 MiB | ct2-int8 MiB | s2s-int8/s2s MiB | s2s BLEU | s2s-int8 BLEU "
        "| ct2 BLEU | ct2-int8 BLEU | s2s-int8 ≠ s2s | ct2 ≠ s2s | ct2-int8 ≠ s2s |")
table = [head, "|" + "---|" + "---:|" * 24]
labels = {}
for st in settings:
    name = st["name"]
    if name == "load":
        label = f"load: 1 sentence, beam {st['beam']}"
    else:
        search = "greedy" if st["beam"] == 1 else f"beam {st['beam']}"
        if st["type"] == "tokens":
            label = f"{search} × {st['batch']} tokens (s2s × {st['ref'].rsplit('-b', 1)[1]})"
        elif st["patience"] > 1:
            label = f"{search} × {st['batch']}, patience {st['patience']} (exact)"
        else:
            label = f"{search} × {st['batch']}"
    labels[name] = label
    cells = {}
    ref_key = st["ref"]  # the s2s row this one is compared with
    s2s_m = meas.get((ref_key, "s2s"), [])
    s2s_out = outputs.get((ref_key, "s2s"))
    for system in SYSTEMS:
        key = ref_key if system.startswith("s2s") else name
        ms = meas.get((key, system))
        if not ms:
            cells[system] = None
            continue
        o = outputs[(key, system)]
        ntok = sum(len(t) for t in o["tokens"])
        wall = median([m["wall"] for m in ms])
        c = dict(time=fmt_time(ms), rss=f"{median([m['rss'] for m in ms]) / 1024:.0f}",
                 tps="-" if name == "load" else f"{ntok / wall:.0f}",
                 bleu="-" if name == "load" else
                 f"{sacrebleu.corpus_bleu(o['text'], [ref], tokenize=E['BLEU_TOK']).score:.2f}",
                 ratio=ratio(s2s_m, ms) if not system.startswith("s2s") else "",
                 diff="")
        if system != "s2s" and s2s_out is not None:
            d = sum(1 for i in range(len(o["text"]))
                    if o["text"][i] != s2s_out["text"][i] or o["tokens"][i] != s2s_out["tokens"][i])
            c["diff"] = str(d)
        cells[system] = c
    g = lambda s, f: cells[s][f] if cells.get(s) else "-"
    q_m, q8_m = meas.get((ref_key, "s2s-int8"), []), meas.get((name, "ct2-int8"), [])
    int8_ratio = ratio(q_m, q8_m) if q_m and q8_m else "-"
    rss_ratio = "-"
    if q_m and s2s_m:
        rss_ratio = (f"{median([m['rss'] for m in q_m]) / median([m['rss'] for m in s2s_m]):.2f}x")
    table.append(f"| {label} | {g('s2s', 'time')} | {g('s2s-int8', 'time')} | {g('ct2', 'time')} "
                 f"| {g('ct2-int8', 'time')} | {g('ct2', 'ratio')} | {int8_ratio} "
                 f"| {g('ct2-int8', 'ratio')} | {g('s2s', 'tps')} | {g('s2s-int8', 'tps')} "
                 f"| {g('ct2', 'tps')} | {g('ct2-int8', 'tps')} | {g('s2s', 'rss')} "
                 f"| {g('s2s-int8', 'rss')} | {g('ct2', 'rss')} | {g('ct2-int8', 'rss')} "
                 f"| {rss_ratio} | {g('s2s', 'bleu')} | {g('s2s-int8', 'bleu')} "
                 f"| {g('ct2', 'bleu')} | {g('ct2-int8', 'bleu')} | {g('s2s-int8', 'diff')} "
                 f"| {g('ct2', 'diff')} | {g('ct2-int8', 'diff')} |")

# Inside the CT2 process: import + model load, and translate_batch alone (medians).
inner = ["| setting | ct2 import+load s | ct2 translate s | ct2-int8 import+load s "
         "| ct2-int8 translate s |", "|---|---:|---:|---:|---:|"]
for st in settings:
    row = [labels[st["name"]]]
    for system in ("ct2", "ct2-int8"):
        ms = meas.get((st["name"], system), [])
        infos = [m["info"] for m in ms if "translate_s" in m["info"]]
        if infos:
            row += [f"{median([i['import_s'] + i['load_s'] for i in infos]):.2f}",
                    f"{median([i['translate_s'] for i in infos]):.2f}"]
        else:
            row += ["-", "-"]
    inner.append("| " + " | ".join(row) + " |")

# Checks: outputs the same in every round; s2s's outputs the same at every batch size.
notes = []
changed = [f"{name} {system}" for (name, system), ms in meas.items()
           if len({m["md5"] for m in ms}) > 1]
if changed:
    notes.append("Outputs changed between rounds (the last round's are scored): "
                 + ", ".join(changed) + ".")
for k in sorted({st["beam"] for st in settings if st["name"] != "load"}):
    rows = [st["name"] for st in settings if st["beam"] == k and st["type"] == "examples"
            and st["patience"] == 1 and st["name"] != "load"]
    base = outputs.get((rows[0], "s2s")) if rows else None
    for r in rows[1:]:
        o = outputs.get((r, "s2s"))
        if base and o:
            d = sum(1 for a, b in zip(base["tokens"], o["tokens"]) if a != b)
            if d:
                notes.append(f"s2s's outputs at {labels[r]} differ from those at "
                             f"{labels[rows[0]]} on {d} sentences (float rounding of batching).")
rss_import = open(os.path.join(runs_dir, "import-only.rss")).read().split()[-1]
# CTranslate2's own log (CT2_VERBOSE=1) of the CPU, ISA, GEMM backends and compute type:
# what both models share once, then what differs.
per = {}
for l in read(os.path.join(out, "ct2-info.log")):
    m, _, msg = l.partition(": ")
    msg = msg.strip().lstrip("- ").strip()
    if any(w in msg for w in ("CPU:", "ISA", "MKL", "backend", "compute type")):
        per.setdefault(m, []).append(msg)
shared = [x for x in per.get("ct2", []) if all(x in v for v in per.values())]
backend = shared + [f"{m}: {x}" for m, v in per.items() for x in v if x not in shared]

sys.path.insert(0, os.path.join(E["ROOT"], "bench"))
import cpu_kind

kind, cpu = cpu_kind.describe()
stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
s2s_ver = subprocess.run([E["S2S"], "--version"], capture_output=True, text=True).stdout.strip()
k, N, A, T = E["BEAM"], E["MAX_LEN"], E["ALPHA"], E["THREADS"]
tok_batches = prep["src_tokens"] / int(E["TOKENS"]) if int(E["TOKENS"]) > 0 else 0
block = [
    f"Measured {stamp} on {cpu}, {os.cpu_count()} CPUs (`lscpu`), {T} threads on both sides"
    + (f", pinned to CPUs {E['CPUS']} (`taskset`)" if E["CPUS"] else "")
    + f"; 1-minute load average {E['LOAD']} before, {E['LOAD_END']} after (after includes the "
    "benchmark itself). "
    f"{s2s_ver or 's2s'}; ctranslate2 {ctranslate2.__version__}; sacreBLEU {sacrebleu.__version__}.",
    "",
    "```",
    E["CMDLINE"],
    "```",
    "",
    f"- model `{E['MODEL']}`, exported with `s2s export hf-marian` and converted with "
    "`ct2-transformers-converter` (fp32, and `--quantization int8`: int8_float32 on CPU)"
    + ("; the decoder-start row is not zero, so the conversion keeps it "
       "(bench/marian_live.py's convert_padstart) and bans <pad>" if prep["padstart"] else
       "; the decoder-start row is zero, so the stock conversion is the same model")
    + ".",
    f"- {n} sentences of `{E['SRC']}`, references `{E['REF']}`; sacreBLEU `{E['BLEU_TOK']}`.",
    f"- greedy (s2s `--search greedy --length-penalty none`, CT2 beam_size 1) and beam {k} "
    f"(score = log-prob / L^{A}, L counting </s>; CT2 length_penalty {A}; patience 1 on both "
    "sides (s2s `--patience 1`), CT2's default stopping: a sentence ends once "
    f"{k} hypotheses have finished; the exact row: patience {int(N) + 2}); at most {N} "
    "tokens before </s> (s2s `--max-len N --max-len-ratio N`, CT2 max_decoding_length N, "
    "min_decoding_length 0).",
    "- batch × B: B sentences per batch (s2s `--batch-size`, CT2 max_batch_size, batch_type "
    "examples); both sort the whole input by source length first"
    + (f". × {E['TOKENS']} tokens: CT2 batch_type tokens, at most {E['TOKENS']} source "
       f"pieces per batch (about {n / tok_batches:.0f} sentences here, "
       f"{prep['src_tokens'] / n:.1f} pieces each with </s>), against s2s's largest batch"
       if tok_batches else "")
    + ".",
    f"- {E['ROUNDS']} round{'s' if E['ROUNDS'] != '1' else ''}; in each, every setting run by every system back to back, in an "
    "order that alternates between rounds. Times: seconds for the whole test set, median "
    "(min-max) over the rounds, each a whole process timed from outside, INCLUDING process "
    "start and model load on both sides (the load row: one sentence). s2s/ct2: median (min-max) "
    "of the per-round ratios (below 1: s2s faster).",
    "- tok/s: target tokens (output pieces of the model's vocabulary, </s> not counted, the "
    "same count on both sides) over the median wall time. MiB: peak RSS of the process "
    f"(GNU time); the CT2 process is Python importing only ctranslate2 ({int(rss_import) / 1024:.0f} "
    "MiB before loading a model). CT2 reads pre-tokenised pieces and writes pieces "
    "(detokenised afterwards); s2s tokenises and detokenises inside its time.",
    "- ≠ s2s: outputs (text or pieces) that differ from s2s's in the same setting. Greedy fp32 "
    "and beam (the same stopping rule on both sides) should differ only by float rounding; "
    "int8 by quantisation.",
    "- s2s-int8: `s2s quantize` of the same model (linear layers and embeddings int8 with one "
    "scale per output row, activations quantised per row on the fly: CT2's int8_float32 "
    f"scheme; the keys and values attended over kept in {E.get('KV_CACHE') or 'f32'}"
    + (", one scale per head and position, where CT2 keeps f32"
       if E.get('KV_CACHE') == 'int8' else "")
    + f"), int8 kernel `{E.get('INT8_KERNEL', '?')}`; s2s-int8/ct2-int8 compares the two "
    "int8 runs, s2s-int8/s2s MiB the peak RSS of s2s's int8 and f32 runs.",
    f"- threads: s2s `RAYON_NUM_THREADS={T}`, its one thread pool (a batch is split over up "
    f"to {T} single-threaded workers with at least 8 sentences each; a smaller batch, e.g. one "
    f"sentence, runs op by op on {T} threads); CT2 "
    f"`intra_threads={T}`, `inter_threads=1`, `OMP_NUM_THREADS={T}`.",
    "- CTranslate2 on this CPU: " + "; ".join(backend) + ".",
    "",
    *table,
    "",
    "Inside the CT2 process (from its own clock): importing ctranslate2 plus loading the model, "
    "and translate_batch alone.",
    "",
    *inner,
]
if float(E["LOAD"]) > 0.5:
    block += ["", "**Measured while other processes were running: these timings are distorted "
              "and are not a basis for conclusions.**"]
if notes:
    block += [""] + [f"- {x}" for x in notes]
text = "\n".join(block)
with open(os.path.join(out, "summary.md"), "w", encoding="utf-8") as f:
    f.write("# s2s against CTranslate2\n\n" + text + "\n")
print("\n" + text)

if E["DOC"] == "1":
    doc = os.path.join(E["ROOT"], "docs", "performance.md")
    cpu_kind.write_section(doc, "ct2", kind, text)
    print(f"\nwrote the table for {kind} into {doc}", file=sys.stderr)
PY
echo "total $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }') s; outputs in $out" >&2
