#!/usr/bin/env python3
"""The Python half of bench/marian_live.sh: decodes with transformers and CTranslate2, scores
every system against the references and against s2s, and writes OUT/summary.md.

Not meant to be run by hand (bench/marian_live.sh exports the model, converts it, runs s2s and
then calls this with the same options); `--help` lists them anyway.

Systems, per setting (`greedy`, and `beamK` when --beam > 1):

  s2s           read from OUT/<setting>.s2s.jsonl (written by the shell script, `--json`)
  hf            transformers MarianMTModel.generate on OUT/hf
  ct2           CTranslate2 on OUT/ct2 (the stock `ct2-transformers-converter` output)
  ct2-padstart  CTranslate2 on OUT/ct2-padstart, converted here so that the decoder starts from
                the <pad> row as transformers and s2s do (see convert_padstart); only when that
                row is not zero (else it is the same model as OUT/ct2), or with --ct2-padstart yes
  ct2-p1        (beam only) the ct2 model (ct2-padstart where present) with patience=1, CT2's
                usual stopping rule, to show what that rule changes
  ct2-int8      the same settings as the ct2 model on an int8 conversion, when OUT/ct2-int8 (or
                OUT/ct2-padstart-int8) exists

How each one is asked to search like s2s (s2s: score = sum of log-probs / L^alpha with L the
number of generated tokens INCLUDING </s>; a sentence stops when no open hypothesis can beat the
k-th finished one, the bound dividing by lp(max_len + 1); <pad> and <bos> never emitted; at
most --max-len tokens before </s>, and a forced </s> (its real log-prob counted) after that):

  max length    s2s `--max-len N --max-len-ratio N` (the ratio limit floor(N * src_len) + 10
                never binds); transformers max_new_tokens = N + 1 (it counts the forced </s>);
                CTranslate2 max_decoding_length = N: its last step (step N - 1) registers every
                remaining beam as finished whether or not it ended in </s>, and a </s> at that
                step is removed from the output, so at most N tokens come out, as with the others.
  length        transformers: length_penalty = alpha, early_stopping="never" (its exact bound
                divides by max_new_tokens^alpha = (N + 1)^alpha, as s2s does); L counts </s>
                (tests/fixtures/marian/README.md). CTranslate2: length_penalty = alpha, score /
                L^alpha with L = len(hypothesis) where the hypothesis keeps its </s>
                (include_eos_in_hypotheses is always true in the Translator;
                `return_end_token` only decides whether the returned tokens show it), so L
                counts </s> too.
  stopping      CTranslate2 has no bound: a sentence stops once beam_size * patience
                hypotheses have finished (like transformers' early_stopping=True);
                `allow_early_exit` (stop when the top beam finishes) is internal and only used
                when length_penalty == 0, which we never pass for beam search. With
                patience = N + 2 no sentence can collect that many (at most beam_size per step,
                N steps), so every sentence runs to the max length and returns the best of all
                finished hypotheses: the same result as s2s's exact bound, which only stops once
                no later hypothesis can win. ct2-p1 shows patience 1 for comparison.
  min length    CTranslate2's min_decoding_length defaults to 1 (</s> banned at the first
                step); 0 is passed, as s2s (--min-len 0) and transformers allow an empty output.
  banned        s2s bans <pad> and <bos>; transformers <pad> by bad_words_ids (the exported
                generation_config's, passed again here). The stock CT2 conversion drops the
                <pad> row from the vocabulary; ct2-padstart keeps it (it is the decoder start)
                and bans it with suppress_sequences=[["<pad>"]]. disable_unk stays False (s2s
                without --ban-unk emits <unk>).
  greedy        s2s `--search greedy --length-penalty none` (s2s greedy is beam search with
                k = 1 under its stopping bound: with alpha > 0 it may go on after the first </s>
                looking for a better-normalised hypothesis; with no penalty it is plain argmax to
                the first </s>); transformers num_beams=1; CTranslate2 beam_size=1 (argmax).
  batches       --batch sentences in file order (s2s --batch-size, transformers padded
                batches); CTranslate2 max_batch_size (it sorts by length first). Batch
                composition can only change float rounding.

What remains different (documented, not fixable by options):

  - Renormalisation: s2s and transformers take log_softmax over the whole vocabulary and then
    skip banned tokens (the other log-probs keep their values); CTranslate2 masks before its
    log_softmax (min length, suppress_sequences) or has no <pad> row at all (stock conversion),
    so its log-probs are renormalised without <pad>: each step's log-prob is higher by
    -log(1 - p(<pad>)). Greedy is unaffected; beam rankings can differ where p(<pad>) is not tiny.
    (For an s2s-trained model the export already drops s2s's own <pad> row, so transformers
    and CTranslate2 both lack it while s2s counts it: the same kind of small shift.)
  - The stock CT2 Marian conversion starts the decoder from a zero embedding
    (spec.start_from_zero_embedding, as Marian C++ does) instead of the <pad> row that
    transformers and s2s use: a different model unless that row is zero. An s2s model's <pad>
    in the export is its trained <bos> row, never zero. ct2-padstart fixes this.
  - Hypotheses that hit the max length: s2s forces </s> and counts its log-prob (L = N + 1),
    transformers forces </s> with log-prob 0 (L = N + 1), CTranslate2 truncates (no </s>, L = N).
    Outputs at the max length are counted in the "at max" column; they can differ legitimately.
  - CTranslate2 translates a source holding no token but specials (an empty line) as an empty
    string without running the model; s2s and transformers decode it.
  - Exact float ties: each breaks them its own way (s2s by token id then beam index).
"""

