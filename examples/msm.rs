//! The main job: random inputs, one MSM on the chosen adapter, verified against arkworks.
//!
//! cargo run --release --example msm -- --log-n 16 [--window C] [--adapter NAME]
//!     [--seed S] [--repeat R] [--checked] [--sre off|auto|STRATEGY[:THRESHOLD|:none]]
//!     [--scalars uniform|distinct:K|bits:B]
//!
//! `--sre` turns on Scalar Redundancy Elimination (STRATEGY: array, greedy, exhaustive,
//! indexed; threshold 0.8 unless given); `--scalars` picks the scalar distribution.

mod common;

use std::time::Instant;

use ark_bls12_377::G1Projective;
use ark_ec::VariableBaseMSM;
use common::arg;
use gpu_msm::inputs::ScalarDistribution;
use gpu_msm::sre::{SreOptions, SreStrategy, PAPER_EARLY_STOP};
use gpu_msm::{inputs, AdapterChoice, GpuMsm, MsmConfig, SreMode};

fn parse_sre(s: &str) -> Option<SreMode> {
    match s {
        "off" => Some(SreMode::Off),
        "auto" => Some(SreMode::Auto),
        _ => {
            let (name, th) = match s.split_once(':') {
                Some((a, b)) => (a, Some(b)),
                None => (s, None),
            };
            let early_stop = match th {
                None => Some(PAPER_EARLY_STOP),
                Some("none") => None,
                Some(t) => Some(t.parse::<f64>().ok()?),
            };
            Some(SreMode::On(SreOptions {
                strategy: SreStrategy::from_name(name)?,
                early_stop,
                opposite: true,
            }))
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let log_n: u32 = arg(&args, "--log-n").unwrap_or(16);
    let seed: u64 = arg(&args, "--seed").unwrap_or(1);
    let repeat: usize = arg(&args, "--repeat").unwrap_or(1);
    let sre_arg: String = arg(&args, "--sre").unwrap_or_else(|| "off".into());
    let Some(sre) = parse_sre(&sre_arg) else {
        eprintln!("--sre off|auto|array|greedy|exhaustive|indexed[:threshold|:none]");
        std::process::exit(2)
    };
    let dist_arg: String = arg(&args, "--scalars").unwrap_or_else(|| "uniform".into());
    let Some(dist) = ScalarDistribution::parse(&dist_arg) else {
        eprintln!("--scalars uniform|distinct:K|bits:B");
        std::process::exit(2)
    };
    let config = MsmConfig {
        window_bits: arg(&args, "--window"),
        adapter: AdapterChoice {
            name_contains: arg(&args, "--adapter"),
            ..Default::default()
        },
        shader_runtime_checks: args.iter().any(|a| a == "--checked"),
        sre,
        // The main job shows the GPU path, on a software adapter too.
        force_backend: Some(gpu_msm::Backend::Gpu),
        ..Default::default()
    };
    let n = 1usize << log_n;

    let t = Instant::now();
    let engine = match GpuMsm::with_config(config) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "adapter: {} ({}), engine ready in {:.2?} (pipelines {:.2?})",
        engine.adapter_name(),
        engine.adapter_backend(),
        t.elapsed(),
        engine.pipeline_creation_time()
    );

    let t = Instant::now();
    let bases = inputs::random_bases(n, seed);
    let scalars = inputs::scalars(dist, n, seed.wrapping_add(1));
    println!(
        "inputs: n = 2^{log_n} = {n}, scalars {dist}, made in {:.2?}",
        t.elapsed()
    );

    let t = Instant::now();
    let expected = G1Projective::msm(&bases, &scalars).expect("equal lengths");
    let cpu_time = t.elapsed();
    println!("arkworks VariableBaseMSM::msm: {cpu_time:.2?}");

    let mut ok = true;
    for r in 0..repeat {
        match engine.msm_with_report(&bases, &scalars) {
            Ok((got, report)) => {
                let good = got == expected;
                ok &= good;
                println!(
                    "run {r}: {}",
                    if good { "matches arkworks" } else { "MISMATCH" }
                );
                print!("{report}");
            }
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        }
    }
    if !ok {
        eprintln!("result differs from arkworks");
        std::process::exit(1);
    }
}
