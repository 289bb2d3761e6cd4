//! Wakes tasks at their deadlines: the one timer of the futures that wait for room in a
//! memory budget ([`crate::gpu::memory::pool::RoomWait`]), so that their waits end past
//! `MsmConfig::gpu_timeout` as a blocked thread's do. One thread for the process, started
//! on first use, parked while no deadline is set. A deadline is kept only while its
//! [`Deadline`] is: a future dropped before its deadline takes its task's waker off the
//! timer at once (a long `gpu_timeout` keeps nothing alive for its length).

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::task::Waker;
use std::time::Instant;

struct Timer {
    due: Mutex<Due>,
    changed: Condvar,
}

/// The deadlines set, by entry number.
#[derive(Default)]
struct Due {
    entries: Vec<(u64, Instant, Waker)>,
    next: u64,
}

static TIMER: OnceLock<Timer> = OnceLock::new();

/// A deadline set on the timer ([`wake_at`]): dropped, it is taken off (its waker with it).
pub(crate) struct Deadline {
    entry: u64,
    at: Instant,
}

impl Deadline {
    /// When it wakes its task.
    pub(crate) fn at(&self) -> Instant {
        self.at
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if let Some(timer) = TIMER.get() {
            lock(timer).entries.retain(|e| e.0 != self.entry);
        }
    }
}

fn lock(timer: &Timer) -> MutexGuard<'_, Due> {
    timer.due.lock().unwrap_or_else(|e| e.into_inner())
}

/// Wakes `waker` at `at` (or soon after), unless the returned [`Deadline`] is dropped
/// first.
pub(crate) fn wake_at(at: Instant, waker: Waker) -> Deadline {
    let timer = TIMER.get_or_init(|| {
        let spawned = crate::gpu::device::blocking::spawn_engine_thread("deadlines", run);
        if let Err(e) = spawned {
            // Waits then end only when room comes (each call in flight has its own deadline).
            tracing::warn!(target: "gpu_msm", error = %e, "cannot start the deadline timer");
        }
        Timer {
            due: Mutex::new(Due::default()),
            changed: Condvar::new(),
        }
    });
    let mut due = lock(timer);
    let entry = due.next;
    due.next += 1;
    due.entries.push((entry, at, waker));
    drop(due);
    timer.changed.notify_all();
    Deadline { entry, at }
}

/// The timer's thread: wakes what is due, sleeps until the next deadline.
fn run() {
    let timer = loop {
        match TIMER.get() {
            Some(t) => break t,
            None => std::thread::yield_now(),
        }
    };
    let mut due = lock(timer);
    loop {
        let now = Instant::now();
        let (ready, later): (Vec<_>, Vec<_>) =
            due.entries.drain(..).partition(|(_, at, _)| *at <= now);
        due.entries = later;
        if !ready.is_empty() {
            drop(due);
            ready
                .into_iter()
                .for_each(|(_, _, w)| crate::gpu::device::foreign::wake(w));
            due = lock(timer);
            continue;
        }
        due = match due.entries.iter().map(|e| e.1).min() {
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
