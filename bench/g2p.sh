#!/usr/bin/env bash
# Grapheme-to-phoneme on CMUdict (issue 28): split the dictionary by the word lists of
# ../shared/data/cmudict, prepare letters -> phones (char and word tokenizers), train
# configs/g2p/transformer.toml under its time budget, decode the test words greedily and with
# beam 5, and score SER (the papers' word error rate: no reference pronunciation matched) and PER
# (phoneme edits against the closest pronunciation). Writes OUT/results.md.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: bench/g2p.sh [options]

  --s2s BIN       the s2s binary (default: $S2S, else target/release/s2s)
  --data DIR      the CMUdict folder (default: ../shared/data/cmudict next to the repository)
  --out DIR       output folder (default: runs/g2p)
  --minutes M     training budget in minutes (default: the config's, 60)
  --config FILE   (default: configs/g2p/transformer.toml)
  --average N     also keep the last N checkpoints (train --keep-last N), average them with
                  `s2s average` and score that model too, as rows 'SEARCH, average of N'
  -h, --help      this text
USAGE
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
s2s="${S2S:-$here/../target/release/s2s}"
data="$here/../../shared/data/cmudict"
out="runs/g2p"
minutes=""
config="$here/../configs/g2p/transformer.toml"
average=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --s2s) s2s="$2"; shift 2 ;;
        --data) data="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --minutes) minutes="$2"; shift 2 ;;
        --config) config="$2"; shift 2 ;;
        --average) average="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "g2p.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done

if [[ -n "$average" && ! "$average" =~ ^[1-9][0-9]*$ ]]; then
    echo "g2p.sh: --average wants a positive number of checkpoints, got '$average'" >&2
    exit 2
fi

mkdir -p "$out/logs" "$out/hyp"
"$s2s" data g2p --dict "$data/cmudict.dict" --train-words "$data/split.train_words" \
    --test-words "$data/split.test_words" --out "$out/text" > "$out/logs/files.txt"
"$s2s" prepare --train-src "$out/text/train.src" --train-tgt "$out/text/train.tgt" \
    --valid-src "$out/text/valid.src" --valid-tgt "$out/text/valid.tgt" \
    --src-tokenizer char --tgt-tokenizer word --vocab-size 1000 --max-len 0 \
    --out "$out/data" --force 2> "$out/logs/prepare.txt"
train_args=(--config "$config" --data "$out/data" --out "$out/model" --force)
[[ -n "$minutes" ]] && train_args+=(--max-minutes "$minutes")
[[ -n "$average" ]] && train_args+=(--keep-last "$average")
start=$(date +%s)
"$s2s" train "${train_args[@]}" 2> "$out/logs/train.txt"
trained_s=$(( $(date +%s) - start ))
models=("$out/model")
names=("")
if [[ -n "$average" ]]; then
    # A short run may have kept fewer checkpoints than asked for: average what is there.
    kept=$(( 1 + $(find "$out/model/checkpoints" -mindepth 1 -maxdepth 1 -name 'step-*' 2>/dev/null | wc -l) ))
    n=$(( kept < average ? kept : average ))
    "$s2s" average --model "$out/model" --last "$n" --out "$out/model+avg" --force >&2
    models+=("$out/model+avg")
    names+=(", average of $n")
fi

refs=()
for f in "$out/text"/test.tgt "$out/text"/test.tgt.*; do refs+=(--ref "$f"); done
{
    echo "Measured $(date -u '+%Y-%m-%d %H:%M') UTC on $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores;"
    steps=$(tail -n 1 "$out/model/metrics.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])')
    echo "trained $trained_s s ($steps steps)."
    echo
    echo "| search | SER % (word error rate) | PER % | decode s |"
    echo "|---|---:|---:|---:|"
    for i in "${!models[@]}"; do
    for search in greedy beam; do
        hyp="$out/hyp/$search${names[$i]:+-avg}.txt"
        t0=$(date +%s%N)
        "$s2s" translate --model "${models[$i]}" --search "$search" --batch-size 64 \
            --input "$out/text/test.src" --output "$hyp"
        t1=$(date +%s%N)
        json=$("$s2s" eval --hyp "$hyp" "${refs[@]}" --metrics ser,per --json)
        ser=$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ser"]["score"])')
        per=$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["per"]["score"])')
        ds=$(( (t1 - t0) / 100000000 ))  # tenths of a second
        printf '| %s%s | %s | %s | %d.%d |\n' "$search" "${names[$i]}" "$ser" "$per" $((ds / 10)) $((ds % 10))
    done
    done
} | tee "$out/results.md"
