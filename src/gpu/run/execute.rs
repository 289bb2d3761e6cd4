//! Submitting a call and finishing it: a submission a streamed chunk of its scalars
//! (`stream.rs`; one per pass when timing by wall clock), then the read-back of its window
//! sums, status and stage times.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::curve::GpuCurve;
use crate::error::{MsmError, Result};
use crate::gpu::device::poller::Busy;
use crate::gpu::device::readback::{map_read, on_work_done, read_mapped};
use crate::gpu::device::setup::scoped;
use crate::gpu::device::signal::Signal;
use crate::gpu::memory::pool::Lease;
use crate::gpu::memory::workspace::Workspace;
use crate::gpu::pipelines::compile::Pass;
use crate::gpu::pipelines::slots::Slot;
use crate::gpu::pipelines::stages::Phase;
use crate::gpu::planning::layout::{
    Job, JobBases, JobLayout, JobPlan, MAX_PASSES, READ_ENTRIES_AT, READ_STATUS_AT,
};
use crate::gpu::run::stream::StreamedCall;
use crate::gpu::run::upload::Uploads;
use crate::gpu::shader::contract::{self, STATUS_WORDS};
use crate::gpu::GpuContext;

/// What a GPU run measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct GpuTimes {
    /// Host time to pack the uploads and write them into the staging buffers (a streamed
    /// call's later chunks written while the GPU runs the chunks before them).
    pub upload: Duration,
    /// Conversion of the bases.
    pub point_conversion: Duration,
    /// Bucket accumulation and the merge levels.
    pub bucket_accumulation: Duration,
    /// Both bucket-reduction passes.
    pub bucket_reduction: Duration,
    /// Decomposition and bucket sort on the GPU.
    pub bucket_sort: Duration,
    /// Bucket entries the GPU bucket sort placed (read back with the window sums).
    pub entries: Option<u64>,
    /// Mapping and copying out the window sums.
    pub download: Duration,
    /// Time the call waited for the GPU (a thread blocked, or a future pending): for room
    /// in the memory budget, for its submission on the device's submitting thread (a
    /// driver's submit may wait there for the queue's earlier work), for a submission's
    /// end or a mapping.
    pub wait: Duration,
    /// Buffers this call created (zero when the pooled ones were large enough).
    pub buffers_allocated: u32,
    /// Compute dispatches the call submitted.
    pub dispatches: u32,
}

/// What a finished call read back.
pub(crate) struct CallOutput {
    /// The window sums, in the shaders' packed projective form.
    pub sums: Vec<u32>,
    /// What the run measured.
    pub times: GpuTimes,
    /// The first uploaded base (in the call's numbering) that failed the convert stage's
    /// check: off the curve, or a coordinate not reduced (`shaders/base_check.wgsl`).
    pub bad_base: Option<usize>,
}

/// A submitted call: finish it with [`GpuContext::finish`]. Dropped before, its
/// buffers and reservation stay with the device's poller until the GPU is done with them.
pub(crate) struct InFlight {
    pub(in crate::gpu) ws: Busy<Lease>,
    pub(in crate::gpu) readback: Arc<Signal>,
    pub(in crate::gpu) timestamps: Option<Arc<Signal>>,
    pub(in crate::gpu) phases: Vec<Phase>,
    pub(in crate::gpu) sum_bytes: u64,
    pub(in crate::gpu) read_bytes: u64,
    /// The read-back holds the GPU bucket sort's entry count.
    pub(in crate::gpu) entries: bool,
    pub(in crate::gpu) times: GpuTimes,
}

/// Adds each pass's time to its phase.
pub(in crate::gpu) fn add_stage_times(times: &mut GpuTimes, phases: &[Phase], ns: &[f64]) {
    for (ph, ns) in phases.iter().zip(ns) {
        let d = Duration::from_nanos(*ns as u64);
        match ph {
            Phase::Convert => times.point_conversion += d,
            Phase::Sort => times.bucket_sort += d,
            Phase::Accumulate => times.bucket_accumulation += d,
            Phase::Reduce => times.bucket_reduction += d,
            Phase::SelfTest | Phase::Load => unreachable!("{ph:?} is not a call's pass"),
        }
    }
}

