//! A G2 (BN254's, the quickest to build) under concurrency, device loss and a device
//! shared with a G1: the same generic engine code as BLS12-377 G1's `reliability.rs`, on
//! coordinates of F_p^2, with the group's own known-answer test and resident sets.

use ark_bn254::{Fr, G2Affine, G2Projective};
use ark_ec::VariableBaseMSM;
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::{DeviceLoss, GpuMsm, MsmConfig};

use crate::common::TestCurve;

type C = ark_bn254::g2::Config;

fn reference(bases: &[G2Affine], scalars: &[Fr]) -> G2Projective {
    G2Projective::msm(bases, scalars).expect("equal lengths")
}

/// Four threads, each calling one-shot, resident, in slices and in a batch on the shared
/// BN254 G2 engine (and an engine of its device that slices every call): every sum is
/// arkworks', and nothing is left in flight.
#[test]
fn bn254_g2_concurrent_calls_of_every_shape_match_arkworks() {
    let e = C::engine();
    let sliced = e
        .reconfigured(MsmConfig {
            max_slice_points: Some(16),
            ..e.config().clone()
        })
        .unwrap();
    let n = 40;
    let bases = random_bases::<C>(n, 60);
    let set = e.load_bases(&bases).unwrap();
    let scalars: Vec<Vec<Fr>> = (0..4).map(|t| random_scalars(n, 61 + t)).collect();
    let want: Vec<G2Projective> = scalars.iter().map(|s| reference(&bases, s)).collect();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (e, sliced, bases, set) = (&e, &sliced, &bases, &set);
            let (scalars, want) = (&scalars, &want);
            scope.spawn(move || {
                for k in 0..4 {
                    let i = (t + k) % 4;
                    let s = &scalars[i][..];
                    let (what, got) = match (t + k) % 4 {
                        0 => ("one-shot", e.msm(&bases[..], s)),
                        1 => ("resident", e.msm(set, s)),
                        2 => ("sliced", sliced.msm(&bases[..], s)),
                        _ => ("batch", e.batch_msm(set, &[s, s]).map(|v| v[1])),
                    };
                    assert_eq!(got.unwrap(), want[i], "thread {t}: {what}");
                }
            });
        }
    });
    assert_eq!(e.memory_usage().unwrap().in_flight, 0);
}

/// A BN254 G2 engine on the device of a BLS12-377 G1 engine, both made for this test
/// (`GpuMsm::on_device_of`, as a prover holds its G1 and G2 engines; here two curves, and
/// the Edwards profile beside a Weierstrass one, so that nothing of one context fits the
/// other by chance):
/// - one memory budget: a set either loads counts in both engines' usage, and calls that
///   alternate between the groups, one-shot and resident, take each other's idle
///   workspaces and are right;
/// - a configuration that would need another device is refused;
/// - the G2's device is lost in a call and between calls, the G1's sequence
///   (`reliability::lost_devices_are_recreated`): the call in flight fails typed (no sum),
///   the next call makes a new device (and runs the group's known-answer test on it) and is
///   right, and sets loaded before the loss (with shifted copies too) or again after it give
///   the right sums;
/// - the G1 engine, on the lost device all along, joins the G2's newest device at its next
///   call instead of opening one of its own.
#[test]
fn bn254_g2_on_a_bls12_377_g1_device_shares_its_budget_and_its_replacements() {
    type G1 = ark_bls12_377::g1::Config;
    let g1: GpuMsm<G1> = crate::common::forced_engine(MsmConfig {
        device_loss: DeviceLoss::Recreate,
        ..Default::default()
    });
    let g2 = GpuMsm::<C>::on_device_of(&g1, g1.config().clone()).unwrap();
    let other_budget = MsmConfig {
        memory_budget: gpu_msm::MemoryBudget::Bytes(1 << 28),
        ..g1.config().clone()
    };
    assert!(matches!(
        GpuMsm::<C>::on_device_of(&g1, other_budget),
        Err(gpu_msm::MsmError::InvalidConfig(_))
    ));

    let resident = |e: &GpuMsm<C>| e.memory_usage().unwrap().resident;
    let (b1, s1) = (
        random_bases::<G1>(40, 70),
        random_scalars::<ark_bls12_377::Fr>(40, 71),
    );
    let want1 = ark_bls12_377::G1Projective::msm(&b1, &s1).unwrap();
    let set1 = g1.load_bases(&b1).unwrap();
    assert!(resident(&g2) > 0);
    assert_eq!(resident(&g2), g1.memory_usage().unwrap().resident);
    let (b2, s2) = (random_bases::<C>(40, 72), random_scalars::<Fr>(40, 73));
    let want2 = reference(&b2, &s2);
    // Each engine's first set: the same number on each of the two contexts, which the
    // bind groups cached in a shared workspace must tell apart.
    let set2 = g2.load_bases(&b2).unwrap();
    for _ in 0..2 {
        assert_eq!(g1.msm(&set1, &s1).unwrap(), want1);
        assert_eq!(g2.msm(&set2, &s2).unwrap(), want2);
        assert_eq!(g2.msm(&b2[..], &s2).unwrap(), want2);
        assert_eq!(g1.msm(&b1[..], &s1).unwrap(), want1);
    }

    crate::reliability::lost_devices_are_recreated(&g2);
    assert_eq!(g1.msm(&set1, &s1).unwrap(), want1);
    assert_eq!(g1.devices_recreated(), 1);
    let _again = g1.load_bases(&b1).unwrap();
    assert!(resident(&g2) > 0, "the G1 engine joined the G2's device");
    assert_eq!(resident(&g2), g1.memory_usage().unwrap().resident);
    assert_eq!(g2.msm(&b2[..], &s2).unwrap(), want2);
}
