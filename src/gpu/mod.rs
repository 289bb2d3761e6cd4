//! The GPU side: adapter and device, the WGSL pipelines, and one run of the Pippenger
//! stages (convert bases, accumulate buckets, reduce buckets per window).

pub mod contract;
pub mod edwards;
pub mod field;
pub mod pool;
pub mod program;
pub mod selftest;
pub mod sort;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use ark_bls12_377::{Fr, G1Affine};
use rayon::prelude::*;
use wgpu::util::DeviceExt;

use crate::config::{MemoryBudget, MsmConfig, PowerPreference};
use crate::digits::{BucketPlan, MergePlan, MAX_MERGE_LEVELS, MERGE_FANIN};
use crate::error::{MsmError, Result};
use crate::report::GpuTiming;
use contract::{LevelParams, MergeParams, Params, STATUS_WORDS};
use field::{affine_upload_words, Arithmetic, WORKGROUP_SIZE};
use pool::{Group, Lease, MemoryUsage, Pool, ResidentCharge, Slot, Workspace};

const FIELD_OPS_WGSL: &str = include_str!("../../shaders/field_ops.wgsl");
const CURVE_OPS_WGSL: &str = include_str!("../../shaders/curve_ops.wgsl");
const DISPATCH_WGSL: &str = include_str!("../../shaders/dispatch.wgsl");
const BASES_WGSL: &str = include_str!("../../shaders/bases.wgsl");
const ACCUMULATE_WGSL: &str = include_str!("../../shaders/accumulate.wgsl");
const MERGE_WGSL: &str = include_str!("../../shaders/merge.wgsl");
const REDUCE_WGSL: &str = include_str!("../../shaders/reduce.wgsl");
const SORT_WGSL: &str = include_str!("../../shaders/sort.wgsl");
const SCAN_WGSL: &str = include_str!("../../shaders/scan.wgsl");
const BALANCED_WGSL: &str = include_str!("../../shaders/balanced.wgsl");
const BASE_CHECK_WGSL: &str = include_str!("../../shaders/base_check.wgsl");
const SELFTEST_WGSL: &str = include_str!("../../shaders/selftest.wgsl");

/// The self-test kernel's stage source (it runs the base check too).
pub(crate) fn selftest_wgsl() -> String {
    [BASE_CHECK_WGSL, SELFTEST_WGSL].join("\n")
}

/// Bucket reduction gives each thread a run of this many buckets of one window (fewer when a
/// window has fewer buckets), so a window of B buckets is split into B / 16 segments.
pub const REDUCTION_RUN_LENGTH: u32 = 16;

/// Most compute passes of one call: convert, accumulate, the merge levels, reduce segments,
/// reduce windows; or, with the GPU bucket sort, convert, init, count, the scan levels up and
/// back, scatter, accumulate, the carry levels and the two reduction passes.
const MAX_PASSES: usize = {
    let host = 4 + MAX_MERGE_LEVELS;
    let gpu = 7 + 2 * sort::MAX_SCAN_LEVELS + sort::MAX_CARRY_LEVELS;
    if host > gpu {
        host
    } else {
        gpu
    }
};

/// Timestamp queries: a begin and an end for each pass.
const TIMESTAMP_QUERIES: u32 = 2 * MAX_PASSES as u32;

/// Alignment of the sections of the staging buffer and of the merge levels' parameter blocks
/// (WebGPU's minimum uniform buffer offset alignment is at most 256 on every adapter).
const SECTION_ALIGN: u64 = 256;

/// Cache key of the workspace's own points buffer (resident sets count from 1).
const WORKSPACE_POINTS: u64 = 0;

/// Full WGSL source of one stage: generated constants, field and curve model (of the
/// profile), formulas, dispatch helpers, stage.
pub(crate) fn stage_source(arithmetic: Arithmetic, stage: &str) -> String {
    [
        arithmetic.wgsl_header().as_str(),
        contract::wgsl().as_str(),
        arithmetic.field_wgsl(),
        FIELD_OPS_WGSL,
        arithmetic.curve_wgsl(),
        arithmetic.formulas_wgsl().as_str(),
        CURVE_OPS_WGSL,
        DISPATCH_WGSL,
        stage,
    ]
    .join("\n")
}

impl Params {
    fn new(first_point: u32, num_points: u32, plan: &BucketPlan) -> Self {
        Self {
            num_chunks: plan.num_chunks(),
            ..Self::for_windows(first_point, num_points, plan.window_bits, plan.num_windows)
        }
    }

    /// The parameters that depend on the window shape only.
    fn for_windows(first_point: u32, num_points: u32, c: u32, windows: u32) -> Self {
        let b = crate::digits::buckets_per_window(c);
        let run_length = REDUCTION_RUN_LENGTH.min(b);
        let segments = b / run_length;
        Self {
            num_points,
            num_windows: windows,
            buckets_per_window: b,
            total_buckets: windows * b,
            segments,
            log2_segments: segments.trailing_zeros(),
            run_length,
            total_segments: windows * segments,
            first_point,
            window_bits: c,
            ..Default::default()
        }
    }
}

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
    /// Host time spent blocked on the GPU (waiting for a submission or a mapping).
    pub wait: Duration,
    /// Buffers this call created (zero when the pooled ones were large enough).
    pub buffers_allocated: u32,
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

struct Pipelines {
    convert: wgpu::ComputePipeline,
    init_buckets: wgpu::ComputePipeline,
    count_digits: wgpu::ComputePipeline,
    scan_blocks: wgpu::ComputePipeline,
    scan_add: wgpu::ComputePipeline,
    scatter_digits: wgpu::ComputePipeline,
    accumulate_balanced: wgpu::ComputePipeline,
    carry_level: wgpu::ComputePipeline,
    accumulate: wgpu::ComputePipeline,
    merge: wgpu::ComputePipeline,
    reduce_segments: wgpu::ComputePipeline,
    reduce_windows: wgpu::ComputePipeline,
}

/// Identities of contexts, for [`ResidentPoints::context`].
static NEXT_CONTEXT: AtomicU64 = AtomicU64::new(1);

/// An adapter, its device and the compiled MSM pipelines.
pub struct GpuContext {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) runtime_checks: bool,
    pub(crate) arithmetic: Arithmetic,
    /// Compiled in [`GpuContext::new`] once the configuration is known to fit.
    pipelines: std::sync::OnceLock<Pipelines>,
    timestamps: bool,
    pipeline_creation: Duration,
    pool: Arc<Pool>,
    /// This context's identity (resident sets remember where they were loaded).
    id: u64,
    /// Set by wgpu's device-lost callback (a driver reset, a removed GPU, `destroy`).
    lost: Arc<AtomicBool>,
    /// Test hook: the next submission also makes an invalid buffer (a validation error).
    invalid_next: AtomicBool,
    /// What the adapter offers (its largest device-local heap, else its largest buffer).
    adapter_memory: u64,
    next_points_id: AtomicU64,
    /// Read-backs mapped so far: the GPU's progress, which tells a busy queue from a hung one.
    progress: Arc<AtomicU64>,
}

/// Bases converted to the shaders' form and kept on the device (a resident set). The
/// buffer is destroyed, and its memory freed, when this is dropped.
pub struct ResidentPoints {
    buffer: wgpu::Buffer,
    id: u64,
    /// The [`GpuContext`] that holds the buffer.
    context: u64,
    len: usize,
    /// The set's bytes, counted against the engine's memory budget while it lives.
    _charge: ResidentCharge,
}

impl ResidentPoints {
    /// Number of points.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held on the device.
    pub fn bytes(&self) -> u64 {
        self.buffer.size()
    }
}

impl Drop for ResidentPoints {
    fn drop(&mut self) {
        self.buffer.destroy();
    }
}

/// Where a call's points come from.
pub(crate) enum Points<'a> {
    /// Bases on the host, uploaded and converted by this call.
    Host(&'a [G1Affine]),
    /// The first `n` points of a resident set.
    Resident(&'a ResidentPoints, usize),
}

impl Points<'_> {
    fn len(&self) -> usize {
        match self {
            Points::Host(b) => b.len(),
            Points::Resident(_, n) => *n,
        }
    }
}

