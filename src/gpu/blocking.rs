//! Blocking a caller's thread on one of the engine's futures, never one of the engine's own
//! threads: each device's poller and submitting thread and the deadline timer complete what
//! those futures wait for, so a blocking call on one of them would wait for itself. It can
//! get there only through an executor that polls a task inside its waker's `wake` (the
//! engine wakes tasks from those threads).

use std::cell::Cell;
use std::future::Future;

use crate::error::{MsmError, Result};

thread_local! {
    /// The engine's thread this is, if it is one.
    static ENGINE_THREAD: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Marks this thread as the engine's `name` thread, for the rest of its life.
pub(crate) fn engine_thread(name: &'static str) {
    ENGINE_THREAD.with(|t| t.set(Some(name)));
}

/// `f`, waited for on this thread; [`MsmError::Gpu`] at once on one of the engine's own
/// threads (module doc), which the wait would leave waiting for itself for good.
pub(crate) fn block_on<T>(f: impl Future<Output = Result<T>>) -> Result<T> {
    match ENGINE_THREAD.with(Cell::get) {
        Some(name) => Err(MsmError::Gpu(format!(
            "a blocking call on the engine's {name} thread (an executor polled a task inside \
             its waker), which would wait for itself: await the call's `_async` form, or \
             run it elsewhere"
        ))),
        None => pollster::block_on(f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On an engine thread a blocking call fails at once; elsewhere it runs.
    #[test]
    fn an_engine_thread_never_blocks_on_the_engine() {
        assert_eq!(block_on(async { Ok(7) }).expect("a caller's thread"), 7);
        let on_engine = std::thread::spawn(|| {
            engine_thread("poller");
            block_on(std::future::pending::<Result<()>>())
        });
        let out = on_engine.join().expect("the thread");
        assert!(matches!(out, Err(MsmError::Gpu(m)) if m.contains("poller")));
    }
}
