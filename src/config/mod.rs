//! Engine configuration and its named tuning constants, at the bottom of the crate: it
//! depends on nothing but [`crate::error`].
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | `MsmConfig`, its options and tuning constants, and its validation |
//! | `choices.rs` | the choices other modules re-export: `Backend`, `Arithmetic`, SRE's options, `CalibrationSource` |
//! | `load_options.rs` | how a resident set is stored: `LoadOptions`, `Precompute` |
//! | `devices.rs` | which devices one engine runs on: `Devices`, `MIN_DEVICE_SHARE` |

use std::time::Duration;

use crate::error::{MsmError, Result};

mod choices;
mod devices;
mod load_options;

pub use choices::{
    Arithmetic, Backend, CalibrationSource, SreOptions, SreStrategy, PAPER_EARLY_STOP,
};
pub use devices::{Devices, MAX_DEVICES, MIN_DEVICE_SHARE};
pub use load_options::{LoadOptions, Precompute};

/// Smallest window size, in bits, that the engine accepts.
pub const MIN_WINDOW_BITS: u32 = 1;

/// Largest window size, in bits, of a call on bases without shifted copies (and of
/// `MsmConfig::window_bits`): 2^15 buckets per window. No stage assumes a bucket magnitude of
/// 16 bits (an earlier comment said so); the cap is what is tested. Wider windows pay off
/// with shifted copies, up to [`MAX_PRECOMPUTED_WINDOW_BITS`].
pub const MAX_WINDOW_BITS: u32 = 16;

/// Largest window size, in bits, of a set with shifted copies (`Precompute`,
/// `LoadOptions::window_bits`): 2^21 buckets per window of buckets, one window at most
/// 400 MB of buckets in the Edwards profile, reduced in 2^17 segments of 16 buckets and two
/// `reduce_level` passes (`gpu::reduction`).
pub const MAX_PRECOMPUTED_WINDOW_BITS: u32 = 22;
// The GPU sort's bit reader (shaders/sort.wgsl, take_bits) hands out fewer than 32 bits.
const _: () = assert!(MAX_PRECOMPUTED_WINDOW_BITS < 32 && MAX_WINDOW_BITS < 32);

/// Fewest scalars in one streamed chunk of a call's upload by default
/// ([`MsmConfig::stream_chunk_scalars`]): 8 MiB, whose host write (about a millisecond) is
/// long beside a submission's own cost, so the extra submissions cost little of what the
/// overlap saves.
pub const DEFAULT_STREAM_CHUNK_SCALARS: usize = 1 << 18;

/// Most chunks one call's scalars are streamed in ([`MsmConfig::stream_chunk_scalars`]; 1,
/// 2 or 4: `gpu::sort::scalar_chunks`): the GPU copies and counts chunk j while the host
/// writes chunk j + 1, so all but the last chunk's share of the GPU's copy and
/// `count_digits` hides behind the host's writes; more chunks would hide little more (a
/// quarter at most) for a submission each.
pub const MAX_STREAM_CHUNKS: usize = 4;
const _: () = assert!(MAX_STREAM_CHUNKS.is_power_of_two());

/// Environment variable: set to `wallclock` to time GPU phases by host wall clock around a
/// submission per stage even where the adapter has timestamp queries (a cross-check).
pub const TIMING_ENV: &str = "GPU_MSM_TIMING";

/// Environment variable that overrides [`AdapterChoice::name_contains`] (with
/// [`Devices::One`] only).
pub const ADAPTER_ENV: &str = "GPU_MSM_ADAPTER";

/// Share of the adapter's memory a device (its engines: `reconfigured` ones and those of
/// other groups made by `GpuMsm::on_device_of`) may hold by default
/// ([`MemoryBudget::Fraction`]): the rest is left to the prover and other programs on the
/// same GPU.
pub const DEFAULT_MEMORY_FRACTION: f64 = 0.75;