/// One MSM's GPU work: its points, the SRE merged points appended to them (indices from
/// the points' length on), and how its entries reach the buckets.
pub(crate) struct Job<'a> {
    pub points: Points<'a>,
    pub merged: &'a [G1Affine],
    pub plan: JobPlan<'a>,
}

/// How a job's bucket entries are made.
#[derive(Clone, Copy)]
pub(crate) enum JobPlan<'a> {
    /// By the host (`src/digits.rs`): chunked bucket lists, merged in levels.
    Host(&'a BucketPlan),
    /// On the GPU from the scalars as they are: decomposition, bucket sort, balanced
    /// accumulation (`shaders/sort.wgsl`, `scan.wgsl`, `balanced.wgsl`).
    Gpu {
        /// The scalars, one per point.
        scalars: &'a [Fr],
        /// Window size c (every scalar bit is covered: `num_windows(c)` windows).
        window_bits: u32,
    },
}

/// Which phase a pass belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Convert,
    Sort,
    Accumulate,
    Reduce,
}

/// The level plans of a job on the GPU bucket sort.
struct SortLayout {
    scan: Vec<LevelParams>,
    carry: Vec<LevelParams>,
    /// Byte offset of the entry count (the last offset) in the scan buffer.
    entry_count_at: u64,
}

/// Sizes and parameters of one job ([`GpuContext::layout`]).
struct JobLayout {
    merge: MergePlan,
    sort: Option<SortLayout>,
    params: Params,
    /// The first point uploaded by the call (0 for one-shot bases, n for the SRE merged
    /// points after resident ones), if the call uploads any: they live in the workspace's
    /// points buffer, and the convert stage checks (and converts) them from there.
    convert_from: Option<usize>,
    /// Bytes of each scratch slot.
    sizes: Vec<(Slot, u64)>,
    sum_bytes: u64,
}

impl JobLayout {
    /// Bytes read back: the window sums, then one word for the entry count of the GPU bucket
    /// sort ([`READ_ENTRIES_AT`]) and the call's status words ([`READ_STATUS_AT`]).
    fn read_bytes(&self) -> u64 {
        self.sum_bytes + READ_STATUS_AT + 4 * STATUS_WORDS as u64
    }
}

/// Where the read-back holds the GPU bucket sort's entry count, after the window sums.
const READ_ENTRIES_AT: u64 = 0;

/// Where the read-back holds the call's status words (`gpu::contract`), after the window
/// sums.
const READ_STATUS_AT: u64 = 4;

/// One compute pass: its phase, pipeline, bind group and dispatch size.
struct Pass {
    phase: Phase,
    pipeline: wgpu::ComputePipeline,
    group: wgpu::BindGroup,
    dims: (u32, u32),
}

impl Pass {
    fn new(
        phase: Phase,
        pipeline: &wgpu::ComputePipeline,
        group: wgpu::BindGroup,
        dims: (u32, u32),
    ) -> Self {
        Self {
            phase,
            pipeline: pipeline.clone(),
            group,
            dims,
        }
    }

    fn record(&self, pass: &mut wgpu::ComputePass) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.group, &[]);
        pass.dispatch_workgroups(self.dims.0, self.dims.1, 1);
    }
}

/// A submitted call: finish it with [`GpuContext::finish`].
pub(crate) struct InFlight {
    ws: Lease,
    submission: wgpu::SubmissionIndex,
    readback: MapReceiver,
    timestamps: Option<MapReceiver>,
    phases: Vec<Phase>,
    sum_bytes: u64,
    read_bytes: u64,
    /// The read-back holds the GPU bucket sort's entry count.
    entries: bool,
    times: GpuTimes,
}

/// What an adapter offers: its largest device-local memory heap where the backend reports
/// one (Vulkan), else the largest buffer it allows.
fn adapter_memory(adapter: &wgpu::Adapter) -> u64 {
    vulkan_device_heap(adapter).unwrap_or(adapter.limits().max_buffer_size)
}

#[cfg(any(
    windows,
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd"
))]
fn vulkan_device_heap(adapter: &wgpu::Adapter) -> Option<u64> {
    /// `VK_MEMORY_HEAP_DEVICE_LOCAL_BIT`.
    const DEVICE_LOCAL: u32 = 1;
    // SAFETY: the raw handles are only read (one query of memory properties), and the
    // adapter outlives the guard.
    unsafe {
        let hal = adapter.as_hal::<wgpu::hal::api::Vulkan>()?;
        let props = hal
            .shared_instance()
            .raw_instance()
            .get_physical_device_memory_properties(hal.raw_physical_device());
        props.memory_heaps[..props.memory_heap_count as usize]
            .iter()
            .filter(|h| h.flags.as_raw() & DEVICE_LOCAL != 0)
            .map(|h| h.size)
            .max()
    }
}

#[cfg(not(any(
    windows,
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd"
)))]
fn vulkan_device_heap(_adapter: &wgpu::Adapter) -> Option<u64> {
    None
}

fn pick_adapter(config: &MsmConfig) -> Result<wgpu::Adapter> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::PRIMARY,
        ..wgpu::InstanceDescriptor::new_without_display_handle_from_env()
    });
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::PRIMARY));
    let seen: Vec<String> = adapters
        .iter()
        .map(|a| {
            let i = a.get_info();
            format!("{} ({:?})", i.name, i.backend)
        })
        .collect();
    if let Some(filter) = config.adapter_filter() {
        let want = filter.to_lowercase();
        return adapters
            .into_iter()
            .find(|a| a.get_info().name.to_lowercase().contains(&want))
            .ok_or_else(|| MsmError::NoAdapter {
                detail: format!("no adapter name contains {filter:?}; seen: {seen:?}"),
            });
    }
    let power_preference = match config.adapter.power_preference {
        PowerPreference::HighPerformance => wgpu::PowerPreference::HighPerformance,
        PowerPreference::LowPower => wgpu::PowerPreference::LowPower,
    };
    pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference,
        force_fallback_adapter: false,
        compatible_surface: None,
        apply_limit_buckets: false,
    }))
    .map_err(|e| MsmError::NoAdapter {
        detail: format!("{e}; seen: {seen:?}"),
    })
}

/// Waits for a popped error scope and turns a captured error into `MsmError::Gpu`.
fn check_scope(scope: wgpu::ErrorScopeGuard, what: &str) -> Result<()> {
    match pollster::block_on(scope.pop()) {
        None => Ok(()),
        Some(e) => Err(MsmError::Gpu(format!("{what}: {e}"))),
    }
}

/// Runs `f` inside validation and out-of-memory error scopes, and returns the first error
/// they caught (scopes are popped before returning, so calls may interleave).
fn scoped<T>(device: &wgpu::Device, what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let val = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let out = f();
    check_scope(oom, &format!("{what}: out of GPU memory"))?;
    check_scope(val, &format!("{what}: validation"))?;
    out
}

fn align(x: u64) -> u64 {
    x.div_ceil(SECTION_ALIGN) * SECTION_ALIGN
}

impl Arithmetic {
    /// Bytes of `points` stored bases.
    fn point_bytes(self, points: usize) -> u64 {
        (points * self.affine_words() * 4) as u64
    }

    /// Bytes of `items` projective sums.
    fn sums_bytes(self, items: u64) -> u64 {
        items * self.point_words() as u64 * 4
    }
}

/// The uploads of a job on the GPU bucket sort, besides its parameters and points: the
/// level parameters and the scalars.
fn sort_uploads(levels: usize, scalars: usize) -> [(Slot, u64); 2] {
    [
        (Slot::LevelParams, levels as u64 * SECTION_ALIGN),
        (Slot::Scalars, scalars as u64 * 32),
    ]
}

