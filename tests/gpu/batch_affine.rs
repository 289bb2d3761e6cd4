//! Batch-affine accumulation (`MsmConfig::accumulation`, `shaders/batch_affine.wgsl`): a
//! thread sums `BATCH_LANES` slices at once in affine coordinates, one inversion a step. Its
//! sums against arkworks: around each thread's lane count (127, 128, 129 and 257 slices), on
//! adversarial scalars and on bases that meet every case of the affine law (a run's first
//! base, P + Q, P + P, P + (-P), a point of order 2 doubled), one-shot, sliced, resident, in
//! device parts and batched; bases outside G1 give the integer sum or `BaseNotInSubgroup`;
//! in both short Weierstrass profiles on BLS12-377 G1 and in the wide one on the other
//! curve groups (three of them with `GPU_MSM_FULL_TESTS=1`). Its configuration rules: the Edwards profile refuses it, the default
//! profile falls back to `Limbs29`, `reconfigured` keeps it.

use std::sync::OnceLock;

use crate::bad_inputs::{every_route, outside_g1};
use crate::common;

use ark_bls12_377::{Fr, G1Affine};
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::{CurveGroup, VariableBaseMSM};
use ark_ff::{One, Zero};

use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::internals::cpu::double_and_add;
use gpu_msm::internals::gpu::sort::{accumulation_threads, BATCH_LANES};
use gpu_msm::{Accumulation, Arithmetic, GpuCurve, GpuMsm, MsmConfig, MsmError};

/// The window size of the engines here: 32 windows on BLS12-377, so n scalars make
/// ceil(n / 2) slices.
const C: u32 = 8;

/// The batch-affine engine of profile `a` (`Limbs29` or `Limbs13`) on BLS12-377 G1, at
/// c = [`C`], built on first use.
fn engine(a: Arithmetic) -> &'static GpuMsm {
    static WIDE: OnceLock<GpuMsm> = OnceLock::new();
    static PORTABLE: OnceLock<GpuMsm> = OnceLock::new();
    let cell = match a {
        Arithmetic::Limbs13 => &PORTABLE,
        _ => &WIDE,
    };
    cell.get_or_init(|| common::forced_engine(config(a)))
}

fn config(a: Arithmetic) -> MsmConfig {
    MsmConfig {
        arithmetic: Some(a),
        accumulation: Accumulation::BatchAffine,
        window_bits: Some(C),
        ..Default::default()
    }
}

/// n bases meeting each case of the affine law within a bucket: the identity (never an
/// entry), duplicates (P + P) and negations (P + (-P)) beside each other and a thread's
/// lanes apart.
fn awkward_bases(n: usize, seed: u64) -> Vec<G1Affine> {
    let mut b = random_bases(n, seed);
    b[1] = G1Affine::identity();
    b[2] = b[3];
    b[4] = -b[5];
    b[n - 1] = b[n - 2];
    b[n / 2] = -b[7];
    b[n / 3] = b[8];
    b
}

/// The scalar counts whose one-shot calls make `slices` slices at c = [`C`].
fn n_for_slices(slices: u32) -> usize {
    let w = gpu_msm::internals::digits::num_windows(C, common::bits());
    (1..)
        .find(|&n| accumulation_threads(n, w) == slices)
        .expect("some n")
}

/// Around the lane count of a thread, in both profiles: arkworks' sums one-shot, resident
/// and batched, on adversarial scalars.
#[test]
fn batch_affine_sums_equal_arkworks_around_each_lane_count() {
    let lanes = BATCH_LANES;
    for (case, slices) in [lanes - 1, lanes, lanes + 1, 2 * lanes + 1]
        .into_iter()
        .enumerate()
    {
        let n = n_for_slices(slices);
        let bases = awkward_bases(n, 7100 + case as u64);
        for (k, (what, scalars)) in common::adversarial_scalars(n, 7110, n - 3)
            .into_iter()
            .enumerate()
        {
            // Every case in the wide profile, every other one in the portable one.
            let mut profiles = vec![Arithmetic::Limbs29];
            if (case + k) % 2 == 0 || common::full_tests() {
                profiles.push(Arithmetic::Limbs13);
            }
            let want = common::reference(&bases, &scalars);
            for a in profiles {
                let e = engine(a);
                let at = format!("{slices} slices, n = {n}, {what}, {a:?}");
                assert_eq!(e.msm(&bases, &scalars), Ok(want), "{at}, one-shot");
                let set = e.load_bases(&bases).unwrap();
                assert_eq!(e.msm(&set, &scalars), Ok(want), "{at}, resident");
                let got = e.batch_msm(&set, &[&scalars, &scalars[..n / 2]]).unwrap();
                let half = common::reference(&bases[..n / 2], &scalars[..n / 2]);
                assert_eq!(got, vec![want, half], "{at}, batch");
            }
        }
    }
}

/// Long runs of one bucket (every scalar equal, so a thread's lanes all sum one bucket's
/// entries), P + P and P + (-P) in one run, and every route of `bad_inputs` (sliced, device
/// parts, batches), in both profiles.
#[test]
fn batch_affine_sums_equal_arkworks_on_every_route() {
    let n = 300;
    let mut bases = awkward_bases(n, 7120);
    // One base many times: its run doubles, then adds itself, then cancels with -P.
    let p = bases[19];
    bases[20..60].fill(p);
    bases[60..70].fill(-p);
    let equal = vec![random_scalars::<Fr>(1, 7121)[0]; n];
    let mut mixed = random_scalars::<Fr>(n, 7122);
    for s in &mut mixed[100..200] {
        *s = Fr::one();
    }
    mixed[0] = -Fr::one();
    for (k, scalars) in [equal, mixed].into_iter().enumerate() {
        let want = common::reference(&bases, &scalars);
        // The portable profile on one case (both with `GPU_MSM_FULL_TESTS=1`).
        let mut profiles = vec![Arithmetic::Limbs29];
        if k == 1 || common::full_tests() {
            profiles.push(Arithmetic::Limbs13);
        }
        for a in profiles {
            for (route, got) in every_route(engine(a), &bases, &scalars) {
                assert_eq!(got, Ok(want), "case {k}, {route}, {a:?}");
            }
        }
    }
}