/// How long one wait of a call may last by default ([`MsmConfig::gpu_timeout`]): for the GPU
/// to finish a submission or map a buffer, or for room in the memory budget.
///
/// Far above any call measured or estimated, on lavapipe or on a large GPU (docs/PERF.md): a
/// wait past it means a hung or lost GPU. A driver that compiles a pipeline at its first dispatch (lavapipe:
/// BLS12-381 G2's Limbs13 shift stage took longer than this there) does so in the
/// warm-up that follows each compile, under [`FIRST_DISPATCH_TIMEOUT`], except at the
/// creation of an engine whose `self_test` is `Off`, which skips that warm-up: its first
/// calls compile the stages they run, inside their waits.
pub const DEFAULT_GPU_TIMEOUT: Duration = Duration::from_secs(120);

/// How long the first dispatches of newly compiled pipelines may go without progress (the
/// warm-up after each compile: at an engine's creation, a replacement device's, and the
/// first use of the host-list and shift stages), in which a driver that compiles at first
/// dispatch (lavapipe: LLVM, one stage after another) compiles them. Past it the device is
/// taken to be hung ([`crate::MsmError::Timeout`]). A compile at pipeline creation, as most
/// GPU drivers do, has no deadline: wgpu's call does not return before it is done.
pub const FIRST_DISPATCH_TIMEOUT: Duration = Duration::from_secs(1200);

/// After a failed attempt to replace a lost device ([`DeviceLoss::Recreate`]), the next
/// attempt waits this long; each further failure doubles the wait, up to
/// [`RECREATE_BACKOFF_MAX`]. Calls in between do not retry (docs/RELIABILITY.md).
pub const RECREATE_BACKOFF_MIN: Duration = Duration::from_secs(1);

/// The longest wait between two attempts to replace a lost device.
pub const RECREATE_BACKOFF_MAX: Duration = Duration::from_secs(60);

/// How much device memory the engines of a device may hold at once: resident bases, the
/// buffers of calls in flight and idle pooled buffers. Calls that do not fit wait for
/// others to finish ([`crate::gpu::memory::pool`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MemoryBudget {
    /// This share (in (0, 1]) of what the adapter offers: its largest device-local memory
    /// heap where the backend reports one (Vulkan), else its largest buffer.
    Fraction(f64),
    /// This many bytes.
    Bytes(u64),
}

impl Default for MemoryBudget {
    fn default() -> Self {
        MemoryBudget::Fraction(DEFAULT_MEMORY_FRACTION)
    }
}

/// Which kind of adapter to prefer when no name is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PowerPreference {
    /// A discrete GPU where there is one.
    #[default]
    HighPerformance,
    /// An integrated GPU where there is one.
    LowPower,
}

/// How the engine picks its wgpu adapter (with [`Devices::One`]; `AllHardware` and `Named`
/// pick their own).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AdapterChoice {
    /// Preference used when `name_contains` is `None`.
    pub power_preference: PowerPreference,
    /// Pick the first adapter whose name contains this (case-insensitive), e.g. "llvmpipe"
    /// or "H200". The environment variable [`ADAPTER_ENV`] overrides it.
    pub name_contains: Option<String>,
}

/// Whether the engine runs Scalar Redundancy Elimination ([`crate::sre`]) before bucket
/// placement.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum SreMode {
    /// Plain bucket placement.
    #[default]
    Off,
    /// Always search with these options (at the configured or cost-model window size).
    On(SreOptions),
    /// Let the cost model ([`crate::sre::auto`]) decide per call, and pick the window size
    /// jointly. It needs one measured GPU call on the engine first; until then it runs plain.
    Auto,
}

/// What an engine does with the known-answer test ([`crate::engine::known_answer`]) it runs on its
/// device when it is created (a device made to replace a lost one is tested too, whatever
/// this says, unless it is `Off`; failing, it is not used).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SelfTest {
    /// Run it; a device that fails it is refused with [`MsmError::SelfTestFailed`], and so
    /// is every call that would use host-list stages that failed theirs on first use.
    #[default]
    Refuse,
    /// Run it; a device that fails it is dropped and the engine runs on the CPU paths (the
    /// report's route says why). Host-list stages that fail theirs (on their first use)
    /// leave their calls to the device's bucket sort instead.
    FallBackToCpu,
    /// Do not run it (a device's host-list stages that another engine found failing are
    /// still not used: their calls run on the bucket sort).
    Off,
}

