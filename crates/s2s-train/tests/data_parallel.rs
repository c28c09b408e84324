//! Data parallelism over two CPU "devices" (the code path GPUs take): one step over batches
//! (A, B) equals one optimiser step on the averaged gradients of A and B computed on one device,
//! and a two-device training checkpoints and resumes bit for bit. One batch split over the CPU's
//! cores gives the batch's own gradient.

mod common;

use burn::optim::lr_scheduler::module_lr_scheduler::ModuleLearningRate;
use burn::optim::{GradientsParams, SgdConfig};
use burn::store::ModuleSnapshot;
use common::*;
use s2s_data::{BatchConfig, epoch_batches};
use s2s_models::Seq2SeqModel;
use s2s_models::backend::parse_devices;
use s2s_train::data_parallel::{batch_loss, forward_backward, share_rows, split_over_cores};
use s2s_train::trainer::make_optimizer;

fn config(data: &s2s_data::DataDir, max_steps: usize) -> s2s_infer::RunConfig {
    // Dropout and scheduled sampling are on: each replica's random streams must be reproduced.
    let text = format!(
        "arch = \"rnnsearch-tiny\"\n[model]\ndropout = 0.3\n[train]\nmax_steps = {max_steps}\nmax_tokens = 600\nlr = 3e-3\nwarmup_steps = 5\nteacher_forcing = 0.5\nvalid_every = 4\nvalid_bleu_sentences = 20\npatience = 0\n"
    );
    common::run_config_toml(data, &text)
}

/// Every parameter as (name, f32 values), sorted by name.
fn params(m: &Seq2SeqModel) -> Vec<(String, Vec<f32>)> {
    let mut out: Vec<(String, Vec<f32>)> = m
        .collect(None, None, false)
        .into_iter()
        .map(|t| {
            let (name, _, _, _, bytes) = t.into_parts().unwrap();
            let v = bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            (name, v)
        })
        .collect();
    out.sort_by(|x, y| x.0.cmp(&y.0));
    out
}

/// Largest absolute difference between two models' parameters.
fn max_diff(a: &Seq2SeqModel, b: &Seq2SeqModel) -> f32 {
    let (pa, pb) = (params(a), params(b));
    assert_eq!(pa.len(), pb.len());
    let mut worst = 0.0f32;
    for ((na, va), (nb, vb)) in pa.iter().zip(&pb) {
        assert_eq!(na, nb);
        assert_eq!(va.len(), vb.len());
        for (x, y) in va.iter().zip(vb) {
            worst = worst.max((x - y).abs());
        }
    }
    worst
}

#[test]
fn two_devices_step_on_the_averaged_gradients() {
    let _one_at_a_time = TRAINING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let data = reversal_data(dir.path(), 300, 6);
    let run = config(&data, 1);
    let cfg = &run.train;
    let split = data.encode(&data.train);
    let bcfg = BatchConfig {
        max_tokens: cfg.max_tokens,
        max_sentences: cfg.max_sentences,
    };
    let batches = epoch_batches(&split.lengths(), &bcfg, cfg.seed, 0);
    let (a, b) = (split.batch(&batches[0]), split.batch(&batches[1]));
    let devices = parse_devices("cpu,cpu").unwrap();
    let ad = devices[0].clone().autodiff();
    ad.seed(cfg.seed);
    let model = Seq2SeqModel::new(&run.model, run.src_vocab, run.tgt_vocab, &ad);
    let step = 3; // teacher forcing and dropout streams of a step other than the first

    // Two devices, one thread each, gradients accumulated on devices[0].
    let parallel = || forward_backward(&model, &devices, &split, &batches[..2], cfg, step).unwrap();
    // One device: the mean of the two batches' losses (replica i's random streams for batch i).
    let single = || {
        let la = batch_loss(&model, &ad, &a, cfg, step, 0).loss;
        let lb = batch_loss(&model, &ad, &b, cfg, step, 1).loss;
        let values = (
            la.clone().into_scalar::<f32>() as f64,
            lb.clone().into_scalar::<f32>() as f64,
        );
        let grads = GradientsParams::from_grads(((la + lb) * 0.5).backward(), &model);
        (values, grads)
    };

    let p = parallel();
    assert_eq!(p.batches, 2);
    assert_eq!(p.tokens, a.num_tgt_tokens() + b.num_tgt_tokens());
    let ((va, vb), reference) = single();
    let weighted =
        (va * a.num_tgt_tokens() as f64 + vb * b.num_tgt_tokens() as f64) / p.tokens as f64;
    assert!((p.loss - weighted).abs() < 1e-6, "{} vs {weighted}", p.loss);

    // SGD moves parameters by lr * gradient, so a sum instead of a mean would show.
    let lr = ModuleLearningRate::from(0.5);
    let mut sgd = SgdConfig::new().init();
    let by_parallel = sgd.step(lr.clone(), model.clone(), p.grads);
    let mut sgd = SgdConfig::new().init();
    let by_single = sgd.step(lr.clone(), model.clone(), reference);
    let moved = max_diff(&model, &by_single);
    assert!(
        moved > 1e-3,
        "the step moved the parameters by only {moved}"
    );
    let diff = max_diff(&by_parallel, &by_single);
    assert!(diff < 1e-6, "SGD after two devices differs by {diff}");

    // And the optimiser training uses (Adam, clipping), through its real configuration.
    let lr = ModuleLearningRate::from(s2s_train::schedule::learning_rate(
        cfg,
        &s2s_train::schedule::DecayPlan::by_steps(cfg),
        step + 1,
    ));
    let mut adam = make_optimizer(cfg);
    let by_parallel = adam.step(lr.clone(), model.clone(), parallel().grads);
    let mut adam = make_optimizer(cfg);
    let by_single = adam.step(lr, model.clone(), single().1);
    let diff = max_diff(&by_parallel, &by_single);
    assert!(diff < 1e-6, "Adam after two devices differs by {diff}");
}

