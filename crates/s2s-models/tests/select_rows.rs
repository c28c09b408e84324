//! `select` along any axis of an N-D tensor, as beam search reorders its decoding state (the
//! vendored burn-flex builds the result by appending the selected slices in output order instead
//! of zero-filling it first; `vendor/burn-flex/PATCHES.md`). Checked against a plain gather, with
//! indices that repeat, skip and reorder.

use burn::tensor::{Device, Int, Tensor, TensorData};

#[test]
fn select_on_every_axis_equals_a_plain_gather() {
    let dev = Device::default();
    let dims = [4usize, 3, 5, 2];
    let n: usize = dims.iter().product();
    let values: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
    let t = Tensor::<4>::from_data(TensorData::new(values.clone(), dims), &dev);
    let at = |c: [usize; 4]| values[((c[0] * dims[1] + c[1]) * dims[2] + c[2]) * dims[3] + c[3]];
    for axis in 0..4 {
        // Repeats, drops and reorders: more, fewer and as many indices as the axis has.
        for idx in [vec![2usize, 0, 2, 1, 0], vec![1], vec![1, 0]] {
            if idx.iter().any(|&i| i >= dims[axis]) {
                continue;
            }
            let ids: Vec<i64> = idx.iter().map(|&i| i as i64).collect();
            let ids = Tensor::<1, Int>::from_data(TensorData::new(ids, [idx.len()]), &dev);
            let got = t
                .clone()
                .select(axis, ids)
                .into_data()
                .try_to_vec::<f32>()
                .unwrap();
            let mut out_dims = dims;
            out_dims[axis] = idx.len();
            let mut want = Vec::new();
            for a in 0..out_dims[0] {
                for b in 0..out_dims[1] {
                    for c in 0..out_dims[2] {
                        for d in 0..out_dims[3] {
                            let mut coord = [a, b, c, d];
                            coord[axis] = idx[coord[axis]];
                            want.push(at(coord));
                        }
                    }
                }
            }
            assert_eq!(got, want, "axis {axis}, indices {idx:?}");
        }
    }
}
