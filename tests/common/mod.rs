//! Shared by the GPU test binaries: one engine per binary (pipeline creation and the
//! driver's first-dispatch compilation are slow on software Vulkan).
#![allow(dead_code)]

use std::sync::OnceLock;

use ark_bls12_377::{Fr, G1Affine, G1Projective};
use ark_ec::VariableBaseMSM;
use gpu_msm::{Arithmetic, CalibrationSource, GpuMsm, MsmConfig, MsmError};

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

/// A calibration source for `e`'s adapter that routes to the GPU from n = `gpu_from` on
/// (arkworks from the same n, double-and-add below), written to a file named `name`.
pub fn gpu_from(e: &GpuMsm, gpu_from: usize, name: &str) -> CalibrationSource {
    use gpu_msm::calibration::{CalibrationRow, CALIBRATION_FORMAT};
    let cal = gpu_msm::Calibration {
        format: CALIBRATION_FORMAT,
        adapter: e.adapter_name().to_string(),
        machine: "test".into(),
        arkworks_from: gpu_from,
        gpu_from: Some(gpu_from),
        rows: vec![CalibrationRow {
            n: 1,
            double_and_add_us: None,
            arkworks_us: None,
            gpu_us: None,
        }],
    };
    let dir = std::env::temp_dir().join(format!("gpu-msm-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    cal.save(&path).unwrap();
    CalibrationSource::File(path)
}

/// A point on the curve outside G1 (x^3 + 1 a square for the first x from `x0`; the
/// cofactor is not cleared, so the point is outside G1).
pub fn outside_subgroup(x0: u64) -> G1Affine {
    use ark_bls12_377::Fq;
    use ark_ff::{Field, One};
    (x0..)
        .find_map(|x| {
            let x = Fq::from(x);
            let y = (x * x * x + Fq::one()).sqrt()?;
            let p = G1Affine::new_unchecked(x, y);
            (!p.is_in_correct_subgroup_assuming_on_curve()).then_some(p)
        })
        .expect("some x")
}

/// arkworks' MSM, the reference.
pub fn reference(bases: &[G1Affine], scalars: &[Fr]) -> G1Projective {
    G1Projective::msm(bases, scalars).expect("equal lengths")
}

/// An engine forced to the GPU path with arithmetic profile `a`, or `None` (said on stderr)
/// when the adapter cannot run that profile. The portable 13-bit profile runs everywhere,
/// and the test that asks for it fails if it does not.
pub fn engine_for(a: Arithmetic) -> Option<&'static GpuMsm> {
    static OTHERS: OnceLock<Vec<(Arithmetic, Option<GpuMsm>)>> = OnceLock::new();
    if gpu_engine().arithmetic() == Some(a) {
        return Some(gpu_engine());
    }
    let others = OTHERS.get_or_init(|| {
        Arithmetic::ALL
            .iter()
            .filter(|&&b| gpu_engine().arithmetic() != Some(b))
            .map(|&b| {
                let config = MsmConfig {
                    arithmetic: Some(b),
                    ..gpu_engine().config().clone()
                };
                match GpuMsm::with_config(config) {
                    Ok(e) => (b, Some(e)),
                    Err(MsmError::InvalidConfig(why)) if b != Arithmetic::Limbs13 => {
                        eprintln!("NOTE: {b:?} arithmetic not run on this adapter: {why}");
                        (b, None)
                    }
                    Err(e) => panic!("GPU tests need a wgpu adapter for {b:?}: {e}"),
                }
            })
            .collect()
    });
    others
        .iter()
        .find(|(b, _)| *b == a)
        .and_then(|(_, e)| e.as_ref())
}

/// The engines of every profile the adapter runs (at least the portable one).
pub fn profile_engines() -> Vec<&'static GpuMsm> {
    let v: Vec<_> = Arithmetic::ALL
        .iter()
        .filter_map(|&a| engine_for(a))
        .collect();
    assert!(v
        .iter()
        .any(|e| e.arithmetic() == Some(Arithmetic::Limbs13)));
    v
}