/// What an engine does after its device is lost (a driver reset, a removed GPU) or dropped
/// as hung (a GPU wait past [`MsmConfig::gpu_timeout`]: the calls that meet that loss fail
/// with [`crate::MsmError::Timeout`] instead of `DeviceLost`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceLoss {
    /// The call that meets the loss fails with [`crate::MsmError::DeviceLost`]; the next call
    /// creates a new device on the same adapter choice (compiling the pipelines and running
    /// the known-answer test on it before any call uses it). Resident bases loaded before the
    /// loss still work, their bases uploaded by each call until they are loaded again.
    ///
    /// When making the new device fails (no device, or it fails the known-answer test), the
    /// call that tried gets that error, and calls routed to the GPU run on the CPU until the
    /// next attempt, [`RECREATE_BACKOFF_MIN`] later, doubling after each failure up to
    /// [`RECREATE_BACKOFF_MAX`]; the report's route says so. With
    /// [`MsmConfig::require_gpu`] or a forced GPU backend they fail with
    /// [`crate::MsmError::DeviceLost`] instead, without waiting.
    #[default]
    Recreate,
    /// The call that meets the loss fails with [`crate::MsmError::DeviceLost`]; later calls
    /// run on the CPU paths (the report's route says why).
    FallBackToCpu,
}

/// Where a GPU call's scalars become bucket entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BucketSort {
    /// On the GPU, unless SRE plans the call (SRE searches the digits on the host).
    #[default]
    Auto,
    /// On the host (`src/digits/`): digits, bucket lists cut into chunks, merged in levels.
    /// Runs only the windows the largest scalar needs, which helps small scalars, at a host
    /// cost per scalar (docs/PERF.md).
    Host,
    /// On the GPU: the scalars are uploaded as they are, decomposed, counted, prefix-summed
    /// and scattered into buckets, then accumulated in equal slices (`shaders/sort.wgsl`,
    /// `scan.wgsl`, `balanced.wgsl`). No host work per scalar beyond the copy. SRE calls
    /// still plan on the host.
    Gpu,
}

