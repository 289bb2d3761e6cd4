//! `GpuMsm`: the engine a prover holds, a thin facade over the phases: validation and
//! routing ([`crate::routing`]), the SRE policy ([`crate::sre`]), digits and bucket plans
//! ([`crate::digits`]), the GPU run ([`crate::gpu`]) and the window reduction ([`crate::cpu`]).
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the public facade: `new`, accessors, `msm`, `batch_msm` (the blocking calls) |
//! | `startup.rs` | creating an engine: configuration, calibration, device, known-answer test, start-up times |
//! | `call/` | one call in the order it runs (validate, route, plan, submit, finish) and its drivers (slices, overlap, batches, several devices): start at `call/mod.rs` |
//! | `asynchronous.rs` | the calls that do not block a thread: `msm_async`, `msm_with_report_async`, `batch_msm_async`, `batch_msm_with_reports_async` |
//! | `siblings.rs` | sibling engines, on one device: `reconfigured` (same group and pipelines), `on_device_of` (any group, one budget) |
//! | `load.rs` | resident sets: `load_bases`, `load_bases_with`, the shifted copies' shape, a set placed on several devices |
//! | `device.rs` | the device over its life: the line its sibling engines of other groups are on, readiness, replacement after a loss |
//! | `known_answer.rs` | the known-answer test every new device passes before use, and the host-list stages' on their first use |
//! | `several/` | an engine on several devices (`MsmConfig::devices`): creation, `device_names`, the devices' weights (`set_device_weights`), a lost device replaced |
//! | `faults.rs` | fault injection for the tests (feature `fault-injection`) |
//!
//! Words for the pieces of a call: a *slice* is one GPU call of a call too large for one
//! (one device); a *part* is the piece of a resident set one call binds (one device); a
//! *share* is the piece of a call, or of a set, that one device of several takes (each
//! share may run in slices, each set share be stored in parts); *copies* are a set's
//! shifted copies; *siblings* are engines on one device (`siblings.rs`). "Share" means
//! a device's piece and nothing else.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

use ark_ec::short_weierstrass::Projective;

use crate::bases::{Bases, MsmBases};
use crate::calibration::Calibration;
use crate::config::MsmConfig;
use crate::curve::{Fr, GpuCurve};
use crate::error::{MsmError, Result};
use crate::gpu::inspect::selftest::ShaderOps;
use crate::gpu::GpuContext;
use crate::report::{MsmReport, Startup};
use crate::routing::AdapterFacts;
use crate::sre::policy::SrePolicy;

mod asynchronous;
mod call;
mod device;
mod faults;
#[cfg(feature = "fault-injection")]
pub use faults::HeldGpuProgress;
pub mod known_answer;
mod load;
mod several;
mod siblings;
mod startup;

use call::batch::batch_span;
use device::DeviceCell;
use faults::Hooks;
use several::{Several, Spread};
use tracing::Instrument;

/// Identities of the owners of resident sets: an engine and its `reconfigured` ones have
/// one, every other engine (`on_device_of` ones too, on the same device) has its own, so
/// that a [`Bases`] is used only by the engines that loaded it. On several devices the
/// facade has device 0's engine's identity (a set's share on device 0 is that engine's),
/// each other device's engine its own.
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

