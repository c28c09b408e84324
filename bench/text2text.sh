#!/usr/bin/env bash
# Summarisation and dialogue (issue 30) on ../shared/data: AESLC (email -> subject line),
# SciTLDR-A (abstract -> TLDR) and CamRest676 (dialogue so far -> system turn). Each corpus is
# turned into parallel files by `s2s data pairs`, prepared with a joint BPE, trained with its
# recipe (configs/summarisation/, configs/dialogue/) within the recipe's time budget, once as
# it is and once copying from the source (`[model] copy = true`), decoded greedily and with
# beam 5, and scored beside its simple baseline measured the same way:
# ROUGE-1/2/L F (rouge-score's stemmed defaults, best of the references) against Lead-1 for
# the summaries, sacreBLEU and chrF against the retrieval baseline (the response of the most
# similar training history) for the dialogue. Writes OUT/results.md.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: bench/text2text.sh [options]

  --s2s BIN       the s2s binary (default: $S2S, else target/release/s2s)
  --data DIR      the shared data folder (default: ../shared/data next to the repository)
  --out DIR       output folder (default: runs/text2text)
  --tasks LIST    comma-separated, of aeslc,scitldr,camrest676 (default: all three)
  --minutes M     override every recipe's training budget
  --variants LIST comma-separated, of plain,copy (default: both)
  --train-only    stop after training (score later with --reuse)
  --reuse         keep a task's data and trained model when OUT/TASK/model has one: score only
  -h, --help      this text
USAGE
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
s2s="${S2S:-$here/../target/release/s2s}"
data="$here/../../shared/data"
out="runs/text2text"
tasks="aeslc,scitldr,camrest676"
minutes=""
train_only=0
reuse=0
variants="plain,copy"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --s2s) s2s="$2"; shift 2 ;;
        --data) data="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --tasks) tasks="$2"; shift 2 ;;
        --minutes) minutes="$2"; shift 2 ;;
        --variants) variants="$2"; shift 2 ;;
        --train-only) train_only=1; shift ;;
        --reuse) reuse=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "text2text.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done

json_get() {  # json_get PYTHON_EXPR < JSON: print the expression of `j`
    python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"
}

# The columns of one row, from `s2s eval --json` of HYP against the task's references.
score() {
    local task="$1" hyp="$2" refs=()
    for f in "$out/$task/text"/test.tgt "$out/$task/text"/test.tgt.*; do
        [[ -e "$f" ]] && refs+=(--ref "$f")
    done
    if [[ "$task" == camrest676 ]]; then
        "$s2s" eval --hyp "$hyp" "${refs[@]}" --metrics bleu,chrf --json \
            | json_get '"%.2f | %.2f" % (j["bleu"]["score"], j["chrf"]["score"])'
    else
        "$s2s" eval --hyp "$hyp" "${refs[@]}" --metrics rouge --json \
            | json_get '" | ".join("%.2f" % j["rouge"][k]["fmeasure"] for k in ("rouge1", "rouge2", "rougeL"))'
    fi
}

# train TASK VARIANT CONFIG: train one variant into OUT/TASK/model (plain) or model-copy
train() {
    local dir="$out/$1" model="$out/$1/model" config="$3"
    if [[ "$2" == copy ]]; then
        model="$dir/model-copy"
        config="$dir/copy.toml"
        sed '/^\[model\]/a copy = true' "$3" > "$config"
    fi
    if [[ $reuse -eq 1 && -e "$model/config.toml" ]]; then
        return 0
    fi
    local args=(--config "$config" --data "$dir/data" --out "$model" --force)
    [[ -n "$minutes" ]] && args+=(--max-minutes "$minutes")
    local start=$(date +%s)
    "$s2s" train "${args[@]}" > "$dir/train-$2.txt" 2>&1
    echo $(( $(date +%s) - start )) > "$model/trained_s"
}

