use super::*;
use crate::digits::{BucketPlan, DigitMatrix};
use crate::inputs::{adversarial_scalars, random_bases, random_scalars};
use ark_bls12_377::{Fr, G1Affine, G1Projective};
use ark_ec::{AffineRepr, VariableBaseMSM};

type Bls = ark_bls12_377::g1::Config;

fn all_options() -> Vec<SreOptions> {
    let mut v = Vec::new();
    for strategy in SreStrategy::ALL {
        for early_stop in [None, Some(PAPER_EARLY_STOP), Some(0.0)] {
            for opposite in [false, true] {
                v.push(SreOptions {
                    strategy,
                    early_stop,
                    opposite,
                });
            }
        }
    }
    v
}

/// Every digit is accounted for exactly once: in the residual or in one merged pair.
fn check_plan(d: &DigitMatrix, plan: &SrePlan, opts: &SreOptions) {
    let nw = d.num_windows;
    let mut rebuilt = plan.residual.digits.clone();
    for p in &plan.pairs {
        assert_ne!(p.i, p.j);
        assert!(p.windows.len() >= 2, "a pair must share two windows");
        assert!(opts.opposite || !p.negate_j);
        for &(w, dig) in &p.windows {
            let (i, j, w) = (p.i as usize, p.j as usize, w as usize);
            assert_ne!(dig, 0);
            assert_eq!(rebuilt[i * nw + w], 0, "window merged twice");
            assert_eq!(rebuilt[j * nw + w], 0, "window merged twice");
            rebuilt[i * nw + w] = dig;
            rebuilt[j * nw + w] = if p.negate_j { -dig } else { dig };
        }
    }
    assert_eq!(rebuilt, d.digits, "{opts:?}");
    let s = &plan.stats;
    assert_eq!(s.pairs, plan.pairs.len() as u64);
    assert_eq!(s.additions_saved, s.merged_windows - s.pairs);
    assert_eq!(s.nonzero_digits, d.nonzero() as u64);
    assert!(!s.deadline_hit);
}

/// The MSM computed on the CPU from the plan's bucket placement, as the GPU would.
fn msm_through_plan(bases: &[G1Affine], scalars: &[Fr], c: u32, opts: &SreOptions) -> G1Projective {
    let d = DigitMatrix::new(bases, scalars, c);
    let plan = search(&d, opts, None);
    check_plan(&d, &plan, opts);
    let merged = merged_points(bases, &plan.pairs);
    let rows = plan.placement_rows(|k| !merged[k].is_zero());
    let points: Vec<G1Affine> = bases.iter().chain(&merged).copied().collect();
    BucketPlan::from_digits(&rows).sum_on_cpu(&points)
}

#[test]
fn every_strategy_gives_the_msm_on_adversarial_inputs() {
    let n = 40;
    let mut bases = random_bases::<Bls>(n, 5);
    bases[3] = G1Affine::identity();
    bases[7] = bases[6]; // duplicate base
    bases[9] = -bases[8]; // P and -P
    for (name, scalars) in adversarial_scalars(n, 11) {
        let expected = G1Projective::msm(&bases, &scalars).unwrap();
        for c in [3, 4, 8] {
            for opts in all_options() {
                assert_eq!(
                    msm_through_plan(&bases, &scalars, c, &opts),
                    expected,
                    "{name}, c={c}, {opts:?}"
                );
            }
        }
    }
}

#[test]
fn equal_scalars_merge_every_window() {
    // Two equal scalars share all their nonzero windows: one pair, m - 1 saved.
    let k = random_scalars(1, 3)[0];
    let bases = random_bases::<Bls>(2, 4);
    let d = DigitMatrix::new(&bases, &[k, k], 4);
    let m = d.row(0).iter().filter(|&&x| x != 0).count() as u64;
    for strategy in SreStrategy::ALL {
        let opts = SreOptions {
            strategy,
            early_stop: None,
            opposite: true,
        };
        let plan = search(&d, &opts, None);
        assert_eq!(plan.stats.pairs, 1, "{strategy:?}");
        assert_eq!(plan.stats.additions_saved, m - 1);
        assert!(!plan.pairs[0].negate_j);
        // A row and its negation: every window opposite, merged only with opposite matching
        // on. (The digits of the field element -k = r - k are not the negated digits of k,
        // so this is built on digits directly.)
        let mut neg = d.digits.clone();
        neg.extend(d.row(0).iter().map(|x| -x));
        neg.drain(d.num_windows..2 * d.num_windows);
        let d2 = DigitMatrix {
            digits: neg,
            ..d.clone()
        };
        let plan = search(&d2, &opts, None);
        assert_eq!(plan.stats.pairs, 1);
        assert!(plan.pairs[0].negate_j);
        assert_eq!(plan.stats.additions_saved, m - 1);
        let off = SreOptions {
            opposite: false,
            ..opts
        };
        let plan = search(&d2, &off, None);
        assert_eq!(plan.stats.pairs, 0);
        check_plan(&d2, &plan, &off);
    }
}

#[test]
fn early_stop_at_zero_merges_each_scalar_once() {
    let n = 200;
    let d = DigitMatrix::new(&random_bases::<Bls>(n, 1), &random_scalars(n, 2), 3);
    for strategy in SreStrategy::ALL {
        let opts = SreOptions {
            strategy,
            early_stop: Some(0.0),
            opposite: true,
        };
        let plan = search(&d, &opts, None);
        check_plan(&d, &plan, &opts);
        let mut seen = vec![0u32; n];
        for p in &plan.pairs {
            seen[p.i as usize] += 1;
            seen[p.j as usize] += 1;
        }
        assert!(seen.iter().all(|&s| s <= 1), "{strategy:?}");
        assert!(plan.stats.pairs > 0);
        let full = search(
            &d,
            &SreOptions {
                early_stop: None,
                ..opts
            },
            None,
        );
        assert!(full.stats.additions_saved >= plan.stats.additions_saved);
    }
}

