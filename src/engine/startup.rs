//! Creating an engine: its configuration checked, its calibration read, its device opened
//! (or none: the CPU paths), the known-answer test run, and where the start-up's time went.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::device::{check_one_point_fits, DeviceCell, DeviceLine};
use super::{GpuMsm, NEXT_OWNER};
use crate::calibration::Calibration;
use crate::config::{MsmConfig, SelfTest};
use crate::curve::GpuCurve;
use crate::error::{MsmError, Result};
use crate::gpu::device::adapters::AdapterKey;
use crate::gpu::GpuContext;
use crate::report::Startup;
use crate::routing::AdapterFacts;
use crate::sre::policy::SrePolicy;

impl<C: GpuCurve> GpuMsm<C> {
    /// [`GpuMsm::with_config`]; `tamper`: the known-answer test expects a wrong sum (a test
    /// hook for its failure path).
    pub(super) fn create(config: MsmConfig, tamper: bool) -> Result<Self> {
        config.validate()?;
        match config.devices.several() {
            true => Self::create_several(config, tamper),
            false => Self::create_one(config, None, tamper),
        }
    }

    /// An engine on one device: on `adapter` (a device of an engine on several, whose
    /// replacements are made on the same adapter), else on the one `config` picks.
    pub(super) fn create_one(
        config: MsmConfig,
        adapter: Option<(AdapterKey, wgpu::Adapter)>,
        tamper: bool,
    ) -> Result<Self> {
        let start = std::time::Instant::now();
        let calibration = Calibration::of_source(&config.calibration)?;
        let known_answer = config.self_test != SelfTest::Off;
        let fits = |g: &GpuContext| check_one_point_fits(&config, g, known_answer);
        let (pinned, made) = match adapter {
            None => (None, GpuContext::new(&config, C::spec(), fits)),
            Some((key, a)) => {
                let made = crate::gpu::OpenDevice::open_on(a, &config, start)
                    .and_then(|d| GpuContext::new_on(d, &config, C::spec(), fits));
                (Some(key), made)
            }
        };
        let (gpu, adapter) = match made {
            Ok(g) => {
                let facts = AdapterFacts::Gpu {
                    name: g.adapter_name().to_string(),
                    software: g.is_software(),
                };
                (Some(Arc::new(g)), facts)
            }
            // No adapter at all: the CPU paths, unless a GPU was asked for (by requirement,
            // by a forced GPU backend, or by naming an adapter).
            Err(e @ MsmError::NoAdapter { .. })
                if !config.demands_gpu() && config.adapter_filter().is_none() =>
            {
                (None, AdapterFacts::None(e.no_adapter_reason()))
            }
            Err(e) => return Err(e),
        };
        let cell = gpu.as_ref().map(|g| {
            let line = match pinned {
                Some(key) => DeviceLine::pinned(g.open_device(), key),
                None => DeviceLine::new(g.open_device()),
            };
            Arc::new(DeviceCell::on_line(
                Arc::clone(g),
                config.clone(),
                true,
                line,
            ))
        });
        Self::assemble(config, calibration, cell, adapter).started(gpu, start, tamper)
    }

    /// A new engine (its own identity and hooks) on `gpu`'s cell, before its known-answer
    /// test.
    pub(super) fn assemble(
        config: MsmConfig,
        calibration: Option<Calibration>,
        gpu: Option<Arc<DeviceCell>>,
        adapter: AdapterFacts,
    ) -> Self {
        Self {
            config,
            calibration,
            gpu,
            adapter,
            owner: NEXT_OWNER.fetch_add(1, Ordering::Relaxed),
            sre: SrePolicy::default(),
            self_test_time: None,
            created: Startup::default(),
            hooks: Arc::default(),
            read_copies_always: AtomicBool::new(false),
            waits_for_room: true,
            several: None,
            curve: std::marker::PhantomData,
        }
    }

    /// The engine once its new context `gpu` has passed the known-answer test, with the
    /// start-up's parts since `start`.
    pub(super) fn started(
        mut self,
        gpu: Option<Arc<GpuContext>>,
        start: std::time::Instant,
        tamper: bool,
    ) -> Result<Self> {
        if let Some(g) = gpu {
            self.run_self_test(&g, tamper)?;
        }
        self.created = Startup {
            total: start.elapsed(),
            device: self
                .gpu()
                .map_or(Duration::ZERO, |g| g.device_creation_time()),
            pipelines: self.pipeline_creation_time(),
            self_test: self.self_test_time,
            ..Startup::default()
        };
        Ok(self)
    }
}
