//! Bad inputs on every route (issue 17): bases off the curve or outside G1, error indices in
//! the caller's numbering, and empty calls. Each result is compared with the exact error or
//! with the integer sum (each scalar taken as its integer in [0, r), `cpu::double_and_add`),
//! in every arithmetic profile, one-shot, sliced, resident, in device parts and batched.

use crate::common;

use ark_bls12_377::{Fq, Fr, G1Affine, G1Projective};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{BigInteger, Field, One, PrimeField, Zero};
use common::{default_engine, gpu_engine, profile_engines};
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::internals::cpu::double_and_add;
use gpu_msm::{GpuMsm, MsmConfig, MsmError};

/// Points of the calls below, and the slice (and device part) length that cuts them in three.
const N: usize = 60;
const SLICE: usize = 20;
/// Where the bad base sits: in the third slice, so that a slice's own numbering says 5.
const BAD: usize = 45;

type Outcome = Result<G1Projective, MsmError>;

/// One MSM on every route of `e`: one-shot, one-shot in slices of [`SLICE`], on resident
/// bases (whole, and in parts of [`SLICE`]) and as the second vector of a batch on each
/// resident set, after an empty one (a batch's error must name vector 1; it is unwrapped).
/// Calls of at most [`SLICE`] points skip the sliced routes, the same calls again.
fn every_route(e: &GpuMsm, bases: &[G1Affine], scalars: &[Fr]) -> Vec<(&'static str, Outcome)> {
    let sliced = e
        .reconfigured(MsmConfig {
            max_slice_points: Some(SLICE),
            ..e.config().clone()
        })
        .unwrap();
    let cut = scalars.len() > SLICE;
    let mut out = vec![("one-shot", e.msm(bases, scalars))];
    if cut {
        out.push(("sliced", sliced.msm(bases, scalars)));
    }
    let mut resident = vec![("resident", "batch", e)];
    if cut {
        resident.push(("resident parts", "batch on parts", &sliced));
    }
    for (name, batch, engine) in resident {
        let set = engine.load_bases(bases);
        out.push((name, set.clone().and_then(|b| engine.msm(&b, scalars))));
        let got = set.and_then(|b| engine.batch_msm(&b, &[&[], scalars]));
        let got = match got {
            Ok(v) => {
                assert_eq!(v[0], G1Projective::zero(), "an empty vector of a batch");
                Ok(v[1])
            }
            Err(MsmError::Batch { index: 1, source }) => Err(*source),
            Err(MsmError::Batch { index, source }) => panic!("batch vector {index}: {source}"),
            Err(other) => Err(other),
        };
        out.push((batch, got));
    }
    out
}

/// Ways to be off the curve, made from a G1 point p: a wrong y; x = -1, whose Edwards image
/// is (0, -1), a point of order 2 that the formulas add exactly; x with s (x + 1) = -1, where
/// the Edwards map is undefined; x = 0 and y = 0 with the other coordinate random;
/// coordinates equal to the point's plus p (the same field element, stored unreduced); and
/// all-ones words.
fn off_curve(p: G1Affine) -> Vec<(&'static str, G1Affine)> {
    let unreduced = |x: Fq| {
        let mut w = x.0;
        assert!(!w.add_with_carry(&Fq::MODULUS), "x + p fits 384 bits");
        Fq::new_unchecked(w)
    };
    let s_inv = gpu_msm::internals::gpu::edwards::constants::<ark_bls12_377::g1::Config>().s_inv;
    let all_ones = Fq::new_unchecked(ark_ff::BigInt([u64::MAX; 6]));
    let points = vec![
        ("y + 1", G1Affine::new_unchecked(p.x, p.y + Fq::one())),
        ("x = -1", G1Affine::new_unchecked(-Fq::one(), p.y)),
        ("u = -1", G1Affine::new_unchecked(-s_inv - Fq::one(), p.y)),
        ("x = 0", G1Affine::new_unchecked(Fq::zero(), p.y)),
        ("y = 0", G1Affine::new_unchecked(p.x, Fq::zero())),
        ("x + p", G1Affine::new_unchecked(unreduced(p.x), p.y)),
        ("y + p", G1Affine::new_unchecked(p.x, unreduced(p.y))),
        ("all ones", G1Affine::new_unchecked(all_ones, all_ones)),
    ];
    for (name, q) in &points {
        assert!(!q.is_zero(), "{name}");
    }
    points
}

