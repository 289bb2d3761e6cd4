//! The host (CPU) phases at n = 2^16 (GPU_MSM_BENCH_THREAD_LOG to change it). No GPU needed.
//!
//! The engine runs its parallel host work on a pool of its own (`host_pool`), sized once per
//! process by `RAYON_NUM_THREADS` (default: every core), whatever pool the caller is on. To
//! sweep threads, run the bench once per count:
//! `RAYON_NUM_THREADS=1 cargo bench --bench threads`, then 2, 4, ...
//!
//! - digits: scalars to signed digits and the bucket entry lists (`BucketPlan::new`);
//! - pack: bases into the shaders' upload words;
//! - merged points: the SRE batch R = P_i + P_j (pairs from the indexed search on scalars
//!   drawn from 16 distinct values, where SRE finds many);
//! - sre search: the indexed search (single-threaded by design: a reference line);
//! - window reduction: Horner over the window sums (single-threaded by design).

use ark_bls12_377::{G1Affine, G1Projective};
use ark_ec::PrimeGroup;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gpu_msm::inputs::{self, ScalarDistribution};
use gpu_msm::internals::cpu;
use gpu_msm::internals::digits::{
    best_window_bits, num_windows, AddCosts, BucketPlan, DigitMatrix,
};
use gpu_msm::internals::gpu::packing::affine_upload_words;
use gpu_msm::internals::sre::{self, SreOptions, SreStrategy};
use rayon::prelude::*;

/// BLS12-377's scalar bits: the curve these benchmarks run on.
const BLS_SCALAR_BITS: u32 = 253;

fn bench(c: &mut Criterion) {
    let log_n: u32 = std::env::var("GPU_MSM_BENCH_THREAD_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let n = 1usize << log_n;
    let cw = best_window_bits(n, BLS_SCALAR_BITS, AddCosts::RCB);
    let bases: Vec<G1Affine> = inputs::random_bases(n, 1);
    let scalars = inputs::random_scalars(n, 2);
    let repeated = inputs::scalars(ScalarDistribution::FewDistinct(16), n, 3);
    let opts = SreOptions::new(SreStrategy::Indexed);
    let d = DigitMatrix::new(&bases, &repeated, cw);
    let pairs = sre::search(&d, &opts, None).pairs;
    let sums: Vec<G1Projective> = (0..num_windows(cw, BLS_SCALAR_BITS))
        .map(|i| G1Projective::generator() * ark_bls12_377::Fr::from(i as u64 + 3))
        .collect();

    let threads = rayon::current_num_threads();
    let mut group = c.benchmark_group(format!("host phases at 2^{log_n}, c = {cw}"));
    group.sample_size(10);
    group.bench_with_input(BenchmarkId::new("digits", threads), &threads, |b, _| {
        b.iter(|| BucketPlan::new(&bases, &scalars, cw).entries.len())
    });
    group.bench_with_input(BenchmarkId::new("pack", threads), &threads, |b, _| {
        b.iter(|| {
            // x and y, 12 words each.
            let mut out = vec![0u32; n * 24];
            out.par_chunks_mut(24)
                .zip(bases.par_iter())
                .for_each(|(o, p)| affine_upload_words(p, o));
            out.len()
        })
    });
    group.bench_with_input(
        BenchmarkId::new(format!("merged points ({} pairs)", pairs.len()), threads),
        &threads,
        |b, _| b.iter(|| sre::merged_points(&bases, &pairs).len()),
    );
    group.bench_with_input(BenchmarkId::new("sre search", threads), &threads, |b, _| {
        b.iter(|| sre::search(&d, &opts, None).stats.pairs)
    });
    group.bench_with_input(
        BenchmarkId::new("window reduction", threads),
        &threads,
        |b, _| b.iter(|| cpu::window_reduction(&sums, cw)),
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
