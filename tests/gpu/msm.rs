//! MSM results against arkworks' `VariableBaseMSM::msm`: threshold sizes, adversarial
//! scalars and bases, every window size, routing, errors and concurrent use.

use crate::common;

use ark_bls12_377::{Fr, G1Affine, G1Projective};
use ark_ec::{CurveGroup, PrimeGroup};
use ark_ff::{Field, One, Zero};
use common::{default_engine, gpu_engine, reference};
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::{internals::digits, Backend, GpuMsm, MsmConfig, MsmError};
use gpu_msm::{MAX_WINDOW_BITS, MIN_WINDOW_BITS};

fn check(name: &str, engine: &GpuMsm, bases: &[G1Affine], scalars: &[Fr]) -> gpu_msm::MsmReport {
    let (got, report) = engine
        .msm_with_report(bases, scalars)
        .unwrap_or_else(|e| panic!("{name} (n = {}): {e}", bases.len()));
    assert_eq!(
        got,
        reference(bases, scalars),
        "{name} (n = {})",
        bases.len()
    );
    report
}

#[test]
fn gpu_path_at_threshold_sizes() {
    for n in [1usize, 2, 14, 15, 25, 31, 32, 33, 100, 1000, 4096] {
        let bases = random_bases(n, n as u64);
        let scalars = random_scalars(n, 1000 + n as u64);
        let report = check("random", gpu_engine(), &bases, &scalars);
        assert_eq!(report.backend, Backend::Gpu);
        let c = report.window_bits.unwrap();
        let costs = common::bls_profile(report.arithmetic.unwrap()).add_costs();
        assert_eq!(c, digits::best_window_bits(n, common::bits(), costs));
        assert_eq!(report.num_windows, digits::num_windows(c, common::bits()));
        assert!(report.num_entries <= n * report.num_windows as usize);
    }
}

#[test]
fn default_routing_around_the_cutoff() {
    let cutoff = default_engine().small_msm_cutoff();
    for n in [0, 1, cutoff - 1, cutoff, cutoff + 1] {
        let bases = random_bases(n, 5);
        let scalars = random_scalars(n, 6);
        let engine = default_engine();
        let report = check("routing", engine, &bases, &scalars);
        // A software adapter without a calibration gets no work: arkworks is faster.
        let want = if n < cutoff {
            Backend::CpuDoubleAndAdd
        } else if engine.is_software_adapter() {
            Backend::CpuArkworks
        } else {
            Backend::Gpu
        };
        assert_eq!(report.backend, want, "n = {n}");
    }
    let (sum, _) = default_engine().msm_with_report(&[], &[]).unwrap();
    assert!(sum.is_zero());
}

#[test]
fn adversarial_scalars_and_bases() {
    let n = 64;
    let bases = random_bases(n, 11);
    let random = random_scalars(n, 12);
    let minus_one = -Fr::one();
    let mut cases: Vec<(&str, Vec<G1Affine>, Vec<Fr>)> = vec![
        ("all zero", bases.clone(), vec![Fr::zero(); n]),
        ("all one", bases.clone(), vec![Fr::one(); n]),
        ("all r-1", bases.clone(), vec![minus_one; n]),
        ("one scalar repeated", bases.clone(), vec![random[0]; n]),
        (
            "two distinct values",
            bases.clone(),
            (0..n).map(|i| random[i % 2]).collect(),
        ),
    ];
    let mut single = vec![Fr::zero(); n];
    single[37] = random[3];
    cases.push(("single nonzero", bases.clone(), single));
    // The same base everywhere with the same scalar: one hot bucket per window.
    cases.push((
        "duplicate bases, same scalar",
        vec![bases[0]; n],
        vec![random[1]; n],
    ));
    cases.push(("duplicate bases", vec![bases[0]; n], random.clone()));
    // P and -P with the same scalar cancel; the sum is the identity.
    let pm: Vec<G1Affine> = (0..n)
        .map(|i| if i % 2 == 0 { bases[i] } else { -bases[i - 1] })
        .collect();
    let pm_scalars: Vec<Fr> = (0..n).map(|i| random[i - i % 2]).collect();
    cases.push(("P and -P pairs", pm, pm_scalars));
    let mut with_identity = bases.clone();
    for i in (0..n).step_by(3) {
        with_identity[i] = G1Affine::identity();
    }
    cases.push(("identity bases", with_identity, random.clone()));
    cases.push((
        "all identity bases",
        vec![G1Affine::identity(); n],
        random.clone(),
    ));
    // Scalars sharing every window (the SRE extreme), and small and top-bit scalars.
    cases.push((
        "small scalars",
        bases.clone(),
        (0..n).map(|i| Fr::from(i as u64)).collect(),
    ));
    let top = Fr::from(2u64).pow([252u64]); // the largest power of two below r
    cases.push(("2^252", bases.clone(), vec![top; n]));
    cases.push((
        "mixed signs",
        bases.clone(),
        (0..n)
            .map(|i| if i % 2 == 0 { random[i] } else { -random[i] })
            .collect(),
    ));
    for (name, b, s) in &cases {
        check(name, gpu_engine(), b, s);
    }
    // Identical scalars with identical bases at n = 3 (a bug another MSM shipped).
    check(
        "n=3 identical",
        gpu_engine(),
        &[bases[0]; 3],
        &[random[0]; 3],
    );
    // A hot bucket: the sum of k * G over 200 copies is 200 k G.
    let g = G1Projective::generator().into_affine();
    let got = gpu_engine()
        .msm(&vec![g; 200], &vec![random[2]; 200])
        .unwrap();
    assert_eq!(
        got,
        G1Projective::generator() * (random[2] * Fr::from(200u64))
    );
}