/// The first batch of the epoch (more than 16 rows, so that the trainer splits it).
fn first_batch(data: &s2s_data::DataDir, run: &s2s_infer::RunConfig) -> s2s_data::Batch {
    let split = data.encode(&data.train);
    let bcfg = BatchConfig {
        max_tokens: run.train.max_tokens,
        max_sentences: run.train.max_sentences,
    };
    let batches = epoch_batches(&split.lengths(), &bcfg, run.train.seed, 0);
    let b = split.batch(&batches[0]);
    assert!(b.batch_size >= 16, "{} rows", b.batch_size);
    b
}

/// The sum of SGD-updated parameters' differences, as in the two-device test: one step on each
/// gradient, then the largest parameter difference, and how far the step moved them at all.
fn sgd_diff(model: &Seq2SeqModel, a: GradientsParams, b: GradientsParams) -> (f32, f32) {
    let lr = ModuleLearningRate::from(0.5);
    let by_a = SgdConfig::new().init().step(lr.clone(), model.clone(), a);
    let by_b = SgdConfig::new().init().step(lr, model.clone(), b);
    (max_diff(&by_a, &by_b), max_diff(model, &by_b))
}

#[test]
fn a_batch_split_over_the_cores_has_the_batch_gradient() {
    let _one_at_a_time = TRAINING.lock().unwrap_or_else(|e| e.into_inner());
    let device = burn::tensor::Device::flex();
    let ad = device.clone().autodiff();
    let dir = tempfile::tempdir().unwrap();
    let data = reversal_data(dir.path(), 300, 6);
    // No dropout, no scheduled sampling: the split must give the whole batch's gradient.
    let plain = common::run_config_toml(
        &data,
        "arch = \"rnnsearch-tiny\"\n[model]\ndropout = 0.0\n[train]\nmax_tokens = 600\n",
    );
    let b = first_batch(&data, &plain);
    let workers = s2s_models::workers::worker_count(&device, b.batch_size);
    if workers < 2 {
        eprintln!("one core: the batch is not split here, nothing to compare");
        return;
    }
    ad.seed(plain.train.seed);
    let model = Seq2SeqModel::new(&plain.model, plain.src_vocab, plain.tgt_vocab, &ad);
    let step = 3;
    let split = split_over_cores(&model, &device, &b, &plain.train, step, workers);
    assert_eq!(split.batches, workers);
    assert_eq!(split.tokens, b.num_tgt_tokens());
    let whole = batch_loss(&model, &ad, &b, &plain.train, step, 0).loss;
    let whole_value = whole.clone().into_scalar::<f32>() as f64;
    assert!(
        (split.loss - whole_value).abs() < 1e-5,
        "{} vs {whole_value}",
        split.loss
    );
    let reference = GradientsParams::from_grads(whole.backward(), &model);
    let (diff, moved) = sgd_diff(&model, split.grads, reference);
    assert!(
        moved > 1e-3,
        "the step moved the parameters by only {moved}"
    );
    assert!(diff < 1e-6, "SGD after the split differs by {diff}");

    // With dropout and scheduled sampling, share i draws from replica i's streams on its own
    // thread: the same as computing the shares one after another here, and the same every time.
    let noisy = config(&data, 1);
    ad.seed(noisy.train.seed);
    let model = Seq2SeqModel::new(&noisy.model, noisy.src_vocab, noisy.tgt_vocab, &ad);
    let b = first_batch(&data, &noisy);
    let split = || split_over_cores(&model, &device, &b, &noisy.train, step, workers);
    let first = split();
    let total = b.num_tgt_tokens() as f64;
    let mut losses = Vec::new();
    let mut sum = None;
    for i in 0..workers {
        let share = b.rows(share_rows(b.batch_size, workers, i));
        let loss = batch_loss(&model, &ad, &share, &noisy.train, step, i).loss;
        losses.push(loss.clone().into_scalar::<f32>() as f64 * share.num_tgt_tokens() as f64);
        let weighted = loss * (share.num_tgt_tokens() as f64 / total);
        sum = Some(match sum {
            None => weighted,
            Some(s) => s + weighted,
        });
    }
    let expected = losses.iter().sum::<f64>() / total;
    assert!(
        (first.loss - expected).abs() < 1e-6,
        "{} vs {expected}",
        first.loss
    );
    let reference = GradientsParams::from_grads(sum.unwrap().backward(), &model);
    let (diff, moved) = sgd_diff(&model, first.grads, reference);
    assert!(
        moved > 1e-3,
        "the step moved the parameters by only {moved}"
    );
    assert!(diff < 1e-6, "SGD after the split differs by {diff}");
    let (diff, _) = sgd_diff(&model, split().grads, split().grads);
    assert_eq!(diff, 0.0, "two identical split steps differ");
}