/// Configuration of a [`crate::GpuMsm`] engine.
#[derive(Debug, Clone, PartialEq)]
pub struct MsmConfig {
    /// Without a calibration, MSMs with fewer points than this run on the CPU
    /// (double-and-add) and the others on the GPU, or on arkworks' CPU MSM when the adapter
    /// is a software one or there is none ([`crate::routing`]). A calibration for the
    /// adapter and the engine's curve group replaces this rule. Default `None`: the group's own,
    /// [`crate::GpuCurve::SMALL_MSM_CUTOFF`] (12 on BLS12-377 G1), as
    /// [`crate::GpuMsm::small_msm_cutoff`] says.
    pub small_msm_cutoff: Option<usize>,
    /// Where the CPU/GPU crossovers for routing come from (`examples/crossover.rs` writes
    /// them). Default: the file named by `GPU_MSM_CALIBRATION`, if set.
    pub calibration: CalibrationSource,
    /// Window size c in bits; `None` lets the cost model choose
    /// ([`crate::digits::best_window_bits`], weighted by the profile's addition costs). A
    /// set loaded with shifted copies ([`crate::GpuMsm::load_bases_with`]) takes the c set
    /// here when it is loaded, and its calls run at that c whatever this says later.
    pub window_bits: Option<u32>,
    /// Adapter selection.
    pub adapter: AdapterChoice,
    /// Compile the shaders with wgpu's runtime bounds checks (slower; for testing). By
    /// default they are compiled unchecked: every index in them is provably in range.
    pub shader_runtime_checks: bool,
    /// Scalar Redundancy Elimination: off by default (on random scalars it saves too little
    /// to pay for its search; see docs/SRE.md).
    pub sre: SreMode,
    /// Run every MSM with n >= 1 on this path, whatever the routing would pick (tests and
    /// examples force [`Backend::Gpu`] so that the shaders run on a software adapter too).
    /// `None` (the default) routes each call.
    pub force_backend: Option<Backend>,
    /// The shaders' arithmetic profile. `None` (the default) picks per adapter and curve
    /// group ([`Arithmetic::auto`]): 29-bit limbs with 64-bit products and twisted Edwards
    /// buckets ([`Arithmetic::Limbs29Edwards`]) on a group with the Edwards map (BLS12-377
    /// G1) where the adapter has `SHADER_INT64` and binds 2^16 Edwards bases (lavapipe
    /// does), [`Arithmetic::Limbs29`] where it has `SHADER_INT64` otherwise, else 13-bit
    /// limbs. Asking
    /// for a profile the adapter cannot run is [`MsmError::InvalidConfig`].
    pub arithmetic: Option<Arithmetic>,
    /// Check every base for membership in the group's prime-order subgroup before any work
    /// (off by default: arkworks' checked deserialization already guarantees it, and the
    /// check is a scalar multiplication by r per base, many times the MSM's own work).
    /// Without it, a base outside the subgroup gives either the integer sum (every scalar
    /// taken as its integer in [0, r), on every path) or [`MsmError::BaseNotInSubgroup`],
    /// never another point; with it, the CPU path skips the correction that sum needs on
    /// arkworks' MSM (`cpu::arkworks_msm`).
    pub validate_subgroup: bool,
    /// The known-answer test at engine creation and on a replacement device (on by default:
    /// a device that computes a wrong MSM is refused).
    pub self_test: SelfTest,
    /// Refuse to build an engine without a GPU adapter ([`MsmError::NoAdapter`]). By default
    /// an engine with no adapter at all still works, on the CPU paths, and says so.
    pub require_gpu: bool,
    /// Where the bucket entries of a GPU call are made ([`BucketSort::Auto`]: on the GPU
    /// unless SRE plans the call).
    pub bucket_sort: BucketSort,
    /// Most points one GPU call of a one-shot MSM takes: larger MSMs on host bases run in
    /// slices whose sums are added on the host. `None` (the default): as many as the
    /// adapter's storage-binding limit holds ([`crate::GpuMsm::max_slice_points`]). It also
    /// caps the device parts of [`crate::GpuMsm::load_bases`] (a call on such a set reads up
    /// to [`crate::Bases::parts_per_call`] parts at once); a value above what fits is
    /// lowered to it in both. Tests set it low to force slicing and parts on small inputs.
    pub max_slice_points: Option<usize>,
    /// Device memory the engine may hold at once (default: [`DEFAULT_MEMORY_FRACTION`] of
    /// the adapter's). Concurrent calls wait for room instead of over-allocating. The
    /// budget is the device's: its `reconfigured` engines and the engines of other curve
    /// groups made on it by [`crate::GpuMsm::on_device_of`] (a Groth16 prover's G1 and G2)
    /// share it, and must ask for the same. Engines made by `with_config` each open a
    /// device with a budget of its own: give each a share that sums to what the adapter may
    /// hold.
    pub memory_budget: MemoryBudget,
    /// The limits the device is requested with (default `None`: the adapter's own). Each
    /// must be within the adapter's, else [`MsmError::InvalidConfig`] at creation. Lower
    /// limits emulate another adapter on this one: the tests run lavapipe under WebGPU's
    /// defaults ([`wgpu::Limits::default`]) and under a storage-binding limit that is not a
    /// power of two (large enough for the known-answer test's buckets, 1.5 MiB at most), as real adapters have (Vulkan on NVIDIA binds at most 2^31 - 1 bytes).
    pub limits: Option<wgpu::Limits>,
    /// What happens after the device is lost ([`DeviceLoss::Recreate`] by default).
    pub device_loss: DeviceLoss,
    /// How long a call waits without progress (default [`DEFAULT_GPU_TIMEOUT`]): for room in
    /// the memory budget while the budget does not move (no reservation given back, no
    /// bases unloaded, no waiter admitted), and for the GPU to take its submission, finish
    /// it or map its read-back while it runs no other callback (a queue busy with other
    /// calls is not a hung one); the same whether a thread blocks or a future (`msm_async`)
    /// is pending. A
    /// call past it fails with [`MsmError::Timeout`] and gives its memory back. A GPU that
    /// does not finish in time is treated as hung: its device is dropped, and the next call
    /// proceeds as [`MsmConfig::device_loss`] says. Engines made by
    /// [`crate::GpuMsm::reconfigured`] may set their own.
    pub gpu_timeout: Duration,
    /// Where the driver's compiled pipelines are kept between processes (default
    /// [`PipelineCacheDir::UserCache`]), on adapters with `wgpu::Features::PIPELINE_CACHE`
    /// (Vulkan); elsewhere it is not used.
    pub pipeline_cache: PipelineCacheDir,
    /// The devices the engine opens and splits each call across. Default
    /// [`Devices::One`]: the adapter `adapter` picks.
    pub devices: Devices,
    /// How a call on the GPU bucket sort uploads its scalars. `Some(k)` (default
    /// [`DEFAULT_STREAM_CHUNK_SCALARS`]): a call of at least 2k scalars writes them in 2
    /// (from 4k scalars: [`MAX_STREAM_CHUNKS`], 4) equal chunks, each submitted with its
    /// share of `count_digits` as soon as it is written, so that the GPU copies and counts
    /// one chunk while the host writes the next. `None`: one upload before any GPU work.
    /// Stages timed by wall clock ([`TIMING_ENV`]) upload in one piece either way. The sum
    /// does not depend on it; tests set it low to stream small calls. Kept by
    /// [`crate::GpuMsm::reconfigured`] engines (their pipelines' context is shared).
    pub stream_chunk_scalars: Option<usize>,
}