/// A multi-scalar multiplication engine for one curve group `C` (BLS12-377 G1 by default;
/// BN254 and BLS12-381 G1 and the three G2s: `GpuMsm::<ark_bn254::g2::Config>::new()`) on
/// one wgpu device, or on several ([`MsmConfig::devices`]).
/// An engine made by `new` or `with_config` opens its devices; engines of several groups
/// are siblings on them, with one memory budget, through [`GpuMsm::on_device_of`].
///
/// On several devices the engine is a facade over one engine per device, and each call is
/// split across them ([`GpuMsm::device_names`], `MsmReport::devices`). What describes a
/// device (`adapter_name`, `adapter_backend`, `is_software_adapter`, `has_gpu`,
/// `arithmetic`, `profile`, `memory_usage`, `adapter_memory`, `max_binding_bytes`,
/// `idle_workspaces`, `pipeline_*`, `startup`, `self_test_time`, `shader_ops`,
/// `call_memory`, `max_slice_points`, `devices_recreated`) is device 0's, and routing uses
/// device 0's adapter and calibration for the whole call. The memory budget is each
/// device's own.
///
/// Build it once (adapter, device and pipeline compilation take time) and share it: it is
/// `Send + Sync`, and concurrent calls from several threads are allowed. Without any GPU
/// adapter it still works, on the CPU paths (unless [`MsmConfig::require_gpu`]).
pub struct GpuMsm<C: GpuCurve = ark_bls12_377::g1::Config> {
    config: MsmConfig,
    gpu: Option<Arc<DeviceCell>>,
    adapter: AdapterFacts,
    /// The owner of the sets this engine loads ([`NEXT_OWNER`]).
    owner: u64,
    /// Crossovers for routing, when configured.
    calibration: Option<Calibration>,
    sre: SrePolicy,
    /// How long the known-answer test took at creation, if it ran and passed.
    self_test_time: Option<Duration>,
    /// Where its creation's time went (the host-list fields unset).
    created: Startup,
    /// Fault injection for the tests, the same for its [`GpuMsm::reconfigured`] engines.
    hooks: Arc<Hooks>,
    /// Test hook: calls read a held set's shifted copies whatever the cost model says
    /// (`always_read_copies`); this engine's alone.
    read_copies_always: AtomicBool,
    /// Whether a call waits for room in the memory budget (else it fails with
    /// `InputTooLarge` at once): false for the host-list stages' known-answer test, which
    /// runs inside the first call that needs them and must not wait for room that calls
    /// in the same task hold (they cannot finish while it waits).
    waits_for_room: bool,
    /// The engines of its devices, on several (`MsmConfig::devices`): device 0's has this
    /// engine's cell, identity and hooks.
    several: Option<Arc<Several<C>>>,
    /// The curve group (no value of it).
    curve: std::marker::PhantomData<fn() -> C>,
}

impl<C: GpuCurve> GpuMsm<C> {
    /// An engine on the best adapter with the default configuration.
    pub fn new() -> Result<Self> {
        Self::with_config(MsmConfig::default())
    }

    /// An engine with `config`. A configuration that cannot run even one point's call on
    /// the adapter (a memory budget or window size too large for it, for the known-answer
    /// test too) is [`MsmError::InvalidConfig`].
    pub fn with_config(config: MsmConfig) -> Result<Self> {
        Self::create(config, false)
    }

    /// How long the known-answer test took when the engine was created (`None` when it did
    /// not run, or failed and the engine fell back to the CPU).
    pub fn self_test_time(&self) -> Option<Duration> {
        self.self_test_time
    }

    /// The calibration the engine routes by, if one was loaded.
    pub fn calibration(&self) -> Option<&Calibration> {
        self.calibration.as_ref()
    }

    /// The configuration in use.
    pub fn config(&self) -> &MsmConfig {
        &self.config
    }

    /// The small-MSM cutoff in use: [`MsmConfig::small_msm_cutoff`], or the group's own
    /// ([`GpuCurve::SMALL_MSM_CUTOFF`]).
    pub fn small_msm_cutoff(&self) -> usize {
        self.config.small_msm_cutoff.unwrap_or(C::SMALL_MSM_CUTOFF)
    }

    /// Whether the engine has a GPU adapter (else it runs everything on the CPU).
    pub fn has_gpu(&self) -> bool {
        self.gpu.is_some()
    }

    /// The shaders' field arithmetic on this engine's adapter (`None` without one).
    pub fn arithmetic(&self) -> Option<crate::config::Arithmetic> {
        self.gpu().map(|g| g.profile().arithmetic)
    }

    /// The shaders' profile on the engine's curve (`None` without an adapter).
    pub fn profile(&self) -> Option<crate::gpu::shader::field::CurveProfile> {
        self.gpu().map(|g| g.profile())
    }

