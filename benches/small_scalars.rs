//! Small scalars: arkworks' entry points for them (`msm_u1`, `msm_u8`, `msm_u16`, `msm_u32`,
//! `msm_u64`) against `GpuMsm` (GPU path forced, resident bases) on the same values, which
//! runs only the windows the largest scalar needs. Size 2^GPU_MSM_BENCH_SMALL_LOG (default
//! 16; lower it on software Vulkan).

use ark_bls12_377::{Fr, G1Projective};
use ark_ec::VariableBaseMSM;
use ark_ff::PrimeField;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use gpu_msm::inputs::{self, ScalarDistribution};
use gpu_msm::{Backend, GpuMsm, MsmConfig};

fn bench(c: &mut Criterion) {
    let log_n: u32 = std::env::var("GPU_MSM_BENCH_SMALL_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let engine = GpuMsm::with_config(MsmConfig {
        force_backend: Some(Backend::Gpu),
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let n = 1usize << log_n;
    let bases = inputs::random_bases(n, 1);
    let resident = engine.load_bases(&bases).unwrap();
    let mut group = c.benchmark_group(format!(
        "small scalars 2^{log_n} on {}",
        engine.adapter_name()
    ));
    group.sample_size(10);
    for bits in [1u32, 8, 16, 32, 64] {
        let scalars: Vec<Fr> = inputs::scalars(ScalarDistribution::SmallBits(bits), n, bits as u64);
        let small: Vec<u64> = scalars.iter().map(|k| k.into_bigint().0[0]).collect();
        let b = &bases;
        let ark: Box<dyn Fn() -> G1Projective + '_> = match bits {
            1 => {
                let v: Vec<bool> = small.iter().map(|&k| k == 1).collect();
                Box::new(move || G1Projective::msm_u1(b, &v))
            }
            8 => {
                let v: Vec<u8> = small.iter().map(|&k| k as u8).collect();
                Box::new(move || G1Projective::msm_u8(b, &v))
            }
            16 => {
                let v: Vec<u16> = small.iter().map(|&k| k as u16).collect();
                Box::new(move || G1Projective::msm_u16(b, &v))
            }
            32 => {
                let v: Vec<u32> = small.iter().map(|&k| k as u32).collect();
                Box::new(move || G1Projective::msm_u32(b, &v))
            }
            _ => {
                let v = small.clone();
                Box::new(move || G1Projective::msm_u64(b, &v))
            }
        };
        let expected = ark();
        assert_eq!(engine.msm(&resident, &scalars).unwrap(), expected);
        let full: Vec<Fr> = scalars.clone();
        group.bench_with_input(BenchmarkId::new("arkworks msm_uN", bits), &bits, |b, _| {
            b.iter(&ark)
        });
        group.bench_with_input(BenchmarkId::new("gpu-msm resident", bits), &bits, |b, _| {
            b.iter(|| engine.msm(&resident, &full).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
