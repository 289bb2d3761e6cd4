//! Submissions on a thread of the device's own: a driver's `Queue::submit` may wait there
//! for the queue's earlier work (lavapipe's does, for as long as the call before runs), so
//! a call hands its command buffer over and awaits the hand-off instead of blocking its
//! thread. Jobs run in the order they came, one at a time; the thread starts on the first
//! job and ends when the device's last context is dropped.

use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crate::error::{MsmError, Result};
use crate::gpu::device::signal::Signal;

type Work = Box<dyn FnOnce() + Send>;

/// The device's submitting thread.
#[derive(Default)]
pub(crate) struct Submitter {
    /// The job queue, once the thread runs.
    jobs: Mutex<Option<mpsc::Sender<Work>>>,
}

impl Submitter {
    /// Runs `job` on the thread, after the jobs before it; the future completes with what
    /// it returned ([`MsmError::Gpu`] if it panicked or the thread could not start).
    pub(crate) fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Handoff<T> {
        let handoff = Handoff {
            slot: Arc::new(Mutex::new(None)),
            signal: Signal::new(),
        };
        let (slot, signal) = (Arc::clone(&handoff.slot), Arc::clone(&handoff.signal));
        let wrapped: Work = Box::new(move || {
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            match ran {
                Ok(v) => {
                    *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
                    signal.complete(Ok(()));
                }
                Err(_) => signal.complete(Err(MsmError::Gpu("a submission panicked".into()))),
            }
        });
        if let Err(e) = self.send(wrapped) {
            handoff.signal.complete(Err(e));
        }
        handoff
    }

    fn send(&self, job: Work) -> Result<()> {
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if jobs.is_none() {
            let (tx, rx) = mpsc::channel::<Work>();
            crate::gpu::device::blocking::spawn_engine_thread("submitter", move || {
                rx.into_iter().for_each(|job| job())
            })
            .map_err(|e| MsmError::Gpu(format!("cannot start the submitting thread: {e}")))?;
            *jobs = Some(tx);
        }
        let tx = jobs.as_ref().expect("set above");
        tx.send(job)
            .map_err(|_| MsmError::Gpu("the submitting thread ended".into()))
    }
}

/// What a job on the submitting thread returned, once it ran ([`Submitter::run`]).
pub(crate) struct Handoff<T> {
    slot: Arc<Mutex<Option<T>>>,
    signal: Arc<Signal>,
}

impl<T> Handoff<T> {
    /// Completed when the job has run (for the poller's deadline: `Poller::watch`).
    pub(crate) fn signal(&self) -> &Arc<Signal> {
        &self.signal
    }
}

impl<T> Future for Handoff<T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        match self.signal.poll_done(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Ready(Ok(())) => {
                let v = self.slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                Poll::Ready(v.ok_or_else(|| MsmError::Gpu("a hand-off read twice".into())))
            }
        }
    }
}
