//! Learning-rate and teacher-forcing schedules. Both are pure functions of the step, so a resumed
//! run continues them exactly without saving any schedule state beyond the step.

use s2s_infer::config::{LrSchedule, TeacherForcingSchedule, TrainConfig};

/// The learning rate for optimiser step `step` (1-based).
pub fn learning_rate(cfg: &TrainConfig, step: usize) -> f64 {
    let step = step.max(1) as f64;
    let warmup = cfg.warmup_steps as f64;
    if warmup > 0.0 && step <= warmup {
        return cfg.lr * step / warmup;
    }
    match cfg.schedule {
        LrSchedule::Constant => cfg.lr,
        LrSchedule::InverseSqrt => cfg.lr * (warmup.max(1.0) / step).sqrt(),
        LrSchedule::Linear => {
            let total = cfg.max_steps.max(1) as f64;
            cfg.lr * ((total - step) / (total - warmup).max(1.0)).clamp(0.0, 1.0)
        }
    }
}

/// Probability of feeding the gold previous token at optimiser step `step`.
pub fn teacher_forcing_ratio(cfg: &TrainConfig, step: usize) -> f64 {
    let floor = cfg.teacher_forcing.clamp(0.0, 1.0);
    let s = step as f64;
    let n = cfg.tf_decay_steps.max(1) as f64;
    match cfg.tf_schedule {
        TeacherForcingSchedule::Constant => floor,
        TeacherForcingSchedule::Linear => (1.0 - (1.0 - floor) * (s / n).min(1.0)).max(floor),
        TeacherForcingSchedule::InverseSigmoid => {
            let k = (n / 10.0).max(1.0);
            (k / (k + (s / k).exp())).max(floor)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_then_inverse_sqrt() {
        let cfg = TrainConfig {
            lr: 1e-3,
            warmup_steps: 100,
            schedule: LrSchedule::InverseSqrt,
            ..Default::default()
        };
        assert!((learning_rate(&cfg, 50) - 5e-4).abs() < 1e-12);
        assert!((learning_rate(&cfg, 100) - 1e-3).abs() < 1e-12);
        assert!((learning_rate(&cfg, 400) - 5e-4).abs() < 1e-12);
    }

    #[test]
    fn teacher_forcing_schedules_decay_to_the_floor() {
        let mut cfg = TrainConfig {
            teacher_forcing: 0.5,
            tf_decay_steps: 1000,
            ..Default::default()
        };
        cfg.tf_schedule = TeacherForcingSchedule::Linear;
        assert_eq!(teacher_forcing_ratio(&cfg, 0), 1.0);
        assert!((teacher_forcing_ratio(&cfg, 500) - 0.75).abs() < 1e-12);
        assert_eq!(teacher_forcing_ratio(&cfg, 5000), 0.5);
        cfg.tf_schedule = TeacherForcingSchedule::InverseSigmoid;
        assert!(teacher_forcing_ratio(&cfg, 0) > 0.95);
        assert_eq!(teacher_forcing_ratio(&cfg, 100_000), 0.5);
        cfg.tf_schedule = TeacherForcingSchedule::Constant;
        assert_eq!(teacher_forcing_ratio(&cfg, 0), 0.5);
    }
}
