#!/usr/bin/env python3
"""PyTorch reference for `s2s bench` (issue #10): the same three architectures as s2s, with the
same parameter counts, measured on the same shapes.

    bench/.venv/bin/python bench/reference.py                 # every model and phase
    bench/.venv/bin/python bench/reference.py --models rnnsearch --phases train --reps 5

Prints one JSON line per (model, phase) on stdout, in the format of `s2s bench --json`:

    {"model": "rnnsearch", "phase": "train", "tokens_per_sec": ..., "ms_per_batch": ...,
     "peak_rss_mb": ..., "params": ..., "shape": {...}}

plus `gflop_per_batch` and `gflop_per_sec`: the FLOPs torch.utils.flop_counter counts (matrix
products and convolutions, not element-wise work) for one batch: forward + backward on `train`
lines, the whole search on `greedy` and `beam` lines. Human-readable notes go to stderr, among
them the machine's measured gemm ceiling (the GFLOP/s of a large square matrix product with the
same threads): no implementation does a batch's matrix products faster than that.

Each (model, phase) runs in a fresh subprocess, so `peak_rss_mb` (VmHWM) is that phase's own peak,
including the Python interpreter and the torch libraries (`import torch` alone is reported on
stderr as the baseline).

The models mirror crates/s2s-models (read those files next to this one):

- rnnsearch: preset `rnnsearch` (rnn/{cell,encoder,model}.rs, attention.rs), dropout 0.0;
- transformer: preset `transformer-small` (transformer/), post-norm, sinusoidal positions,
  tied output projection, separate source and target embeddings, dropout 0.1;
- convs2s: preset `convs2s-small` (convs2s/), dropout 0.1.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

THREADS = 2
torch.set_num_threads(THREADS)

# Shapes of the bench (issue #10), and s2s's special ids (crates/s2s-data/src/lib.rs).
V, B, S, T, BEAM = 8000, 64, 20, 20, 5
PAD, UNK, BOS_S2S, EOS = 0, 1, 2, 3
LABEL_SMOOTHING = 0.1
LENPEN = 0.75  # s2s's default LengthPenalty::Alpha(0.75): score / L^0.75
MODELS = ["rnnsearch", "transformer", "convs2s"]
PHASES = ["train", "greedy", "beam"]


def data():
    """The bake-off's batch (shared/reference/bakeoff/torch_bench.py `data()`, unchanged): sources
    of 20 tokens in 3..V, targets of length 10..20 (10 + b % 11) padded with 0, BOS = 1."""
    bos = 1
    st = 12345
    src = []
    for _ in range(B * S):
        st = (st * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        src.append(3 + (st >> 33) % (V - 3))
    tin, tout = [0] * (B * T), [0] * (B * T)
    for b in range(B):
        ln = 10 + b % 11
        for t in range(T):
            tout[b * T + t] = src[b * S + t] if t < ln else 0
            tin[b * T + t] = bos if t == 0 else tout[b * T + t - 1]
    f = lambda v, n: torch.tensor(v, dtype=torch.long).view(B, n)
    return f(src, S), f(tin, T), f(tout, T)


def xavier_linear(i, o, bias=True):
    lin = nn.Linear(i, o, bias=bias)
    nn.init.xavier_uniform_(lin.weight)
    if bias:
        nn.init.zeros_(lin.bias)
    return lin


def normal_linear(i, o, std):
    lin = nn.Linear(i, o)
    nn.init.normal_(lin.weight, 0.0, std)
    nn.init.zeros_(lin.bias)
    return lin


def embedding(n, d, std, pad=None):
    emb = nn.Embedding(n, d)
    nn.init.normal_(emb.weight, 0.0, std)
    if pad is not None:
        with torch.no_grad():
            emb.weight[pad].zero_()
    return emb


# --------------------------------------------------------------------------------------------
# RNNsearch (Bahdanau 2015) as in crates/s2s-models/src/rnn: bidirectional GRU encoder,
# s_0 = tanh(W h_1_backward), additive attention on the previous state, a GRU decoder whose input
# projection is split into the embedding part (with bias, all steps in one matmul when teacher
# forcing) and the context part (no bias), features [s_i; c_i; e_{i-1}], readout tanh layer of
# width emb, output layer.
# --------------------------------------------------------------------------------------------


class RnnSearch(nn.Module):
    def __init__(s, src_vocab=V, tgt_vocab=V, emb=256, hidden=512, dropout=0.0):
        super().__init__()
        E, H = emb, hidden
        s.E, s.H = E, H
        s.src_emb, s.tgt_emb = nn.Embedding(src_vocab, E), nn.Embedding(tgt_vocab, E)
        for e in (s.src_emb, s.tgt_emb):
            nn.init.uniform_(e.weight, -0.1, 0.1)
        # The encoder's padding handling (a padded position leaves the state alone) is not
        # needed here: bench sources have no padding, so cuDNN-style nn.GRU computes the same.
        s.encoder = nn.GRU(E, H, batch_first=True, bidirectional=True)
        s.bridge = nn.Linear(H, H)
        # Bahdanau attention: attn_dim = hidden.
        s.att_key = nn.Linear(2 * H, H, bias=False)
        s.att_query = nn.Linear(H, H)
        s.att_v = nn.Linear(H, 1, bias=False)
        # The decoder GRU (PyTorch's gate layout): W_ih split into embedding and context parts.
        s.dec_emb_proj = nn.Linear(E, 3 * H)
        s.dec_ctx_proj = nn.Linear(2 * H, 3 * H, bias=False)
        s.dec_hh = nn.Linear(H, 3 * H)
        s.readout = nn.Linear(H + 2 * H + E, E)
        s.output = nn.Linear(E, tgt_vocab)
        s.dropout = nn.Dropout(dropout)

    # state: dict(values, keys, pad_mask [B,S] True at pad, h [rows,H])
    def start(s, src):
        pad = src.eq(PAD)
        x = s.dropout(s.src_emb(src))
        values, h_n = s.encoder(x)  # [B,S,2H], [2,B,H]
        s0 = torch.tanh(s.bridge(h_n[1]))  # first backward state
        return {"values": values, "keys": s.att_key(values), "pad": pad, "h": s0}

    def gru(s, x_proj, h):
        H = s.H
        h_proj = s.dec_hh(h)
        rz = torch.sigmoid(x_proj[:, : 2 * H] + h_proj[:, : 2 * H])
        r, z = rz[:, :H], rz[:, H:]
        n = torch.tanh(x_proj[:, 2 * H :] + r * h_proj[:, 2 * H :])
        return n + z * (h - n)

    def attend(s, st, query):
        energies = s.att_v(torch.tanh(st["keys"] + s.att_query(query).unsqueeze(1))).squeeze(2)
        weights = torch.softmax(energies.masked_fill(st["pad"], -1.0e9), 1)
        return torch.bmm(weights.unsqueeze(1), st["values"]).squeeze(1)

    def decode_step(s, st, emb, emb_proj):
        c = s.attend(st, st["h"])
        h = s.gru(emb_proj + s.dec_ctx_proj(c), st["h"])
        st["h"] = h
        return torch.cat([h, c, emb], 1)

    def logits(s, features):
        return s.output(torch.tanh(s.readout(s.dropout(features))))

    def forward(s, src, tin):
        st = s.start(src)
        e = s.dropout(s.tgt_emb(tin))
        p = s.dec_emb_proj(e)
        feats = [s.decode_step(st, e[:, t], p[:, t]) for t in range(tin.shape[1])]
        return s.logits(torch.stack(feats, 1))

    def step(s, st, tokens):
        e = s.dropout(s.tgt_emb(tokens))
        return s.logits(s.decode_step(st, e, s.dec_emb_proj(e)))

    def reorder(s, st, idx):
        for k in ("values", "keys", "pad", "h"):
            st[k] = st[k].index_select(0, idx)


# --------------------------------------------------------------------------------------------
# Transformer as in crates/s2s-models/src/transformer (preset transformer-small): post-norm,
# sinusoidal positions (interleaved sin/cos), emb * sqrt(d), separate src/tgt embeddings
# (share_embeddings = false), output tied to the target embedding, no bias on the tied output,
# separate Q/K/V/O projections with bias, dropout on embeddings and sublayer outputs only.
# Decoding keeps a KV cache per layer (self-attention grows by one position per step; the
# cross-attention keys/values are projected once).
# --------------------------------------------------------------------------------------------


def sinusoids(length, d):
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    i = torch.arange(d // 2, dtype=torch.float64)
    angle = pos / torch.pow(10000.0, 2.0 * i / d)
    return torch.stack([angle.sin(), angle.cos()], 2).reshape(length, d).float()


class MHA(nn.Module):
    def __init__(s, d, heads):
        super().__init__()
        s.h = heads
        s.q, s.k, s.v, s.o = (xavier_linear(d, d) for _ in range(4))

    def split(s, x):
        b, n, d = x.shape
        return x.view(b, n, s.h, d // s.h).transpose(1, 2)

    def kv(s, x):
        return s.split(s.k(x)), s.split(s.v(x))

    def forward(s, x, k, v, mask=None, causal=False):
        # mask: bool, True where attending is allowed (SDPA's convention), broadcast to scores.
        q = s.split(s.q(x))
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
        b, h, n, dk = o.shape
        return s.o(o.transpose(1, 2).reshape(b, n, h * dk))


class FFN(nn.Module):
    def __init__(s, d, ffn):
        super().__init__()
        s.inner, s.outer = xavier_linear(d, ffn), xavier_linear(ffn, d)

    def forward(s, x):
        return s.outer(F.relu(s.inner(x)))


class EncLayer(nn.Module):
    def __init__(s, d, heads, ffn, p):
        super().__init__()
        s.attn, s.ffn = MHA(d, heads), FFN(d, ffn)
        s.n1, s.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        s.drop = nn.Dropout(p)

    def forward(s, x, mask):
        k, v = s.attn.kv(x)
        x = s.n1(x + s.drop(s.attn(x, k, v, mask)))
        return s.n2(x + s.drop(s.ffn(x)))


class DecLayer(nn.Module):
    def __init__(s, d, heads, ffn, p):
        super().__init__()
        s.self_attn, s.cross_attn, s.ffn = MHA(d, heads), MHA(d, heads), FFN(d, ffn)
        s.n1, s.n2, s.n3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        s.drop = nn.Dropout(p)

    def forward(s, x, past, cross, mask):
        k, v = s.self_attn.kv(x)
        if past is not None:  # one cached step: the whole prefix is in the past, no mask
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        causal = past is None and x.shape[1] > 1
        x = s.n1(x + s.drop(s.self_attn(x, k, v, None, causal)))
        x = s.n2(x + s.drop(s.cross_attn(x, cross[0], cross[1], mask)))
        return s.n3(x + s.drop(s.ffn(x))), (k, v)


class Transformer(nn.Module):
    def __init__(s, src_vocab=V, tgt_vocab=V, d=256, heads=4, layers=3, ffn=1024, dropout=0.1):
        super().__init__()
        s.d = d
        std = d**-0.5
        s.src_emb, s.tgt_emb = embedding(src_vocab, d, std, PAD), embedding(tgt_vocab, d, std, PAD)
        s.register_buffer("pe", sinusoids(1024, d), persistent=False)
        s.enc = nn.ModuleList(EncLayer(d, heads, ffn, dropout) for _ in range(layers))
        s.dec = nn.ModuleList(DecLayer(d, heads, ffn, dropout) for _ in range(layers))
        s.drop = nn.Dropout(dropout)

    def embed(s, table, ids, start=0):
        n = ids.shape[1]
        return s.drop(table(ids) * math.sqrt(s.d) + s.pe[start : start + n])

    def start(s, src):
        mask = src.ne(PAD)[:, None, None, :]  # [B,1,1,S], True = real key
        x = s.embed(s.src_emb, src)
        for layer in s.enc:
            x = layer(x, mask)
        return {"cross": [l.cross_attn.kv(x) for l in s.dec], "mask": mask, "past": None, "t": 0}

    def decode(s, st, tokens):
        x = s.embed(s.tgt_emb, tokens, st["t"])
        past = st["past"] or [None] * len(s.dec)
        new = []
        for l, layer in enumerate(s.dec):
            x, kv = layer(x, past[l], st["cross"][l], st["mask"])
            new.append(kv)
        st["past"], st["t"] = new, st["t"] + tokens.shape[1]
        return F.linear(x, s.tgt_emb.weight)  # tied output, no bias

    def forward(s, src, tin):
        return s.decode(s.start(src), tin)

    def step(s, st, tokens):
        return s.decode(st, tokens.unsqueeze(1)).squeeze(1)

    def reorder(s, st, idx):
        sel = lambda kv: (kv[0].index_select(0, idx), kv[1].index_select(0, idx))
        st["cross"] = [sel(kv) for kv in st["cross"]]
        st["past"] = [sel(kv) for kv in st["past"]]
        st["mask"] = st["mask"].index_select(0, idx)


# --------------------------------------------------------------------------------------------
# ConvS2S as in crates/s2s-models/src/convs2s (preset convs2s-small: emb 256, hidden 256,
# 8+8 layers, kernel 3, out_dim 256, learned positions (1024), dropout 0.1). The convolutions are
# nn.Conv1d (same parameters as s2s's [k*c_in, 2*c_out] matmul); decoding keeps the last k-1
# inputs of every decoder layer and multiplies the window by the same weights as one matmul.
# --------------------------------------------------------------------------------------------

HALF = math.sqrt(0.5)


class GradMultiply(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale, None


class ConvGlu(nn.Module):
    def __init__(s, c, k, p, causal):
        super().__init__()
        s.k, s.causal = k, causal
        s.conv = nn.Conv1d(c, 2 * c, k)
        nn.init.normal_(s.conv.weight, 0.0, math.sqrt(4.0 * (1.0 - p) / (k * c)))
        nn.init.zeros_(s.conv.bias)
        s._flat = None

    def forward(s, x):  # [B,len,c] -> [B,len,c]
        left, right = (s.k - 1, 0) if s.causal else ((s.k - 1) // 2, s.k - 1 - (s.k - 1) // 2)
        y = s.conv(F.pad(x.transpose(1, 2), (left, right)))
        return F.glu(y, dim=1).transpose(1, 2)

    def step(s, window):  # [rows,k,c] (oldest first) -> [rows,1,c]
        if s._flat is None:  # conv weight [2c,c,k] as a [2c, k*c] matrix, once per decode
            s._flat = s.conv.weight.permute(0, 2, 1).reshape(s.conv.out_channels, -1).contiguous()
        rows = window.shape[0]
        return F.glu(F.linear(window.reshape(rows, -1), s._flat, s.conv.bias), dim=-1).unsqueeze(1)


class ConvEmbedding(nn.Module):
    def __init__(s, vocab, e, max_pos, p):
        super().__init__()
        s.tokens = embedding(vocab, e, 0.1, PAD)
        s.positions = embedding(max_pos, e, 0.1)
        s.drop = nn.Dropout(p)

    def forward(s, ids, start=0):
        n = ids.shape[1]
        pos = torch.arange(start, start + n).clamp(max=s.positions.num_embeddings - 1)
        return s.drop(s.tokens(ids) + s.positions(pos))


class ConvS2S(nn.Module):
    def __init__(s, src_vocab=V, tgt_vocab=V, e=256, h=256, layers=8, k=3, out_dim=256,
                 dropout=0.1, max_pos=1024):
        super().__init__()
        p = dropout
        s.k, s.h, s.layers = k, h, layers
        s.src_embed = ConvEmbedding(src_vocab, e, max_pos, p)
        s.tgt_embed = ConvEmbedding(tgt_vocab, e, max_pos, p)
        s.enc_fc_in = normal_linear(e, h, math.sqrt((1 - p) / e))
        s.enc_convs = nn.ModuleList(ConvGlu(h, k, p, False) for _ in range(layers))
        s.enc_fc_out = normal_linear(h, e, math.sqrt(1 / h))
        s.dec_fc_in = normal_linear(e, h, math.sqrt((1 - p) / e))
        s.dec_convs = nn.ModuleList(ConvGlu(h, k, p, True) for _ in range(layers))
        s.att_in = nn.ModuleList(normal_linear(h, e, math.sqrt(1 / h)) for _ in range(layers))
        s.att_out = nn.ModuleList(normal_linear(e, h, math.sqrt(1 / e)) for _ in range(layers))
        s.dec_fc_out = normal_linear(h, out_dim, math.sqrt(1 / h))
        s.output = normal_linear(out_dim, tgt_vocab, math.sqrt((1 - p) / out_dim))
        s.drop = nn.Dropout(p)

    def start(s, src):
        for conv in s.dec_convs:  # the flattened step weights are rebuilt once per decode
            conv._flat = None
        pad = src.eq(PAD)
        keep = (~pad).float().unsqueeze(2)
        emb = s.src_embed(src)
        x = s.enc_fc_in(emb)
        for conv in s.enc_convs:
            x = (conv(s.drop(x * keep)) + x) * HALF
        z = s.enc_fc_out(x) * keep
        z = GradMultiply.apply(z, 1.0 / (2.0 * s.layers))
        return {
            "keys_t": z.transpose(1, 2).contiguous(),  # [B,e,S]
            "values": (z + emb) * HALF,
            "mask": pad.unsqueeze(1),  # [B,1,S], True at pad
            "scale": keep.sum(1, keepdim=True).sqrt(),  # [B,1,1]
            "buffers": None,
            "t": 0,
        }

    def decoder(s, st, emb, conv):
        x = s.dec_fc_in(emb)
        for l in range(s.layers):
            residual = x
            x = conv(l, s.drop(x))
            query = (s.att_in[l](x) + emb) * HALF
            scores = torch.bmm(query, st["keys_t"]).masked_fill(st["mask"], -1.0e9)
            ctx = torch.bmm(torch.softmax(scores, 2), st["values"]) * st["scale"]
            x = ((s.att_out[l](ctx) + x) * HALF + residual) * HALF
        return s.output(s.drop(s.dec_fc_out(x)))

    def forward(s, src, tin):
        st = s.start(src)
        return s.decoder(st, s.tgt_embed(tin), lambda l, x: s.dec_convs[l](x))

    def step(s, st, tokens):
        rows = tokens.shape[0]
        if st["buffers"] is None:
            st["buffers"] = [torch.zeros(rows, s.k - 1, s.h) for _ in range(s.layers)]
        emb = s.tgt_embed(tokens.unsqueeze(1), st["t"])
        bufs = st["buffers"]

        def conv(l, x):
            window = torch.cat([bufs[l], x], 1)
            bufs[l] = window[:, 1:]
            return s.dec_convs[l].step(window)

        st["t"] += 1
        return s.decoder(st, emb, conv).squeeze(1)

    def reorder(s, st, idx):
        for key in ("keys_t", "values", "mask", "scale"):
            st[key] = st[key].index_select(0, idx)
        st["buffers"] = [b.index_select(0, idx) for b in st["buffers"]]


def build(name):
    if name == "rnnsearch":
        return RnnSearch(dropout=0.0)
    if name == "transformer":
        return Transformer()
    if name == "convs2s":
        return ConvS2S()
    raise SystemExit(f"unknown model {name!r}; choose from {MODELS}")


# --------------------------------------------------------------------------------------------
# Phases
# --------------------------------------------------------------------------------------------


def make_train_step(model):
    """Forward, label-smoothed loss masked at padding, backward, per-tensor gradient-norm clipping
    at 1.0 (s2s's trainer: burn clips each parameter tensor), Adam (0.9, 0.98, eps 1e-8)."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-8)
    params = [p for p in model.parameters()]

    def loss_fn(src, tin, tout):
        logits = model(src, tin)
        return F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), tout.reshape(-1),
            ignore_index=PAD, label_smoothing=LABEL_SMOOTHING,
        )

    def step(src, tin, tout):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(src, tin, tout)
        loss.backward()
        grads = [p.grad for p in params if p.grad is not None]
        norms = torch._foreach_norm(grads)
        scales = [torch.clamp(1.0 / (n + 1e-6), max=1.0) for n in norms]
        torch._foreach_mul_(grads, scales)
        opt.step()
        return loss.item()

    return step, loss_fn


