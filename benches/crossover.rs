//! Crossover: CPU double-and-add, arkworks' `VariableBaseMSM::msm` and the GPU pipeline over
//! n = 2 ..= 2^20.
//!
//! Environment (so that a 2-core machine on software Vulkan can run a short slice):
//! - GPU_MSM_BENCH_SIZES: comma-separated sizes (overrides the powers of two below);
//! - GPU_MSM_BENCH_MAX_LOG: largest power of two (default 20);
//! - GPU_MSM_BENCH_DD_MAX: largest n timed with double-and-add (default 4096; it is linear
//!   in n with ~127 additions per point, hopeless beyond).

use ark_bls12_377::G1Projective;
use ark_ec::VariableBaseMSM;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gpu_msm::{inputs, internals::cpu, CalibrationSource, GpuMsm, MsmConfig};

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn sizes() -> Vec<usize> {
    if let Ok(list) = std::env::var("GPU_MSM_BENCH_SIZES") {
        return list
            .split(',')
            .map(|v| v.trim().parse().expect("GPU_MSM_BENCH_SIZES: numbers"))
            .collect();
    }
    let max_log = env_usize("GPU_MSM_BENCH_MAX_LOG").unwrap_or(20);
    (1..=max_log).map(|l| 1usize << l).collect()
}

fn bench(c: &mut Criterion) {
    let dd_max = env_usize("GPU_MSM_BENCH_DD_MAX").unwrap_or(4096);
    // Every call on the GPU: the bench measures the paths, not the routing.
    let engine = GpuMsm::with_config(MsmConfig {
        force_backend: Some(gpu_msm::Backend::Gpu),
        calibration: CalibrationSource::Defaults,
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group(format!("crossover on {}", engine.adapter_name()));
    group.sample_size(10);
    for n in sizes() {
        let bases = inputs::random_bases(n, 1);
        let scalars = inputs::random_scalars(n, 2);
        let expected = G1Projective::msm(&bases, &scalars).unwrap();
        assert_eq!(engine.msm(&bases, &scalars).unwrap(), expected);
        if n <= dd_max {
            assert_eq!(cpu::double_and_add(&bases, &scalars), expected);
            group.bench_with_input(BenchmarkId::new("double-and-add", n), &n, |b, _| {
                b.iter(|| cpu::double_and_add(&bases, &scalars))
            });
        }
        group.bench_with_input(BenchmarkId::new("arkworks", n), &n, |b, _| {
            b.iter(|| G1Projective::msm(&bases, &scalars).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("gpu", n), &n, |b, _| {
            b.iter(|| engine.msm(&bases, &scalars).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
