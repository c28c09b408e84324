//! The operations the model files call where a CPU kernel can stand in for tensor ops. Each runs
//! its kernel ([`super::kernels`]) when the tensors are the CPU backend's and untracked, and
//! otherwise its default body: the plain tensor ops its model has always used, which training
//! (autodiff) and the accelerators run. Both compute the same function; the default bodies differ
//! between the models only where their arithmetic always has (the order of a product's operands),
//! so every model's results on the tensor-op path are what they were before the kernels.

use burn::nn::Dropout;
use burn::tensor::activation::softmax;
use burn::tensor::{Bool, Int, Tensor, TensorData};

use super::int8::Int8Matrix;
use super::kernels::{self, Segment, Vectors};
use super::{CachedKeyValue, KeyValue, MASKED, PrefixCache, RowMap};

/// `cat([past.select(0, rows), new], 2)` for `[rows, heads, len, d]` tensors: the rows of `past`
/// that beam search kept, in their new order, each followed by its new positions.
///
/// ConvS2S's beam search does this to every decoder layer's convolution window at every step.
/// Two ops copy the window twice (once to reorder, once to grow); the kernel copies it once.
pub fn select_rows_then_cat(past: Tensor<4>, rows: &RowMap, new: Tensor<4>) -> Tensor<4> {
    let Some(kept) = rows.as_slice() else {
        return Tensor::cat(vec![past, new], 2);
    };
    let [_, heads, _, d] = past.dims();
    let [new_rows, new_heads, _, new_d] = new.dims();
    assert!(
        kept.len() == new_rows && heads == new_heads && d == new_d,
        "select_rows_then_cat: {} rows of {:?} after {:?}",
        kept.len(),
        new.dims(),
        past.dims()
    );
    if let Some(out) = kernels::select_rows_then_cat(&past, kept, &new) {
        return out;
    }
    Tensor::cat(vec![rows.gather(past), new], 2)
}

/// Additive attention (Bahdanau's score, Luong's `concat`) of one query per row:
/// `softmax_s(v^T tanh(q + keys_s)) values`, with `q: [rows, a]` the projected query, `keys` the
/// projected keys `[n, len, a]`, `v: [a, 1]`, `values: [n, len, d]` and `pad: [n, len]`, row `i`
/// reading row `rows.get(i)` of the memory. Returns the context `[rows, d]` and the weights
/// `[rows, len]`.
pub fn additive_attention(
    q: Tensor<2>,
    keys: &Tensor<3>,
    v: &Tensor<2>,
    values: &Tensor<3>,
    pad: &Tensor<2, Bool>,
    rows: &RowMap,
) -> (Tensor<2>, Tensor<2>) {
    if let Some(out) = kernels::additive_attention(&q, keys, v, values, pad, rows) {
        return out;
    }
    let [b, _] = q.dims();
    let s = keys.dims()[1];
    let (keys, values, pad) = per_row(rows, keys, values, pad);
    let energies = linear((keys + q.unsqueeze_dim::<3>(1)).tanh(), v.clone(), None);
    weigh_values(energies.reshape([b, s]), pad, values)
}

/// Dot-product attention (Luong's `dot` and `general` scores) of one query per row:
/// `softmax_s(keys_s . q) values`, with `q: [rows, d_k]`, `keys: [n, len, d_k]`, `values: [n, len,
/// d_v]` and `pad: [n, len]`, row `i` reading row `rows.get(i)` of the memory. Returns the context
/// `[rows, d_v]` and the weights `[rows, len]`.
pub fn dot_attention(
    q: Tensor<2>,
    keys: &Tensor<3>,
    values: &Tensor<3>,
    pad: &Tensor<2, Bool>,
    rows: &RowMap,
) -> (Tensor<2>, Tensor<2>) {
    let [b, _] = q.dims();
    let [n, s, d_k] = keys.dims();
    let d_v = values.dims()[2];
    let (k4, v4) = (
        keys.clone().reshape([n, 1, s, d_k]),
        values.clone().reshape([n, 1, s, d_v]),
    );
    let segment = Segment {
        key: Vectors::F32(&k4),
        value: Vectors::F32(&v4),
        pad: Some(pad),
        rows,
    };
    let q4 = q.clone().reshape([b, 1, 1, d_k]);
    if let Some((context, weights)) = kernels::single_query_attention(&q4, &[segment], 1.0) {
        return (context.reshape([b, d_v]), weights.reshape([b, s]));
    }
    let (keys, values, pad) = per_row(rows, keys, values, pad);
    let energies = keys.matmul(q.unsqueeze_dim::<3>(2)).reshape([b, s]);
    weigh_values(energies, pad, values)
}