/// Where compiled pipelines are kept between processes ([`MsmConfig::pipeline_cache`]), so
/// that a later engine on the same adapter, driver, crate version and shaders starts
/// sooner. A file is used only when its key and checksum match; foreign, stale or corrupt
/// data is ignored and replaced (`src/gpu/pipelines/cache.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PipelineCacheDir {
    /// A `gpu-msm` directory in the user's cache directory: `$XDG_CACHE_HOME`, else
    /// `$HOME/.cache` (`%LOCALAPPDATA%` on Windows, `~/Library/Caches` on macOS).
    #[default]
    UserCache,
    /// This directory (created if missing).
    Dir(std::path::PathBuf),
    /// No cache on disk.
    Off,
}

impl Default for MsmConfig {
    fn default() -> Self {
        Self {
            small_msm_cutoff: None,
            calibration: CalibrationSource::FromEnv,
            window_bits: None,
            adapter: AdapterChoice::default(),
            shader_runtime_checks: false,
            sre: SreMode::Off,
            force_backend: None,
            arithmetic: None,
            validate_subgroup: false,
            self_test: SelfTest::Refuse,
            require_gpu: false,
            bucket_sort: BucketSort::Auto,
            max_slice_points: None,
            memory_budget: MemoryBudget::default(),
            limits: None,
            device_loss: DeviceLoss::default(),
            gpu_timeout: DEFAULT_GPU_TIMEOUT,
            pipeline_cache: PipelineCacheDir::default(),
            devices: Devices::One,
            stream_chunk_scalars: Some(DEFAULT_STREAM_CHUNK_SCALARS),
        }
    }
}

