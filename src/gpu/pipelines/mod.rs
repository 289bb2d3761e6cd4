//! The stages compiled into pipelines: the stage table, compilation, the disk cache, the warm-up.
//!
//! | file | concern |
//! |---|---|
//! | `stages.rs` | every stage once: entry, module, phase, bindings (both sides generated) |
//! | `slots.rs` | the buffers of a call by role (what the stage table binds): usage, name |
//! | `stages_tests.rs` | the stage table's tests (both sides of every binding, every module through naga) |
//! | `compile.rs` | compiling the stages (in parallel; host-list ones on first use, the shift stage on the first load with copies), bind groups, one pass |
//! | `cache.rs` | the driver's pipeline cache on disk: keys, checks, saving |
//! | `warm_up.rs` | each new pipeline dispatched once over zeroed buffers, beside the compile |

pub(crate) mod cache;
pub(crate) mod compile;
pub(crate) mod slots;
pub(crate) mod stages;
pub(crate) mod warm_up;