/// Dot-product attention of a sequence of queries per row (ConvS2S's multi-step attention):
/// `softmax_s(q_t . keys_s) values` for `q: [rows, len, d]` over `keys`, `values: [n, src_len, d]`
/// and `pad: [n, src_len]`, row `i` reading row `rows.get(i)` of the memory. Returns the context
/// `[rows, len, d]` and the weights `[rows, len, src_len]`; a decoding step (`len` 1) takes the
/// kernel.
pub fn dot_attention_seq(
    q: Tensor<3>,
    keys: &Tensor<3>,
    values: &Tensor<3>,
    pad: &Tensor<2, Bool>,
    rows: &RowMap,
) -> (Tensor<3>, Tensor<3>) {
    let [b, len, _] = q.dims();
    let [n, s, e] = keys.dims();
    if len == 1 {
        let (k4, v4) = (
            keys.clone().reshape([n, 1, s, e]),
            values.clone().reshape([n, 1, s, e]),
        );
        let segment = Segment {
            key: Vectors::F32(&k4),
            value: Vectors::F32(&v4),
            pad: Some(pad),
            rows,
        };
        let q4 = q.clone().reshape([b, 1, 1, e]);
        if let Some((context, weights)) = kernels::single_query_attention(&q4, &[segment], 1.0) {
            return (context, weights.reshape([b, 1, s]));
        }
    }
    let (keys, values, pad) = per_row(rows, keys, values, pad);
    let scores = q.matmul(keys.swap_dims(1, 2));
    let mask = pad.reshape([b, 1, s]).expand([b, len, s]);
    let weights = softmax(scores.mask_fill(mask, MASKED), 2);
    (weights.clone().matmul(values), weights)
}

/// Multi-head scaled dot-product attention (the Transformer's): `softmax(q k^T / sqrt(d_k)) v`
/// per head, for `q: [rows, heads, q_len, d_k]` over `kv` (`k_len` positions), row `i` reading
/// row `rows.get(i)` of `kv` and `key_pad` (`[n, k_len]`, true at padded keys); `causal:
/// [q_len, k_len]` is true where a query may not look. `dropout` applies to the weights before
/// they weigh the values. Returns the context `[rows, q_len, heads * d_v]` (heads concatenated)
/// and the weights `[rows, heads, q_len, k_len]` (before dropout); a decoding step (one query,
/// no causal mask) takes the kernel.
pub fn multi_head_attention(
    q: Tensor<4>,
    kv: &CachedKeyValue,
    rows: &RowMap,
    key_pad: Option<&Tensor<2, Bool>>,
    causal: Option<&Tensor<2, Bool>>,
    dropout: &Dropout,
) -> (Tensor<3>, Tensor<4>) {
    if q.dims()[2] == 1
        && causal.is_none()
        && let Some(out) =
            kernels::single_query_attention(&q, &[kv.segment(key_pad, rows)], score_divisor(&q))
    {
        return out;
    }
    let kv = &kv.to_f32();
    match rows.ids(&q.device()) {
        Some(idx) => {
            let pad = key_pad.map(|p| p.clone().select(0, idx.clone()));
            scaled_dot_product(q, &kv.select_rows(&idx), pad.as_ref(), causal, dropout)
        }
        None => scaled_dot_product(q, kv, key_pad, causal, dropout),
    }
}

/// [`multi_head_attention`] of a decoding step, `q: [rows, heads, 1, d_k]`, over the prefix
/// decoded so far (which holds this position already, so nothing is masked). Returns the context
/// `[rows, 1, heads * d_v]`.
pub fn prefix_attention(q: Tensor<4>, cache: &mut PrefixCache, dropout: &Dropout) -> Tensor<3> {
    assert_eq!(q.dims()[2], 1, "cached decoding is one step at a time");
    if let Some((context, _)) =
        kernels::single_query_attention(&q, &cache.segments(), score_divisor(&q))
    {
        return context;
    }
    let kv = cache.collapse();
    scaled_dot_product(q, &kv, None, None, dropout).0
}

/// Scores are `q . k / sqrt(d_k)` for queries `q: [.., d_k]`.
fn score_divisor(q: &Tensor<4>) -> f32 {
    (q.dims()[3] as f32).sqrt()
}

/// [`multi_head_attention`]'s default body, over `kv` with one row per query row.
fn scaled_dot_product(
    q: Tensor<4>,
    kv: &KeyValue,
    key_pad: Option<&Tensor<2, Bool>>,
    causal: Option<&Tensor<2, Bool>>,
    dropout: &Dropout,
) -> (Tensor<3>, Tensor<4>) {
    let [b, h, q_len, d_k] = q.dims();
    let k_len = kv.key.dims()[2];
    let divisor = score_divisor(&q);
    let mut scores = q.matmul(kv.key.clone().swap_dims(2, 3)).div_scalar(divisor);
    if let Some(pad) = key_pad {
        let mask = pad
            .clone()
            .reshape([b, 1, 1, k_len])
            .expand([b, h, q_len, k_len]);
        scores = scores.mask_fill(mask, MASKED);
    }
    if let Some(causal) = causal {
        let mask = causal
            .clone()
            .reshape([1, 1, q_len, k_len])
            .expand([b, h, q_len, k_len]);
        scores = scores.mask_fill(mask, MASKED);
    }
    let weights = softmax(scores, 3);
    let context = dropout
        .forward(weights.clone())
        .matmul(kv.value.clone())
        .swap_dims(1, 2)
        .reshape([b, q_len, h * d_k]);
    (context, weights)
}

