//! Blocking a caller's thread: on one of the engine's futures, never on one of the engine's
//! own threads (each device's poller and submitting thread, the deadline timer), which
//! complete what those futures wait for, so that a blocking call there would wait for
//! itself (it can get there only through an executor that polls a task inside its waker's
//! `wake`: the engine wakes tasks from those threads, among others); and on a lock held by
//! another call, for a bounded time ([`lock_within`]).

use std::cell::Cell;
use std::future::Future;
use std::time::Duration;

use crate::error::{MsmError, Result};

thread_local! {
    /// The engine's thread this is, if it is one.
    static ENGINE_THREAD: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Starts one of the engine's threads, `gpu-msm {name}`, running `f`: no blocking call
/// ([`block_on`]) may wait on it.
pub(crate) fn spawn_engine_thread(
    name: &'static str,
    f: impl FnOnce() + Send + 'static,
) -> std::io::Result<()> {
    let marked = move || {
        ENGINE_THREAD.with(|t| t.set(Some(name)));
        f()
    };
    let thread = std::thread::Builder::new().name(format!("gpu-msm {name}"));
    thread.spawn(marked).map(drop)
}

/// The name of the engine's thread this is, if it is one: no blocking call may run here.
pub(crate) fn engine_thread() -> Option<&'static str> {
    ENGINE_THREAD.with(Cell::get)
}

/// On one of the engine's threads, why `what` (something that would block) is not done
/// here; `None` elsewhere.
pub(crate) fn not_on_engine_thread(what: &str) -> Option<String> {
    engine_thread().map(|thread| {
        format!("{what} on the engine's {thread} thread (a future polled inside its waker)")
    })
}

/// `f`, waited for on this thread; [`MsmError::Gpu`] at once on one of the engine's own
/// threads (module doc), which the wait would leave waiting for itself for good.
pub(crate) fn block_on<T>(f: impl Future<Output = Result<T>>) -> Result<T> {
    match engine_thread() {
        Some(name) => Err(MsmError::Gpu(format!(
            "a blocking call on the engine's {name} thread (an executor polled a task inside \
             its waker), which would wait for itself: await the call's `_async` form, or \
             run it elsewhere"
        ))),
        #[allow(clippy::disallowed_methods)] // the one blocking wait on the engine's futures
        None => pollster::block_on(f),
    }
}

/// `f`, one of wgpu's futures that native wgpu completes before returning it (an error
/// scope popped, an adapter or device requested): waited for on this thread, which no GPU
/// work can hold.
pub(crate) fn ready<F: Future>(f: F) -> F::Output {
    #[allow(clippy::disallowed_methods)] // completes at once: nothing to wait for
    pollster::block_on(f)
}

/// `f`, a share of a call that [`block_on`] let block, waited for on a thread of the call's
/// own (`engine::several`'s `each_at_once`: this thread, or one it started).
pub(crate) fn block_on_share<F: Future>(f: F) -> F::Output {
    #[allow(clippy::disallowed_methods)] // the caller's thread passed `block_on`
    pollster::block_on(f)
}

/// Locks `m`, waiting at most `timeout` for another thread to release it
/// ([`MsmError::Timeout`] past it, naming `what`): the locks a call may meet (stages
/// compiled or checked on first use) are held for seconds, never for good.
pub(crate) fn lock_within<'a, T>(
    m: &'a std::sync::Mutex<T>,
    timeout: Duration,
    what: &str,
) -> Result<std::sync::MutexGuard<'a, T>> {
    let give_up = std::time::Instant::now().checked_add(timeout);
    loop {
        match m.try_lock() {
            Ok(g) => return Ok(g),
            Err(std::sync::TryLockError::Poisoned(e)) => return Ok(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => {}
        }
        if let Some(name) = engine_thread() {
            // Its holder may be waiting for this very thread.
            return Err(MsmError::Gpu(format!(
                "a call on the engine's {name} thread (an executor polled a task inside its \
                 waker) met another call {what}: refused rather than waited for"
            )));
        }
        if give_up.is_some_and(|t| std::time::Instant::now() >= t) {
            return Err(MsmError::Timeout(format!(
                "waited {timeout:?} for another call {what}"
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On an engine thread a blocking call fails at once; elsewhere it runs.
    #[test]
    fn an_engine_thread_never_blocks_on_the_engine() {
        assert_eq!(block_on(async { Ok(7) }).expect("a caller's thread"), 7);
        let (tx, rx) = std::sync::mpsc::channel();
        spawn_engine_thread("poller", move || {
            let _ = tx.send(block_on(std::future::pending::<Result<()>>()));
        })
        .expect("a thread");
        let out = rx.recv().expect("the thread's outcome");
        assert!(matches!(out, Err(MsmError::Gpu(m)) if m.contains("poller")));
    }
}
