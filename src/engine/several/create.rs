//! Making the devices of an engine on several (at once), the facade over them, and what
//! the caller asks of them: their names, fixed shares.

use std::sync::Arc;
use std::time::Instant;

use super::{each_at_once, lock, Several};
use crate::calibration::Calibration;
use crate::config::{Devices, MsmConfig};
use crate::curve::GpuCurve;
use crate::engine::GpuMsm;
use crate::error::{MsmError, Result};
use crate::gpu::device::adapters::AdapterKey;
use crate::report::DeviceStatus;
use crate::routing::AdapterFacts;

impl<C: GpuCurve> GpuMsm<C> {
    /// An engine on the devices `config.devices` names, made at once (a thread each).
    pub(in crate::engine) fn create_several(config: MsmConfig, tamper: bool) -> Result<Self> {
        let start = Instant::now();
        let calibration = Calibration::of_source(&config.calibration)?;
        let named = matches!(config.devices, Devices::Named(_));
        let adapters = match crate::gpu::device::adapters::adapters_for(&config) {
            Ok(a) => a,
            Err(e @ MsmError::NoAdapter { .. }) if !named && !config.demands_gpu() => {
                return Self::on_cpu(config, calibration, e.no_adapter_reason(), start);
            }
            Err(e) => return Err(e),
        };
        let made = Self::make_each(&config, adapters, tamper);
        let mut engines = Vec::new();
        let mut left_out = Vec::new();
        let mut refused = None;
        for (name, m) in made {
            match m {
                Ok(e) if e.has_gpu() => engines.push(e),
                // SelfTest::FallBackToCpu: a CPU engine, no device.
                Ok(_) if named => {
                    return Err(MsmError::SelfTestFailed {
                        adapter: name,
                        detail: "a device Devices::Named asked for failed it".into(),
                    })
                }
                Ok(_) => left_out.push(format!("{name}: failed its known-answer test")),
                Err(e) if named => return Err(e),
                Err(e) => {
                    left_out.push(format!("{name}: {e}"));
                    if matches!(e, MsmError::InvalidConfig(_)) {
                        refused.get_or_insert(e);
                    }
                }
            }
        }
        for why in &left_out {
            tracing::warn!(target: "gpu_msm", %why, "a device was left out");
        }
        if engines.is_empty() {
            // A configuration no adapter can run is its error, as on one device.
            if let Some(e) = refused {
                return Err(e);
            }
            let detail = format!("no device was made: {}", left_out.join("; "));
            if config.demands_gpu() {
                let seen = crate::gpu::device::adapters::seen_now();
                return Err(MsmError::NoAdapter { detail, seen });
            }
            return Self::on_cpu(config, calibration, detail, start);
        }
        let mut engine = Self::over(config, calibration, engines);
        engine.created.total = start.elapsed();
        Ok(engine)
    }

    /// An engine of one device on each of `adapters` (named by adapter and bus), made at
    /// once, a thread each.
    fn make_each(
        config: &MsmConfig,
        adapters: Vec<(AdapterKey, wgpu::Adapter)>,
        tamper: bool,
    ) -> Vec<(String, Result<Self>)> {
        let one = one_device(config);
        let make = |(key, a): &(AdapterKey, wgpu::Adapter)| {
            Self::create_one(one.clone(), Some((key.clone(), a.clone())), tamper)
        };
        let made = each_at_once(&adapters, make);
        adapters
            .iter()
            .zip(made)
            .map(|((_, a), m)| {
                let info = a.get_info();
                let name = format!("{} (bus {:?})", info.name, info.device_pci_bus_id);
                let failed = || Err(MsmError::Gpu("making a device panicked".into()));
                (name, m.unwrap_or_else(failed))
            })
            .collect()
    }

    /// An engine without a device, made since `start`: the CPU paths, and `why` there is no
    /// device.
    fn on_cpu(
        config: MsmConfig,
        calibration: Option<Calibration>,
        why: String,
        start: Instant,
    ) -> Result<Self> {
        let engine = Self::assemble(config, calibration, None, AdapterFacts::None(why));
        engine.started(None, start, false)
    }

