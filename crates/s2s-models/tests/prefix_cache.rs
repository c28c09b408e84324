//! Reordered prefixes without the two copies: ConvS2S's windows gather rows and append the new
//! position in one copy (`s2s_models::engine::kernels::select_rows_then_cat`, on the CPU backend through
//! burn's backend-extension API), and the Transformer's prefix cache only records reorders until
//! the tensor-op path collapses it. Both must equal the plain ops: `select` on the rows, then
//! `cat` along the sequence axis.

mod common;

use burn::tensor::{Int, Tensor, TensorData};
use s2s_models::engine::kernels::select_rows_then_cat;
use s2s_models::transformer::attention::{CacheFormat, KeyValue, PrefixCache};

fn tensor(dims: [usize; 4], seed: u64) -> Tensor<4> {
    let n = dims.iter().product();
    Tensor::from_data(
        TensorData::new(common::hashed_values(n, seed), dims),
        &common::device(),
    )
}

fn ids(rows: &[usize]) -> Tensor<1, Int> {
    let ids: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
    Tensor::<1, Int>::from_data(TensorData::new(ids, [rows.len()]), &common::device())
}

fn plain(past: Tensor<4>, rows: &[usize], new: Tensor<4>) -> Vec<f32> {
    Tensor::cat(vec![past.select(0, ids(rows)), new], 2)
        .into_data()
        .try_into_vec::<f32>()
        .unwrap()
}

fn values(t: Tensor<4>) -> Vec<f32> {
    t.into_data().try_into_vec::<f32>().unwrap()
}

fn kernel(past: &Tensor<4>, rows: &[usize], new: &Tensor<4>) -> Vec<f32> {
    values(select_rows_then_cat(past, rows, new).expect("the CPU backend takes the kernel"))
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
        let got = kernel(&past, &rows, &new);
        assert_eq!(got, plain(past.clone(), &rows, new), "rows {rows:?}");
    }
    // Views (as `split_heads` makes them): heads swapped with positions, not contiguous.
    let past_view = tensor([4, 5, 3, 2], 5).swap_dims(1, 2);
    let new_view = tensor([3, 1, 3, 2], 6).swap_dims(1, 2);
    let rows = [3, 3, 0];
    let got = kernel(&past_view, &rows, &new_view);
    assert_eq!(got, plain(past_view, &rows, new_view), "views");
    // A narrowed window (ConvS2S keeps the newest inputs of the last one): positions packed,
    // rows strided.
    let window = tensor([4, 1, 3, 2], 7).narrow(2, 1, 2);
    let new = tensor([2, 1, 1, 2], 8);
    let got = kernel(&window, &[1, 3], &new);
    assert_eq!(got, plain(window, &[1, 3], new), "narrowed");
}

#[test]
fn prefix_cache_collapses_to_the_reordered_prefix() {
    let kv = |seed| KeyValue {
        key: tensor([4, 2, 3, 2], seed),
        value: tensor([4, 2, 3, 2], seed + 100),
    };
    let new = |seed, rows| KeyValue {
        key: tensor([rows, 2, 1, 2], seed),
        value: tensor([rows, 2, 1, 2], seed + 100),
    };
    // Two reorders in a row: live row i ends up as row first[second[i]]; a step in between adds
    // a block, which the second reorder moves too.
    let (first, second) = ([3usize, 1, 1, 0], [2usize, 0, 1]);
    let mut cache = PrefixCache::new(kv(1), CacheFormat::F32).select_rows(&first);
    cache.append(new(2, 4));
    let mut cache = cache.select_rows(&second);
    cache.append(new(3, 3));
    let got = cache.collapse();
    let composed: Vec<usize> = second.iter().map(|&i| first[i]).collect();
    let plain_kv = |pick: fn(KeyValue) -> Tensor<4>| {
        let prefix = plain(
            pick(kv(1)),
            &composed,
            pick(new(2, 4)).select(0, ids(&second)),
        );
        let prefix =
            Tensor::<4>::from_data(TensorData::new(prefix, [3, 2, 4, 2]), &common::device());
        values(Tensor::cat(vec![prefix, pick(new(3, 3))], 2))
    };
    assert_eq!(values(got.key), plain_kv(|kv| kv.key));
    assert_eq!(values(got.value), plain_kv(|kv| kv.value));
    // Collapsed, the cache is that one block: collapsing again changes nothing.
    assert_eq!(values(cache.collapse().key), plain_kv(|kv| kv.key));
    // No reorder: the blocks in order.
    let past = KeyValue {
        key: tensor([3, 2, 3, 2], 3),
        value: tensor([3, 2, 3, 2], 103),
    };
    let mut cache = PrefixCache::new(past.clone(), CacheFormat::F32);
    cache.append(new(4, 3));
    let got = cache.collapse();
    assert_eq!(values(got.key), plain(past.key, &[0, 1, 2], new(4, 3).key));
    assert_eq!(
        values(got.value),
        plain(past.value, &[0, 1, 2], new(4, 3).value)
    );
}