impl GpuContext {
    /// Uploads a job's data and submits all of its stages, a submission a streamed chunk of
    /// its scalars (`stream.rs`; one per stage
    /// when timing by wall clock, each waited for), without waiting for the GPU to finish;
    /// the thread blocks for room in the memory budget and for the hand-off to the device's
    /// submitting thread ([`GpuContext::submit_if`] blocks none).
    pub(crate) fn submit_blocking<C: GpuCurve>(
        &self,
        job: &Job<C>,
        timeout: Duration,
    ) -> Result<InFlight> {
        let submitted = crate::gpu::device::blocking::block_on(self.submit_if(job, true, timeout));
        Ok(submitted?.expect("waited for room"))
    }

    /// [`GpuContext::submit_blocking`] without blocking a thread, or `None` (nothing done) when the
    /// job would have to wait for room in the memory budget and `wait` is false. Every wait
    /// lasts at most `timeout` ([`MsmError::Timeout`] past it).
    pub(crate) async fn submit_if<C: GpuCurve>(
        &self,
        job: &Job<'_, C>,
        wait: bool,
        timeout: Duration,
    ) -> Result<Option<InFlight>> {
        if matches!(job.plan, JobPlan::HostLists(_)) {
            // Built by the call's planning on this device; a job planned for another one
            // (replaced since) builds them here rather than find them missing.
            self.build_host_list_stages(timeout)?;
        }
        if let JobBases::Resident(parts, _) = job.bases {
            if parts.len() > 1 {
                self.build_parted_stages(self.stage_parts(parts.len()), timeout)?;
            }
        }
        let lay = self.layout(job)?;
        let t = Instant::now();
        let uploads = self.uploads(job, &lay);
        let (sections, staging_bytes) = uploads.layout();
        let needs = self.needs(&sections, staging_bytes, &lay)?;
        let mut times = GpuTimes::default();
        let w = Instant::now();
        let lease = match wait {
            true => self.pool.take_async(&needs, timeout).await?,
            false => match self.pool.take(&needs, false, timeout)? {
                Some(lease) => lease,
                None => return Ok(None),
            },
        };
        let mut ws = Busy::new(lease, &self.poller);
        times.wait += w.elapsed();
        let staged = scoped(&self.device, "upload", || {
            self.stage(&mut ws, &uploads, &sections, &needs)
        });
        times.upload = t.elapsed().saturating_sub(times.wait);
        staged?;
        let f = self.encode_and_submit(ws, job, &uploads, &lay, &sections, times, timeout);
        f.await.map(Some)
    }

