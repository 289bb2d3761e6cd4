//! A call's submission where the adapter has timestamp queries (every pass between two),
//! its scalars streamed (`MsmConfig::stream_chunk_scalars`, `SortLayout::scalar_chunks`),
//! each chunk in a staging buffer of its own: chunk 0 is written with the rest of the
//! call's uploads (`upload.rs`), chunk j > 0 while the GPU copies and counts the chunks
//! before it.
//! One submission a chunk: its copy and its `count_digits` pass (the first also the call's
//! other copies and any pass before the counts); the last also every pass after it, the
//! read-back copies and the timestamps' resolve. A call in one chunk is one submission.

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::curve::GpuCurve;
use crate::error::Result;
use crate::gpu::device::poller::Busy;
use crate::gpu::device::setup::scoped;
use crate::gpu::device::signal::Signal;
use crate::gpu::memory::pool::Lease;
use crate::gpu::memory::workspace::Workspace;
use crate::gpu::pipelines::compile::Pass;
use crate::gpu::pipelines::slots::Slot;
use crate::gpu::pipelines::stages::StageId;
use crate::gpu::planning::layout::JobLayout;
use crate::gpu::run::upload::{copy_chunk, Uploads};
use crate::gpu::GpuContext;

/// A staged call's passes and what their submissions copy: the input of
/// [`GpuContext::submit_timestamped`].
pub(in crate::gpu) struct StreamedCall<'a, C: GpuCurve> {
    pub(in crate::gpu) uploads: &'a Uploads<'a, C>,
    pub(in crate::gpu) lay: &'a JobLayout,
    pub(in crate::gpu) passes: &'a [Pass],
}

impl<C: GpuCurve> StreamedCall<'_, C> {
    /// The streamed chunks of the scalars (none off the GPU bucket sort: one submission).
    fn chunks(&self) -> usize {
        self.lay.sort.as_ref().map_or(0, |s| s.scalar_chunks.len())
    }

    /// The passes of submission `j`: from the first pass (j = 0) or chunk j's
    /// `count_digits` pass, up to the next chunk's, or to the end for the last.
    fn passes_of(&self, j: usize) -> Range<usize> {
        let counts: Vec<usize> = (self.passes.iter().enumerate())
            .filter(|(_, p)| p.stage == StageId::CountDigits)
            .map(|(i, _)| i)
            .collect();
        debug_assert_eq!(counts.len(), self.chunks(), "a count pass a chunk");
        let start = if j == 0 { 0 } else { counts[j] };
        start..counts.get(j + 1).copied().unwrap_or(self.passes.len())
    }
}

impl GpuContext {
    /// Submits a staged call (streamed chunk 0 of its scalars written by `stage`), in one
    /// submission a chunk: writes each later chunk after submitting the work before it,
    /// so that the GPU runs chunk j - 1 while the host writes chunk j. `copies` encodes the
    /// staged uploads' copies, `tail` the read-back copies; `asks` (the read-backs, the
    /// staging buffers' re-maps) follows the last submission, which completes `reads`.
    /// Returns the host's time writing chunks.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::gpu) async fn submit_timestamped<C: GpuCurve>(
        &self,
        ws: &mut Busy<Lease>,
        call: StreamedCall<'_, C>,
        copies: impl Fn(&mut wgpu::CommandEncoder, &Workspace),
        tail: impl Fn(&mut wgpu::CommandEncoder, &Workspace),
        reads: &[Arc<Signal>],
        asks: impl FnOnce() + Send + 'static,
        timeout: Duration,
    ) -> Result<Duration> {
        let chunks = call.chunks().max(1);
        let mut written = Duration::ZERO;
        // The earlier submissions' hand-offs, and the GPU's end of each: the workspace is
        // in use until they and the last one are done, however the call ends.
        let (mut handed, mut until) = (Vec::new(), Vec::new());
        for j in 0..chunks {
            let later = call.lay.sort.as_ref().filter(|_| j > 0);
            // Test hook (`GpuContext::inject_loss_between_chunks`): chunk 0 on the queue
            // first (its hand-off done), so that the loss falls between two submissions.
            if j == 1 && self.lose_between_chunks.swap(false, Ordering::AcqRel) {
                for h in handed.drain(..) {
                    h.await?;
                }
                self.lose();
            }
            if later.is_some() {
                let t = Instant::now();
                call.uploads.write_chunk(ws, j)?;
                written += t.elapsed();
            }
            let last = j + 1 == chunks;
            let commands = scoped(&self.device, "submission", || {
                let mut e = self.device.create_command_encoder(&Default::default());
                match later {
                    None => copies(&mut e, ws),
                    Some(sort) => copy_chunk(&mut e, ws, sort, j),
                }
                self.record_timestamped(&mut e, ws, call.passes, call.passes_of(j));
                if last {
                    tail(&mut e, ws);
                    resolve_timestamps(&mut e, ws, call.passes.len());
                }
                Ok(e.finish())
            })?;
            if last {
                until.extend(reads.iter().cloned());
                ws.until(until, timeout);
                let submitted = self.hand_off(commands, reads, asks, timeout);
                for h in handed {
                    h.await?;
                }
                submitted.await?;
                return Ok(written);
            }
            let (done, handoff) = self.hand_off_until_done(commands, timeout);
            handed.push(handoff);
            until.push(done);
            ws.until(until.clone(), timeout);
        }
        unreachable!("the last chunk returns")
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

/// Resolves the timestamps of `passes` passes and copies them out for reading.
fn resolve_timestamps(encoder: &mut wgpu::CommandEncoder, ws: &Workspace, passes: usize) {
    let queries = ws.queries.as_ref().expect("made by stage()");
    let q = 2 * passes as u32;
    let resolve = ws.get(Slot::TimestampResolve);
    encoder.resolve_query_set(queries, 0..q, resolve, 0);
    let ts_read = ws.get(Slot::TimestampRead);
    encoder.copy_buffer_to_buffer(resolve, 0, ts_read, 0, 8 * q as u64);
}
