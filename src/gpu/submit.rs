//! Submitting a call and finishing it: one submission of every pass (or one per pass when
//! timing by wall clock), then the read-back of its window sums, status and stage times.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::device::scoped;
use super::layout::{
    Job, JobBases, JobLayout, JobPlan, MAX_PASSES, READ_ENTRIES_AT, READ_STATUS_AT,
};
use super::pipelines::Pass;
use super::pool::Lease;
use super::readback::MapReceiver;
use super::shader::contract::{self, STATUS_WORDS};
use super::slots::Slot;
use super::stages::Phase;
use super::upload::Uploads;
use super::workspace::Workspace;
use super::GpuContext;
use crate::curve::GpuCurve;
use crate::error::Result;

/// What a GPU run measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct GpuTimes {
    /// Host time to pack the uploads and write them into the staging buffer.
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
    /// Host time spent blocked on the GPU: waiting for room in the memory budget, for a
    /// submission or a mapping, or in a driver's submit that waits for the queue's earlier
    /// work.
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

/// A submitted call: finish it with [`GpuContext::finish`].
pub(crate) struct InFlight {
    pub(super) ws: Lease,
    pub(super) submission: wgpu::SubmissionIndex,
    pub(super) readback: MapReceiver,
    pub(super) timestamps: Option<MapReceiver>,
    pub(super) phases: Vec<Phase>,
    pub(super) sum_bytes: u64,
    pub(super) read_bytes: u64,
    /// The read-back holds the GPU bucket sort's entry count.
    pub(super) entries: bool,
    pub(super) times: GpuTimes,
}

