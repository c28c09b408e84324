#!/usr/bin/env bash
# Generation (1 vs N) of issue 28 on ../shared/data: TREC questions written from their question
# type (6 classes, Kim 2014's files). Two recipes (configs/generation/): the label given at every
# decoder step (trec.toml) and at the first step only (trec-init.toml); each is also trained on
# the same questions with every label replaced by one, an unconditioned language model of the
# same size over the same target vocabulary. Each is scored with `s2s score` on the test
# questions: with their own labels, and with every label moved to the next class (a conditioned
# model should find those much less likely). Every 10th training question is held out for
# validation, as bench/labelling.sh does. Samples of each model go to OUT/samples.md. Writes
# OUT/results.md.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: bench/generation.sh [options]

  --s2s BIN       the s2s binary (default: $S2S, else target/release/s2s)
  --data DIR      the shared data folder (default: ../shared/data next to the repository)
  --out DIR       output folder (default: runs/generation)
  --minutes M     override the recipes' training budget (5 minutes each)
  -h, --help      this text
USAGE
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
s2s="${S2S:-$here/../target/release/s2s}"
data="$here/../../shared/data"
out="runs/generation"
minutes=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --s2s) s2s="$2"; shift 2 ;;
        --data) data="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --minutes) minutes="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "generation.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done

sc="$data/sentence-classification"
raw="$out/raw"
mkdir -p "$raw"
# Line 66 of the file has a stray byte 0xF0 for the hyphen of "sister-city".
LC_ALL=C sed 's/\xf0/-/' "$sc/TREC.train.all" > "$raw/all.txt"
awk 'NR % 10 != 0' "$raw/all.txt" > "$raw/train.txt"
awk 'NR % 10 == 0' "$raw/all.txt" > "$raw/valid.txt"
cp "$sc/TREC.test.all" "$raw/test.txt"
for s in train valid test; do
    awk '{ $1 = "-"; print }' "$raw/$s.txt" > "$raw/$s.lm.txt"
done

# prepare NAME SUFFIX: the questions with their labels (SUFFIX "") or with none (".lm")
prepare() {
    mkdir -p "$out/$1"
    "$s2s" prepare --task generation --train "$raw/train$2.txt" --valid "$raw/valid$2.txt" \
        --test "$raw/test$2.txt" --tgt-tokenizer word --min-freq 2 --max-len 0 \
        --out "$out/$1" --force > "$out/$1.prepare.txt" 2>&1
}
prepare data ""
prepare data-lm ".lm"
# The test sources with every label moved to the next class.
python3 - "$out/data/test.src" "$out/data/test.wrong.src" <<'PY'
import sys
labels = [l.strip() for l in open(sys.argv[1])]
classes = sorted(set(labels))
nxt = {c: classes[(i + 1) % len(classes)] for i, c in enumerate(classes)}
open(sys.argv[2], "w").write("".join(nxt[l] + "\n" for l in labels))
PY

# run NAME CONFIG DATA: train, score the test questions, print the results row
run() {
    local dir="$out/$1" d="$out/$3"
    local args=(--config "$2" --data "$d" --out "$dir" --force)
    [[ -n "$minutes" ]] && args+=(--max-minutes "$minutes")
    local start=$(date +%s)
    "$s2s" train "${args[@]}" > "$out/$1.train.txt" 2>&1
    local trained_s=$(( $(date +%s) - start ))
    "$s2s" score --model "$dir" --src "$d/test.src" --ref "$d/test.tgt" --json > "$out/$1.score.json"
    local wrong="-"
    if [[ "$3" == data ]]; then
        "$s2s" score --model "$dir" --src "$d/test.wrong.src" --ref "$d/test.tgt" --json \
            > "$out/$1.wrong.json"
        wrong="$(python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["perplexity"])' "$out/$1.wrong.json")"
    fi
    python3 - "$1" "$dir" "$out/$1.score.json" "$wrong" "$trained_s" <<'PY'
import json, sys
name, d, score, wrong, secs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
ppl = json.load(open(score))["perplexity"]
rows = [json.loads(l) for l in open(f"{d}/metrics.jsonl") if l.strip()]
best = min(r["valid_ppl"] for r in rows if r.get("valid_ppl") is not None)
params = json.load(open(f"{d}/model.json"))["parameters"] / 1e6
print(f"| {name} | {ppl:.2f} | {wrong} | {best:.2f} | {params:.2f} M | {rows[-1]['step']} "
      f"| {secs / 60:.1f} |")
PY
}

{
    echo "Measured $(date -u '+%Y-%m-%d %H:%M') UTC on $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores."
    echo
    echo "| model | test perplexity | with the next class's label | best valid perplexity | parameters | steps | train min |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    run every-step "$here/../configs/generation/trec.toml" data
    run every-step-unconditioned "$here/../configs/generation/trec.toml" data-lm
    run first-step "$here/../configs/generation/trec-init.toml" data
    run first-step-unconditioned "$here/../configs/generation/trec-init.toml" data-lm
} | tee "$out/results.md"

# Samples: three per class from each conditioned model (nucleus sampling, p = 0.9, no <unk>).
python3 -c 'import sys; [print(c) for c in sorted(set(l.strip() for l in open(sys.argv[1])))]' \
    "$out/data/train.src" > "$out/classes.txt"
{
    for m in every-step first-step; do
        echo "## $m"
        echo
        "$s2s" translate --model "$out/$m" --input "$out/classes.txt" --search sample \
            --top-p 0.9 --nbest 3 --ban-unk --json \
            | python3 -c '
import json, sys
for line in sys.stdin:
    t = json.loads(line)
    for h in t["hyps"]:
        print("- `%s`: %s" % (t["src"], h["text"]))'
        echo
    done
} > "$out/samples.md"
cat "$out/samples.md"
