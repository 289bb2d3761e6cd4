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
//! small ones. Every wait has a deadline, `timeout` after the wait began or after the
//! budget last moved (a reservation given back, a waiter admitted), whichever is later: a
//! call past it leaves the queue with [`MsmError::Timeout`], holding nothing, and is never
//! admitted. A waiter at the head of the queue past its deadline is taken out of it by the
//! next waiter that looks (a future its executor no longer polls holds no one up for
//! longer).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::error::{MsmError, Result};
use crate::gpu::memory::workspace::{SizeCaps, Workspace};
use crate::gpu::pipelines::slots::Slot;

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
    /// The calls and loads waiting for room, in the order they came; only the first may be
    /// admitted.
    queue: VecDeque<Queued>,
    /// The last time the budget moved: a reservation given back (a call's, or resident
    /// bases'), or a waiter admitted ([`Wait`]).
    moved_at: Instant,
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

    /// The budget moved: every wait's deadline restarts.
    fn moved(&mut self) {
        self.moved_at = Instant::now();
    }

    /// Takes the head of the queue out of it if it is past its deadline and is not `mine`
    /// (the looking waiter's ticket); true if it did: its own next look is a `Timeout`. Not
    /// a move of the budget: no deadline restarts, so a wait cannot be stretched by the
    /// waiters ahead of it leaving. The head's task stays among the wakers, to be woken,
    /// and dropped, by the next [`Pool::wake`], not under the lock.
    fn evict_expired_head(&mut self, mine: Option<u64>, now: Instant) -> bool {
        let Some(&head) = self.queue.front() else {
            return false;
        };
        if Some(head.ticket) == mine || !head.wait.expired(self.moved_at, now) {
            return false;
        }
        self.queue.pop_front();
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

/// How long a waiter waits for room: until `timeout` after it began (`since`) or after the
/// budget last moved ([`Ledger::moved_at`]), whichever is later.
#[derive(Clone, Copy)]
struct Wait {
    since: Instant,
    timeout: Duration,
}

impl Wait {
    /// Its deadline, the budget last moved at `moved_at` (`None`: too far to add to the
    /// clock, never).
    fn deadline(&self, moved_at: Instant) -> Option<Instant> {
        self.since.max(moved_at).checked_add(self.timeout)
    }

    fn expired(&self, moved_at: Instant, now: Instant) -> bool {
        self.deadline(moved_at).is_some_and(|d| d <= now)
    }
}

/// A waiter in the queue.
#[derive(Clone, Copy)]
struct Queued {
    ticket: u64,
    wait: Wait,
}

/// A waiter's place in the queue (its ticket, once it had to wait) and its wait.
struct Turn {
    ticket: Option<u64>,
    wait: Wait,
}

impl Turn {
    fn new(timeout: Duration) -> Self {
        let since = Instant::now();
        Self {
            ticket: None,
            wait: Wait { since, timeout },
        }
    }

    /// Whether it is past its deadline.
    fn expired(&self, l: &Ledger) -> bool {
        self.wait.expired(l.moved_at, Instant::now())
    }

    /// When the waiter must look again without being woken: at its deadline, or at the
    /// deadline of the waiter ahead of it, which it then takes out of the queue.
    fn next_look(&self, l: &Ledger) -> Option<Instant> {
        let head = l.queue.front().filter(|q| Some(q.ticket) != self.ticket);
        let head = head.and_then(|q| q.wait.deadline(l.moved_at));
        match (self.wait.deadline(l.moved_at), head) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Takes a ticket at the back of the queue, unless it holds one.
    fn queue(&mut self, l: &mut Ledger) {
        if self.ticket.is_none() {
            let ticket = l.next_ticket;
            l.next_ticket += 1;
            l.queue.push_back(Queued {
                ticket,
                wait: self.wait,
            });
            l.usage.waits += 1;
            self.ticket = Some(ticket);
        }
    }

    /// Whether it was queued and then taken out of the queue past its deadline
    /// ([`Ledger::evict_expired_head`]).
    fn evicted(&self, l: &Ledger) -> bool {
        self.ticket
            .is_some_and(|t| !l.queue.iter().any(|q| q.ticket == t))
    }

    /// Leaves the queue (its task forgotten); true if it was in it: the next in line may be
    /// admitted now, and the waiters must be woken.
    fn leave(&mut self, l: &mut Ledger) -> bool {
        let Some(t) = self.ticket.take() else {
            return false;
        };
        l.queue.retain(|q| q.ticket != t);
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
    /// The task the deadline's timer wakes, and its deadline on the timer, once armed
    /// (taken off the timer when the wait ends or is dropped).
    timer: Option<(Waker, crate::gpu::memory::timer::Deadline)>,
}

impl Future for RoomWait<'_> {
    type Output = Result<Lease>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Lease>> {
        let this = self.get_mut();
        let pool = this.pool;
        let (needs, fresh) = (this.needs, this.fresh);
        let l = pool.lock();
        let mut l = pool.evict(l, &this.turn);
        let mut admit = |l: &mut Ledger| pool.try_take(l, needs, fresh);
        let step = pool.step(&mut l, &mut this.turn, true, (CALL, fresh), &mut admit);
        if let Some((out, left)) = step {
            let out = out.map(|t| t.expect("a waiter gets room or an error"));
            // The lease holds the reservation before anything else runs.
            let out = out.map(|(ws, reserved)| pool.lease(ws, reserved));
            match left {
                true => pool.wake(l),
                false => drop(l),
            }
            // Its deadline off the timer, the ledger's lock released (the timer takes its own).
            this.timer = None;
            return Poll::Ready(out);
        }
        let ticket = this.turn.ticket.expect("queued by step");
        l.wakers.retain(|(q, _)| *q != ticket);
        l.wakers.push((ticket, cx.waker().clone()));
        let next = this.turn.next_look(&l);
        drop(l);
        if let Some(at) = next {
            // A timer armed for this task that has not fired, due no later, looks in time.
            let armed = this.timer.as_ref().is_some_and(|(w, due)| {
                w.will_wake(cx.waker()) && due.at() <= at && due.at() > Instant::now()
            });
            if !armed {
                // The deadline it replaces, if any, comes off the timer.
                let due = crate::gpu::memory::timer::wake_at(at, cx.waker().clone());
                this.timer = Some((cx.waker().clone(), due));
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
        let (ws, reserved) = (self.ws.take(), std::mem::take(&mut self.reserved));
        self.pool.give_back(reserved, ws);
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
        l.moved();
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
                moved_at: Instant::now(),
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
            l = self.evict(l, &turn);
            let step = self.step(&mut l, &mut turn, wait, (what, bytes), &mut try_admit);
            if let Some((out, left)) = step {
                if left {
                    self.wake(l);
                }
                return out;
            }
            let next = turn.next_look(&l);
            let sleep = next.map_or(Duration::MAX, |t| {
                t.saturating_duration_since(Instant::now())
            });
            l = self
                .room
                .wait_timeout(l, sleep)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// One look at the ledger for a waiter: `try_admit` runs when it is the waiter's turn
    /// (waiters are served in the order they came). Without `wait`, `None` rather than a
    /// wait; past its deadline (or taken out of the queue, [`Pool::evict`]),
    /// [`MsmError::Timeout`]; with no room and nothing in flight to wait for,
    /// [`MsmError::InputTooLarge`] (`what` needs `bytes`). Returns
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
        if turn.evicted(l) {
            // Out of the queue already, its task among the wakers to be woken: nothing to
            // leave, no one else to wake.
            turn.ticket = None;
            let e = timed_out(what, bytes, turn.wait.timeout, &l.usage);
            return Some((Err(e), false));
        }
        if turn.ticket.is_some() && turn.expired(l) {
            // A waiter past its deadline is not admitted, whatever its place: the waiters
            // that share its deadline all time out, none goes ahead of another.
            let e = timed_out(what, bytes, turn.wait.timeout, &l.usage);
            return Some((Err(e), turn.leave(l)));
        }
        loop {
            let first = l.queue.front().map(|q| q.ticket) == turn.ticket
                || (turn.ticket.is_none() && l.queue.is_empty());
            if !first {
                break;
            }
            let out = match try_admit(l) {
                Admission::Freed => continue,
                Admission::Admitted(t) => {
                    l.moved();
                    Ok(Some(t))
                }
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
        if turn.expired(l) {
            let e = timed_out(what, bytes, turn.wait.timeout, &l.usage);
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
        l.moved();
        if let Some(ws) = ws {
            debug_assert!(ws.bytes() <= reserved, "a call outgrew its reservation");
            if l.idle.len() < MAX_IDLE_WORKSPACES {
                l.usage.idle += ws.bytes();
                l.idle.push(ws);
            }
        }
        self.wake(l);
    }

    /// Takes the head of the queue out of it if it is past its deadline (a future its
    /// executor no longer polls) and is not `turn`'s, which is not past its own (a waiter
    /// past it times out rather than evict): the waiters are then woken, and the lock taken
    /// again.
    fn evict<'a>(&'a self, mut l: MutexGuard<'a, Ledger>, turn: &Turn) -> MutexGuard<'a, Ledger> {
        if !turn.expired(&l) && l.evict_expired_head(turn.ticket, Instant::now()) {
            self.wake(l);
            l = self.lock();
        }
        l
    }

    /// Wakes every waiter (threads and tasks), the ledger's lock released first.
    fn wake(&self, mut l: MutexGuard<'_, Ledger>) {
        let tasks = std::mem::take(&mut l.wakers);
        drop(l);
        self.room.notify_all();
        for (_, w) in tasks {
            crate::gpu::device::foreign::wake(w);
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

fn timed_out(what: &str, bytes: u64, timeout: Duration, u: &MemoryUsage) -> MsmError {
    MsmError::Timeout(format!(
        "{what} ({bytes} bytes) waited for room in the memory budget while it did not move \
         (nothing given back, no waiter admitted) for {timeout:?} \
         (MsmConfig::gpu_timeout): {u:?}"
    ))
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
    use crate::gpu::memory::workspace::{size_class, MIN_CLASS_BYTES};
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

    /// One poll of `f` with the waker of `task`.
    fn poll_with<F: Future + Unpin, W: std::task::Wake + Send + Sync + 'static>(
        f: &mut F,
        task: &Arc<W>,
    ) -> Poll<F::Output> {
        let waker = Waker::from(Arc::clone(task));
        Pin::new(f).poll(&mut Context::from_waker(&waker))
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
        #[allow(clippy::disallowed_methods)] // a test's own thread
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

    /// A future at the head of the queue that its executor never polls again holds the
    /// waiters behind it up only until its deadline: the first of them to look takes it out
    /// of the queue, and they are then served in their order; polled at last, the head is
    /// `Timeout`, holding nothing.
    #[test]
    fn a_head_never_polled_again_holds_no_one_up_past_its_deadline() {
        let pool = Pool::new(1024, SizeCaps::NONE);
        let (timeout, long) = (Duration::from_secs(1), Duration::from_secs(60));
        let holder = pool.take(&needs(1024), true, long).unwrap().unwrap();
        let large = needs(1024);
        let mut stuck = pool.take_async(&large, timeout);
        assert!(poll_once(&mut stuck).is_pending());
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            for (name, ahead) in [("first", 1), ("second", 2)] {
                let (pool, tx) = (&pool, tx.clone());
                queued(pool, ahead);
                s.spawn(move || {
                    let lease = pool.take(&needs(1024), true, long);
                    // Told while it holds the room: the next is admitted only after.
                    tx.send((name, matches!(lease, Ok(Some(_))))).unwrap();
                    drop(lease);
                });
            }
            queued(&pool, 3);
            // Room for the head, which is not polled again.
            drop(holder);
            for name in ["first", "second"] {
                let behind = rx.recv_timeout(Duration::from_secs(30));
                let (served, admitted) = behind.expect("waited behind a head past its deadline");
                assert_eq!(served, name, "served out of order");
                assert!(admitted, "{name}: not admitted");
            }
        });
        let late = poll_once(&mut stuck).map(|l| l.err());
        assert!(
            matches!(late, Poll::Ready(Some(MsmError::Timeout(_)))),
            "{late:?}"
        );
        drop(stuck);
        assert!(pool.lock().queue.is_empty());
        assert_eq!(pool.usage().in_flight, 0);
    }

    /// A wait ends `timeout` after the budget last moved, not after it began: a call that
    /// waits longer than its timeout while calls in flight keep giving room back is
    /// admitted, not `Timeout`.
    #[test]
    fn a_wait_outlasts_its_timeout_while_room_keeps_coming_back() {
        let pool = Pool::new(4096, SizeCaps::NONE);
        let long = Duration::from_secs(60);
        let mut holders: Vec<_> = (0..16)
            .map(|_| pool.take(&needs(256), true, long).unwrap().unwrap())
            .collect();
        let timeout = Duration::from_millis(500);
        std::thread::scope(|s| {
            let pool = &pool;
            let waiter = s.spawn(move || pool.take(&needs(4096), true, timeout));
            queued(pool, 1);
            let began = Instant::now();
            while let Some(holder) = holders.pop() {
                std::thread::sleep(Duration::from_millis(50));
                drop(holder);
            }
            assert!(
                began.elapsed() > timeout,
                "room came back within the timeout: the test shows nothing"
            );
            let admitted = waiter.join().unwrap().map(|l| l.is_some());
            assert!(admitted.unwrap(), "no room");
        });
        assert_eq!(pool.usage().in_flight, 0);
    }

    /// A wait for room dropped before its deadline keeps nothing of its task: neither the
    /// queue nor the deadline's timer holds its waker (with a long `gpu_timeout`, the timer
    /// held it for that long), nor does one that was admitted.
    #[test]
    fn a_dropped_wait_keeps_no_waker() {
        use crate::gpu::device::foreign::tests::Flaky;
        let pool = Pool::new(1024, SizeCaps::NONE);
        let long = Duration::from_secs(3600);
        let holder = pool.take(&needs(1024), true, long).unwrap().unwrap();
        let large = needs(1024);
        let task = Flaky::new(0);
        let mut dropped = pool.take_async(&large, long);
        assert!(poll_with(&mut dropped, &task).is_pending());
        // Polled again with another waker: the deadline is set again, the first taken off.
        let other = Flaky::new(0);
        assert!(poll_with(&mut dropped, &other).is_pending());
        assert_eq!(Arc::strong_count(&task), 1, "the first waker is still held");
        assert!(Arc::strong_count(&other) > 1, "no deadline armed");
        drop(dropped);
        assert_eq!(
            Arc::strong_count(&other),
            1,
            "a dropped wait's waker is still held"
        );
        let mut admitted = pool.take_async(&large, long);
        assert!(poll_with(&mut admitted, &task).is_pending());
        holder.keep();
        let Poll::Ready(lease) = poll_with(&mut admitted, &task) else {
            panic!("first in line, with room, and not admitted")
        };
        assert_eq!(
            Arc::strong_count(&task),
            1,
            "an admitted wait's waker is still held"
        );
        drop((lease, admitted));
    }

    /// A task's waker that panics does not unwind through a reservation given back: the
    /// reservation is counted back, the workspace kept, and the other waiters still woken.
    #[test]
    fn a_panicking_waker_loses_no_reservation_and_no_wakeup() {
        use crate::gpu::device::foreign::tests::Flaky;
        let pool = Pool::new(1024, SizeCaps::NONE);
        let long = Duration::from_secs(60);
        let holder = pool.take(&needs(1024), true, long).unwrap().unwrap();
        let (flaky, steady) = (Flaky::new(usize::MAX), Flaky::new(0));
        let (large, small) = (needs(1024), needs(256));
        let mut first = pool.take_async(&large, long);
        let mut second = pool.take_async(&small, long);
        assert!(poll_with(&mut first, &flaky).is_pending());
        assert!(poll_with(&mut second, &steady).is_pending());
        holder.keep();
        assert_eq!((flaky.woken(), steady.woken()), (1, 1), "a task not woken");
        let u = pool.usage();
        assert_eq!((u.in_flight, pool.idle()), (0, 1), "{u:?}");
        let Poll::Ready(lease) = poll_once(&mut first) else {
            panic!("first in line, with room, and not admitted")
        };
        drop(lease.unwrap());
        assert!(poll_once(&mut second).is_ready());
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
