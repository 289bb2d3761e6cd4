//! Every wait for the GPU: a [`Signal`] is completed by a wgpu callback (a buffer mapped, a
//! submission done) and awaited by a future or a blocked thread; one [`Poller`] thread per
//! device polls it while any signal is awaited (and parks
//! otherwise), takes a GPU that completes nothing within a waiter's deadline to be hung, and
//! collects the calls whose futures were dropped while the GPU still ran them.
//!
//! The poller never waits inside wgpu (why: [`crate::gpu::device::foreign::poll`]): it polls, which
//! returns at once, and sleeps between polls ([`pause`]), woken early by a new waiter. A
//! poll that does not return all the same (behind a driver's submit stuck on a hung GPU)
//! is its [`watchdog`]'s.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the poller: its thread, waiters and deadlines, dropped calls collected |
//! | `watchdog.rs` | a poll that never returns, taken for a hung GPU |
//! | `hung.rs` | devices taken to be hung, kept until idle, at most four per adapter |

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::MsmError;
use crate::gpu::device::signal::{Awaited, Signal};
use crate::gpu::Loss;

pub(crate) mod hung;
mod watchdog;

/// The shortest sleep between two polls.
const SHORTEST_PAUSE: Duration = Duration::from_micros(20);

/// The longest sleep between two polls: the most a long wait ends late (as a new waiter on
/// a device busy with others' work may).
const LONGEST_PAUSE: Duration = Duration::from_millis(1);

/// The share of the quiet so far ([`pause`]) that the poller sleeps before it polls again.
const QUIET_SHARE: u32 = 32;

/// The sleep between two polls after `quiet`, the time since a callback last ran (or the
/// poller was last unparked): 1 / [`QUIET_SHARE`] of it, so that what the GPU finishes is
/// seen at most that share late (plus the scheduler's slack), a burst of callbacks is
/// followed closely, and a long wait costs a poll a millisecond.
fn pause(quiet: Duration) -> Duration {
    (quiet / QUIET_SHARE).clamp(SHORTEST_PAUSE, LONGEST_PAUSE)
}

/// Something the poller keeps until its signals are done: a dropped call's buffers (and
/// reservation in the memory budget), which the GPU may still be using ([`Busy`]).
trait Orphan: Send {
    /// Whether the GPU is done with it.
    fn finished(&self) -> bool;
}

/// A signal awaited, with its deadline for the GPU's progress.
struct Waiter {
    signal: Arc<Signal>,
    timeout: Duration,
    since: Instant,
}

#[derive(Default)]
struct State {
    watched: Vec<Waiter>,
    orphans: Vec<Box<dyn Orphan>>,
    /// The thread is running.
    running: bool,
    /// Times the thread was woken (a waiter or an orphan added, every handle dropped): it
    /// sleeps between polls only when none came since it last looked.
    woken: u64,
    /// Every handle is dropped: the thread ends once nothing is left to collect.
    closing: bool,
    /// Polls begun so far.
    polls: u64,
    /// When the poll in progress began, if one is, and its number ([`State::polls`]).
    polling_since: Option<(Instant, u64)>,
    /// The watchdog thread ([`Inner::watch_polls`]) is running.
    watchdog: bool,
}

impl State {
    /// The device's deadline for the GPU's progress, while anything is awaited: its longest
    /// waiter's (a first dispatch, where a driver may compile, `FIRST_DISPATCH_TIMEOUT`,
    /// keeps the GPU from finishing others' work for longer than their `gpu_timeout`, and
    /// is no hang).
    fn deadline(&self) -> Option<Duration> {
        self.watched.iter().map(|w| w.timeout).max()
    }
}

struct Inner {
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// The device's adapter, as kept devices are counted ([`hung::adapter_key`]).
    adapter_key: String,
    /// Callbacks run so far (`GpuContext::progress`): a GPU that runs them is busy, not hung.
    progress: Arc<AtomicU64>,
    lost: Arc<Loss>,
    state: Mutex<State>,
    work: Condvar,
    /// Test hook: the next poll does not return until the device is lost (as one blocked
    /// behind a driver's submit that waits for a hung GPU).
    stall_next_poll: std::sync::atomic::AtomicBool,
    /// Test hook: no poll while set, so that nothing the GPU finishes is seen (but by a
    /// submit's own poll), and no deadline judged.
    held: std::sync::atomic::AtomicBool,
}

/// The poller of one device, shared by every context on it; its thread starts on the first
/// wait and ends when the last handle is dropped (after collecting the orphans).
pub(crate) struct Poller(Arc<Inner>);

