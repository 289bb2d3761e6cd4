//! Resident sets stored with shifted copies (`Precompute`): every profile, factors around
//! the window count, adversarial scalars, identity and duplicate bases, prefixes, parts,
//! batches and SRE, against arkworks; bases of small order outside G1 never give a wrong sum.

use crate::common;

use ark_bls12_377::{Fr, G1Affine, G1Projective};
use ark_ec::{AdditiveGroup, AffineRepr, CurveGroup};
use ark_ff::{One, PrimeField, Zero};
use common::reference;
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::internals::digits::{bucket_windows, num_windows};
use gpu_msm::internals::gpu::Shift;
use gpu_msm::{GpuMsm, LoadOptions, MsmConfig, MsmError, Precompute};

fn with(k: Precompute) -> LoadOptions {
    LoadOptions {
        precompute: k,
        ..Default::default()
    }
}

/// Scalars that break careless digit code ([`common::adversarial_scalars`]), the nonzero
/// one in the middle.
fn adversarial(n: usize, seed: u64) -> Vec<(&'static str, Vec<Fr>)> {
    common::adversarial_scalars(n, seed, n / 2)
}

/// Bases with the identity, a duplicate and a point beside its negation.
fn awkward_bases(n: usize, seed: u64) -> Vec<G1Affine> {
    let mut b = random_bases(n, seed);
    b[1] = G1Affine::identity();
    b[4] = b[3];
    b[6] = -b[5];
    b
}

/// One set: stored with the copies asked for (lowered to those a window reaches), every
/// prefix and scalar kind exact; a call over the whole set reads the copies, shorter ones
/// may take their own window (the report says which).
fn check_set(e: &GpuMsm, bases: &[G1Affine], k: u32, what: &str) {
    let set = e
        .load_bases_with(bases, with(Precompute::Factor(k)))
        .unwrap();
    let c = set.precomputed_window_bits().expect("copies");
    let k = Shift::new(c, k, common::bits()).copies();
    assert_eq!(set.precomputed_copies(), k, "{what}");
    assert!(k > 1 && k <= num_windows(c, common::bits()), "{what}");
    let n = bases.len();
    for m in [1, n / 2, n - 1, n] {
        let s = random_scalars(m, 30 + m as u64);
        let (got, rep) = e.msm_with_report(&set, &s).unwrap();
        assert_eq!(got, reference(&bases[..m], &s), "{what}, prefix {m}");
        if m == n || rep.precomputed_copies > 1 {
            assert_eq!(rep.precomputed_copies, k, "{what}: {}", rep.route);
            assert_eq!(rep.window_bits, Some(c), "{what}");
            assert_eq!(
                rep.num_windows,
                bucket_windows(c, k, common::bits()),
                "{what}"
            );
        }
    }
    for (name, s) in adversarial(n, 40) {
        assert_eq!(
            e.msm(&set, &s).unwrap(),
            reference(bases, &s),
            "{what}, {name}"
        );
    }
}

#[test]
fn precomputed_sets_match_arkworks_in_every_profile() {
    for e in common::profile_engines() {
        let a = e.arithmetic();
        let bases = awkward_bases(70, 20);
        let c = {
            let set = e
                .load_bases_with(&bases, with(Precompute::Factor(2)))
                .unwrap();
            set.precomputed_window_bits().unwrap()
        };
        for k in [3, num_windows(c, common::bits())] {
            check_set(e, &bases, k, &format!("{a:?}, k = {k}"));
        }
        // A one-point prefix is cheaper at its own window than over 2^15 buckets a window
        // of copies made for c = 16: it reads copy 0 alone.
        let wide = LoadOptions {
            precompute: Precompute::Factor(2),
            window_bits: Some(16),
        };
        let set = e.load_bases_with(&bases, wide).unwrap();
        assert_eq!(set.precomputed_copies(), 2);
        let one = random_scalars(1, 19);
        let (got, rep) = e.msm_with_report(&set, &one).unwrap();
        assert_eq!(got, reference(&bases[..1], &one), "{a:?}");
        assert_eq!(rep.precomputed_copies, 1, "{a:?}: {}", rep.route);
        // A configured window size fixes the set's: every window its own copy.
        let c8 = e
            .reconfigured(MsmConfig {
                window_bits: Some(8),
                ..e.config().clone()
            })
            .unwrap();
        check_set(
            &c8,
            &bases,
            num_windows(8, common::bits()),
            &format!("{a:?}, c = 8, k = W"),
        );
        // One copy is the set without copies.
        let plain = e
            .load_bases_with(&bases, with(Precompute::Factor(1)))
            .unwrap();
        assert_eq!(
            (plain.precomputed_copies(), plain.precomputed_window_bits()),
            (1, None)
        );
        // Auto: whatever it picks is exact.
        let auto = e.load_bases_with(&bases, with(Precompute::Auto)).unwrap();
        let s = random_scalars(70, 21);
        let (got, rep) = e.msm_with_report(&auto, &s).unwrap();
        assert_eq!(got, reference(&bases, &s), "{a:?}, auto");
        assert_eq!(rep.precomputed_copies, auto.precomputed_copies());
    }
}