/// Bases outside G1 (of order 2, where the lane's doubling is the identity, of order 3, and
/// a random one), also P and -P + T (T of order 2) in one bucket, which the complete
/// projective formulas cannot add: the integer sum or `BaseNotInSubgroup` naming one of
/// them, on every route.
#[test]
fn batch_affine_outside_g1_gives_the_integer_sum_or_a_typed_error() {
    let n = 60;
    let bad = [10, 11, 41];
    for (i, (kind, p)) in outside_g1().into_iter().enumerate() {
        let mut b = random_bases(n, 7130 + i as u64);
        let mut s = random_scalars::<Fr>(n, 7131);
        // The point twice in one bucket (doubled), and the exceptional pair.
        b[10] = p;
        b[11] = p;
        s[11] = s[10];
        b[41] = (-b[40] + outside_g1()[1].1).into_affine();
        s[41] = s[40];
        let want = double_and_add(&b, &s);
        let a = [Arithmetic::Limbs29, Arithmetic::Limbs13][i % 2];
        for (route, got) in every_route(engine(a), &b, &s) {
            match got {
                Ok(g) => assert_eq!(g, want, "{kind}, {route}, {a:?}: a wrong sum"),
                Err(MsmError::BaseNotInSubgroup { index }) if bad.contains(&index) => {}
                Err(other) => panic!("{kind}, {route}, {a:?}: {other}"),
            }
        }
    }
}

/// arkworks' sums on every other curve group in the wide profile: adversarial scalars, and
/// bases with duplicates and negations.
fn other_group<G: GpuCurve>(seed: u64) {
    let e = common::forced_engine::<G>(config(Arithmetic::Limbs29));
    let n = 2 * BATCH_LANES as usize + 40;
    let mut bases: Vec<Affine<G>> = random_bases::<G>(n, seed);
    bases[3] = bases[4];
    bases[5] = -bases[6];
    bases[7] = Affine::<G>::identity();
    let random: Vec<gpu_msm::Fr<G>> = random_scalars(n, seed + 1);
    let cases = [
        vec![Zero::zero(); n],
        vec![One::one(); n],
        vec![-<gpu_msm::Fr<G> as One>::one(); n],
        vec![random[0]; n],
        random,
    ];
    let set = e.load_bases(&bases).unwrap();
    for (k, s) in cases.iter().enumerate() {
        let want = Projective::<G>::msm(&bases, s).unwrap();
        assert_eq!(e.msm(&bases, s), Ok(want), "{} case {k}, one-shot", G::NAME);
        assert_eq!(e.msm(&set, s), Ok(want), "{} case {k}, resident", G::NAME);
    }
}

/// A G1 over a 254-bit field and a G2 over a 381-bit one; the other three groups with
/// `GPU_MSM_FULL_TESTS=1` (an engine each: seconds of compilation on lavapipe).
#[test]
fn batch_affine_sums_equal_arkworks_on_every_other_curve_group() {
    other_group::<ark_bn254::g1::Config>(7140);
    other_group::<ark_bls12_381::g2::Config>(7143);
    if common::full_tests() {
        other_group::<ark_bls12_381::g1::Config>(7141);
        other_group::<ark_bn254::g2::Config>(7142);
        other_group::<ark_bls12_377::g2::Config>(7144);
    }
}

/// The Edwards profile has no batch-affine accumulation; the default profile becomes
/// `Limbs29` where it would be the Edwards one; `reconfigured` keeps the accumulation.
#[test]
fn batch_affine_configuration_rules() {
    common::runtime_dir();
    let edwards = GpuMsm::<ark_bls12_377::g1::Config>::with_config(MsmConfig {
        arithmetic: Some(Arithmetic::Limbs29Edwards),
        accumulation: Accumulation::BatchAffine,
        ..Default::default()
    });
    assert!(
        matches!(edwards, Err(MsmError::InvalidConfig(_))),
        "{edwards:?}"
    );
    let e = engine(Arithmetic::Limbs29);
    let other = e.reconfigured(MsmConfig {
        accumulation: Accumulation::Projective,
        ..e.config().clone()
    });
    assert!(
        matches!(other, Err(MsmError::InvalidConfig(_))),
        "{other:?}"
    );
    // The shared engine's default profile is the Edwards one on lavapipe: batch-affine
    // engines on that adapter pick the same field without it.
    if common::gpu_engine().arithmetic() == Some(Arithmetic::Limbs29Edwards) {
        let auto = common::forced_engine::<ark_bls12_377::g1::Config>(MsmConfig {
            accumulation: Accumulation::BatchAffine,
            ..Default::default()
        });
        assert_eq!(auto.arithmetic(), Some(Arithmetic::Limbs29));
        let b = random_bases(500, 7150);
        let s = random_scalars::<Fr>(500, 7151);
        assert_eq!(auto.msm(&b, &s), Ok(common::reference(&b, &s)));
    }
}
