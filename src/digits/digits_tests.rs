use super::bucket_plan::chunk;
use super::*;
use crate::config::{Arithmetic, MAX_WINDOW_BITS, MIN_WINDOW_BITS};
use crate::inputs::{random_bases, random_scalars};
use ark_bls12_377::{Fr, G1Affine, G1Projective};
use ark_ec::VariableBaseMSM;
use ark_ff::{BigInteger, Field, PrimeField, Zero};

type Bls = ark_bls12_377::g1::Config;

fn edge_scalars() -> Vec<Fr> {
    let mut v = vec![
        Fr::zero(),
        Fr::from(1u64),
        Fr::from(2u64),
        -Fr::from(1u64),
        -Fr::from(2u64),
    ];
    let mut top = <Fr as PrimeField>::BigInt::from(1u64);
    for _ in 0..252 {
        top.mul2();
    }
    v.push(Fr::from_bigint(top).unwrap()); // 2^252
    v.extend(random_scalars::<Fr>(20, 7));
    v
}

#[test]
fn signed_digits_reconstruct_every_window_size() {
    for c in MIN_WINDOW_BITS..=MAX_WINDOW_BITS {
        let nw = num_windows(c, SCALAR_BITS) as usize;
        let half = 1i64 << (c - 1);
        for k in edge_scalars() {
            let mut d = vec![0i32; nw];
            signed_digits(&k, c, &mut d);
            let mut acc = Fr::zero();
            for &di in d.iter().rev() {
                assert!(
                    (di as i64) > -half && (di as i64) <= half,
                    "c={c} digit {di}"
                );
                acc *= Fr::from(1u64 << c);
                acc += if di < 0 {
                    -Fr::from((-di) as u64)
                } else {
                    Fr::from(di as u64)
                };
            }
            assert_eq!(acc, k, "c={c}");
        }
    }
}

#[test]
fn cost_model_picks_a_valid_minimum() {
    for costs in [AddCosts::RCB, AddCosts::EDWARDS] {
        for log_n in 0..24 {
            let n = 1usize << log_n;
            let c = best_window_bits(n, SCALAR_BITS, costs);
            assert!((2..=MAX_WINDOW_BITS).contains(&c));
            for other in 2..=MAX_WINDOW_BITS {
                assert!(
                    pippenger_cost(n, c, SCALAR_BITS, costs)
                        <= pippenger_cost(n, other, SCALAR_BITS, costs)
                );
            }
        }
        // Bigger inputs never pick a smaller window.
        let picks: Vec<u32> = (0..24)
            .map(|l| best_window_bits(1 << l, SCALAR_BITS, costs))
            .collect();
        assert!(picks.windows(2).all(|w| w[0] <= w[1]), "{picks:?}");
        assert_eq!(best_window_bits(1 << 20, SCALAR_BITS, costs), 16);
    }
    // Dearer projective additions (relative to mixed ones) never pick a larger window: the
    // reduction's share grows.
    for log_n in 0..24 {
        let n = 1usize << log_n;
        assert!(
            best_window_bits(n, SCALAR_BITS, AddCosts::EDWARDS)
                <= best_window_bits(n, SCALAR_BITS, AddCosts::RCB)
        );
    }
    // The weights are the profiles' formulas' own, in products of F_p.
    let bls = crate::curve::bls12_377_g1();
    assert_eq!(
        Arithmetic::Limbs29Edwards.on(bls).add_costs(),
        AddCosts::EDWARDS
    );
    assert_eq!(Arithmetic::Limbs29.on(bls).add_costs(), AddCosts::RCB);
    assert_eq!(Arithmetic::Limbs13.on(bls).add_costs(), AddCosts::RCB);
    // A G2: 13 and 14 products of F_p^2 (two by 3b), three of F_p each.
    let g2 = <ark_bn254::g2::Config as crate::curve::GpuCurve>::spec();
    let g2_costs = AddCosts {
        mixed_add: 39,
        add: 42,
    };
    assert_eq!(Arithmetic::Limbs29.on(g2).add_costs(), g2_costs);
}

/// The plan, summed bucket by bucket on the CPU, gives arkworks' MSM.
#[test]
fn bucket_plan_sums_to_the_msm() {
    let n = 300;
    let mut bases = random_bases::<Bls>(n, 3);
    let mut scalars = random_scalars(n, 4);
    bases[5] = G1Affine::identity();
    scalars[7] = Fr::zero();
    scalars[8] = -Fr::from(1u64);
    let expected = G1Projective::msm(&bases, &scalars).unwrap();
    for c in [1, 2, 5, 8, 13, 16] {
        let plan = BucketPlan::new(&bases, &scalars, c);
        assert_eq!(plan.offsets.len(), plan.total_buckets() as usize + 1);
        let acc = plan.sum_on_cpu(&bases);
        assert_eq!(acc, expected, "c={c}");
    }
}

