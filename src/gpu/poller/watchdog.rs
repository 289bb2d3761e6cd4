//! The poller's watchdog: a thread beside each device's poller that takes the device to be
//! hung when a poll does not return. wgpu's `Device::poll` never waits for the GPU here
//! (`gpu::foreign::poll`), but it takes locks that a driver's submit holds while it runs,
//! and a submit that waits for a hung GPU holds them for good: the poller then never looks
//! at its deadlines again. The watchdog calls nothing in wgpu that could block.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{awaited, fail, Inner, SHORTEST_PAUSE};

/// The longest the watchdog sleeps before it looks again while anything is awaited.
const LOOK: Duration = Duration::from_secs(1);

impl Inner {
    /// The watchdog's thread: [`Inner::watch`], its flag cleared should it panic (the next
    /// wait starts another).
    pub(super) fn watch_polls(self: Arc<Self>) {
        let watched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.watch()));
        if watched.is_err() {
            self.lock().watchdog = false;
            tracing::error!(target: "gpu_msm", "the poller's watchdog panicked");
        }
    }

    /// Until the poller's thread ends: a poll in progress for longer than the waiters'
    /// deadline (the longest, as the poller judges it) with no callback run on the device
    /// meanwhile, seen so at two looks a grace apart (a process paused meanwhile may find
    /// the poll about to return), gets the device taken to be hung; while a poll is in
    /// progress on a lost device, later waiters fail at once.
    fn watch(&self) {
        // The GPU's progress as last seen, and when it was seen to move.
        let mut seen = (self.progress.load(Ordering::Acquire), Instant::now());
        // The poll found stuck at the last look.
        let mut suspect = None;
        let mut s = self.lock();
        while s.running {
            let now = Instant::now();
            let progress = self.progress.load(Ordering::Acquire);
            if progress != seen.0 {
                seen = (progress, now);
            }
            let longest = s.watched.iter().map(|w| w.timeout).max();
            let stuck = s
                .polling_since
                .map(|(t, poll)| (poll, now.saturating_duration_since(t.max(seen.1))));
            let wait = match (longest, stuck) {
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
                (Some(longest), Some((poll, stuck))) if stuck > longest => {
                    if suspect == Some(poll) {
                        drop(s);
                        self.drop_as_hung(longest);
                        s = self.lock();
                        continue;
                    }
                    suspect = Some(poll);
                    longest / 8
                }
                (Some(longest), stuck) => {
                    suspect = None;
                    longest.saturating_sub(stuck.map_or(Duration::ZERO, |(_, d)| d))
                }
            };
            let wait = wait.clamp(SHORTEST_PAUSE, LOOK);
            s = self
                .work
                .wait_timeout(s, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        s.watchdog = false;
    }
}