/// Places `sections` (slot, bytes) back to back in the staging buffer, each aligned; empty
/// ones are left out. Returns (slot, offset, bytes) of each and the total.
fn staging_sections(sections: Vec<(Slot, u64)>) -> (Vec<(Slot, u64, u64)>, u64) {
    let mut at = 0;
    let mut out = Vec::new();
    for (slot, bytes) in sections {
        if bytes > 0 {
            out.push((slot, at, bytes));
            at += align(bytes);
        }
    }
    (out, at)
}

/// The upload of one call, laid out in sections of the staging buffer.
struct Uploads<'a> {
    params: Params,
    merge: &'a MergePlan,
    /// The host's bucket lists, or (GPU bucket sort) the scalars.
    plan: JobPlan<'a>,
    /// The GPU bucket sort's level parameters (scan levels, then carry levels).
    levels: Vec<LevelParams>,
    /// Host points in arkworks' form (one-shot bases and merged points).
    points: Vec<&'a [G1Affine]>,
    /// The profile, for the stored bases' layout.
    arithmetic: Arithmetic,
}

impl Uploads<'_> {
    /// (slot, offset in staging, bytes) of every section; the total size last.
    fn layout(&self) -> (Vec<(Slot, u64, u64)>, u64) {
        let points: usize = self.points.iter().map(|p| p.len()).sum();
        let mut sections = vec![(Slot::Params, std::mem::size_of::<Params>() as u64)];
        match self.plan {
            JobPlan::Host(plan) => sections.extend([
                (Slot::MergeParams, MAX_MERGE_LEVELS as u64 * SECTION_ALIGN),
                (Slot::ChunkOffsets, plan.chunk_offsets.len() as u64 * 4),
                (Slot::Entries, plan.entries.len() as u64 * 4),
                (Slot::MergeGroups, self.merge.groups.len() as u64 * 4),
            ]),
            JobPlan::Gpu { scalars, .. } => {
                sections.extend(sort_uploads(self.levels.len(), scalars.len()))
            }
        }
        sections.push((Slot::Points, self.arithmetic.point_bytes(points)));
        staging_sections(sections)
    }

    /// Writes the scalars, as arkworks keeps them (Montgomery form, little-endian words),
    /// straight into the mapped staging buffer.
    fn write_scalars(&self, out: wgpu::WriteOnly<'_, [u8]>) {
        let JobPlan::Gpu { scalars, .. } = self.plan else {
            unreachable!("scalars are uploaded for the GPU bucket sort only")
        };
        let (chunks, _) = out.into_chunks::<32>();
        chunks.write_iter(scalars.iter().map(|s| {
            let mut b = [0u8; 32];
            for (o, l) in b.chunks_exact_mut(8).zip(s.0 .0) {
                o.copy_from_slice(&l.to_le_bytes());
            }
            b
        }));
    }

    /// Writes section `slot` into `out` (its bytes).
    fn write(&self, slot: Slot, out: &mut [u8]) {
        match slot {
            Slot::Params => out.copy_from_slice(bytemuck::bytes_of(&self.params)),
            Slot::MergeParams => {
                out.fill(0);
                for (i, lv) in self.merge.levels.iter().enumerate() {
                    let p = MergeParams {
                        num_groups: lv.num_groups,
                        num_inputs: lv.num_inputs,
                        group_base: lv.group_base,
                        ..Default::default()
                    };
                    let at = i * SECTION_ALIGN as usize;
                    out[at..at + 16].copy_from_slice(bytemuck::bytes_of(&p));
                }
            }
            Slot::LevelParams => {
                out.fill(0);
                for (i, lv) in self.levels.iter().enumerate() {
                    let at = i * SECTION_ALIGN as usize;
                    let bytes = bytemuck::bytes_of(lv);
                    out[at..at + bytes.len()].copy_from_slice(bytes);
                }
            }
            Slot::Scalars => unreachable!("written by write_scalars"),
            Slot::ChunkOffsets | Slot::Entries => {
                let JobPlan::Host(plan) = self.plan else {
                    unreachable!("bucket lists are uploaded for the host plan only")
                };
                let words = match slot {
                    Slot::ChunkOffsets => &plan.chunk_offsets,
                    _ => &plan.entries,
                };
                out.copy_from_slice(bytemuck::cast_slice(words))
            }
            Slot::MergeGroups => out.copy_from_slice(bytemuck::cast_slice(&self.merge.groups)),
            Slot::Points => {
                let words: &mut [u32] = bytemuck::cast_slice_mut(out);
                let pts = self
                    .points
                    .iter()
                    .flat_map(|p| p.iter())
                    .collect::<Vec<_>>();
                pack_affine(pts.par_iter().copied(), self.arithmetic, words);
            }
            _ => unreachable!("not an upload slot"),
        }
    }
}

