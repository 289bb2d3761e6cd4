//! A call planned on the host before it runs: what fits, its layout, the sort and reduction plans, and what it costs.
//!
//! | file | concern |
//! |---|---|
//! | `capacity.rs` | what fits: limits, most points per call, bytes against the budget |
//! | `layout.rs` | a call's shape: its bases and plan, buffer sizes, parameter blocks |
//! | `sort.rs` | the GPU bucket sort's level plans, the pass list and its CPU model |
//! | `reduction.rs` | the bucket reduction's plan: segments, levels, the last pass's items |
//! | `counts.rs` | what one bucket-sort call does: dispatches, multiplications, bytes |
//! | `batch_affine.rs` | the count model of batch-affine accumulation, against mixed additions, and of the one built at 5bb0d24 and removed (docs/perf-log/2026-12-07.md) |

pub(crate) mod batch_affine;
pub(crate) mod capacity;
pub(crate) mod counts;
pub(crate) mod layout;
pub(crate) mod reduction;
pub(crate) mod sort;
