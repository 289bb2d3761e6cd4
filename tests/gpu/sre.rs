//! SRE through the GPU pipeline against arkworks' `VariableBaseMSM::msm`: every strategy,
//! with and without early stopping, on random and adversarial scalars and bases, and `Auto`.

use crate::common;

use ark_bls12_377::{Fr, G1Affine};
use common::{gpu_engine, reference};
use gpu_msm::inputs::{adversarial_scalars, random_bases, random_scalars};
use gpu_msm::{Backend, GpuMsm, MsmConfig, SreMode};
use gpu_msm::{SreOptions, SreStrategy, PAPER_EARLY_STOP};

fn engine(sre: SreMode, window_bits: Option<u32>) -> GpuMsm {
    let base = gpu_engine();
    base.reconfigured(MsmConfig {
        sre,
        window_bits,
        ..base.config().clone()
    })
    .expect("same device")
}

fn bases_with_traps(n: usize) -> Vec<G1Affine> {
    let mut b = random_bases(n, 22);
    b[1] = G1Affine::identity();
    b[3] = b[2]; // duplicate: merged R = 2 P
    b[5] = -b[4]; // P and -P: merged R may be the identity
    b
}

#[test]
fn every_strategy_matches_arkworks() {
    let n = 48;
    let bases = bases_with_traps(n);
    for strategy in SreStrategy::ALL {
        for early_stop in [None, Some(PAPER_EARLY_STOP)] {
            let opts = SreOptions {
                strategy,
                early_stop,
                opposite: true,
            };
            for c in [4, 8] {
                let e = engine(SreMode::On(opts), Some(c));
                for (name, scalars) in adversarial_scalars(n, 21) {
                    let (got, rep) = e.msm_with_report(&bases, &scalars).unwrap();
                    assert_eq!(got, reference(&bases, &scalars), "{name}, c={c}, {opts:?}");
                    assert_eq!(rep.backend, Backend::Gpu);
                    let sre = rep.sre.expect("SRE report");
                    assert!(sre.applied);
                    let st = sre.stats;
                    // Entries placed: plain ones minus those the merged points took over.
                    assert!(
                        rep.num_entries as u64 <= st.nonzero_digits - st.merged_windows,
                        "{name}: {} entries, {st:?}",
                        rep.num_entries
                    );
                }
            }
        }
    }
}

#[test]
fn equal_scalars_halve_the_entries() {
    let n = 200;
    let bases = random_bases(n, 3);
    let k = random_scalars(1, 4)[0];
    let scalars = vec![k; n];
    let plain = gpu_engine().msm_with_report(&bases, &scalars).unwrap().1;
    let e = engine(SreMode::On(SreOptions::new(SreStrategy::Indexed)), None);
    let (got, rep) = e.msm_with_report(&bases, &scalars).unwrap();
    assert_eq!(got, reference(&bases, &scalars));
    let st = rep.sre.unwrap().stats;
    assert_eq!(st.pairs, n as u64 / 2);
    assert_eq!(rep.num_entries, plain.num_entries / 2);
    assert!(st.redundancy_percent() > 45.0, "{st:?}");
}

#[test]
fn auto_is_plain_until_measured_and_always_right() {
    let e = engine(SreMode::Auto, None);
    let n = 1024;
    let bases = random_bases(n, 5);
    let k = random_scalars(1, 6)[0];
    let repeated = vec![k; n];
    let (got, rep) = e.msm_with_report(&bases, &repeated).unwrap();
    assert_eq!(got, reference(&bases, &repeated));
    let sre = rep.sre.unwrap();
    assert!(!sre.applied);
    assert!(
        sre.reason.contains("no GPU call measured"),
        "{}",
        sre.reason
    );
    // Measured now: whatever the model decides, the result stays right.
    for (name, scalars) in adversarial_scalars(n, 21) {
        let (got, rep) = e.msm_with_report(&bases, &scalars).unwrap();
        assert_eq!(got, reference(&bases, &scalars), "{name}");
        assert!(rep.sre.is_some());
    }
}

#[test]
fn reconfigured_keeps_the_device_only() {
    let base = gpu_engine();
    let mut other = base.config().clone();
    other.shader_runtime_checks = !other.shader_runtime_checks;
    assert!(base.reconfigured(other).is_err());
    let mut bad = base.config().clone();
    bad.sre = SreMode::On(SreOptions {
        early_stop: Some(1.5),
        ..SreOptions::new(SreStrategy::Array)
    });
    assert!(base.reconfigured(bad).is_err());
}

/// Around `AUTO_SAMPLE`, where the pilot stops being the whole input and becomes a strided
/// sample: Auto's result is right on both sides (second call: rates measured).
#[test]
fn auto_around_the_pilot_sample_size() {
    use gpu_msm::internals::sre::auto::AUTO_SAMPLE;
    let e = engine(SreMode::Auto, None);
    let values = random_scalars(4, 31);
    for n in [AUTO_SAMPLE - 1, AUTO_SAMPLE, AUTO_SAMPLE + 1] {
        let bases = random_bases(n, n as u64);
        let scalars: Vec<Fr> = (0..n).map(|i| values[i * 7 % 4]).collect();
        for call in 0..2 {
            let (got, rep) = e.msm_with_report(&bases, &scalars).unwrap();
            assert_eq!(got, reference(&bases, &scalars), "n = {n}, call {call}");
            let sre = rep.sre.unwrap();
            if sre.applied {
                assert!(sre.stats.pairs > 0, "n = {n}: {}", sre.reason);
            }
        }
    }
}

/// Merged points in hot buckets around the accumulation chunk cap: with all scalars equal,
/// every pair's R lands in the same bucket of each window, m = n / 2 entries per bucket.
#[test]
fn merged_points_around_the_chunk_cap() {
    use gpu_msm::internals::digits::{chunk_entries, MIN_CHUNK_ENTRIES};
    let e = engine(SreMode::On(SreOptions::new(SreStrategy::Indexed)), Some(8));
    let k = random_scalars(1, 41)[0];
    let m = MIN_CHUNK_ENTRIES as usize;
    for pairs in [m - 1, m, m + 1] {
        let n = 2 * pairs;
        let bases = random_bases(n, pairs as u64);
        let scalars = vec![k; n];
        let (got, rep) = e.msm_with_report(&bases, &scalars).unwrap();
        assert_eq!(got, reference(&bases, &scalars), "{pairs} pairs");
        assert_eq!(rep.sre.unwrap().stats.pairs, pairs as u64);
        assert_eq!(chunk_entries(rep.num_entries), MIN_CHUNK_ENTRIES);
    }
}
