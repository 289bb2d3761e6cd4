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
//! The pipeline mirrors the modules: [`routing`] (which path runs a call), [`gpu`] (WGSL
//! stages over pooled buffers, one submission per call: base conversion, scalar
//! decomposition and bucket sort, balanced bucket accumulation, bucket reduction), [`digits`]
//! (the same decomposition on the host: the test oracle, and the path of [`sre`], optional
//! scalar redundancy elimination), [`cpu`] (small-MSM double-and-add and the final window
//! reduction), and [`engine`] (the facade and its reports).

pub mod bases;
pub mod calibration;
pub mod config;
pub mod cpu;
pub mod curve;
pub mod digits;
pub mod engine;
pub mod error;
pub mod gpu;
pub(crate) mod host_pool;
pub mod inputs;
pub mod report;
pub mod routing;
pub mod sre;

pub use bases::{Bases, BasesRef, MsmBases};
pub use calibration::{Calibration, CalibrationSource};
pub use config::{
    AdapterChoice, Arithmetic, BucketSort, DeviceLoss, Devices, LoadOptions, MemoryBudget,
    MsmConfig, PipelineCacheDir, PowerPreference, Precompute, SelfTest, SreMode,
};
pub use curve::GpuCurve;
#[cfg(feature = "fault-injection")]
pub use engine::HeldGpuProgress;
pub use engine::{known_answer, GpuMsm};
pub use error::{MsmError, Result};
pub use gpu::field::CurveProfile;
pub use gpu::pool::MemoryUsage;
pub use report::{
    Backend, DeviceRun, DeviceStatus, GpuTiming, MsmReport, PhaseTimes, SreReport, Startup,
};
/// The wgpu this crate is built on, so that callers name the same version
/// ([`MsmConfig::limits`]).
pub use wgpu;
