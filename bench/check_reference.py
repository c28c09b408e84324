#!/usr/bin/env python3
"""Self-checks of bench/reference.py on small inputs (run: bench/.venv/bin/python
bench/check_reference.py): the incremental decoding step of every model gives the logits of the
teacher-forced pass, beam search with k = 1 follows greedy decoding (until <eos>), and the parameter counts are
those of s2s's presets (computed by hand from crates/s2s-models)."""

import torch

import reference as r


def expected_params():
    v, e, h = r.V, 256, 512
    lin = lambda i, o, bias=True: i * o + (o if bias else 0)
    gru_dir = lin(e, 3 * h) + lin(h, 3 * h)
    rnn = (2 * v * e + 2 * gru_dir + lin(h, h) + lin(2 * h, h, False) + lin(h, h) + lin(h, 1, False)
           + lin(e, 3 * h) + lin(2 * h, 3 * h, False) + lin(h, 3 * h) + lin(3 * h + e, e) + lin(e, v))
    d, f = 256, 1024
    ffn = lin(d, f) + lin(f, d)
    tfm = 2 * v * d + 3 * (4 * lin(d, d) + ffn + 2 * 2 * d) + 3 * (8 * lin(d, d) + ffn + 3 * 2 * d)
    c, k, L = 256, 3, 8
    conv = (2 * (v * c + 1024 * c) + lin(c, c) + L * lin(k * c, 2 * c) + lin(c, c)
            + lin(c, c) + L * (lin(k * c, 2 * c) + lin(c, c) + lin(c, c)) + lin(c, c) + lin(c, v))
    return {"rnnsearch": rnn, "transformer": tfm, "convs2s": conv}


def main():
    torch.manual_seed(0)
    src, tin, _ = r.data()
    src, tin = src[:4, :7], tin[:4, :6]
    src[1, 5:] = r.PAD  # some source padding
    for name, want in expected_params().items():
        m = r.build(name).eval()
        got = r.count_params(m)
        assert got == want, f"{name}: {got} parameters, expected {want}"
        with torch.no_grad():
            full = m(src, tin)
            st = m.start(src)
            steps = torch.stack([m.step(st, tin[:, t]) for t in range(tin.shape[1])], 1)
        err = (full - steps).abs().max().item()
        assert err < 1e-3, f"{name}: step vs teacher-forced logits differ by {err}"
        g, _ = r.greedy(m, src, steps=5)
        b, _ = r.beam(m, src, k=1, steps=5, alpha=0.0)
        # rows where greedy emits <eos> differ on purpose: beam finishes them, greedy runs on
        rows = ~g.eq(r.EOS).any(1)
        assert torch.equal(g[rows], b[rows]), f"{name}: beam k=1 {b} != greedy {g}"
        r.beam(m, src, k=3, steps=5)
        print(f"{name}: {got} params ok, step == teacher-forced (max |diff| {err:.1e}), beam k=1 == greedy")


if __name__ == "__main__":
    main()
