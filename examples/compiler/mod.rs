//! The compiler report's parts (`examples/compiler_report.rs`): its command line
//! ([`cli`]), the pipelines it compiles ([`jobs`]), WGSL to SPIR-V as wgpu does it
//! ([`spirv`]), the driver's statistics of a pipeline built from it ([`vulkan`]), one
//! pipeline in a worker process ([`worker`]), the gate on the figures ([`budgets`]) and
//! the CUDA twins through NVIDIA's compilers ([`cuda`]).

pub mod budgets;
pub mod cli;
pub mod cuda;
pub mod jobs;
pub mod spirv;
pub mod vulkan;
pub mod worker;
