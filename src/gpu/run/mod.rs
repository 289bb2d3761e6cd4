//! One call on the device, in order: its uploads, its passes, its submission and read-back.
//!
//! | file | concern |
//! |---|---|
//! | `upload.rs` | packing uploads into the staging buffers, copies on the GPU |
//! | `passes.rs` | a call's passes: pipeline, bind group, dispatch size |
//! | `stream.rs` | the timestamped submission, the scalars streamed in chunks |
//! | `execute.rs` | submitting a call and reading back its sums, status and times |

pub(crate) mod execute;
pub(crate) mod passes;
pub(crate) mod stream;
pub(crate) mod upload;
