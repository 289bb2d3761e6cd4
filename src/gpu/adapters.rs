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
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::PRIMARY));
    (instance, adapters)
}

/// The adapters' names and backends, for error messages.
fn seen(adapters: &[wgpu::Adapter]) -> Vec<String> {
    adapters
        .iter()
        .map(|a| {
            let i = a.get_info();
            format!("{} ({:?})", i.name, i.backend)
        })
        .collect()
}

/// Whether the adapter's name contains `filter` (case-insensitive).
fn named(a: &wgpu::Adapter, filter: &str) -> bool {
    let want = filter.to_lowercase();
    a.get_info().name.to_lowercase().contains(&want)
}

/// The adapter `config` picks: the first whose name contains its filter, else wgpu's choice
/// for its power preference.
pub(super) fn pick_adapter(config: &MsmConfig) -> Result<wgpu::Adapter> {
    let (instance, adapters) = enumerate();
    let seen = seen(&adapters);
    if let Some(filter) = config.adapter_filter() {
        return adapters
            .into_iter()
            .find(|a| named(a, &filter))
            .ok_or_else(|| MsmError::NoAdapter {
                detail: format!("no adapter name contains {filter:?}; seen: {seen:?}"),
            });
    }
    let power_preference = match config.adapter.power_preference {
        PowerPreference::HighPerformance => wgpu::PowerPreference::HighPerformance,
        PowerPreference::LowPower => wgpu::PowerPreference::LowPower,
    };
    pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference,
        force_fallback_adapter: false,
        compatible_surface: None,
        apply_limit_buckets: false,
    }))
    .map_err(|e| MsmError::NoAdapter {
        detail: format!("{e}; seen: {seen:?}"),
    })
}

/// One physical adapter, as a lost device's replacement finds it again: two identical GPUs
/// differ by their bus address, and one GPU listed by two backends by its backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AdapterKey {
    backend: wgpu::Backend,
    vendor: u32,
    device: u32,
    bus: String,
    name: String,
}

impl AdapterKey {
    pub(crate) fn of(info: &wgpu::AdapterInfo) -> Self {
        Self {
            backend: info.backend,
            vendor: info.vendor,
            device: info.device,
            bus: info.device_pci_bus_id.clone(),
            name: info.name.clone(),
        }
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
        adapters
            .into_iter()
            .find(|a| AdapterKey::of(&a.get_info()) == *self)
            .ok_or_else(|| MsmError::NoAdapter {
                detail: format!("the adapter {:?} is gone; seen: {seen:?}", self.name),
            })
    }
}

/// The adapters of `config.devices`, one per device to open (an adapter twice for two
/// devices on it), in order.
pub(crate) fn adapters_for(config: &MsmConfig) -> Result<Vec<wgpu::Adapter>> {
    let (_, adapters) = enumerate();
    let seen = seen(&adapters);
    match &config.devices {
        Devices::One => pick_adapter(config).map(|a| vec![a]),
        Devices::AllHardware => {
            let mut keys: Vec<AdapterKey> = Vec::new();
            let mut out = Vec::new();
            for a in adapters {
                let info = a.get_info();
                let hardware = matches!(
                    info.device_type,
                    wgpu::DeviceType::DiscreteGpu
                        | wgpu::DeviceType::IntegratedGpu
                        | wgpu::DeviceType::VirtualGpu
                );
                let key = AdapterKey::of(&info);
                let listed = keys
                    .iter()
                    .any(|k| k.same_gpu(&key) && k.backend != key.backend);
                if hardware && !listed {
                    keys.push(key);
                    out.push(a);
                }
            }
            match out.is_empty() {
                true => Err(MsmError::NoAdapter {
                    detail: format!("no hardware adapter; seen: {seen:?}"),
                }),
                false => Ok(out),
            }
        }
        Devices::Named(list) => {
            let mut out = Vec::new();
            for (name, count) in list {
                let matches: Vec<&wgpu::Adapter> =
                    adapters.iter().filter(|a| named(a, name)).collect();
                if matches.is_empty() {
                    return Err(MsmError::NoAdapter {
                        detail: format!(
                            "Devices::Named: no adapter name contains {name:?}; seen: {seen:?}"
                        ),
                    });
                }
                out.extend((0..*count).map(|j| matches[j % matches.len()].clone()));
            }
            Ok(out)
        }
    }
}
