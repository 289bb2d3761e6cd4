//! Calibrated dispatch (double-and-add, arkworks, GPU) around each crossover, and the
//! defaults without a calibration.

use crate::common;

use common::{gpu_engine, reference};
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::CalibrationRow;
use gpu_msm::{Backend, Calibration, CalibrationSource, GpuMsm, MsmConfig, MsmError};

fn with_calibration(cal: &Calibration, name: &str) -> GpuMsm {
    let dir = std::env::temp_dir().join(format!("gpu-msm-routing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    cal.save(&path).unwrap();
    let base = gpu_engine();
    base.reconfigured(MsmConfig {
        calibration: CalibrationSource::File(path),
        force_backend: None,
        ..base.config().clone()
    })
    .unwrap()
}

fn calibration(adapter: &str, arkworks_from: usize, gpu_from: Option<usize>) -> Calibration {
    Calibration {
        format: gpu_msm::CALIBRATION_FORMAT,
        curve: "BLS12-377 G1".into(),
        adapter: adapter.to_string(),
        machine: "test".into(),
        arkworks_from,
        gpu_from,
        rows: vec![CalibrationRow {
            n: 1,
            double_and_add_us: None,
            arkworks_us: None,
            gpu_us: None,
        }],
    }
}

fn off_curve(p: ark_bls12_377::G1Affine) -> ark_bls12_377::G1Affine {
    use ark_ff::One;
    ark_bls12_377::G1Affine::new_unchecked(p.x, p.y + ark_bls12_377::Fq::one())
}

fn route_of(e: &GpuMsm, n: usize) -> Backend {
    let bases = random_bases(n, n as u64);
    let scalars = random_scalars(n, 7 + n as u64);
    let (got, rep) = e.msm_with_report(&bases, &scalars).unwrap();
    assert_eq!(got, reference(&bases, &scalars), "n = {n}");
    assert!(!rep.route.is_empty());
    rep.backend
}

#[test]
fn calibrated_routes_around_both_crossovers() {
    let adapter = gpu_engine().adapter_name().to_string();
    let e = with_calibration(&calibration(&adapter, 6, Some(40)), "both.json");
    for (n, want) in [
        (0, Backend::CpuDoubleAndAdd),
        (5, Backend::CpuDoubleAndAdd),
        (6, Backend::CpuArkworks),
        (7, Backend::CpuArkworks),
        (39, Backend::CpuArkworks),
        (40, Backend::Gpu),
        (41, Backend::Gpu),
    ] {
        assert_eq!(route_of(&e, n), want, "n = {n}");
    }
    // A base off the curve on the arkworks path: a typed error, not a wrong sum.
    let mut bases = random_bases(20, 9);
    bases[11] = off_curve(bases[11]);
    assert_eq!(
        e.msm(&bases, &random_scalars(20, 10)),
        Err(MsmError::InvalidBase { index: 11 })
    );
    // A GPU that never won: arkworks from the first crossover on.
    let e = with_calibration(&calibration(&adapter, 6, None), "never.json");
    assert_eq!(route_of(&e, 5), Backend::CpuDoubleAndAdd);
    assert_eq!(route_of(&e, 300), Backend::CpuArkworks);
}

#[test]
fn calibration_for_another_adapter_falls_back_to_defaults() {
    let e = with_calibration(&calibration("some other GPU", 6, Some(40)), "other.json");
    let cutoff = e.small_msm_cutoff();
    assert_eq!(route_of(&e, cutoff - 1), Backend::CpuDoubleAndAdd);
    let want = if e.is_software_adapter() {
        Backend::CpuArkworks
    } else {
        Backend::Gpu
    };
    assert_eq!(route_of(&e, cutoff), want);
    let bases = random_bases(3, 1);
    let (_, rep) = e.msm_with_report(&bases, &random_scalars(3, 2)).unwrap();
    assert!(rep.route.contains("not this adapter"), "{}", rep.route);
}

/// A software adapter with no calibration gets no work unless forced; forced, every n >= 1
/// runs the shaders, and the report says why.
#[test]
fn software_adapters_run_only_when_forced() {
    let forced = gpu_engine();
    let default = forced
        .reconfigured(MsmConfig {
            calibration: CalibrationSource::Defaults,
            ..Default::default()
        })
        .unwrap();
    for n in [1, 2, 40] {
        let bases = random_bases(n, 3);
        let scalars = random_scalars(n, 4);
        let (got, rep) = forced.msm_with_report(&bases, &scalars).unwrap();
        assert_eq!(got, reference(&bases, &scalars));
        assert_eq!(rep.backend, Backend::Gpu, "n = {n}");
        assert!(rep.route.contains("force_backend"), "{}", rep.route);
        let (got, rep) = default.msm_with_report(&bases, &scalars).unwrap();
        assert_eq!(got, reference(&bases, &scalars));
        if default.is_software_adapter() && n >= default.small_msm_cutoff() {
            assert_eq!(rep.backend, Backend::CpuArkworks, "n = {n}");
            assert!(rep.route.contains("software adapter"), "{}", rep.route);
        }
    }
    // CI runs on lavapipe: make sure the software rule is what ran there.
    if default.adapter_name().contains("llvmpipe") {
        assert!(default.is_software_adapter());
    }
}

#[test]
fn a_bad_calibration_file_is_a_typed_error() {
    let base = gpu_engine();
    let missing = MsmConfig {
        calibration: CalibrationSource::File("/nonexistent/gpu-msm.json".into()),
        ..base.config().clone()
    };
    assert!(matches!(
        base.reconfigured(missing),
        Err(MsmError::InvalidConfig(_))
    ));
}
