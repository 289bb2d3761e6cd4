//! Resident bases, batches, small scalars and skewed inputs against arkworks.

use crate::common;

use ark_bls12_377::{Fr, G1Affine, G1Projective};
use ark_ff::{One, Zero};
use common::{gpu_engine, reference};
use gpu_msm::inputs::{random_bases, random_scalars, scalars, ScalarDistribution};
use gpu_msm::{Backend, GpuMsm, MsmConfig, MsmError};

#[test]
fn prefixes_of_resident_bases() {
    fn shared_across_threads<T: Send + Sync + Clone>() {}
    shared_across_threads::<gpu_msm::Bases>();
    let e = gpu_engine();
    let n = 40;
    let mut bases = random_bases(n, 1);
    bases[3] = G1Affine::identity();
    bases[7] = bases[6];
    let all = random_scalars(n + 1, 2);
    let handle = e.load_bases(&bases).unwrap();
    assert_eq!(handle.len(), n);
    assert!(handle.device_bytes() > 0);
    let h2 = handle.clone();
    for len in [0, 1, 2, 11, n - 1, n] {
        let s = &all[..len];
        let (got, rep) = e.msm_with_report(&h2, s).unwrap();
        assert_eq!(got, reference(&bases[..len], s), "prefix {len}");
        if len > 0 {
            assert_eq!(rep.backend, Backend::Gpu);
            assert!(rep.resident_bases);
            assert_counted_dispatches(&rep, &format!("prefix {len}"));
        }
    }
    assert_eq!(
        e.msm(&handle, &all),
        Err(MsmError::LengthMismatch {
            bases: n,
            scalars: n + 1
        })
    );
    // One-shot calls keep requiring equal lengths.
    assert!(matches!(
        e.msm(&bases[..], &all[..n - 1]),
        Err(MsmError::LengthMismatch { .. })
    ));
    drop(handle);
    drop(h2);
    let s = &all[..n];
    assert_eq!(e.msm(&bases, s).unwrap(), reference(&bases, s));
}

/// Asserts that a call ran on the GPU bucket sort and ran the dispatches
/// `gpu_msm::internals::gpu::counts` counts for it (one unsliced call on resident bases: no convert).
fn assert_counted_dispatches(rep: &gpu_msm::MsmReport, what: &str) {
    assert!(
        rep.route.contains("bucket sort on the GPU"),
        "{what}: {}",
        rep.route
    );
    let c = rep.window_bits.unwrap();
    let counts = gpu_msm::internals::gpu::counts::CallCounts::device_sort(
        rep.n,
        c,
        common::bls_profile(rep.arithmetic.unwrap()),
    )
    .unwrap();
    assert_eq!(rep.dispatches, counts.dispatches(), "{what}");
}

/// The op counts' dispatches are the engine's, where the scan and carry levels change.
#[test]
fn dispatch_counts_match_the_engine() {
    let e = gpu_engine();
    let n = 5000;
    let bases = random_bases(n, 11);
    let handle = e.load_bases(&bases).unwrap();
    let all = random_scalars(n, 12);
    // With the Edwards default: 2^12 at c = 9, 1856 accumulation threads, two carry levels
    // (1024 items a workgroup); 5000 at c = 9 (29 windows), 2266 threads. The counts take c
    // from the report.
    for len in [1, 64, 1 << 12, n] {
        let (got, rep) = e.msm_with_report(&handle, &all[..len]).unwrap();
        assert_eq!(got, reference(&bases[..len], &all[..len]), "n = {len}");
        assert_counted_dispatches(&rep, &format!("n = {len}"));
    }
}

/// On an engine of its own: the pool's workspaces are the engine's, and the tests beside
/// this one (in one binary) call the shared engines at the same time.
#[test]
fn steady_state_allocates_nothing_and_dropped_bases_free_memory() {
    let e = &GpuMsm::with_config(gpu_engine().config().clone()).unwrap();
    let n = 64;
    let bases = random_bases(n, 3);
    let handle = e.load_bases(&bases).unwrap();
    let s = random_scalars(n, 4);
    let want = reference(&bases, &s);
    // The first calls may grow the pooled buffers; the same call again finds them.
    for _ in 0..2 {
        assert_eq!(e.msm(&handle, &s).unwrap(), want);
    }
    let (got, rep) = e.msm_with_report(&handle, &s).unwrap();
    assert_eq!(got, want);
    assert_eq!(rep.buffers_allocated, 0, "{rep}");
    assert!(rep.host_time <= rep.phases.total);
    assert!(e.idle_workspaces() >= 1);
    // Loading and dropping many sets does not exhaust the device.
    for k in 0..20 {
        let h = e.load_bases(&bases).unwrap();
        if k % 10 == 0 {
            assert_eq!(e.msm(&h, &s).unwrap(), want);
        }
    }
}

