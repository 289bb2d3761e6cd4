//! Sibling engines, on one device: [`GpuMsm::reconfigured`] (the same group, its pipelines
//! too) and [`GpuMsm::on_device_of`] (any group, its own pipelines on the same device and
//! memory budget).

use std::sync::Arc;

use super::device::{check_one_point_fits, DeviceCell};
use super::GpuMsm;
use crate::calibration::Calibration;
use crate::config::{MsmConfig, SelfTest};
use crate::curve::GpuCurve;
use crate::error::{MsmError, Result};
use crate::gpu::GpuContext;

impl<C: GpuCurve> GpuMsm<C> {
    /// An engine with `config` on this engine's device and pipelines (no new adapter; the
    /// host-list stages, shared too, are compiled by the first call of either engine that
    /// needs them); [`crate::Bases`] loaded by either engine work on both. `config` must keep the
    /// adapter choice, the devices, the shader checks, the arithmetic, the stream chunks
    /// (`MsmConfig::stream_chunk_scalars`) and the memory budget; a window
    /// size whose one-point call cannot fit is [`MsmError::InvalidConfig`].
    pub fn reconfigured(&self, config: MsmConfig) -> Result<Self> {
        config.validate()?;
        self.check_device_settings(&config, "reconfigured() keeps the device and its pipelines")?;
        if config.shader_runtime_checks != self.config.shader_runtime_checks
            || config.arithmetic != self.config.arithmetic
            || config.stream_chunk_scalars != self.config.stream_chunk_scalars
        {
            return Err(MsmError::InvalidConfig(
                "reconfigured() keeps the pipelines and their context: shader checks, \
                 arithmetic and stream chunks must match (GpuMsm::on_device_of makes another \
                 on the same device)"
                    .into(),
            ));
        }
        let calibration = Calibration::of_source(&config.calibration)?;
        if let Some(several) = &self.several {
            // Each device's engine reconfigured, under a new facade.
            return Self::over_each(several, config, calibration, |d, one| d.reconfigured(one));
        }
        let mut engine =
            Self::assemble(config, calibration, self.gpu.clone(), self.adapter.clone());
        // The same owner of resident sets, start-up and test hooks as this engine.
        engine.owner = self.owner;
        engine.self_test_time = self.self_test_time;
        engine.created = self.created;
        engine.hooks = Arc::clone(&self.hooks);
        if let Some(g) = engine.gpu() {
            check_one_point_fits(&engine.config, &g, false)?;
        }
        Ok(engine)
    }

    /// An engine of group `C` with `config` on `other`'s device, of any group: how a prover
    /// holds its G1 and G2 engines on one GPU. The two share the device, its queue and its
    /// memory budget (each call and resident set of either counts against it, and
    /// [`GpuMsm::memory_usage`] of either shows both); the new engine compiles its own
    /// pipelines and runs its own known-answer test (`config.self_test`) on the device.
    /// After a device loss, the first engine to replace it opens the new device and the
    /// others join it ([`crate::DeviceLoss::Recreate`]).
    ///
    /// `config` must keep `other`'s adapter choice, devices ([`crate::MsmConfig::devices`]:
    /// on several, the new engine has one engine on each of `other`'s devices), memory
    /// budget and limits (the device's);
    /// its profile (`arithmetic`: `None` picks the group's; `Limbs29Edwards` on a group
    /// without the Edwards map, every G2, is [`MsmError::InvalidConfig`]), window, routing,
    /// shader checks, pipeline cache, `gpu_timeout` and `device_loss` are its own. Without a
    /// GPU on `other`, the engine runs on the CPU (or, if `config` demands the GPU,
    /// [`MsmError::NoAdapter`]).
    ///
    /// What sharing means for calls:
    /// - one queue: a call's wait includes the work queued before it by every engine on the
    ///   device, and the device's deadline is its longest waiter's (a call of the engine
    ///   with the shorter `gpu_timeout` waits as long as the other's calls in flight allow);
    ///   a timeout drops the device for both;
    /// - one budget: sets loaded by either engine leave less room for the other's calls
    ///   (a resident part that no longer fits beside them is [`MsmError::InputTooLarge`]),
    ///   and a known-answer test that finds no room fails with it too;
    /// - sets are the engine's own: [`crate::Bases`] of one engine passed to another of the
    ///   same group on the device is [`MsmError::ForeignBases`].
    ///
    /// ```no_run
    /// use gpu_msm::{GpuMsm, MsmConfig};
    /// let g1 = GpuMsm::<ark_bn254::g1::Config>::new()?;
    /// let g2 = GpuMsm::<ark_bn254::g2::Config>::on_device_of(&g1, MsmConfig::default())?;
    /// # Ok::<(), gpu_msm::MsmError>(())
    /// ```
    pub fn on_device_of<D: GpuCurve>(other: &GpuMsm<D>, config: MsmConfig) -> Result<Self> {
        let start = std::time::Instant::now();
        config.validate()?;
        other.check_device_settings(&config, "on_device_of() shares the device")?;
        let calibration = Calibration::of_source(&config.calibration)?;
        if let Some(several) = &other.several {
            // An engine on each of `other`'s devices, under a facade of its own.
            return Self::over_each(several, config, calibration, |d, one| {
                Self::on_device_of(d, one)
            });
        }
        let Some(cell) = &other.gpu else {
            let cpu = Self::assemble(config, calibration, None, other.adapter.clone());
            return cpu.started(None, start, false);
        };
        let known_answer = config.self_test != SelfTest::Off;
        let fits = |g: &GpuContext| check_one_point_fits(&config, g, known_answer);
        let gpu = cell.line.context(&config, C::spec(), fits)?;
        let gpu = Arc::new(gpu);
        let line = Arc::clone(&cell.line);
        let cell = DeviceCell::on_line(Arc::clone(&gpu), config.clone(), true, line);
        let engine = Self::assemble(
            config,
            calibration,
            Some(Arc::new(cell)),
            other.adapter.clone(),
        );
        engine.started(Some(gpu), start, false)
    }

    /// [`MsmError::InvalidConfig`] unless `config` keeps what this engine's device was made
    /// with (adapter choice, memory budget, limits); [`MsmError::NoAdapter`] if it demands
    /// a GPU this engine lacks.
    fn check_device_settings(&self, config: &MsmConfig, what: &str) -> Result<()> {
        if config.adapter != self.config.adapter
            || config.memory_budget != self.config.memory_budget
            || config.limits != self.config.limits
            || config.devices != self.config.devices
        {
            return Err(MsmError::InvalidConfig(format!(
                "{what}: adapter choice, memory budget, limits and devices must match"
            )));
        }
        if self.gpu.is_none() && config.demands_gpu() {
            return Err(MsmError::NoAdapter {
                detail: "this engine has no GPU adapter".into(),
                seen: crate::gpu::device::adapters::seen_now(),
            });
        }
        Ok(())
    }
}