impl Poller {
    pub(crate) fn new(
        (device, queue): (wgpu::Device, wgpu::Queue),
        adapter_key: String,
        progress: Arc<AtomicU64>,
        lost: Arc<Loss>,
    ) -> Arc<Self> {
        Arc::new(Self(Arc::new(Inner {
            device,
            queue,
            adapter_key,
            progress,
            lost,
            state: Mutex::default(),
            work: Condvar::new(),
            stall_next_poll: Default::default(),
            held: Default::default(),
        })))
    }

    /// Test hook: the next poll does not return until the device is lost, as one blocked in
    /// wgpu behind a driver's submit that waits for a hung GPU.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn stall_next_poll(&self) {
        self.0.stall_next_poll.store(true, Ordering::Release);
    }

    /// Test hook: while `hold`, the device is not polled (nothing the GPU finishes is seen
    /// but by a submit's own poll, and no deadline is judged), as on a GPU still busy.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn hold(&self, hold: bool) {
        self.0.held.store(hold, Ordering::Release);
        let mut s = self.0.lock();
        s.woken += 1;
        drop(s);
        self.0.work.notify_all();
    }

    /// A future that completes with `signal`, the device polled meanwhile. Past `timeout`
    /// with no callback run on the device, the GPU is taken to be hung: the device is
    /// dropped and the signal fails with [`MsmError::Timeout`].
    pub(crate) fn watch(&self, signal: &Arc<Signal>, timeout: Duration) -> Awaited {
        if !signal.is_done() {
            let waiter = Waiter {
                signal: Arc::clone(signal),
                timeout,
                since: Instant::now(),
            };
            let mut s = self.0.lock();
            s.watched.push(waiter);
            self.0.start(s);
        }
        Awaited(Arc::clone(signal))
    }

    /// Keeps `orphan` until the GPU is done with it (its signals `until`, watched as a
    /// waiter's are, with `timeout`), then drops it.
    fn adopt(&self, orphan: Box<dyn Orphan>, until: &[Arc<Signal>], timeout: Duration) {
        let mut s = self.0.lock();
        s.orphans.push(orphan);
        let since = Instant::now();
        for signal in until.iter().filter(|u| !u.is_done()) {
            let signal = Arc::clone(signal);
            s.watched.push(Waiter {
                signal,
                timeout,
                since,
            });
        }
        self.0.start(s);
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.closing = true;
        s.woken += 1;
        drop(s);
        self.0.work.notify_all();
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the thread, starting it if it is not running, the lock `s` released after; a
    /// thread that cannot start fails the signals awaited.
    fn start(self: &Arc<Self>, mut s: MutexGuard<'_, State>) {
        s.woken += 1;
        self.work.notify_all();
        if !s.running {
            let me = Arc::clone(self);
            match crate::gpu::device::blocking::spawn_engine_thread("poller", move || me.run()) {
                Ok(()) => s.running = true,
                Err(e) => {
                    let (failed, orphans) = abandon(&mut s);
                    drop(s);
                    let e = MsmError::Gpu(format!("cannot start the poller: {e}"));
                    fail(failed, e);
                    drop(orphans);
                    return;
                }
            }
        }
        if !s.watchdog {
            // Started after the poller (it ends when the poller's thread does), and again
            // by the next wait should it end early.
            let me = Arc::clone(self);
            match crate::gpu::device::blocking::spawn_engine_thread("watchdog", move || {
                me.watch_polls()
            }) {
                Ok(()) => s.watchdog = true,
                Err(e) => {
                    tracing::warn!(target: "gpu_msm", error = %e, "cannot start the poller's watchdog")
                }
            }
        }
    }

    /// The thread: polls while anything is awaited or held, parks otherwise; a panic fails
    /// the signals awaited rather than leave them waiting, and frees what it held.
    fn run(self: Arc<Self>) {
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.serve()));
        let mut s = self.lock();
        s.running = false;
        // A poll a panic left is no poll in progress; the watchdog ends with the thread.
        s.polling_since = None;
        self.work.notify_all();
        if ran.is_err() {
            let (failed, orphans) = abandon(&mut s);
            drop(s);
            fail(failed, MsmError::Gpu("the device's poller panicked".into()));
            drop(orphans);
        }
    }

    fn serve(&self) {
        let mut seen = (self.progress.load(Ordering::Acquire), Instant::now());
        loop {
            let mut s = self.lock();
            let mut finished = collect(&mut s);
            if self.lost.is_lost() {
                // Nothing more will run on the device: what waits for it fails, what it held
                // is free.
                let (failed, orphans) = abandon(&mut s);
                finished.extend(orphans);
                drop(s);
                fail(failed, self.lost.error("the device was lost"));
                s = self.lock();
            }
            if s.watched.is_empty() && s.orphans.is_empty() {
                // Orphans are dropped without the lock (a reservation given back wakes
                // waiters for room), and the lists read again before parking.
                if s.closing || !finished.is_empty() {
                    let closing = s.closing;
                    drop(s);
                    drop(finished);
                    match closing {
                        true => return,
                        false => continue,
                    }
                }
                let _parked = self.work.wait(s).unwrap_or_else(|e| e.into_inner());
                seen = (self.progress.load(Ordering::Acquire), Instant::now());
                continue;
            }
            let now = Instant::now();
            let progress = self.progress.load(Ordering::Acquire);
            if progress != seen.0 || self.held.load(Ordering::Acquire) {
                seen = (progress, now);
            }
            if self.held.load(Ordering::Acquire) && !s.closing {
                // Test hook: nothing polled, no deadline judged.
                drop(s);
                drop(finished);
                std::thread::sleep(LONGEST_PAUSE);
                continue;
            }
            let longest = s.deadline();
            let late = longest.filter(|&t| s.watched.iter().any(|w| late(w, t, seen.1, now)));
            let quiet = now.saturating_duration_since(seen.1);
            let sleep = pause(quiet).min(longest.unwrap_or(LONGEST_PAUSE));
            let woken = s.woken;
            drop(s);
            drop(finished);
            let before = self.progress.load(Ordering::Acquire);
            let mut s = self.lock();
            s.polls += 1;
            s.polling_since = Some((Instant::now(), s.polls));
            drop(s);
            self.stall_if_asked();
            let polled = crate::gpu::device::foreign::poll(&self.device);
            self.lock().polling_since = None;
            if let Err(e) = polled {
                // wgpu fails a poll only for a device it lost.
                let failed = awaited(&mut self.lock());
                fail(failed, self.lost.error(&format!("poll: {e}")));
            }
            let ran = self.progress.load(Ordering::Acquire) != before;
            if let Some(timeout) = late {
                // Late only if this last poll, too, ran nothing.
                if !ran {
                    self.drop_as_hung(timeout);
                }
                continue;
            }
            if !ran {
                // Nothing ran: sleep, unless a waiter came meanwhile.
                let s = self.lock();
                if s.woken == woken {
                    let _slept = self.work.wait_timeout(s, sleep);
                }
            }
        }
    }

    /// The GPU ran no callback within the waiters' `timeout`: taken to be hung, every waiter
    /// fails and its device is dropped, but its queue is kept until it is idle ([`hung`]).
    /// No poll follows (one could block behind a driver's submit stuck on the hung GPU, and
    /// wgpu reports a destroyed device's loss only once its queue is empty, never here).
    fn drop_as_hung(&self, timeout: Duration) {
        // The poller's own handle keeps the queue alive until it is kept.
        if self.lost.set_hung() {
            tracing::warn!(target: "gpu_msm", ?timeout, "the GPU finished nothing in time: its device is dropped");
            hung::keep(
                self.device.clone(),
                self.queue.clone(),
                self.adapter_key.clone(),
            );
        }
        let failed = awaited(&mut self.lock());
        // A device the driver lost first (its callbacks never came) is lost, not hung.
        let waited = format!("no callback ran on the device for {timeout:?}");
        fail(failed, self.lost.error(&waited));
        // Lock-free in wgpu-core 30.0.2 (it marks the device invalid).
        self.device.destroy();
    }

    /// Test hook ([`Poller::stall_next_poll`]): at most a minute, should no watchdog come.
    fn stall_if_asked(&self) {
        if self.stall_next_poll.swap(false, Ordering::AcqRel) {
            let give_up = Instant::now() + Duration::from_secs(60);
            while !self.lost.is_lost() && Instant::now() < give_up {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// Whether a waiter has seen no progress for longer than `timeout`.
fn late(w: &Waiter, timeout: Duration, progress_at: Instant, now: Instant) -> bool {
    now.saturating_duration_since(w.since.max(progress_at)) > timeout
}

/// Takes the signals that are done off the list, and the orphans the GPU is done with
/// (returned, to be dropped without the lock: dropping one gives its reservation back).
fn collect(s: &mut State) -> Vec<Box<dyn Orphan>> {
    s.watched.retain(|w| !w.signal.is_done());
    let (done, held): (Vec<_>, Vec<_>) = std::mem::take(&mut s.orphans)
        .into_iter()
        .partition(|o| o.finished());
    s.orphans = held;
    done
}

/// Every signal awaited, taken off the list: to be failed ([`fail`]) once the lock is
/// released (completing one wakes its task, which an executor may poll at once).
fn awaited(s: &mut State) -> Vec<Arc<Signal>> {
    s.watched.drain(..).map(|w| w.signal).collect()
}

/// What a poller that cannot wait for the GPU any more (its device lost, its thread
/// panicked or never started) leaves: the signals awaited, to be failed, and the orphans,
/// to be dropped, both once the lock is released. An orphan's buffers are wgpu's to keep
/// until the GPU is done with them; its reservation comes back now rather than never.
fn abandon(s: &mut State) -> (Vec<Arc<Signal>>, Vec<Box<dyn Orphan>>) {
    (awaited(s), std::mem::take(&mut s.orphans))
}

fn fail(signals: Vec<Arc<Signal>>, e: MsmError) {
    for signal in signals {
        signal.complete(Err(e.clone()));
    }
}

/// What the GPU may be using until `until` are done: a call's buffers and reservation.
/// Dropped before then (its call's future dropped, or an error), it goes to the poller,
/// which drops it once they are: the reservation comes back when the GPU is done with
/// the buffers, not before.
pub(crate) struct Busy<T: Send + 'static> {
    held: Option<T>,
    until: Vec<Arc<Signal>>,
    /// The GPU's deadline for `until` (`MsmConfig::gpu_timeout`).
    timeout: Duration,
    poller: Arc<Poller>,
}

impl<T: Send + 'static> Busy<T> {
    /// `held`, not in use by the GPU yet.
    pub(crate) fn new(held: T, poller: &Arc<Poller>) -> Self {
        Self {
            held: Some(held),
            until: Vec::new(),
            timeout: Duration::MAX,
            poller: Arc::clone(poller),
        }
    }

    /// From now on the GPU may use it until `until` are done, within `timeout` of its last
    /// progress.
    pub(crate) fn until(&mut self, until: Vec<Arc<Signal>>, timeout: Duration) {
        self.until = until;
        self.timeout = timeout;
    }

    /// The signals it waits for that are not done yet.
    pub(crate) fn pending(&self) -> Vec<Arc<Signal>> {
        self.until
            .iter()
            .filter(|s| !s.is_done())
            .cloned()
            .collect()
    }

    /// What it holds, the GPU done with it (or never given it).
    pub(crate) fn release(mut self) -> T {
        debug_assert!(self.until.iter().all(|s| s.is_done()), "released in use");
        self.held.take().expect("held until released")
    }
}

impl<T: Send + 'static> std::ops::Deref for Busy<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.held.as_ref().expect("held until released")
    }
}