    /// The facade over `engines`, one per device: device 0's cell, identity, hooks and
    /// start-up.
    fn over(config: MsmConfig, calibration: Option<Calibration>, engines: Vec<Self>) -> Self {
        let first = &engines[0];
        let mut top = Self::assemble(
            config,
            calibration,
            first.gpu.clone(),
            first.adapter.clone(),
        );
        top.owner = first.owner;
        top.hooks = Arc::clone(&first.hooks);
        top.self_test_time = first.self_test_time;
        top.created = first.created;
        top.several = Some(Arc::new(Several::new(engines)));
        top
    }

    /// The engines of the devices, each with `config` on its own device (`f`), under a new
    /// facade: how `reconfigured` and `on_device_of` treat an engine on several devices. A
    /// device whose engine fell back to the CPU (its known-answer test failed) is left out.
    pub(in crate::engine) fn over_each<D: GpuCurve>(
        other: &Several<D>,
        config: MsmConfig,
        calibration: Option<Calibration>,
        f: impl Fn(&GpuMsm<D>, MsmConfig) -> Result<Self>,
    ) -> Result<Self> {
        let one = one_device(&config);
        let mut engines = other
            .devices
            .iter()
            .map(|d| f(d, one.clone()))
            .collect::<Result<Vec<_>>>()?;
        // A device whose test failed with `SelfTest::FallBackToCpu` takes no share.
        engines.retain(|e| e.has_gpu());
        if engines.is_empty() {
            let why = "no device passed the known-answer test: on the CPU".to_string();
            return Self::on_cpu(config, calibration, why, Instant::now());
        }
        Ok(Self::over(config, calibration, engines))
    }

    /// Each device of an engine on several, in order: its adapter, whether it is lost now,
    /// its weight in the split, its memory budget's use and its replacements (empty on one
    /// device: `memory_usage`, `devices_recreated` say the same of it).
    pub fn device_status(&self) -> Vec<DeviceStatus> {
        let Some(s) = &self.several else {
            return Vec::new();
        };
        let weights = s.weights(&(0..s.devices.len()).collect::<Vec<_>>());
        s.devices
            .iter()
            .zip(weights)
            .enumerate()
            .map(|(k, (d, weight))| DeviceStatus {
                adapter: d.adapter_name().to_string(),
                lost: s.lost(k),
                weight,
                memory: d.memory_usage(),
                recreated: d.devices_recreated(),
            })
            .collect()
    }

    /// The adapters of the engine's devices, in order: one on one device (none without a
    /// GPU), one per device on several ([`crate::MsmConfig::devices`]).
    pub fn device_names(&self) -> Vec<String> {
        match &self.several {
            Some(s) => s
                .devices
                .iter()
                .map(|d| d.adapter_name().to_string())
                .collect(),
            None if self.has_gpu() => vec![self.adapter_name().to_string()],
            None => Vec::new(),
        }
    }

    /// Fixes the split of calls (and of sets loaded from now on) across the devices: device
    /// k's share of the points in proportion to `shares[k]` (0 leaves it out while others
    /// can take the call), instead of the weights learned from split calls' finish times;
    /// `None` goes back to the learned ones. [`MsmError::InvalidConfig`] unless the engine is on several
    /// devices and `shares` has one finite, non-negative value per device, not all zero.
    pub fn set_device_weights(&self, shares: Option<Vec<f64>>) -> Result<()> {
        let Some(several) = &self.several else {
            return Err(MsmError::InvalidConfig(
                "set_device_weights: the engine has one device (MsmConfig::devices)".into(),
            ));
        };
        if let Some(s) = &shares {
            let valid = s.iter().all(|w| w.is_finite() && *w >= 0.0) && s.iter().any(|w| *w > 0.0);
            if s.len() != several.devices.len() || !valid {
                return Err(MsmError::InvalidConfig(format!(
                    "set_device_weights: {s:?} is not one finite share >= 0 per device ({}), \
                     one of them > 0",
                    several.devices.len()
                )));
            }
        }
        *lock(&several.fixed) = shares;
        Ok(())
    }
}

/// `config` for one device of an engine on several.
fn one_device(config: &MsmConfig) -> MsmConfig {
    MsmConfig {
        devices: Devices::One,
        ..config.clone()
    }
}