/// Every base off the curve is `InvalidBase` with its index on every route, whatever its
/// scalar (zero included) and whatever the profile makes of it: each (kind, scalar) case on
/// one profile in turn, so that every case and every profile run (every case on every
/// profile with `GPU_MSM_FULL_TESTS=1`).
#[test]
fn bases_off_the_curve_are_invalid_on_every_route() {
    let bases = random_bases(N, 1700);
    let scalars = random_scalars(N, 1701);
    let want = Err(MsmError::InvalidBase { index: BAD });
    let mut case = 0;
    for (kind, bad) in off_curve(bases[BAD]) {
        let mut b = bases.clone();
        b[BAD] = bad;
        for k in [Fr::zero(), scalars[BAD]] {
            let mut s = scalars.clone();
            s[BAD] = k;
            for e in common::engines_for_case(case) {
                for (route, got) in every_route(e, &b, &s) {
                    let a = e.arithmetic();
                    assert_eq!(got, want, "{kind}, scalar {k}, {route}, {a:?}");
                }
            }
            case += 1;
            // The CPU paths: arkworks (default routing on a software adapter) and, below
            // the small-MSM cutoff, double-and-add.
            assert_eq!(default_engine().msm(&b, &s), want, "{kind}, CPU");
            let few = 5;
            let (mut b5, s5) = (b[..few].to_vec(), s[..few].to_vec());
            b5[3] = bad;
            let got = default_engine().msm(&b5, &s5);
            assert_eq!(got, Err(MsmError::InvalidBase { index: 3 }), "{kind}");
        }
    }
}

/// With the bucket lists made on the host (`BucketSort::Host`, and SRE), a call whose scalars
/// are all zero places nothing and uploads nothing: its bases off the curve are refused all
/// the same, whole and in the one slice whose scalars are all zero.
#[test]
fn bases_off_the_curve_are_invalid_when_nothing_is_added() {
    use gpu_msm::{SreOptions, SreStrategy};
    let mut b = random_bases(N, 1740);
    b[BAD] = off_curve(b[BAD])[0].1;
    let zeros = vec![Fr::zero(); N];
    let mut sparse = random_scalars(N, 1741);
    sparse[2 * SLICE..].fill(Fr::zero());
    let base = gpu_engine();
    for config in [
        MsmConfig {
            bucket_sort: gpu_msm::BucketSort::Host,
            ..base.config().clone()
        },
        MsmConfig {
            sre: gpu_msm::SreMode::On(SreOptions::new(SreStrategy::Indexed)),
            ..base.config().clone()
        },
    ] {
        for slice in [None, Some(SLICE)] {
            let e = base
                .reconfigured(MsmConfig {
                    max_slice_points: slice,
                    ..config.clone()
                })
                .unwrap();
            for s in [&zeros, &sparse] {
                let got = e.msm(&b, s);
                let what = format!(
                    "{:?} {:?}, slices {slice:?}",
                    config.bucket_sort, config.sre
                );
                assert_eq!(got, Err(MsmError::InvalidBase { index: BAD }), "{what}");
            }
        }
    }
}

/// A resident set loaded without the subgroup check keeps that fact: an engine that checks
/// (sharing the set) refuses its base outside G1, and the CPU path, which cannot assume G1,
/// gives the integer sum with a scalar near r.
#[test]
fn resident_sets_loaded_unchecked_are_checked_when_asked() {
    let (kind, p) = outside_g1()[2];
    let mut b = random_bases(N, 1750);
    b[BAD] = p;
    let mut s = random_scalars(N, 1751);
    s[BAD] = -Fr::one();
    let want = double_and_add(&b, &s);
    let set = gpu_engine().load_bases(&b).unwrap();
    let strict = gpu_engine()
        .reconfigured(MsmConfig {
            validate_subgroup: true,
            ..gpu_engine().config().clone()
        })
        .unwrap();
    let refused = Err(MsmError::BaseNotInSubgroup { index: BAD });
    assert_eq!(strict.msm(&set, &s), refused, "{kind}");
    assert_eq!(
        strict.msm(&set, &s[..BAD]),
        Ok(double_and_add(&b[..BAD], &s[..BAD]))
    );
    for backend in [
        gpu_msm::Backend::CpuArkworks,
        gpu_msm::Backend::CpuDoubleAndAdd,
    ] {
        for e in [gpu_engine(), &strict] {
            let cpu = e
                .reconfigured(MsmConfig {
                    force_backend: Some(backend),
                    ..e.config().clone()
                })
                .unwrap();
            let got = cpu.msm(&set, &s);
            match e.config().validate_subgroup {
                true => assert_eq!(got, refused, "{kind}, {backend:?}, checking"),
                false => assert_eq!(got, Ok(want), "{kind}, {backend:?}"),
            }
        }
    }
}

