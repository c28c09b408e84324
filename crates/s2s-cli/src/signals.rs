//! SIGINT and SIGTERM for `s2s train`: the first one asks the trainer to stop at the next step
//! boundary (it then writes a checkpoint), a second one exits at once.
//!
//! The `ctrlc` crate cannot tell the two signals apart, and the exit status must (130 for SIGINT,
//! 143 for SIGTERM, as a shell reports them). So the handlers are registered with
//! `signal-hook-registry`; they only touch an atomic, write a fixed message and `_exit`, which are
//! async-signal-safe. A watcher thread turns the recorded signal into an `Interrupter::stop`.
//! Exiting at once on the second signal corrupts nothing: every file is written to a temporary
//! name and renamed, and a checkpoint directory is swapped in only once complete.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// The first signal received (0 = none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The exit status for a process stopped by `signal`, as shells report it.
pub fn exit_code(signal: i32) -> i32 {
    128 + signal
}

pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

fn on_signal(signal: i32) {
    if RECEIVED
        .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        const MSG: &[u8] = b"\nsecond signal: exiting now without a new checkpoint; the last complete one is kept\n";
        // SAFETY: write(2) and _exit(2) are async-signal-safe; MSG is a valid static buffer.
        unsafe {
            libc::write(2, MSG.as_ptr().cast(), MSG.len());
            libc::_exit(exit_code(signal));
        }
    }
}

/// Installs the handlers and a watcher that calls `interrupter.stop` on the first signal.
pub fn install(interrupter: s2s_train::Interrupter) -> std::io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the action only uses atomics, write(2) and _exit(2), all async-signal-safe.
        unsafe { signal_hook_registry::register(signal, move || on_signal(signal)) }?;
    }
    std::thread::Builder::new()
        .name("s2s-signals".into())
        .spawn(move || {
            loop {
                let signal = RECEIVED.load(Ordering::SeqCst);
                if signal != 0 {
                    eprintln!(
                        "\n{} received: finishing the current step and writing a checkpoint (send it again to exit at once)…",
                        name(signal)
                    );
                    interrupter.stop(Some(name(signal)));
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })?;
    Ok(())
}

/// The signal that stopped training, if any.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}
