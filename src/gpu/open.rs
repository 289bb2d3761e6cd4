//! A device opened and a context made on it: `OpenDevice` (what the contexts of several
//! curve groups on one device share: its queue, memory pool, poller and submitting thread)
//! and `GpuContext::new`, which compiles the stages after checking the configuration fits.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::{MemoryBudget, MsmConfig};
use crate::curve::CurveSpec;
use crate::error::{MsmError, Result};
use crate::gpu::device::adapters::pick_adapter;
use crate::gpu::device::poller::Poller;
use crate::gpu::device::submitter::Submitter;
use crate::gpu::memory::pool::Pool;
use crate::gpu::memory::workspace::SizeCaps;
use crate::gpu::planning::capacity::base_parts_within;
use crate::gpu::shader::field::Arithmetic;
use crate::gpu::{GpuContext, Loss, WORKSPACE_BASES_ID};

use crate::gpu::device::setup::{adapter_memory, requested_limits};

/// Identities of contexts, for [`StoredBases::context`].
static NEXT_CONTEXT: AtomicU64 = AtomicU64::new(1);

/// One wgpu device and what every context on it shares: the queue, the memory budget and
/// its pool, the loss flag and the GPU's progress. Engines of several curve groups on one
/// device (`GpuMsm::on_device_of`) each compile their own pipelines on it
/// ([`GpuContext::new_on`]).
#[derive(Clone)]
pub(crate) struct OpenDevice {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
    timestamps: bool,
    pool: Arc<Pool>,
    lost: Arc<Loss>,
    progress: Arc<AtomicU64>,
    poller: Arc<Poller>,
    submitter: Arc<Submitter>,
    adapter_memory: u64,
    /// Choosing the adapter and creating the device (zero for a context that joined it).
    device_creation: Duration,
}

impl OpenDevice {
    /// Picks the adapter and creates the device with the memory budget `config` asks for.
    /// It gets every feature of the adapter's that a profile may need (64-bit integers),
    /// and its pipeline cache, so that a context of any profile can join it.
    pub(crate) fn open(config: &MsmConfig) -> Result<Self> {
        let start = Instant::now();
        Self::open_on(pick_adapter(config)?, config, start)
    }

    /// [`OpenDevice::open`] on `adapter` (chosen since `start`).
    pub(crate) fn open_on(
        adapter: wgpu::Adapter,
        config: &MsmConfig,
        start: Instant,
    ) -> Result<Self> {
        let info = adapter.get_info();
        let adapter_key = crate::gpu::device::poller::hung::adapter_key(&info);
        // Not on an adapter where devices taken to be hung are still busy, past a few.
        crate::gpu::device::poller::hung::room_on(&adapter_key)?;
        let timestamps = adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY)
            && std::env::var(crate::config::TIMING_ENV)
                .map(|v| v != "wallclock")
                .unwrap_or(true);
        let limits = requested_limits(config, &adapter, &info.name)?;
        let adapter_memory = adapter_memory(&adapter);
        let budget = match config.memory_budget {
            MemoryBudget::Fraction(f) => (adapter_memory as f64 * f) as u64,
            MemoryBudget::Bytes(b) => b,
        };
        let mut required_features =
            adapter.features() & (Arithmetic::Limbs29.features() | wgpu::Features::PIPELINE_CACHE);
        if timestamps {
            required_features |= wgpu::Features::TIMESTAMP_QUERY;
        }
        let (device, queue) =
            crate::gpu::device::blocking::ready(adapter.request_device(&wgpu::DeviceDescriptor {
                label: Some("gpu-msm"),
                required_features,
                required_limits: limits.clone(),
                ..Default::default()
            }))
            .map_err(|e| MsmError::DeviceRequest(e.to_string()))?;
        // Errors are captured by error scopes around every operation; anything that escapes
        // them (none should) is reported here instead of aborting the process.
        device.on_uncaptured_error(std::sync::Arc::new(|e| {
            eprintln!("gpu-msm: uncaptured wgpu error: {e}");
        }));
        let lost = Arc::new(Loss::default());
        let flag = Arc::clone(&lost);
        device.set_device_lost_callback(move |reason, message| {
            tracing::warn!(target: "gpu_msm", ?reason, %message, "device lost");
            flag.set_lost();
        });
        let progress = Arc::default();
        Ok(Self {
            poller: Poller::new(
                (device.clone(), queue.clone()),
                adapter_key,
                Arc::clone(&progress),
                Arc::clone(&lost),
            ),
            submitter: Arc::default(),
            device,
            queue,
            info,
            pool: Pool::new(budget, SizeCaps::of(&limits)),
            limits,
            timestamps,
            lost,
            progress,
            adapter_memory,
            device_creation: start.elapsed(),
        })
    }

    /// Whether the device was lost.
    pub(crate) fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// The same device for another context to join: its device-creation time is zero.
    pub(crate) fn joined(&self) -> Self {
        Self {
            device_creation: Duration::ZERO,
            ..self.clone()
        }
    }

    /// Drops the device (see [`GpuContext::lose`]).
    pub(crate) fn lose(&self) {
        self.lost.set_lost();
        self.device.destroy();
        // wgpu reports the loss at the next poll.
        let _ = crate::gpu::device::foreign::poll(&self.device);
    }
}