/// A point of order 2 other than (-1, 0): x^2 - x + 1 = 0, y = 0.
fn other_order_two() -> G1Affine {
    let root = (-Fq::from(3u64)).sqrt().expect("p = 1 mod 3");
    G1Affine::new_unchecked((Fq::one() + root) / Fq::from(2u64), Fq::zero())
}

/// Points on the curve outside G1: of order 2 ((-1, 0) and another), of order 3 ((0, 1)),
/// and one with a random-looking x whose cofactor is not cleared.
fn outside_g1() -> Vec<(&'static str, G1Affine)> {
    let random = common::outside_subgroup(5);
    let points = vec![
        ("(-1, 0)", G1Affine::new_unchecked(-Fq::one(), Fq::zero())),
        ("other order 2", other_order_two()),
        ("(0, 1)", G1Affine::new_unchecked(Fq::zero(), Fq::one())),
        ("random", random),
    ];
    for (name, p) in &points {
        assert!(
            p.is_on_curve() && !p.is_in_correct_subgroup_assuming_on_curve(),
            "{name}"
        );
    }
    points
}

/// The integer sum or `BaseNotInSubgroup { index }`: nothing else is allowed.
fn true_sum_or_refused(got: &Outcome, want: G1Projective, index: usize, what: &str) {
    match got {
        Ok(g) => assert_eq!(*g, want, "{what}: a wrong sum"),
        Err(MsmError::BaseNotInSubgroup { index: i }) => assert_eq!(*i, index, "{what}"),
        Err(other) => panic!("{what}: {other}"),
    }
}

/// Bases on the curve but outside G1 give the integer sum or `BaseNotInSubgroup` on every
/// route and profile, n = 1 included, with scalars near r too (arkworks' MSM multiplies
/// r - k as -k, which outside G1 is another point). Each case runs on one profile in turn
/// (on every profile with `GPU_MSM_FULL_TESTS=1`); the CPU path and the subgroup check on
/// every case.
#[test]
fn bases_outside_g1_give_the_integer_sum_or_a_typed_error() {
    let r_minus = |k: u64| -Fr::from(k);
    let mut case = 0;
    for (kind, p) in outside_g1() {
        for (n, at) in [(1, 0), (N, BAD)] {
            let mut b = random_bases(n, 1710);
            b[at] = p;
            let mut ks = vec![r_minus(1), random_scalars(1, 1711)[0]];
            if n == 1 {
                ks.extend([Fr::zero(), Fr::from(2u64), Fr::from(3u64)]);
            }
            for k in ks {
                let mut s = random_scalars(n, 1712);
                s[at] = k;
                if n > 1 {
                    s[at - 1] = r_minus(1);
                }
                let want = double_and_add(&b, &s);
                for e in common::engines_for_case(case) {
                    for (route, got) in every_route(e, &b, &s) {
                        let what =
                            format!("{kind}, n = {n}, k = {k}, {route}, {:?}", e.arithmetic());
                        true_sum_or_refused(&got, want, at, &what);
                    }
                }
                case += 1;
                let got = default_engine().msm(&b, &s);
                assert_eq!(got, Ok(want), "{kind}, n = {n}, k = {k}, the CPU path");
            }
            let strict = gpu_engine()
                .reconfigured(MsmConfig {
                    validate_subgroup: true,
                    max_slice_points: Some(SLICE),
                    ..gpu_engine().config().clone()
                })
                .unwrap();
            let refused = Err(MsmError::BaseNotInSubgroup { index: at });
            let s = random_scalars(n, 1713);
            for (route, got) in every_route(&strict, &b, &s) {
                assert_eq!(got, refused, "{kind}, n = {n}, validate_subgroup, {route}");
            }
        }
    }
}