#[test]
fn every_window_size_gives_the_same_answer() {
    let n = 150;
    let bases = random_bases(n, 21);
    let mut scalars = random_scalars(n, 22);
    scalars[0] = -Fr::one();
    scalars[1] = Fr::zero();
    let expected = reference(&bases, &scalars);
    for c in MIN_WINDOW_BITS..=MAX_WINDOW_BITS {
        let engine = gpu_engine()
            .reconfigured(MsmConfig {
                window_bits: Some(c),
                ..gpu_engine().config().clone()
            })
            .unwrap();
        let (got, report) = engine.msm_with_report(&bases, &scalars).unwrap();
        assert_eq!(report.window_bits, Some(c));
        assert_eq!(got, expected, "c = {c}");
    }
}

/// A copy of `bases` with base `index` moved off the curve (y + 1).
fn off_curve(bases: &[G1Affine], index: usize) -> Vec<G1Affine> {
    let mut b = bases.to_vec();
    b[index] = G1Affine::new_unchecked(b[index].x, b[index].y + ark_bls12_377::Fq::one());
    assert!(!b[index].is_on_curve());
    b
}

#[test]
fn bases_off_the_curve_are_typed_errors_on_every_path() {
    // Double-and-add (default routing, n below the cutoff).
    let bases = off_curve(&random_bases(5, 1), 3);
    let scalars = random_scalars(5, 2);
    assert_eq!(
        default_engine().msm(&bases, &scalars),
        Err(MsmError::InvalidBase { index: 3 })
    );
    // GPU path, plain and with SRE (the merged points carry the bad base along).
    let bases = off_curve(&random_bases(64, 3), 40);
    let scalars = random_scalars(64, 4);
    assert_eq!(
        gpu_engine().msm(&bases, &scalars),
        Err(MsmError::InvalidBase { index: 40 })
    );
    let sre = gpu_engine()
        .reconfigured(MsmConfig {
            sre: gpu_msm::SreMode::On(gpu_msm::internals::sre::SreOptions::new(
                gpu_msm::internals::sre::SreStrategy::Indexed,
            )),
            ..gpu_engine().config().clone()
        })
        .unwrap();
    let equal = vec![scalars[0]; 64];
    assert_eq!(
        sre.msm(&bases, &equal),
        Err(MsmError::InvalidBase { index: 40 })
    );
}

