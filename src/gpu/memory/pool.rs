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

use crate::error::Result;
use crate::gpu::memory::ledger::{timed_out, too_large, Admission, Ledger, Turn, BASES, CALL};
use crate::gpu::memory::workspace::{SizeCaps, Workspace};
use crate::gpu::pipelines::slots::Slot;
use crate::report::MemoryUsage;

/// Idle workspaces the pool keeps; more are dropped when returned (after a burst of
/// concurrent calls) so that their memory goes back to the device.
pub const MAX_IDLE_WORKSPACES: usize = 4;

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

#[cfg(test)]
#[path = "pool_tests.rs"]
mod tests;