#[test]
fn another_engines_bases_are_refused() {
    let other = gpu_msm::GpuMsm::with_config(MsmConfig {
        force_backend: Some(Backend::Gpu),
        ..Default::default()
    })
    .unwrap();
    let bases = random_bases(8, 5);
    let theirs = other.load_bases(&bases).unwrap();
    assert_eq!(
        gpu_engine().msm(&theirs, &random_scalars(8, 6)),
        Err(MsmError::ForeignBases)
    );
    // An engine reconfigured from the loader shares its device, and its bases.
    let same = other
        .reconfigured(MsmConfig {
            window_bits: Some(5),
            ..other.config().clone()
        })
        .unwrap();
    let s = random_scalars(8, 7);
    assert_eq!(same.msm(&theirs, &s).unwrap(), reference(&bases, &s));
    // Bases off the curve are refused when loaded.
    let mut bad = bases.clone();
    bad[2] = G1Affine::new_unchecked(bad[2].x, bad[2].y + ark_bls12_377::Fq::one());
    assert_eq!(
        gpu_engine().load_bases(&bad).unwrap_err(),
        MsmError::InvalidBase { index: 2 }
    );
}

#[test]
fn batches_equal_one_by_one_results() {
    let e = gpu_engine();
    let n = 300;
    let bases = random_bases(n, 8);
    let handle = e.load_bases(&bases).unwrap();
    let vectors: Vec<Vec<Fr>> = vec![
        random_scalars(n, 9),
        vec![Fr::zero(); 100],
        scalars(ScalarDistribution::SmallBits(1), 257, 10),
        scalars(ScalarDistribution::SmallBits(8), n, 11),
        vec![random_scalars(1, 12)[0]; 200],
        vec![],
        random_scalars(1, 13),
    ];
    let refs: Vec<&[Fr]> = vectors.iter().map(|v| v.as_slice()).collect();
    let t = std::time::Instant::now();
    let got = e.batch_msm_with_reports(&handle, &refs).unwrap();
    let wall = t.elapsed();
    // Each report counts its own vector only: the host work done for the next vector while
    // this one was on the GPU is not in it, so the reports do not add up past the call.
    let sum: std::time::Duration = got.iter().map(|(_, r)| r.phases.total).sum();
    assert!(
        sum <= wall + std::time::Duration::from_millis(1),
        "{sum:?} > {wall:?}"
    );
    assert_eq!(got.len(), vectors.len());
    for (k, ((sum, rep), v)) in got.iter().zip(&vectors).enumerate() {
        assert_eq!(*sum, reference(&bases[..v.len()], v), "vector {k}");
        assert_eq!(*sum, e.msm(&handle, v).unwrap(), "vector {k}");
        assert!(rep.resident_bases);
    }
    // One bad vector fails the whole call with its index, before any work.
    let long = random_scalars(n + 1, 14);
    let bad: Vec<&[Fr]> = vec![&vectors[0], &long];
    match e.batch_msm(&handle, &bad) {
        Err(MsmError::Batch { index: 1, source }) => {
            assert!(matches!(*source, MsmError::LengthMismatch { .. }))
        }
        other => panic!("{other:?}"),
    }
    assert!(e.batch_msm(&handle, &[]).unwrap().is_empty());
}

