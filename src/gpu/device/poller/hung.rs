//! Devices taken to be hung ([`super::Inner::drop_as_hung`]), kept until their queue is
//! idle, then released. wgpu's `Queue::drop` waits for the queue to be idle in whichever
//! thread drops the last handle (a call, the engine replacing the device under its lock):
//! on a GPU that never finishes, for good. So a thread of its own holds one handle of the
//! device and its queue, polls the device until wgpu finds the queue empty, and drops them
//! then (the device's memory goes back once every other handle is gone): every drop before
//! that one is no last drop, and every drop after it finds the queue idle. A poll there
//! may block behind a driver's submit stuck on the hung GPU: only that thread waits.
//!
//! Once [`MAX_KEPT_PER_ADAPTER`] devices of one adapter are kept, no new device is opened on
//! it ([`room_on`]: none is taken, as where there is no adapter), so that a GPU that hangs
//! call after call (or a `gpu_timeout` too short for it) holds a bounded amount of memory
//! and threads (devices opened before the count got there may still hang later).

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Devices of one adapter kept, their queues busy, past which no device is opened on it.
pub(crate) const MAX_KEPT_PER_ADAPTER: usize = 4;

/// The first pause between two polls of a kept device; it doubles up to
/// [`KEEPER_LONGEST_PAUSE`].
const KEEPER_FIRST_PAUSE: Duration = Duration::from_millis(1);
const KEEPER_LONGEST_PAUSE: Duration = Duration::from_secs(1);

/// What the kept devices are, and how many were ever kept.
#[derive(Default)]
struct Kept {
    /// The adapter of each device kept now ([`adapter_key`]).
    now: Vec<String>,
    #[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
    ever: u64,
}

static KEPT: Mutex<Kept> = Mutex::new(Kept {
    now: Vec::new(),
    ever: 0,
});

fn lock() -> MutexGuard<'static, Kept> {
    KEPT.lock().unwrap_or_else(|e| e.into_inner())
}

/// The adapter a device is on, as the count of kept devices tells them apart (identical GPUs
/// on a backend that reports no bus address, as Metal, share one).
pub(crate) fn adapter_key(info: &wgpu::AdapterInfo) -> String {
    format!(
        "{} ({:?}, {:x}:{:x}, {})",
        info.name, info.backend, info.vendor, info.device, info.device_pci_bus_id
    )
}

/// Handles kept for good: a hung device's whose keeper thread could not start.
static NEVER_DROPPED: Mutex<Vec<(wgpu::Device, wgpu::Queue)>> = Mutex::new(Vec::new());

/// Keeps `device` and `queue`, taken to be hung, on a thread of their own until the queue
/// is idle. Without a thread, they are kept for good (never dropped, so never waited on).
pub(super) fn keep(device: wgpu::Device, queue: wgpu::Queue, adapter: String) {
    {
        let mut k = lock();
        k.now.push(adapter.clone());
        k.ever += 1;
    }
    // A second handle of each, kept for good should the thread not start (the closure
    // that holds the first is dropped with the failed spawn: as no last handle).
    let spare = (device.clone(), queue.clone());
    let held = (device, queue);
    let spawned = crate::gpu::device::blocking::spawn_engine_thread("hung device", move || {
        let (device, queue) = held;
        let idle =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| release_when_idle(&device)));
        if idle.is_err() {
            // wgpu panicked polling it: kept for good, still counted (dropping the queue
            // could wait, or panic again while this thread unwinds).
            tracing::error!(target: "gpu_msm", "polling a hung device panicked: it is kept for good");
            never_drop((device, queue));
            return;
        }
        drop(queue);
        drop(device);
        let mut k = lock();
        if let Some(i) = k.now.iter().position(|a| *a == adapter) {
            k.now.swap_remove(i);
        }
    });
    match spawned {
        // The thread holds its handles: these are no last ones.
        Ok(()) => drop(spare),
        Err(e) => {
            tracing::error!(target: "gpu_msm", error = %e, "cannot start a hung device's keeper: it is kept for good");
            never_drop(spare);
        }
    }
}

fn never_drop(handles: (wgpu::Device, wgpu::Queue)) {
    let mut kept = NEVER_DROPPED.lock().unwrap_or_else(|e| e.into_inner());
    kept.push(handles);
}

/// Polls `device` until its queue is empty, or the device is gone from wgpu's view (a poll
/// that fails: lost, its queue drained by the driver).
fn release_when_idle(device: &wgpu::Device) {
    let mut pause = KEEPER_FIRST_PAUSE;
    loop {
        match crate::gpu::device::foreign::poll(device) {
            Ok(wgpu::PollStatus::QueueEmpty) | Err(_) => return,
            Ok(_) => {}
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(KEEPER_LONGEST_PAUSE);
    }
}

/// [`crate::MsmError::NoAdapter`] (the adapter not taken: an engine that may run on the CPU
/// does) when [`MAX_KEPT_PER_ADAPTER`] devices of `adapter` are kept, their queues still
/// busy: a new device there would most likely hang too.
pub(crate) fn room_on(adapter: &str) -> crate::error::Result<()> {
    let kept = lock().now.iter().filter(|a| *a == adapter).count();
    if kept >= MAX_KEPT_PER_ADAPTER {
        return Err(crate::error::MsmError::NoAdapter {
            detail: format!(
                "{kept} devices on it were taken to be hung and their queues are still busy: \
                 no new device is opened there until one is idle (MsmConfig::gpu_timeout may \
                 be too short for this GPU)"
            ),
            seen: vec![adapter.to_string()],
        });
    }
    Ok(())
}

/// Devices taken to be hung since the process started, and those kept now (their queues
/// still busy).
#[cfg(feature = "fault-injection")]
pub(crate) fn counts() -> (u64, usize) {
    let k = lock();
    (k.ever, k.now.len())
}
