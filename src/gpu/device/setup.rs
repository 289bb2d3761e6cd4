//! What creating a device needs: what memory the adapter offers, the limits to ask for,
//! and error scopes around the device's work.

use crate::config::MsmConfig;
use crate::error::{MsmError, Result};

/// What an adapter offers: its largest device-local memory heap where the backend reports
/// one (Vulkan), else the largest buffer it allows.
pub(in crate::gpu) fn adapter_memory(adapter: &wgpu::Adapter) -> u64 {
    vulkan_device_heap(adapter).unwrap_or(adapter.limits().max_buffer_size)
}

#[cfg(any(
    windows,
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd"
))]
fn vulkan_device_heap(adapter: &wgpu::Adapter) -> Option<u64> {
    /// `VK_MEMORY_HEAP_DEVICE_LOCAL_BIT`.
    const DEVICE_LOCAL: u32 = 1;
    // SAFETY: the raw handles are only read (one query of memory properties), and the
    // adapter outlives the guard.
    unsafe {
        let hal = adapter.as_hal::<wgpu::hal::api::Vulkan>()?;
        let props = hal
            .shared_instance()
            .raw_instance()
            .get_physical_device_memory_properties(hal.raw_physical_device());
        props.memory_heaps[..props.memory_heap_count as usize]
            .iter()
            .filter(|h| h.flags.as_raw() & DEVICE_LOCAL != 0)
            .map(|h| h.size)
            .max()
    }
}

#[cfg(not(any(
    windows,
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd"
)))]
fn vulkan_device_heap(_adapter: &wgpu::Adapter) -> Option<u64> {
    None
}

/// Waits for a popped error scope and turns a captured error into `MsmError::Gpu`.
pub(in crate::gpu) fn check_scope(scope: wgpu::ErrorScopeGuard, what: &str) -> Result<()> {
    match crate::gpu::device::blocking::ready(scope.pop()) {
        None => Ok(()),
        Some(e) => Err(MsmError::Gpu(format!("{what}: {e}"))),
    }
}

/// The limits to request the device with: `config.limits`, each within the adapter's
/// ([`MsmError::InvalidConfig`] names the first that is not), or the adapter's own.
pub(in crate::gpu) fn requested_limits(
    config: &MsmConfig,
    adapter: &wgpu::Adapter,
    name: &str,
) -> Result<wgpu::Limits> {
    let Some(wanted) = &config.limits else {
        return Ok(adapter.limits());
    };
    let mut beyond = None;
    wanted.check_limits_with_fail_fn(&adapter.limits(), true, |limit, want, has| {
        beyond = Some(format!("{limit} = {want} is beyond {name}'s {has}"));
    });
    match beyond {
        Some(why) => Err(MsmError::InvalidConfig(format!("MsmConfig::limits: {why}"))),
        None => Ok(wanted.clone()),
    }
}

/// Runs `f` inside validation and out-of-memory error scopes, and returns the first error
/// they caught (scopes are popped before returning, so calls may interleave).
pub(in crate::gpu) fn scoped<T>(
    device: &wgpu::Device,
    what: &str,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let val = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let out = f();
    check_scope(oom, &format!("{what}: out of GPU memory"))?;
    check_scope(val, &format!("{what}: validation"))?;
    out
}
