//! The engine's memory admission: every byte the engine holds on the device (resident
//! bases, the workspaces of calls in flight, idle workspaces) is counted against one budget,
//! and idle workspaces are kept for the next calls.
//!
//! A call reserves, before it allocates anything, exactly what its workspace will hold after
//! the call (`Workspace::footprint_with`); when that does not fit, idle workspaces are
//! freed first, and then the call waits until calls in flight give their reservations back.
//! Only what cannot fit even with nothing else in flight is refused
//! ([`MsmError::InputTooLarge`]).
//!
//! Waiters are served in the order they came (a ticket queue): a call that fits is not
//! admitted while an earlier one waits, so a large call is never starved by a stream of
//! small ones. Every wait has a deadline; a call past it leaves the queue with
//! [`MsmError::Timeout`], holding nothing.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::slots::Slot;
pub use super::workspace::{size_class, MIN_CLASS_BYTES};
use super::workspace::{SizeCaps, Workspace};
use crate::error::{MsmError, Result};

/// Idle workspaces the pool keeps; more are dropped when returned (after a burst of
/// concurrent calls) so that their memory goes back to the device.
pub const MAX_IDLE_WORKSPACES: usize = 4;

/// What a device's memory budget holds now (`GpuMsm::memory_usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// The budget, in bytes.
    pub budget: u64,
    /// Bytes reserved by calls in flight.
    pub in_flight: u64,
    /// Bytes held by idle pooled workspaces.
    pub idle: u64,
    /// Bytes held by resident bases.
    pub resident: u64,
    /// The largest total (in flight + idle + resident) ever admitted.
    pub peak: u64,
    /// How many times a call or a load waited for room.
    pub waits: u64,
}

impl MemoryUsage {
    /// Bytes counted against the budget now.
    pub fn total(&self) -> u64 {
        self.in_flight + self.idle + self.resident
    }
}

struct Ledger {
    idle: Vec<Workspace>,
    usage: MemoryUsage,
    /// Tickets of the calls and loads waiting for room, in the order they came; only the
    /// first may be admitted.
    queue: VecDeque<u64>,
    next_ticket: u64,
    /// The tasks of waiters that wait without blocking a thread ([`Pool::take_async`]), by
    /// ticket: woken whenever the condition variable is signalled.
    wakers: Vec<(u64, Waker)>,
}

impl Ledger {
    /// Frees the smallest idle workspace other than `keep`; false when there is none.
    fn free_idle(&mut self, keep: Option<usize>) -> bool {
        let victim = (0..self.idle.len())
            .filter(|&i| Some(i) != keep)
            .min_by_key(|&i| self.idle[i].bytes());
        let Some(i) = victim else { return false };
        let ws = self.idle.swap_remove(i);
        self.usage.idle -= ws.bytes();
        true
    }

    fn admit(&mut self, bytes: u64) -> bool {
        let total = self.usage.total() + bytes;
        if total > self.usage.budget {
            return false;
        }
        self.usage.peak = self.usage.peak.max(total);
        true
    }
}

/// One try at admitting a waiter ([`Pool::admit_in_turn`]).
enum Admission<T> {
    /// Admitted, with what the waiter takes.
    Admitted(T),
    /// No room yet, but an idle workspace was freed: try again at once.
    Freed,
    /// No room: wait for calls in flight.
    NoRoom,
}

/// What waits for room: a call's buffers, or resident bases.
const CALL: &str = "this call's buffers";
const BASES: &str = "these bases";

/// A waiter's place in the queue (its ticket, once it had to wait) and its deadline.
struct Turn {
    ticket: Option<u64>,
    /// `None`: a timeout too long to add to the clock, no deadline at all.
    deadline: Option<Instant>,
    timeout: Duration,
}

impl Turn {
    fn new(timeout: Duration) -> Self {
        Self {
            ticket: None,
            deadline: Instant::now().checked_add(timeout),
            timeout,
        }
    }