    /// Whether the adapter is a software rasterizer (lavapipe, llvmpipe, WARP).
    pub fn is_software_adapter(&self) -> bool {
        matches!(self.adapter, AdapterFacts::Gpu { software: true, .. })
    }

    /// The adapter's name ("none" without an adapter).
    pub fn adapter_name(&self) -> &str {
        match (&self.gpu, &self.adapter) {
            (Some(_), AdapterFacts::Gpu { name, .. }) => name,
            _ => "none",
        }
    }

    /// The adapter's wgpu backend (Vulkan, Metal, DX12, ...), as text; without an adapter,
    /// why there is none.
    pub fn adapter_backend(&self) -> String {
        match (self.gpu(), &self.adapter) {
            (Some(g), _) => format!("{:?}", g.backend()),
            (None, AdapterFacts::None(why)) => format!("CPU only: {why}"),
            (None, _) => "CPU only".into(),
        }
    }

    /// Time it took to create the compute pipelines (zero without an adapter).
    pub fn pipeline_creation_time(&self) -> Duration {
        self.gpu()
            .map_or(Duration::ZERO, |g| g.pipeline_creation_time())
    }

    /// The file the device's pipeline cache is loaded from and saved to (`None`: no cache
    /// on disk, by [`crate::PipelineCacheDir::Off`] or because the adapter has none).
    pub fn pipeline_cache_file(&self) -> Option<std::path::PathBuf> {
        self.gpu()?.pipeline_cache_file().map(|p| p.to_path_buf())
    }

    /// Where the engine's start-up went: its creation's parts, and the host-list stages'
    /// first use on the device it runs on now (`None` until a call has used them).
    pub fn startup(&self) -> Startup {
        let gpu = self.gpu();
        let host_list = gpu.as_ref().and_then(|g| g.host_list_stages_time());
        let checked = gpu.as_ref().and_then(|g| g.host_list_check());
        Startup {
            host_list_stages: host_list,
            host_list_self_test: match checked {
                Some(crate::gpu::HostListCheck::Passed(t)) => Some(t),
                _ => None,
            },
            ..self.created
        }
    }