@torch.inference_mode()
def greedy(model, src, steps=T):
    """Exactly `steps` steps for the whole batch, no early stop; log-softmax then argmax (the
    score s2s reports), with the incremental state."""
    st = model.start(src)
    tok = torch.full((src.shape[0],), BOS_S2S, dtype=torch.long)
    score = torch.zeros(src.shape[0])
    out = []
    for _ in range(steps):
        lp, tok = torch.log_softmax(model.step(st, tok), -1).max(-1)
        score += lp
        out.append(tok)
    return torch.stack(out, 1), score


@torch.inference_mode()
def beam(model, src, k=BEAM, steps=T, alpha=LENPEN):
    """Batched beam search over all sentences at once, exactly `steps` steps (no early stop).
    The first step has one beam per sentence, then k. Each step takes the best 2k candidates of
    every sentence over its k*V continuations, finishes the <eos> candidates among the first k
    with score logprob / L^alpha, keeps the best k non-<eos> ones, and reorders the model state
    with index_select. At the end the open beams are finished too; returns the best per sentence."""
    nb = src.shape[0]
    st = model.start(src)
    tokens = torch.full((nb,), BOS_S2S, dtype=torch.long)
    scores = torch.zeros(nb, 1)
    hist = torch.zeros(nb, 0, dtype=torch.long)
    best_score = torch.full((nb,), -math.inf)
    best_tokens = torch.zeros(nb, steps, dtype=torch.long)
    arange = torch.arange(nb).unsqueeze(1)
    for t in range(steps):
        kb = scores.shape[1]
        lp = torch.log_softmax(model.step(st, tokens), -1)
        vocab = lp.shape[-1]
        cand = (scores.unsqueeze(2) + lp.view(nb, kb, vocab)).view(nb, kb * vocab)
        top_s, top_i = cand.topk(2 * k, dim=1)
        src_beam, tok = top_i // vocab, top_i % vocab
        is_eos = tok.eq(EOS)
        # finished hypotheses: <eos> among the first k candidates
        fin = torch.where(is_eos[:, :k], top_s[:, :k] / float(t + 1) ** alpha, -math.inf)
        fin_s, fin_j = fin.max(1)
        better = fin_s > best_score
        if bool(better.any()):
            rows = (arange.squeeze(1) * kb + src_beam.gather(1, fin_j.unsqueeze(1)).squeeze(1))
            prefix = hist.index_select(0, rows)
            upd = torch.zeros(nb, steps, dtype=torch.long)
            upd[:, :t] = prefix
            best_tokens = torch.where(better.unsqueeze(1), upd, best_tokens)
            best_score = torch.where(better, fin_s, best_score)
        # the k best continuing candidates
        sel_s, sel_j = top_s.masked_fill(is_eos, -math.inf).topk(k, dim=1)
        new_beam, new_tok = src_beam.gather(1, sel_j), tok.gather(1, sel_j)
        rows = (arange * kb + new_beam).view(-1)
        model.reorder(st, rows)
        hist = torch.cat([hist.index_select(0, rows), new_tok.view(-1, 1)], 1)
        scores, tokens = sel_s, new_tok.view(-1)
    open_s = scores / float(steps + 1) ** alpha
    o_s, o_j = open_s.max(1)
    take = o_s > best_score
    rows = arange.squeeze(1) * scores.shape[1] + o_j
    best_tokens = torch.where(take.unsqueeze(1), hist.index_select(0, rows), best_tokens)
    return best_tokens, torch.where(take, o_s, best_score)