    /// Time left before the deadline.
    fn left(&self) -> Duration {
        self.deadline.map_or(Duration::MAX, |d| {
            d.saturating_duration_since(Instant::now())
        })
    }

    /// Takes a ticket at the back of the queue, unless it holds one.
    fn queue(&mut self, l: &mut Ledger) {
        if self.ticket.is_none() {
            let t = l.next_ticket;
            l.next_ticket += 1;
            l.queue.push_back(t);
            l.usage.waits += 1;
            self.ticket = Some(t);
        }
    }

    /// Leaves the queue (its task forgotten); true if it was in it: the next in line may be
    /// admitted now, and the waiters must be woken.
    fn leave(&mut self, l: &mut Ledger) -> bool {
        let Some(t) = self.ticket.take() else {
            return false;
        };
        l.queue.retain(|&q| q != t);
        l.wakers.retain(|(q, _)| *q != t);
        true
    }
}

/// A call's wait for room that blocks no thread ([`Pool::take_async`]).
pub(crate) struct RoomWait<'a> {
    pool: &'a Arc<Pool>,
    needs: &'a [(Slot, u64)],
    /// Bytes the call holds in a new workspace.
    fresh: u64,
    turn: Turn,
    /// The task the deadline's timer wakes, once armed.
    timer: Option<Waker>,
}

impl Future for RoomWait<'_> {
    type Output = Result<Lease>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Lease>> {
        let this = self.get_mut();
        let pool = this.pool;
        let (needs, fresh) = (this.needs, this.fresh);
        let mut l = pool.lock();
        let mut admit = |l: &mut Ledger| pool.try_take(l, needs, fresh);
        let step = pool.step(&mut l, &mut this.turn, true, (CALL, fresh), &mut admit);
        if let Some((out, left)) = step {
            if left {
                pool.wake(l);
            }
            let out = out.map(|t| t.expect("a waiter gets room or an error"));
            return Poll::Ready(out.map(|(ws, reserved)| pool.lease(ws, reserved)));
        }
        let ticket = this.turn.ticket.expect("queued by step");
        l.wakers.retain(|(q, _)| *q != ticket);
        l.wakers.push((ticket, cx.waker().clone()));
        drop(l);
        if let Some(at) = this.turn.deadline {
            if !this.timer.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                this.timer = Some(cx.waker().clone());
                super::deadline::wake_at(at, cx.waker().clone());
            }
        }
        Poll::Pending
    }
}

impl Drop for RoomWait<'_> {
    fn drop(&mut self) {
        let mut l = self.pool.lock();
        if self.turn.leave(&mut l) {
            self.pool.wake(l);
        }
    }
}

/// Idle workspaces and the memory budget, shared by the calls of one device.
pub(crate) struct Pool {
    ledger: Mutex<Ledger>,
    room: Condvar,
    /// The device's caps on its workspaces' buffers.
    caps: SizeCaps,
}

/// A workspace lent to one call, with the bytes it reserved. Dropping it gives the
/// reservation back and frees the workspace; [`Lease::keep`] returns it to the pool.
pub(crate) struct Lease {
    ws: Option<Workspace>,
    reserved: u64,
    pool: Arc<Pool>,
}

impl std::ops::Deref for Lease {
    type Target = Workspace;
    fn deref(&self) -> &Workspace {
        self.ws.as_ref().expect("held until dropped")
    }
}

impl std::ops::DerefMut for Lease {
    fn deref_mut(&mut self) -> &mut Workspace {
        self.ws.as_mut().expect("held until dropped")
    }
}

impl Lease {
    /// Returns the workspace to the pool for the next call (after a call that finished).
    pub(crate) fn keep(mut self) {
        let ws = self.ws.take();
        self.pool.give_back(self.reserved, ws);
        self.reserved = 0;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.ws.is_some() || self.reserved > 0 {
            // A call that did not finish: its buffers may be mid-mapping; free them.
            self.ws = None;
            self.pool.give_back(self.reserved, None);
        }
    }
}