#[test]
fn errors_are_typed() {
    let bases = random_bases(3, 1);
    let scalars = random_scalars(2, 1);
    assert_eq!(
        gpu_engine().msm(&bases, &scalars),
        Err(MsmError::LengthMismatch {
            bases: 3,
            scalars: 2
        })
    );
    for c in [0, MAX_WINDOW_BITS + 1] {
        let err = GpuMsm::<ark_bls12_377::g1::Config>::with_config(MsmConfig {
            window_bits: Some(c),
            ..Default::default()
        })
        .unwrap_err();
        assert!(matches!(err, MsmError::InvalidConfig(_)), "{err}");
    }
    let err = GpuMsm::<ark_bls12_377::g1::Config>::with_config(MsmConfig {
        adapter: gpu_msm::AdapterChoice {
            name_contains: Some("no-such-adapter-xyz".into()),
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap_err();
    // The adapters seen are named, and no driver is advised where one was seen.
    let MsmError::NoAdapter { seen, .. } = &err else {
        panic!("{err}")
    };
    let text = err.to_string();
    assert!(!seen.is_empty() && text.contains(&seen[0]), "{err}");
    assert!(text.contains("no-such-adapter-xyz"), "{err}");
    assert!(!text.contains("mesa-vulkan-drivers"), "{err}");
}

#[test]
fn one_engine_many_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<GpuMsm>();
    let engine = gpu_engine();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            s.spawn(move || {
                let n = 40 + t as usize;
                let bases = random_bases(n, 100 + t);
                let scalars = random_scalars(n, 200 + t);
                check("thread", engine, &bases, &scalars);
            });
        }
    });
}

/// All-one scalars put every point into one bucket. On the host's bucket lists (only the one
/// window they need) the chunks of that bucket are cut at MIN_CHUNK_ENTRIES (these sizes are
/// far below TARGET_CHUNKS chunks' worth), and merged over one, two and three levels of
/// MERGE_FANIN; on the GPU bucket sort (every window) the bucket is spread over equal slices.
#[test]
fn hot_bucket_around_the_chunk_cap_and_merge_fanin() {
    use gpu_msm::internals::digits::{chunk_entries, MERGE_FANIN, MIN_CHUNK_ENTRIES};
    let m = MIN_CHUNK_ENTRIES as usize;
    let f = MERGE_FANIN as usize;
    let host = gpu_engine()
        .reconfigured(MsmConfig {
            bucket_sort: gpu_msm::BucketSort::Host,
            ..gpu_engine().config().clone()
        })
        .unwrap();
    for n in [m - 1, m, m + 1, m * f, m * f + 1, m * f * f + 1] {
        assert_eq!(chunk_entries(n), MIN_CHUNK_ENTRIES);
        let bases = random_bases(n, 40 + n as u64);
        let report = check("hot bucket", &host, &bases, &vec![Fr::one(); n]);
        assert_eq!(report.backend, Backend::Gpu);
        assert_eq!((report.num_windows, report.num_entries), (1, n), "n = {n}");
        let report = check(
            "hot bucket, GPU sort",
            gpu_engine(),
            &bases,
            &vec![Fr::one(); n],
        );
        let c = report.window_bits.unwrap();
        assert_eq!(
            report.num_windows,
            digits::num_windows(c, common::bits()),
            "n = {n}"
        );
        assert_eq!(report.num_entries, n, "n = {n}");
    }
}

/// Every arithmetic profile the adapter runs, with the bucket lists made on the host and on
/// the GPU, on the adversarial scalar sets over bases with the identity, duplicates and P, -P
/// pairs, one-shot; and window sizes on resident bases: the smallest and the largest on
/// every engine, each one between on one engine in turn (every window on every engine with
/// `GPU_MSM_FULL_TESTS=1`).
#[test]
fn every_profile_on_adversarial_inputs_and_every_window() {
    let n = 48;
    let mut bases = random_bases(n, 61);
    bases[1] = G1Affine::identity();
    bases[3] = bases[2];
    bases[5] = -bases[4];
    let random = random_scalars(n, 62);
    let both_sorts: Vec<GpuMsm> = common::profile_engines()
        .into_iter()
        .flat_map(|e| {
            [gpu_msm::BucketSort::Host, gpu_msm::BucketSort::Gpu].map(|bucket_sort| {
                e.reconfigured(MsmConfig {
                    bucket_sort,
                    ..e.config().clone()
                })
                .unwrap()
            })
        })
        .collect();
    let lanes = both_sorts.len();
    for (lane, e) in both_sorts.iter().enumerate() {
        let a = e.arithmetic();
        for (name, s) in gpu_msm::inputs::adversarial_scalars(n, 63) {
            let rep = check(name, e, &bases, &s);
            // A call with no nonzero digit does no GPU work.
            if rep.backend == Backend::Gpu && rep.num_entries > 0 {
                assert_eq!(rep.arithmetic, a, "{name}");
            }
        }
        let resident = e.load_bases(&bases).unwrap();
        let between = common::spread(MIN_WINDOW_BITS + 1..MAX_WINDOW_BITS, lane, lanes);
        for c in [MIN_WINDOW_BITS, MAX_WINDOW_BITS]
            .into_iter()
            .chain(between)
        {
            let ec = e
                .reconfigured(MsmConfig {
                    window_bits: Some(c),
                    ..e.config().clone()
                })
                .unwrap();
            let (got, rep) = ec.msm_with_report(&resident, &random).unwrap();
            assert_eq!(got, reference(&bases, &random), "{a:?}, c = {c}");
            assert_eq!((rep.window_bits, rep.arithmetic), (Some(c), a));
        }
    }
}