#[test]
fn chunk_cap_follows_the_entry_count_within_bounds() {
    let t = TARGET_CHUNKS as usize;
    let (lo, hi) = (MIN_CHUNK_ENTRIES as usize, MAX_CHUNK_ENTRIES as usize);
    assert_eq!(chunk_entries(0), MIN_CHUNK_ENTRIES);
    for per in [lo - 1, lo, lo + 1, hi - 1, hi, hi + 1] {
        for e in [per * t - 1, per * t, per * t + 1] {
            let want = (e / t).clamp(lo, hi) as u32;
            assert_eq!(chunk_entries(e), want, "{e} entries");
        }
    }
}

/// Sums of the chunk counts, level by level, end with one group per bucket holding all
/// of its chunks, and no group takes more than the fan-in or mixes buckets.
#[test]
fn merge_levels_bound_the_fanin() {
    let f = MERGE_FANIN;
    for (sizes, want_levels) in [
        (vec![0, 0, 0], 1),
        (vec![1, 0, f - 1], 1),
        (vec![f], 1),
        (vec![f + 1], 2),
        (vec![3, f * f], 2),
        (vec![f * f + 1, 0], 3),
        (vec![f * f * f + 1], 4),
    ] {
        let mut bc = vec![0u32];
        for s in &sizes {
            bc.push(bc.last().unwrap() + s);
        }
        let plan = MergePlan::new(&bc, f);
        assert_eq!(plan.levels.len(), want_levels, "{sizes:?}");
        assert!(plan.levels.len() <= MAX_MERGE_LEVELS);
        // Follow every chunk's bucket through the levels.
        let mut owner: Vec<usize> = (0..sizes.len())
            .flat_map(|g| std::iter::repeat_n(g, sizes[g] as usize))
            .collect();
        for (i, lv) in plan.levels.iter().enumerate() {
            assert_eq!(lv.num_inputs as usize, owner.len());
            let gs = &plan.groups[lv.group_base as usize..][..lv.num_groups as usize + 1];
            assert_eq!(gs[0], 0);
            assert_eq!(*gs.last().unwrap() as usize, owner.len());
            let last = i + 1 == plan.levels.len();
            let mut next = Vec::new();
            for (g, w) in gs.windows(2).enumerate() {
                assert!(w[1] >= w[0] && w[1] - w[0] <= f);
                let members = &owner[w[0] as usize..w[1] as usize];
                let bucket = if last { g } else { members[0] };
                assert!(members.iter().all(|&b| b == bucket), "{sizes:?}");
                next.push(bucket);
            }
            owner = next;
        }
        assert_eq!(owner, (0..sizes.len()).collect::<Vec<_>>());
    }
}

#[test]
fn windows_follow_the_largest_scalar() {
    let bases = random_bases::<Bls>(4, 1);
    for c in [2, 5, 16] {
        assert_eq!(windows_for_bits(0, c), 0);
        assert_eq!(
            windows_for_bits(SCALAR_BITS, c),
            num_windows(c, SCALAR_BITS)
        );
        for bits in [1u32, 7, 8, 9, 64, 65, 252] {
            let k = Fr::from(2u64).pow([bits as u64 - 1]); // bit length `bits`
            let scalars = [k, Fr::from(1u64), Fr::zero(), -k];
            let (ints, top) = scalar_integers(&bases[..3], &scalars[..3]);
            assert_eq!(top, bits.max(1));
            let w = windows_for_bits(top, c);
            let d = DigitMatrix::from_scalar_integers(&ints, c, w);
            let full = DigitMatrix::new(&bases[..3], &scalars[..3], c);
            for i in 0..3 {
                assert_eq!(d.row(i), &full.row(i)[..w as usize], "c={c} bits={bits}");
                assert!(full.row(i)[w as usize..].iter().all(|&x| x == 0));
            }
        }
    }
    // A scalar on the point at infinity does not count.
    let mut b = bases.clone();
    b[0] = G1Affine::identity();
    let (_, top) = scalar_integers(&b[..2], &[-Fr::from(1u64), Fr::from(3u64)]);
    assert_eq!(top, 2);
}

#[test]
fn chunks_cover_buckets_within_the_cap() {
    let m = MAX_CHUNK_ENTRIES;
    for sizes in [
        vec![0, 0],
        vec![m - 1, m, m + 1],
        vec![0, 3 * m + 5, 0, 1],
        vec![],
    ] {
        let mut offsets = vec![0u32];
        for s in &sizes {
            offsets.push(offsets.last().unwrap() + s);
        }
        let (co, bc) = chunk(&offsets, m);
        assert_eq!(bc.len(), offsets.len());
        for (g, s) in sizes.iter().enumerate() {
            let (a, b) = (bc[g] as usize, bc[g + 1] as usize);
            assert_eq!(b - a, s.div_ceil(m) as usize, "bucket {g} of {sizes:?}");
            assert_eq!(co[a], offsets[g]);
            assert_eq!(co[b], offsets[g + 1]);
            for k in a..b {
                assert!(co[k + 1] > co[k] && co[k + 1] - co[k] <= m);
            }
        }
    }
}

