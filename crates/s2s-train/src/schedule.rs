//! Learning-rate and teacher-forcing schedules. Both are pure functions of the step and of what
//! the checkpoint's `state.json` records (the [`DecayPlan`] of a time-budgeted run), so a resumed
//! run continues them exactly.
//!
//! A linear or cosine decay needs to know where it ends. With `max_steps` alone that is fixed.
//! With `max_minutes` (a time budget) the end is estimated from the measured seconds per step and
//! re-estimated at every checkpoint, validation time included ([`DecayPlan::replan`]): each new
//! plan continues the decay from where it stands and ends it where the budget now says, so the
//! rate never jumps, only its slope changes, and it reaches zero as the budget runs out, on a
//! fast machine or a slow one.

use s2s_infer::config::{LrSchedule, TeacherForcingSchedule, TrainConfig};
use serde::{Deserialize, Serialize};

/// How far a linear or cosine decay has gone: from `from_progress` at `from_step` to 1 at
/// `end_step`, linearly in steps. Progress 0 is the peak rate, 1 the end of the decay.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecayPlan {
    pub from_step: usize,
    pub from_progress: f64,
    /// 0 = not known yet: the decay stays at `from_progress`.
    pub end_step: usize,
}

impl DecayPlan {
    /// The step-based plan: from the end of warmup to `max_steps`.
    pub fn by_steps(cfg: &TrainConfig) -> Self {
        Self {
            from_step: cfg.warmup_steps,
            from_progress: 0.0,
            end_step: cfg.max_steps,
        }
    }

    /// Progress of the decay at `step`, in [0, 1].
    pub fn progress(&self, step: usize) -> f64 {
        if self.end_step == 0 || step <= self.from_step {
            return self.from_progress;
        }
        if self.end_step <= self.from_step {
            return 1.0;
        }
        let part = (step - self.from_step) as f64 / (self.end_step - self.from_step) as f64;
        (self.from_progress + (1.0 - self.from_progress) * part).min(1.0)
    }

    /// The plan that continues this one from `step` (where it stands now) to `end_step`.
    pub fn replan(&self, step: usize, end_step: usize) -> Self {
        let from_step = step.max(self.from_step);
        Self {
            from_step,
            from_progress: self.progress(from_step),
            end_step,
        }
    }
}

/// Whether the run's decay ends with its time budget rather than at a fixed step.
pub fn is_timed(cfg: &TrainConfig) -> bool {
    cfg.max_minutes > 0.0 && matches!(cfg.schedule, LrSchedule::Linear | LrSchedule::Cosine)
}

/// The step at which the time budget runs out, from the average seconds per step so far
/// (`elapsed_sec` over `step` steps, validations and checkpoints included); never beyond
/// `max_steps` when that is set too.
pub fn budget_end_step(cfg: &TrainConfig, step: usize, elapsed_sec: f64) -> usize {
    let left = (cfg.max_minutes * 60.0 - elapsed_sec).max(0.0);
    let per_step = elapsed_sec / step.max(1) as f64;
    let more = if per_step > 0.0 {
        (left / per_step).floor().min(1e12) as usize
    } else {
        0
    };
    let end = step + more;
    if cfg.max_steps > 0 {
        end.min(cfg.max_steps)
    } else {
        end
    }
}

