//! Shared by the GPU tests (`tests/gpu/`, one binary, and the few binaries that need a
//! process of their own): one engine per profile and binary (pipeline creation and the
//! driver's first-dispatch compilation are slow on software Vulkan), and how a test spreads
//! its cases over the profiles ([`spread`], [`engines_for_case`]).
#![allow(dead_code)]

use std::sync::OnceLock;

use ark_bls12_377::{Fr, G1Affine, G1Projective};
use ark_ec::VariableBaseMSM;
use gpu_msm::{Arithmetic, CalibrationSource, GpuMsm, MsmConfig, MsmError};

/// Sets `XDG_RUNTIME_DIR` where it is unset: Mesa's software Vulkan warns without it.
/// Every test that opens an adapter calls it first.
pub fn runtime_dir() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
}

fn build(config: MsmConfig) -> GpuMsm {
    runtime_dir();
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
    use gpu_msm::{CalibrationRow, CALIBRATION_FORMAT};
    let cal = gpu_msm::Calibration {
        format: CALIBRATION_FORMAT,
        curve: "BLS12-377 G1".into(),
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

/// n scalars that break careless digit code, named: zeros, ones, r - 1, one nonzero (at
/// `nonzero_at`), 0/1, repeated, random (from `seed` on).
pub fn adversarial_scalars(n: usize, seed: u64, nonzero_at: usize) -> Vec<(&'static str, Vec<Fr>)> {
    use ark_ff::{One, Zero};
    use gpu_msm::inputs::{random_scalars, scalars, ScalarDistribution};
    let mut one_nonzero = vec![Fr::zero(); n];
    one_nonzero[nonzero_at] = random_scalars(1, seed)[0];
    vec![
        ("zeros", vec![Fr::zero(); n]),
        ("ones", vec![Fr::one(); n]),
        ("r - 1", vec![-Fr::one(); n]),
        ("one nonzero", one_nonzero),
        ("0/1", scalars(ScalarDistribution::SmallBits(1), n, seed)),
        ("repeated", vec![random_scalars(1, seed + 1)[0]; n]),
        ("random", random_scalars(n, seed + 2)),
    ]
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

/// Whether the tests run their whole cross products (`GPU_MSM_FULL_TESTS=1`): every case in
/// every profile (and every configuration a test lists). By default a test spreads its cases
/// over the profiles instead ([`spread`]), so that every case and every profile still run
/// once, in a suite sized for lavapipe on 2 cores (the README's 20 minutes).
pub fn full_tests() -> bool {
    std::env::var("GPU_MSM_FULL_TESTS").is_ok_and(|v| v == "1")
}

/// The engines that run case number `case` of a test: the profile engine `case` mod the
/// number of profiles, or every one under [`full_tests`].
pub fn engines_for_case(case: usize) -> Vec<&'static GpuMsm> {
    let engines = profile_engines();
    let lanes = engines.len();
    spread(engines, case % lanes, lanes)
}

/// The cases of `cases` that engine `lane` of `lanes` runs: case i goes to lane i mod
/// `lanes` (so each case runs on one lane and each lane gets every `lanes`-th case), or
/// every case to every lane under [`full_tests`].
pub fn spread<T>(cases: impl IntoIterator<Item = T>, lane: usize, lanes: usize) -> Vec<T> {
    assert!(lane < lanes, "lane {lane} of {lanes}");
    cases
        .into_iter()
        .enumerate()
        .filter(|(i, _)| full_tests() || i % lanes == lane)
        .map(|(_, c)| c)
        .collect()
}

/// Profile `a` on BLS12-377 G1, the curve of the engines above.
#[allow(dead_code)]
pub fn bls_profile(a: Arithmetic) -> gpu_msm::CurveProfile {
    a.on(<ark_bls12_377::g1::Config as gpu_msm::GpuCurve>::spec())
}

/// The scalar bits of BLS12-377's scalar field (253), the curve of the engines above: the
/// window counts the tests expect.
#[allow(dead_code)]
pub fn bits() -> u32 {
    <ark_bls12_377::g1::Config as gpu_msm::GpuCurve>::spec().scalar_bits()
}

/// A curve group other than BLS12-377 G1 whose engine the tests share (one per group and binary,
/// forced onto the GPU path in the adapter's default profile), as [`gpu_engine`] is
/// BLS12-377's.
#[allow(dead_code)]
pub trait TestCurve: gpu_msm::GpuCurve {
    /// The shared engine.
    fn engine() -> &'static GpuMsm<Self>;
}

/// An engine of `C` with `config`, forced onto the GPU path with default calibration.
pub fn forced_engine<C: gpu_msm::GpuCurve>(config: MsmConfig) -> GpuMsm<C> {
    runtime_dir();
    let config = MsmConfig {
        force_backend: Some(gpu_msm::Backend::Gpu),
        calibration: CalibrationSource::Defaults,
        ..config
    };
    match GpuMsm::<C>::with_config(config) {
        Ok(e) => e,
        Err(e) => panic!("GPU tests need a wgpu adapter (mesa-vulkan-drivers): {e}"),
    }
}

/// `TestCurve` for each group: one engine each, built on first use with its configuration
/// (forced onto the GPU path with default calibration by [`forced_engine`]).
macro_rules! test_curves {
    ($($c:ty => $config:expr),* $(,)?) => {$(
        impl TestCurve for $c {
            fn engine() -> &'static GpuMsm<Self> {
                static E: OnceLock<GpuMsm<$c>> = OnceLock::new();
                E.get_or_init(|| forced_engine($config))
            }
        }
    )*};
}

test_curves!(
    ark_bn254::g1::Config => MsmConfig::default(),
    ark_bls12_381::g1::Config => MsmConfig::default(),
    ark_bn254::g2::Config => MsmConfig::default(),
    ark_bls12_381::g2::Config => MsmConfig::default(),
    // Under WebGPU's default limits, whose 16 KiB of workgroup memory a G2 over a 381-bit
    // field must fit (its carry tree is the largest user): every test on this engine, its
    // whole MSMs first, runs under them.
    ark_bls12_377::g2::Config => MsmConfig {
        limits: Some(wgpu::Limits::default()),
        ..Default::default()
    },
);
