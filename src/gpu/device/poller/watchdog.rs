//! The poller's watchdog: a thread beside each device's poller that takes the device to be
//! hung when a poll does not return. wgpu's `Device::poll` never waits for the GPU here
//! (`gpu::device::foreign::poll`), but it takes locks that a driver's submit holds while it runs,
//! and a submit that waits for a hung GPU holds them for good: the poller then never looks
//! at its deadlines again. The watchdog calls nothing in wgpu that could block.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{awaited, fail, Inner};

/// The shortest the watchdog sleeps between two looks (a `gpu_timeout` of microseconds).
const SHORTEST_LOOK: Duration = Duration::from_micros(20);

/// The longest the watchdog sleeps between two looks while anything is awaited.
const LONGEST_LOOK: Duration = Duration::from_secs(1);

impl Inner {
    /// The watchdog's thread: [`Inner::look_for_stuck_polls`], its flag cleared should it
    /// panic (the next wait starts another).
    pub(super) fn watch_polls(self: Arc<Self>) {
        let looked =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.look_for_stuck_polls()));
        if looked.is_err() {
            self.lock().watchdog = false;
            tracing::error!(target: "gpu_msm", "the poller's watchdog panicked");
        }
    }

    /// Until the poller's thread ends (or every handle is dropped, nothing awaited): a poll
    /// in progress for longer than the device's deadline (`State::deadline`) since the later of its start and the last callback seen run on the device, and
    /// still so after a grace of an eighth of the deadline (a process paused meanwhile may
    /// find the poll about to return), gets the device taken to be hung; while a poll is in
    /// progress on a lost device, later waiters fail at once.
    fn look_for_stuck_polls(&self) {
        // The GPU's progress as last seen, and when it was seen to move.
        let mut seen = (self.progress.load(Ordering::Acquire), Instant::now());
        // The poll found past the deadline, and when.
        let mut suspect: Option<(u64, Instant)> = None;
        let mut s = self.lock();
        while s.running {
            let now = Instant::now();
            let progress = self.progress.load(Ordering::Acquire);
            if progress != seen.0 {
                seen = (progress, now);
            }
            let longest = s.deadline();
            // The poll in progress, and how long it has gone without a callback.
            let polling = s
                .polling_since
                .map(|(t, poll)| (poll, now.saturating_duration_since(t.max(seen.1))));
            let wait = match (longest, polling) {
                (None, _) if s.closing => break,
                (None, _) => {
                    suspect = None;
                    s = self.work.wait(s).unwrap_or_else(|e| e.into_inner());
                    continue;
                }
                (Some(_), Some(_)) if self.lost.is_lost() => {
                    let failed = awaited(&mut s);
                    drop(s);
                    fail(failed, self.lost.error("the device was lost"));
                    s = self.lock();
                    continue;
                }
                (Some(longest), Some((poll, quiet))) if quiet > longest => {
                    let grace = longest / 8;
                    match suspect {
                        Some((p, at))
                            if p == poll && now.saturating_duration_since(at) >= grace =>
                        {
                            drop(s);
                            self.drop_as_hung(longest);
                            s = self.lock();
                            continue;
                        }
                        Some((p, at)) if p == poll => grace - now.saturating_duration_since(at),
                        _ => {
                            suspect = Some((poll, now));
                            grace
                        }
                    }
                }
                (Some(longest), polling) => {
                    suspect = None;
                    longest.saturating_sub(polling.map_or(Duration::ZERO, |(_, quiet)| quiet))
                }
            };
            let wait = wait.clamp(SHORTEST_LOOK, LONGEST_LOOK);
            s = self
                .work
                .wait_timeout(s, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        s.watchdog = false;
    }
}