    /// What a job uploads: its parameters, plan or scalars, level blocks, and host bases
    /// (with SRE's merged points).
    pub(in crate::gpu) fn uploads<'a, C: GpuCurve>(
        &self,
        job: &Job<'a, C>,
        lay: &'a JobLayout,
    ) -> Uploads<'a, C> {
        let mut bases = Vec::new();
        if let JobBases::Host(b) = job.bases {
            bases.push(b);
        }
        if lay.convert_from.is_some() {
            bases.push(job.merged);
        }
        let levels = lay.level_blocks();
        Uploads {
            params: lay.params,
            merge: &lay.merge,
            plan: job.plan,
            levels,
            bases,
            profile: self.profile,
            scalar_chunks: lay.sort.as_ref().map_or(&[], |s| &s.scalar_chunks),
        }
    }

    /// Encodes a staged job's copies and passes, submits them on the device's submitting
    /// thread and asks for the read-backs there.
    #[allow(clippy::too_many_arguments)]
    async fn encode_and_submit<C: GpuCurve>(
        &self,
        mut ws: Busy<Lease>,
        job: &Job<'_, C>,
        uploads: &Uploads<'_, C>,
        lay: &JobLayout,
        sections: &[(Slot, u64, u64)],
        mut times: GpuTimes,
        timeout: Duration,
    ) -> Result<InFlight> {
        let passes = scoped(&self.device, "submission", || {
            self.inject_fault_if_asked();
            Ok(self.passes(&mut ws, job, lay))
        })?;
        // Every pass has its two timestamp queries.
        debug_assert!(passes.len() <= MAX_PASSES, "{} passes", passes.len());
        let copies = |e: &mut wgpu::CommandEncoder, ws: &Workspace| {
            self.encode_copies(e, ws, sections, job, lay)
        };
        let tail = |e: &mut wgpu::CommandEncoder, ws: &Workspace| copy_out(e, ws, lay);
        let readback = Signal::new();
        let timestamps = self.timestamps.then(Signal::new);
        let reads: Vec<Arc<Signal>> = std::iter::once(Arc::clone(&readback))
            .chain(timestamps.clone())
            .collect();
        let asks = self.read_requests(&ws, lay, passes.len(), &readback, timestamps.as_ref());
        let w = Instant::now();
        let mut written = std::time::Duration::ZERO;
        if self.timestamps {
            let call = StreamedCall {
                uploads,
                lay,
                passes: &passes,
            };
            let submitted =
                self.submit_timestamped(&mut ws, call, copies, tail, &reads, asks, timeout);
            written = submitted.await?;
        } else {
            let ns = self
                .submit_wallclock(&mut ws, &passes, copies, tail, timeout)
                .await?;
            let phases: Vec<Phase> = passes.iter().map(|p| p.phase).collect();
            add_stage_times(&mut times, &phases, &ns);
            ws.until(reads, timeout);
            asks();
        }
        // The submit itself may wait for the queue's earlier work (lavapipe's does): a wait
        // for the GPU, not host work; the streamed chunks' writes are upload.
        times.wait += w.elapsed().saturating_sub(written);
        times.upload += written;
        times.buffers_allocated = ws.allocated;
        times.dispatches = passes.len() as u32;
        Ok(InFlight {
            ws,
            readback,
            timestamps,
            phases: passes.iter().map(|p| p.phase).collect(),
            sum_bytes: lay.sum_bytes,
            read_bytes: lay.read_bytes(),
            entries: lay.sort.is_some(),
            times,
        })
    }

    /// What follows a call's last submission, to run after it: the staging buffers mapped
    /// again for the next call, the read-back (and the timestamps of `passes` passes)
    /// mapped for reading, completing `readback` (and `timestamps`).
    fn read_requests(
        &self,
        ws: &Workspace,
        lay: &JobLayout,
        passes: usize,
        readback: &Arc<Signal>,
        timestamps: Option<&Arc<Signal>>,
    ) -> impl FnOnce() + Send + 'static {
        let remap = ws.staging_remap(&lay.staging_slots());
        let progress = Arc::clone(&self.progress);
        let read = (
            ws.get(Slot::Readback).clone(),
            lay.read_bytes(),
            Arc::clone(readback),
        );
        let ticks = timestamps.map(|s| {
            let buffer = ws.get(Slot::TimestampRead).clone();
            (buffer, 16 * passes as u64, Arc::clone(s))
        });
        move || {
            remap();
            for (buffer, bytes, signal) in std::iter::once(read).chain(ticks) {
                map_read(&progress, &buffer, bytes, &signal);
            }
        }
    }

    /// Submits `commands` on the device's submitting thread (inside error scopes there),
    /// then runs `then` there: what must follow the submission (read-backs asked for). A
    /// submission that fails, or never runs (the thread gone, a panic), completes
    /// `signals` with its error instead, so that nothing waits for them. The caller's
    /// thread never waits in a driver's submit; the hand-off is watched by the poller,
    /// whose deadline (`timeout` without the GPU's progress) it has. The submission is
    /// queued at once (before the returned future is first polled), its deadline running
    /// from now: the future is the hand-off, to await.
    pub(in crate::gpu) fn hand_off(
        &self,
        commands: wgpu::CommandBuffer,
        signals: &[Arc<Signal>],
        then: impl FnOnce() + Send + 'static,
        timeout: Duration,
    ) -> impl std::future::Future<Output = Result<()>> + Send + 'static {
        let (device, queue) = (self.device.clone(), self.queue.clone());
        let failed = signals.to_vec();
        let job = move || {
            let submitted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let out = scoped(&device, "submission", || {
                    queue.submit([commands]);
                    Ok(())
                });
                if out.is_ok() {
                    then();
                }
                out
            }));
            let out =
                submitted.unwrap_or_else(|_| Err(MsmError::Gpu("a submission panicked".into())));
            if let Err(e) = &out {
                // Even when the call's future is gone: nothing may wait for these.
                failed.iter().for_each(|s| s.complete(Err(e.clone())));
            }
            out
        };
        let handoff = self.submitter.run(job);
        // Registered with the poller for its deadline; the hand-off itself is awaited.
        let deadline = self.poller.watch(handoff.signal(), timeout);
        let signals = signals.to_vec();
        async move {
            let _deadline = deadline;
            let out = handoff.await.and_then(|submitted| submitted);
            if let Err(e) = &out {
                // A signal completed already keeps its outcome.
                signals.iter().for_each(|s| s.complete(Err(e.clone())));
            }
            out
        }
    }

    /// Test hook ([`GpuContext::inject_validation_error`]): a buffer that cannot exist.
    fn inject_fault_if_asked(&self) {
        if self.invalid_next.swap(false, Ordering::AcqRel) {
            let _invalid = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("injected fault"),
                size: 4,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::MAP_WRITE,
                mapped_at_creation: false,
            });
        }
    }

    /// Without timestamps: the copies, then one submission per pass, each awaited and
    /// timed by the host's clock. Returns each pass's time.
    pub(in crate::gpu) async fn submit_wallclock(
        &self,
        ws: &mut Busy<Lease>,
        passes: &[Pass],
        copies: impl Fn(&mut wgpu::CommandEncoder, &Workspace),
        tail: impl Fn(&mut wgpu::CommandEncoder, &Workspace),
        timeout: Duration,
    ) -> Result<Vec<f64>> {
        let dev = &self.device;
        let encoded = scoped(dev, "submission", || {
            let mut encoder = dev.create_command_encoder(&Default::default());
            copies(&mut encoder, ws);
            Ok(encoder.finish())
        })?;
        self.submit_and_await(encoded, ws, timeout).await?;
        let mut ns = Vec::new();
        for (i, p) in passes.iter().enumerate() {
            let t = Instant::now();
            let encoded = scoped(dev, "submission", || {
                let mut encoder = dev.create_command_encoder(&Default::default());
                p.record(&mut encoder.begin_compute_pass(&Default::default()));
                if i + 1 == passes.len() {
                    tail(&mut encoder, ws);
                }
                Ok(encoder.finish())
            })?;
            self.submit_and_await(encoded, ws, timeout).await?;
            ns.push(t.elapsed().as_nanos() as f64);
        }
        Ok(ns)
    }

    /// [`GpuContext::hand_off`] of `commands`, then a signal completed when the GPU has
    /// run them (`on_work_done`): the signal, and the hand-off to await.
    pub(in crate::gpu) fn hand_off_until_done(
        &self,
        commands: wgpu::CommandBuffer,
        timeout: Duration,
    ) -> (
        Arc<Signal>,
        impl std::future::Future<Output = Result<()>> + Send + 'static,
    ) {
        let done = Signal::new();
        let (progress, queue, signal) = (
            Arc::clone(&self.progress),
            self.queue.clone(),
            Arc::clone(&done),
        );
        let then = move || on_work_done(&progress, &queue, &signal);
        let handed = self.hand_off(commands, std::slice::from_ref(&done), then, timeout);
        (done, handed)
    }

    /// Submits `commands` ([`GpuContext::hand_off`]) and awaits the GPU's work, `ws` in use
    /// by the GPU meanwhile.
    async fn submit_and_await(
        &self,
        commands: wgpu::CommandBuffer,
        ws: &mut Busy<Lease>,
        timeout: Duration,
    ) -> Result<()> {
        let (done, handed) = self.hand_off_until_done(commands, timeout);
        ws.until(vec![Arc::clone(&done)], timeout);
        handed.await?;
        self.poller.watch(&done, timeout).await
    }

    /// Waits for a submitted job and reads back its window sums (in the shaders' packed
    /// projective form, W of them), its status and its stage times, blocking the thread
    /// ([`GpuContext::finish`]).
    pub(crate) fn finish_blocking(&self, f: InFlight, timeout: Duration) -> Result<CallOutput> {
        crate::gpu::device::blocking::block_on(self.finish(f, timeout))
    }

    /// Awaits a submitted job (each wait at most `timeout` without the GPU's progress) and
    /// reads back its window sums, status and stage times; its workspace returns to the
    /// pool.
    pub(crate) async fn finish(&self, f: InFlight, timeout: Duration) -> Result<CallOutput> {
        let w = Instant::now();
        self.poller.watch(&f.readback, timeout).await?;
        let wait = w.elapsed();
        let t = Instant::now();
        let read = read_mapped(f.ws.get(Slot::Readback), f.read_bytes)?;
        let ticks = match &f.timestamps {
            Some(rx) => {
                let bytes = 16 * f.phases.len() as u64;
                let at = f.ws.get(Slot::TimestampRead);
                Some(self.mapped(rx, at, bytes, timeout).await?)
            }
            None => None,
        };
        let InFlight {
            ws,
            phases,
            sum_bytes,
            entries,
            mut times,
            ..
        } = f;
        // A streamed call's earlier submissions ended before its read-back; their
        // callbacks may still be on their way.
        for s in ws.pending() {
            self.poller.watch(&s, timeout).await?;
        }
        times.wait += wait;
        let words: &[u32] = bytemuck::cast_slice(&read);
        let word_at = |at: u64| words[((sum_bytes + at) / 4) as usize];
        let sums = words[..sum_bytes as usize / 4].to_vec();
        if entries {
            times.entries = Some(word_at(READ_ENTRIES_AT) as u64);
        }
        let status = word_at(READ_STATUS_AT + 4 * contract::STATUS_BAD_BASE as u64);
        let bad_base = contract::bad_base(status).map(|i| i as usize);
        times.download = t.elapsed();
        if let Some(raw) = ticks {
            let ticks: &[u64] = bytemuck::cast_slice(&raw);
            let period = self.queue.get_timestamp_period() as f64;
            let ns: Vec<f64> = (0..phases.len())
                .map(|i| ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period)
                .collect();
            add_stage_times(&mut times, &phases, &ns);
        }
        ws.release().keep();
        Ok(CallOutput {
            sums,
            times,
            bad_base,
        })
    }
}

/// Copies what the host reads into the read-back buffer: the window sums, the entry count
/// (GPU bucket sort) and the status words.
fn copy_out(e: &mut wgpu::CommandEncoder, ws: &Workspace, lay: &JobLayout) {
    let (sums, read) = (ws.get(Slot::Sums), ws.get(Slot::Readback));
    e.copy_buffer_to_buffer(sums, 0, read, 0, lay.sum_bytes);
    if let Some(s) = &lay.sort {
        let scan = ws.get(Slot::Scan);
        let at = lay.sum_bytes + READ_ENTRIES_AT;
        e.copy_buffer_to_buffer(scan, s.entry_count_at, read, at, 4);
    }
    let status_bytes = 4 * STATUS_WORDS as u64;
    let at = lay.sum_bytes + READ_STATUS_AT;
    e.copy_buffer_to_buffer(ws.get(Slot::Status), 0, read, at, status_bytes);
}
