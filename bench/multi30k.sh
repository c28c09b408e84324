#!/usr/bin/env bash
# Multi30k de->en benchmark table: get the data, prepare it once, train each selected model under
# its time budget, translate test2016 greedily and with beam 5 (its length penalty chosen on val),
# score with sacreBLEU (cased, 13a) and tokenised lower-cased BLEU, and write a markdown table
# plus a training-curve SVG per model.
# See docs/benchmarks.md.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: bench/multi30k.sh [options]

  --s2s BIN           the s2s binary (default: $S2S, else target/release/s2s)
  --from DIR          copy Multi30k from DIR instead of downloading it (plain or .gz files)
  --out DIR           output folder (default: runs/multi30k)
  --models "A B ..."  models to run, from: lstm gru-cho rnnsearch convs2s transformer (default: all)
  --scale F           multiply each model's time budget by F (default 1; budgets: 60 min for the
                      RNN and ConvS2S models, 45 min for the Transformer)
  --minutes M         train every model for M minutes instead (overrides --scale)
  --slice N           smoke run: first N training sentences, first max(20, N/5) of val and test
  --tiny              train the -tiny variant of each preset (with the config's [train] options)
  --average N         also keep the last N checkpoints (train --keep-last N), average them with
                      `s2s average` and score that model as a second row, MODEL+avgN
  --alphas "A B ..."  beam 5's length-penalty exponents (score = logprob / L^A) to try on val;
                      test is decoded with the one of the best val sacreBLEU (default:
                      "0.5 0.75 1 1.25"; one value skips the search)
  --configs DIR       config folder (default: configs/multi30k next to this script)
  -h, --help          this text

Writes OUT/results.md (the table), OUT/results.jsonl (one JSON object per model), OUT/curves/
MODEL.svg (validation BLEU and loss against minutes), OUT/models/MODEL (MODEL_DIRs), OUT/hyp/
(translations) and OUT/logs/. Rows of models run earlier into the same OUT are kept.
RAYON_NUM_THREADS=K in the environment limits each run to K threads (rows trained side by side).
EOF
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
s2s="${S2S:-}"
from=""
out="runs/multi30k"
models="lstm gru-cho rnnsearch convs2s transformer"
scale="1"
minutes=""
slice=""
tiny=0
average=""
alphas="0.5 0.75 1 1.25"
configs="$here/../configs/multi30k"

while [[ $# -gt 0 ]]; do
    case "$1" in
        --s2s) s2s="$2"; shift 2 ;;
        --from) from="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --models) models="$2"; shift 2 ;;
        --scale) scale="$2"; shift 2 ;;
        --minutes) minutes="$2"; shift 2 ;;
        --slice) slice="$2"; shift 2 ;;
        --tiny) tiny=1; shift ;;
        --average) average="$2"; shift 2 ;;
        --alphas) alphas="$2"; shift 2 ;;
        --configs) configs="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "multi30k.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done

die() { echo "multi30k.sh: $*" >&2; exit 1; }

if [[ -z "$s2s" ]]; then
    s2s="${CARGO_TARGET_DIR:-$here/../target}/release/s2s"
    [[ -x "$s2s" ]] || die "no s2s binary at $s2s: build it with 'cargo build --release' or pass --s2s BIN"
fi
[[ -x "$s2s" ]] || command -v "$s2s" >/dev/null || die "--s2s $s2s is not an executable"
[[ -z "$slice" || "$slice" =~ ^[1-9][0-9]*$ ]] || die "--slice wants a positive number of sentences, got '$slice'"
[[ -z "$average" || "$average" =~ ^[1-9][0-9]*$ ]] || die "--average wants a positive number of checkpoints, got '$average'"
for a in $alphas; do
    [[ "$a" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--alphas wants numbers such as \"0.5 0.75 1\", got '$a'"
done
[[ -n "${alphas// /}" ]] || die "--alphas wants at least one number"

# The base budget in minutes of each model, and its preset (for --tiny).
budget() { case "$1" in transformer) echo 45 ;; lstm|gru-cho|rnnsearch|convs2s) echo 60 ;; *) return 1 ;; esac; }
for m in $models; do
    budget "$m" >/dev/null || die "unknown model '$m'; choose from: lstm gru-cho rnnsearch convs2s transformer"
    [[ -f "$configs/$m.toml" ]] || die "$configs/$m.toml is missing"
done

mkdir -p "$out"/{data,models,hyp,curves,logs,rows}
runner_cmd="bench/multi30k.sh --models \"$models\""
[[ -n "$minutes" ]] && runner_cmd+=" --minutes $minutes"
[[ "$scale" != "1" && -z "$minutes" ]] && runner_cmd+=" --scale $scale"
[[ -n "$slice" ]] && runner_cmd+=" --slice $slice"
[[ "$tiny" == 1 ]] && runner_cmd+=" --tiny"
[[ -n "$average" ]] && runner_cmd+=" --average $average"
[[ "$alphas" != "0.5 0.75 1 1.25" ]] && runner_cmd+=" --alphas \"$alphas\""