#[test]
fn searches_find_redundancy_at_small_windows() {
    // 256 random scalars at c = 4 (64 windows, 8 digit values): pairs sharing two windows
    // are plentiful, and every strategy must find a good share of them.
    let n = 256;
    let d = DigitMatrix::new(&random_bases::<Bls>(n, 1), &random_scalars(n, 2), 4);
    for strategy in SreStrategy::ALL {
        let plan = search(&d, &SreOptions::new(strategy), None);
        assert!(
            plan.stats.redundancy_percent() > 10.0,
            "{strategy:?}: {:?}",
            plan.stats
        );
    }
}

#[test]
fn deadline_in_the_past_stops_at_once_with_a_valid_plan() {
    let n = 3000;
    let d = DigitMatrix::new(&random_bases::<Bls>(n, 1), &random_scalars(n, 2), 4);
    for strategy in SreStrategy::ALL {
        let opts = SreOptions::new(strategy);
        let plan = search(&d, &opts, Some(Instant::now()));
        assert!(plan.stats.deadline_hit, "{strategy:?}");
        // Whatever was merged is still a valid plan.
        let mut no_deadline = plan.clone();
        no_deadline.stats.deadline_hit = false;
        check_plan(&d, &no_deadline, &opts);
    }
}

/// (Identical rows pair up before the index is used, so the partner differs in one window.)
/// A target whose only partner sits behind `fillers` entries of a shared (window, digit)
/// list: found within [`INDEXED_CANDIDATES_PER_LIST`], missed beyond it.
fn partner_found_behind(fillers: usize) -> bool {
    let nw = 6;
    let mut digits = Vec::new();
    digits.extend_from_slice(&[1, 2, 0, 0, 0, 0]); // target
    for _ in 0..fillers {
        digits.extend_from_slice(&[1, 0, 0, 0, 0, 0]); // share window 0 only
    }
    digits.extend_from_slice(&[1, 2, 0, 0, 3, 0]); // partner (not identical: see below)
    let d = DigitMatrix {
        window_bits: 3,
        num_windows: nw,
        digits,
    };
    let opts = SreOptions {
        strategy: SreStrategy::Indexed,
        early_stop: None,
        opposite: false,
    };
    let plan = search(&d, &opts, None);
    check_plan(&d, &plan, &opts);
    plan.pairs
        .iter()
        .any(|p| p.i == 0 && p.j as usize == fillers + 1)
}

#[test]
fn indexed_candidate_cap_at_plus_minus_one() {
    let cap = INDEXED_CANDIDATES_PER_LIST;
    assert!(partner_found_behind(cap - 2));
    assert!(partner_found_behind(cap - 1));
    assert!(!partner_found_behind(cap));
    assert!(!partner_found_behind(cap + 1));
}

#[test]
fn strategy_names_round_trip() {
    for s in SreStrategy::ALL {
        assert_eq!(SreStrategy::from_name(s.name()), Some(s));
    }
    assert_eq!(SreStrategy::from_name("nope"), None);
}

#[test]
fn identical_and_negated_rows_pair_in_the_first_pass() {
    let k = random_scalars(1, 9)[0];
    let n = 1001;
    let bases = random_bases::<Bls>(n, 1);
    let d = DigitMatrix::new(&bases, &vec![k; n], 5);
    let m = d.row(0).iter().filter(|&&x| x != 0).count() as u64;
    let opts = SreOptions::new(SreStrategy::Indexed);
    let plan = search(&d, &opts, None);
    check_plan(&d, &plan, &opts);
    assert_eq!(plan.stats.pairs, 500);
    assert_eq!(plan.stats.additions_saved, 500 * (m - 1));
    // One full pass over the rows, no index visits beyond it.
    assert_eq!(plan.stats.comparisons, n as u64);
    // Negated rows: paired with opposite matching on.
    let mut digits = d.digits[..2 * d.num_windows].to_vec();
    for x in &mut digits[d.num_windows..] {
        *x = -*x;
    }
    let d2 = DigitMatrix {
        digits,
        ..d.clone()
    };
    let plan = search(&d2, &opts, None);
    assert_eq!(plan.pairs.len(), 1);
    assert!(plan.pairs[0].negate_j);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the digits (drawn from few values, so that rows share windows), every
        /// strategy's plan accounts for each nonzero digit exactly once.
        #[test]
        fn plans_cover_every_nonzero_digit_once(
            rows in 2usize..24,
            nw in 1usize..6,
            values in 1i32..4,
            seed in any::<u64>(),
            which in 0usize..24,
        ) {
            use ark_std::rand::{rngs::StdRng, Rng, SeedableRng};
            let mut rng = StdRng::seed_from_u64(seed);
            let digits: Vec<i32> = (0..rows * nw)
                .map(|_| rng.gen_range(-values..=values))
                .collect();
            let d = DigitMatrix { window_bits: 4, num_windows: nw, digits };
            let opts = all_options()[which % all_options().len()];
            let plan = search(&d, &opts, None);
            check_plan(&d, &plan, &opts);
        }
    }
}
