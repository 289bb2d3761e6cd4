//! Reading buffers back and waiting for the GPU from a blocked thread: each a future the
//! device's poller completes (its deadline the poller's), blocked on or awaited.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{MsmError, Result};
use crate::gpu::device::signal::Signal;
use crate::gpu::GpuContext;

impl GpuContext {
    /// Blocks until all work submitted so far is done, at most `timeout` without the GPU's
    /// progress: past it the GPU is taken to be hung, the device is dropped (every later
    /// operation on it fails, and the engine's next call proceeds as
    /// `MsmConfig::device_loss` says) and the call gets [`MsmError::Timeout`].
    ///
    /// The device's poller polls meanwhile (a thread never waits inside wgpu: see
    /// [`crate::gpu::device::poller`]). The deadline is for the GPU's progress, not for this call alone:
    /// while other calls' work completes (the GPU is busy, not hung), it waits on.
    pub(crate) fn wait(&self, timeout: Duration) -> Result<()> {
        let done = Signal::new();
        on_work_done(&self.progress, &self.queue, &done);
        crate::gpu::device::blocking::block_on(self.poller.watch(&done, timeout))
    }

    /// Maps a MAP_READ buffer and copies its contents out, blocking the thread
    /// ([`GpuContext::wait`]).
    pub(crate) fn read_buffer(&self, buffer: &wgpu::Buffer, timeout: Duration) -> Result<Vec<u8>> {
        let rx = self.request_read(buffer, buffer.size());
        crate::gpu::device::blocking::block_on(self.mapped(&rx, buffer, buffer.size(), timeout))
    }

    /// Copies out and unmaps a buffer once its mapping, `mapped`, is done, without blocking
    /// the caller's thread: the device's poller polls it meanwhile (and takes a GPU that
    /// finishes nothing within `timeout` to be hung).
    pub(in crate::gpu) async fn mapped(
        &self,
        mapped: &Arc<Signal>,
        buffer: &wgpu::Buffer,
        bytes: u64,
        timeout: Duration,
    ) -> Result<Vec<u8>> {
        self.poller.watch(mapped, timeout).await?;
        read_mapped(buffer, bytes)
    }

    /// Asks for the first `bytes` of a MAP_READ buffer to be mapped once the GPU is done
    /// with it; its callback counts as the GPU's progress ([`GpuContext::wait`]).
    pub(in crate::gpu) fn request_read(&self, buffer: &wgpu::Buffer, bytes: u64) -> Arc<Signal> {
        let signal = Signal::new();
        map_read(&self.progress, buffer, bytes, &signal);
        signal
    }
}

/// Asks for the first `bytes` of a MAP_READ buffer to be mapped once the GPU is done with
/// it, `signal` completed then; its callback counts as the GPU's `progress`.
pub(in crate::gpu) fn map_read(
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
pub(in crate::gpu) fn on_work_done(
    progress: &Arc<AtomicU64>,
    queue: &wgpu::Queue,
    signal: &Arc<Signal>,
) {
    let (progress, done) = (Arc::clone(progress), signal.completer());
    queue.on_submitted_work_done(move || {
        progress.fetch_add(1, Ordering::AcqRel);
        done.complete(Ok(()));
    });
}

/// The first `bytes` of a mapped buffer, copied out; the buffer unmapped.
pub(in crate::gpu) fn read_mapped(buffer: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>> {
    let out = buffer
        .get_mapped_range(..bytes)
        .map_err(|e| MsmError::Gpu(format!("mapped range: {e}")))?
        .to_vec();
    buffer.unmap();
    Ok(out)
}
