//! Memory admission and device loss: concurrent calls under a small memory budget, calls
//! larger than the budget, and recovery from a lost device, each against arkworks.

mod common;

use std::sync::{Arc, Barrier};

use ark_bls12_377::{Fr, G1Affine, G1Projective};
use common::reference;
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::{
    Backend, CalibrationSource, DeviceLoss, GpuMsm, MemoryBudget, MsmConfig, MsmError, SelfTest,
};

/// Bytes of the small budget: one 1000-point call needs about 2.3 MB (Limbs32 at c = 8
/// on lavapipe), so two of them never fit at once and 8 threads must wait for each other.
const SMALL_BUDGET: u64 = 4 << 20;

/// An engine forced to the GPU path, with `config`'s budget, self-test and loss policy.
fn engine(config: MsmConfig) -> GpuMsm {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir());
    }
    GpuMsm::with_config(MsmConfig {
        force_backend: Some(Backend::Gpu),
        calibration: CalibrationSource::Defaults,
        ..config
    })
    .unwrap_or_else(|e| panic!("GPU tests need a wgpu adapter: {e}"))
}

fn with_budget(bytes: u64, self_test: SelfTest) -> GpuMsm {
    engine(MsmConfig {
        memory_budget: MemoryBudget::Bytes(bytes),
        self_test,
        ..Default::default()
    })
}

fn with_loss(device_loss: DeviceLoss) -> GpuMsm {
    engine(MsmConfig {
        device_loss,
        ..Default::default()
    })
}

/// One thread's calls: a size, two scalar vectors and their sums.
type Case = (usize, Vec<Fr>, Vec<Fr>, G1Projective, G1Projective);

#[test]
fn concurrent_calls_share_a_small_budget() {
    let e = with_budget(SMALL_BUDGET, SelfTest::Refuse);
    let bases = random_bases(1000, 1);
    let resident = e.load_bases(&bases).unwrap();
    // Each thread: a one-shot call, a resident prefix and a batch of two, of mixed sizes.
    let sizes = [100, 1000, 300, 1000, 16, 700, 1000, 300];
    let cases: Vec<Case> = sizes
        .iter()
        .enumerate()
        .map(|(t, &n)| {
            let s = random_scalars(n, 10 + t as u64);
            let s2 = random_scalars(1000 - n / 2, 20 + t as u64);
            let want = reference(&bases[..n], &s);
            let want2 = reference(&bases[..s2.len()], &s2);
            (n, s, s2, want, want2)
        })
        .collect();
    let start = Arc::new(Barrier::new(sizes.len()));
    std::thread::scope(|scope| {
        for (n, s, s2, want, want2) in &cases {
            let (e, bases, resident, start) = (&e, &bases, &resident, start.clone());
            scope.spawn(move || {
                start.wait();
                assert_eq!(e.msm(&bases[..*n], s).unwrap(), *want, "one-shot {n}");
                assert_eq!(e.msm(resident, s).unwrap(), *want, "resident {n}");
                let got = e.batch_msm(resident, &[s, s2]).unwrap();
                assert_eq!(got, vec![*want, *want2], "batch {n}");
            });
        }
    });
    let u = e.memory_usage().unwrap();
    eprintln!("memory under a {SMALL_BUDGET}-byte budget after 8 threads: {u:?}");
    assert_eq!(u.budget, SMALL_BUDGET);
    assert!(u.peak <= SMALL_BUDGET, "{u:?}");
    assert!(u.waits > 0, "8 threads never waited for room: {u:?}");
    assert_eq!(u.in_flight, 0, "{u:?}");
    assert_eq!(u.resident, resident.device_bytes());
    drop(resident);
    assert_eq!(e.memory_usage().unwrap().resident, 0);

    // One call larger than the whole budget runs in slices that each fit.
    let n = 3000;
    let big = random_bases(n, 2);
    let s = random_scalars(n, 3);
    let cap = e.max_slice_points(n).unwrap();
    assert!(cap > 0 && cap < n, "cap {cap}");
    let (got, rep) = e.msm_with_report(&big, &s).unwrap();
    assert_eq!(got, reference(&big, &s));
    assert!(rep.route.contains("slices"), "{}", rep.route);
    assert!(e.memory_usage().unwrap().peak <= SMALL_BUDGET);

    // A resident set in several parts: every call on it fits beside the whole set.
    let n = 20000;
    let big = random_bases(n, 4);
    let s = random_scalars(n, 5);
    let set = e.load_bases(&big).unwrap();
    assert!(set.part_len() < n / 2, "parts of {}", set.part_len());
    let (got, rep) = e.msm_with_report(&set, &s).unwrap();
    assert_eq!(got, reference(&big, &s));
    assert!(rep.route.contains("slices"), "{}", rep.route);
    assert!(e.memory_usage().unwrap().peak <= SMALL_BUDGET);
}