#[test]
fn factors_outside_the_window_count_are_refused() {
    let e = common::gpu_engine();
    let bases = random_bases(8, 22);
    for k in [0, 255, u32::MAX] {
        assert!(
            matches!(
                e.load_bases_with(&bases, with(Precompute::Factor(k))),
                Err(MsmError::InvalidConfig(_))
            ),
            "k = {k}"
        );
    }
    let c8 = e
        .reconfigured(MsmConfig {
            window_bits: Some(8),
            ..e.config().clone()
        })
        .unwrap();
    let w = num_windows(8, common::bits());
    assert!(c8
        .load_bases_with(&bases, with(Precompute::Factor(w + 1)))
        .is_err());
    assert!(c8
        .load_bases_with(&bases, with(Precompute::Factor(w)))
        .is_ok());
    // A configured 1-bit window cannot take copies.
    let c1 = e
        .reconfigured(MsmConfig {
            window_bits: Some(1),
            ..e.config().clone()
        })
        .unwrap();
    assert!(matches!(
        c1.load_bases_with(&bases, with(Precompute::Factor(2))),
        Err(MsmError::InvalidConfig(_))
    ));
}

/// Parts (`max_slice_points`): calls across them (one pass), a batch and SRE (which reads
/// copy 0), on the set and on one the SRE engine loads (one part a call).
#[test]
fn precomputed_sets_in_parts_batches_and_sre() {
    use gpu_msm::{SreOptions, SreStrategy};
    let part = 20;
    let base = common::gpu_engine();
    let e = base
        .reconfigured(MsmConfig {
            max_slice_points: Some(part),
            ..base.config().clone()
        })
        .unwrap();
    let n = 2 * part + 5;
    let bases = awkward_bases(n, 23);
    let set = e
        .load_bases_with(&bases, with(Precompute::Factor(3)))
        .unwrap();
    let c = set.precomputed_window_bits().unwrap();
    let k = Shift::new(c, 3, common::bits()).copies();
    assert_eq!((set.part_len(), set.precomputed_copies()), (part, k));
    for m in [part - 1, part, part + 1, n] {
        let s = random_scalars(m, 24 + m as u64);
        let (got, rep) = e.msm_with_report(&set, &s).unwrap();
        assert_eq!(got, reference(&bases[..m], &s), "prefix {m}");
        let one_pass = rep.route.contains("device parts in one pass");
        assert_eq!(one_pass, m > part, "{}", rep.route);
        assert!(!rep.route.contains("slices"), "{}", rep.route);
    }
    let vectors = [random_scalars(n, 25), vec![Fr::one(); part + 3], vec![]];
    let refs: Vec<&[Fr]> = vectors.iter().map(|v| v.as_slice()).collect();
    for (s, got) in refs.iter().zip(e.batch_msm(&set, &refs).unwrap()) {
        assert_eq!(got, reference(&bases[..s.len()], s), "batch");
    }
    let sre = e
        .reconfigured(MsmConfig {
            sre: gpu_msm::SreMode::On(SreOptions::new(SreStrategy::Indexed)),
            ..e.config().clone()
        })
        .unwrap();
    let equal = vec![random_scalars(1, 26)[0]; n];
    assert_eq!(sre.msm(&set, &equal).unwrap(), reference(&bases, &equal));
    // Loaded by the engine with SRE: one part a call, SRE's merged points after it.
    let own = sre
        .load_bases_with(&bases, with(Precompute::Factor(3)))
        .unwrap();
    assert_eq!(own.parts_per_call(), 1);
    assert_eq!(sre.msm(&own, &equal).unwrap(), reference(&bases, &equal));
}

/// k P by double-and-add over the words of k (arkworks' own multiplication reduces k mod r
/// through the GLV endomorphism, which is exact in G1 only).
fn mul_plain(p: G1Projective, k: &[u64]) -> G1Projective {
    let mut acc = G1Projective::zero();
    for i in (0..64 * k.len()).rev() {
        acc.double_in_place();
        if (k[i / 64] >> (i % 64)) & 1 == 1 {
            acc += p;
        }
    }
    acc
}

/// A point of order 2^b, b >= 1 (from a point outside G1: r times the odd part of the
/// cofactor leaves its 2-power part).
fn order_two_power(b: u32) -> G1Affine {
    // The cofactor is 0x170b5d443 * 2^92.
    let odd = 0x170b5d443u64;
    for x0 in (3u64..).step_by(7).take(100) {
        let p = common::outside_subgroup(x0).into_group();
        let q = mul_plain(mul_plain(p, &Fr::MODULUS.0), &[odd]);
        let mut order = 0;
        let mut t = q;
        while !t.is_zero() {
            t.double_in_place();
            order += 1;
        }
        if order >= b {
            let mut t = q;
            for _ in 0..order - b {
                t.double_in_place();
            }
            return t.into_affine();
        }
    }
    panic!("no point of order 2^{b} in 100 tries")
}