/// The formulas' exceptional case met at base 45 (P and -P + T in one bucket, T of order 2),
/// in the third slice and the third device part: the error names base 45, not 5, and a batch
/// names its vector.
#[test]
fn errors_name_bases_in_the_callers_numbering() {
    let mut b = random_bases(N, 1720);
    let mut s = random_scalars(N, 1721);
    b[BAD] = (-b[BAD - 1] + other_order_two()).into_affine();
    s[BAD] = s[BAD - 1];
    let want = double_and_add(&b, &s);
    for base in profile_engines() {
        // 128 buckets a window: the two points share a bucket alone in most windows, so the
        // GPU meets the case.
        let e = base
            .reconfigured(MsmConfig {
                window_bits: Some(8),
                ..base.config().clone()
            })
            .unwrap();
        let a = e.arithmetic();
        for (route, got) in every_route(&e, &b, &s) {
            assert_eq!(
                got,
                Err(MsmError::BaseNotInSubgroup { index: BAD }),
                "{route}, {a:?}"
            );
        }
        let sliced = e
            .reconfigured(MsmConfig {
                max_slice_points: Some(SLICE),
                ..e.config().clone()
            })
            .unwrap();
        let set = sliced.load_bases(&b).unwrap();
        let got = sliced.batch_msm(&set, &[&s[..10], &s]);
        let source = Box::new(MsmError::BaseNotInSubgroup { index: BAD });
        assert_eq!(got, Err(MsmError::Batch { index: 1, source }), "{a:?}");
    }
    assert_eq!(default_engine().msm(&b, &s), Ok(want), "the CPU path");
}

/// A base off the curve is named wherever it sits, also past a slice or a device's share
/// that meets the formulas' exceptional case first (bases 5 and 4: P and -P + T in one
/// bucket): `InvalidBase` at 45, never `BaseNotInSubgroup` at 5 (the soak of issue 46 met it
/// in a sliced call). Every route, several devices, each profile.
#[test]
fn a_base_off_the_curve_is_named_before_one_outside_g1() {
    let mut b = random_bases(N, 1730);
    let mut s = random_scalars(N, 1731);
    b[5] = (-b[4] + other_order_two()).into_affine();
    s[5] = s[4];
    b[BAD] = G1Affine::new_unchecked(b[BAD].x, b[BAD].y + Fq::one());
    let invalid = Err(MsmError::InvalidBase { index: BAD });
    let mut engines = profile_engines();
    engines.push(crate::several::three());
    for base in engines {
        let e = base
            .reconfigured(MsmConfig {
                window_bits: Some(8),
                ..base.config().clone()
            })
            .unwrap();
        for (route, got) in every_route(&e, &b, &s) {
            assert_eq!(
                got,
                invalid,
                "{route}, {:?}, {} devices",
                e.arithmetic(),
                e.device_names().len()
            );
        }
    }
    assert_eq!(default_engine().msm(&b, &s), invalid, "the CPU path");
}

/// n = 0 is the zero point on every route and call shape: one-shot, resident (also on a set
/// loaded empty), batches of empty vectors, whatever the routing picks (forced, default, or
/// a calibration that sends n = 0 to the GPU), in every profile.
#[test]
fn empty_calls_are_the_zero_point() {
    let bases = random_bases(30, 1730);
    let mut engines: Vec<GpuMsm> = Vec::new();
    for e in profile_engines() {
        engines.push(
            e.reconfigured(MsmConfig {
                force_backend: None,
                calibration: common::gpu_from(gpu_engine(), 0, "gpu-from-zero.json"),
                ..e.config().clone()
            })
            .unwrap(),
        );
        engines.push(e.reconfigured(e.config().clone()).unwrap());
    }
    engines.push(
        default_engine()
            .reconfigured(default_engine().config().clone())
            .unwrap(),
    );
    let zero = G1Projective::zero();
    let empty: &[Fr] = &[];
    for e in &engines {
        let what = format!("{:?}, {:?}", e.arithmetic(), e.config().calibration);
        let (got, rep) = e.msm_with_report(&bases[..0], empty).unwrap();
        assert_eq!(got, zero, "{what}");
        assert!(rep.route.contains("n = 0"), "{what}: {}", rep.route);
        assert_eq!(e.msm(&Vec::<G1Affine>::new(), empty), Ok(zero), "{what}");
        let set = e.load_bases(&bases).unwrap();
        assert_eq!(e.msm(&set, empty), Ok(zero), "{what}, resident");
        let got = e.batch_msm(&set, &[empty, &random_scalars(3, 1731), empty]);
        let got = got.unwrap_or_else(|err| panic!("{what}: {err}"));
        assert_eq!((got[0], got[2]), (zero, zero), "{what}, batch");
        assert_eq!(e.batch_msm(&set, &[]), Ok(vec![]), "{what}, no vectors");
        let none = e.load_bases(&[]).unwrap();
        assert_eq!(e.msm(&none, empty), Ok(zero), "{what}, an empty set");
        assert_eq!(e.batch_msm(&none, &[empty, empty]), Ok(vec![zero, zero]));
        assert_eq!(
            e.msm(&none, &[Fr::one()]),
            Err(MsmError::LengthMismatch {
                bases: 0,
                scalars: 1
            })
        );
    }
}
