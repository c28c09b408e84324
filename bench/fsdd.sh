#!/usr/bin/env bash
# Spoken digits (issue 29). Speech recognition on connected digits: `s2s data digits` joins
# recordings of the Free Spoken Digit Dataset (../shared/data/fsdd, 8 kHz) into utterances of 1-7
# digits of one speaker (training and validation from recordings 5-49, test from 0-4, FSDD's
# official split), `s2s prepare --task asr` turns them into 40 log-mel bins, configs/asr/fsdd.toml
# trains the speech Transformer within its budget, and the test utterances are transcribed
# greedily, with beam 5 and by the CTC head alone (`--search ctc`) and scored by word error rate
# (`s2s eval --metrics wer,cer`); the test recordings themselves, one digit each, are transcribed
# too and scored by accuracy (100 - sentence error rate). Isolated digits as N vs 1
# classification: `s2s prepare --task classification --format manifest` on the recordings
# themselves (training 10-49, validation 5-9, test 0-4), configs/classification/fsdd-digits.toml
# trains the speech classifier, and the test recordings are labelled and scored by accuracy and
# macro-F1. Writes OUT/results.md.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: bench/fsdd.sh [options]

  --s2s BIN       the s2s binary (default: $S2S, else target/release/s2s)
  --data DIR      the FSDD folder (default: ../shared/data/fsdd next to the repository)
  --out DIR       output folder (default: runs/fsdd)
  --minutes M     override the recogniser's training budget (30)
  --only WHAT     asr (the recogniser) or classifier (isolated digits); default: both
  --reuse         keep the data and a trained model in OUT: score only
  -h, --help      this text
USAGE
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
s2s="${S2S:-$here/../target/release/s2s}"
data="$here/../../shared/data/fsdd"
out="runs/fsdd"
minutes=""
only=""
reuse=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --s2s) s2s="$2"; shift 2 ;;
        --data) data="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --minutes) minutes="$2"; shift 2 ;;
        --only) only="$2"; shift 2 ;;
        --reuse) reuse=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "fsdd.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done

case "$only" in
    ""|asr|classifier) ;;
    *) echo "fsdd.sh: --only takes asr or classifier, not '$only'" >&2; exit 2 ;;
esac

json_get() {  # json_get PYTHON_EXPR < JSON: print the expression of `j`
    python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"
}

mkdir -p "$out/hyp"
if [[ $reuse -eq 0 || ! -e "$out/digits/isolated-train.tsv" ]]; then
    rm -rf "$out/digits"
    "$s2s" data digits --from "$data" --out "$out/digits" 2> "$out/digits.txt"
fi
digits_dir="$(cd "$out/digits" && pwd)"
for set in test isolated; do
    cut -f1 "$out/digits/$set.tsv" | sed "s|^|$digits_dir/|" > "$out/hyp/$set.wav.txt"
    cut -f2 "$out/digits/$set.tsv" > "$out/hyp/$set.ref.txt"
done

# train DATA_DIR CONFIG MODEL_DIR [ARGS...]: trains unless --reuse finds the model, and records
# the seconds it took.
train() {
    local data_dir="$1" config="$2" model="$3"
    shift 3
    if [[ $reuse -eq 0 || ! -e "$model/config.toml" ]]; then
        local start
        start=$(date +%s)
        "$s2s" train --config "$config" --data "$data_dir" --out "$model" --force "$@" \
            > "$model.train.txt" 2>&1
        echo $(( $(date +%s) - start )) > "$model/trained_s"
    fi
}