# run TASK CONFIG VOCAB [PREPARE OPTIONS...]
run() {
    local task="$1" config="$2" vocab="$3" dir="$out/$1"
    mkdir -p "$dir/hyp"
    IFS=, read -ra kinds <<< "$variants"
    if [[ $reuse -eq 0 || ! -e "$dir/data/data.toml" ]]; then
        "$s2s" data pairs "$task" --from "$data/$task" --out "$dir/text" > "$dir/pairs.txt"
        "$s2s" prepare --train-src "$dir/text/train.src" --train-tgt "$dir/text/train.tgt" \
            --valid-src "$dir/text/valid.src" --valid-tgt "$dir/text/valid.tgt" \
            --tokenizer bpe --joint --vocab-size "$vocab" --max-len 0 "${@:4}" \
            --out "$dir/data" --force > "$dir/prepare.txt" 2>&1
    fi
    for kind in "${kinds[@]}"; do
        train "$task" "$kind" "$config"
    done
    [[ $train_only -eq 1 ]] && return 0

    if [[ "$task" == camrest676 ]]; then
        "$s2s" baseline retrieval --train-src "$dir/text/train.src" \
            --train-tgt "$dir/text/train.tgt" --input "$dir/text/test.src" \
            --output "$dir/hyp/baseline.txt"
        echo "| $task | retrieval | $(score "$task" "$dir/hyp/baseline.txt") |"
    else
        "$s2s" baseline lead --sentences 1 --input "$dir/text/test.src" \
            --output "$dir/hyp/baseline.txt"
        echo "| $task | Lead-1 | $(score "$task" "$dir/hyp/baseline.txt") |"
    fi
    for kind in "${kinds[@]}"; do
        local model="$dir/model" name="Transformer"
        [[ "$kind" == copy ]] && model="$dir/model-copy" && name="Transformer + copy"
        local steps
        steps=$(tail -n 1 "$model/metrics.jsonl" | json_get 'j["step"]')
        # Summaries: no repeated trigram and at most 40 tokens (docs/benchmarks.md measured
        # both ways on SciTLDR); dialogue replies as the search defaults have them.
        local decoding=()
        [[ "$task" != camrest676 ]] && decoding=(--no-repeat-ngram 3 --max-len 40)
        for search in greedy beam; do
            "$s2s" translate --model "$model" --search "$search" --batch-size 32 "${decoding[@]}" \
                --input "$dir/text/test.src" --output "$dir/hyp/$kind-$search.txt"
            local shown="$search"
            [[ "$search" == beam ]] && shown="beam 5"
            echo "| $task | $name ($(cat "$model/trained_s") s, $steps steps), $shown | $(score "$task" "$dir/hyp/$kind-$search.txt") |"
        done
    done
}

mkdir -p "$out"
{
    echo "Measured $(date -u '+%Y-%m-%d %H:%M') UTC on $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores."
    IFS=, read -ra list <<< "$tasks"
    for task in "${list[@]}"; do
        case "$task" in
            aeslc)
                [[ $train_only -eq 0 ]] && printf '\n| task | system | ROUGE-1 F | ROUGE-2 F | ROUGE-L F |\n|---|---|---:|---:|---:|\n'
                run aeslc "$here/../configs/summarisation/aeslc.toml" 8000 --max-src-tokens 64 ;;
            scitldr)
                [[ $train_only -eq 0 ]] && printf '\n| task | system | ROUGE-1 F | ROUGE-2 F | ROUGE-L F |\n|---|---|---:|---:|---:|\n'
                run scitldr "$here/../configs/summarisation/scitldr.toml" 4000 ;;
            camrest676)
                [[ $train_only -eq 0 ]] && printf '\n| task | system | BLEU | chrF |\n|---|---|---:|---:|\n'
                run camrest676 "$here/../configs/dialogue/camrest676.toml" 2000 ;;
            *) echo "text2text.sh: unknown task '$task'" >&2; exit 2 ;;
        esac
    done
} | tee "$out/results.md"