impl MsmConfig {
    /// Checks the values; called by [`crate::GpuMsm::with_config`].
    pub fn validate(&self) -> Result<()> {
        self.devices.validate()?;
        if let Some(c) = self.window_bits {
            if !(MIN_WINDOW_BITS..=MAX_WINDOW_BITS).contains(&c) {
                return Err(MsmError::InvalidConfig(format!(
                    "window_bits {c} outside {MIN_WINDOW_BITS}..={MAX_WINDOW_BITS}"
                )));
            }
        }
        if self.stream_chunk_scalars == Some(0) {
            return Err(MsmError::InvalidConfig(
                "stream_chunk_scalars must be at least 1".into(),
            ));
        }
        if self.max_slice_points == Some(0) {
            return Err(MsmError::InvalidConfig(
                "max_slice_points must be at least 1".into(),
            ));
        }
        match self.memory_budget {
            MemoryBudget::Fraction(f) if !(f > 0.0 && f <= 1.0) => {
                return Err(MsmError::InvalidConfig(format!(
                    "memory budget fraction {f} outside (0, 1]"
                )))
            }
            MemoryBudget::Bytes(0) => {
                return Err(MsmError::InvalidConfig(
                    "memory budget must be at least one byte".into(),
                ))
            }
            _ => {}
        }
        if self.require_gpu
            && (self.self_test == SelfTest::FallBackToCpu
                || self.device_loss == DeviceLoss::FallBackToCpu)
        {
            return Err(MsmError::InvalidConfig(
                "require_gpu contradicts falling back to the CPU (SelfTest::FallBackToCpu, \
                 DeviceLoss::FallBackToCpu)"
                    .into(),
            ));
        }
        if self.gpu_timeout.is_zero() {
            return Err(MsmError::InvalidConfig(
                "gpu_timeout must be longer than zero".into(),
            ));
        }
        if let SreMode::On(o) = &self.sre {
            if let Some(t) = o.early_stop {
                if !(0.0..=1.0).contains(&t) {
                    return Err(MsmError::InvalidConfig(format!(
                        "SRE early-stop threshold {t} outside 0..=1"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Whether the configuration demands the GPU ([`MsmConfig::require_gpu`], or a forced
    /// GPU backend): a call then fails rather than move to the CPU when the GPU cannot take
    /// it (while a lost device is replaced, or after a failed replacement), and an engine is
    /// not made without one. Only [`DeviceLoss::FallBackToCpu`], which a forced backend may
    /// be combined with and `require_gpu` may not, sends such calls to the CPU after a loss.
    pub fn demands_gpu(&self) -> bool {
        self.require_gpu || self.force_backend == Some(Backend::Gpu)
    }

    /// The adapter name filter after the environment override.
    pub fn adapter_filter(&self) -> Option<String> {
        match std::env::var(ADAPTER_ENV) {
            Ok(v) if !v.trim().is_empty() => Some(v.trim().to_string()),
            _ => self.adapter.name_contains.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_that_cannot_work_are_refused() {
        let with = |memory_budget| MsmConfig {
            memory_budget,
            ..Default::default()
        };
        for bad in [
            MemoryBudget::Fraction(0.0),
            MemoryBudget::Fraction(-0.5),
            MemoryBudget::Fraction(1.0 + f64::EPSILON),
            MemoryBudget::Fraction(f64::NAN),
            MemoryBudget::Bytes(0),
        ] {
            assert!(
                matches!(with(bad).validate(), Err(MsmError::InvalidConfig(_))),
                "{bad:?}"
            );
        }
        let contradictions = [
            MsmConfig {
                require_gpu: true,
                self_test: SelfTest::FallBackToCpu,
                ..Default::default()
            },
            MsmConfig {
                require_gpu: true,
                device_loss: DeviceLoss::FallBackToCpu,
                ..Default::default()
            },
            MsmConfig {
                gpu_timeout: std::time::Duration::ZERO,
                ..Default::default()
            },
        ];
        for bad in contradictions {
            assert!(
                matches!(bad.validate(), Err(MsmError::InvalidConfig(_))),
                "{bad:?}"
            );
        }
        for good in [
            MemoryBudget::Fraction(f64::MIN_POSITIVE),
            MemoryBudget::Fraction(1.0),
            MemoryBudget::Bytes(1),
            MemoryBudget::default(),
        ] {
            assert!(with(good).validate().is_ok(), "{good:?}");
        }
    }
}
