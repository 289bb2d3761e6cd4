//! A call's submission where the adapter has timestamp queries (every pass between two),
//! its scalars streamed (`MsmConfig::stream_chunk_scalars`, `SortLayout::count`): chunk 0
//! goes up with the rest of the call's uploads (`upload.rs`), and chunk j > 0 is written
//! into a staging buffer of its own while the GPU copies and counts the chunks before it.
//! One submission a chunk: its copy and its `count_digits` pass (the first also the call's
//! other copies and any pass before the counts); the last also every pass after it, the
//! read-back copies and the timestamps' resolve. A call in one chunk is one submission.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::curve::GpuCurve;
use crate::error::{MsmError, Result};
use crate::gpu::device::poller::Busy;
use crate::gpu::device::readback::on_work_done;
use crate::gpu::device::setup::scoped;
use crate::gpu::device::signal::Signal;
use crate::gpu::memory::pool::Lease;
use crate::gpu::memory::workspace::Workspace;
use crate::gpu::pipelines::compile::Pass;
use crate::gpu::pipelines::slots::Slot;
use crate::gpu::planning::layout::{JobLayout, SortLayout};
use crate::gpu::run::upload::Uploads;
use crate::gpu::GpuContext;

/// What the encoder of a call's submissions needs besides the workspace.
pub(in crate::gpu) struct Submission<'a, C: GpuCurve> {
    pub(in crate::gpu) uploads: &'a Uploads<'a, C>,
    pub(in crate::gpu) lay: &'a JobLayout,
    pub(in crate::gpu) passes: &'a [Pass],
}

impl<C: GpuCurve> Submission<'_, C> {
    /// The passes of submission `j` of `chunks`: the first from pass 0, each through its
    /// chunk's count (after the convert pass of a call that uploads bases), the last to the
    /// end.
    fn passes_of(&self, j: usize, chunks: usize) -> Range<usize> {
        let lead = usize::from(self.lay.convert_from.is_some());
        let start = if j == 0 { 0 } else { lead + j };
        let end = if j + 1 == chunks {
            self.passes.len()
        } else {
            lead + j + 1
        };
        start..end
    }
}

impl GpuContext {
    /// Submits a staged call (streamed chunk 0 written by `stage`): writes each later chunk
    /// of its scalars, submitting the work before it first, so that the GPU runs chunk
    /// j - 1 while the host writes chunk j. `copies` encodes the staged uploads' copies,
    /// `tail` the read-back copies; `asks` (the read-backs, the staging buffers' re-maps)
    /// follows the last submission, which completes `reads`. Returns the host's time
    /// writing chunks.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::gpu) async fn submit_timestamped<C: GpuCurve>(
        &self,
        ws: &mut Busy<Lease>,
        call: Submission<'_, C>,
        copies: impl Fn(&mut wgpu::CommandEncoder, &Workspace),
        tail: impl Fn(&mut wgpu::CommandEncoder, &Workspace),
        reads: &[Arc<Signal>],
        asks: impl FnOnce() + Send + 'static,
        timeout: Duration,
    ) -> Result<Duration> {
        let sort = call.lay.sort.as_ref();
        let chunks = sort.map_or(1, |s| s.count.len());
        let mut written = Duration::ZERO;
        // The earlier submissions' hand-offs and the GPU's end of each: the workspace is in
        // use until they are done, should the call stop before its last submission.
        let (mut handed, mut done) = (Vec::new(), Vec::new());
        for j in 0..chunks {
            let sort = sort.filter(|_| j > 0);
            if let Some(sort) = sort {
                let t = Instant::now();
                self.write_chunk(ws, call.uploads, sort, j)?;
                written += t.elapsed();
            }
            let last = j + 1 == chunks;
            let commands = scoped(&self.device, "submission", || {
                let mut e = self.device.create_command_encoder(&Default::default());
                match sort {
                    None => copies(&mut e, ws),
                    Some(sort) => copy_chunk(&mut e, ws, sort, j),
                }
                self.record_timestamped(&mut e, ws, call.passes, call.passes_of(j, chunks));
                if last {
                    tail(&mut e, ws);
                    resolve_timestamps(&mut e, ws, call.passes.len());
                }
                Ok(e.finish())
            })?;
            if last {
                ws.until(reads.to_vec(), timeout);
                let submitted = self.hand_off(commands, reads, asks, timeout);
                for h in handed {
                    h.await?;
                }
                submitted.await?;
                return Ok(written);
            }
            let signal = Signal::new();
            let (progress, queue, s) = (
                Arc::clone(&self.progress),
                self.queue.clone(),
                Arc::clone(&signal),
            );
            let then = move || on_work_done(&progress, &queue, &s);
            handed.push(self.hand_off(commands, std::slice::from_ref(&signal), then, timeout));
            done.push(signal);
            ws.until(done.clone(), timeout);
        }
        unreachable!("the last chunk returns")
    }

    /// Writes streamed chunk `j` (> 0) of the call's scalars into its staging buffer,
    /// unmapped after for the GPU to copy.
    fn write_chunk<C: GpuCurve>(
        &self,
        ws: &Workspace,
        uploads: &Uploads<C>,
        sort: &SortLayout,
        j: usize,
    ) -> Result<()> {
        let slot = Slot::StagingChunk(j as u8);
        let bytes = sort.chunk_bytes(j);
        let chunk = &sort.count[j];
        let from = chunk.in_base as usize;
        {
            let mut view = ws
                .get(slot)
                .get_mapped_range_mut(..bytes)
                .map_err(|e| MsmError::Gpu(format!("scalar chunk {j}: {e}")))?;
            let to = from + chunk.count_in as usize;
            uploads.write_scalars(view.slice(0..bytes as usize), from..to);
        }
        ws.unmap_staging(slot);
        Ok(())
    }

    /// Records passes `range` of `passes`, each between its two timestamp queries.
    fn record_timestamped(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        ws: &Workspace,
        passes: &[Pass],
        range: Range<usize>,
    ) {
        let queries = ws.queries.as_ref().expect("made by stage()");
        for i in range {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: queries,
                    beginning_of_pass_write_index: Some(2 * i as u32),
                    end_of_pass_write_index: Some(2 * i as u32 + 1),
                }),
            });
            passes[i].record(&mut pass);
        }
    }
}

/// Copies streamed chunk `j` (> 0) of the scalars from its staging buffer to its place.
fn copy_chunk(encoder: &mut wgpu::CommandEncoder, ws: &Workspace, sort: &SortLayout, j: usize) {
    let staging = ws.get(Slot::StagingChunk(j as u8));
    let at = sort.count[j].in_base as u64 * 32;
    encoder.copy_buffer_to_buffer(staging, 0, ws.get(Slot::Scalars), at, sort.chunk_bytes(j));
}

/// Resolves the timestamps of `passes` passes and copies them out for reading.
fn resolve_timestamps(encoder: &mut wgpu::CommandEncoder, ws: &Workspace, passes: usize) {
    let queries = ws.queries.as_ref().expect("made by stage()");
    let q = 2 * passes as u32;
    let resolve = ws.get(Slot::TimestampResolve);
    encoder.resolve_query_set(queries, 0..q, resolve, 0);
    let ts_read = ws.get(Slot::TimestampRead);
    encoder.copy_buffer_to_buffer(resolve, 0, ts_read, 0, 8 * q as u64);
}
