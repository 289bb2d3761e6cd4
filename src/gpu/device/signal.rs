//! A wgpu callback's outcome ([`Signal`]), completed by the callback through its
//! [`Completer`] and awaited by one call ([`Awaited`], the future `Poller::watch` returns).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use crate::error::{MsmError, Result};

/// A wgpu callback's outcome, awaited by one call.
pub(crate) struct Signal {
    state: Mutex<SignalState>,
}

#[derive(Default)]
struct SignalState {
    outcome: Option<Result<()>>,
    waker: Option<Waker>,
}

impl Signal {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::default(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, SignalState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Completes the signal (the first outcome stays) and wakes its waiter.
    pub(crate) fn complete(&self, outcome: Result<()>) {
        let mut s = self.lock();
        if s.outcome.is_none() {
            s.outcome = Some(outcome);
        }
        let waker = s.waker.take();
        drop(s);
        if let Some(w) = waker {
            crate::gpu::device::foreign::wake(w);
        }
    }

    /// The end of the signal a wgpu callback completes.
    pub(crate) fn completer(self: &Arc<Self>) -> Completer {
        Completer(Arc::clone(self))
    }

    /// Whether the signal has its outcome.
    pub(crate) fn is_done(&self) -> bool {
        self.lock().outcome.is_some()
    }

    /// The signal's outcome, if it has one.
    #[cfg(test)]
    fn outcome(&self) -> Option<Result<()>> {
        self.lock().outcome.clone()
    }

    pub(crate) fn poll_done(&self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let mut s = self.lock();
        match &s.outcome {
            Some(o) => Poll::Ready(o.clone()),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// A signal's end held by a wgpu callback ([`Signal::completer`]): dropped without
/// completing it (wgpu dropped the callback without running it, as a poll that panicked
/// does, [`crate::gpu::device::foreign::poll`]), it fails the signal at once instead of leaving its
/// waiter to its deadline and the device to be taken for hung.
pub(crate) struct Completer(Arc<Signal>);

impl Completer {
    pub(crate) fn complete(self, outcome: Result<()>) {
        self.0.complete(outcome);
    }
}

impl Drop for Completer {
    fn drop(&mut self) {
        if !self.0.is_done() {
            let dropped = "wgpu dropped a callback without running it".into();
            self.0.complete(Err(MsmError::Gpu(dropped)));
        }
    }
}

/// A future that completes with a watched signal (`Poller::watch`).
pub(crate) struct Awaited(pub(in crate::gpu) Arc<Signal>);

impl Future for Awaited {
    type Output = Result<()>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        self.0.poll_done(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A callback wgpu drops without running it fails its signal at once; one that runs
    /// keeps its outcome.
    #[test]
    fn a_dropped_callback_fails_its_signal() {
        let dropped = Signal::new();
        drop(dropped.completer());
        assert!(matches!(dropped.outcome(), Some(Err(MsmError::Gpu(_)))));
        let ran = Signal::new();
        ran.completer().complete(Ok(()));
        assert!(matches!(ran.outcome(), Some(Ok(()))));
    }
}
