//! Wakes tasks at their deadlines: the one timer of the futures that wait for room in a
//! memory budget ([`super::pool::RoomWait`]), so that their waits end past
//! `MsmConfig::gpu_timeout` as a blocked thread's do. One thread for the process, started
//! on first use, parked while no deadline is set.

use std::sync::{Condvar, Mutex, OnceLock};
use std::task::Waker;
use std::time::Instant;

struct Timer {
    due: Mutex<Vec<(Instant, Waker)>>,
    changed: Condvar,
}

static TIMER: OnceLock<Timer> = OnceLock::new();

/// Wakes `waker` at `at` (or soon after). A waker whose task has ended meanwhile is woken
/// for nothing.
pub(crate) fn wake_at(at: Instant, waker: Waker) {
    let timer = TIMER.get_or_init(|| {
        let spawned = super::blocking::spawn_engine_thread("deadlines", run);
        if let Err(e) = spawned {
            // Waits then end only when room comes (each call in flight has its own deadline).
            tracing::warn!(target: "gpu_msm", error = %e, "cannot start the deadline timer");
        }
        Timer {
            due: Mutex::new(Vec::new()),
            changed: Condvar::new(),
        }
    });
    timer
        .due
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((at, waker));
    timer.changed.notify_all();
}

/// The timer's thread: wakes what is due, sleeps until the next deadline.
fn run() {
    let timer = loop {
        match TIMER.get() {
            Some(t) => break t,
            None => std::thread::yield_now(),
        }
    };
    let mut due = timer.due.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let now = Instant::now();
        let (ready, later): (Vec<_>, Vec<_>) = due.drain(..).partition(|(at, _)| *at <= now);
        *due = later;
        if !ready.is_empty() {
            drop(due);
            ready.into_iter().for_each(|(_, w)| super::foreign::wake(w));
            due = timer.due.lock().unwrap_or_else(|e| e.into_inner());
            continue;
        }
        due = match due.iter().map(|(at, _)| *at).min() {
            None => timer.changed.wait(due).unwrap_or_else(|e| e.into_inner()),
            Some(next) => {
                let wait = next.saturating_duration_since(now);
                timer
                    .changed
                    .wait_timeout(due, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
    }
}
