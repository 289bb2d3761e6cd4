//! Waiting for the GPU and reading buffers back, each wait with a deadline; a GPU that
//! finishes nothing within it is taken to be hung and its device dropped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::poller::{Signal, POLL_SLICE};
use super::GpuContext;
use crate::error::{MsmError, Result};

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
        if give_up.is_some_and(|t| std::time::Instant::now() >= t) {
            return Err(MsmError::Timeout(format!(
                "waited {timeout:?} for another call {what}"
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

impl GpuContext {
    /// Blocks until all submitted work is done, at most `timeout` ([`GpuContext::wait_for`]).
    pub(crate) fn wait(&self, timeout: Duration) -> Result<()> {
        self.poll_wait(None, timeout)
    }

    /// Blocks until one submission is done, at most `timeout`. Past it the GPU is taken to
    /// be hung: the device is dropped (every later operation on it fails, and the engine's
    /// next call proceeds as `MsmConfig::device_loss` says) and the call gets
    /// [`MsmError::Timeout`].
    pub(super) fn wait_for(&self, index: wgpu::SubmissionIndex, timeout: Duration) -> Result<()> {
        self.poll_wait(Some(index), timeout)
    }

    /// Waits for one submission, or for all (`None`), until `timeout` passes with no
    /// progress.
    ///
    /// A submission waits behind every earlier one on the queue, so the deadline is for the
    /// GPU's progress, not for this call alone: while other calls' read-backs complete (the
    /// GPU is busy, not hung), it waits on. It polls in slices of [`POLL_SLICE`] at most:
    /// wgpu holds a lock through a poll that `Buffer::destroy` takes, which must not wait a
    /// whole `gpu_timeout` behind it.
    pub(super) fn poll_wait(
        &self,
        index: Option<wgpu::SubmissionIndex>,
        timeout: Duration,
    ) -> Result<()> {
        let mut seen = (self.progress.load(Ordering::Acquire), Instant::now());
        loop {
            let poll = || wgpu::PollType::Wait {
                submission_index: index.clone(),
                timeout: Some(POLL_SLICE.min(timeout)),
            };
            return self.hung_if_late(match super::foreign::poll(&self.device, poll) {
                Ok(_) => Ok(()),
                Err(wgpu::PollError::Timeout) => {
                    // Run the callbacks of whatever did finish meanwhile.
                    let _ = super::foreign::poll(&self.device, || wgpu::PollType::Poll);
                    let progress = self.progress.load(Ordering::Acquire);
                    if progress != seen.0 {
                        seen = (progress, Instant::now());
                    }
                    if seen.1.elapsed() < timeout {
                        continue;
                    }
                    Err(MsmError::Timeout(format!(
                        "the GPU finished nothing within {timeout:?} (MsmConfig::gpu_timeout); \
                         its device is taken to be hung and was dropped"
                    )))
                }
                Err(e) => Err(MsmError::Gpu(format!("poll: {e}"))),
            });
        }
    }

    /// Maps a MAP_READ buffer and copies its contents out.
    pub(crate) fn read_buffer(&self, buffer: &wgpu::Buffer, timeout: Duration) -> Result<Vec<u8>> {
        let rx = self.request_read(buffer, buffer.size());
        self.wait(timeout)?;
        self.take_mapped(&rx, buffer, buffer.size(), timeout)
    }

    /// Copies out and unmaps a buffer whose mapping [`GpuContext::request_read`] asked for,
    /// after a poll that completed it (its callback may still be running in the thread that
    /// polled, the device's poller or another blocking wait: this waits for it, at most
    /// `timeout`, after which the GPU is taken to be hung).
    pub(super) fn take_mapped(
        &self,
        mapped: &Signal,
        buffer: &wgpu::Buffer,
        bytes: u64,
        timeout: Duration,
    ) -> Result<Vec<u8>> {
        let outcome = mapped.wait(timeout).unwrap_or_else(|| {
            Err(MsmError::Timeout(format!(
                "a read-back was not mapped within {timeout:?} (MsmConfig::gpu_timeout)"
            )))
        });
        self.hung_if_late(outcome)?;
        read_mapped(buffer, bytes)
    }

    /// Copies out and unmaps a buffer once its mapping, `mapped`, is done, without blocking
    /// the caller's thread: the device's poller polls it meanwhile (and takes a GPU that
    /// finishes nothing within `timeout` to be hung).
    pub(super) async fn mapped(
        &self,
        mapped: &Arc<Signal>,
        buffer: &wgpu::Buffer,
        bytes: u64,
        timeout: Duration,
    ) -> Result<Vec<u8>> {
        self.poller.watch(mapped, None, timeout).await?;
        read_mapped(buffer, bytes)
    }

    /// A wait's result; past its deadline ([`MsmError::Timeout`]) the GPU is taken to be
    /// hung and its device dropped, as [`GpuContext::wait_for`] does (a device the driver
    /// lost first, whose callbacks never came, is lost: [`MsmError::DeviceLost`]).
    pub(super) fn hung_if_late<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(MsmError::Timeout(_)) = &r {
            self.drop_hung();
            if !self.was_hung() {
                return Err(MsmError::DeviceLost("the device was lost".into()));
            }
        }
        r
    }

    /// Asks for the first `bytes` of a MAP_READ buffer to be mapped once the GPU is done
    /// with it; its callback counts as the GPU's progress ([`GpuContext::wait_for`]).
    pub(super) fn request_read(&self, buffer: &wgpu::Buffer, bytes: u64) -> Arc<Signal> {
        let signal = Signal::new();
        map_read(&self.progress, buffer, bytes, &signal);
        signal
    }
}

/// Asks for the first `bytes` of a MAP_READ buffer to be mapped once the GPU is done with
/// it, `signal` completed then; its callback counts as the GPU's `progress`.
pub(super) fn map_read(
    progress: &Arc<AtomicU64>,
    buffer: &wgpu::Buffer,
    bytes: u64,
    signal: &Arc<Signal>,
) {
    let (progress, done) = (Arc::clone(progress), signal.completer());
    buffer.map_async(wgpu::MapMode::Read, ..bytes, move |r| {
        progress.fetch_add(1, Ordering::AcqRel);
        done.complete(r.map_err(|e| MsmError::Gpu(format!("map failed: {e}"))));
    });
}

/// Completes `signal` when the GPU has done everything submitted to `queue` so far; its
/// callback counts as the GPU's `progress`.
pub(super) fn on_work_done(progress: &Arc<AtomicU64>, queue: &wgpu::Queue, signal: &Arc<Signal>) {
    let (progress, done) = (Arc::clone(progress), signal.completer());
    queue.on_submitted_work_done(move || {
        progress.fetch_add(1, Ordering::AcqRel);
        done.complete(Ok(()));
    });
}

/// The first `bytes` of a mapped buffer, copied out; the buffer unmapped.
pub(super) fn read_mapped(buffer: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>> {
    let out = buffer
        .get_mapped_range(..bytes)
        .map_err(|e| MsmError::Gpu(format!("mapped range: {e}")))?
        .to_vec();
    buffer.unmap();
    Ok(out)
}