/// The profile `config` asks for on `curve` (its own choice for the adapter when unset),
/// or why the device cannot run it.
fn arithmetic_for(
    config: &MsmConfig,
    shared: &OpenDevice,
    curve: &'static CurveSpec,
) -> Result<Arithmetic> {
    let features = shared.device.features();
    match config.arithmetic {
        Some(a) if !features.contains(a.features()) => Err(MsmError::InvalidConfig(format!(
            "{a:?} arithmetic needs {:?}, which {} lacks",
            a.features(),
            shared.info.name
        ))),
        Some(a) if a.is_edwards() && !curve.edwards => Err(MsmError::InvalidConfig(format!(
            "{a:?} arithmetic needs a curve with the twisted Edwards map, which {} lacks (it \
             has no point of order 2)",
            curve.name
        ))),
        Some(a) => Ok(a),
        None => Ok(Arithmetic::auto(
            features.contains(wgpu::Features::SHADER_INT64),
            shared.limits.max_storage_buffer_binding_size,
            curve,
        )),
    }
}

impl GpuContext {
    /// Picks the adapter, creates the device, opens its pipeline cache and compiles the
    /// stages every call uses (the host-list stages wait for their first use).
    ///
    /// `fits` runs on the context before the pipelines are compiled (the slow part: seconds
    /// on a software adapter), so that a configuration that cannot work is refused at once:
    /// it may use everything but the pipelines (limits, layouts, the budget).
    /// `curve`: the curve group the shaders compute on.
    pub fn new(
        config: &MsmConfig,
        curve: &'static CurveSpec,
        fits: impl FnOnce(&Self) -> Result<()>,
    ) -> Result<Self> {
        Self::new_on(OpenDevice::open(config)?, config, curve, fits)
    }

    /// [`GpuContext::new`] on a device that is already open (`shared`), whose memory budget
    /// it shares: `config`'s profile, shader checks, window and pipeline cache are this
    /// context's own; its adapter choice, limits and budget are the device's.
    pub(crate) fn new_on(
        shared: OpenDevice,
        config: &MsmConfig,
        curve: &'static CurveSpec,
        fits: impl FnOnce(&Self) -> Result<()>,
    ) -> Result<Self> {
        let mut ctx = Self::on(shared, config, curve)?;
        ctx.check_stage_limits()?;
        fits(&ctx)?;
        let start = Instant::now();
        let pipelines = ctx.compile()?;
        ctx.pipeline_creation = start.elapsed();
        ctx.save_pipeline_cache();
        let _ = ctx.pipelines.set(pipelines);
        Ok(ctx)
    }

    /// A device for the self-test kernels alone ([`crate::gpu::inspect::selftest::ShaderOps::open`]):
    /// the MSM stages are not compiled, so nothing but those kernels may run on it.
    pub(crate) fn for_shader_ops(config: &MsmConfig, curve: &'static CurveSpec) -> Result<Self> {
        Self::on(OpenDevice::open(config)?, config, curve)
    }

