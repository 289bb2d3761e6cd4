//! The stages compiled into pipelines: the stage table, compilation, the disk cache, the warm-up.
//!
//! | file | concern |
//! |---|---|
//! | `stages.rs` | every stage once: entry, module, phase, bindings (both sides generated) |
//! | `part_reads.rs` | how the stages that read stored bases load them from a call's device parts (generated WGSL) |
//! | `listing.rs` | every module of a profile as assembled, for reading and tools (`wgsl_modules`) |
//! | `slots.rs` | the buffers of a call by role (what the stage table binds): usage, name |
//! | `stages_tests.rs` | the stage table's tests (both sides of every binding, every module through naga) |
//! | `compile.rs` | compiling the stages (in parallel; host-list ones on first use, the shift stage on the first load with copies), bind groups, one pass |
//! | `cache.rs` | the driver's pipeline cache on disk: keys, checks, saving |
//! | `warm_up.rs` | each new pipeline dispatched once over zeroed buffers, beside the compile |

pub(crate) mod cache;
pub(crate) mod compile;
pub(crate) mod listing;
pub(crate) mod part_reads;
pub(crate) mod slots;
pub(crate) mod stages;
pub(crate) mod warm_up;
