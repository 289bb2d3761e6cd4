//! The arithmetic profiles side by side on one adapter: pipeline creation, the first
//! dispatch (the driver's JIT), field multiplications per second (a chain of multiplications
//! per thread in the self-test kernel) and MSM time against arkworks (GPU path forced,
//! resident bases), every result checked, on BLS12-377 G1 or `--curve bls12-381 | bn254` and `--group g2`.
//!
//! cargo run --release --example profiles -- --logs 14,16   (`--help` lists the flags)
//!
//! `--dump-wgsl DIR` writes the assembled WGSL of every profile's shader modules instead.
//! `--precompute auto` (or a factor) times sets loaded with shifted copies, one per size.
//! `--stream-chunk N|off` sets how the scalars are streamed; the host time per call
//! (`MsmReport::host_time`, median) is printed beside the MSM time.

mod common;

use std::time::{Duration, Instant};

use ark_ec::short_weierstrass::Projective;
use ark_ec::VariableBaseMSM;
use ark_ff::{Field, UniformRand};
use clap::Parser;
use common::cli::{ProfilesCli, StreamChunkArg};
use gpu_msm::internals::curve::{Fe, Fr};
use gpu_msm::{inputs, AdapterChoice, Arithmetic, Backend, GpuCurve, GpuMsm, MsmConfig};

/// Chained multiplications per thread of the field-rate run (`--rate-threads` threads).
const RATE_CHAIN: u32 = 2000;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The profiles `C` allows (the Edwards one needs a point of order 2).
fn curve_profiles<C: GpuCurve>() -> Vec<Arithmetic> {
    (Arithmetic::ALL.into_iter())
        .filter(|a| C::spec().has_edwards_map() || !a.is_edwards())
        .collect()
}

/// Writes DIR/<profile>/<module>.wgsl for every profile of `C` and module, and lists them.
fn dump_wgsl<C: GpuCurve>(dir: &std::path::Path) -> std::io::Result<()> {
    for a in curve_profiles::<C>() {
        let d = dir.join(format!("{a:?}"));
        std::fs::create_dir_all(&d)?;
        for m in gpu_msm::internals::gpu::wgsl_modules(a.on(C::spec())) {
            let path = d.join(format!("{}.wgsl", m.name));
            std::fs::write(&path, &m.source)?;
            println!(
                "{}: entry points {:?}, after the prelude {:?}, {} lines",
                path.display(),
                m.entry_points,
                m.files,
                m.source.lines().count()
            );
        }
    }
    Ok(())
}

fn main() {
    let cli = ProfilesCli::parse();
    on_curve!(cli.curve, cli.group, C => run::<C>(cli))
}

