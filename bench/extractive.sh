#!/usr/bin/env bash
# Extractive summarisation (issue 30) on ../shared/data: SciTLDR-A (abstract -> TLDR) and AESLC
# (email -> subject line). Each corpus is turned into parallel files by `s2s data pairs`, the
# training and validation pairs into sentence-classification examples by `s2s data extractive`
# (each document's sentences, marked with where they stand, labelled 1 for the one closest to
# the summary), prepared with `s2s prepare --task classification`, trained with its recipe
# (configs/summarisation/TASK-extractive.toml) within the recipe's budget, and the test
# documents summarised with `s2s extract` (each one's best-rated sentence). Scored with ROUGE-1/2/L F
# (rouge-score's stemmed defaults, best of the references) beside Lead-1, measured the same
# way. With --ensemble N, N classifiers (seeds 1..N) share the recipe's budget, a 1/N share
# each, and rate as an ensemble. Writes OUT/results.md.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: bench/extractive.sh [options]

  --s2s BIN       the s2s binary (default: $S2S, else target/release/s2s)
  --data DIR      the shared data folder (default: ../shared/data next to the repository)
  --out DIR       output folder (default: runs/extractive)
  --tasks LIST    comma-separated, of scitldr,aeslc (default: scitldr)
  --minutes M     override the recipes' training budget
  --ensemble N    train N classifiers (seeds 1..N), each for 1/N of the budget, and extract
                  with all of them (the mean of their probabilities); each is scored alone too
  -h, --help      this text
USAGE
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
s2s="${S2S:-$here/../target/release/s2s}"
data="$here/../../shared/data"
out="runs/extractive"
tasks="scitldr"
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
        *) echo "extractive.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done

if [[ ! "$ensemble" =~ ^[1-9][0-9]*$ ]]; then
    echo "extractive.sh: --ensemble wants a positive number of models, got '$ensemble'" >&2
    exit 2
fi

# The ROUGE columns of HYP against the task's references.
score() {
    local dir="$1" hyp="$2" refs=()
    for f in "$dir/text"/test.tgt "$dir/text"/test.tgt.*; do
        [[ -e "$f" ]] && refs+=(--ref "$f")
    done
    "$s2s" eval --hyp "$hyp" "${refs[@]}" --metrics rouge --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(" | ".join("%.2f" % j["rouge"][k]["fmeasure"] for k in ("rouge1", "rouge2", "rougeL")))'
}

run() {
    local task="$1" dir="$out/$1"
    mkdir -p "$dir/examples" "$dir/hyp"
    "$s2s" data pairs "$task" --from "$data/$task" --out "$dir/text" > "$dir/pairs.txt"
    for split in train valid; do
        "$s2s" data extractive --src "$dir/text/$split.src" --tgt "$dir/text/$split.tgt" \
            --out "$dir/examples/$split.tsv" 2>> "$dir/examples.txt"
    done
    "$s2s" prepare --task classification --format labelled --train "$dir/examples/train.tsv" \
        --valid "$dir/examples/valid.tsv" --vocab-size 30000 --min-freq 2 --max-len 0 \
        --out "$dir/data" --force > "$dir/prepare.txt" 2>&1
    local config="$here/../configs/summarisation/$task-extractive.toml"
    local budget="${minutes:-$(sed -n 's/^max_minutes *= *//p' "$config")}"
    local models=() i
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
        models+=("$m")
    done
    local trained=$(( $(date +%s) - start ))
    "$s2s" baseline lead --sentences 1 --input "$dir/text/test.src" --output "$dir/hyp/lead1.txt"
    echo "| $task | Lead-1 | $(score "$dir" "$dir/hyp/lead1.txt") |"
    local steps which
    for i in "${!models[@]}"; do
        m="${models[$i]}"
        steps=$(tail -n 1 "$m/metrics.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])')
        which="$trained s, $steps steps"
        (( ensemble > 1 )) && which="seed $(( i + 1 )), $steps steps"
        start=$(date +%s)
        "$s2s" extract --model "$m" --input "$dir/text/test.src" --output "$dir/hyp/$(basename "$m").txt"
        echo "| $task | sentence classifier ($which; extract $(( $(date +%s) - start )) s) | $(score "$dir" "$dir/hyp/$(basename "$m").txt") |"
    done
    if (( ensemble > 1 )); then
        local flags=()
        for m in "${models[@]}"; do flags+=(--model "$m"); done
        start=$(date +%s)
        "$s2s" extract "${flags[@]}" --input "$dir/text/test.src" --output "$dir/hyp/ensemble.txt"
        echo "| $task | ensemble of $ensemble ($trained s of training; extract $(( $(date +%s) - start )) s) | $(score "$dir" "$dir/hyp/ensemble.txt") |"
        cp "$dir/hyp/ensemble.txt" "$dir/hyp/extractive.txt"
    else
        cp "$dir/hyp/model.txt" "$dir/hyp/extractive.txt"
    fi
    # The ceiling of choosing one sentence: the one closest to the first reference (the label
    # `s2s data extractive` gives), without its two position words.
    "$s2s" data extractive --src "$dir/text/test.src" --tgt "$dir/text/test.tgt" \
        --out "$dir/examples/test.tsv" 2>> "$dir/examples.txt"
    grep '^1' "$dir/examples/test.tsv" | cut -f2 | cut -d' ' -f3- > "$dir/hyp/oracle.txt"
    if [[ $(wc -l < "$dir/hyp/oracle.txt") -eq $(wc -l < "$dir/text/test.src") ]]; then
        echo "| $task | oracle sentence (closest to the first reference) | $(score "$dir" "$dir/hyp/oracle.txt") |"
    fi
    local same
    same=$(paste -d '\t' "$dir/hyp/lead1.txt" "$dir/hyp/extractive.txt" | awk -F '\t' '$1 == $2' | wc -l)
    echo "$task: the classifier chose the first sentence for $same of $(wc -l < "$dir/text/test.src") documents" >&2
}

mkdir -p "$out"
{
    echo "Measured $(date -u '+%Y-%m-%d %H:%M') UTC on $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores."
    printf '\n| task | system | ROUGE-1 F | ROUGE-2 F | ROUGE-L F |\n|---|---|---:|---:|---:|\n'
    IFS=, read -ra list <<< "$tasks"
    for task in "${list[@]}"; do
        case "$task" in
            scitldr|aeslc) run "$task" ;;
            *) echo "extractive.sh: unknown task '$task' (scitldr, aeslc)" >&2; exit 2 ;;
        esac
    done
} | tee "$out/results.md"