/// Where (epoch, batch in epoch) a two-device run is after `steps` steps: each step takes two
/// batches, or the single last one of an odd epoch; the trainer moves to the next epoch as soon as
/// one is used up.
fn position(data: &s2s_data::DataDir, run: &s2s_infer::RunConfig, steps: usize) -> (usize, usize) {
    let split = data.encode(&data.train);
    let bcfg = BatchConfig {
        max_tokens: run.train.max_tokens,
        max_sentences: run.train.max_sentences,
    };
    let count = |e: usize| epoch_batches(&split.lengths(), &bcfg, run.train.seed, e as u64).len();
    let (mut epoch, mut pos, mut odd) = (0usize, 0usize, false);
    for _ in 0..steps {
        let n = count(epoch);
        odd |= n % 2 == 1;
        pos += 2.min(n - pos);
        if pos == n {
            epoch += 1;
            pos = 0;
        }
    }
    eprintln!(
        "batches per epoch: {:?}",
        (0..=epoch).map(count).collect::<Vec<_>>()
    );
    assert!(
        odd,
        "an epoch with an odd number of batches ends with a one-batch step"
    );
    (epoch, pos)
}

#[test]
fn two_device_training_checkpoints_and_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let data = reversal_data(dir.path(), 650, 6);
    let devices = parse_devices("cpu, cpu").unwrap();
    let straight = dir.path().join("straight");
    let out = train_on(&straight, &data, &config(&data, 12), false, &devices);
    assert_eq!(out.state.step, 12);
    let (epoch, pos) = position(&data, &config(&data, 12), 12);
    assert!(epoch >= 1, "the run crosses an epoch boundary");
    let at = (out.state.epoch, out.state.batch_in_epoch);
    assert_eq!(at, (epoch, pos), "two batches per step");

    let halves = dir.path().join("halves");
    // Stopping at a validation step, so that the first half logs no extra final validation.
    let first = train_on(&halves, &data, &config(&data, 8), false, &devices);
    assert_eq!(first.state.step, 8);
    let second = train_on(&halves, &data, &config(&data, 12), true, &devices);
    assert_eq!(
        (second.state.epoch, second.state.batch_in_epoch),
        (out.state.epoch, out.state.batch_in_epoch)
    );
    assert_eq!(assert_same_metrics(&straight, &halves), 3);
    assert_same_checkpoint(&straight, &halves, &config(&data, 12), "two devices");
}

#[test]
fn device_lists_are_parsed_by_the_backend_selector() {
    assert_eq!(parse_devices("cpu,cpu").unwrap().len(), 2);
    assert!(parse_devices("").unwrap_err().contains("no device"));
    let err = parse_devices("cpu,tpu:0").unwrap_err();
    assert!(err.contains("tpu"), "{err}");
}
