//! The bucket pipeline on the GPU (decomposition, counting sort, balanced accumulation)
//! against the host's digits (`src/digits/`, the oracle) and against arkworks.

use crate::common;

use ark_bls12_377::{Fr, G1Affine};
use ark_ff::{One, Zero};
use common::reference;
use gpu_msm::inputs::{adversarial_scalars, random_bases, random_scalars};
use gpu_msm::internals::digits::BucketPlan;
use gpu_msm::internals::gpu::sort::{
    accumulation_threads, ACCUMULATE_SLICE, CARRY_FANIN, CARRY_GROUP,
};
use gpu_msm::{Backend, BucketSort, GpuMsm, MsmConfig};

/// Bases with the identity, a duplicate and a P, -P pair.
fn bases(n: usize, seed: u64) -> Vec<G1Affine> {
    let mut b = random_bases(n, seed);
    if n > 5 {
        b[1] = G1Affine::identity();
        b[3] = b[2];
        b[5] = -b[4];
    }
    b
}

/// Every entry of the GPU sort against the host's plan: the same offsets, and in each
/// bucket the same entries (the GPU's order within a bucket is not fixed, so both are sorted).
/// The sort reads scalars and tests stored bases for the identity, the one part that differs
/// by profile: each shape runs on one profile in turn (every shape on every profile with
/// `GPU_MSM_FULL_TESTS=1`).
#[test]
fn gpu_bucket_sort_matches_the_host_oracle() {
    let engines = common::profile_engines();
    for (lane, e) in engines.iter().enumerate() {
        let ops = e.shader_ops().unwrap();
        let a = e.arithmetic();
        // n around the workgroup (64); c with W B + 1 below, at and above a scan block (1024).
        let shapes = [(63, 4), (64, 8), (65, 11), (200, 3), (129, 16), (64, 5)];
        for (n, c) in common::spread(shapes, lane, engines.len()) {
            let b = bases(n, n as u64);
            for (name, s) in adversarial_scalars(n, 7 + n as u64) {
                let (offsets, entries) = ops.bucket_sort(&b, &s, c).unwrap();
                let want = BucketPlan::new(&b, &s, c);
                assert_eq!(offsets, want.offsets, "{a:?}, n = {n}, c = {c}, {name}");
                for g in 0..want.offsets.len() - 1 {
                    let r = want.offsets[g] as usize..want.offsets[g + 1] as usize;
                    let mut got = entries[r.clone()].to_vec();
                    got.sort_unstable();
                    let mut exp = want.entries[r].to_vec();
                    exp.sort_unstable();
                    assert_eq!(got, exp, "{a:?}, n = {n}, c = {c}, {name}, bucket {g}");
                }
            }
        }
    }
}

fn gpu_sorting(e: &GpuMsm) -> GpuMsm {
    e.reconfigured(MsmConfig {
        bucket_sort: BucketSort::Gpu,
        ..e.config().clone()
    })
    .unwrap()
}

/// Whole MSMs on the GPU pipeline, every profile: the adversarial sets, and skewed inputs
/// whose entries straddle the accumulation slice and a carry lane's items (a hot bucket
/// spread over many slices, one nonzero scalar, sparse scalars), against arkworks; on the
/// default profile, also more accumulation threads than one carry workgroup joins.
#[test]
fn gpu_pipeline_msms_on_adversarial_and_skewed_inputs() {
    let slice = ACCUMULATE_SLICE as usize;
    let f = CARRY_FANIN as usize;
    for base in common::profile_engines() {
        let e = gpu_sorting(base);
        let a = e.arithmetic();
        let n = 48;
        let b = bases(n, 61);
        for (name, s) in adversarial_scalars(n, 63) {
            let (got, rep) = e.msm_with_report(&b, &s).unwrap();
            assert_eq!(got, reference(&b, &s), "{a:?}, {name}");
            assert_eq!(rep.backend, Backend::Gpu);
            assert!(
                rep.route.contains("bucket sort on the GPU"),
                "{}",
                rep.route
            );
        }
        for n in [slice - 1, slice, slice + 1, slice * f + 1] {
            let b = bases(n, n as u64);
            let mut sparse = vec![Fr::zero(); n];
            for (i, x) in random_scalars(n, 3).into_iter().enumerate() {
                if i % 97 == 0 {
                    sparse[i] = x;
                }
            }
            let cases = [
                ("all one", vec![Fr::one(); n]),
                ("all equal", vec![random_scalars(1, 5)[0]; n]),
                ("0/1", (0..n).map(|i| Fr::from((i % 2) as u64)).collect()),
                ("sparse", sparse),
                ("random", random_scalars(n, 9)),
            ];
            for (name, s) in cases {
                let (got, rep) = e
                    .msm_with_report(&b, &s)
                    .unwrap_or_else(|err| panic!("{a:?}, n = {n}, {name}: {err}"));
                assert_eq!(got, reference(&b, &s), "{a:?}, n = {n}, {name}");
                let want_entries = BucketPlan::new(&b, &s, rep.window_bits.unwrap())
                    .entries
                    .len();
                assert_eq!(rep.num_entries, want_entries, "{a:?}, n = {n}, {name}");
            }
        }
        if a == common::profile_engines()[0].arithmetic() {
            carry_crosses_workgroups(&e);
        }
        // Resident bases, a prefix of them, and a batch.
        let b = bases(300, 77);
        let resident = e.load_bases(&b).unwrap();
        let s = random_scalars(250, 78);
        assert_eq!(
            e.msm(&resident, &s).unwrap(),
            reference(&b[..250], &s),
            "{a:?}"
        );
        let batch = [random_scalars(300, 79), vec![Fr::one(); 300]];
        let refs: Vec<&[Fr]> = batch.iter().map(|v| v.as_slice()).collect();
        let sums = e.batch_msm(&resident, &refs).unwrap();
        for (s, got) in batch.iter().zip(sums) {
            assert_eq!(got, reference(&b, s), "{a:?}, batch");
        }
    }
}

/// More accumulation threads than one carry workgroup joins (`CARRY_GROUP` items), so that
/// two carry levels run and hot buckets cross workgroups: one hot bucket a window, a hot
/// bucket beside random ones, sparse and random scalars.
fn carry_crosses_workgroups(e: &GpuMsm) {
    let n = 3000;
    let b = bases(n, 81);
    let mut mixed = random_scalars(n, 82);
    for x in mixed.iter_mut().step_by(3) {
        *x = Fr::from(5u64);
    }
    let mut sparse = vec![Fr::zero(); n];
    for (i, x) in random_scalars(n, 83).into_iter().enumerate() {
        if i % 13 == 0 {
            sparse[i] = x;
        }
    }
    let cases = [
        ("all equal", vec![random_scalars(1, 84)[0]; n]),
        ("a third equal", mixed),
        ("sparse", sparse),
        ("random", random_scalars(n, 85)),
    ];
    for (name, s) in cases {
        let (got, rep) = e.msm_with_report(&b, &s).unwrap();
        assert_eq!(got, reference(&b, &s), "n = {n}, {name}");
        let windows =
            gpu_msm::internals::digits::num_windows(rep.window_bits.unwrap(), common::bits());
        let threads = accumulation_threads(n, windows);
        assert!(threads > CARRY_GROUP, "{threads} threads, {name}");
    }
}