/// Adds each pass's time to its phase.
pub(super) fn add_stage_times(times: &mut GpuTimes, phases: &[Phase], ns: &[f64]) {
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
    /// Uploads a job's data and submits all of its stages in one submission (one per stage
    /// when timing by wall clock), without waiting for the GPU; first waits, if it must, for
    /// room in the memory budget.
    pub(crate) fn submit<C: GpuCurve>(&self, job: &Job<C>, timeout: Duration) -> Result<InFlight> {
        Ok(self
            .submit_if(job, true, timeout)?
            .expect("waited for room"))
    }

    /// [`GpuContext::submit`], or `None` (nothing done) when the job would have to wait for
    /// room in the memory budget and `wait` is false. Every wait lasts at most `timeout`
    /// ([`MsmError::Timeout`] past it).
    pub(crate) fn submit_if<C: GpuCurve>(
        &self,
        job: &Job<C>,
        wait: bool,
        timeout: Duration,
    ) -> Result<Option<InFlight>> {
        if matches!(job.plan, JobPlan::HostLists(_)) {
            // Built by the call's planning on this device; a job planned for another one
            // (replaced since) builds them here rather than find them missing.
            self.build_host_list_stages(timeout)?;
        }
        let lay = self.layout(job)?;
        let t = Instant::now();
        let uploads = self.uploads(job, &lay);
        let (sections, staging_bytes) = uploads.layout();
        let needs = self.needs(&sections, staging_bytes, &lay)?;
        let mut times = GpuTimes::default();
        let w = Instant::now();
        let Some(mut ws) = self.pool.take(&needs, wait, timeout)? else {
            return Ok(None);
        };
        times.wait += w.elapsed();
        let staged = scoped(&self.device, "upload", || {
            self.stage(&mut ws, &uploads, &sections, &needs)
        });
        times.upload = t.elapsed().saturating_sub(times.wait);
        staged?;
        scoped(&self.device, "submission", || {
            self.encode_and_submit(ws, job, &lay, &sections, times, timeout)
                .map(Some)
        })
    }

    /// What a job uploads: its parameters, plan or scalars, level blocks, and host bases
    /// (with SRE's merged points).
    pub(super) fn uploads<'a, C: GpuCurve>(
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
        }
    }

    /// Encodes a staged job's copies and passes, submits them and asks for the read-backs.
    fn encode_and_submit<C: GpuCurve>(
        &self,
        mut ws: Lease,
        job: &Job<C>,
        lay: &JobLayout,
        sections: &[(Slot, u64, u64)],
        mut times: GpuTimes,
        timeout: Duration,
    ) -> Result<InFlight> {
        if self.invalid_next.swap(false, Ordering::AcqRel) {
            let _invalid = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("injected fault"),
                size: 4,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::MAP_WRITE,
                mapped_at_creation: false,
            });
        }
        let passes = self.passes(&mut ws, job, lay);
        // Every pass has its two timestamp queries.
        debug_assert!(passes.len() <= MAX_PASSES, "{} passes", passes.len());
        let copies = |e: &mut wgpu::CommandEncoder, ws: &Workspace| {
            self.encode_copies(e, ws, sections, job, lay)
        };
        let tail = |e: &mut wgpu::CommandEncoder, ws: &Workspace| copy_out(e, ws, lay);
        let submission = if self.timestamps {
            let (index, blocked) = self.submit_timestamped(&ws, &passes, copies, tail);
            times.wait += blocked;
            index
        } else {
            let t = Instant::now();
            let (index, ns) = self.submit_wallclock(&ws, &passes, copies, tail, timeout)?;
            times.wait += t.elapsed();
            let phases: Vec<Phase> = passes.iter().map(|p| p.phase).collect();
            add_stage_times(&mut times, &phases, &ns);
            index
        };
        ws.remap_staging();
        let readback = self.request_read(ws.get(Slot::Readback), lay.read_bytes());
        let timestamps = self
            .timestamps
            .then(|| self.request_read(ws.get(Slot::TimestampRead), 16 * passes.len() as u64));
        times.buffers_allocated = ws.allocated;
        times.dispatches = passes.len() as u32;
        Ok(InFlight {
            ws,
            submission,
            readback,
            timestamps,
            phases: passes.iter().map(|p| p.phase).collect(),
            sum_bytes: lay.sum_bytes,
            read_bytes: lay.read_bytes(),
            entries: lay.sort.is_some(),
            times,
        })
    }

    /// One command buffer: the copies, every pass between timestamp queries, the window
    /// sums and timestamps copied out for reading. Returns the submission and the time the
    /// host spent in the submit: lavapipe's waits there until the queue's earlier work is
    /// done (a call submitted while another runs, as overlapped slices and batches are),
    /// which is a wait for the GPU, not host work (elsewhere it is wgpu's validation, a few
    /// microseconds counted as waiting too).
    pub(super) fn submit_timestamped(
        &self,
        ws: &Workspace,
        passes: &[Pass],
        copies: impl Fn(&mut wgpu::CommandEncoder, &Workspace),
        tail: impl Fn(&mut wgpu::CommandEncoder, &Workspace),
    ) -> (wgpu::SubmissionIndex, Duration) {
        let mut encoder = self.device.create_command_encoder(&Default::default());
        copies(&mut encoder, ws);
        let queries = ws.queries.as_ref().expect("made by stage()");
        for (i, p) in passes.iter().enumerate() {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: queries,
                    beginning_of_pass_write_index: Some(2 * i as u32),
                    end_of_pass_write_index: Some(2 * i as u32 + 1),
                }),
            });
            p.record(&mut pass);
        }
        tail(&mut encoder, ws);
        let q = 2 * passes.len() as u32;
        let resolve = ws.get(Slot::TimestampResolve);
        encoder.resolve_query_set(queries, 0..q, resolve, 0);
        let ts_read = ws.get(Slot::TimestampRead);
        encoder.copy_buffer_to_buffer(resolve, 0, ts_read, 0, 8 * q as u64);
        let commands = encoder.finish();
        let t = Instant::now();
        let index = self.queue.submit([commands]);
        (index, t.elapsed())
    }

    /// Without timestamps: the copies, then one submission per pass, each waited for and
    /// timed by the host's clock. Returns the last submission and each pass's time.
    pub(super) fn submit_wallclock(
        &self,
        ws: &Workspace,
        passes: &[Pass],
        copies: impl Fn(&mut wgpu::CommandEncoder, &Workspace),
        tail: impl Fn(&mut wgpu::CommandEncoder, &Workspace),
        timeout: Duration,
    ) -> Result<(wgpu::SubmissionIndex, Vec<f64>)> {
        let dev = &self.device;
        let mut encoder = dev.create_command_encoder(&Default::default());
        copies(&mut encoder, ws);
        let mut last = self.queue.submit([encoder.finish()]);
        self.wait_for(last.clone(), timeout)?;
        let mut ns = Vec::new();
        for (i, p) in passes.iter().enumerate() {
            let t = Instant::now();
            let mut encoder = dev.create_command_encoder(&Default::default());
            p.record(&mut encoder.begin_compute_pass(&Default::default()));
            if i + 1 == passes.len() {
                tail(&mut encoder, ws);
            }
            last = self.queue.submit([encoder.finish()]);
            self.wait_for(last.clone(), timeout)?;
            ns.push(t.elapsed().as_nanos() as f64);
        }
        Ok((last, ns))
    }

    /// Waits (at most `timeout` each time) for a submitted job and reads back its window
    /// sums (in the shaders' packed projective form, W of them), its status and its stage
    /// times; its workspace returns to the pool.
    pub(crate) fn finish(&self, f: InFlight, timeout: Duration) -> Result<CallOutput> {
        let InFlight {
            ws,
            submission,
            readback,
            timestamps,
            phases,
            sum_bytes,
            read_bytes,
            entries,
            mut times,
        } = f;
        let w = Instant::now();
        self.wait_for(submission, timeout)?;
        times.wait += w.elapsed();
        let t = Instant::now();
        let read = self.take_mapped(&readback, ws.get(Slot::Readback), read_bytes, timeout)?;
        let words: &[u32] = bytemuck::cast_slice(&read);
        let word_at = |at: u64| words[((sum_bytes + at) / 4) as usize];
        let sums = words[..sum_bytes as usize / 4].to_vec();
        if entries {
            times.entries = Some(word_at(READ_ENTRIES_AT) as u64);
        }
        let status = word_at(READ_STATUS_AT + 4 * contract::STATUS_BAD_BASE as u64);
        let bad_base = contract::bad_base(status).map(|i| i as usize);
        times.download = t.elapsed();
        if let Some(rx) = timestamps {
            let bytes = 16 * phases.len() as u64;
            let raw = self.take_mapped(&rx, ws.get(Slot::TimestampRead), bytes, timeout)?;
            let ticks: &[u64] = bytemuck::cast_slice(&raw);
            let period = self.queue.get_timestamp_period() as f64;
            let ns: Vec<f64> = (0..phases.len())
                .map(|i| ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period)
                .collect();
            add_stage_times(&mut times, &phases, &ns);
        }
        ws.keep();
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
