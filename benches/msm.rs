//! arkworks' CPU MSM against `GpuMsm` (GPU path forced) for n = 2^10 ..= 2^max (max from
//! GPU_MSM_BENCH_MAX_LOG, default 16; lower it on software Vulkan, where 2^16 takes seconds
//! per call): one-shot calls (bases uploaded by each call) and calls on resident bases.

use ark_bls12_377::G1Projective;
use ark_ec::VariableBaseMSM;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gpu_msm::{inputs, Backend, GpuMsm, MsmConfig};

fn bench(c: &mut Criterion) {
    let max_log: u32 = std::env::var("GPU_MSM_BENCH_MAX_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let engine = GpuMsm::with_config(MsmConfig {
        force_backend: Some(Backend::Gpu),
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group(format!("msm on {}", engine.adapter_name()));
    group.sample_size(10);
    for log_n in 10..=max_log {
        let n = 1usize << log_n;
        let bases = inputs::random_bases(n, 1);
        let scalars = inputs::random_scalars(n, 2);
        // Warm the GPU path (first-dispatch compilation) and check it once.
        let expected = G1Projective::msm(&bases, &scalars).unwrap();
        assert_eq!(engine.msm(&bases, &scalars).unwrap(), expected);
        let resident = engine.load_bases(&bases).unwrap();
        assert_eq!(engine.msm(&resident, &scalars).unwrap(), expected);
        group.bench_with_input(BenchmarkId::new("arkworks", log_n), &n, |b, _| {
            b.iter(|| G1Projective::msm(&bases, &scalars).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("gpu-msm", log_n), &n, |b, _| {
            b.iter(|| engine.msm(&bases, &scalars).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("gpu-msm resident", log_n), &n, |b, _| {
            b.iter(|| engine.msm(&resident, &scalars).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