/// The learning rate for optimiser step `step` (1-based), under `plan` for the decaying
/// schedules.
pub fn learning_rate(cfg: &TrainConfig, plan: &DecayPlan, step: usize) -> f64 {
    let step = step.max(1);
    let warmup = cfg.warmup_steps as f64;
    if warmup > 0.0 && step as f64 <= warmup {
        return cfg.lr * step as f64 / warmup;
    }
    // How much of the decay is left: 1 until its last `decay_fraction`, then down to 0.
    let left = || ((1.0 - plan.progress(step)) / cfg.decay_fraction).min(1.0);
    match cfg.schedule {
        LrSchedule::Constant => cfg.lr,
        LrSchedule::InverseSqrt => cfg.lr * (warmup.max(1.0) / step as f64).sqrt(),
        LrSchedule::Linear => cfg.lr * left(),
        LrSchedule::Cosine => cfg.lr * 0.5 * (1.0 + (std::f64::consts::PI * (1.0 - left())).cos()),
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

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn warmup_then_inverse_sqrt() {
        let cfg = TrainConfig {
            lr: 1e-3,
            warmup_steps: 100,
            schedule: LrSchedule::InverseSqrt,
            ..Default::default()
        };
        let plan = DecayPlan::by_steps(&cfg);
        assert!(close(learning_rate(&cfg, &plan, 50), 5e-4));
        assert!(close(learning_rate(&cfg, &plan, 100), 1e-3));
        assert!(close(learning_rate(&cfg, &plan, 400), 5e-4));
    }

    #[test]
    fn linear_and_cosine_decay_to_zero_at_max_steps() {
        let mut cfg = TrainConfig {
            lr: 1e-3,
            warmup_steps: 100,
            max_steps: 1100,
            schedule: LrSchedule::Linear,
            ..Default::default()
        };
        let plan = DecayPlan::by_steps(&cfg);
        assert!(close(learning_rate(&cfg, &plan, 100), 1e-3));
        assert!(close(learning_rate(&cfg, &plan, 600), 5e-4));
        assert!(close(learning_rate(&cfg, &plan, 1100), 0.0));
        assert!(close(learning_rate(&cfg, &plan, 2000), 0.0));
        cfg.schedule = LrSchedule::Cosine;
        assert!(close(learning_rate(&cfg, &plan, 100), 1e-3));
        assert!(close(learning_rate(&cfg, &plan, 600), 5e-4));
        assert!(close(
            learning_rate(&cfg, &plan, 350),
            1e-3 * (0.5 + 0.5 * 0.5f64.sqrt())
        ));
        assert!(learning_rate(&cfg, &plan, 1100).abs() < 1e-18);
        // Warmup-stable-decay: the peak until the last fifth, then down to zero.
        cfg.schedule = LrSchedule::Linear;
        cfg.decay_fraction = 0.2;
        assert!(close(learning_rate(&cfg, &plan, 900), 1e-3));
        assert!(close(learning_rate(&cfg, &plan, 1000), 5e-4));
        assert!(close(learning_rate(&cfg, &plan, 1100), 0.0));
    }

    #[test]
    fn a_new_plan_continues_the_decay_without_a_jump() {
        let cfg = TrainConfig {
            lr: 1e-3,
            warmup_steps: 100,
            schedule: LrSchedule::Linear,
            ..Default::default()
        };
        // No end known yet: the peak rate after warmup.
        let first = DecayPlan::by_steps(&cfg);
        assert!(close(learning_rate(&cfg, &first, 300), 1e-3));
        // At step 300 the budget is estimated to end at 1100.
        let second = first.replan(300, 1100);
        assert!(close(learning_rate(&cfg, &second, 300), 1e-3));
        assert!(close(learning_rate(&cfg, &second, 700), 5e-4));
        // At 700 the machine turns out faster: the end moves to 1500, from half the peak.
        let third = second.replan(700, 1500);
        assert!(close(learning_rate(&cfg, &third, 700), 5e-4));
        assert!(close(learning_rate(&cfg, &third, 1100), 2.5e-4));
        assert!(close(learning_rate(&cfg, &third, 1500), 0.0));
        // A plan made during warmup starts its decay at the end of warmup.
        let early = first.replan(50, 1100);
        assert_eq!(early.from_step, 100);
        assert!(close(learning_rate(&cfg, &early, 600), 5e-4));
        // The plan survives state.json.
        let json = serde_json::to_string(&third).unwrap();
        assert_eq!(serde_json::from_str::<DecayPlan>(&json).unwrap(), third);
    }

    #[test]
    fn the_budget_end_comes_from_the_measured_seconds_per_step() {
        let mut cfg = TrainConfig {
            max_minutes: 10.0,
            schedule: LrSchedule::Linear,
            ..Default::default()
        };
        assert!(is_timed(&cfg));
        // 200 steps in 120 s: 0.6 s a step, 480 s left, 800 more steps.
        assert_eq!(budget_end_step(&cfg, 200, 120.0), 1000);
        // Slower than thought: the end comes sooner.
        assert_eq!(budget_end_step(&cfg, 200, 300.0), 400);
        // Spent: it ends now.
        assert_eq!(budget_end_step(&cfg, 900, 650.0), 900);
        // max_steps caps it.
        cfg.max_steps = 700;
        assert_eq!(budget_end_step(&cfg, 200, 120.0), 700);
        cfg.schedule = LrSchedule::InverseSqrt;
        assert!(!is_timed(&cfg));
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
