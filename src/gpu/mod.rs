//! The GPU side: the adapter and its device, the stage table and its pipelines, and one run
//! of the Pippenger stages over pooled buffers. One concern per folder:
//!
//! | folder or file | concern |
//! |---|---|
//! | `device/` | the adapter and its device: creation, choosing adapters, the poller and every wait, the submitting thread, losing a device |
//! | `memory/` | the memory budget, a call's buffers and workspaces, resident sets and their copies |
//! | `planning/` | a call's plan on the host: what fits, its layout, the sort and reduction plans, its counts |
//! | `pipelines/` | the stage table (both sides of every binding generated), compiling it, the disk cache, the warm-up |
//! | `run/` | one call on the device in order: uploads, passes, submission and read-back |
//! | `inspect/` | single shader functions and the product's rate on the device; read-backs for the tests |
//! | `open.rs` | a device opened (`OpenDevice`) and a context made on it (`GpuContext::new`) |
//! | `shader/` | WGSL generation: files, profiles, contract, field constants, the generated multiplication, formulas, marked loops written out, registers per thread (an estimate) |
//!
//! `GpuContext` (defined in this file) is the one API the engine uses: a device, its
//! pipelines and its memory pool. `open.rs` (beside this file) creates it and the
//! `OpenDevice` its sibling contexts are on; its other methods are in `impl GpuContext`
//! blocks by concern: `planning/capacity.rs` and `layout.rs` (what a call needs and
//! whether it fits), `run/` (uploads, passes, submission and read-back), `memory/resident.rs`
//! (resident sets), `pipelines/compile.rs` (stages compiled on first use),
//! `device/readback.rs` (buffers read back) and `inspect/testing.rs` (the tests' reads).

pub(crate) mod device;
pub(crate) mod inspect;
pub(crate) mod memory;
mod open;
pub(crate) mod pipelines;
pub(crate) mod planning;
pub(crate) mod run;
pub mod shader;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub(crate) use device::blocking::lock_within;
use device::{poller, submitter};
use memory::pool::Pool;
pub(crate) use memory::resident::{Shift, StoredBases};
pub(crate) use open::OpenDevice;
use pipelines::cache as pipeline_cache;
pub(crate) use pipelines::compile::HostListCheck;
use pipelines::compile::Pipelines;
pub(crate) use planning::layout::{Job, JobBases, JobPlan};
pub(crate) use run::execute::{CallOutput, GpuTimes, InFlight};
use shader::field::CurveProfile;
pub(crate) use shader::field::PART_SHIFT;

use crate::report::{GpuTiming, MemoryUsage};

/// Cache key of the workspace's own stored bases (resident sets count from 1).
const WORKSPACE_BASES_ID: u64 = 0;

/// An adapter, its device and the compiled MSM pipelines.
pub(crate) struct GpuContext {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    runtime_checks: bool,
    profile: CurveProfile,
    /// Compiled in [`GpuContext::new`] once the configuration is known to fit.
    pipelines: std::sync::OnceLock<Pipelines>,
    timestamps: bool,
    pipeline_creation: Duration,
    pool: Arc<Pool>,
    /// This context's identity (resident sets remember where they were loaded).
    id: u64,
    /// Whether the device was lost, and why.
    lost: Arc<Loss>,
    /// Test hook: the next submission also makes an invalid buffer (a validation error).
    invalid_next: AtomicBool,
    /// Test hook: the next streamed call loses the device once its first chunk's submission
    /// is on the queue, before writing the second.
    lose_between_chunks: AtomicBool,
    /// What the adapter offers (its largest device-local heap, else its largest buffer).
    adapter_memory: u64,
    next_bases_id: AtomicU64,
    /// Callbacks run so far (read-backs mapped, submissions done): the GPU's progress, which
    /// tells a busy queue from a hung one.
    progress: Arc<AtomicU64>,
    /// The device's poller, shared by every context on it.
    poller: Arc<poller::Poller>,
    /// The device's submitting thread, shared by every context on it.
    submitter: Arc<submitter::Submitter>,
    /// The known-answer test of the host-list stages on this device, run by the first call
    /// that needs them (`GpuMsm::host_list_stages_ready`): its verdict.
    host_list_stages_checked: std::sync::OnceLock<HostListCheck>,
    /// Held while that test runs, so that it runs once.
    host_list_stages_checking: std::sync::Mutex<()>,
    /// The driver's pipeline cache and its file, where the device has one.
    disk_cache: Option<pipeline_cache::DiskCache>,
    /// Choosing the adapter and creating the device.
    device_creation: Duration,
    /// Whether each new pipeline is dispatched once as soon as it exists (`WarmUp`).
    warm_up: bool,
    /// Fewest scalars in a streamed chunk of a call's upload
    /// (`MsmConfig::stream_chunk_scalars`); `None`: one upload.
    stream_chunk: Option<usize>,
}

/// Whether a device was lost, and why: by wgpu's device-lost callback (a driver reset, a
/// removed GPU, `destroy`) or the engine's test hooks, or dropped by the engine because the
/// GPU finished nothing in time (hung). The first cause stays.
#[derive(Default)]
pub(crate) struct Loss(AtomicU8);

impl Loss {
    const LIVE: u8 = 0;
    const LOST: u8 = 1;
    const HUNG: u8 = 2;

    pub(crate) fn is_lost(&self) -> bool {
        self.0.load(Ordering::Acquire) != Self::LIVE
    }

    pub(crate) fn was_hung(&self) -> bool {
        self.0.load(Ordering::Acquire) == Self::HUNG
    }