impl<T: Send + 'static> std::ops::DerefMut for Busy<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.held.as_mut().expect("held until released")
    }
}

impl<T: Send + 'static> Drop for Busy<T> {
    fn drop(&mut self) {
        let Some(held) = self.held.take() else { return };
        // A lost device runs nothing more: its buffers are free now.
        if self.until.iter().all(|s| s.is_done()) || self.poller.0.lost.is_lost() {
            return;
        }
        let until = std::mem::take(&mut self.until);
        let watched = until.clone();
        let orphan = Box::new(Orphaned { _held: held, until });
        self.poller.adopt(orphan, &watched, self.timeout);
    }
}

/// A dropped call's buffers and reservation, kept by the poller until the GPU is done.
struct Orphaned<T: Send> {
    _held: T,
    until: Vec<Arc<Signal>>,
}

impl<T: Send> Orphan for Orphaned<T> {
    fn finished(&self) -> bool {
        self.until.iter().all(|s| s.is_done())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Between polls the poller sleeps a share of the quiet so far, within its bounds.
    #[test]
    fn the_pause_between_polls_grows_with_the_wait() {
        assert_eq!(pause(Duration::ZERO), SHORTEST_PAUSE);
        let quiet = Duration::from_micros(100) * QUIET_SHARE;
        assert_eq!(pause(quiet), Duration::from_micros(100));
        assert_eq!(pause(Duration::from_secs(10)), LONGEST_PAUSE);
        let waits = (0..200).map(|k| Duration::from_micros(k * 50));
        let pauses: Vec<Duration> = waits.map(pause).collect();
        assert!(pauses.windows(2).all(|p| p[0] <= p[1]));
    }
}