impl GpuContext {
    /// Picks the adapter, creates the device and compiles every stage.
    ///
    /// `fits` runs on the context before the pipelines are compiled (the slow part: seconds
    /// on a software adapter), so that a configuration that cannot work is refused at once:
    /// it may use everything but the pipelines (limits, layouts, the budget).
    pub fn new(config: &MsmConfig, fits: impl FnOnce(&Self) -> Result<()>) -> Result<Self> {
        let adapter = pick_adapter(config)?;
        let info = adapter.get_info();
        let timestamps = adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY)
            && std::env::var(crate::config::TIMING_ENV)
                .map(|v| v != "wallclock")
                .unwrap_or(true);
        let int64 = adapter.features().contains(wgpu::Features::SHADER_INT64);
        let binding = adapter.limits().max_storage_buffer_binding_size;
        let arithmetic = match config.arithmetic {
            Some(a) if !adapter.features().contains(a.features()) => {
                return Err(MsmError::InvalidConfig(format!(
                    "{a:?} arithmetic needs {:?}, which {} lacks",
                    a.features(),
                    info.name
                )))
            }
            Some(a) => a,
            None => Arithmetic::auto(int64, binding),
        };
        let adapter_memory = adapter_memory(&adapter);
        let budget = match config.memory_budget {
            MemoryBudget::Fraction(f) => (adapter_memory as f64 * f) as u64,
            MemoryBudget::Bytes(b) => b,
        };
        let mut required_features = arithmetic.features();
        if timestamps {
            required_features |= wgpu::Features::TIMESTAMP_QUERY;
        }
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("gpu-msm"),
            required_features,
            required_limits: adapter.limits(),
            ..Default::default()
        }))
        .map_err(|e| MsmError::DeviceRequest(e.to_string()))?;
        // Errors are captured by error scopes around every operation; anything that escapes
        // them (none should) is reported here instead of aborting the process.
        device.on_uncaptured_error(std::sync::Arc::new(|e| {
            eprintln!("gpu-msm: uncaptured wgpu error: {e}");
        }));
        let lost = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&lost);
        device.set_device_lost_callback(move |reason, message| {
            tracing::warn!(target: "gpu_msm", ?reason, %message, "device lost");
            flag.store(true, Ordering::Release);
        });

        let mut ctx = Self {
            device,
            queue,
            info,
            runtime_checks: config.shader_runtime_checks,
            arithmetic,
            pipelines: std::sync::OnceLock::new(),
            timestamps,
            pipeline_creation: Duration::ZERO,
            pool: Pool::new(budget),
            id: NEXT_CONTEXT.fetch_add(1, Ordering::Relaxed),
            lost,
            invalid_next: AtomicBool::new(false),
            adapter_memory,
            next_points_id: AtomicU64::new(WORKSPACE_POINTS + 1),
            progress: Arc::default(),
        };
        fits(&ctx)?;
        let start = Instant::now();
        let pipelines = ctx.compile()?;
        ctx.pipeline_creation = start.elapsed();
        let _ = ctx.pipelines.set(pipelines);
        Ok(ctx)
    }

    /// Compiles every stage's pipeline.
    fn compile(&self) -> Result<Pipelines> {
        let (device, arithmetic, checks) = (&self.device, self.arithmetic, self.runtime_checks);
        scoped(device, "pipeline creation", || {
            let make = |stage, entry| create_pipeline(device, arithmetic, stage, entry, checks);
            let reduce = [REDUCE_WGSL, arithmetic.reduce_segments_wgsl()].join("\n");
            // The stages that read the stored bases share their binding and readers.
            let reading_bases = |stage: &str| [BASES_WGSL, stage].join("\n");
            let sort_src = reading_bases(SORT_WGSL);
            let balanced_src = reading_bases(BALANCED_WGSL);
            Ok(Pipelines {
                convert: make(&arithmetic.convert_wgsl(), "convert"),
                init_buckets: make(&balanced_src, "init_buckets"),
                count_digits: make(&sort_src, "count_digits"),
                scan_blocks: make(SCAN_WGSL, "scan_blocks"),
                scan_add: make(SCAN_WGSL, "scan_add"),
                scatter_digits: make(&sort_src, "scatter_digits"),
                accumulate_balanced: make(&balanced_src, "accumulate_balanced"),
                carry_level: make(&balanced_src, "carry_level"),
                accumulate: make(&reading_bases(ACCUMULATE_WGSL), "accumulate"),
                merge: make(MERGE_WGSL, "merge"),
                reduce_segments: make(&reduce, "reduce_segments"),
                reduce_windows: make(&reduce, "reduce_windows"),
            })
        })
    }

    fn pipelines(&self) -> &Pipelines {
        self.pipelines.get().expect("compiled by GpuContext::new")
    }

    /// Whether the device was lost (every later operation on it fails).
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// Drops the device, as a driver reset would lose it (a test hook, and what a call does
    /// to a device that did not finish in time). It counts as lost at once, before wgpu's
    /// callback says so, so that every error it causes from now on is read as the loss.
    pub(crate) fn lose(&self) {
        self.lost.store(true, Ordering::Release);
        self.device.destroy();
        // wgpu reports the loss at the next poll.
        let _ = self.device.poll(wgpu::PollType::Poll);
    }

    /// Test hook: the next call's submission also asks for a buffer that cannot exist
    /// (mapped for reading and writing at once), a validation error its error scope must
    /// catch.
    pub(crate) fn inject_validation_error(&self) {
        self.invalid_next.store(true, Ordering::Release);
    }

    /// Whether `r` lives on this context's device.
    pub(crate) fn holds(&self, r: &ResidentPoints) -> bool {
        r.context == self.id
    }

    /// Adapter name.
    pub fn adapter_name(&self) -> &str {
        &self.info.name
    }

    /// Whether the adapter is a software rasterizer (lavapipe, llvmpipe, WARP).
    pub fn is_software(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// Time spent creating the compute pipelines.
    pub fn pipeline_creation_time(&self) -> Duration {
        self.pipeline_creation
    }

    /// How GPU phases are timed on this adapter.
    pub fn timing(&self) -> GpuTiming {
        if self.timestamps {
            GpuTiming::Timestamps
        } else {
            GpuTiming::WallClock
        }
    }

    /// Idle pooled workspaces (for tests and reports).
    pub fn idle_workspaces(&self) -> usize {
        self.pool.idle()
    }

    /// The memory budget and what is counted against it now.
    pub fn memory_usage(&self) -> MemoryUsage {
        self.pool.usage()
    }

    /// Bytes of memory the adapter offers (its largest device-local heap, else its largest
    /// buffer): what [`MemoryBudget::Fraction`] is a share of.
    pub fn adapter_memory(&self) -> u64 {
        self.adapter_memory
    }

    fn check_sizes(&self, sizes: &[(&str, u64)], threads: &[(&str, u64)]) -> Result<()> {
        let limits = self.device.limits();
        for (name, bytes) in sizes {
            if *bytes > limits.max_storage_buffer_binding_size || *bytes > limits.max_buffer_size {
                return Err(MsmError::InputTooLarge(format!(
                    "{name} needs {bytes} bytes; this adapter binds at most {} (buffer {})",
                    limits.max_storage_buffer_binding_size, limits.max_buffer_size
                )));
            }
        }
        let max = limits.max_compute_workgroups_per_dimension as u64;
        for (name, t) in threads {
            let g = t.div_ceil(WORKGROUP_SIZE as u64);
            if g > max * max {
                return Err(MsmError::InputTooLarge(format!(
                    "{name} needs {g} workgroups; at most {max} x {max}"
                )));
            }
        }
        Ok(())
    }

    /// Most points one call can take at window size c: every buffer that grows with n
    /// (stored bases, scalars, entries and their buckets, carry items) within the adapter's
    /// storage-binding and buffer limits.
    pub(crate) fn max_points(&self, c: u32) -> usize {
        let limits = self.device.limits();
        let bind = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        let a = self.arithmetic;
        let w = crate::digits::num_windows(c) as u64;
        let per_point = [
            a.affine_words() as u64 * 4,
            32,
            4 * w,
            // Carry items: two sums per accumulation thread, a thread per ACCUMULATE_SLICE.
            (2 * a.point_words() as u64 * 4 * w).div_ceil(sort::ACCUMULATE_SLICE as u64),
        ]
        .into_iter()
        .max()
        .expect("non-empty");
        ((bind / per_point) as usize)
            .min(crate::digits::SIGN_BIT as usize - 1)
            .max(1)
    }

    /// Device bytes an n-point call on the GPU bucket sort holds in a fresh workspace at
    /// window size c (points uploaded by the call if `host`): what it reserves against the
    /// memory budget.
    pub(crate) fn call_bytes(&self, n: usize, host: bool, c: u32) -> Result<u64> {
        let lay = self.sort_layout(n, host, c)?;
        let levels = lay
            .sort
            .as_ref()
            .map_or(0, |s| s.scan.len() + s.carry.len());
        let mut sections = vec![(Slot::Params, std::mem::size_of::<Params>() as u64)];
        sections.extend(sort_uploads(levels, n));
        if host {
            sections.push((Slot::Points, self.arithmetic.point_bytes(n)));
        }
        let (sections, staging) = staging_sections(sections);
        Ok(Workspace::default().footprint_with(&self.needs(&sections, staging, &lay)))
    }

    /// Whether an n-point call at window size c fits the adapter's limits and the whole
    /// memory budget, whatever else is held now: whether the configuration can run it at all.
    pub(crate) fn fits_budget(&self, n: usize, host: bool, c: u32) -> bool {
        let budget = self.pool.usage().budget;
        n <= self.max_points(c) && self.call_bytes(n, host, c).is_ok_and(|b| b <= budget)
    }

    /// Whether an n-point call on the GPU bucket sort at window size c fits the adapter's
    /// limits, and the memory budget beside the resident bases and `reserve` more bytes
    /// (waiting, if it must, for other calls).
    pub(crate) fn fits_call(&self, n: usize, host: bool, c: u32, reserve: u64) -> bool {
        let u = self.pool.usage();
        let room = u.budget.saturating_sub(u.resident.saturating_add(reserve));
        n <= self.max_points(c) && self.call_bytes(n, host, c).is_ok_and(|b| b <= room)
    }

    /// Bytes `n` bases take on the device, stored.
    pub(crate) fn resident_bytes(&self, n: usize) -> u64 {
        self.arithmetic.point_bytes(n).max(SECTION_ALIGN)
    }

    fn dispatch_dims(&self, threads: u64) -> (u32, u32) {
        let groups = threads.div_ceil(WORKGROUP_SIZE as u64).max(1);
        let max = self.device.limits().max_compute_workgroups_per_dimension as u64;
        if groups <= max {
            (groups as u32, 1)
        } else {
            (max as u32, groups.div_ceil(max) as u32)
        }
    }

    fn bind(
        &self,
        pipeline: &wgpu::ComputePipeline,
        entries: &[(u32, wgpu::BindingResource)],
    ) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> = entries
            .iter()
            .map(|(i, r)| wgpu::BindGroupEntry {
                binding: *i,
                resource: r.clone(),
            })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        })
    }

    /// Uploads `bases` and converts them on the device, once: the resident set that calls on
    /// a [`crate::Bases`] handle use. Identity bases are stored as zeros (never placed). The
    /// caller has checked the bases on the host (the convert stage's own check, whose status
    /// this does not read, repeats it). Each wait lasts at most `timeout`.
    pub fn load_points(&self, bases: &[G1Affine], timeout: Duration) -> Result<ResidentPoints> {
        let a = self.arithmetic;
        let bytes = self.resident_bytes(bases.len());
        let threads = a.convert_threads(bases.len() as u64);
        self.check_sizes(&[("bases", bytes)], &[("convert", threads)])?;
        let charge = self.pool.charge_resident(bytes, timeout)?;
        scoped(&self.device, "loading bases", || {
            let mut words = vec![0u32; bytes as usize / 4];
            pack_affine(bases.par_iter(), a, &mut words);
            let buffer = self
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("resident bases"),
                    contents: bytemuck::cast_slice(&words),
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                });
            let params = Params {
                num_points: bases.len() as u32,
                ..Default::default()
            };
            let params_buf = self
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("load params"),
                    contents: bytemuck::bytes_of(&params),
                    usage: wgpu::BufferUsages::UNIFORM,
                });
            let mut encoder = self.device.create_command_encoder(&Default::default());
            if self.arithmetic.converts_bases() {
                let status = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("load status"),
                    size: pool::MIN_CLASS_BYTES,
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                });
                let p = &self.pipelines().convert;
                let group = self.bind(
                    p,
                    &[
                        (0, buffer.as_entire_binding()),
                        (1, params_buf.as_entire_binding()),
                        (2, status.as_entire_binding()),
                    ],
                );
                let mut pass = encoder.begin_compute_pass(&Default::default());
                pass.set_pipeline(p);
                pass.set_bind_group(0, &group, &[]);
                let (x, y) = self.dispatch_dims(threads);
                pass.dispatch_workgroups(x, y, 1);
            }
            let index = self.queue.submit([encoder.finish()]);
            self.wait_for(index, timeout)?;
            Ok(ResidentPoints {
                buffer,
                id: self.next_points_id.fetch_add(1, Ordering::Relaxed),
                context: self.id,
                len: bases.len(),
                _charge: charge,
            })
        })
    }

    /// Sizes and parameters of a job, checked against the adapter's limits.
    fn layout(&self, job: &Job) -> Result<JobLayout> {
        match job.plan {
            JobPlan::Host(plan) => self.host_layout(job, plan),
            JobPlan::Gpu { window_bits, .. } => {
                debug_assert!(job.merged.is_empty(), "SRE plans on the host");
                let host = matches!(job.points, Points::Host(_));
                self.sort_layout(job.points.len(), host, window_bits)
            }
        }
    }

    fn host_layout(&self, job: &Job, plan: &BucketPlan) -> Result<JobLayout> {
        let n = job.points.len();
        let total_points = n + job.merged.len();
        let merge = MergePlan::new(&plan.bucket_chunks, MERGE_FANIN);
        if merge.levels.len() > MAX_MERGE_LEVELS {
            return Err(MsmError::InputTooLarge(format!(
                "{} merge levels; at most {MAX_MERGE_LEVELS}",
                merge.levels.len()
            )));
        }
        let convert_from = match job.points {
            Points::Host(_) => Some(0),
            Points::Resident(..) if !job.merged.is_empty() => Some(n),
            Points::Resident(..) => None,
        };
        let params = Params::new(convert_from.unwrap_or(0) as u32, total_points as u32, plan);
        let tmp_items = merge
            .levels
            .iter()
            .take(merge.levels.len() - 1)
            .map(|l| l.num_groups as u64)
            .chain([params.num_chunks as u64])
            .max()
            .unwrap_or(0);
        let a = self.arithmetic;
        let sum_bytes = a.sums_bytes(params.num_windows as u64);
        let sizes = vec![
            (Slot::Points, a.point_bytes(total_points)),
            (Slot::ChunkSums, a.sums_bytes(tmp_items)),
            (Slot::MergeTmp, a.sums_bytes(tmp_items)),
            (Slot::Buckets, a.sums_bytes(params.total_buckets as u64)),
            (Slot::Partials, a.sums_bytes(params.total_segments as u64)),
            (Slot::Sums, sum_bytes),
            (
                Slot::Readback,
                sum_bytes + READ_STATUS_AT + 4 * STATUS_WORDS as u64,
            ),
            (Slot::Status, 4 * STATUS_WORDS as u64),
            // Bound by the reduction, which reads it only on the GPU bucket sort.
            (Slot::Scan, 4),
        ];
        self.check_sizes(
            &[
                ("bases", sizes[0].1),
                ("entries", plan.entries.len() as u64 * 4),
                ("chunk sums", sizes[1].1),
                ("buckets", sizes[3].1),
                ("partials", sizes[4].1),
            ],
            &[
                ("convert", a.convert_threads(total_points as u64)),
                ("accumulate", params.num_chunks as u64),
                ("merge", tmp_items.max(params.total_buckets as u64)),
            ],
        )?;
        Ok(JobLayout {
            merge,
            sort: None,
            params,
            convert_from,
            sizes,
            sum_bytes,
        })
    }

    /// The layout of a job on the GPU bucket sort: every size from n and c alone.
    /// The layout of n points (uploaded by the call if `host`) on the GPU bucket sort.
    fn sort_layout(&self, n: usize, host: bool, c: u32) -> Result<JobLayout> {
        let windows = crate::digits::num_windows(c);
        let slices = sort::accumulation_threads(n, windows);
        let params = Params {
            num_slices: slices,
            skip_empty_windows: 1,
            ..Params::for_windows(0, n as u32, c, windows)
        };
        let buckets = params.total_buckets as u64;
        let (scan, scan_len) = sort::scan_levels(params.total_buckets + 1);
        let carry = sort::carry_levels(slices);
        if scan.len() > sort::MAX_SCAN_LEVELS || carry.len() > sort::MAX_CARRY_LEVELS {
            return Err(MsmError::InputTooLarge(format!(
                "{} scan and {} carry levels",
                scan.len(),
                carry.len()
            )));
        }
        let a = self.arithmetic;
        let sum_bytes = a.sums_bytes(windows as u64);
        let max_entries = n as u64 * windows as u64;
        let items = a.sums_bytes(2 * slices as u64);
        let sizes = vec![
            (Slot::Points, a.point_bytes(n)),
            (Slot::Scan, scan_len as u64 * 4),
            (Slot::Counters, buckets * 4),
            (Slot::Entries, max_entries * 4),
            (Slot::EntryBuckets, max_entries * 4),
            (Slot::ItemKeysA, slices as u64 * 8),
            (Slot::ItemSumsA, items),
            (Slot::ItemKeysB, slices as u64 * 8),
            (Slot::ItemSumsB, items),
            (Slot::Buckets, a.sums_bytes(buckets)),
            (Slot::Partials, a.sums_bytes(params.total_segments as u64)),
            (Slot::Sums, sum_bytes),
            (
                Slot::Readback,
                sum_bytes + READ_STATUS_AT + 4 * STATUS_WORDS as u64,
            ),
            (Slot::Status, 4 * STATUS_WORDS as u64),
        ];
        let checked: Vec<(&str, u64)> = sizes
            .iter()
            .map(|&(s, b)| (slot_name(s), b))
            .chain([("scalars", n as u64 * 32)])
            .collect();
        self.check_sizes(
            &checked,
            &[
                ("convert", a.convert_threads(n as u64)),
                ("decompose", n as u64),
                ("init", buckets),
                ("accumulate", slices as u64),
            ],
        )?;
        let convert_from = host.then_some(0);
        Ok(JobLayout {
            merge: MergePlan::default(),
            sort: Some(SortLayout {
                scan,
                carry,
                entry_count_at: buckets * 4,
            }),
            params,
            convert_from,
            sizes,
            sum_bytes,
        })
    }

    /// Every buffer a job needs, and its bytes (the staging buffer first): what the call
    /// reserves against the memory budget and what [`GpuContext::stage`] makes.
    fn needs(
        &self,
        sections: &[(Slot, u64, u64)],
        staging_bytes: u64,
        lay: &JobLayout,
    ) -> Vec<(Slot, u64)> {
        let mut needs = vec![(Slot::Staging, staging_bytes.max(SECTION_ALIGN))];
        needs.extend(
            sections
                .iter()
                .filter(|&&(slot, ..)| slot != Slot::Points)
                .map(|&(slot, _, bytes)| (slot, bytes)),
        );
        needs.extend(
            lay.sizes
                .iter()
                .filter(|&&(slot, _)| slot != Slot::Points || lay.convert_from.is_some()),
        );
        needs.push((Slot::Params, SECTION_ALIGN));
        needs.push((Slot::MergeParams, MAX_MERGE_LEVELS as u64 * SECTION_ALIGN));
        if self.timestamps {
            needs.push((Slot::TimestampResolve, 8 * TIMESTAMP_QUERIES as u64));
            needs.push((Slot::TimestampRead, 8 * TIMESTAMP_QUERIES as u64));
        }
        needs
    }

    /// Writes a job's uploads into the workspace's staging buffer and makes every buffer
    /// of `needs` large enough (the allocation half of the pool).
    fn stage(
        &self,
        ws: &mut Workspace,
        uploads: &Uploads,
        sections: &[(Slot, u64, u64)],
        needs: &[(Slot, u64)],
    ) -> Result<()> {
        let dev = &self.device;
        let (staging_slot, staging_bytes) = needs[0];
        debug_assert_eq!(staging_slot, Slot::Staging);
        ws.ensure(dev, Slot::Staging, staging_bytes);
        if !ws.staging_mapped() {
            // A pooled workspace's last call finished, so its staging buffer's re-map only
            // waits for a poll to run its callback: poll without waiting for other calls.
            let _ = self.device.poll(wgpu::PollType::Poll);
            if !ws.staging_mapped() {
                // The re-map's callback runs in whichever thread polls: with calls on other
                // threads it can still be pending in another thread's poll (or have failed)
                // when this poll returns. A new mapped buffer of the same size does not wait.
                ws.fresh_staging(dev);
            }
        }
        let staging = ws.get(Slot::Staging);
        {
            let mut view = staging
                .get_mapped_range_mut(..staging_bytes)
                .map_err(|e| MsmError::Gpu(format!("staging: {e}")))?;
            for &(slot, at, bytes) in sections {
                let range = at as usize..(at + bytes) as usize;
                if slot == Slot::Scalars {
                    // The one section that grows with n on resident bases: streamed into the
                    // mapping once, with no host copy in between.
                    uploads.write_scalars(view.slice(range));
                } else {
                    let mut host = vec![0u8; bytes as usize];
                    uploads.write(slot, &mut host);
                    view.slice(range).copy_from_slice(&host);
                }
            }
        }
        staging.unmap();
        for &(slot, bytes) in &needs[1..] {
            ws.ensure(dev, slot, bytes);
        }
        if self.timestamps && ws.queries.is_none() {
            ws.queries = Some(dev.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("stage timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: TIMESTAMP_QUERIES,
            }));
        }
        Ok(())
    }

    /// Copies from the staging buffer (and, for SRE on resident bases, the resident points)
    /// into the workspace's buffers.
    fn encode_copies(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        ws: &Workspace,
        sections: &[(Slot, u64, u64)],
        job: &Job,
        lay: &JobLayout,
    ) {
        let n = job.points.len();
        let staging = ws.get(Slot::Staging);
        for &(slot, at, bytes) in sections {
            let dst_at = match (slot, &job.points) {
                (Slot::Points, Points::Resident(..)) => self.arithmetic.point_bytes(n),
                _ => 0,
            };
            encoder.copy_buffer_to_buffer(staging, at, ws.get(slot), dst_at, bytes);
        }
        if lay.sort.is_some() {
            // The bucket counts (scan level 0) and the scatter's cursors start at zero.
            encoder.clear_buffer(ws.get(Slot::Scan), 0, None);
            encoder.clear_buffer(ws.get(Slot::Counters), 0, None);
        }
        // No base has failed the check yet (a call on resident bases reads back zero).
        encoder.clear_buffer(ws.get(Slot::Status), 0, None);
        if let (Points::Resident(r, _), Some(_), true) = (&job.points, lay.convert_from, n > 0) {
            encoder.copy_buffer_to_buffer(
                &r.buffer,
                0,
                ws.get(Slot::Points),
                0,
                self.arithmetic.point_bytes(n),
            );
        }
    }

    /// Uploads a job's data and submits all of its stages in one submission (one per stage
    /// when timing by wall clock), without waiting for the GPU; first waits, if it must, for
    /// room in the memory budget.
    pub(crate) fn submit(&self, job: &Job, timeout: Duration) -> Result<InFlight> {
        Ok(self
            .submit_if(job, true, timeout)?
            .expect("waited for room"))
    }

    /// [`GpuContext::submit`], or `None` (nothing done) when the job would have to wait for
    /// room in the memory budget and `wait` is false. Every wait lasts at most `timeout`
    /// ([`MsmError::Timeout`] past it).
    pub(crate) fn submit_if(
        &self,
        job: &Job,
        wait: bool,
        timeout: Duration,
    ) -> Result<Option<InFlight>> {
        let lay = self.layout(job)?;
        let t = Instant::now();
        let mut points = Vec::new();
        if let Points::Host(b) = job.points {
            points.push(b);
        }
        if lay.convert_from.is_some() {
            points.push(job.merged);
        }
        let levels = lay
            .sort
            .as_ref()
            .map(|s| s.scan.iter().chain(&s.carry).copied().collect())
            .unwrap_or_default();
        let uploads = Uploads {
            params: lay.params,
            merge: &lay.merge,
            plan: job.plan,
            levels,
            points,
            arithmetic: self.arithmetic,
        };
        let (sections, staging_bytes) = uploads.layout();
        let needs = self.needs(&sections, staging_bytes, &lay);
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
            if self.invalid_next.swap(false, Ordering::AcqRel) {
                let _invalid = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("injected fault"),
                    size: 4,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::MAP_WRITE,
                    mapped_at_creation: false,
                });
            }
            let passes = self.passes(&mut ws, job, &lay);
            let copies = |e: &mut wgpu::CommandEncoder, ws: &Workspace| {
                self.encode_copies(e, ws, &sections, job, &lay)
            };
            let tail = |e: &mut wgpu::CommandEncoder, ws: &Workspace| {
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
            };
            let submission = if self.timestamps {
                self.submit_timestamped(&ws, &passes, copies, tail)
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
            Ok(Some(InFlight {
                ws,
                submission,
                readback,
                timestamps,
                phases: passes.iter().map(|p| p.phase).collect(),
                sum_bytes: lay.sum_bytes,
                read_bytes: lay.read_bytes(),
                entries: lay.sort.is_some(),
                times,
            }))
        })
    }

    /// One command buffer: the copies, every pass between timestamp queries, the window
    /// sums and timestamps copied out for reading.
    fn submit_timestamped(
        &self,
        ws: &Workspace,
        passes: &[Pass],
        copies: impl Fn(&mut wgpu::CommandEncoder, &Workspace),
        tail: impl Fn(&mut wgpu::CommandEncoder, &Workspace),
    ) -> wgpu::SubmissionIndex {
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
        self.queue.submit([encoder.finish()])
    }

    /// Without timestamps: the copies, then one submission per pass, each waited for and
    /// timed by the host's clock. Returns the last submission and each pass's time.
    fn submit_wallclock(
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

    /// The GPU bucket sort's passes: buckets to the identity, count, prefix sum, scatter,
    /// balanced accumulation and the carry levels, which leave every bucket sum in place.
    fn sort_passes(
        &self,
        ws: &mut Workspace,
        sort: &SortLayout,
        params: &Params,
        points_id: u64,
        resident: Option<&wgpu::Buffer>,
        out: &mut Vec<Pass>,
    ) {
        let p = self.pipelines();
        fn level(ws: &Workspace, i: usize) -> wgpu::BindingResource<'_> {
            wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: ws.get(Slot::LevelParams),
                offset: i as u64 * SECTION_ALIGN,
                size: wgpu::BufferSize::new(std::mem::size_of::<LevelParams>() as u64),
            })
        }
        let threads = |t: u64| self.dispatch_dims(t);
        let g = ws.group(Group::InitBuckets, WORKSPACE_POINTS, |ws| {
            let b = &p.init_buckets;
            self.bind(
                b,
                &[(4, whole(ws, Slot::Buckets)), (9, whole(ws, Slot::Params))],
            )
        });
        let buckets = params.total_buckets as u64;
        out.push(Pass::new(Phase::Sort, &p.init_buckets, g, threads(buckets)));
        let n = params.num_points as u64;
        let g = ws.group(Group::CountDigits, points_id, |ws| {
            self.bind(
                &p.count_digits,
                &[
                    (0, points_of(ws, resident)),
                    (1, whole(ws, Slot::Scalars)),
                    (2, whole(ws, Slot::Scan)),
                    (6, whole(ws, Slot::Params)),
                ],
            )
        });
        out.push(Pass::new(Phase::Sort, &p.count_digits, g, threads(n)));
        for (i, lv) in sort.scan.iter().enumerate() {
            let g = ws.group(Group::ScanBlocks(i), WORKSPACE_POINTS, |ws| {
                self.bind(
                    &p.scan_blocks,
                    &[(0, whole(ws, Slot::Scan)), (1, level(ws, i))],
                )
            });
            let dims = threads(lv.count_out as u64 * WORKGROUP_SIZE as u64);
            out.push(Pass::new(Phase::Sort, &p.scan_blocks, g, dims));
        }
        for (i, lv) in sort.scan.iter().enumerate().rev().skip(1) {
            let g = ws.group(Group::ScanAdd(i), WORKSPACE_POINTS, |ws| {
                self.bind(
                    &p.scan_add,
                    &[(0, whole(ws, Slot::Scan)), (1, level(ws, i))],
                )
            });
            let dims = threads(lv.count_in as u64);
            out.push(Pass::new(Phase::Sort, &p.scan_add, g, dims));
        }
        let g = ws.group(Group::Scatter, points_id, |ws| {
            self.bind(
                &p.scatter_digits,
                &[
                    (0, points_of(ws, resident)),
                    (1, whole(ws, Slot::Scalars)),
                    (2, whole(ws, Slot::Counters)),
                    (3, whole(ws, Slot::Scan)),
                    (4, whole(ws, Slot::Entries)),
                    (5, whole(ws, Slot::EntryBuckets)),
                    (6, whole(ws, Slot::Params)),
                ],
            )
        });
        out.push(Pass::new(Phase::Sort, &p.scatter_digits, g, threads(n)));
        let g = ws.group(Group::Balanced, points_id, |ws| {
            self.bind(
                &p.accumulate_balanced,
                &[
                    (0, points_of(ws, resident)),
                    (1, whole(ws, Slot::Scan)),
                    (2, whole(ws, Slot::Entries)),
                    (3, whole(ws, Slot::EntryBuckets)),
                    (4, whole(ws, Slot::Buckets)),
                    (7, whole(ws, Slot::ItemKeysA)),
                    (8, whole(ws, Slot::ItemSumsA)),
                    (9, whole(ws, Slot::Params)),
                ],
            )
        });
        let slices = params.num_slices as u64;
        out.push(Pass::new(
            Phase::Accumulate,
            &p.accumulate_balanced,
            g,
            threads(slices),
        ));
        for (i, lv) in sort.carry.iter().enumerate() {
            let (src, dst) = if i % 2 == 0 {
                (
                    (Slot::ItemKeysA, Slot::ItemSumsA),
                    (Slot::ItemKeysB, Slot::ItemSumsB),
                )
            } else {
                (
                    (Slot::ItemKeysB, Slot::ItemSumsB),
                    (Slot::ItemKeysA, Slot::ItemSumsA),
                )
            };
            let at = sort.scan.len() + i;
            let g = ws.group(Group::Carry(i, at), WORKSPACE_POINTS, |ws| {
                self.bind(
                    &p.carry_level,
                    &[
                        (4, whole(ws, Slot::Buckets)),
                        (5, whole(ws, src.0)),
                        (6, whole(ws, src.1)),
                        (7, whole(ws, dst.0)),
                        (8, whole(ws, dst.1)),
                        (9, whole(ws, Slot::Params)),
                        (10, level(ws, at)),
                    ],
                )
            });
            let dims = threads(lv.count_out as u64);
            out.push(Pass::new(Phase::Accumulate, &p.carry_level, g, dims));
        }
    }

    /// The passes of a job, with their bind groups (cached in the workspace).
    fn passes(&self, ws: &mut Workspace, job: &Job, lay: &JobLayout) -> Vec<Pass> {
        let (merge, params) = (&lay.merge, &lay.params);
        // Every call that uploads points runs the convert stage: it checks them.
        let convert = lay.convert_from.is_some();
        let p = self.pipelines();
        let (points_id, resident) = match (&job.points, lay.convert_from) {
            (Points::Resident(r, _), None) => (r.id, Some(&r.buffer)),
            _ => (WORKSPACE_POINTS, None),
        };
        let mut out = Vec::new();
        if convert {
            let g = ws.group(Group::Convert, WORKSPACE_POINTS, |ws| {
                self.bind(
                    &p.convert,
                    &[
                        (0, whole(ws, Slot::Points)),
                        (1, whole(ws, Slot::Params)),
                        (2, whole(ws, Slot::Status)),
                    ],
                )
            });
            let threads = self
                .arithmetic
                .convert_threads((params.num_points - params.first_point) as u64);
            out.push(Pass::new(
                Phase::Convert,
                &p.convert,
                g,
                self.dispatch_dims(threads),
            ));
        }
        if let Some(sort) = &lay.sort {
            self.sort_passes(ws, sort, params, points_id, resident, &mut out);
        } else {
            let g = ws.group(Group::Accumulate, points_id, |ws| {
                let points = points_of(ws, resident);
                self.bind(
                    &p.accumulate,
                    &[
                        (0, points),
                        (1, whole(ws, Slot::ChunkOffsets)),
                        (2, whole(ws, Slot::Entries)),
                        (3, whole(ws, Slot::ChunkSums)),
                        (4, whole(ws, Slot::Params)),
                    ],
                )
            });
            out.push(Pass::new(
                Phase::Accumulate,
                &p.accumulate,
                g,
                self.dispatch_dims(params.num_chunks as u64),
            ));
            let levels = merge.levels.len();
            for (i, lv) in merge.levels.iter().enumerate() {
                let last = i + 1 == levels;
                let g = ws.group(Group::Merge(i, last), WORKSPACE_POINTS, |ws| {
                    let (src, dst) = match (i % 2, last) {
                        (0, true) => (Slot::ChunkSums, Slot::Buckets),
                        (_, true) => (Slot::MergeTmp, Slot::Buckets),
                        (0, false) => (Slot::ChunkSums, Slot::MergeTmp),
                        (_, false) => (Slot::MergeTmp, Slot::ChunkSums),
                    };
                    let mp = wgpu::BufferBinding {
                        buffer: ws.get(Slot::MergeParams),
                        offset: i as u64 * SECTION_ALIGN,
                        size: wgpu::BufferSize::new(std::mem::size_of::<MergeParams>() as u64),
                    };
                    self.bind(
                        &p.merge,
                        &[
                            (0, whole(ws, src)),
                            (1, whole(ws, Slot::MergeGroups)),
                            (2, whole(ws, dst)),
                            (3, wgpu::BindingResource::Buffer(mp)),
                        ],
                    )
                });
                out.push(Pass::new(
                    Phase::Accumulate,
                    &p.merge,
                    g,
                    self.dispatch_dims(lv.num_groups as u64),
                ));
            }
        }
        let g = ws.group(Group::ReduceSegments, WORKSPACE_POINTS, |ws| {
            self.bind(
                &p.reduce_segments,
                &[
                    (0, whole(ws, Slot::Buckets)),
                    (1, whole(ws, Slot::Partials)),
                    (3, whole(ws, Slot::Params)),
                    (4, whole(ws, Slot::Scan)),
                ],
            )
        });
        out.push(Pass::new(
            Phase::Reduce,
            &p.reduce_segments,
            g,
            self.dispatch_dims(params.total_segments as u64),
        ));
        let g = ws.group(Group::ReduceWindows, WORKSPACE_POINTS, |ws| {
            self.bind(
                &p.reduce_windows,
                &[
                    (1, whole(ws, Slot::Partials)),
                    (2, whole(ws, Slot::Sums)),
                    (3, whole(ws, Slot::Params)),
                ],
            )
        });
        out.push(Pass::new(
            Phase::Reduce,
            &p.reduce_windows,
            g,
            (params.num_windows, 1),
        ));
        out
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

    /// The GPU bucket sort of one call, for the tests: runs the whole job and returns the
    /// bucket offsets (W B + 1 of them) and the sorted entries.
    pub(crate) fn bucket_sort(
        &self,
        bases: &[G1Affine],
        scalars: &[Fr],
        c: u32,
    ) -> Result<(Vec<u32>, Vec<u32>)> {
        let job = Job {
            points: Points::Host(bases),
            merged: &[],
            plan: JobPlan::Gpu {
                scalars,
                window_bits: c,
            },
        };
        let timeout = crate::config::DEFAULT_GPU_TIMEOUT;
        let f = self.submit(&job, timeout)?;
        self.wait_for(f.submission.clone(), timeout)?;
        let buckets =
            crate::digits::num_windows(c) as u64 * crate::digits::buckets_per_window(c) as u64;
        let offsets = self.read_words(f.ws.get(Slot::Scan), buckets + 1)?;
        let total = *offsets.last().expect("W B + 1 offsets") as u64;
        let entries = self.read_words(f.ws.get(Slot::Entries), total)?;
        self.finish(f, timeout)?;
        Ok((offsets, entries))
    }

    /// Blocks until all submitted work is done, at most `timeout` ([`GpuContext::wait_for`]).
    pub(crate) fn wait(&self, timeout: Duration) -> Result<()> {
        self.poll_wait(None, timeout)
    }

    /// Blocks until one submission is done, at most `timeout`. Past it the GPU is taken to
    /// be hung: the device is dropped (every later operation on it fails, and the engine's
    /// next call proceeds as `MsmConfig::device_loss` says) and the call gets
    /// [`MsmError::Timeout`].
    fn wait_for(&self, index: wgpu::SubmissionIndex, timeout: Duration) -> Result<()> {
        self.poll_wait(Some(index), timeout)
    }

    ///
    /// A submission waits behind every earlier one on the queue, so the deadline is for the
    /// GPU's progress, not for this call alone: a wait that times out while other calls'
    /// read-backs completed (the GPU is busy, not hung) waits again.
    fn poll_wait(&self, index: Option<wgpu::SubmissionIndex>, timeout: Duration) -> Result<()> {
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
    fn take_mapped(
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
    fn hung_if_late<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(MsmError::Timeout(_)) = &r {
            self.lose();
        }
        r
    }

    /// The stored words of a resident set, as the stages read them (for tests).
    pub(crate) fn read_points(&self, r: &ResidentPoints) -> Result<Vec<u32>> {
        self.read_words(&r.buffer, r.buffer.size() / 4)
    }

    /// The first `words` u32 words of a COPY_SRC buffer, copied out through a mapped one
    /// (for tests; waits for the GPU).
    fn read_words(&self, src: &wgpu::Buffer, words: u64) -> Result<Vec<u32>> {
        scoped(&self.device, "reading a buffer", || {
            let bytes = (words * 4).max(4);
            let read = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("test read"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut encoder = self.device.create_command_encoder(&Default::default());
            encoder.copy_buffer_to_buffer(src, 0, &read, 0, bytes);
            self.queue.submit([encoder.finish()]);
            let bytes = self.read_buffer(&read, crate::config::DEFAULT_GPU_TIMEOUT)?;
            let mut v: Vec<u32> = bytemuck::cast_slice(&bytes).to_vec();
            v.truncate(words as usize);
            Ok(v)
        })
    }
}

/// Hears when a buffer mapping requested by [`request_read`] completes.
type MapReceiver = mpsc::Receiver<std::result::Result<(), wgpu::BufferAsyncError>>;

impl GpuContext {
    /// Asks for the first `bytes` of a MAP_READ buffer to be mapped once the GPU is done
    /// with it; its callback counts as the GPU's progress ([`GpuContext::wait_for`]).
    fn request_read(&self, buffer: &wgpu::Buffer, bytes: u64) -> MapReceiver {
        let (tx, rx) = mpsc::channel();
        let progress = Arc::clone(&self.progress);
        buffer.map_async(wgpu::MapMode::Read, ..bytes, move |r| {
            progress.fetch_add(1, Ordering::AcqRel);
            let _ = tx.send(r);
        });
        rx
    }
}

/// A whole slot's buffer as a binding.
fn whole(ws: &Workspace, s: Slot) -> wgpu::BindingResource<'_> {
    ws.get(s).as_entire_binding()
}

/// The bases a call's stages read: a resident set's buffer, or the workspace's points.
fn points_of<'w>(
    ws: &'w Workspace,
    resident: Option<&'w wgpu::Buffer>,
) -> wgpu::BindingResource<'w> {
    match resident {
        Some(b) => b.as_entire_binding(),
        None => whole(ws, Slot::Points),
    }
}

