//! The decoding-step kernel for Bahdanau's additive attention
//! (`s2s_models::engine::kernels::additive_attention`) against the tensor ops it replaces: the
//! energies `v . tanh(keys + q)`, masked, a softmax and the weighted sum of the values, with and without
//! rows sharing a sentence's memory. Also `Attention::attend` for every score (additive, dot,
//! general: the last two through `single_query_attention`), whose tracked (autodiff) inputs take
//! the tensor-op path: both must agree.

mod common;

use burn::module::Module;
use burn::tensor::activation::softmax;
use burn::tensor::{Bool, Int, Tensor, TensorData};
use s2s_models::attention::{Attention, Score};
use s2s_models::engine::RowMap;
use s2s_models::engine::kernels::additive_attention;

fn tensor<const D: usize>(dims: [usize; D], seed: u64, scale: f32) -> Tensor<D> {
    let n = dims.iter().product();
    let v: Vec<f32> = common::hashed_values(n, seed)
        .into_iter()
        .map(|x| x * scale)
        .collect();
    Tensor::from_data(TensorData::new(v, dims), &common::device())
}

fn host<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_into_vec::<f32>().unwrap()
}

#[test]
fn additive_attention_matches_the_tensor_ops() {
    let (rows, len, a, d) = (3, 7, 24, 10);
    let q = tensor([rows, a], 1, 1.5);
    let keys = tensor([rows, len, a], 2, 1.5);
    let v = tensor([a, 1], 3, 1.0);
    let values = tensor([rows, len, d], 4, 2.0);
    // Row r pads its last r keys.
    let pad: Vec<bool> = (0..rows * len).map(|i| i % len + i / len >= len).collect();
    let pad = Tensor::<2, Bool>::from_data(TensorData::new(pad, [rows, len]), &common::device());
    let energies = (keys.clone() + q.clone().unsqueeze_dim::<3>(1))
        .tanh()
        .matmul(v.clone().unsqueeze_dim::<3>(0).expand([rows, a, 1]))
        .reshape([rows, len]);
    let want_w = softmax(energies.mask_fill(pad.clone(), -1.0e9), 1);
    let want_ctx = want_w
        .clone()
        .unsqueeze_dim::<3>(1)
        .matmul(values.clone())
        .reshape([rows, d]);
    let (want_ctx, want_w) = (host(want_ctx), host(want_w));
    // The mask as built, and as burn-flex's `select` relabels it (`U8`), as after a beam fan-out.
    let ids =
        Tensor::<1, Int>::from_data(TensorData::new(vec![0i64, 1, 2], [3]), &common::device());
    for mask in [pad.clone(), pad.clone().select(0, ids)] {
        let (ctx, w) = additive_attention(&q, &keys, &v, &values, &mask, &RowMap::identity())
            .expect("the CPU backend takes the kernel");
        let w = host(w);
        common::assert_close(&host(ctx), &want_ctx, "context");
        common::assert_close(&w, &want_w, "weights");
        for r in 1..rows {
            assert!(
                w[r * len + len - r..(r + 1) * len]
                    .iter()
                    .all(|&x| x == 0.0),
                "row {r}: padding weighted"
            );
        }
    }
    // Beams sharing their sentence's keys, values and padding through a row map.
    let kv_rows = [2usize, 2, 0, 1, 0];
    let q5 = tensor([kv_rows.len(), a], 7, 1.5);
    let ids: Vec<i64> = kv_rows.iter().map(|&r| r as i64).collect();
    let ids = Tensor::<1, Int>::from_data(TensorData::new(ids, [5]), &common::device());
    let (k5, v5, p5) = (
        keys.clone().select(0, ids.clone()),
        values.clone().select(0, ids.clone()),
        pad.clone().select(0, ids),
    );
    let (want_ctx, want_w) =
        additive_attention(&q5, &k5, &v, &v5, &p5, &RowMap::identity()).unwrap();
    let (ctx, w) = additive_attention(&q5, &keys, &v, &values, &pad, &RowMap::from(&kv_rows[..]))
        .expect("the CPU backend takes the kernel");
    assert_eq!(host(ctx), host(want_ctx), "shared context");
    assert_eq!(host(w), host(want_w), "shared weights");
}

/// `Attention::attend` for every score, over a memory whose rows are shared by beams (a row map),
/// against the same attention on an autodiff device, where the kernels decline and the tensor
/// ops run over the memory gathered per row.
#[test]
fn attend_agrees_with_and_without_the_kernels() {
    let device = common::device();
    let (len, dim, a) = (5, 8, 12);
    for score in [Score::Additive, Score::Dot, Score::General] {
        // Dot needs queries as wide as the values; general then has keys narrower than values.
        let q_dim = if score == Score::Dot { dim } else { 6 };
        let attn = Attention::new(score, q_dim, dim, a, &device);
        let values = tensor([2, len, dim], 5, 1.0);
        let pad = Tensor::<2, Bool>::from_data(
            TensorData::new(
                vec![
                    false, false, false, true, true, false, false, false, false, false,
                ],
                [2, len],
            ),
            &device,
        );
        // Three decoder rows: two beams of sentence 1, one of sentence 0.
        let rows = [1usize, 0, 1];
        let query = tensor([rows.len(), q_dim], 6, 1.0);
        let memory = attn.prepare(values.clone(), pad.clone()).select_rows(&rows);
        let (ctx, w) = attn.attend(query.clone(), &memory);
        // The same weights and inputs on an autodiff device: the kernels decline, the ops run.
        let ad = device.clone().autodiff();
        let attn_ad = attn.clone().to_device(&ad);
        let on_ad = |t: Tensor<3>| Tensor::<3>::from_data(t.into_data(), &ad).require_grad();
        let tracked = attn_ad
            .prepare(on_ad(values), Tensor::from_data(pad.into_data(), &ad))
            .select_rows(&rows);
        let query_ad = Tensor::<2>::from_data(query.into_data(), &ad).require_grad();
        if let Some(v) = &attn_ad.v {
            let declined = additive_attention(
                &query_ad,
                &tracked.keys,
                &v.weight.val(),
                &tracked.values,
                &tracked.pad,
                &tracked.rows,
            );
            assert!(
                declined.is_none(),
                "the kernel must leave tracked tensors to autodiff"
            );
        }
        let (ctx_t, w_t) = attn_ad.attend(query_ad, &tracked);
        let what = format!("{score:?}");
        common::assert_close(&host(ctx), &host(ctx_t), &what);
        let w = host(w);
        common::assert_close(&w, &host(w_t), &what);
        // Rows 0 and 2 read sentence 1, which pads nothing; row 1 reads sentence 0.
        assert!(
            w[len + 3..2 * len].iter().all(|&x| x == 0.0),
            "{what}: padding"
        );
    }
}