    /// Self-test access to the individual shader functions on this engine's device.
    pub fn shader_ops(&self) -> Result<ShaderOps<'_, C>> {
        ShaderOps::new(self.gpu_context()?)
    }

    /// Idle pooled GPU workspaces (buffers kept for the next calls).
    pub fn idle_workspaces(&self) -> usize {
        self.gpu().map_or(0, |g| g.idle_workspaces())
    }

    /// The device-memory budget ([`MsmConfig::memory_budget`]) and what is counted against
    /// it now: resident bases, calls in flight, idle buffers, the peak and how many times a
    /// call waited for room (`None` without a GPU).
    pub fn memory_usage(&self) -> Option<crate::report::MemoryUsage> {
        self.gpu().map(|g| g.memory_usage())
    }

    /// Bytes of memory the adapter offers: its largest device-local heap where the backend
    /// reports one (Vulkan), else its largest buffer (`None` without a GPU).
    pub fn adapter_memory(&self) -> Option<u64> {
        self.gpu().map(|g| g.adapter_memory())
    }

    /// The most bytes one storage binding (and one buffer) holds on this engine's device:
    /// what a call's largest array, its buckets at a wide window, must fit (`None` without
    /// a GPU).
    pub fn max_binding_bytes(&self) -> Option<u64> {
        self.gpu().map(|g| g.max_binding_bytes())
    }

    /// Device bytes one n-point GPU call reserves against the memory budget in a fresh
    /// workspace (its bases uploaded by the call unless `resident`), at the window size the
    /// engine picks for it: what to budget for ([`crate::MsmConfig::memory_budget`]). `None`
    /// without a GPU, or when the call exceeds the adapter's buffer limits.
    pub fn call_memory(&self, n: usize, resident: bool) -> Option<u64> {
        let gpu = self.gpu()?;
        let c = gpu.call_window(self.config.window_bits, n, C::spec().scalar_bits);
        gpu.call_bytes(n, !resident, c, 1).ok()
    }

    /// Most points, up to n, that one GPU call on host bases takes on this engine's
    /// adapter: within the adapter's buffer limits and within what the memory budget leaves
    /// beside resident bases, each call at its own window size (the cost model's, or
    /// `MsmConfig::window_bits`). `None` without a GPU, zero when not one point fits.
    pub fn max_slice_points(&self, n: usize) -> Option<usize> {
        self.max_call_len(n, true, 0, None)
    }

    /// The current GPU context (`None` without a GPU).
    fn gpu(&self) -> Option<Arc<GpuContext>> {
        self.gpu.as_ref().map(|c| c.current())
    }

    /// A GPU call's error, as [`MsmError::DeviceLost`] when the device was lost, and as
    /// [`MsmError::Timeout`] when the engine dropped it as hung (a GPU wait past
    /// `gpu_timeout`, this call's or another's on the device).
    fn on_device(gpu: &GpuContext, e: MsmError) -> MsmError {
        match e {
            MsmError::Gpu(m) | MsmError::DeviceLost(m) if gpu.is_lost() => gpu.lost_error(&m),
            e => e,
        }
    }

    fn gpu_context(&self) -> Result<Arc<GpuContext>> {
        self.gpu().ok_or_else(no_gpu)
    }

    /// `sum_i scalars[i] * bases[i]`. `bases` is a slice or `Vec` of points (one scalar
    /// each) or a resident [`crate::Bases`] (its first `scalars.len()` points). It blocks
    /// the thread until the sum is done; [`GpuMsm::msm_async`] does not.
    pub fn msm<B: MsmBases<C> + ?Sized>(
        &self,
        bases: &B,
        scalars: &[Fr<C>],
    ) -> Result<Projective<C>> {
        self.msm_with_report(bases, scalars).map(|(r, _)| r)
    }

    /// The MSM and a report of what ran and how long each phase took: the future of
    /// [`GpuMsm::msm_with_report_async`], waited for on this thread (a call on several
    /// devices runs their shares on threads of their own).
    pub fn msm_with_report<B: MsmBases<C> + ?Sized>(
        &self,
        bases: &B,
        scalars: &[Fr<C>],
    ) -> Result<(Projective<C>, MsmReport)> {
        let call = self.msm_of(bases.bases_ref(), scalars, Spread::Threads);
        crate::gpu::device::blocking::block_on(call.instrument(msm_span(scalars.len())))
    }

    /// Many MSMs over the same resident bases, one per scalar vector (each at most as long
    /// as the bases). The host work of vector k + 1 (digits, bucket plan, upload) runs while
    /// the GPU computes vector k. A bad vector fails the call with [`MsmError::Batch`].
    pub fn batch_msm(&self, bases: &Bases<C>, scalars: &[&[Fr<C>]]) -> Result<Vec<Projective<C>>> {
        Ok(self
            .batch_msm_with_reports(bases, scalars)?
            .into_iter()
            .map(|(r, _)| r)
            .collect())
    }

    /// [`GpuMsm::batch_msm`] with each vector's report: the future of
    /// [`GpuMsm::batch_msm_with_reports_async`], waited for on this thread.
    pub fn batch_msm_with_reports(
        &self,
        bases: &Bases<C>,
        scalars: &[&[Fr<C>]],
    ) -> Result<Vec<(Projective<C>, MsmReport)>> {
        let batch = self.batch_of(bases, scalars, Spread::Threads);
        crate::gpu::device::blocking::block_on(batch.instrument(batch_span(scalars.len())))
    }
}

/// The span of one MSM call.
fn msm_span(n: usize) -> tracing::Span {
    tracing::info_span!("gpu_msm.msm", n, backend = tracing::field::Empty)
}

fn no_gpu() -> MsmError {
    MsmError::NoAdapter {
        detail: "this engine runs on the CPU only".into(),
        seen: crate::gpu::device::adapters::seen_now(),
    }
}

impl<C: GpuCurve> std::fmt::Debug for GpuMsm<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuMsm")
            .field("adapter", &self.adapter_name())
            .field("config", &self.config)
            .finish()
    }
}
