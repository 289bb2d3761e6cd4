//! Field products per second on the adapter, sized for throughput: the engine's own chain
//! kernel (the self-test's `fe_mul_chain`, its arithmetic profile) and each form of the
//! product (`gpu::shader::mul_variants`: the engine's one u64 accumulator, two interleaved
//! accumulators, a 32-bit lo/hi form without u64), every thread's result checked against
//! arkworks. `--cuda FILE` writes the engine's product as CUDA for `nvcc -Xptxas -v` (the
//! device check compiles it where nvcc is). On G1 of BLS12-377, `--curve bls12-381 | bn254`.
//!
//! cargo run --release --example field_rate -- --threads 262144 --chain 2000

mod common;

use std::time::Instant;

use ark_ff::{Field, PrimeField, UniformRand};
use clap::Parser;
use common::cli::{CurveArg, FieldRateCli};
use common::row;
use gpu_msm::curve::Fe;
use gpu_msm::gpu::shader::mul29::Field29;
use gpu_msm::gpu::shader::mul_variants::{cuda_twin, MulForm};
use gpu_msm::GpuCurve;

const HEADER: &str =
    "| field products | threads x chain | first dispatch (compile) | timed | M products/s |\n\
                      |---|---|---|---|---|";

fn main() {
    let cli = FieldRateCli::parse();
    match cli.curve {
        CurveArg::Bls12_377 => run::<ark_bls12_377::g1::Config, ark_bls12_377::Fq>(&cli),
        CurveArg::Bls12_381 => run::<ark_bls12_381::g1::Config, ark_bls12_381::Fq>(&cli),
        CurveArg::Bn254 => run::<ark_bn254::g1::Config, ark_bn254::Fq>(&cli),
    }
}

fn run<C: GpuCurve, F: PrimeField>(cli: &FieldRateCli) {
    let exit = |e: &dyn std::fmt::Display| -> ! {
        eprintln!("error: {e}");
        std::process::exit(1)
    };
    if let Some(file) = &cli.cuda {
        std::fs::write(file, cuda_twin(&Field29::of::<F>())).unwrap_or_else(|e| exit(&e));
    }
    let engine = common::announced_engine::<C>(cli.engine.config());
    let ops = engine.shader_ops().unwrap_or_else(|e| exit(&e));
    let (threads, chain) = (cli.threads, cli.chain);
    let mut rows = Vec::new();
    // The engine's kernel: its profile's fp_mul inside the self-test's chain loop.
    let mut rng = ark_std::test_rng();
    let cases: Vec<(Fe<C>, Fe<C>, u32)> = (0..threads)
        .map(|_| (Fe::<C>::rand(&mut rng), Fe::<C>::rand(&mut rng), chain))
        .collect();
    let t = Instant::now();
    ops.fe_mul_chain(&cases[..64.min(cases.len())])
        .unwrap_or_else(|e| exit(&e));
    let first = t.elapsed();
    let t = Instant::now();
    let got = ops.fe_mul_chain(&cases).unwrap_or_else(|e| exit(&e));
    let time = t.elapsed();
    for ((a, b, k), g) in cases.iter().zip(&got).step_by(97) {
        if *g != Some(*a * b.pow([*k as u64])) {
            exit(&"the engine's chain kernel differs from arkworks");
        }
    }
    rows.push(format!(
        "| {} {} (self-test kernel) | {threads} x {chain} | {first:.2?} | {time:.2?} | {:.1} |",
        C::NAME,
        engine
            .arithmetic()
            .map_or("no GPU".into(), |a| format!("{a:?}")),
        threads as f64 * chain as f64 / time.as_secs_f64() / 1e6
    ));
    for form in MulForm::ALL {
        let line = match ops.fp_mul_rate::<F>(form, threads, chain) {
            Ok(r) => format!(
                "| {} on F_p: {} | {threads} x {chain} | {:.2?} | {:.2?} | {:.1} |",
                C::NAME,
                form.name(),
                r.first,
                r.time,
                r.products_per_s / 1e6
            ),
            Err(e) => format!("| {}: {} | not run: {e} | | | |", C::NAME, form.name()),
        };
        rows.push(line);
    }
    println!("{HEADER}");
    for line in &rows {
        println!("{line}");
        if let Some(file) = &cli.table {
            row::append(file, HEADER, line).unwrap_or_else(|e| exit(&e));
        }
    }
}