/// The known-answer test at engine creation: it passes on this adapter, and a device that
/// disagrees (here: a test hook makes the expected sum wrong) is refused, or replaced by the
/// CPU paths when the configuration says so (never when the GPU is forced or required).
#[test]
fn the_known_answer_test_refuses_or_replaces_a_wrong_device() {
    use gpu_msm::{Arithmetic, CalibrationSource, SelfTest};
    let t = gpu_engine()
        .self_test_time()
        .expect("the self-test ran and passed");
    eprintln!(
        "known-answer test on {}: {t:.2?}",
        gpu_engine().adapter_name()
    );
    let faulty = |self_test, force_backend| {
        GpuMsm::with_config_failing_self_test(MsmConfig {
            arithmetic: Some(Arithmetic::Limbs13),
            calibration: CalibrationSource::Defaults,
            self_test,
            force_backend,
            ..Default::default()
        })
    };
    match faulty(SelfTest::Refuse, None) {
        Err(MsmError::SelfTestFailed { adapter, detail }) => {
            assert_eq!(adapter, gpu_engine().adapter_name());
            assert!(detail.contains("c = 2"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    let e = faulty(SelfTest::FallBackToCpu, None).unwrap();
    assert!(!e.has_gpu());
    let bases = random_bases(40, 71);
    let scalars = random_scalars(40, 72);
    let (got, rep) = e.msm_with_report(&bases, &scalars).unwrap();
    assert_eq!(got, reference(&bases, &scalars));
    assert_eq!(rep.backend, Backend::CpuArkworks);
    assert!(rep.route.contains("self-test"), "{}", rep.route);
    assert!(matches!(
        faulty(SelfTest::FallBackToCpu, Some(Backend::Gpu)),
        Err(MsmError::SelfTestFailed { .. })
    ));
}

/// Bases on the curve but outside G1 (the point of order 2, and a random one) give the true
/// sum or `BaseNotInSubgroup`, never a wrong sum, on every path; `validate_subgroup` refuses
/// them up front.
#[test]
fn bases_outside_the_subgroup_give_the_true_sum_or_a_typed_error() {
    use ark_bls12_377::Fq;
    let n = 40;
    let bases = random_bases(n, 81);
    let s = random_scalars(n, 82);
    let order2 = G1Affine::new_unchecked(-Fq::one(), Fq::zero());
    assert!(order2.is_on_curve() && !order2.is_in_correct_subgroup_assuming_on_curve());
    for (name, index, p) in [
        ("order 2", 7, order2),
        ("random", 11, common::outside_subgroup(5)),
    ] {
        let mut b = bases.clone();
        b[index] = p;
        let want = reference(&b, &s);
        let engines = common::profile_engines()
            .into_iter()
            .chain([default_engine()]);
        for e in engines {
            let resident = e.load_bases(&b).unwrap();
            for (mode, got) in [
                ("one-shot", e.msm(&b, &s)),
                ("resident", e.msm(&resident, &s)),
            ] {
                let got = &got;
                match got {
                    Ok(g) => assert_eq!(*g, want, "{name}, {mode}"),
                    Err(MsmError::BaseNotInSubgroup { index: i }) => assert_eq!(*i, index),
                    Err(other) => panic!("{name}, {mode}: {other}"),
                }
                let outcome = got
                    .as_ref()
                    .map_or_else(|e| e.to_string(), |_| "the true sum".into());
                eprintln!(
                    "outside G1, {name}, {mode}, {:?}, {:?}: {outcome}",
                    e.config().force_backend,
                    e.arithmetic()
                );
            }
        }
        let strict = gpu_engine()
            .reconfigured(MsmConfig {
                validate_subgroup: true,
                ..gpu_engine().config().clone()
            })
            .unwrap();
        let refused = MsmError::BaseNotInSubgroup { index };
        assert_eq!(strict.msm(&b, &s), Err(refused.clone()));
        assert_eq!(strict.load_bases(&b).unwrap_err(), refused);
    }
    // The formulas' exceptional case itself: P and -P + T (T of order 2, not (-1, 0)) in
    // one bucket, so that an addition meets P + Q = T: the complete Weierstrass formulas give
    // (0 : 0 : 0), the Edwards ones Z = 0, poisoned by the shaders.
    let root = (-Fq::from(3u64)).sqrt().expect("p = 1 mod 3");
    let t = G1Affine::new_unchecked((Fq::one() + root) / Fq::from(2u64), Fq::zero());
    assert!(t.is_on_curve());
    let (mut b, mut s) = (bases.clone(), s.clone());
    b[12] = (-b[13] + t).into_affine();
    s[12] = s[13];
    let want = reference(&b, &s);
    for e in common::profile_engines()
        .into_iter()
        .chain([default_engine()])
    {
        for c in [4, 8] {
            let e = e
                .reconfigured(MsmConfig {
                    window_bits: Some(c),
                    ..e.config().clone()
                })
                .unwrap();
            let got = e.msm(&b, &s);
            if c == 8 && e.config().force_backend == Some(Backend::Gpu) {
                // With 128 buckets per window, P and Q sit alone in their bucket in most
                // windows, so the GPU path meets the case and must refuse, not guess.
                assert_eq!(
                    got,
                    Err(MsmError::BaseNotInSubgroup { index: 12 }),
                    "{:?}",
                    e.arithmetic()
                );
            }
            match got {
                Ok(g) => assert_eq!(g, want, "{:?}, c = {c}", e.arithmetic()),
                Err(MsmError::BaseNotInSubgroup { index: 12 }) => {}
                Err(other) => panic!("{:?}: {other}", e.arithmetic()),
            }
        }
    }
}

/// The convert stage at its batch boundaries, in every profile (the Edwards one shares one
/// field inversion among `CONVERT_BATCH` bases): sizes around one and two batches, identity
/// bases at a batch's start, middle and end, one-shot and resident, and SRE's merged points
/// converted after a resident prefix, a range that starts inside a batch.
#[test]
fn conversion_around_its_batch_size() {
    use gpu_msm::internals::gpu::field::CONVERT_BATCH;
    use gpu_msm::{SreOptions, SreStrategy};
    let b = CONVERT_BATCH as usize;
    for e in common::profile_engines() {
        let sre = e
            .reconfigured(MsmConfig {
                sre: gpu_msm::SreMode::On(SreOptions::new(SreStrategy::Indexed)),
                ..e.config().clone()
            })
            .unwrap();
        for n in [b - 1, b, b + 1, 2 * b + 1] {
            let mut bases = random_bases(n, 90 + n as u64);
            for i in [0, b / 2, b - 1, b] {
                if i < n {
                    bases[i] = G1Affine::identity();
                }
            }
            let s = random_scalars(n, 91);
            let want = reference(&bases, &s);
            let a = e.arithmetic();
            assert_eq!(e.msm(&bases, &s).unwrap(), want, "{a:?}, n = {n}, one-shot");
            let resident = e.load_bases(&bases).unwrap();
            assert_eq!(
                e.msm(&resident, &s).unwrap(),
                want,
                "{a:?}, n = {n}, resident"
            );
            // Equal scalars: SRE merges pairs and appends n / 2 points after the prefix.
            let equal = vec![s[3]; n];
            let (got, rep) = sre.msm_with_report(&resident, &equal).unwrap();
            assert_eq!(got, reference(&bases, &equal), "{a:?}, n = {n}, SRE");
            assert!(rep.sre.unwrap().stats.pairs > 0);
        }
    }
}

/// One-shot MSMs larger than `MsmConfig::max_slice_points` run in slices summed on the host:
/// sizes around the slice length and several slices, every profile, adversarial scalars and
/// bases with the identity, duplicates and P, -P pairs that straddle slice boundaries.
#[test]
fn one_shot_msms_in_slices() {
    let s = 20;
    for e in common::profile_engines() {
        let sliced = e
            .reconfigured(MsmConfig {
                max_slice_points: Some(s),
                ..e.config().clone()
            })
            .unwrap();
        let a = e.arithmetic();
        for n in [s, s + 1, 2 * s + 1] {
            let mut bases = random_bases(n, 300 + n as u64);
            if n > s {
                bases[s - 1] = G1Affine::identity();
                bases[s] = bases[s - 2]; // a duplicate in the next slice
                bases[n - 1] = -bases[0]; // P and -P in different slices
            }
            let sets = gpu_msm::inputs::adversarial_scalars(n, 301);
            let picked = ["random", "all equal", "one nonzero", "k and -k"];
            for (name, scalars) in sets.into_iter().filter(|(m, _)| picked.contains(m)) {
                let (got, rep) = sliced.msm_with_report(&bases, &scalars).unwrap();
                assert_eq!(got, reference(&bases, &scalars), "{a:?}, n = {n}, {name}");
                assert_eq!(rep.n, n);
                assert_eq!(rep.route.contains("slices"), n > s, "{}", rep.route);
            }
        }
    }
    let zero = MsmConfig {
        max_slice_points: Some(0),
        ..gpu_engine().config().clone()
    };
    assert!(matches!(
        gpu_engine().reconfigured(zero),
        Err(MsmError::InvalidConfig(_))
    ));
    // The adapter's own cap holds every buffer of a call: far above these sizes, so a
    // 2^16-point call runs whole.
    assert_eq!(gpu_engine().max_slice_points(1 << 16), Some(1 << 16));
}

/// The GPU bucket sort reads a base's identity bit, not the base (`count_digits`): identity
/// bases at the edges of a bit word (32 bases) and of a 16-byte load (128), one-shot, on a
/// resident set (whole and a prefix), on one stored with shifted copies, and in slices and
/// device parts, in every profile.
/// A bit on the wrong base would place an identity or drop a point: a wrong sum.
#[test]
fn identity_bits_at_word_and_load_boundaries() {
    use gpu_msm::{LoadOptions, Precompute};
    let n = 300;
    let mut bases = random_bases(n, 41);
    for i in [0, 31, 32, 63, 127, 128, 129, 255, 256, 299] {
        bases[i] = G1Affine::identity();
    }
    let scalars = random_scalars(n, 42);
    let on_gpu_sort = |what: &str, report: &gpu_msm::MsmReport| {
        assert_eq!(report.backend, Backend::Gpu, "{what}");
        assert!(
            report.route.contains("bucket sort on the GPU"),
            "{what}: {}",
            report.route
        );
    };
    for (case, e) in common::profile_engines().into_iter().enumerate() {
        let name = format!("{:?}", e.arithmetic());
        on_gpu_sort(
            &name,
            &check(&format!("{name} one-shot"), e, &bases, &scalars),
        );
        let plain = e.load_bases(&bases).unwrap();
        let copies = LoadOptions {
            precompute: Precompute::Factor(2),
            ..Default::default()
        };
        let shifted = e.load_bases_with(&bases, copies).unwrap();
        assert_eq!(shifted.precomputed_copies(), 2, "{name}");
        // Slices and parts of 100: each part's bits after its own bases, each one-shot
        // slice's after its upload.
        let sliced = e
            .reconfigured(MsmConfig {
                max_slice_points: Some(100),
                ..e.config().clone()
            })
            .unwrap();
        let report = check(&format!("{name} sliced"), &sliced, &bases, &scalars);
        assert!(
            report.route.contains("3 slices"),
            "{name}: {}",
            report.route
        );
        let parts = sliced.load_bases(&bases).unwrap();
        assert_eq!(parts.part_len(), 100, "{name}");
        // A call over the set reads its three parts in one pass.
        for (m, parts_in_one_pass) in [(n, true), (100, false)] {
            let (got, report) = sliced.msm_with_report(&parts, &scalars[..m]).unwrap();
            assert_eq!(
                got,
                reference(&bases[..m], &scalars[..m]),
                "{name} parts {m}"
            );
            assert_eq!(
                report.route.contains("3 device parts in one pass"),
                parts_in_one_pass,
                "{}",
                report.route
            );
            assert!(!report.route.contains("slices"), "{}", report.route);
        }
        for (what, set) in [("resident", &plain), ("shifted copies", &shifted)] {
            for m in [n, 257, 129 + case] {
                let (got, report) = e.msm_with_report(set, &scalars[..m]).unwrap();
                assert_eq!(
                    got,
                    reference(&bases[..m], &scalars[..m]),
                    "{name} {what} {m}"
                );
                on_gpu_sort(&format!("{name} {what} {m}"), &report);
            }
        }
    }
}
