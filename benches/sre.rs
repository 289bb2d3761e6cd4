//! SRE on and off through the GPU pipeline, N = 2^8 ..= 2^max (max from
//! GPU_MSM_BENCH_MAX_LOG, default 16), at the cost model's window size and at c = 4 and 8,
//! plus the search alone (to read its share of the MSM time). The scalar distribution comes
//! from GPU_MSM_BENCH_SCALARS (`uniform`, `distinct:K`, `bits:B`; default uniform).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gpu_msm::inputs::{self, ScalarDistribution};
use gpu_msm::internals::digits::{best_window_bits, AddCosts, DigitMatrix};
use gpu_msm::internals::sre::{self, SreOptions, SreStrategy};
use gpu_msm::{GpuMsm, MsmConfig, SreMode};

/// BLS12-377's scalar bits: the curve these benchmarks run on.
const BLS_SCALAR_BITS: u32 = 253;

fn bench(c: &mut Criterion) {
    let max_log: u32 = std::env::var("GPU_MSM_BENCH_MAX_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let dist = std::env::var("GPU_MSM_BENCH_SCALARS")
        .ok()
        .map(|s| ScalarDistribution::parse(&s).expect("uniform, distinct:K or bits:B"))
        .unwrap_or(ScalarDistribution::Uniform);
    let base: GpuMsm = GpuMsm::with_config(MsmConfig {
        force_backend: Some(gpu_msm::Backend::Gpu),
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let on = SreOptions::new(SreStrategy::Indexed);
    let mut group = c.benchmark_group(format!("sre {dist} on {}", base.adapter_name()));
    group.sample_size(10);
    for log_n in 8..=max_log {
        let n = 1usize << log_n;
        let bases = inputs::random_bases(n, 1);
        let scalars = inputs::scalars(dist, n, 2);
        let auto_c = best_window_bits(n, BLS_SCALAR_BITS, AddCosts::RCB);
        for (label, window) in [("auto-c", None), ("c4", Some(4)), ("c8", Some(8))] {
            let cw = window.unwrap_or(auto_c);
            for (mode_name, mode) in [("off", SreMode::Off), ("indexed", SreMode::On(on))] {
                let engine = base
                    .reconfigured(MsmConfig {
                        window_bits: window,
                        sre: mode,
                        ..base.config().clone()
                    })
                    .unwrap();
                // Warm up and check once against the plain result.
                assert_eq!(
                    engine.msm(&bases, &scalars).unwrap(),
                    base.msm(&bases, &scalars).unwrap()
                );
                group.bench_with_input(
                    BenchmarkId::new(format!("msm {label}={cw} sre-{mode_name}"), log_n),
                    &n,
                    |b, _| b.iter(|| engine.msm(&bases, &scalars).unwrap()),
                );
            }
            let d = DigitMatrix::new(&bases, &scalars, cw);
            group.bench_with_input(
                BenchmarkId::new(format!("search only {label}={cw}"), log_n),
                &n,
                |b, _| b.iter(|| sre::search(&d, &on, None).stats.pairs),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
