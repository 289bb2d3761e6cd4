//! Phase breakdown of the GPU path at 2^16 and 2^20 (GPU_MSM_BENCH_PHASE_LOGS, default
//! "16,20"): criterion times the whole call; after each size the median of every phase over
//! all the calls it ran is printed with its share of the total, including the host's final
//! window reduction (the question of barretenberg's phase-breakdown PR, asked of our engine).

use std::time::{Duration, Instant};

use ark_bls12_377::G1Projective;
use ark_ec::VariableBaseMSM;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gpu_msm::{inputs, CalibrationSource, GpuMsm, MsmConfig, MsmReport};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn print_phases(log_n: u32, reports: &[MsmReport]) {
    let total = median(reports.iter().map(|r| r.phases.total).collect());
    println!(
        "phases at 2^{log_n} on {} ({} calls, c = {:?}, GPU timing {:?}):",
        reports[0].adapter,
        reports.len(),
        reports[0].window_bits,
        reports[0].gpu_timing
    );
    type Get = fn(&MsmReport) -> Duration;
    let rows: [(&str, Get); 10] = [
        ("digits", |r| r.phases.digits),
        ("sre search", |r| r.phases.sre_search),
        ("merged points", |r| r.phases.merged_points),
        ("upload", |r| r.phases.upload),
        ("point conversion", |r| r.phases.point_conversion),
        ("bucket accumulation", |r| r.phases.bucket_accumulation),
        ("bucket reduction", |r| r.phases.bucket_reduction),
        ("download", |r| r.phases.download),
        ("window reduction", |r| r.phases.window_reduction),
        ("total", |r| r.phases.total),
    ];
    for (name, get) in rows {
        let m = median(reports.iter().map(get).collect());
        println!(
            "  {name:<20} {:>11.3} ms  {:>6.2}%",
            m.as_secs_f64() * 1e3,
            100.0 * m.as_secs_f64() / total.as_secs_f64().max(1e-12)
        );
    }
}

fn bench(c: &mut Criterion) {
    let logs: Vec<u32> = std::env::var("GPU_MSM_BENCH_PHASE_LOGS")
        .unwrap_or_else(|_| "16,20".into())
        .split(',')
        .map(|v| v.trim().parse().expect("GPU_MSM_BENCH_PHASE_LOGS: numbers"))
        .collect();
    let engine = GpuMsm::with_config(MsmConfig {
        calibration: CalibrationSource::Defaults,
        force_backend: Some(gpu_msm::Backend::Gpu),
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group(format!("phases on {}", engine.adapter_name()));
    group.sample_size(10);
    for log_n in logs {
        let n = 1usize << log_n;
        let bases = inputs::random_bases(n, 1);
        let scalars = inputs::random_scalars(n, 2);
        // Warm up (first-dispatch compilation) and check the result once.
        let expected = G1Projective::msm(&bases, &scalars).unwrap();
        assert_eq!(engine.msm(&bases, &scalars).unwrap(), expected);
        let mut reports = Vec::new();
        group.bench_with_input(BenchmarkId::new("msm", log_n), &n, |b, _| {
            b.iter_custom(|iters| {
                let t = Instant::now();
                for _ in 0..iters {
                    reports.push(engine.msm_with_report(&bases, &scalars).unwrap().1);
                }
                t.elapsed()
            })
        });
        print_phases(log_n, &reports);
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
