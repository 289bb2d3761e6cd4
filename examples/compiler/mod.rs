//! The compiler report's parts (`examples/compiler_report.rs`): its command line
//! ([`cli`]), the pipelines it can compile ([`jobs`]) and those a run does ([`select`]),
//! WGSL to SPIR-V as wgpu does it ([`spirv`]), the driver's statistics of a pipeline built
//! from it ([`vulkan`]), one pipeline in a worker process ([`worker`]) and the processes
//! ([`pool`]), the tables ([`table`]), the gate on the figures ([`budgets`]) and the CUDA
//! twins through NVIDIA's compilers ([`cuda`]).

pub mod budgets;
pub mod cli;
pub mod cuda;
pub mod jobs;
pub mod pool;
pub mod select;
pub mod spirv;
pub mod table;
pub mod vulkan;
pub mod worker;

/// Stops the report with `msg` (exit code 2: the run itself failed, not the gate).
pub fn fail(msg: &str) -> ! {
    eprintln!("compiler_report: {msg}");
    std::process::exit(2)
}