import argparse
import json
import math
import os
import sys
import time
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import sacrebleu  # noqa: E402
import ctranslate2  # noqa: E402
import transformers  # noqa: E402
from ct2_decode import search_options  # noqa: E402
from transformers import MarianMTModel, MarianTokenizer  # noqa: E402

transformers.utils.logging.disable_progress_bar()

TOL = 1e-4  # score differences below this are float noise between two implementations


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line.replace("\n", " ") + "\n")


def batches(n, size):
    for i in range(0, n, size):
        yield range(i, min(n, i + size))


# ---------------------------------------------------------------------------------------------
# CTranslate2 conversion that keeps the <pad> row as the decoder start


def convert_padstart(hf_dir, out_dir, quantization=None):
    """Converts like `ct2-transformers-converter` but with the decoder starting from the <pad>
    embedding row (transformers' and s2s's decoder start) instead of a zero vector, and with the
    <pad> row kept in the vocabulary and the weights (banned at decoding time instead)."""
    from ctranslate2.converters import transformers as ct2t

    base = ct2t.MarianMTLoader
    bart = ct2t.BartLoader

    class PadStartMarianLoader(base):
        def get_model_spec(self, model):
            model.config.normalize_before = False
            model.config.normalize_embedding = False
            return bart.get_model_spec(self, model)  # no _remove_pad_weights

        def set_config(self, config, model, tokenizer):
            config.eos_token = tokenizer.eos_token
            config.unk_token = tokenizer.unk_token
            config.decoder_start_token = tokenizer.pad_token

        def set_decoder(self, spec, decoder):
            bart.set_decoder(self, spec, decoder)  # start_from_zero_embedding stays False

        def get_vocabulary(self, model, tokenizer):
            return bart.get_vocabulary(self, model, tokenizer)  # keeps <pad>

    saved = ct2t._MODEL_LOADERS.get("MarianConfig")
    ct2t._MODEL_LOADERS["MarianConfig"] = PadStartMarianLoader()
    try:
        ct2t.TransformersConverter(hf_dir).convert(out_dir, quantization=quantization, force=True)
    finally:
        ct2t._MODEL_LOADERS["MarianConfig"] = saved


# ---------------------------------------------------------------------------------------------
# Decoders


