//! Fault injection for the tests: a device lost now, during the next call or during a
//! replacement's known-answer test, a poll that never returns, polls held back (a GPU that
//! seems busy), a validation error in the next submission, code run on an engine thread,
//! known-answer tests that fail (at creation, or the host-list stages' on first use), and
//! calls that read a set's shifted copies whatever the cost model says (to test every shape
//! of copies on small sets).
//!
//! The switches are always there (off); the methods that set them exist only with the
//! `fault-injection` feature, which the package's tests and benches turn on (and the
//! examples' package, when built from the root with them: features unify)
//! (Cargo.toml's dev-dependency on the package; a build of the library alone leaves it
//! off). The GPU half: `GpuContext::invalid_next` (`src/gpu/mod.rs`), set by
//! `inject_validation_error` (`src/gpu/open.rs`) and read by the next submission
//! (`src/gpu/run/execute.rs`); `GpuContext::lose_between_chunks`, set by
//! `inject_loss_between_chunks` and read by a streamed call's second chunk
//! (`src/gpu/run/stream.rs`).

use std::sync::atomic::AtomicBool;
#[cfg(feature = "fault-injection")]
use std::sync::atomic::Ordering;

#[cfg(feature = "fault-injection")]
use super::GpuMsm;
#[cfg(feature = "fault-injection")]
use crate::curve::GpuCurve;

/// [`GpuMsm::hold_gpu_progress`]'s hold: the device is polled again when it is dropped (a
/// test that panics meanwhile leaves no engine unpolled).
#[cfg(feature = "fault-injection")]
pub struct HeldGpuProgress(Option<std::sync::Arc<crate::gpu::GpuContext>>);

#[cfg(feature = "fault-injection")]
impl Drop for HeldGpuProgress {
    fn drop(&mut self) {
        if let Some(g) = &self.0 {
            g.hold_polls(false);
        }
    }
}

/// Test hooks (fault injection); all off by default.
#[derive(Default)]
pub(super) struct Hooks {
    /// Lose the device while the next GPU call is in flight.
    pub(super) lose_in_flight: AtomicBool,
    /// Lose the next replacement device while its known-answer test runs.
    pub(super) lose_in_recreation: AtomicBool,
    /// The host-list stages' known-answer test expects a wrong sum.
    pub(super) fail_host_list_self_test: AtomicBool,
}

#[cfg(feature = "fault-injection")]
impl<C: GpuCurve> GpuMsm<C> {
    /// Test hook: [`GpuMsm::with_config`] with a known-answer test that expects a wrong sum,
    /// so that it fails as on a device that computes wrongly.
    pub fn with_config_failing_self_test(
        config: crate::config::MsmConfig,
    ) -> crate::error::Result<Self> {
        Self::create(config, true)
    }

    /// Test hook: loses the engine's device now (as a driver reset would), so that tests
    /// can check what calls do after a loss.
    pub fn inject_device_loss(&self) {
        if let Some(g) = self.gpu() {
            g.lose();
        }
    }

    /// Test hook: the device's next poll does not return until the device is lost, as one
    /// blocked in wgpu behind a driver's submit that waits for a hung GPU: the poller's
    /// watchdog must take the device to be hung after `gpu_timeout` and a grace of an
    /// eighth of it.
    pub fn inject_stalled_poll(&self) {
        if let Some(g) = self.gpu() {
            g.stall_next_poll();
        }
    }

    /// Test hook: until the returned guard is dropped, the device is not polled, so that
    /// what the GPU finishes is not seen (but by a later submission's own poll) and no
    /// deadline is judged: calls in flight stay in flight, whatever the GPU's speed. Hold it
    /// briefly: waits for the GPU do not end meanwhile. Device 0's only, on several devices.
    pub fn hold_gpu_progress(&self) -> HeldGpuProgress {
        let gpu = self.gpu();
        if let Some(g) = &gpu {
            g.hold_polls(true);
        }
        HeldGpuProgress(gpu)
    }

    /// Test hook: devices taken to be hung since the process started (every engine's), and
    /// those still kept now, their queues busy (`gpu::device::poller::hung`).
    pub fn hung_devices() -> (u64, usize) {
        crate::gpu::device::poller::hung::counts()
    }

    /// Test hook: `f` run on a thread marked as one of the engine's own, where a future
    /// polled inside its waker runs (the poller's, the submitter's, the deadline timer's),
    /// and its outcome.
    pub fn on_engine_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        crate::gpu::device::blocking::spawn_engine_thread("test", move || {
            let _ = tx.send(f());
        })
        .expect("a thread");
        rx.recv().expect("the thread's outcome")
    }

    /// Test hook: the next GPU call meets a validation error in its submission (caught by
    /// its error scope).
    pub fn inject_gpu_error_in_next_call(&self) {
        if let Some(g) = self.gpu() {
            g.inject_validation_error();
        }
    }

    /// Test hook: the next GPU call whose scalars are streamed in several chunks
    /// (`MsmConfig::stream_chunk_scalars`) loses the device between two of its submissions:
    /// once the first chunk's is on the queue, before the second chunk is written. It stays
    /// armed until such a call comes (a call in one chunk, timed by wall clock or on host
    /// lists never reaches that point), for this engine's `reconfigured` siblings too;
    /// device 0's only, on several devices.
    pub fn inject_device_loss_between_chunks(&self) {
        if let Some(g) = self.gpu() {
            g.inject_loss_between_chunks();
        }
    }

    /// Test hook: loses the device while the next GPU call is in flight (after its
    /// submission, before its results are read).
    pub fn inject_device_loss_in_next_call(&self) {
        self.hooks.lose_in_flight.store(true, Ordering::Release);
    }

    /// Test hook: the known-answer test of the host-list stages, run by the first call that
    /// plans its buckets on the host, expects a wrong sum (as on a device that computes
    /// them wrongly).
    pub fn fail_host_list_self_test(&self) {
        self.hooks
            .fail_host_list_self_test
            .store(true, Ordering::Release);
    }

    /// Test hook: every later call of this engine on a resident part with shifted copies
    /// reads them (where they fit), even where the cost model finds the call's own window
    /// cheaper: how the tests run every shape of copies on small sets. This engine's alone,
    /// not its reconfigured engines' (a test sets it on a `reconfigured` copy of a shared
    /// engine, so that the tests sharing that engine keep the cost model's choice).
    pub fn always_read_copies(&self) {
        self.read_copies_always.store(true, Ordering::Release);
    }

    /// Test hook: the engine of device k of an engine on several
    /// ([`crate::MsmConfig::devices`]), so that a test sets its hooks (device 0's are this
    /// engine's own); `None` past the last device or on one device.
    pub fn device_engine(&self, k: usize) -> Option<&GpuMsm<C>> {
        self.several.as_ref()?.device(k)
    }

    /// Test hook: the next replacement device is lost while its known-answer test runs.
    pub fn lose_next_recreation_during_its_self_test(&self) {
        self.hooks.lose_in_recreation.store(true, Ordering::Release);
    }
}
