#!/usr/bin/env bash
# Open-vocabulary speech recognition on SYNTHETIC speech (issue 29): English sentences of the
# embedded Tatoeba corpus (data/tatoeba-cmn-eng/*.en) spoken by espeak-ng (Debian package
# espeak-ng) in six voices (American, British, Scottish and Caribbean English, two of them with
# espeak-ng's female and male variants) and four speeds, drawn per sentence from a seeded
# generator. Training sentences come from train.en, validation and test sentences from
# valid.en and test.en, so no test sentence is heard in training; the voices are the same in
# every split. The recogniser is configs/asr/espeak.toml (the FSDD recipe's speech Transformer
# on 80 log-mel bins at 16 kHz, 500 BPE pieces); the test set is transcribed greedily, with beam
# 5 and by the CTC head alone, and scored by WER and CER. A machine voice is far easier than
# people: these numbers say the pipeline learns an open vocabulary, not how it would do on real
# speech. Writes OUT/results.md.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: bench/espeak.sh [options]

  --s2s BIN       the s2s binary (default: $S2S, else target/release/s2s)
  --out DIR       output folder (default: runs/espeak)
  --train N       training sentences (default 20000: the first N of train.en with 3-12 words)
  --valid N       validation sentences (default 300)
  --test N        test sentences (default 500)
  --minutes M     override the recipe's training budget (30)
  --reuse         keep the audio, data and a trained model in OUT: score only
  --data-only     stop after speaking and preparing the data
  -h, --help      this text

Needs espeak-ng (apt-get install espeak-ng).
USAGE
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
s2s="${S2S:-$here/../target/release/s2s}"
corpus="$here/../data/tatoeba-cmn-eng"
out="runs/espeak"
n_train=20000
n_valid=300
n_test=500
minutes=""
reuse=0
data_only=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --s2s) s2s="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --train) n_train="$2"; shift 2 ;;
        --valid) n_valid="$2"; shift 2 ;;
        --test) n_test="$2"; shift 2 ;;
        --minutes) minutes="$2"; shift 2 ;;
        --reuse) reuse=1; shift ;;
        --data-only) data_only=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "espeak.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
if ! command -v espeak-ng > /dev/null; then
    echo "espeak.sh: espeak-ng not found; fix: apt-get install espeak-ng" >&2
    exit 1
fi

json_get() {  # json_get PYTHON_EXPR < JSON: print the expression of `j`
    python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"
}

# speak SPLIT N FILE SEED: the first N sentences of FILE with 3-12 words (duplicates dropped),
# each spoken by a voice and speed drawn from SEED (two espeak-ng processes at a time), into
# OUT/audio/SPLIT/NNNNNN.wav with the manifest OUT/audio/SPLIT.tsv.
speak() {
    mkdir -p "$out/audio/$1"
    python3 - "$1" "$2" "$3" "$4" "$out/audio" <<'PY'
import random, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
split, n, path, seed, audio = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
voices = ["en-us", "en-gb", "en-gb-scotland", "en-029", "en-us+f2", "en-gb+m3"]
speeds = [140, 160, 175, 190]
rng = random.Random(seed)
seen, jobs = set(), []
for line in open(path, encoding="utf-8"):
    text = " ".join(line.split())
    if 3 <= len(text.split()) <= 12 and text not in seen:
        seen.add(text)
        jobs.append((f"{split}/{len(jobs):06d}.wav", rng.choice(voices), rng.choice(speeds), text))
    if len(jobs) == n:
        break
def say(job):
    wav, voice, speed, text = job
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", f"{audio}/{wav}", "--", text],
                   check=True)
with ThreadPoolExecutor(2) as pool:
    list(pool.map(say, jobs))
with open(f"{audio}/{split}.tsv", "w", encoding="utf-8") as f:
    f.writelines(f"{wav}\t{text}\n" for wav, _, _, text in jobs)
PY
}

mkdir -p "$out/hyp"
if [[ $reuse -eq 0 || ! -e "$out/data/data.toml" ]]; then
    rm -rf "$out/audio"
    start=$(date +%s)
    speak train "$n_train" "$corpus/train.en" 1
    speak valid "$n_valid" "$corpus/valid.en" 2
    speak test "$n_test" "$corpus/test.en" 3
    echo "spoke $(cat "$out"/audio/*.tsv | wc -l) sentences in $(( $(date +%s) - start )) s" > "$out/speak.txt"
    "$s2s" prepare --task asr --train "$out/audio/train.tsv" --valid "$out/audio/valid.tsv" \
        --test "$out/audio/test.tsv" --sample-rate 16000 --n-mels 80 --tokenizer bpe \
        --vocab-size 500 --out "$out/data" --force > "$out/prepare.txt" 2>&1
fi
[[ $data_only -eq 1 ]] && exit 0
model="$out/model"
if [[ $reuse -eq 0 || ! -e "$model/config.toml" ]]; then
    args=(--config "$here/../configs/asr/espeak.toml" --data "$out/data" --out "$model" --force)
    [[ -n "$minutes" ]] && args+=(--max-minutes "$minutes")
    start=$(date +%s)
    "$s2s" train "${args[@]}" > "$out/train.txt" 2>&1
    echo $(( $(date +%s) - start )) > "$model/trained_s"
fi
audio_dir="$(cd "$out/audio" && pwd)"
cut -f1 "$out/audio/test.tsv" | sed "s|^|$audio_dir/|" > "$out/hyp/test.wav.txt"
cut -f2 "$out/audio/test.tsv" > "$out/hyp/test.ref.txt"
steps=$(tail -n 1 "$model/metrics.jsonl" | json_get 'j["step"]')
{
    echo "Measured $(date -u '+%Y-%m-%d %H:%M') UTC on $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores."
    echo
    echo "$(grep -c . "$out/hyp/test.ref.txt") test sentences of Tatoeba's test.en spoken by espeak-ng (synthetic speech)."
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
} | tee "$out/results.md"
