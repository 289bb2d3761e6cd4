//! Choosing adapters: the one a device is made on ([`crate::MsmConfig::adapter`]), those of
//! an engine on several devices ([`Devices`]), and finding the same adapter again when a
//! lost device of such an engine is replaced ([`AdapterKey`]).

use crate::config::{Devices, MsmConfig, PowerPreference};
use crate::error::{MsmError, Result};

/// The instance and every adapter of the primary backends (Vulkan, Metal, DX12).
fn enumerate() -> (wgpu::Instance, Vec<wgpu::Adapter>) {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::PRIMARY,
        ..wgpu::InstanceDescriptor::new_without_display_handle_from_env()
    });
    let adapters =
        crate::gpu::device::blocking::ready(instance.enumerate_adapters(wgpu::Backends::PRIMARY));
    (instance, adapters)
}

/// The adapters' names, backends and types, for error messages.
fn seen(adapters: &[wgpu::Adapter]) -> Vec<String> {
    adapters
        .iter()
        .map(|a| {
            let i = a.get_info();
            format!("{} ({:?}, {:?})", i.name, i.backend, i.device_type)
        })
        .collect()
}

/// The adapters wgpu lists now ([`seen`]), for an error of an engine made without one.
pub(crate) fn seen_now() -> Vec<String> {
    seen(&enumerate().1)
}

/// [`MsmError::NoAdapter`]: none taken, for `detail`'s reason, of those `seen`.
fn none_taken(detail: String, seen: Vec<String>) -> MsmError {
    MsmError::NoAdapter { detail, seen }
}

/// Whether `Devices::AllHardware` takes the adapter: a GPU, not a software rasterizer.
fn hardware(a: &wgpu::Adapter) -> bool {
    matches!(
        a.get_info().device_type,
        wgpu::DeviceType::DiscreteGpu
            | wgpu::DeviceType::IntegratedGpu
            | wgpu::DeviceType::VirtualGpu
    )
}

/// Whether the adapter's name contains `filter` (case-insensitive).
fn named(a: &wgpu::Adapter, filter: &str) -> bool {
    let want = filter.to_lowercase();
    a.get_info().name.to_lowercase().contains(&want)
}

/// The adapter `config` picks: the first whose name contains its filter, else wgpu's choice
/// for its power preference.
pub(in crate::gpu) fn pick_adapter(config: &MsmConfig) -> Result<wgpu::Adapter> {
    let (instance, adapters) = enumerate();
    let seen = seen(&adapters);
    if let Some(filter) = config.adapter_filter() {
        return adapters
            .into_iter()
            .find(|a| named(a, &filter))
            .ok_or_else(|| {
                let why = format!(
                    "no adapter name contains {filter:?} (MsmConfig::adapter, or {})",
                    crate::config::ADAPTER_ENV
                );
                none_taken(why, seen)
            });
    }
    let power_preference = match config.adapter.power_preference {
        PowerPreference::HighPerformance => wgpu::PowerPreference::HighPerformance,
        PowerPreference::LowPower => wgpu::PowerPreference::LowPower,
    };
    crate::gpu::device::blocking::ready(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference,
        force_fallback_adapter: false,
        compatible_surface: None,
        apply_limit_buckets: false,
    }))
    .map_err(|e| none_taken(format!("wgpu chose none: {e}"), seen))
}

/// One physical adapter, as a lost device's replacement finds it again: by its backend,
/// ids, bus address and name, and its place among the adapters that share all of these
/// (identical GPUs where the backend reports no bus address, as Metal, or the same one for
/// all, as DX12 may).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AdapterKey {
    backend: wgpu::Backend,
    vendor: u32,
    device: u32,
    bus: String,
    name: String,
    ordinal: usize,
}

impl AdapterKey {
    /// The key of `info` as the first adapter with its facts ([`keyed`] numbers the
    /// others).
    fn of(info: &wgpu::AdapterInfo) -> Self {
        Self {
            backend: info.backend,
            vendor: info.vendor,
            device: info.device,
            bus: info.device_pci_bus_id.clone(),
            name: info.name.clone(),
            ordinal: 0,
        }
    }

