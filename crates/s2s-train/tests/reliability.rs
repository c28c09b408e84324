//! Failures inside the trainer's write and update paths: a full disk while writing a checkpoint,
//! and a non-finite gradient norm.

mod common;

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
use common::*;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

fn hash_dir(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let h = format!("{:x}", Sha256::digest(std::fs::read(&p).unwrap()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), h)
        })
        .collect()
}

fn config(data: &s2s_data::DataDir, max_steps: usize) -> s2s_infer::RunConfig {
    run_config(
        "rnnsearch-tiny",
        data,
        &format!(
            "max_steps = {max_steps}\nmax_tokens = 300\nvalid_every = 3\nvalid_bleu_sentences = 5\npatience = 0\n"
        ),
    )
}

#[test]
fn a_full_disk_while_checkpointing_names_the_file_and_keeps_the_previous_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let data = reversal_data(dir.path(), 150, 5);
    let model_dir = dir.path().join("model");
    let out = train(&model_dir, &data, &config(&data, 3), false);
    assert_eq!(out.state.step, 3);
    let ckpt = model_dir.join("checkpoint");
    let before = hash_dir(&ckpt);

    // The disk fills up while the next checkpoint writes its optimiser state.
    s2s_data::io::simulate_full_disk_for(Some(s2s_train::checkpoint::OPTIMIZER));
    let result = try_train(&model_dir, &data, &config(&data, 6), true);
    s2s_data::io::simulate_full_disk_for(None);
    let err = result
        .expect_err("a full disk must fail training")
        .to_string();
    let file = model_dir
        .join("checkpoint.new")
        .join(s2s_train::checkpoint::OPTIMIZER);
    assert!(err.contains(&file.display().to_string()), "{err}");
    assert!(err.contains("the disk may be full"), "{err}");
    assert!(err.contains("--resume"), "{err}");

    // The previous checkpoint is intact and still the one found; no temporary file or
    // half-written checkpoint directory is left.
    assert_eq!(before, hash_dir(&ckpt));
    assert_eq!(s2s_train::checkpoint::locate(&model_dir).unwrap(), ckpt);
    let names: Vec<String> = std::fs::read_dir(&model_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.contains(".tmp.") && n != "checkpoint.new"),
        "{names:?}"
    );
    // With space again, the run resumes from the intact checkpoint.
    let out = train(&model_dir, &data, &config(&data, 6), true);
    assert_eq!(out.state.step, 6);
}

/// Collects every float parameter's id and shape.
struct Params(Vec<(ParamId, Vec<usize>)>);

impl ModuleVisitor for Params {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0.push((param.id, param.val().dims().to_vec()));
    }
}

#[test]
fn the_gradient_norm_is_not_finite_when_one_gradient_is_not() {
    let device = burn::tensor::Device::flex();
    let model_cfg = s2s_models::preset("rnnsearch-tiny").unwrap();
    let model = s2s_models::Seq2SeqModel::new(&model_cfg, 12, 12, &device);
    let mut params = Params(Vec::new());
    model.visit(&mut params);
    assert!(params.0.len() > 3);
    let with_grads = |bad: Option<f32>| {
        let mut grads = GradientsParams::new();
        for (i, (id, dims)) in params.0.iter().enumerate() {
            let n: usize = dims.iter().product();
            let mut v = vec![0.5f32; n];
            if let (2, Some(b)) = (i, bad) {
                v[n - 1] = b;
            }
            let data = burn::tensor::TensorData::new(v, dims.clone());
            match dims.len() {
                1 => grads.register(*id, Tensor::<1>::from_data(data, &device)),
                2 => grads.register(*id, Tensor::<2>::from_data(data, &device)),
                3 => grads.register(*id, Tensor::<3>::from_data(data, &device)),
                d => panic!("unexpected rank {d}"),
            }
        }
        s2s_train::trainer::grad_norm(&model, &grads)
    };
    let total: usize = params
        .0
        .iter()
        .map(|(_, d)| d.iter().product::<usize>())
        .sum();
    let finite = with_grads(None);
    assert!(
        (finite - 0.5 * (total as f64).sqrt()).abs() < 1e-3 * finite,
        "{finite}"
    );
    assert!(with_grads(Some(f32::NAN)).is_nan());
    assert!(with_grads(Some(f32::INFINITY)).is_infinite());
    assert_eq!(
        s2s_train::trainer::grad_norm(&model, &GradientsParams::new()),
        0.0
    );
}
