//! The memory budget's books, kept under the pool's lock: what is held (`MemoryUsage`),
//! idle workspaces, and the queue of waiters for room with their deadlines. `pool.rs`
//! admits calls and loads by them.

use std::collections::VecDeque;
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::error::MsmError;
use crate::gpu::memory::workspace::Workspace;
use crate::report::MemoryUsage;

pub(super) struct Ledger {
    pub(super) idle: Vec<Workspace>,
    pub(super) usage: MemoryUsage,
    /// The calls and loads waiting for room, in the order they came; only the first may be
    /// admitted.
    pub(super) queue: VecDeque<Queued>,
    /// The last time the budget moved: a reservation given back (a call's, or resident
    /// bases'), or a waiter admitted ([`Wait`]).
    pub(super) moved_at: Instant,
    pub(super) next_ticket: u64,
    /// The tasks of waiters that wait without blocking a thread ([`Pool::take_async`]), by
    /// ticket: woken whenever the condition variable is signalled.
    pub(super) wakers: Vec<(u64, Waker)>,
}

impl Ledger {
    /// Frees the smallest idle workspace other than `keep`; false when there is none.
    pub(super) fn free_idle(&mut self, keep: Option<usize>) -> bool {
        let victim = (0..self.idle.len())
            .filter(|&i| Some(i) != keep)
            .min_by_key(|&i| self.idle[i].bytes());
        let Some(i) = victim else { return false };
        let ws = self.idle.swap_remove(i);
        self.usage.idle -= ws.bytes();
        true
    }

    /// The budget moved: every wait's deadline restarts.
    pub(super) fn moved(&mut self) {
        self.moved_at = Instant::now();
    }

    /// Takes the head of the queue out of it if it is past its deadline and is not `mine`
    /// (the looking waiter's ticket); true if it did: its own next look is a `Timeout`. Not
    /// a move of the budget: no deadline restarts, so a wait cannot be stretched by the
    /// waiters ahead of it leaving. The head's task stays among the wakers, to be woken,
    /// and dropped, by the next [`Pool::wake`], not under the lock.
    pub(super) fn evict_expired_head(&mut self, mine: Option<u64>, now: Instant) -> bool {
        let Some(&head) = self.queue.front() else {
            return false;
        };
        if Some(head.ticket) == mine || !head.wait.expired(self.moved_at, now) {
            return false;
        }
        self.queue.pop_front();
        true
    }

    pub(super) fn admit(&mut self, bytes: u64) -> bool {
        let total = self.usage.total() + bytes;
        if total > self.usage.budget {
            return false;
        }
        self.usage.peak = self.usage.peak.max(total);
        true
    }
}

/// One try at admitting a waiter ([`Pool::admit_in_turn`]).
pub(super) enum Admission<T> {
    /// Admitted, with what the waiter takes.
    Admitted(T),
    /// No room yet, but an idle workspace was freed: try again at once.
    Freed,
    /// No room: wait for calls in flight.
    NoRoom,
}

/// What waits for room: a call's buffers, or resident bases.
pub(super) const CALL: &str = "this call's buffers";
pub(super) const BASES: &str = "these bases";

/// How long a waiter waits for room: until `timeout` after it began (`since`) or after the
/// budget last moved ([`Ledger::moved_at`]), whichever is later.
#[derive(Clone, Copy)]
pub(super) struct Wait {
    pub(super) since: Instant,
    pub(super) timeout: Duration,
}

impl Wait {
    /// Its deadline, the budget last moved at `moved_at` (`None`: too far to add to the
    /// clock, never).
    pub(super) fn deadline(&self, moved_at: Instant) -> Option<Instant> {
        self.since.max(moved_at).checked_add(self.timeout)
    }

    pub(super) fn expired(&self, moved_at: Instant, now: Instant) -> bool {
        self.deadline(moved_at).is_some_and(|d| d <= now)
    }
}

/// A waiter in the queue.
#[derive(Clone, Copy)]
pub(super) struct Queued {
    pub(super) ticket: u64,
    pub(super) wait: Wait,
}

/// A waiter's place in the queue (its ticket, once it had to wait) and its wait.
pub(super) struct Turn {
    pub(super) ticket: Option<u64>,
    pub(super) wait: Wait,
}

impl Turn {
    pub(super) fn new(timeout: Duration) -> Self {
        let since = Instant::now();
        Self {
            ticket: None,
            wait: Wait { since, timeout },
        }
    }

    /// Whether it is past its deadline.
    pub(super) fn expired(&self, l: &Ledger) -> bool {
        self.wait.expired(l.moved_at, Instant::now())
    }

    /// When the waiter must look again without being woken: at its deadline, or at the
    /// deadline of the waiter ahead of it, which it then takes out of the queue.
    pub(super) fn next_look(&self, l: &Ledger) -> Option<Instant> {
        let head = l.queue.front().filter(|q| Some(q.ticket) != self.ticket);
        let head = head.and_then(|q| q.wait.deadline(l.moved_at));
        match (self.wait.deadline(l.moved_at), head) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Takes a ticket at the back of the queue, unless it holds one.
    pub(super) fn queue(&mut self, l: &mut Ledger) {
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
    pub(super) fn evicted(&self, l: &Ledger) -> bool {
        self.ticket
            .is_some_and(|t| !l.queue.iter().any(|q| q.ticket == t))
    }

    /// Leaves the queue (its task forgotten); true if it was in it: the next in line may be
    /// admitted now, and the waiters must be woken.
    pub(super) fn leave(&mut self, l: &mut Ledger) -> bool {
        let Some(t) = self.ticket.take() else {
            return false;
        };
        l.queue.retain(|q| q.ticket != t);
        l.wakers.retain(|(q, _)| *q != t);
        true
    }
}

pub(super) fn timed_out(what: &str, bytes: u64, timeout: Duration, u: &MemoryUsage) -> MsmError {
    MsmError::Timeout(format!(
        "{what} ({bytes} bytes) waited for room in the memory budget while it did not move \
         (nothing given back, no waiter admitted) for {timeout:?} \
         (MsmConfig::gpu_timeout): {u:?}"
    ))
}

pub(super) fn too_large(what: &str, bytes: u64, u: &MemoryUsage) -> MsmError {
    MsmError::InputTooLarge(format!(
        "{what} need {bytes} bytes of device memory; the engine's budget is {} bytes, \
         {} of them held by resident bases (MsmConfig::memory_budget)",
        u.budget, u.resident
    ))
}