    /// The same facts (the same physical adapter on the same backend), whatever the
    /// ordinal.
    fn same_facts(&self, other: &Self) -> bool {
        self.backend == other.backend && self.same_gpu(other)
    }

    /// The same physical adapter whatever the backend.
    fn same_gpu(&self, other: &Self) -> bool {
        (&self.vendor, &self.device, &self.bus, &self.name)
            == (&other.vendor, &other.device, &other.bus, &other.name)
    }

    /// The adapter with this key, if it is still there.
    pub(crate) fn find(&self) -> Result<wgpu::Adapter> {
        let (_, adapters) = enumerate();
        let seen = seen(&adapters);
        keyed(adapters)
            .into_iter()
            .find(|(k, _)| k == self)
            .map(|(_, a)| a)
            .ok_or_else(|| none_taken(format!("the adapter {:?} is gone", self.name), seen))
    }
}

/// Each adapter with its key, in order.
fn keyed(adapters: Vec<wgpu::Adapter>) -> Vec<(AdapterKey, wgpu::Adapter)> {
    let mut out: Vec<(AdapterKey, wgpu::Adapter)> = Vec::new();
    for a in adapters {
        let first = AdapterKey::of(&a.get_info());
        let ordinal = out.iter().filter(|(k, _)| k.same_facts(&first)).count();
        out.push((AdapterKey { ordinal, ..first }, a));
    }
    out
}

/// The adapters, each GPU once: one that a second backend lists again (Vulkan and DX12 on
/// Windows) is dropped.
fn distinct(adapters: Vec<wgpu::Adapter>) -> Vec<(AdapterKey, wgpu::Adapter)> {
    let mut out: Vec<(AdapterKey, wgpu::Adapter)> = Vec::new();
    for (key, a) in keyed(adapters) {
        let listed = out
            .iter()
            .any(|(k, _)| k.same_gpu(&key) && k.backend != key.backend);
        if !listed {
            out.push((key, a));
        }
    }
    out
}

/// The adapters of `config.devices`, each with its key, one per device to open (an
/// adapter twice for two devices on it), in order.
pub(crate) fn adapters_for(config: &MsmConfig) -> Result<Vec<(AdapterKey, wgpu::Adapter)>> {
    let (_, adapters) = enumerate();
    let seen = seen(&adapters);
    let gpus = distinct(adapters);
    let out: Vec<(AdapterKey, wgpu::Adapter)> = match &config.devices {
        Devices::One => {
            return Err(MsmError::InvalidConfig(
                "Devices::One opens one device: pick_adapter".into(),
            ))
        }
        Devices::AllHardware => gpus.into_iter().filter(|(_, a)| hardware(a)).collect(),
        Devices::Named(list) => {
            let mut out = Vec::new();
            for (name, count) in list {
                let matches: Vec<&(AdapterKey, wgpu::Adapter)> =
                    gpus.iter().filter(|(_, a)| named(a, name)).collect();
                if matches.is_empty() {
                    let why = format!("Devices::Named: no adapter name contains {name:?}");
                    return Err(none_taken(why, seen));
                }
                if *count > matches.len() && matches.len() > 1 {
                    tracing::warn!(
                        target: "gpu_msm",
                        name, count, adapters = matches.len(),
                        "Devices::Named asks for more devices than adapters match: some get two"
                    );
                }
                out.extend((0..*count).map(|j| matches[j % matches.len()].clone()));
            }
            out
        }
    };
    match out.is_empty() {
        true => Err(none_taken(
            "Devices::AllHardware takes discrete, integrated and virtual GPUs, and none of \
             those was seen (a software adapter, type Cpu, is taken only by name: \
             Devices::Named)"
                .into(),
            seen,
        )),
        false => Ok(out),
    }
}