# 1. The corpus, verified by sha256.
raw="$out/data/raw"
if [[ -n "$from" ]]; then
    "$s2s" data get multi30k --out "$raw" --from "$from" >/dev/null
else
    "$s2s" data get multi30k --out "$raw" >/dev/null
fi

corpus="$raw"
if [[ -n "$slice" ]]; then
    corpus="$out/data/slice-$slice"
    mkdir -p "$corpus"
    small=$(( slice / 5 > 20 ? slice / 5 : 20 ))
    for l in de en; do
        head -n "$slice" "$raw/train.$l" >"$corpus/train.$l"
        head -n "$small" "$raw/val.$l" >"$corpus/val.$l"
        head -n "$small" "$raw/test2016.$l" >"$corpus/test2016.$l"
    done
fi

# 2. Prepare once: joint BPE with 8000 types, case kept (BLEU has a lower-cased variant).
prepared="$out/data/prepared"
prepare_args=(prepare --train-src "$corpus/train.de" --train-tgt "$corpus/train.en"
    --valid-src "$corpus/val.de" --valid-tgt "$corpus/val.en"
    --out "$prepared" --tokenizer bpe --joint --vocab-size 8000)
stamp="${prepare_args[*]}"
if [[ -f "$prepared/data.toml" && -f "$out/data/prepared.cmd" && "$(cat "$out/data/prepared.cmd")" == "$stamp" ]]; then
    echo "data: reusing $prepared" >&2
else
    rm -rf "$prepared"
    "$s2s" "${prepare_args[@]}" >"$out/logs/prepare.log"
    printf '%s' "$stamp" >"$out/data/prepared.cmd"
fi

# The first number after "score" in `s2s eval --json` (BLEU only is asked for).
bleu_of() { grep -o '"score": *[0-9.eE+-]*' "$1" | head -n 1 | sed 's/.*: *//'; }

today="$(date -u +%Y-%m-%d)"
threads="${RAYON_NUM_THREADS:-all}"

