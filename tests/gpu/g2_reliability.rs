//! Concurrency and device loss on a G2 (BN254's, the G2 the default run builds): the same
//! generic engine code as BLS12-377 G1's `reliability.rs`, on coordinates of F_p^2, with
//! the group's own known-answer test and resident sets.

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

/// A BN254 G2 engine of its own whose device is lost in a call and between calls, the G1's
/// sequence (`reliability::lost_devices_are_recreated`): the call in flight fails typed (no
/// sum), the next call makes a new device (and runs the group's known-answer test on it)
/// and is right, and sets loaded before the loss (with shifted copies too) or again after
/// it give the right sums.
#[test]
fn bn254_g2_lost_device_is_recreated_by_the_next_call() {
    let e: GpuMsm<C> = crate::common::forced_engine(MsmConfig {
        device_loss: DeviceLoss::Recreate,
        ..Default::default()
    });
    crate::reliability::lost_devices_are_recreated(&e);
}