#[test]
fn what_cannot_fit_the_budget_is_refused_before_any_work() {
    // 64 KiB: less than one call's buckets at any window size the cost model picks.
    let e = with_budget(64 << 10, SelfTest::Off);
    let bases: Vec<G1Affine> = random_bases(50, 4);
    let s = random_scalars(50, 5);
    assert_eq!(e.max_slice_points(50), Some(0));
    assert!(matches!(e.msm(&bases, &s), Err(MsmError::InputTooLarge(_))));
    let big = random_bases(1000, 6);
    assert!(matches!(
        e.load_bases(&big),
        Err(MsmError::InputTooLarge(_))
    ));
    // Small resident sets fit; a call on them that cannot is refused, not run.
    let r = e.load_bases(&bases).unwrap();
    assert!(matches!(e.msm(&r, &s), Err(MsmError::InputTooLarge(_))));
    let u = e.memory_usage().unwrap();
    assert!(u.peak <= 64 << 10 && u.in_flight == 0, "{u:?}");
}

#[test]
fn a_lost_device_is_recreated_by_the_next_call() {
    let e = with_loss(DeviceLoss::Recreate);
    let n = 200;
    let bases = random_bases(n, 7);
    let s = random_scalars(n, 8);
    let s2 = random_scalars(n / 2, 9);
    let want = reference(&bases, &s);
    let want2 = reference(&bases[..n / 2], &s2);
    let resident = e.load_bases(&bases).unwrap();
    assert_eq!(e.msm(&resident, &s).unwrap(), want);

    // A validation error in a call's submission is that call's typed error; its buffers
    // are given back and the next call is right.
    e.inject_gpu_error_in_next_call();
    match e.msm(&resident, &s) {
        Err(MsmError::Gpu(m)) => assert!(m.contains("validation"), "{m}"),
        other => panic!("a call with a validation error returned {other:?}"),
    }
    assert_eq!(e.memory_usage().unwrap().in_flight, 0);
    assert_eq!(e.msm(&resident, &s).unwrap(), want);
    assert_eq!(e.devices_recreated(), 0);

    // Lost while a call is in flight: that call fails, typed, with no sum.
    e.inject_device_loss_in_next_call();
    match e.msm(&bases, &s) {
        Err(MsmError::DeviceLost(_)) => {}
        other => panic!("a call on a lost device returned {other:?}"),
    }
    // The next call makes a new device (and runs the known-answer test on it).
    assert_eq!(e.msm(&bases, &s).unwrap(), want);
    assert_eq!(e.devices_recreated(), 1);
    // Bases loaded before the loss still give the right sums (uploaded by each call) ...
    let (got, rep) = e.msm_with_report(&resident, &s).unwrap();
    assert_eq!(got, want);
    assert_eq!(rep.backend, Backend::Gpu);
    assert_eq!(
        e.batch_msm(&resident, &[&s, &s2]).unwrap(),
        vec![want, want2]
    );
    // ... and loading them again makes them resident on the new device.
    let again = e.load_bases(&bases).unwrap();
    assert_eq!(e.msm(&again, &s).unwrap(), want);

    // Lost between calls: the next call recovers at once.
    e.inject_device_loss();
    assert_eq!(e.batch_msm(&again, &[&s2, &s]).unwrap(), vec![want2, want]);
    assert_eq!(e.devices_recreated(), 2);
    assert_eq!(e.msm(&again, &s).unwrap(), want);
}

#[test]
fn a_lost_device_can_fall_back_to_the_cpu() {
    let e = with_loss(DeviceLoss::FallBackToCpu);
    let n = 100;
    let bases = random_bases(n, 11);
    let s = random_scalars(n, 12);
    let want = reference(&bases, &s);
    e.inject_device_loss_in_next_call();
    assert!(matches!(e.msm(&bases, &s), Err(MsmError::DeviceLost(_))));
    let (got, rep) = e.msm_with_report(&bases, &s).unwrap();
    assert_eq!(got, want);
    assert_eq!(rep.backend, Backend::CpuArkworks);
    assert!(rep.route.contains("lost"), "{}", rep.route);
    let r = e.load_bases(&bases).unwrap();
    assert_eq!(e.msm(&r, &s).unwrap(), want);
    assert_eq!(e.devices_recreated(), 0);
}
