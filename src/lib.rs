//! Multi-scalar multiplication (MSM), sum of k_i * P_i, on BLS12-377 G1 on any GPU that wgpu
//! reaches (Vulkan, Metal, DX12).
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
//! The pipeline mirrors the modules: [`digits`] (scalars to signed digits and bucket entry
//! lists, on the host), [`gpu`] (WGSL stages: base conversion, bucket accumulation, bucket
//! reduction), [`cpu`] (small-MSM double-and-add and the final window reduction), and
//! [`engine`] (routing and reports).

pub mod calibration;
pub mod config;
pub mod cpu;
pub mod digits;
pub mod engine;
pub mod error;
pub mod gpu;
pub mod inputs;
pub mod report;
pub mod sre;

pub use calibration::{Calibration, CalibrationSource};
pub use config::{AdapterChoice, MsmConfig, PowerPreference, SreMode};
pub use engine::GpuMsm;
pub use error::{MsmError, Result};
pub use report::{Backend, GpuTiming, MsmReport, PhaseTimes, SreReport};
