//! Multi-scalar multiplication (MSM), sum of k_i * P_i, on any GPU that wgpu reaches
//! (Vulkan, Metal, DX12), over a curve group [`GpuCurve`]: BLS12-377 G1 (the default of
//! [`GpuMsm`]), BN254 and BLS12-381 G1, and the three curves' G2 (over F_p^2), the shaders
//! generated from arkworks' parameters of each.
//!
//! ```no_run
//! # fn main() -> Result<(), gpu_msm::MsmError> {
//! use ark_bls12_377::{Fr, G1Affine};
//! let bases: Vec<G1Affine> = vec![];
//! let scalars: Vec<Fr> = vec![];
//! let engine = gpu_msm::GpuMsm::new()?;
//! let (sum, report) = engine.msm_with_report(&bases, &scalars)?;
//! println!("{report}");
//! # let _ = sum; Ok(()) }
//! ```
//!
//! A prover loads its bases once and runs many MSMs on them:
//!
//! ```no_run
//! # fn main() -> Result<(), gpu_msm::MsmError> {
//! # use ark_bls12_377::{Fr, G1Affine};
//! # let (srs, a, b): (Vec<G1Affine>, Vec<Fr>, Vec<Fr>) = (vec![], vec![], vec![]);
//! let engine = gpu_msm::GpuMsm::new()?;
//! let bases = engine.load_bases(&srs)?; // uploaded and converted once
//! let c = engine.msm(&bases, &a)?; // a prefix of the bases when a is shorter
//! let sums = engine.batch_msm(&bases, &[&a, &b])?; // host work overlaps the GPU's
//! # let _ = (c, sums); Ok(()) }
//! ```
//!
//! How a call is computed, module by module and in the order it runs, is in
//! `docs/ARCHITECTURE.md`; every public item is re-exported here, at the crate's root, but
//! for `inputs`, a module of random and adversarial inputs.

// Every module is the crate's own; the public API is what this file re-exports.
pub(crate) mod bases;
pub(crate) mod calibration;
pub(crate) mod config;
pub(crate) mod cpu;
pub(crate) mod curve;
pub(crate) mod digits;
pub(crate) mod engine;
pub(crate) mod error;
pub(crate) mod gpu;
pub(crate) mod host_pool;
pub mod inputs;
pub(crate) mod report;
pub(crate) mod routing;
pub(crate) mod sre;

pub use bases::{Bases, MsmBases};
pub use calibration::{
    crossover, Calibration, CalibrationRow, CalibrationSource, CALIBRATION_ENV, CALIBRATION_FORMAT,
};
pub use config::{
    AdapterChoice, Arithmetic, BucketSort, DeviceLoss, Devices, LoadOptions, MemoryBudget,
    MsmConfig, PipelineCacheDir, PowerPreference, Precompute, SelfTest, SreMode, SreOptions,
    SreStrategy, ADAPTER_ENV, DEFAULT_GPU_TIMEOUT, DEFAULT_MEMORY_FRACTION,
    DEFAULT_STREAM_CHUNK_SCALARS, FIRST_DISPATCH_TIMEOUT, MAX_DEVICES, MAX_PRECOMPUTED_WINDOW_BITS,
    MAX_STREAM_CHUNKS, MAX_WINDOW_BITS, MIN_DEVICE_SHARE, MIN_WINDOW_BITS, PAPER_EARLY_STOP,
    RECREATE_BACKOFF_MAX, RECREATE_BACKOFF_MIN, TIMING_ENV,
};
pub use curve::{CurveSpec, Fe, Fp, Fr, GpuCurve};
#[cfg(feature = "fault-injection")]
pub use engine::HeldGpuProgress;
pub use engine::{known_answer, GpuMsm};
pub use error::{MsmError, Result, SOFTWARE_VULKAN_HINT};
pub use gpu::inspect::mul_bench::{MulRate, MAX_CHAIN};
pub use gpu::inspect::selftest::ShaderOps;

pub use gpu::planning::counts::{CallCounts, PassCounts, PhaseMuls};
pub use gpu::shader::field::CurveProfile;
pub use gpu::shader::mul_variants::MulForm;
pub use report::{
    Backend, DeviceRun, DeviceStatus, GpuTiming, MemoryUsage, MsmReport, PhaseTimes, SreReport,
    SreStats, Startup,
};
/// The wgpu this crate is built on, so that callers name the same version
/// ([`MsmConfig::limits`]).
pub use wgpu;

/// What this crate's own tests, examples and benchmarks reach inside it: the shader
/// generator, the host-side plans and the CPU references they compare with. Not part of
/// the API, and not stable.
#[doc(hidden)]
pub mod internals {
    /// The host's decomposition and bucket plans (the GPU's oracle).
    pub mod digits {
        pub use crate::digits::*;
    }
    /// The CPU references: double-and-add, arkworks.
    pub mod cpu {
        pub use crate::cpu::*;
    }
    /// The curve groups' parameters.
    pub mod curve {
        pub use crate::curve::*;
    }
    /// SRE's search and policy.
    pub mod sre {
        pub use crate::sre::*;
    }
    /// The GPU side: shader generation, the stage table, plans and counts.
    pub mod gpu {
        pub use crate::gpu::inspect::selftest::ShaderFn;
        pub use crate::gpu::memory::resident::Shift;
        pub use crate::gpu::pipelines::listing::{wgsl_modules, WgslModule};
        pub use crate::gpu::shader::{self, edwards, field, packing};
        /// What one call does, counted from its plan.
        pub mod counts {
            pub use crate::gpu::planning::batch_affine::*;
            pub use crate::gpu::planning::counts::*;
        }
        /// The GPU bucket sort's plans and constants.
        pub mod sort {
            pub use crate::gpu::planning::sort::*;
        }
        /// The product's rate on the device.
        pub mod mul_bench {
            pub use crate::gpu::inspect::mul_bench::*;
        }
    }
    /// The engine's limits and defaults.
    pub mod config {
        pub use crate::config::*;
    }
    /// Routing's choice.
    pub mod routing {
        pub use crate::routing::*;
    }
}