#[test]
fn window_count_covers_the_scalar() {
    for c in MIN_WINDOW_BITS..=MAX_WINDOW_BITS {
        assert!(num_windows(c, SCALAR_BITS) * c > SCALAR_BITS);
        assert!((num_windows(c, SCALAR_BITS) - 1) * c <= SCALAR_BITS);
        assert_eq!(Fr::MODULUS.num_bits(), SCALAR_BITS);
    }
}

mod properties {
    use super::*;
    use ark_ff::BigInteger;
    use proptest::prelude::*;

    fn scalar(bytes: [u8; 32]) -> Fr {
        Fr::from_le_bytes_mod_order(&bytes)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Signed digits recompose to the scalar at every window size, each within
        /// (-2^(c-1), 2^(c-1)], and the trimmed matrix keeps exactly the needed windows.
        #[test]
        fn signed_digits_recompose(bytes in any::<[u8; 32]>(), shift in 0u32..253, c in 1u32..=16) {
            let k = scalar(bytes).into_bigint() >> shift; // small scalars too
            let s = Fr::from_bigint(k).unwrap();
            let (ints, bits) = scalar_integers(&random_bases::<Bls>(1, 1), &[s]);
            prop_assert_eq!(bits, k.num_bits());
            let w = windows_for_bits(bits, c);
            let d = DigitMatrix::from_scalar_integers(&ints, c, w);
            let half = 1i64 << (c - 1);
            let mut acc = Fr::zero();
            for &di in d.row(0).iter().rev() {
                prop_assert!((di as i64) > -half && (di as i64) <= half);
                acc *= Fr::from(1u64 << c);
                acc += if di < 0 { -Fr::from((-di) as u64) } else { Fr::from(di as u64) };
            }
            prop_assert_eq!(acc, s);
        }

        /// Every nonzero digit becomes exactly one entry, in the bucket of its magnitude
        /// and window, signed as the digit; chunks tile each bucket within the cap.
        #[test]
        fn bucket_plans_place_every_digit_once(
            rows in 1usize..40,
            c in 1u32..=6,
            seed in any::<u64>(),
        ) {
            use ark_std::rand::{rngs::StdRng, Rng, SeedableRng};
            let mut rng = StdRng::seed_from_u64(seed);
            let nw = 3usize;
            let half = 1i32 << (c - 1);
            let digits: Vec<i32> = (0..rows * nw)
                .map(|_| if rng.gen_bool(0.3) { 0 } else { rng.gen_range(-half + 1..=half) })
                .collect();
            let m = DigitMatrix { window_bits: c, num_windows: nw, digits: digits.clone() };
            let plan = BucketPlan::from_digits(&m);
            let mut seen = vec![0i32; rows * nw];
            let b = plan.buckets_per_window as usize;
            for g in 0..plan.total_buckets() as usize {
                let (w, mag) = (g / b, g % b + 1);
                for &e in &plan.entries[plan.offsets[g] as usize..plan.offsets[g + 1] as usize] {
                    let i = (e & !SIGN_BIT) as usize;
                    let d = if e & SIGN_BIT != 0 { -(mag as i32) } else { mag as i32 };
                    prop_assert_eq!(seen[i * nw + w], 0);
                    seen[i * nw + w] = d;
                }
            }
            prop_assert_eq!(seen, digits);
            for g in 0..plan.total_buckets() as usize {
                let (a, z) = (plan.bucket_chunks[g] as usize, plan.bucket_chunks[g + 1] as usize);
                if a < z {
                    prop_assert_eq!(plan.chunk_offsets[a], plan.offsets[g]);
                    prop_assert_eq!(plan.chunk_offsets[z], plan.offsets[g + 1]);
                }
                for k in a..z {
                    let len = plan.chunk_offsets[k + 1] - plan.chunk_offsets[k];
                    prop_assert!(len >= 1 && len <= plan.chunk_cap);
                }
            }
        }

        /// Merge plans: one group per bucket at the end, no group over the fan-in.
        #[test]
        fn merge_plans_end_with_one_group_per_bucket(
            counts in proptest::collection::vec(0u32..3000, 0..20),
            fanin in 2u32..40,
        ) {
            let mut bc = vec![0u32];
            for k in &counts {
                bc.push(bc.last().unwrap() + k);
            }
            let plan = MergePlan::new(&bc, fanin);
            let last = plan.levels.last().unwrap();
            prop_assert_eq!(last.num_groups as usize, counts.len());
            prop_assert_eq!(plan.levels[0].num_inputs, *bc.last().unwrap());
            for (i, lv) in plan.levels.iter().enumerate() {
                let gs = &plan.groups[lv.group_base as usize..][..lv.num_groups as usize + 1];
                prop_assert_eq!(*gs.last().unwrap(), lv.num_inputs);
                prop_assert!(gs.windows(2).all(|w| w[1] >= w[0] && w[1] - w[0] <= fanin));
                if i > 0 {
                    prop_assert_eq!(lv.num_inputs, plan.levels[i - 1].num_groups);
                }
            }
        }
    }
}