recogniser() {
    if [[ $reuse -eq 0 || ! -e "$out/data/data.toml" ]]; then
        "$s2s" prepare --task asr --train "$out/digits/train.tsv" --valid "$out/digits/valid.tsv" \
            --test "$out/digits/test.tsv" --sample-rate 8000 --n-mels 40 --tokenizer word \
            --out "$out/data" --force > "$out/prepare.txt" 2>&1
    fi
    local model="$out/model" args=()
    [[ -n "$minutes" ]] && args+=(--max-minutes "$minutes")
    train "$out/data" "$here/../configs/asr/fsdd.toml" "$model" "${args[@]}"
    local steps
    steps=$(tail -n 1 "$model/metrics.jsonl" | json_get 'j["step"]')
    echo "$(grep -c . "$out/hyp/test.ref.txt") test utterances of FSDD recordings 0-4 (speakers seen in training)."
    echo
    printf '| system | WER %% | CER %% |\n|---|---:|---:|\n'
    for search in greedy beam ctc; do
        "$s2s" translate --model "$model" --search "$search" --batch-size 32 \
            --input "$out/hyp/test.wav.txt" --output "$out/hyp/$search.txt"
        shown="$search"
        [[ "$search" == beam ]] && shown="beam 5"
        [[ "$search" == ctc ]] && shown="CTC head"
        "$s2s" eval --hyp "$out/hyp/$search.txt" --ref "$out/hyp/test.ref.txt" --metrics wer,cer --json \
            | json_get '"| speech-transformer-small ('"$(cat "$model/trained_s")"' s, '"$steps"' steps), '"$shown"' | %.2f | %.2f |" % (j["wer"]["score"], j["cer"]["score"])'
    done
    echo
    echo "The same model on the $(grep -c . "$out/hyp/isolated.ref.txt") test recordings themselves, one digit each (a transcript"
    echo "is right when it is exactly the digit's word)."
    echo
    printf '| system | accuracy %% | WER %% |\n|---|---:|---:|\n'
    for search in greedy beam ctc; do
        "$s2s" translate --model "$model" --search "$search" --batch-size 32 \
            --input "$out/hyp/isolated.wav.txt" --output "$out/hyp/isolated.$search.txt"
        shown="$search"
        [[ "$search" == beam ]] && shown="beam 5"
        [[ "$search" == ctc ]] && shown="CTC head"
        "$s2s" eval --hyp "$out/hyp/isolated.$search.txt" --ref "$out/hyp/isolated.ref.txt" --metrics ser,wer --json \
            | json_get '"| speech-transformer-small, '"$shown"' | %.2f | %.2f |" % (100 - j["ser"]["score"], j["wer"]["score"])'
    done
}

classifier() {
    local data_dir="$out/isolated-data" model="$out/classifier"
    if [[ $reuse -eq 0 || ! -e "$data_dir/data.toml" ]]; then
        "$s2s" prepare --task classification --format manifest \
            --train "$out/digits/isolated-train.tsv" --valid "$out/digits/isolated-valid.tsv" \
            --test "$out/digits/isolated.tsv" --sample-rate 8000 --n-mels 40 \
            --out "$data_dir" --force > "$out/prepare-isolated.txt" 2>&1
    fi
    train "$data_dir" "$here/../configs/classification/fsdd-digits.toml" "$model"
    local steps
    steps=$(tail -n 1 "$model/metrics.jsonl" | json_get 'j["step"]')
    "$s2s" translate --model "$model" --batch-size 32 \
        --input "$out/hyp/isolated.wav.txt" --output "$out/hyp/isolated.classifier.txt"
    echo "Isolated digits as N vs 1 classification: the speech classifier trained on recordings 10-49"
    echo "(validation 5-9), labelling the $(grep -c . "$out/hyp/isolated.ref.txt") test recordings 0-4."
    echo
    printf '| system | accuracy %% | macro-F1 %% |\n|---|---:|---:|\n'
    "$s2s" eval --hyp "$out/hyp/isolated.classifier.txt" --ref "$out/hyp/isolated.ref.txt" --metrics accuracy,f1 --json \
        | json_get '"| speech-classifier ('"$(cat "$model/trained_s")"' s, '"$steps"' steps) | %.2f | %.2f |" % (j["accuracy"]["score"], j["f1"]["score"])'
}

{
    echo "Measured $(date -u '+%Y-%m-%d %H:%M') UTC on $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores."
    echo
    if [[ "$only" != classifier ]]; then recogniser; echo; fi
    if [[ "$only" != asr ]]; then classifier; fi
} | tee "$out/results.md"
