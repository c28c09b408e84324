#!/usr/bin/env python3
"""The CTranslate2 side of bench/ct2.sh: one minimal decoding process, timed from outside.

    ct2_decode.py MODEL_DIR IN OUT [--beam K] [--batch B] [--batch-type examples|tokens]
        [--max-len N] [--alpha A] [--patience P] [--threads T] [--suppress-pad]
    ct2_decode.py --import-only

IN holds one source sentence per line, already split into the model's pieces (space-separated,
</s> included, as MarianTokenizer gives them); OUT gets one output per line, its pieces
space-separated, without </s>. Nothing but the standard library and ctranslate2 is imported, so
the process's peak RSS is the interpreter, CTranslate2 and the model; tokenising and
detokenising happen in bench/ct2.sh, outside the timed process (s2s does both inside its own).

On stderr, one JSON line: seconds spent importing ctranslate2, loading the model, reading the
input, translating and writing, and the number of output tokens. `--import-only` stops after
the import (the baseline RSS of the interpreter and the library).

Search settings (`search_options`, which bench/marian_live.py uses too), to rank like s2s: max_decoding_length = N
(at most N tokens before </s>), min_decoding_length = 0 (an empty output is allowed, as in s2s),
max_input_length = 0 (no truncation), disable_unk = False; beam search with length_penalty = A
(score / L^A, L counting </s>, as s2s's `--length-penalty alpha`) and the given patience (1,
CTranslate2's default, stops a sentence once K hypotheses have finished; N + 2 never stops
early, which is s2s's exact result); K = 1 is argmax to the first </s> (s2s `--search greedy
--length-penalty none`). The examples are sorted by length and cut into batches of B sentences
(batch type examples) or of at most B source tokens (tokens), by CTranslate2 itself.
"""

import time

t_start = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

import ctranslate2  # noqa: E402

t_import = time.perf_counter()


def search_options(beam, alpha, max_len, patience, batch, batch_type="examples", suppress=None):
    """translate_batch's options that make CTranslate2 rank like s2s (see the docstring); shared
    with bench/marian_live.py."""
    kw = dict(
        max_batch_size=batch,
        batch_type=batch_type,
        beam_size=beam,
        patience=patience,
        length_penalty=alpha if beam > 1 else 0.0,
        max_decoding_length=max_len,
        min_decoding_length=0,
        max_input_length=0,
        disable_unk=False,
        return_end_token=False,
        num_hypotheses=1,
    )
    if suppress:
        kw["suppress_sequences"] = suppress
    return kw


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?")
    ap.add_argument("input", nargs="?")
    ap.add_argument("output", nargs="?")
    ap.add_argument("--beam", type=int, default=1)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--batch-type", choices=["examples", "tokens"], default="examples")
    ap.add_argument("--max-len", type=int, default=100)
    ap.add_argument("--alpha", type=float, default=0.75)
    ap.add_argument("--patience", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--suppress-pad", action="store_true",
                    help="ban <pad> (for a conversion that keeps the <pad> row)")
    ap.add_argument("--import-only", action="store_true")
    a = ap.parse_args()
    info = {"import_s": round(t_import - t_start, 4)}
    if a.import_only:
        print(json.dumps(info), file=sys.stderr)
        return
    if not (a.model and a.input and a.output):
        ap.error("MODEL_DIR, IN and OUT are required")

    t0 = time.perf_counter()
    tr = ctranslate2.Translator(a.model, device="cpu", intra_threads=a.threads, inter_threads=1)
    t1 = time.perf_counter()
    with open(a.input, encoding="utf-8") as f:
        src = [line.split() for line in f.read().splitlines()]
    kw = search_options(a.beam, a.alpha, a.max_len, a.patience, a.batch, a.batch_type,
                        [["<pad>"]] if a.suppress_pad else None)
    t2 = time.perf_counter()
    results = tr.translate_batch(src, **kw)
    t3 = time.perf_counter()
    ntok = 0
    with open(a.output, "w", encoding="utf-8") as f:
        for r in results:
            toks = r.hypotheses[0] if r.hypotheses else []
            ntok += len(toks)
            f.write(" ".join(toks) + "\n")
    t4 = time.perf_counter()
    info.update(load_s=round(t1 - t0, 4), read_s=round(t2 - t1, 4),
                translate_s=round(t3 - t2, 4), write_s=round(t4 - t3, 4), tokens=ntok)
    print(json.dumps(info), file=sys.stderr)


if __name__ == "__main__":
    main()
