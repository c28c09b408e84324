//! The Transformer's prefix cache reorders lazily and then gathers rows and appends the new
//! position in one copy (`s2s_models::kernels::select_rows_then_cat`, on the CPU backend through
//! burn's backend-extension API). Both must equal the plain ops they replace: `select` on the rows,
//! then `cat` along the sequence axis.

mod common;

use burn::tensor::{Int, Tensor, TensorData};
use s2s_models::kernels::select_rows_then_cat;
use s2s_models::transformer::attention::{KeyValue, PrefixCache};

fn tensor(dims: [usize; 4], seed: u64) -> Tensor<4> {
    let n = dims.iter().product();
    Tensor::from_data(
        TensorData::new(common::hashed_values(n, seed), dims),
        &common::device(),
    )
}

fn plain(past: Tensor<4>, rows: &[usize], new: Tensor<4>) -> Vec<f32> {
    let ids: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
    let ids = Tensor::<1, Int>::from_data(TensorData::new(ids, [rows.len()]), &common::device());
    Tensor::cat(vec![past.select(0, ids), new], 2)
        .into_data()
        .try_into_vec::<f32>()
        .unwrap()
}

fn values(t: Tensor<4>) -> Vec<f32> {
    t.into_data().try_into_vec::<f32>().unwrap()
}

#[test]
fn select_rows_then_cat_equals_select_then_cat() {
    let past = tensor([4, 3, 5, 2], 1);
    // Repeats, drops and reorders rows; one and two new positions.
    for (rows, new_len) in [
        (vec![2usize, 0, 2, 1, 0], 1),
        (vec![3], 2),
        (vec![1, 0, 3, 2], 1),
    ] {
        let new = tensor([rows.len(), 3, new_len, 2], 2 + new_len as u64);
        let got = values(select_rows_then_cat(past.clone(), &rows, new.clone()));
        assert_eq!(got, plain(past.clone(), &rows, new), "rows {rows:?}");
    }
    // Views (as `split_heads` makes them): heads swapped with positions, not contiguous.
    let past_view = tensor([4, 5, 3, 2], 5).swap_dims(1, 2);
    let new_view = tensor([3, 1, 3, 2], 6).swap_dims(1, 2);
    let rows = [3, 3, 0];
    let got = values(select_rows_then_cat(
        past_view.clone(),
        &rows,
        new_view.clone(),
    ));
    assert_eq!(got, plain(past_view, &rows, new_view), "views");
    // A narrowed window (ConvS2S keeps the newest inputs of the last one): positions packed,
    // rows strided.
    let window = tensor([4, 1, 3, 2], 7).narrow(2, 1, 2);
    let new = tensor([2, 1, 1, 2], 8);
    let got = values(select_rows_then_cat(window.clone(), &[1, 3], new.clone()));
    assert_eq!(got, plain(window, &[1, 3], new), "narrowed");
}

#[test]
fn prefix_cache_composes_reorders_until_the_next_append() {
    let kv = |seed| KeyValue {
        key: tensor([4, 2, 3, 2], seed),
        value: tensor([4, 2, 3, 2], seed + 100),
    };
    let new = |seed| KeyValue {
        key: tensor([3, 2, 1, 2], seed),
        value: tensor([3, 2, 1, 2], seed + 100),
    };
    // Two reorders in a row: live row i ends up as row first[second[i]].
    let (first, second) = ([3usize, 1, 1, 0], [2usize, 0, 1]);
    let composed: Vec<usize> = second.iter().map(|&i| first[i]).collect();
    let got = PrefixCache::new(kv(1))
        .select_rows(&first)
        .select_rows(&second)
        .append(new(2));
    let (past, next) = (kv(1), new(2));
    assert_eq!(values(got.key), plain(past.key, &composed, next.key));
    assert_eq!(values(got.value), plain(past.value, &composed, next.value));
    // No reorder: a plain append of the rows as they are.
    let past = KeyValue {
        key: tensor([3, 2, 3, 2], 3),
        value: tensor([3, 2, 3, 2], 103),
    };
    let got = PrefixCache::new(past.clone()).append(new(4));
    assert_eq!(values(got.key), plain(past.key, &[0, 1, 2], new(4).key));
    assert_eq!(
        values(got.value),
        plain(past.value, &[0, 1, 2], new(4).value)
    );
}