def vm_hwm_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def counted_flops(fn):
    """FLOPs of the matrix products and convolutions `fn()` runs."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as fc:
        fn()
    return fc.get_total_flops()


def train_flops(model, loss_fn, src, tin, tout):
    """FLOPs of one forward + backward (the optimiser's elementwise work is not counted)."""
    flops = counted_flops(lambda: loss_fn(src, tin, tout).backward())
    model.zero_grad(set_to_none=True)
    return flops


def gemm_ceiling_gflops(n=1536, reps=10):
    """GFLOP/s of an n x n x n fp32 product with THREADS threads, best of `reps`: what this
    machine's matrix products reach at their most efficient (decoding's products are far
    smaller, so they run slower still)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * n ** 3 / best / 1e9


def worker(name, phase, warmup, reps):
    torch.manual_seed(0)
    src, tin, tout = data()
    model = build(name)
    params = count_params(model)
    times = []
    extra = {}
    if phase == "train":
        model.train()
        step, loss_fn = make_train_step(model)
        for i in range(warmup + reps):
            t0 = time.perf_counter()
            step(src, tin, tout)
            if i >= warmup:
                times.append(time.perf_counter() - t0)
        tokens = int(tout.ne(PAD).sum())
    else:
        model.eval()
        fn = greedy if phase == "greedy" else beam
        # s2s's decoder appends <eos> to every source, as in its training batches
        # (crates/s2s-models/src/decoder.rs, Decoder::start): 21 source positions.
        src = torch.cat([src, torch.full((B, 1), EOS, dtype=torch.long)], 1)
        for i in range(warmup + reps):
            t0 = time.perf_counter()
            fn(model, src)
            if i >= warmup:
                times.append(time.perf_counter() - t0)
        tokens = B * T
    peak = vm_hwm_mb()
    ms = statistics.median(times) * 1e3
    if phase == "train":
        flops = train_flops(model, loss_fn, src, tin, tout)
    else:
        flops = counted_flops(lambda: fn(model, src))
    extra = {"gflop_per_batch": round(flops / 1e9, 3),
             "gflop_per_sec": round(flops / 1e9 / (ms / 1e3), 2)}
    rec = {
        "model": name,
        "phase": phase,
        "tokens_per_sec": round(tokens / (ms / 1e3), 1),
        "ms_per_batch": round(ms, 2),
        "peak_rss_mb": round(peak, 1),
        "params": params,
        "reps": reps,
        "shape": {"batch": B, "src_len": S, "tgt_len": T, "vocab": V, "beam": BEAM},
        **extra,
    }
    spread = f"min {min(times) * 1e3:.1f} max {max(times) * 1e3:.1f} ms over {len(times)}"
    print(f"# {name} {phase}: median {ms:.1f} ms ({spread})", file=sys.stderr)
    print(json.dumps(rec), flush=True)


def cpu_peak_gflops():
    """cores * GHz * FLOP/cycle (fp32 FMA: 2 units * 2 * lanes: 32 for AVX2, 64 for AVX-512),
    from /proc/cpuinfo's nominal clock. AMD before Zen 5 (family 25 and below) counts 32 even
    with AVX-512: Zen 4 runs 512-bit instructions on 256-bit units. Returns (peak, description)."""
    mhz, flags, model_name, vendor, family = None, set(), "?", "?", None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, val = line.partition(":")
                key = key.strip()
                if key == "cpu MHz" and mhz is None:
                    mhz = float(val)
                elif key == "flags" and not flags:
                    flags = set(val.split())
                elif key == "model name" and model_name == "?":
                    model_name = val.strip()
                elif key == "vendor_id" and vendor == "?":
                    vendor = val.strip()
                elif key == "cpu family" and family is None:
                    family = int(val)
    except OSError:
        return None, "unknown CPU"
    if mhz is None:
        return None, model_name
    per_cycle = 64 if "avx512f" in flags else 32 if {"avx2", "fma"} <= flags else 16
    if vendor == "AuthenticAMD" and family is not None and family <= 25:
        per_cycle = min(per_cycle, 32)
    peak = THREADS * mhz / 1e3 * per_cycle
    return peak, (f"{model_name}, {THREADS} cores x {mhz / 1e3:.2f} GHz x {per_cycle} FLOP/cycle "
                  f"= {peak:.0f} GFLOP/s fp32 peak")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--phases", default=",".join(PHASES))
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5, help="timed batches per (model, phase)")
    ap.add_argument("--params-only", action="store_true", help="print parameter counts and exit")
    ap.add_argument("--worker", nargs=2, metavar=("MODEL", "PHASE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker[0], a.worker[1], a.warmup, a.reps)
        return
    models = [m for m in a.models.split(",") if m]
    phases = [p for p in a.phases.split(",") if p]
    for m in models:
        if m not in MODELS:
            raise SystemExit(f"unknown model {m!r}; choose from {MODELS}")
    for p in phases:
        if p not in PHASES:
            raise SystemExit(f"unknown phase {p!r}; choose from {PHASES}")
    if a.params_only:
        for m in models:
            print(json.dumps({"model": m, "params": count_params(build(m))}))
        return
    peak, desc = cpu_peak_gflops()
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads; {desc}", file=sys.stderr)
    base = subprocess.run([sys.executable, "-c", "import torch\n" + _HWM_SNIPPET],
                          capture_output=True, text=True)
    print(f"# baseline peak RSS of `import torch`: {base.stdout.strip()} MB", file=sys.stderr)
    print(f"# measured gemm ceiling: {gemm_ceiling_gflops():.0f} GFLOP/s "
          f"(1536^3 fp32 product, {THREADS} threads, best of 10)", file=sys.stderr)
    failed = False
    for m in models:
        for p in phases:
            r = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--worker", m, p,
                 "--warmup", str(a.warmup), "--reps", str(a.reps)],
                stdout=subprocess.PIPE, text=True,
            )
            if r.returncode != 0:
                print(f"# {m} {p}: worker failed with exit code {r.returncode}", file=sys.stderr)
                failed = True
                continue
            line = r.stdout.strip().splitlines()[-1]
            print(line, flush=True)
            rec = json.loads(line)
            if "gflop_per_sec" in rec and peak:
                print(f"# {m} {p}: {rec['gflop_per_batch']} GFLOP per batch, "
                      f"{rec['gflop_per_sec']} GFLOP/s = {100 * rec['gflop_per_sec'] / peak:.1f}% "
                      f"of the {peak:.0f} GFLOP/s peak", file=sys.stderr)
    sys.exit(1 if failed else 0)


_HWM_SNIPPET = """
for line in open('/proc/self/status'):
    if line.startswith('VmHWM:'):
        print(round(int(line.split()[1]) / 1024, 1))
"""

if __name__ == "__main__":
    main()
