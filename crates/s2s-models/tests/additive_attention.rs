//! The decoding-step kernel for Bahdanau's additive attention
//! (`s2s_models::kernels::additive_attention`) against the tensor ops it replaces: the energies
//! `v . tanh(keys + q)`, masked, a softmax and the weighted sum of the values. Also through
//! `Attention::attend`, whose tracked (autodiff) inputs take the tensor-op path: both must agree.

mod common;

use burn::module::Module;
use burn::tensor::activation::softmax;
use burn::tensor::{Bool, Int, Tensor, TensorData};
use s2s_models::attention::{Attention, Score};
use s2s_models::kernels::additive_attention;

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
        let (ctx, w) = additive_attention(&q, &keys, &v, &values, &mask)
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
}

#[test]
fn attend_agrees_with_and_without_the_kernel() {
    let device = common::device();
    let (rows, len, q_dim, v_dim, a) = (2, 5, 6, 8, 12);
    let attn = Attention::new(Score::Additive, q_dim, v_dim, a, &device);
    let values = tensor([rows, len, v_dim], 5, 1.0);
    let pad = Tensor::<2, Bool>::from_data(
        TensorData::new(
            vec![
                false, false, false, true, true, false, false, false, false, false,
            ],
            [rows, len],
        ),
        &device,
    );
    let query = tensor([rows, q_dim], 6, 1.0);
    let memory = attn.prepare(values.clone(), pad.clone());
    let (ctx, w) = attn.attend(query.clone(), &memory);
    // The same weights and inputs on an autodiff device: the kernel declines, the ops run.
    let ad = device.clone().autodiff();
    let attn_ad = attn.clone().to_device(&ad);
    let on_ad = |t: Tensor<3>| Tensor::<3>::from_data(t.into_data(), &ad).require_grad();
    let tracked = attn_ad.prepare(on_ad(values), Tensor::from_data(pad.into_data(), &ad));
    let query_ad = Tensor::<2>::from_data(query.into_data(), &ad).require_grad();
    let v_ad = attn_ad.v.as_ref().unwrap().weight.val();
    let declined = additive_attention(
        &query_ad,
        &tracked.keys,
        &v_ad,
        &tracked.values,
        &tracked.pad,
    );
    assert!(
        declined.is_none(),
        "the kernel must leave tracked tensors to autodiff"
    );
    let (ctx_t, w_t) = attn_ad.attend(query_ad, &tracked);
    common::assert_close(&host(ctx), &host(ctx_t), "context");
    common::assert_close(&host(w), &host(w_t), "weights");
}