/// On the host's bucket lists small scalars run only the windows they need, and zero scalars
/// place nothing and cost no GPU work; the GPU bucket sort runs every window (the host never
/// looks at a scalar) and skips the empty ones in the reduction.
#[test]
fn small_scalars_run_fewer_windows() {
    let host = gpu_engine()
        .reconfigured(gpu_msm::MsmConfig {
            bucket_sort: gpu_msm::BucketSort::Host,
            ..gpu_engine().config().clone()
        })
        .unwrap();
    let e = &host;
    let n = 200;
    let bases = random_bases(n, 15);
    let handle = e.load_bases(&bases).unwrap();
    for bits in [1u32, 2, 8, 16, 64, 65, 200] {
        let s = scalars(ScalarDistribution::SmallBits(bits), n, bits as u64);
        let (got, rep) = e.msm_with_report(&handle, &s).unwrap();
        assert_eq!(got, reference(&bases, &s), "bits = {bits}");
        let c = rep.window_bits.unwrap();
        let top = gpu_msm::internals::digits::scalar_integers(&bases, &s).1;
        assert_eq!(
            rep.num_windows,
            gpu_msm::internals::digits::windows_for_bits(top, c),
            "bits = {bits}"
        );
        assert!(
            rep.num_windows < gpu_msm::internals::digits::num_windows(c, common::bits())
                || bits > 240
        );
    }
    let zeros = vec![Fr::zero(); n];
    let (got, rep) = e.msm_with_report(&handle, &zeros).unwrap();
    assert!(got.is_zero());
    assert_eq!((rep.num_entries, rep.num_windows), (0, 0));
    // One nonzero scalar among zeros.
    let mut one = zeros.clone();
    one[n - 1] = -Fr::one();
    assert_eq!(
        e.msm(&handle, &one).unwrap(),
        G1Projective::from(-bases[n - 1])
    );
    // The same on the GPU bucket sort.
    let e = gpu_engine();
    for bits in [1u32, 8, 65] {
        let s = scalars(ScalarDistribution::SmallBits(bits), n, bits as u64);
        let (got, rep) = e.msm_with_report(&handle, &s).unwrap();
        assert_eq!(got, reference(&bases, &s), "GPU sort, bits = {bits}");
        let c = rep.window_bits.unwrap();
        assert_eq!(
            rep.num_windows,
            gpu_msm::internals::digits::num_windows(c, common::bits())
        );
    }
    let (got, rep) = e.msm_with_report(&handle, &zeros).unwrap();
    assert!(got.is_zero());
    assert_eq!(rep.num_entries, 0);
    assert_eq!(
        e.msm(&handle, &one).unwrap(),
        G1Projective::from(-bases[n - 1])
    );
}

/// Resident sets larger than one part (`MsmConfig::max_slice_points` forces small parts):
/// calls on prefixes within the first part, across parts and over all of them (one pass
/// over the parts they read), a batch, and SRE's merged points appended to a part (a set
/// loaded by an engine with SRE: one part a call), in every profile, against arkworks.
#[test]
fn resident_sets_in_parts() {
    use gpu_msm::{SreOptions, SreStrategy};
    let part = 20;
    for base in common::profile_engines() {
        let e = base
            .reconfigured(gpu_msm::MsmConfig {
                max_slice_points: Some(part),
                ..base.config().clone()
            })
            .unwrap();
        let a = e.arithmetic();
        let n = 2 * part + 5;
        let mut bases = random_bases(n, 500);
        bases[part] = G1Affine::identity();
        bases[part + 1] = bases[part - 1];
        let handle = e.load_bases(&bases).unwrap();
        assert_eq!(handle.part_len(), part);
        for m in [part - 1, part, part + 1, n] {
            let s = random_scalars(m, 501 + m as u64);
            let (got, rep) = e.msm_with_report(&handle, &s).unwrap();
            assert_eq!(got, reference(&bases[..m], &s), "{a:?}, prefix {m}");
            assert!(rep.resident_bases);
            let one_pass = rep.route.contains("device parts in one pass");
            assert_eq!(one_pass, m > part, "{}", rep.route);
            assert!(!rep.route.contains("slices"), "{}", rep.route);
        }
        let vectors = [random_scalars(n, 502), vec![Fr::one(); part + 3]];
        let refs: Vec<&[Fr]> = vectors.iter().map(|v| v.as_slice()).collect();
        for (s, got) in refs.iter().zip(e.batch_msm(&handle, &refs).unwrap()) {
            assert_eq!(got, reference(&bases[..s.len()], s), "{a:?}, batch");
        }
        let sre = e
            .reconfigured(gpu_msm::MsmConfig {
                sre: gpu_msm::SreMode::On(SreOptions::new(SreStrategy::Indexed)),
                ..e.config().clone()
            })
            .unwrap();
        let equal = vec![random_scalars(1, 503)[0]; n];
        let sre_set = sre.load_bases(&bases).unwrap();
        assert_eq!(sre_set.parts_per_call(), 1, "{a:?}");
        for set in [&handle, &sre_set] {
            let (got, rep) = sre.msm_with_report(set, &equal).unwrap();
            assert_eq!(got, reference(&bases, &equal), "{a:?}, SRE: {}", rep.route);
        }
    }
}
