//! The GPU tests, in one binary: every module shares the engines of `common` (one per
//! arithmetic profile, seconds each to create on lavapipe) and the suite links one binary
//! instead of one per file. The tests that need a process of their own stay apart:
//! `tests/spans.rs` (tracing's per-call-site cache), `tests/startup.rs` (a first start-up),
//! `tests/no_adapter.rs` (no driver at all), `tests/cli.rs` and `tests/module_graph.rs`.
//!
//! Each test spreads its larger cross products over the profiles (`common::spread`);
//! `GPU_MSM_FULL_TESTS=1` runs them whole.

#[path = "../common/mod.rs"]
mod common;

mod asynchronous;
mod bad_inputs;
mod checked_shaders;
mod curves;
mod g2_reliability;
mod gpu_sort;
mod limits;
mod msm;
mod parts;
mod precompute;
mod provers;
mod reliability;
mod resident;
mod routing;
mod several;
mod shader_ops;
mod soak;
mod sre;
mod streamed;
