//! The adapter, its device and every wait for it.
//!
//! | file | concern |
//! |---|---|
//! | `setup.rs` | what creating a device needs: the adapter's memory, the limits to ask for, error scopes |
//! | `adapters.rs` | choosing adapters: `MsmConfig::adapter`'s, an engine's on several devices (`Devices`), the same one again after a loss |
//! | `poller/` | every wait for the GPU, a thread's or a task's: one polling thread per device (deadlines, a hung GPU dropped), dropped calls collected; `watchdog.rs`: a poll that never returns; `hung.rs`: devices taken to be hung, kept until idle, at most four per adapter |
//! | `submitter.rs` | the device's submitting thread: a driver's submit that waits blocks no caller |
//! | `readback.rs` | reading buffers back, waiting for the queue from a blocked thread |
//! | `signal.rs` | a wgpu callback's outcome: completed by the callback (or failed when wgpu drops it), awaited by a future or a blocked thread |
//! | `blocking.rs` | blocking a caller's thread: on the engine's futures (never on the engine's own threads), on wgpu's ready futures, on a lock for a bounded time; the engine's threads started and marked (clippy.toml allows `pollster::block_on` nowhere else) |
//! | `foreign.rs` | calls into code that may panic kept from unwinding through the engine: wakers (a panic logged), wgpu's poll (retried three times) |

pub(crate) mod adapters;
pub(crate) mod blocking;
pub(crate) mod foreign;
pub(crate) mod poller;
pub(crate) mod readback;
pub(crate) mod setup;
pub(crate) mod signal;
pub(crate) mod submitter;
