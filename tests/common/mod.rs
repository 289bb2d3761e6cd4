//! Shared by the GPU test binaries: one engine per binary (pipeline creation and the
//! driver's first-dispatch compilation are slow on software Vulkan).
#![allow(dead_code)]

use std::sync::OnceLock;

use ark_bls12_377::{Fr, G1Affine, G1Projective};
use ark_ec::VariableBaseMSM;
use gpu_msm::{CalibrationSource, GpuMsm, MsmConfig};

fn build(config: MsmConfig) -> GpuMsm {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        // Mesa's software Vulkan warns without it; harmless to set for tests.
        std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
    match GpuMsm::with_config(config) {
        Ok(e) => e,
        // Fail, never skip: the message names the package to install.
        Err(e) => panic!("GPU tests need a wgpu adapter: {e}"),
    }
}

/// An engine that sends every MSM, even n = 1, through the GPU pipeline.
pub fn gpu_engine() -> &'static GpuMsm {
    static E: OnceLock<GpuMsm> = OnceLock::new();
    E.get_or_init(|| {
        build(MsmConfig {
            force_backend: Some(gpu_msm::Backend::Gpu),
            calibration: CalibrationSource::Defaults,
            ..Default::default()
        })
    })
}

/// An engine with the default configuration (routing by the default cutoff, whatever
/// GPU_MSM_CALIBRATION says), on the device of [`gpu_engine`].
pub fn default_engine() -> &'static GpuMsm {
    static E: OnceLock<GpuMsm> = OnceLock::new();
    E.get_or_init(|| {
        gpu_engine()
            .reconfigured(MsmConfig {
                calibration: CalibrationSource::Defaults,
                ..Default::default()
            })
            .expect("same device")
    })
}

/// arkworks' MSM, the reference.
pub fn reference(bases: &[G1Affine], scalars: &[Fr]) -> G1Projective {
    G1Projective::msm(bases, scalars).expect("equal lengths")
}