/// Folding W digit windows onto ceil(W / k) windows of buckets: every digit window lands
/// in one bucket window as one copy, the copies are numbered from 0, and the window
/// reduction over the bucket windows with the copies' shifts gives back every digit's
/// weight 2^(c w).
#[test]
fn folded_windows_keep_every_digit_weight() {
    for c in [2, 5, 13, 16] {
        let w = num_windows(c, SCALAR_BITS);
        for k in 1..=w {
            let bw = bucket_windows(c, k, SCALAR_BITS);
            assert!(bw * k >= w && (bw - 1) * k < w, "c = {c}, k = {k}");
            for d in 0..w {
                let (copy, local) = (d / bw, d % bw);
                assert!(copy < k);
                // Copy j is 2^(c W' j) P, bucket window `local` weighs 2^(c local).
                assert_eq!(c * bw * copy + c * local, c * d);
            }
        }
    }
}

#[test]
fn precompute_costs_and_the_auto_choice() {
    let e = AddCosts::EDWARDS;
    for (n, c) in [(1 << 10, 10), (1 << 20, 16)] {
        // One copy is the plain cost; more copies shrink only the reduction.
        assert_eq!(
            precompute_cost(n, c, 1, SCALAR_BITS, e),
            pippenger_cost(n, c, SCALAR_BITS, e)
        );
        let w = num_windows(c, SCALAR_BITS);
        let costs: Vec<u64> = (1..=w)
            .map(|k| precompute_cost(n, c, k, SCALAR_BITS, e))
            .collect();
        assert!(costs.windows(2).all(|p| p[1] <= p[0]));
        assert!(costs[w as usize - 1] > w as u64 * n as u64 * e.mixed_add);
    }
    // Nothing fits: the plain set at the cost model's c.
    let n = 1 << 16;
    assert_eq!(
        choose_precompute(None, n, SCALAR_BITS, e, |_, _| None),
        (best_window_bits(n, SCALAR_BITS, e), 1)
    );
    // Anything fits in one part: a shape within 1% of the fewest multiplications, fewest
    // copies first.
    let (c, k) = choose_precompute(None, n, SCALAR_BITS, e, |_, _| Some(1));
    let best = (2..=MAX_WINDOW_BITS)
        .flat_map(|c| {
            (1..=num_windows(c, SCALAR_BITS)).map(move |k| precompute_cost(n, c, k, SCALAR_BITS, e))
        })
        .min()
        .unwrap();
    assert!(k > 1 && precompute_cost(n, c, k, SCALAR_BITS, e) * 100 <= best * 101);
    // Parts multiply the reduction: more parts for more copies can make copies lose.
    let split = |_: u32, k: u32| Some(if k > 1 { 64 } else { 1 });
    assert_eq!(choose_precompute(None, n, SCALAR_BITS, e, split).1, 1);
    // A configured c is kept; copies only where allowed, and only where they save more
    // than 1% (at 2^16 points and c = 8 the reduction is under 1% of the work).
    let upto3 = |_: u32, k: u32| (k <= 3).then_some(1);
    assert_eq!(
        choose_precompute(Some(8), 64, SCALAR_BITS, e, upto3),
        (8, 3)
    );
    assert_eq!(choose_precompute(Some(8), n, SCALAR_BITS, e, upto3), (8, 1));
}

/// Where a wide window of copies beats a call's own window: at 2^15 points one window of
/// 2^16 buckets (c = 17, 15 copies) costs fewer multiplications than the best plain window,
/// at 2^10 it does not (the engine's per-call choice, `engine/call/plan.rs`, `device_sort`).
#[test]
fn wide_copies_pay_from_large_calls_on() {
    let e = AddCosts::EDWARDS;
    let wide = |n| precompute_cost(n, 17, num_windows(17, SCALAR_BITS), SCALAR_BITS, e);
    let plain = |n| pippenger_cost(n, best_window_bits(n, SCALAR_BITS, e), SCALAR_BITS, e);
    assert!(wide(1 << 15) < plain(1 << 15));
    assert!(wide(1 << 10) > plain(1 << 10));
}
