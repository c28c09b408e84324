#!/usr/bin/env bash
# Exports an s2s Transformer as a Hugging Face MarianMT folder and decodes the same source with
# s2s itself, with transformers (MarianMTModel.generate) and with CTranslate2 (converted by
# ct2-transformers-converter), greedy and beam, with settings chosen so that the three search
# alike; prints and writes OUT/summary.md: BLEU, time, and how many outputs differ from s2s's
# (and, for those, whose output the model scores higher). A benchmark, not part of CI.
#
#   bench/marian_live.sh --s2s BIN --model MODEL_DIR --src FILE --ref FILE [--out DIR]
#       [--beam 5] [--alpha 0.75] [--max-len 100] [--batch 16] [--threads 2]
#       [--bleu-tokenize 13a|zh|intl|char|none] [--target-lang L] [--no-int8]
#       [--ct2-padstart auto|yes|no] [--examples 3]
#
# Steps:
#   1. BIN export hf-marian MODEL_DIR --out OUT/hf --force
#   2. ct2-transformers-converter --model OUT/hf --output_dir OUT/ct2 --force (fp32), and with
#      --quantization int8 into OUT/ct2-int8 (skip with --no-int8). The stock Marian converter
#      starts the decoder from a zero vector, not from the <pad> row that transformers and s2s
#      feed first; when that row is not zero, bench/marian_live.py also converts
#      OUT/ct2-padstart (and -int8) with the row kept (--ct2-padstart yes forces it, no skips it).
#   3. s2s translate (greedy: --search greedy --length-penalty none; beam: --search beam --beam K
#      --alpha A), --max-len N --max-len-ratio N (so only N binds), --json, RAYON_NUM_THREADS =
#      --threads; then bench/marian_live.py runs transformers and CTranslate2 with the matching
#      settings (its docstring says which and why, and what still differs).
#   4. OUT/summary.md, OUT/<setting>.<system>.txt (one output per line), OUT/<setting>.s2s.jsonl.
#
# OUT defaults to bench/results/marian_live/<basename of MODEL_DIR> (bench/results/ is ignored
# by git). BLEU is sacreBLEU (pip install sacrebleu==2.5.1 into the venv); use
# --bleu-tokenize zh for a Chinese target. Environment: PYTHON (default bench/.venv/bin/python;
# ct2-transformers-converter is taken from the same bin folder).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

s2s="" model="" src="" ref="" out=""
beam=5 alpha=0.75 max_len=100 batch=16 threads=2 bleu_tok=13a target_lang="" int8=1
padstart=auto examples=3
while [ $# -gt 0 ]; do
  case "$1" in
    --s2s) s2s="$2"; shift ;;
    --model) model="$2"; shift ;;
    --src) src="$2"; shift ;;
    --ref) ref="$2"; shift ;;
    --out) out="$2"; shift ;;
    --beam) beam="$2"; shift ;;
    --alpha) alpha="$2"; shift ;;
    --max-len) max_len="$2"; shift ;;
    --batch) batch="$2"; shift ;;
    --threads) threads="$2"; shift ;;
    --bleu-tokenize) bleu_tok="$2"; shift ;;
    --target-lang) target_lang="$2"; shift ;;
    --no-int8) int8=0 ;;
    --ct2-padstart) padstart="$2"; shift ;;
    --examples) examples="$2"; shift ;;
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
python="${PYTHON:-$root/bench/.venv/bin/python}"
[ -x "$python" ] || { echo "no $python: run bench/setup.sh first (or set PYTHON)" >&2; exit 1; }
converter="$(dirname "$python")/ct2-transformers-converter"
[ -x "$converter" ] || { echo "no $converter: $(dirname "$python")/pip install ctranslate2" >&2; exit 1; }
"$python" -c 'import sacrebleu, ctranslate2, transformers, sentencepiece' 2>/dev/null \
  || { echo "$python lacks sacrebleu, ctranslate2, transformers or sentencepiece" >&2; exit 1; }
[ "$beam" -ge 1 ] || { echo "--beam must be >= 1" >&2; exit 2; }
out="${out:-$root/bench/results/marian_live/$(basename "$(cd "$model" && pwd)")}"
mkdir -p "$out"
rm -f "$out"/*.txt "$out"/*.jsonl "$out"/times.tsv "$out"/summary.md
now() { date +%s.%N; }
start=$(now)

echo "== export $model -> $out/hf" >&2
"$s2s" export hf-marian "$model" --out "$out/hf" --force >&2

echo "== ct2-transformers-converter -> $out/ct2" >&2
"$converter" --model "$out/hf" --output_dir "$out/ct2" --force >/dev/null 2>"$out/ct2.log" \
  || { cat "$out/ct2.log" >&2; exit 1; }
rm -rf "$out/ct2-int8" "$out/ct2-padstart" "$out/ct2-padstart-int8"
if [ "$int8" = 1 ]; then
  "$converter" --model "$out/hf" --output_dir "$out/ct2-int8" --quantization int8 --force \
    >/dev/null 2>>"$out/ct2.log" || { cat "$out/ct2.log" >&2; exit 1; }
fi

lang=()
[ -n "$target_lang" ] && lang=(--target-lang "$target_lang")
run_s2s() { # setting, search options...
  local setting="$1"; shift
  echo "== s2s $setting" >&2
  local t0 t1
  t0=$(now)
  RAYON_NUM_THREADS="$threads" "$s2s" translate --model "$model" "$@" \
    --max-len "$max_len" --max-len-ratio "$max_len" --batch-size "$batch" --json \
    ${lang[@]+"${lang[@]}"} --input "$src" --output "$out/$setting.s2s.jsonl"
  t1=$(now)
  printf '%s.s2s\t%s\n' "$setting" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" >>"$out/times.tsv"
}
run_s2s greedy --search greedy --length-penalty none
if [ "$beam" -gt 1 ]; then
  run_s2s "beam$beam" --search beam --beam "$beam" --alpha "$alpha" --length-penalty alpha
fi

echo "== transformers and CTranslate2" >&2
"$python" "$root/bench/marian_live.py" --out "$out" --src "$src" --ref "$ref" --beam "$beam" \
  --alpha "$alpha" --max-len "$max_len" --batch "$batch" --threads "$threads" \
  --bleu-tokenize "$bleu_tok" --target-lang "$target_lang" --ct2-padstart "$padstart" \
  --examples "$examples" --model "$model" --s2s "$s2s"
echo "total $(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }') s; outputs in $out" >&2