/// Bytes of resident bases counted against the budget, given back when dropped.
pub(crate) struct ResidentCharge {
    bytes: u64,
    pool: Arc<Pool>,
}

impl Drop for ResidentCharge {
    fn drop(&mut self) {
        let mut l = self.pool.lock();
        l.usage.resident -= self.bytes;
        self.pool.wake(l);
    }
}

impl Pool {
    /// A pool under a budget of `budget` bytes, its workspaces' buffers within `caps`.
    pub(crate) fn new(budget: u64, caps: SizeCaps) -> Arc<Self> {
        Arc::new(Self {
            caps,
            ledger: Mutex::new(Ledger {
                idle: Vec::new(),
                usage: MemoryUsage {
                    budget,
                    ..Default::default()
                },
                queue: VecDeque::new(),
                next_ticket: 0,
                wakers: Vec::new(),
            }),
            room: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A workspace for a call whose buffers are `needs`, with room reserved for them: the
    /// largest idle workspace, or a new one. Frees idle workspaces to make room, then waits,
    /// behind every earlier waiter, for calls in flight to finish (only if `wait`; else
    /// `None`), at most `timeout` ([`MsmError::Timeout`]). A call that cannot fit with
    /// nothing else in flight is [`MsmError::InputTooLarge`].
    pub(crate) fn take(
        self: &Arc<Self>,
        needs: &[(Slot, u64)],
        wait: bool,
        timeout: Duration,
    ) -> Result<Option<Lease>> {
        let fresh = Workspace::new(self.caps).footprint_with(needs);
        let admitted = self.admit_in_turn(wait, timeout, CALL, fresh, |l| {
            self.try_take(l, needs, fresh)
        })?;
        Ok(admitted.map(|(ws, reserved)| self.lease(ws, reserved)))
    }

    /// [`Pool::take`] with `wait`, waiting without blocking the thread: the future's task
    /// is woken when room may have come, and at its deadline. Dropped while it waits, it
    /// leaves the queue.
    pub(crate) fn take_async<'a>(
        self: &'a Arc<Self>,
        needs: &'a [(Slot, u64)],
        timeout: Duration,
    ) -> RoomWait<'a> {
        RoomWait {
            pool: self,
            needs,
            fresh: Workspace::new(self.caps).footprint_with(needs),
            turn: Turn::new(timeout),
            timer: None,
        }
    }

    /// One try at admitting a call whose buffers are `needs` (`fresh` bytes in a new
    /// workspace), under the ledger's lock.
    fn try_take(
        &self,
        l: &mut Ledger,
        needs: &[(Slot, u64)],
        fresh: u64,
    ) -> Admission<(Workspace, u64)> {
        let best = (0..l.idle.len()).max_by_key(|&i| l.idle[i].bytes());
        if let Some(i) = best {
            let held = l.idle[i].bytes();
            let after = l.idle[i].footprint_with(needs);
            // Taking it moves its bytes from idle to this call's reservation.
            l.usage.idle -= held;
            if l.admit(after) {
                l.usage.in_flight += after;
                return Admission::Admitted((l.idle.swap_remove(i), after));
            }
            l.usage.idle += held;
        } else if l.admit(fresh) {
            l.usage.in_flight += fresh;
            return Admission::Admitted((Workspace::new(self.caps), fresh));
        }
        // No room: free an idle workspace (others first, then the largest too).
        if l.free_idle(best) || l.free_idle(None) {
            Admission::Freed
        } else {
            Admission::NoRoom
        }
    }

    /// Tries to admit ([`Pool::step`]) until there is an outcome, the thread blocked
    /// between tries.
    fn admit_in_turn<T>(
        &self,
        wait: bool,
        timeout: Duration,
        what: &str,
        bytes: u64,
        mut try_admit: impl FnMut(&mut Ledger) -> Admission<T>,
    ) -> Result<Option<T>> {
        let mut turn = Turn::new(timeout);
        let mut l = self.lock();
        loop {
            let step = self.step(&mut l, &mut turn, wait, (what, bytes), &mut try_admit);
            if let Some((out, left)) = step {
                if left {
                    self.wake(l);
                }
                return out;
            }
            let left = turn.left();
            l = self
                .room
                .wait_timeout(l, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// One look at the ledger for a waiter: `try_admit` runs when it is the waiter's turn
    /// (waiters are served in the order they came). Without `wait`, `None` rather than a
    /// wait; past its deadline, [`MsmError::Timeout`]; with no room and nothing in flight
    /// to wait for, [`MsmError::InputTooLarge`] (`what.0` needs `what.1` bytes). Returns
    /// the outcome once there is one (and whether the waiter left the queue: the others
    /// must then be woken), or `None` while it waits in the queue.
    fn step<T>(
        &self,
        l: &mut Ledger,
        turn: &mut Turn,
        wait: bool,
        (what, bytes): (&str, u64),
        try_admit: &mut impl FnMut(&mut Ledger) -> Admission<T>,
    ) -> Option<(Result<Option<T>>, bool)> {
        loop {
            let first = l.queue.front().copied() == turn.ticket
                || (turn.ticket.is_none() && l.queue.is_empty());
            if !first {
                break;
            }
            let out = match try_admit(l) {
                Admission::Freed => continue,
                Admission::Admitted(t) => Ok(Some(t)),
                Admission::NoRoom if l.usage.in_flight == 0 => {
                    Err(too_large(what, bytes, &l.usage))
                }
                Admission::NoRoom => break,
            };
            return Some((out, turn.leave(l)));
        }
        if !wait {
            return Some((Ok(None), turn.leave(l)));
        }
        turn.queue(l);
        if turn.left().is_zero() {
            let e = MsmError::Timeout(format!(
                "{what} ({bytes} bytes) waited {:?} for room in the memory budget \
                 (MsmConfig::gpu_timeout): {:?}",
                turn.timeout, l.usage
            ));
            return Some((Err(e), turn.leave(l)));
        }
        None
    }

    fn lease(self: &Arc<Self>, mut ws: Workspace, reserved: u64) -> Lease {
        ws.begin_call();
        Lease {
            ws: Some(ws),
            reserved,
            pool: Arc::clone(self),
        }
    }

    /// Counts `bytes` of resident bases against the budget (freeing idle workspaces and
    /// waiting in turn for calls in flight, at most `timeout`, as [`Pool::take`] does) until
    /// the charge is dropped.
    pub(crate) fn charge_resident(
        self: &Arc<Self>,
        bytes: u64,
        timeout: Duration,
    ) -> Result<ResidentCharge> {
        self.admit_in_turn(true, timeout, BASES, bytes, |l| {
            if l.admit(bytes) {
                l.usage.resident += bytes;
                Admission::Admitted(())
            } else if l.free_idle(None) {
                Admission::Freed
            } else {
                Admission::NoRoom
            }
        })?;
        Ok(ResidentCharge {
            bytes,
            pool: Arc::clone(self),
        })
    }

    /// Gives a call's reservation back, and keeps its workspace (if any) idle.
    fn give_back(&self, reserved: u64, ws: Option<Workspace>) {
        let mut l = self.lock();
        l.usage.in_flight -= reserved;
        if let Some(ws) = ws {
            debug_assert!(ws.bytes() <= reserved, "a call outgrew its reservation");
            if l.idle.len() < MAX_IDLE_WORKSPACES {
                l.usage.idle += ws.bytes();
                l.idle.push(ws);
            }
        }
        self.wake(l);
    }

    /// Wakes every waiter (threads and tasks), the ledger's lock released first.
    fn wake(&self, mut l: MutexGuard<'_, Ledger>) {
        let tasks = std::mem::take(&mut l.wakers);
        drop(l);
        self.room.notify_all();
        for (_, w) in tasks {
            w.wake();
        }
    }

    /// Number of idle workspaces.
    pub(crate) fn idle(&self) -> usize {
        self.lock().idle.len()
    }

    /// A workspace holding nothing yet, within the device's caps.
    pub(crate) fn empty_workspace(&self) -> Workspace {
        Workspace::new(self.caps)
    }

    /// The budget and what is counted against it now.
    pub(crate) fn usage(&self) -> MemoryUsage {
        self.lock().usage
    }
}

fn too_large(what: &str, bytes: u64, u: &MemoryUsage) -> MsmError {
    MsmError::InputTooLarge(format!(
        "{what} need {bytes} bytes of device memory; the engine's budget is {} bytes, \
         {} of them held by resident bases (MsmConfig::memory_budget)",
        u.budget, u.resident
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::task::Waker;

    /// What a call of `bytes` (a power of two, at least the smallest class) reserves.
    fn needs(bytes: u64) -> Vec<(Slot, u64)> {
        vec![(Slot::Buckets, bytes)]
    }

    /// Waits until `waiters` calls are queued (failing, not hanging, if they never are).
    fn queued(pool: &Pool, waiters: usize) {
        let give_up = Instant::now() + Duration::from_secs(60);
        while pool.lock().queue.len() < waiters {
            assert!(Instant::now() < give_up, "{waiters} waiters never queued");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// A large call waiting for room is served before a small one that came after it, even
    /// though the small one fits at once; a call that would have to wait is not admitted
    /// ahead of the queue; a wait past its deadline is `Timeout` and leaves nothing behind.
    #[test]
    fn waiters_are_served_in_order_and_each_wait_has_a_deadline() {
        let pool = Pool::new(1024, SizeCaps::NONE);
        let long = Duration::from_secs(60);
        let first = pool.take(&needs(512), true, long).unwrap().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            for (name, bytes, ahead) in [("large", 1024, 0), ("small", 256, 1)] {
                let (pool, tx) = (&pool, tx.clone());
                queued(pool, ahead);
                s.spawn(move || {
                    let lease = pool.take(&needs(bytes), true, long).unwrap().unwrap();
                    tx.send(name).unwrap();
                    drop(lease);
                });
            }
            queued(&pool, 2);
            assert!(pool.take(&needs(256), false, long).unwrap().is_none());
            let late = pool.take(&needs(256), true, Duration::from_millis(50));
            assert!(
                matches!(late, Err(MsmError::Timeout(_))),
                "{:?}",
                late.err()
            );
            assert_eq!(pool.lock().queue.len(), 2);
            assert!(rx.try_recv().is_err(), "admitted ahead of its turn");
            drop(first);
            assert_eq!(rx.recv().unwrap(), "large");
            assert_eq!(rx.recv().unwrap(), "small");
        });
        let u = pool.usage();
        assert_eq!((u.in_flight, u.waits), (0, 3), "{u:?}");
        assert!(u.peak <= 1024);
        // What cannot fit with nothing in flight is refused at once, not waited for.
        let too_big = pool.take(&needs(2048), true, long);
        assert!(matches!(too_big, Err(MsmError::InputTooLarge(_))));
        assert!(pool.lock().queue.is_empty());
    }

    /// One poll of `f` with a waker that does nothing.
    fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
    }

    /// Waits for room that block no thread keep the same order as blocked threads: a task
    /// queued before a thread is admitted first, one dropped while it waits leaves the
    /// queue (the next in line goes on), and one past its deadline is `Timeout` (woken by
    /// the deadline's timer, its reservation nothing).
    #[test]
    fn waits_without_a_thread_keep_the_order_and_their_deadlines() {
        let pool = Pool::new(1024, SizeCaps::NONE);
        let long = Duration::from_secs(60);
        let first = pool.take(&needs(512), true, long).unwrap().unwrap();
        let large = needs(1024);
        let mut task = pool.take_async(&large, long);
        assert!(poll_once(&mut task).is_pending());
        assert_eq!(pool.lock().queue.len(), 1);
        // A thread that would wait is not admitted ahead of the task, even where it fits.
        assert!(pool.take(&needs(256), false, long).unwrap().is_none());
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            let (pool, tx) = (&pool, tx.clone());
            s.spawn(move || {
                let lease = pool.take(&needs(256), true, long).unwrap().unwrap();
                tx.send("thread").unwrap();
                drop(lease);
            });
            queued(pool, 2);
            drop(first);
            let lease = match poll_once(&mut task) {
                Poll::Ready(l) => l.unwrap(),
                Poll::Pending => panic!("the task is first in line and there is room"),
            };
            assert!(rx.try_recv().is_err(), "the thread went ahead of the task");
            drop(lease);
            assert_eq!(rx.recv().unwrap(), "thread");
        });
        // Dropped while it waits: it leaves the queue and the one behind it goes on.
        let holder = pool.take(&needs(1024), true, long).unwrap().unwrap();
        let mut dropped = pool.take_async(&large, long);
        assert!(poll_once(&mut dropped).is_pending());
        drop(dropped);
        assert!(pool.lock().queue.is_empty() && pool.lock().wakers.is_empty());
        // Past its deadline, woken by the timer: `Timeout`, and nothing held.
        let short = pool.take_async(&large, Duration::from_millis(50));
        let late = pollster::block_on(short);
        assert!(
            matches!(late, Err(MsmError::Timeout(_))),
            "{:?}",
            late.err()
        );
        assert!(pool.lock().queue.is_empty());
        drop(holder);
        let u = pool.usage();
        assert_eq!(u.in_flight, 0, "{u:?}");
    }

    /// Under limits that are not powers of two, a buffer never exceeds the buffer cap nor
    /// falls short of its request, and a binding stops at the binding cap (a multiple of 4).
    #[test]
    fn classes_stay_within_the_device_caps() {
        let limits = wgpu::Limits {
            max_storage_buffer_binding_size: (64 << 10) + 6,
            max_buffer_size: (96 << 10) + 100,
            ..wgpu::Limits::default()
        };
        let caps = SizeCaps::of(&limits);
        assert_eq!((caps.buffer, caps.binding), (96 << 10, (64 << 10) + 4));
        for b in [
            0u64,
            4,
            1000,
            64 << 10,
            (64 << 10) + 4,
            (64 << 10) + 8,
            96 << 10,
        ] {
            let c = caps.class(b);
            assert!(
                c >= b && c <= caps.buffer && c.is_multiple_of(4),
                "{b} -> {c}"
            );
            assert!(c == size_class(b) || c == caps.buffer, "{b} -> {c}");
        }
        assert_eq!(caps.class(1000), 1024);
        assert_eq!(caps.class((64 << 10) + 4), 96 << 10);
        let nvidia = SizeCaps::of(&wgpu::Limits {
            max_storage_buffer_binding_size: (1 << 31) - 1,
            max_buffer_size: 1 << 40,
            ..wgpu::Limits::default()
        });
        assert_eq!(nvidia.binding, (1 << 31) - 4);
    }

    #[test]
    fn size_classes_are_powers_of_two_that_fit() {
        assert_eq!(size_class(0), MIN_CLASS_BYTES);
        assert_eq!(size_class(MIN_CLASS_BYTES - 1), MIN_CLASS_BYTES);
        assert_eq!(size_class(MIN_CLASS_BYTES), MIN_CLASS_BYTES);
        assert_eq!(size_class(MIN_CLASS_BYTES + 1), 2 * MIN_CLASS_BYTES);
        for b in [1u64, 1000, 4096, 4097, 1 << 30] {
            let c = size_class(b);
            assert!(c >= b && c.is_power_of_two() && c / 2 < b.max(MIN_CLASS_BYTES));
        }
    }
}