    /// The device this context runs on, for another context to join
    /// ([`GpuContext::new_on`]; its device-creation time is zero).
    pub(crate) fn open_device(&self) -> OpenDevice {
        OpenDevice {
            device: self.device.clone(),
            queue: self.queue.clone(),
            info: self.info.clone(),
            limits: self.device.limits(),
            timestamps: self.timestamps,
            pool: Arc::clone(&self.pool),
            lost: Arc::clone(&self.lost),
            progress: Arc::clone(&self.progress),
            poller: Arc::clone(&self.poller),
            submitter: Arc::clone(&self.submitter),
            adapter_memory: self.adapter_memory,
            device_creation: Duration::ZERO,
        }
    }

    /// A context on `shared` for `curve`: the profile and the pipeline cache, everything
    /// but the compiled stages.
    fn on(shared: OpenDevice, config: &MsmConfig, curve: &'static CurveSpec) -> Result<Self> {
        let profile = arithmetic_for(config, &shared, curve)?.on(curve);
        let limits = shared.device.limits();
        let profile = profile.with_base_parts(base_parts_within(&limits, profile));
        let cache_dir = crate::gpu::pipelines::cache::directory(&config.pipeline_cache);
        let disk_cache = cache_dir.and_then(|dir| {
            crate::gpu::pipelines::cache::DiskCache::open(
                &shared.device,
                &shared.info,
                profile,
                config.shader_runtime_checks,
                &dir,
            )
        });
        Ok(Self {
            device: shared.device,
            queue: shared.queue,
            info: shared.info,
            runtime_checks: config.shader_runtime_checks,
            profile,
            pipelines: std::sync::OnceLock::new(),
            timestamps: shared.timestamps,
            pipeline_creation: Duration::ZERO,
            pool: shared.pool,
            id: NEXT_CONTEXT.fetch_add(1, Ordering::Relaxed),
            lost: shared.lost,
            invalid_next: AtomicBool::new(false),
            lose_between_chunks: AtomicBool::new(false),
            adapter_memory: shared.adapter_memory,
            next_bases_id: AtomicU64::new(WORKSPACE_BASES_ID + 1),
            progress: shared.progress,
            poller: shared.poller,
            submitter: shared.submitter,
            host_list_stages_checked: std::sync::OnceLock::new(),
            host_list_stages_checking: std::sync::Mutex::new(()),
            disk_cache,
            device_creation: shared.device_creation,
            // The known-answer test dispatches every stage it compiles at once; without it,
            // stages a call never runs would be compiled for nothing.
            warm_up: config.self_test != crate::config::SelfTest::Off,
            stream_chunk: config.stream_chunk_scalars,
        })
    }

    /// Drops the device, as a driver reset would lose it (a test hook, and what a call does
    /// to a device that did not finish in time). It counts as lost at once, before wgpu's
    /// callback says so, so that every error it causes from now on is read as the loss.
    /// Every context on the device (`GpuContext::shared`) is lost with it.
    pub(crate) fn lose(&self) {
        self.open_device().lose();
    }

    /// Test hook: the device's next poll does not return until the device is lost (as one
    /// blocked in wgpu behind a driver's submit that waits for a hung GPU).
    #[cfg(feature = "fault-injection")]
    pub(crate) fn stall_next_poll(&self) {
        self.poller.stall_next_poll();
    }

    /// Test hook: while `hold`, the device is not polled (`Poller::hold`).
    #[cfg(feature = "fault-injection")]
    pub(crate) fn hold_polls(&self, hold: bool) {
        self.poller.hold(hold);
    }

    /// Test hook: the next call's submission also asks for a buffer that cannot exist
    /// (mapped for reading and writing at once), a validation error its error scope must
    /// catch.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn inject_validation_error(&self) {
        self.invalid_next.store(true, Ordering::Release);
    }

    /// Test hook: the next call whose scalars are streamed in several chunks loses the
    /// device once its first chunk's submission is on the queue, before writing the
    /// second. Armed until such a call comes (calls in one chunk, timed by wall clock or
    /// on host lists leave it armed), for every engine on this context.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn inject_loss_between_chunks(&self) {
        self.lose_between_chunks.store(true, Ordering::Release);
    }
}
