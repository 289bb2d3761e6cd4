//! Calls into code the engine does not own that may panic, kept from unwinding through the
//! engine's bookkeeping: a task's waker (an executor's), and wgpu's `Device::poll`, the
//! engine's only way to it.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::task::Waker;

/// Consecutive panics of one `Device::poll` retried before the panic is let through.
const POLL_RETRIES: usize = 3;

/// Wakes `waker`; a waker that panics is logged, not unwound into the engine (which wakes
/// from wgpu's callbacks, the deadline timer and under its memory ledger's bookkeeping, and
/// must go on to wake the others).
pub(crate) fn wake(waker: Waker) {
    if catch_unwind(AssertUnwindSafe(|| waker.wake())).is_err() {
        tracing::error!(target: "gpu_msm", "a task's waker panicked; its task was not woken");
    }
}

/// `device.poll(PollType::Poll)`: runs the callbacks of what is done, and returns at once.
///
/// Never a poll that waits: in wgpu-core 30.0.2 one whose wait times out while another
/// thread's poll (or a `Queue::submit`, which polls too) retires the submission it waited
/// for trips an assertion in `Device::maintain` (gfx-rs/wgpu#9958), and the callbacks that
/// poll held are lost. Waiting is the poller's, which sleeps between polls
/// (`gpu::device::poller`); the other polls run callbacks at once: an upload's for its staging
/// buffer's re-map (`gpu::run::upload`), and a device dropped (`OpenDevice::lose`).
///
/// A poll that panics all the same is tried again (wgpu's state is kept by locks that do
/// not poison); the panic goes on after [`POLL_RETRIES`] in a row. A poll that panicked
/// may have dropped the callbacks it was running: their waits fail at once
/// (`signal::Completer`), the call with [`MsmError::Gpu`].
///
/// [`MsmError::Gpu`]: crate::MsmError::Gpu
pub(crate) fn poll(device: &wgpu::Device) -> Result<wgpu::PollStatus, wgpu::PollError> {
    let mut tries = 0;
    loop {
        match catch_unwind(AssertUnwindSafe(|| device.poll(wgpu::PollType::Poll))) {
            Ok(polled) => return polled,
            Err(panic) if tries == POLL_RETRIES => resume_unwind(panic),
            Err(_) => {
                tries += 1;
                tracing::warn!(target: "gpu_msm", tries, "wgpu panicked in Device::poll; polling again");
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    /// A task's waker that panics on its first `panics` wakes, counting every wake.
    pub(crate) struct Flaky {
        panics: usize,
        woken: AtomicUsize,
    }

    impl Flaky {
        pub(crate) fn new(panics: usize) -> Arc<Self> {
            Arc::new(Self {
                panics,
                woken: AtomicUsize::new(0),
            })
        }

        /// Wakes so far.
        pub(crate) fn woken(&self) -> usize {
            self.woken.load(Ordering::SeqCst)
        }
    }

    impl Wake for Flaky {
        fn wake(self: Arc<Self>) {
            if self.woken.fetch_add(1, Ordering::SeqCst) < self.panics {
                panic!("a waker that panics");
            }
        }
    }

    #[test]
    fn a_panicking_waker_does_not_unwind() {
        let flaky = Flaky::new(1);
        let waker = Waker::from(Arc::clone(&flaky));
        wake(waker.clone());
        wake(waker);
        assert_eq!(flaky.woken(), 2);
    }
}
