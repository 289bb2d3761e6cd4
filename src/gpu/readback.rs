//! Waiting for the GPU and reading buffers back, each wait with a deadline; a GPU that
//! finishes nothing within it is taken to be hung and its device dropped.

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::Duration;

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

/// Hears when a buffer mapping requested by [`request_read`] completes.
pub(super) type MapReceiver = mpsc::Receiver<std::result::Result<(), wgpu::BufferAsyncError>>;

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

    /// Waits for one submission, or for all (`None`), at most `timeout` each time.
    ///
    /// A submission waits behind every earlier one on the queue, so the deadline is for the
    /// GPU's progress, not for this call alone: a wait that times out while other calls'
    /// read-backs completed (the GPU is busy, not hung) waits again.
    pub(super) fn poll_wait(
        &self,
        index: Option<wgpu::SubmissionIndex>,
        timeout: Duration,
    ) -> Result<()> {
        loop {
            let seen = self.progress.load(Ordering::Acquire);
            let poll = wgpu::PollType::Wait {
                submission_index: index.clone(),
                timeout: Some(timeout),
            };
            return self.hung_if_late(match self.device.poll(poll) {
                Ok(_) => Ok(()),
                Err(wgpu::PollError::Timeout) => {
                    // Run the callbacks of whatever did finish meanwhile.
                    let _ = self.device.poll(wgpu::PollType::Poll);
                    if self.progress.load(Ordering::Acquire) != seen {
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

    /// Copies out and unmaps a buffer whose mapping [`GpuContext::request_read`] asked for (after a poll
    /// that completed it; the callback may still be running in the thread that polled, so this
    /// waits for it, at most `timeout`, after which the GPU is taken to be hung).
    pub(super) fn take_mapped(
        &self,
        rx: &MapReceiver,
        buffer: &wgpu::Buffer,
        bytes: u64,
        timeout: Duration,
    ) -> Result<Vec<u8>> {
        let mapped = rx.recv_timeout(timeout).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => MsmError::Timeout(format!(
                "a read-back was not mapped within {timeout:?} (MsmConfig::gpu_timeout)"
            )),
            mpsc::RecvTimeoutError::Disconnected => {
                MsmError::Gpu("map callback lost: the buffer was dropped".into())
            }
        });
        self.hung_if_late(mapped)?
            .map_err(|e| MsmError::Gpu(format!("map failed: {e}")))?;
        let out = buffer
            .get_mapped_range(..bytes)
            .map_err(|e| MsmError::Gpu(format!("mapped range: {e}")))?
            .to_vec();
        buffer.unmap();
        Ok(out)
    }

    /// A wait's result; past its deadline ([`MsmError::Timeout`]) the GPU is taken to be
    /// hung and its device dropped, as [`GpuContext::wait_for`] does.
    pub(super) fn hung_if_late<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(MsmError::Timeout(_)) = &r {
            self.lose();
        }
        r
    }

    /// Asks for the first `bytes` of a MAP_READ buffer to be mapped once the GPU is done
    /// with it; its callback counts as the GPU's progress ([`GpuContext::wait_for`]).
    pub(super) fn request_read(&self, buffer: &wgpu::Buffer, bytes: u64) -> MapReceiver {
        let (tx, rx) = mpsc::channel();
        let progress = Arc::clone(&self.progress);
        buffer.map_async(wgpu::MapMode::Read, ..bytes, move |r| {
            progress.fetch_add(1, Ordering::AcqRel);
            let _ = tx.send(r);
        });
        rx
    }
}