fn run<C: GpuCurve>(cli: ProfilesCli) {
    if let Some(dir) = &cli.dump_wgsl {
        dump_wgsl::<C>(dir).expect("writing the WGSL");
        return;
    }
    let (logs, reps, adapter) = (cli.logs, cli.reps as usize, cli.adapter);
    let mut rng = ark_std::test_rng();
    let max = 1usize << logs.iter().max().copied().unwrap_or(10);
    let bases = inputs::random_bases::<C>(max, 1);
    let scalars: Vec<Fr<C>> = inputs::random_scalars(max, 2);
    println!("curve: {}", C::NAME);
    println!("| profile | pipelines | known-answer test (first dispatches: JIT) | first MSM (2^10 or less) | second MSM | field mul/s | MSM n | gpu-msm | arkworks | ratio | host time |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let profiles: Vec<Arithmetic> = if cli.profiles.is_empty() {
        curve_profiles::<C>()
    } else {
        cli.profiles.iter().map(|&a| a.into()).collect()
    };
    for a in profiles {
        let engine = match GpuMsm::<C>::with_config(MsmConfig {
            force_backend: Some(Backend::Gpu),
            arithmetic: Some(a),
            adapter: AdapterChoice {
                name_contains: adapter.clone(),
                ..Default::default()
            },
            stream_chunk_scalars: StreamChunkArg::config(cli.stream_chunk),
            ..Default::default()
        }) {
            Ok(e) => e,
            Err(e) => {
                println!("| {a:?} | not run: {e} |");
                continue;
            }
        };
        let small = (1usize << 10).min(max);
        let want = Projective::<C>::msm(&bases[..small], &scalars[..small]).unwrap();
        let t = Instant::now();
        assert_eq!(
            engine.msm(&bases[..small], &scalars[..small]).unwrap(),
            want
        );
        let first = t.elapsed();
        let t = Instant::now();
        assert_eq!(
            engine.msm(&bases[..small], &scalars[..small]).unwrap(),
            want
        );
        let second = t.elapsed();
        // Field rate: `--rate-threads` threads, each RATE_CHAIN chained multiplications.
        let ops = engine.shader_ops().expect("self-test kernel");
        let cases: Vec<(Fe<C>, Fe<C>, u32)> = (0..cli.rate_threads)
            .map(|_| (Fe::<C>::rand(&mut rng), Fe::<C>::rand(&mut rng), RATE_CHAIN))
            .collect();
        ops.fe_mul_chain(&cases[..64]).unwrap(); // JIT
        let t = Instant::now();
        let got = ops.fe_mul_chain(&cases).unwrap();
        let rate = (cli.rate_threads as f64 * RATE_CHAIN as f64) / t.elapsed().as_secs_f64();
        for ((x, y, k), g) in cases.iter().zip(got).take(16) {
            assert_eq!(g, Some(*x * y.pow([*k as u64])));
        }
        // Without copies one set of the largest size serves every size (its prefixes).
        let largest = match cli.precompute.0 {
            None => Some(engine.load_bases(&bases).unwrap()),
            Some(_) => None,
        };
        for (i, &log) in logs.iter().enumerate() {
            let n = 1usize << log;
            let s = &scalars[..n];
            let t = Instant::now();
            let resident = match (&largest, cli.precompute.0) {
                (Some(set), _) => set.clone(),
                (None, p) => engine
                    .load_bases_with(
                        &bases[..n],
                        gpu_msm::LoadOptions {
                            precompute: p.unwrap_or_default(),
                            ..Default::default()
                        },
                    )
                    .unwrap(),
            };
            let load = t.elapsed();
            let want = Projective::<C>::msm(&bases[..n], s).unwrap();
            let ark = median(
                (0..reps)
                    .map(|_| {
                        let t = Instant::now();
                        let _ = Projective::<C>::msm(&bases[..n], s).unwrap();
                        t.elapsed()
                    })
                    .collect(),
            );
            let (gpu, host): (Vec<Duration>, Vec<Duration>) = (0..reps)
                .map(|_| {
                    let t = Instant::now();
                    let (got, rep) = engine.msm_with_report(&resident, s).unwrap();
                    assert_eq!(got, want);
                    (t.elapsed(), rep.host_time)
                })
                .unzip();
            let (gpu, host) = (median(gpu), median(host));
            let head = if i == 0 {
                format!(
                    "| {a:?} | {:.2?} | {} | {first:.2?} | {second:.2?} | {:.2} M |",
                    engine.pipeline_creation_time(),
                    engine
                        .self_test_time()
                        .map_or("off".to_string(), |t| format!("{t:.2?}")),
                    rate / 1e6
                )
            } else {
                "| | | | | | |".to_string()
            };
            let copies = match cli.precompute.0 {
                None => String::new(),
                Some(_) => format!(
                    " ({} copies at c = {}, loaded in {load:.2?})",
                    resident.precomputed_copies(),
                    resident
                        .precomputed_window_bits()
                        .map_or("-".to_string(), |c| c.to_string())
                ),
            };
            println!(
                "{head} 2^{log}{copies} | {gpu:.2?} | {ark:.2?} | {:.2}x | {host:.2?} |",
                gpu.as_secs_f64() / ark.as_secs_f64()
            );
        }
    }
}