class Hf:
    def __init__(self, hf_dir, threads):
        torch.set_num_threads(threads)
        self.tok = MarianTokenizer.from_pretrained(hf_dir)
        self.model = MarianMTModel.from_pretrained(hf_dir).eval()
        cfg = self.model.config
        self.pad = cfg.pad_token_id
        self.eos = cfg.eos_token_id
        self.start = cfg.decoder_start_token_id

    def start_row_is_zero(self):
        row = self.model.get_input_embeddings().weight[self.start]
        return bool(torch.all(row == 0).item())

    def ids_to_text(self, ids):
        return self.tok.decode(ids, skip_special_tokens=True)

    def generate(self, texts, batch, max_len, beam, alpha):
        out = []
        kw = dict(
            max_new_tokens=max_len + 1,  # + the forced </s>
            do_sample=False,
            bad_words_ids=[[self.pad]],
            num_return_sequences=1,
        )
        if beam > 1:
            kw.update(num_beams=beam, length_penalty=alpha, early_stopping="never")
        else:
            kw.update(num_beams=1)
        with torch.inference_mode():
            for idx in batches(len(texts), batch):
                enc = self.tok([texts[i] for i in idx], return_tensors="pt", padding=True)
                seqs = self.model.generate(**enc, **kw)
                for row in seqs.tolist():
                    assert row[0] == self.start, row
                    ids = []
                    for t in row[1:]:
                        if t == self.eos:
                            break
                        ids.append(t)
                    out.append(ids)
        return out

    def teacher_forced(self, items, texts, batch):
        """Sum of log-probs of ids + </s> for each (sentence index, ids), under this model, with
        log_softmax over the whole vocabulary (as s2s and generate do)."""
        res = []
        with torch.inference_mode():
            for idx in batches(len(items), batch):
                part = [items[i] for i in idx]
                enc = self.tok([texts[i] for i, _ in part], return_tensors="pt", padding=True)
                width = max(len(ids) for _, ids in part) + 1
                dec = torch.full((len(part), width), self.pad, dtype=torch.long)
                lab = torch.full((len(part), width), -100, dtype=torch.long)
                for r, (_, ids) in enumerate(part):
                    seq = [self.start] + ids
                    dec[r, : len(seq)] = torch.tensor(seq)
                    lab[r, : len(ids) + 1] = torch.tensor(ids + [self.eos])
                logits = self.model(**enc, decoder_input_ids=dec).logits
                lp = torch.log_softmax(logits.float(), dim=-1)
                mask = lab != -100
                got = lp.gather(-1, lab.clamp(min=0).unsqueeze(-1)).squeeze(-1) * mask
                res.extend(got.sum(-1).tolist())
        return res