/// Bases of small order outside G1 (whose copies would be the identity, or no point of the
/// Edwards model): the set falls back to no copies, and every sum is exact or refused.
#[test]
fn small_order_bases_never_give_a_wrong_sum() {
    let two = order_two_power(1);
    assert!(two.y.is_zero() && !two.is_zero());
    for e in common::profile_engines() {
        let a = e.arithmetic();
        for b in [1, 2, 7] {
            let mut bases = random_bases(30, 27);
            bases[9] = order_two_power(b);
            bases[17] = common::outside_subgroup(40);
            let set = e
                .load_bases_with(&bases, with(Precompute::Factor(4)))
                .unwrap();
            // Its copy 1 is the identity (or no Edwards point): no copies at all.
            assert_eq!(set.precomputed_copies(), 1, "{a:?}, order 2^{b}");
            for (name, s) in adversarial(30, 28).into_iter().step_by(3) {
                let want = gpu_msm::internals::cpu::naive_msm(&bases, &s);
                match e.msm(&set, &s) {
                    Ok(got) => assert_eq!(got, want, "{a:?}, order 2^{b}, {name}"),
                    Err(MsmError::BaseNotInSubgroup { .. }) => {}
                    Err(other) => panic!("{a:?}, order 2^{b}, {name}: {other}"),
                }
            }
        }
        // A base outside G1 of large order keeps its copies where the formulas are complete
        // (short Weierstrass); every sum is exact or refused.
        let mut bases = random_bases(30, 29);
        bases[3] = common::outside_subgroup(50);
        let set = e
            .load_bases_with(&bases, with(Precompute::Factor(4)))
            .unwrap();
        if a != Some(gpu_msm::Arithmetic::Limbs29Edwards) {
            let c = set.precomputed_window_bits().unwrap();
            assert_eq!(
                set.precomputed_copies(),
                Shift::new(c, 4, common::bits()).copies(),
                "{a:?}"
            );
        }
        for (name, s) in adversarial(30, 30) {
            let want = gpu_msm::internals::cpu::naive_msm(&bases, &s);
            match e.msm(&set, &s) {
                Ok(got) => assert_eq!(got, want, "{a:?}, outside G1, {name}"),
                Err(MsmError::BaseNotInSubgroup { .. }) => {}
                Err(other) => panic!("{a:?}, outside G1, {name}: {other}"),
            }
        }
    }
}

/// `LoadOptions::window_bits` outside 2 to `MAX_PRECOMPUTED_WINDOW_BITS` is refused.
#[test]
fn wide_window_options_are_checked() {
    let bases = random_bases(8, 31);
    let e = common::gpu_engine();
    for c in [0, 1, gpu_msm::MAX_PRECOMPUTED_WINDOW_BITS + 1] {
        let options = LoadOptions {
            precompute: Precompute::Auto,
            window_bits: Some(c),
        };
        assert!(
            matches!(
                e.load_bases_with(&bases, options),
                Err(MsmError::InvalidConfig(_))
            ),
            "c = {c}"
        );
    }
}

/// Wide copies on a small set, in every profile (the hook makes calls read the copies
/// where the cost model would not): c = 17 over two windows of buckets; on the default
/// profile also c = 20, one window whose segments are 32 buckets long; an empty set. The
/// adversarial scalar kinds are spread over the profiles (all of them on each with
/// `GPU_MSM_FULL_TESTS=1`).
#[test]
fn wide_shapes_in_every_profile() {
    let bases = awkward_bases(300, 34);
    // Lane 0 (zeros, one nonzero, random), lane 1 (ones, 0/1), lane 2 (r - 1, repeated):
    // each profile adds on the GPU.
    let all_kinds = adversarial(300, 35);
    let engines = common::profile_engines();
    for (lane, base) in engines.iter().enumerate() {
        let kinds = common::spread(&all_kinds, lane, engines.len());
        let e = GpuMsm::with_config(base.config().clone()).unwrap();
        e.always_read_copies();
        let a = e.arithmetic();
        let shapes: &[(u32, u32, u32)] = match a == common::gpu_engine().arithmetic() {
            true => &[(17, 8, 2), (20, 13, 1)],
            false => &[(17, 8, 2)],
        };
        for &(c, k, windows) in shapes {
            let options = LoadOptions {
                precompute: Precompute::Factor(k),
                window_bits: Some(c),
            };
            let set = e.load_bases_with(&bases, options).unwrap();
            for (name, s) in &kinds {
                let (got, rep) = e.msm_with_report(&set, s).unwrap();
                assert_eq!(got, reference(&bases, s), "{a:?}, c = {c}, k = {k}, {name}");
                let shape = (rep.window_bits, rep.num_windows, rep.precomputed_copies);
                assert_eq!(shape, (Some(c), windows, set.precomputed_copies()), "{a:?}");
            }
        }
        let empty = LoadOptions {
            precompute: Precompute::Factor(2),
            window_bits: None,
        };
        let set = e.load_bases_with(&[], empty).unwrap();
        assert!(e.msm(&set, &[]).unwrap().is_zero());
    }
}
