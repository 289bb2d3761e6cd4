//! An engine on a machine with no GPU adapter: the Vulkan loader is pointed at a driver
//! list that does not exist, so wgpu finds no adapter. The engine still works on the CPU
//! paths, and says so, unless a GPU is required.

use ark_bls12_377::G1Projective;
use ark_ec::short_weierstrass::Projective;
use ark_ec::VariableBaseMSM;
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::{Backend, GpuCurve, GpuMsm, MsmConfig, MsmError};

#[test]
fn no_adapter_means_cpu_paths_unless_a_gpu_is_required() {
    // Before any wgpu call in this process (each test file is its own process).
    for var in ["VK_ICD_FILENAMES", "VK_DRIVER_FILES"] {
        std::env::set_var(var, "/nonexistent/gpu-msm-no-driver.json");
    }
    std::env::remove_var("GPU_MSM_ADAPTER");
    let e = GpuMsm::new().expect("a CPU engine without an adapter");
    assert!(!e.has_gpu());
    assert!(
        e.adapter_backend().starts_with("CPU only"),
        "{}",
        e.adapter_backend()
    );
    let cutoff = e.small_msm_cutoff();
    for (n, want) in [
        (cutoff - 1, Backend::CpuDoubleAndAdd),
        (cutoff, Backend::CpuArkworks),
        (300, Backend::CpuArkworks),
    ] {
        let bases = random_bases(n, 1);
        let scalars = random_scalars(n, 2);
        let (got, rep) = e.msm_with_report(&bases, &scalars).unwrap();
        assert_eq!(got, G1Projective::msm(&bases, &scalars).unwrap());
        assert_eq!(rep.backend, want, "n = {n}");
        assert!(rep.route.contains("no GPU adapter"), "{}", rep.route);
        // Resident bases and batches work on the CPU too.
        let h = e.load_bases(&bases).unwrap();
        assert_eq!(h.device_bytes(), 0);
        let sums = e.batch_msm(&h, &[&scalars, &scalars[..n / 2]]).unwrap();
        assert_eq!(sums[0], got);
        assert_eq!(
            sums[1],
            G1Projective::msm(&bases[..n / 2], &scalars[..n / 2]).unwrap()
        );
    }
    for config in [
        MsmConfig {
            require_gpu: true,
            ..Default::default()
        },
        MsmConfig {
            force_backend: Some(Backend::Gpu),
            ..Default::default()
        },
    ] {
        let err = GpuMsm::<ark_bls12_377::g1::Config>::with_config(config).unwrap_err();
        assert!(matches!(err, MsmError::NoAdapter { .. }), "{err}");
        assert!(err.to_string().contains("mesa-vulkan-drivers"), "{err}");
    }
    assert!(matches!(e.shader_ops(), Err(MsmError::NoAdapter { .. })));
    // Each group routes around its own cutoff, and the config's replaces it.
    routes_around_its_cutoff::<ark_bn254::g2::Config>(None);
    routes_around_its_cutoff::<ark_bls12_381::g1::Config>(Some(5));
}

/// Calls of cutoff - 1, cutoff and cutoff + 1 points on a CPU engine of group C:
/// double-and-add below the cutoff (`set`, or the group's own), arkworks from it, each
/// equal to arkworks' sum.
fn routes_around_its_cutoff<C: GpuCurve>(set: Option<usize>) {
    let config = MsmConfig {
        small_msm_cutoff: set,
        ..Default::default()
    };
    let e = GpuMsm::<C>::with_config(config).expect("a CPU engine");
    let cutoff = e.small_msm_cutoff();
    assert_eq!(cutoff, set.unwrap_or(C::SMALL_MSM_CUTOFF), "{}", C::NAME);
    for (n, want) in [
        (cutoff - 1, Backend::CpuDoubleAndAdd),
        (cutoff, Backend::CpuArkworks),
        (cutoff + 1, Backend::CpuArkworks),
    ] {
        let bases = random_bases::<C>(n, 3);
        let scalars = random_scalars(n, 4);
        let (got, rep) = e.msm_with_report(&bases, &scalars).unwrap();
        assert_eq!(got, Projective::<C>::msm(&bases, &scalars).unwrap());
        assert_eq!(rep.backend, want, "{} n = {n}", C::NAME);
        let said = format!("small_msm_cutoff = {cutoff}");
        assert!(rep.route.ends_with(&said), "{}", rep.route);
    }
}