    /// Lost (unless it already was, for whatever cause).
    pub(crate) fn set_lost(&self) {
        self.set(Self::LOST);
    }

    /// Lost because the GPU was taken to be hung (unless it already was lost: a device the
    /// driver lost, whose callbacks then never come, is lost, not hung); whether this made
    /// it lost.
    pub(crate) fn set_hung(&self) -> bool {
        self.set(Self::HUNG)
    }

    /// The error of a call that meets the device lost, naming `what` failed:
    /// [`MsmError::Timeout`] when the engine dropped it as hung, [`MsmError::DeviceLost`]
    /// otherwise. Every error a lost device causes is chosen here: the poller's for what it
    /// awaited, `GpuMsm::on_device` for a call's, a split call's lost share, the self-test
    /// engine's.
    ///
    /// [`MsmError::Timeout`]: crate::MsmError::Timeout
    /// [`MsmError::DeviceLost`]: crate::MsmError::DeviceLost
    pub(crate) fn error(&self, what: &str) -> crate::error::MsmError {
        use crate::error::MsmError;
        match self.was_hung() {
            true => MsmError::Timeout(format!(
                "{what}: the GPU finished nothing within a wait's deadline \
                 (MsmConfig::gpu_timeout for calls and loads); its device was taken to be \
                 hung and dropped"
            )),
            false => MsmError::DeviceLost(what.into()),
        }
    }

    /// Whether this made it lost.
    fn set(&self, cause: u8) -> bool {
        let (live, order) = (Self::LIVE, Ordering::AcqRel);
        self.0
            .compare_exchange(live, cause, order, Ordering::Acquire)
            .is_ok()
    }
}

impl GpuContext {
    /// Whether the device was lost (every later operation on it fails).
    pub fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// The error of a call that meets the device lost, naming `what` failed
    /// ([`Loss::error`]: [`crate::MsmError::Timeout`] when the engine dropped it as hung).
    pub(crate) fn lost_error(&self, what: &str) -> crate::error::MsmError {
        self.lost.error(what)
    }

    /// Whether `r` lives on this context's device.
    pub(crate) fn holds(&self, r: &StoredBases) -> bool {
        r.context == self.id
    }

    /// [`MsmError::InvalidConfig`] unless this device's shaders compute on `C` (its values
    /// would be laid out for another curve).
    pub(crate) fn check_curve<C: crate::curve::GpuCurve>(&self) -> crate::error::Result<()> {
        match std::ptr::eq(self.profile.curve, C::spec()) {
            true => Ok(()),
            false => Err(crate::error::MsmError::InvalidConfig(format!(
                "{} values on a device compiled for {}",
                C::NAME,
                self.profile.curve.name()
            ))),
        }
    }
    /// The shaders' profile: the curve, its field arithmetic and its addition formulas.
    pub(crate) fn profile(&self) -> CurveProfile {
        self.profile
    }

    /// The adapter's wgpu backend (Vulkan, Metal, DX12, ...).
    pub(crate) fn backend(&self) -> wgpu::Backend {
        self.info.backend
    }

    /// The host-list stages' verdict on this device, once a call has checked them.
    pub(crate) fn host_list_check(&self) -> Option<HostListCheck> {
        self.host_list_stages_checked.get().cloned()
    }

    /// The host-list stages' verdict, checked by `check` once per device: under a lock held
    /// at most `timeout` (another thread's check is waited for, and its verdict taken); a
    /// verdict `check` returns is kept, its `Err(why)` (no verdict now) is not.
    pub(crate) fn check_host_list_stages_once(
        &self,
        timeout: Duration,
        check: impl FnOnce() -> crate::error::Result<std::result::Result<HostListCheck, String>>,
    ) -> crate::error::Result<std::result::Result<HostListCheck, String>> {
        let _one = lock_within(
            &self.host_list_stages_checking,
            timeout,
            "to check the host-list stages",
        )?;
        if let Some(c) = self.host_list_stages_checked.get() {
            return Ok(Ok(c.clone()));
        }
        let verdict = check()?;
        if let Ok(c) = &verdict {
            let _ = self.host_list_stages_checked.set(c.clone());
        }
        Ok(verdict)
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

    /// Time spent choosing the adapter and creating the device.
    pub fn device_creation_time(&self) -> Duration {
        self.device_creation
    }

    /// The pipeline-cache file this device loads and saves (`None`: no cache on disk).
    pub fn pipeline_cache_file(&self) -> Option<&std::path::Path> {
        self.disk_cache.as_ref().map(|c| c.path())
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
    /// buffer): what [`crate::MemoryBudget::Fraction`] is a share of.
    pub fn adapter_memory(&self) -> u64 {
        self.adapter_memory
    }
}

#[cfg(test)]
mod tests {
    use super::Loss;

    /// A device's loss keeps its first cause: lost by the driver and then taken for hung
    /// (its callbacks never came) is lost; hung and then lost (by the engine's own
    /// `destroy`) is hung.
    #[test]
    fn a_loss_keeps_its_first_cause() {
        let lost = Loss::default();
        assert!(!lost.is_lost());
        lost.set_lost();
        lost.set_hung();
        assert!(lost.is_lost() && !lost.was_hung());
        let hung = Loss::default();
        hung.set_hung();
        hung.set_lost();
        assert!(hung.is_lost() && hung.was_hung());
        use crate::error::MsmError;
        assert!(matches!(lost.error("a call"), MsmError::DeviceLost(_)));
        assert!(matches!(hung.error("a call"), MsmError::Timeout(_)));
    }
}
