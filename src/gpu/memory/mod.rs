//! Device memory: the budget, the buffers of a call and resident sets.
//!
//! | file | concern |
//! |---|---|
//! | `ledger.rs` | the budget's books under the pool's lock: what is held, idle workspaces, the queue of waiters and their deadlines |
//! | `pool.rs` | memory admission: the budget, idle workspaces, waits in turn (a thread's or a task's) |
//! | `pool_tests.rs` | the pool's tests: waits in turn, deadlines, wakers |
//! | `timer.rs` | the timer that wakes tasks waiting for room at their deadlines |
//! | `workspace.rs` | one call's buffers and cached bind groups, reused across calls |
//! | `resident.rs` | resident sets (bases kept on the device), their shifted copies (`shift` passes) and the check of the copies against the host |

pub(crate) mod ledger;
pub(crate) mod pool;
pub(crate) mod resident;
pub(crate) mod timer;
pub(crate) mod workspace;