/// A slot's name in size errors.
fn slot_name(slot: Slot) -> &'static str {
    match slot {
        Slot::Points => "bases",
        Slot::Entries => "entries",
        Slot::EntryBuckets => "entry buckets",
        Slot::Buckets => "buckets",
        Slot::Partials => "partials",
        Slot::ItemSumsA | Slot::ItemSumsB => "carry sums",
        Slot::Scan => "bucket offsets",
        _ => "scratch",
    }
}

/// Packs affine points into `out` in the upload layout, in parallel.
fn pack_affine<'a>(
    points: impl IndexedParallelIterator<Item = &'a G1Affine>,
    arithmetic: Arithmetic,
    out: &mut [u32],
) {
    out.par_chunks_mut(arithmetic.affine_words())
        .zip(points)
        .for_each(|(o, p)| affine_upload_words(p, o));
}

/// Adds each pass's time to its phase.
fn add_stage_times(times: &mut GpuTimes, phases: &[Phase], ns: &[f64]) {
    for (ph, ns) in phases.iter().zip(ns) {
        let d = Duration::from_nanos(*ns as u64);
        match ph {
            Phase::Convert => times.point_conversion += d,
            Phase::Sort => times.bucket_sort += d,
            Phase::Accumulate => times.bucket_accumulation += d,
            Phase::Reduce => times.bucket_reduction += d,
        }
    }
}

/// Compiles one entry point. Unchecked unless `checks`: the stages index fixed-size arrays
/// only over constant in-range loops, and storage buffers only at indices the host bounds
/// (thread guards against the counts in `Params`, point indices < n built by the host).
pub(crate) fn create_pipeline(
    device: &wgpu::Device,
    arithmetic: Arithmetic,
    stage: &str,
    entry: &str,
    checks: bool,
) -> wgpu::ComputePipeline {
    create_pipeline_with(device, arithmetic, stage, entry, checks, &[])
}

/// [`create_pipeline`] with values for the stage's pipeline-overridable constants.
pub(crate) fn create_pipeline_with(
    device: &wgpu::Device,
    arithmetic: Arithmetic,
    stage: &str,
    entry: &str,
    checks: bool,
    constants: &[(&str, f64)],
) -> wgpu::ComputePipeline {
    let source = stage_source(arithmetic, stage);
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some(entry),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    };
    let module = if checks {
        device.create_shader_module(desc)
    } else {
        // SAFETY: see the function comment; every index in these shaders is in range.
        unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
    };
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: None,
        module: &module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants,
            ..Default::default()
        },
        cache: None,
    })
}