# The length-penalty exponent of --alphas whose beam-5 translation of val has the highest
# sacreBLEU (the first of equals), chosen by `s2s tune`, which keeps it and every score in
# MODEL_DIR/decoding.toml; sets best_alpha and best_valid.
choose_alpha() {
    local name="$1" dir="$2" tuned
    set -- $alphas
    best_alpha="$1" best_valid=null
    [[ $# -gt 1 ]] || return 0
    "$s2s" tune --model "$dir" --data "$prepared" --beam 5 --alphas "$(echo $alphas | tr ' ' ,)" \
        2>"$out/logs/$name.tune.log" >/dev/null || die "s2s tune failed: see $out/logs/$name.tune.log"
    tuned="$dir/decoding.toml"
    best_alpha=$(sed -n 's/^alpha = //p' "$tuned")
    # tried = [[0.5, 38.1], [0.75, 39.2], ...]: the score paired with the chosen alpha.
    best_valid=$(sed -n 's/^tried = //p' "$tuned" | grep -o '\[[0-9.eE+-]*, [0-9.eE+-]*\]' | tr -d '[]' |
        awk -F', ' -v a="$best_alpha" '$1 + 0 == a + 0 { print $2; exit }')
    [[ -n "$best_alpha" && -n "$best_valid" ]] || die "no alpha and score in $tuned"
    echo "$name: alpha $best_alpha chosen on val (sacreBLEU $best_valid; $out/logs/$name.tune.log)" >&2
}

# Translates test2016 with MODEL_DIR (greedy, then beam 5 with the alpha chosen on val), scores
# both and writes the row NAME: rows/NAME.md (the table's line) and rows/NAME.json.
# Uses: params, train_min, mins and cmd of the model being run.
decode_and_score() {
    local name="$1" dir="$2" search hyp d0 d1 best_alpha best_valid
    local -A score=()
    choose_alpha "$name" "$dir"
    for search in greedy beam5; do
        hyp="$out/hyp/$name.$search.en"
        if [[ "$search" == greedy ]]; then
            s_args=(--search greedy)
        else
            s_args=(--search beam --beam 5 --alpha "$best_alpha")
        fi
        d0=$(date +%s.%N)
        "$s2s" translate --model "$dir" --input "$corpus/test2016.de" --output "$hyp" "${s_args[@]}"
        d1=$(date +%s.%N)
        score[$search.decode_sec]=$(awk -v a="$d0" -v b="$d1" 'BEGIN { printf "%.1f", b - a }')
        "$s2s" eval --hyp "$hyp" --ref "$corpus/test2016.en" --metrics bleu --json >"$hyp.sacrebleu.json"
        "$s2s" eval --hyp "$hyp" --ref "$corpus/test2016.en" --metrics bleu --tokenize 13a --lowercase --json >"$hyp.lc.json"
        score[$search.sacre]=$(bleu_of "$hyp.sacrebleu.json")
        score[$search.lc]=$(bleu_of "$hyp.lc.json")
    done
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | `%s` | %s |\n' \
        "$name" "$params" "$train_min" \
        "${score[greedy.sacre]}" "${score[greedy.lc]}" "${score[beam5.sacre]}" "${score[beam5.lc]}" \
        "$best_alpha" "$cmd" "$today" >"$out/rows/$name.md"
    printf '{"model": "%s", "parameters": %s, "train_minutes": %s, "budget_minutes": %s, "threads": "%s", "greedy": {"sacrebleu": %s, "bleu_lc_13a": %s, "decode_sec": %s}, "beam5": {"sacrebleu": %s, "bleu_lc_13a": %s, "decode_sec": %s, "alpha": %s, "valid_sacrebleu": %s}, "date": "%s", "slice": %s}\n' \
        "$name" "$params" "$train_min" "$mins" "$threads" \
        "${score[greedy.sacre]}" "${score[greedy.lc]}" "${score[greedy.decode_sec]}" \
        "${score[beam5.sacre]}" "${score[beam5.lc]}" "${score[beam5.decode_sec]}" \
        "$best_alpha" "$best_valid" "$today" "${slice:-null}" >"$out/rows/$name.json"
}

for m in $models; do
    model_dir="$out/models/$m"
    if [[ -n "$minutes" ]]; then
        mins="$minutes"
    else
        mins="$(awk -v b="$(budget "$m")" -v s="$scale" 'BEGIN { printf "%g", b * s }')"
    fi
    config="$configs/$m.toml"
    if [[ "$tiny" == 1 ]]; then
        # The preset's -tiny variant, with the config's [train] section.
        arch="$(sed -n 's/^arch *= *"\(.*\)"/\1/p' "$config")"
        config="$out/data/$m-tiny.toml"
        # transformer-small -> transformer-tiny, rnnsearch -> rnnsearch-tiny
        { echo "arch = \"${arch%-small}-tiny\""; echo; sed -n '/^\[train\]/,$p' "$configs/$m.toml"; } >"$config"
    fi
    train_args=(train --data "$prepared" --config "$config" --out "$model_dir" --max-minutes "$mins" --force)
    [[ -n "$average" ]] && train_args+=(--keep-last "$average")
    echo "== $m: s2s ${train_args[*]}" >&2
    t0=$(date +%s.%N)
    "$s2s" "${train_args[@]}" | tee "$out/logs/$m.train.log"
    t1=$(date +%s.%N)
    train_min=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 60 }')
    params=$(grep -o '"parameters": *[0-9]*' "$model_dir/model.json" | sed 's/.*: *//')

    "$s2s" plot "$model_dir" --out "$out/models/$m/plots" >/dev/null
    cp "$out/models/$m/plots/curves.svg" "$out/curves/$m.svg"

    cmd="s2s ${train_args[*]}"
    [[ -n "${RAYON_NUM_THREADS:-}" ]] && cmd="RAYON_NUM_THREADS=$RAYON_NUM_THREADS $cmd"
    decode_and_score "$m" "$model_dir"
    if [[ -n "$average" ]]; then
        # A short run may have kept fewer checkpoints than asked for: average what is there.
        kept=1
        if [[ -d "$model_dir/checkpoints" ]]; then
            kept=$(( 1 + $(find "$model_dir/checkpoints" -mindepth 1 -maxdepth 1 -name 'step-*' | wc -l) ))
        fi
        n=$(( kept < average ? kept : average ))
        avg_dir="$out/models/$m+avg$average"
        "$s2s" average --model "$model_dir" --last "$n" --out "$avg_dir" --force
        cmd+="; s2s average --model $model_dir --last $n --out $avg_dir"
        decode_and_score "$m+avg$average" "$avg_dir"
    fi
done

# 3. The table, from every model run into this OUT so far.
{
    echo "# Multi30k de->en, test2016"
    echo
    echo "Produced by \`$runner_cmd\`. BLEU: sacreBLEU (cased, 13a) and tokenised lower-cased"
    echo "BLEU (13a, --lowercase), computed by \`s2s eval\`. Training minutes are wall-clock,"
    echo "including validations. Beam 5 decodes test with the length-penalty exponent alpha"
    echo "(score = logprob / L^alpha) whose val translation had the highest sacreBLEU (\`s2s tune\`,"
    echo "which keeps it in the model's decoding.toml)."
    if [[ -n "$slice" ]]; then
        echo
        echo "**Smoke run on a slice of $slice training sentences: the numbers mean nothing.**"
    fi
    echo
    echo "| model | parameters | train min | greedy sacreBLEU | greedy BLEU lc-tok | beam-5 sacreBLEU | beam-5 BLEU lc-tok | beam-5 alpha | command | date |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"
    for m in lstm gru-cho rnnsearch convs2s transformer; do
        for row in "$out/rows/$m.md" "$out/rows/$m+avg"*.md; do
            if [[ -f "$row" ]]; then cat "$row"; fi
        done
    done
} >"$out/results.md"
cat "$out"/rows/*.json >"$out/results.jsonl"
cat "$out/results.md"