class Ct2:
    def __init__(self, path, threads, tok, suppress_pad):
        self.tr = ctranslate2.Translator(path, device="cpu", intra_threads=threads, inter_threads=1)
        self.tok = tok
        self.suppress = [[tok.pad_token]] if suppress_pad else None

    def translate(self, texts, batch, max_len, beam, alpha, patience):
        src = [self.tok.convert_ids_to_tokens(self.tok(t)["input_ids"]) for t in texts]
        kw = search_options(beam, alpha, max_len, patience, batch, suppress=self.suppress)
        results = self.tr.translate_batch(src, **kw)
        out = []
        for r in results:
            toks = r.hypotheses[0]
            ids = self.tok.convert_tokens_to_ids(toks)
            out.append(ids)
        return out


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--alpha", type=float, default=0.75)
    ap.add_argument("--max-len", type=int, default=100)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bleu-tokenize", default="13a")
    ap.add_argument("--target-lang", default="")
    ap.add_argument("--ct2-padstart", choices=["auto", "yes", "no"], default="auto")
    ap.add_argument("--examples", type=int, default=3)
    ap.add_argument("--model", default="", help="MODEL_DIR, for the summary")
    ap.add_argument("--s2s", default="", help="s2s binary, for the summary")
    a = ap.parse_args()

    out = a.out
    hf_dir = os.path.join(out, "hf")
    src = read_lines(a.src)
    ref = read_lines(a.ref)
    if len(src) != len(ref):
        sys.exit(f"{a.src} has {len(src)} lines but {a.ref} has {len(ref)}")
    tag = a.target_lang.strip()
    if tag and not tag.startswith(">>"):
        tag = f">>{tag}<<"
    texts = [f"{tag} {s}" if tag else s for s in src]
    n = len(src)
    N = a.max_len
    times = {}
    tpath = os.path.join(out, "times.tsv")
    if os.path.exists(tpath):
        for line in read_lines(tpath):
            k, v = line.split("\t")
            times[k] = float(v)

    hf = Hf(hf_dir, a.threads)
    tok = hf.tok
    settings = [("greedy", 1)] + ([(f"beam{a.beam}", a.beam)] if a.beam > 1 else [])

    # The CT2 models to run.
    zero_start = hf.start_row_is_zero()
    want_padstart = a.ct2_padstart == "yes" or (a.ct2_padstart == "auto" and not zero_start)
    ct2_models = [("ct2", os.path.join(out, "ct2"), False)]
    if want_padstart:
        ps = os.path.join(out, "ct2-padstart")
        t0 = time.perf_counter()
        convert_padstart(hf_dir, ps)
        if os.path.isdir(os.path.join(out, "ct2-int8")):
            convert_padstart(hf_dir, ps + "-int8", quantization="int8")
        print(f"converted {ps} (decoder starts from the <pad> row) in "
              f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
        ct2_models.append(("ct2-padstart", ps, True))
    main_ct2 = ct2_models[-1]  # the one that matches transformers' model
    int8_dir = main_ct2[1] + "-int8"
    if os.path.isdir(int8_dir):
        ct2_models.append(("ct2-int8", int8_dir, main_ct2[2]))

    runs = {}  # (setting, system) -> dict(ids, text, tokens, ntok, seconds; s2s: score)

    for setting, beam in settings:
        # s2s
        rows = [json.loads(line) for line in read_lines(os.path.join(out, f"{setting}.s2s.jsonl"))]
        if len(rows) != n:
            sys.exit(f"s2s wrote {len(rows)} lines for {n} sources ({setting})")
        runs[(setting, "s2s")] = dict(
            ids=None,
            ntok=[len(r["hyps"][0]["tokens"]) if r["hyps"] else 0 for r in rows],
            tokens=[r["hyps"][0]["tokens"] if r["hyps"] else [] for r in rows],
            text=[r["hyps"][0]["text"] if r["hyps"] else "" for r in rows],
            score=[r["hyps"][0]["score"] if r["hyps"] else None for r in rows],
            seconds=times.get(f"{setting}.s2s"),
        )
        # transformers
        t0 = time.perf_counter()
        ids = hf.generate(texts, a.batch, N, beam, a.alpha)
        runs[(setting, "hf")] = dict(ids=ids, seconds=time.perf_counter() - t0)
        # CTranslate2
        for name, path, suppress in ct2_models:
            c = Ct2(path, a.threads, tok, suppress)
            variants = [(name, N + 2 if beam > 1 else 1)]
            if beam > 1 and path == main_ct2[1]:
                variants.append(("ct2-p1", 1))
            for vname, patience in variants:
                t0 = time.perf_counter()
                ids = c.translate(texts, a.batch, N, beam, a.alpha, patience)
                runs[(setting, vname)] = dict(ids=ids, seconds=time.perf_counter() - t0)
            del c

    # Texts, lengths, and the teacher-forced scores of every non-s2s output that differs from s2s
    # (and of transformers' outputs everywhere, to compare the two models' numbers).
    def shown(ids):
        """Pieces as s2s's --json prints them: the word marker removed, a bare marker as " "."""
        return [" " if all(c == "\u2581" for c in p) else p.replace("\u2581", "")
                for p in tok.convert_ids_to_tokens(ids)]

    for (setting, system), r in runs.items():
        if r["ids"] is not None:
            r["text"] = [hf.ids_to_text(ids) for ids in r["ids"]]
            r["ntok"] = [len(ids) for ids in r["ids"]]
            r["tokens"] = [shown(ids) for ids in r["ids"]]
        write_lines(os.path.join(out, f"{setting}.{system}.txt"), r["text"])

    def norm(lp, ntok, beam):
        return lp / ((ntok + 1) ** a.alpha) if beam > 1 else lp

    def s2s_ids(r, i):
        """s2s's output ids in the exported vocabulary, when re-encoding its text as a target
        gives back exactly the tokens s2s printed (its --json tokens show pieces without the
        word marker, so they alone are ambiguous); else None."""
        ids = tok(text_target=r["text"][i])["input_ids"][:-1]
        return ids if shown(ids) == r["tokens"][i] else None

    # Sentences where a system's output differs from s2s's, in text or in tokens (the same text
    # can come from different tokens, e.g. trailing bare word markers, or a different <unk>
    # rendering), and teacher-forced scores for them; for transformers everywhere, to measure
    # how far its numbers are from s2s's own where both chose the same tokens.
    agree = {}
    for setting, beam in settings:
        s2s = runs[(setting, "s2s")]
        s2s["tf"] = {}
        for system in [s for (st, s) in runs if st == setting and s != "s2s"]:
            r = runs[(setting, system)]
            r["dtext"] = [i for i in range(n) if r["text"][i] != s2s["text"][i]]
            r["dtok"] = [i for i in range(n) if r["tokens"][i] != s2s["tokens"][i]]
            r["diff"] = sorted(set(r["dtext"]) | set(r["dtok"]))
            todo = list(range(n)) if system == "hf" else r["diff"]
            lps = hf.teacher_forced([(i, r["ids"][i]) for i in todo], texts, a.batch)
            r["tf"] = {i: norm(lp, r["ntok"][i], beam) for i, lp in zip(todo, lps)}
            # s2s's own outputs at those sentences, under the same scorer where possible.
            more = [(i, s2s_ids(s2s, i)) for i in r["diff"] if i not in s2s["tf"]]
            more = [(i, ids) for i, ids in more if ids is not None]
            lps = hf.teacher_forced(more, texts, a.batch) if more else []
            for (i, ids), lp in zip(more, lps):
                s2s["tf"][i] = norm(lp, len(ids), beam)
            if system == "hf":
                same = [i for i in range(n) if i not in set(r["dtok"])
                        and s2s["score"][i] is not None and r["ntok"][i] < N]
                agree[setting] = max((abs(r["tf"][i] - s2s["score"][i]) for i in same),
                                     default=0.0)

    # The table.
    lines = []
    head = ("| setting | system | BLEU | seconds | ≠ s2s text | ≠ s2s tokens | ≠ hf text | at max "
            "| of ≠ s2s: other higher / s2s higher / tie / at max / same tokens |")
    lines += [head, "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    examples = []
    for setting, beam in settings:
        s2s = runs[(setting, "s2s")]
        hft = runs[(setting, "hf")]["text"]
        for system in [s for (st, s) in runs if st == setting]:
            r = runs[(setting, system)]
            bleu = sacrebleu.corpus_bleu(r["text"], [ref], tokenize=a.bleu_tokenize).score
            dhf = sum(1 for i in range(n) if r["text"][i] != hft[i])
            atmax = sum(1 for k in r["ntok"] if k >= N)
            cat, dtext, dtok = "", 0, 0
            if system != "s2s":
                dtext, dtok = len(r["dtext"]), len(r["dtok"])
                c = {"other": 0, "s2s": 0, "tie": 0, "max": 0, "same": 0}
                for i in r["diff"]:
                    if r["tokens"][i] == s2s["tokens"][i]:
                        key, kind = "same", "same tokens, different text"
                    elif r["ntok"][i] >= N or s2s["ntok"][i] >= N or s2s["score"][i] is None:
                        key, kind = "max", "at max"
                    else:
                        if i in s2s["tf"]:  # both scored by transformers
                            d, tol = r["tf"][i] - s2s["tf"][i], TOL
                        else:  # against s2s's own score: allow for the two models' difference
                            d, tol = r["tf"][i] - s2s["score"][i], max(TOL, agree[setting])
                        key = "other" if d > tol else "s2s" if d < -tol else "tie"
                        kind = {"other": f"{system} higher", "s2s": "s2s higher",
                                "tie": "tie"}[key]
                    c[key] += 1
                    if len([e for e in examples if e[0] == (setting, system)]) < a.examples:
                        examples.append(((setting, system), i, kind))
                cat = f"{c['other']} / {c['s2s']} / {c['tie']} / {c['max']} / {c['same']}"
            secs = "" if r.get("seconds") is None else f"{r['seconds']:.1f}"
            lines.append(f"| {setting} | {system} | {bleu:.2f} | {secs} | {dtext} | {dtok} | "
                         f"{dhf} | {atmax} | {cat} |")

    hdr = [
        "# s2s vs transformers vs CTranslate2 on one exported model",
        "",
        f"- model: `{a.model}` exported to `{hf_dir}`; s2s: `{a.s2s}`",
        f"- {n} sentences from `{a.src}`, references `{a.ref}`, sacreBLEU tokenize "
        f"`{a.bleu_tokenize}`" + (f", target language `{tag}`" if tag else ""),
        f"- beam {a.beam}, alpha {a.alpha} (score = sum log-prob / L^alpha, L counting </s>), "
        f"greedy without length penalty; at most {N} tokens before </s>; batch {a.batch}; "
        f"{a.threads} threads",
        f"- transformers {transformers.__version__}, torch {torch.__version__}, ctranslate2 "
        f"{ctranslate2.__version__}, sacrebleu {sacrebleu.__version__}",
        f"- decoder start (<pad>) embedding row is {'zero' if zero_start else 'NOT zero'}: the "
        "stock CT2 conversion (which starts from a zero vector) is "
        + ("the same model" if zero_start else "a DIFFERENT model; ct2-padstart starts from "
           "the row as transformers and s2s do"),
        "- CTranslate2 models: " + ", ".join(f"{name} = `{path}`" for name, path, _ in ct2_models)
        + (f"; ct2-p1 = {main_ct2[0]} with patience 1" if a.beam > 1 else ""),
        "- seconds: the translation step only (informative); s2s's includes loading the model",
        "- ≠ s2s text / tokens, ≠ hf text: outputs that differ from s2s's (as text, as token "
        "sequences) or from transformers' (text); at max: outputs with "
        f"{N} tokens (the length limit, where the three treat the forced end differently)",
        "- of ≠ s2s: both outputs scored by transformers (teacher-forced, log_softmax over the "
        "whole vocabulary, the same length normalisation; s2s's own score where its text does "
        "not re-encode to its tokens): the other's output scores higher, s2s's does, within "
        f"{TOL:g} (or the largest difference below, against s2s's own score) = tie, or one of "
        "them is at the max length (not comparable)",
        "- largest |s2s score - transformers' teacher-forced score| where both give the same "
        "tokens (below the max length): " + ", ".join(f"{k} {v:.2e}" for k, v in agree.items()),
        "",
    ]
    summary = "\n".join(hdr + lines) + "\n"
    ex = ["", "## Example differences", ""]
    for (setting, system), i, kind in examples:
        r = runs[(setting, system)]
        s = runs[(setting, "s2s")]
        ex.append(f"- {setting} line {i + 1} ({kind}): src `{src[i]}`")
        own = s["tf"].get(i, s["score"][i])
        ex.append(f"  - s2s ({own if own is not None else float('nan'):.4f}): `{s['text'][i]}`")
        ex.append(f"  - {system} ({r['tf'][i]:.4f}): `{r['text'][i]}`")
    if not examples:
        ex.append("(none: every system gave s2s's output on every sentence)")
    summary += "\n".join(ex) + "\n"
    with open(os.path.join(out, "summary.md"), "w", encoding="utf-8") as f:
        f.write(summary)
    print(summary)


if __name__ == "__main__":
    main()