/// A memory read through a row map, with one row per query row (one index tensor for the three).
fn per_row(
    rows: &RowMap,
    keys: &Tensor<3>,
    values: &Tensor<3>,
    pad: &Tensor<2, Bool>,
) -> (Tensor<3>, Tensor<3>, Tensor<2, Bool>) {
    let (keys, values, pad) = (keys.clone(), values.clone(), pad.clone());
    match rows.ids(&keys.device()) {
        None => (keys, values, pad),
        Some(idx) => (
            keys.select(0, idx.clone()),
            values.select(0, idx.clone()),
            pad.select(0, idx),
        ),
    }
}

/// The softmax of `energies: [rows, len]` over the unpadded keys, and the context it weighs
/// from `values: [rows, len, d]`: `([rows, d], [rows, len])`.
fn weigh_values(
    energies: Tensor<2>,
    pad: Tensor<2, Bool>,
    values: Tensor<3>,
) -> (Tensor<2>, Tensor<2>) {
    let [b, _] = energies.dims();
    let d = values.dims()[2];
    let weights = softmax(energies.mask_fill(pad, MASKED), 1);
    let context = weights.clone().unsqueeze_dim::<3>(1).matmul(values);
    (context.reshape([b, d]), weights)
}

/// `x @ weight + bias` (burn's `linear`, `weight: [k, n]`): one row (a greedy step of one
/// sentence) through the engine's one-row product on the CPU backend
/// ([`kernels::gemv_linear`]), everything else through burn.
pub fn linear<const D: usize>(
    x: Tensor<D>,
    weight: Tensor<2>,
    bias: Option<Tensor<1>>,
) -> Tensor<D> {
    match kernels::gemv_linear(&x, &weight, bias.as_ref()) {
        Some(out) => out,
        None => burn::tensor::module::linear(x, weight, bias),
    }
}

/// `x W^T + bias` for an int8 weight `W: [n, k]` and `x: [.., k]`: the int8 product on the CPU
/// backend ([`kernels::int8_linear`]); elsewhere the weight dequantised and multiplied in f32.
pub fn int8_linear<const D: usize>(
    x: Tensor<D>,
    w: &Int8Matrix,
    bias: Option<&Tensor<1>>,
) -> Tensor<D> {
    if let Some(out) = kernels::int8_linear(&x, w, bias) {
        return out;
    }
    let weight = Tensor::<2>::from_data(
        TensorData::new(w.dequantize(), [w.rows(), w.cols()]),
        &x.device(),
    );
    linear(x, weight.transpose(), bias.cloned())
}

/// `act(x W_1^T + b_1) W_2^T + b_2` for int8 weights `W_1: [hidden, k]`, `W_2: [n, hidden]`
/// and `x: [.., k]`, a feed-forward network at inference: on the CPU backend the hidden layer is
/// computed a block of rows at a time and quantised for the second product as it goes
/// ([`kernels::int8_feed_forward`]), so its f32 values never exist for all rows at once;
/// elsewhere the two products one after the other. The same bits either way.
pub fn int8_feed_forward<const D: usize>(
    x: Tensor<D>,
    inner: (&Int8Matrix, Option<&Tensor<1>>),
    act: impl Fn(Tensor<2>) -> Tensor<2>,
    outer: (&Int8Matrix, Option<&Tensor<1>>),
) -> Tensor<D> {
    if let Some(out) = kernels::int8_feed_forward(&x, inner, &act, outer) {
        return out;
    }
    let mut dims = x.dims();
    let k = dims[D - 1];
    let h = int8_linear(
        x.reshape([dims.iter().product::<usize>() / k.max(1), k]),
        inner.0,
        inner.1,
    );
    let out = int8_linear(act(h), outer.0, outer.1);
    dims[D - 1] = outer.0.rows();
    out.reshape(dims)
}

/// Rows `ids: [batch, len]` of an int8 embedding table, dequantised: `[batch, len, d]`.
pub fn int8_embedding(table: &Int8Matrix, ids: Tensor<2, Int>) -> Tensor<3> {
    let [batch, len] = ids.dims();
    let device = ids.device();
    let ids = ids
        .into_data()
        .convert::<i64>()
        .try_into_vec::<i64>()
        .expect("token ids are integers");
    let mut rows = Vec::with_capacity(ids.len() * table.cols());
    for id in ids {
        table.dequantize_row_into(id as usize, &mut rows);
    }
    Tensor::from_data(TensorData::new(rows, [batch, len, table.cols()]), &device)
}
