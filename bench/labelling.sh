#!/usr/bin/env bash
# The labelling tasks of issue 28 on ../shared/data: UPOS tagging on UD English-EWT (CoNLL-U),
# and sentence classification on SST-2 and TREC (Kim 2014's files). Each is prepared with
# `s2s prepare --task`, trained with its recipe under configs/ within the recipe's time budget,
# labelled with `s2s translate` and scored with `s2s eval --metrics accuracy,f1`. TREC has no
# validation split: every 10th training question is held out as one. Words seen once in training
# are left out of the vocabulary (--min-freq 2) and train the tokens of their shapes instead
# (unknown-word signatures: the default for tagging; the classification files are tokenized
# already, so their text is read with the split tokenizer to have them too). With --ensemble N,
# N models (seeds 1..N) share the recipe's budget, a 1/N share each, and label as an ensemble.
# Writes OUT/results.md.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: bench/labelling.sh [options]

  --s2s BIN       the s2s binary (default: $S2S, else target/release/s2s)
  --data DIR      the shared data folder (default: ../shared/data next to the repository)
  --out DIR       output folder (default: runs/labelling)
  --tasks LIST    comma-separated, of upos,sst2,trec (default: all three)
  --minutes M     override every recipe's training budget
  --ensemble N    train N models (seeds 1..N), each for 1/N of the budget, and label the test
                  split with all of them (s2s translate --model .. --model ..)
  -h, --help      this text
USAGE
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
s2s="${S2S:-$here/../target/release/s2s}"
data="$here/../../shared/data"
out="runs/labelling"
tasks="upos,sst2,trec"
minutes=""
ensemble=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --s2s) s2s="$2"; shift 2 ;;
        --data) data="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --tasks) tasks="$2"; shift 2 ;;
        --minutes) minutes="$2"; shift 2 ;;
        --ensemble) ensemble="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "labelling.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done

if [[ ! "$ensemble" =~ ^[1-9][0-9]*$ ]]; then
    echo "labelling.sh: --ensemble wants a positive number of models, got '$ensemble'" >&2
    exit 2
fi

# prepare NAME TASK FORMAT TRAIN VALID TEST [OPTIONS...]
prepare() {
    "$s2s" prepare --task "$2" --format "$3" --train "$4" --valid "$5" --test "$6" \
        --vocab-size 30000 --min-freq 2 --max-len 0 --out "$out/$1/data" --force "${@:7}" \
        > "$out/$1/prepare.txt" 2>&1
}

# run NAME CONFIG: train (one model, or --ensemble N), label the test split, print the results row
run() {
    local dir="$out/$1" config="$2" models=() i
    local budget="${minutes:-$(sed -n 's/^max_minutes *= *//p' "$config")}"
    local start=$(date +%s)
    for i in $(seq 1 "$ensemble"); do
        local m="$dir/model" log="$dir/train.txt"
        local args=(--config "$config" --data "$dir/data" --force)
        if (( ensemble > 1 )); then
            m="$dir/model-$i" log="$dir/train-$i.txt"
            args+=(--seed "$i" --max-minutes "$(python3 -c "print($budget / $ensemble)")")
        elif [[ -n "$minutes" ]]; then
            args+=(--max-minutes "$minutes")
        fi
        "$s2s" train "${args[@]}" --out "$m" > "$log" 2>&1
        models+=(--model "$m")
    done
    local trained_s=$(( $(date +%s) - start ))
    "$s2s" translate "${models[@]}" --batch-size 64 \
        --input "$dir/data/test.src" --output "$dir/test.hyp"
    "$s2s" eval --hyp "$dir/test.hyp" --ref "$dir/data/test.tgt" --metrics accuracy,f1 --json \
        > "$dir/eval.json"
    python3 - "$1" "$dir" "$trained_s" "${models[@]}" <<'PY'
import json, sys
name, d, secs, models = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[5::2]
ev = json.load(open(f"{d}/eval.json"))
best, steps = [], []
for m in models:
    rows = [json.loads(l) for l in open(f"{m}/metrics.jsonl") if l.strip()]
    best.append(max(r["valid_accuracy"] for r in rows if r.get("valid_accuracy") is not None))
    steps.append(rows[-1]["step"])
label = name if len(models) == 1 else f"{name}, ensemble of {len(models)}"
print(f"| {label} | {ev['accuracy']['score']:.2f} | {ev['f1']['score']:.2f} "
      f"| {' / '.join(f'{b:.2f}' for b in best)} | {' / '.join(map(str, steps))} | {secs / 60:.1f} |")
PY
}

IFS=',' read -r -a want <<< "$tasks"
for t in "${want[@]}"; do mkdir -p "$out/$t"; done
{
    echo "Measured $(date -u '+%Y-%m-%d %H:%M') UTC on $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores."
    echo
    echo "| task | test accuracy % | test macro-F1 % | best valid accuracy % | steps | train min |"
    echo "|---|---:|---:|---:|---:|---:|"
    for t in "${want[@]}"; do
        case "$t" in
            upos)
                ud="$data/ud-english-ewt"
                prepare upos tagging conllu "$ud/en_ewt-ud-train.conllu" \
                    "$ud/en_ewt-ud-dev.conllu" "$ud/en_ewt-ud-test.conllu"
                run upos "$here/../configs/tagging/ud-ewt.toml" ;;
            sst2)
                sc="$data/sentence-classification"
                prepare sst2 classification labelled "$sc/stsa.binary.train" \
                    "$sc/stsa.binary.dev" "$sc/stsa.binary.test" \
                    --src-tokenizer split --unk-signatures
                run sst2 "$here/../configs/classification/sst2.toml" ;;
            trec)
                sc="$data/sentence-classification"
                # Line 66 of the file has a stray byte 0xF0 for the hyphen of "sister-city".
                LC_ALL=C sed 's/\xf0/-/' "$sc/TREC.train.all" > "$out/trec/all.txt"
                awk 'NR % 10 != 0' "$out/trec/all.txt" > "$out/trec/train.txt"
                awk 'NR % 10 == 0' "$out/trec/all.txt" > "$out/trec/valid.txt"
                prepare trec classification labelled "$out/trec/train.txt" \
                    "$out/trec/valid.txt" "$sc/TREC.test.all" \
                    --src-tokenizer split --unk-signatures
                run trec "$here/../configs/classification/trec.toml" ;;
            *) echo "labelling.sh: unknown task '$t' (upos, sst2, trec)" >&2; exit 2 ;;
        esac
    done
} | tee "$out/results.md"
