//! Field products per second on the adapter, sized for throughput: the engine's own chain
//! kernel (the self-test's `fe_mul_chain`, its arithmetic profile) and each form of the
//! product (`gpu::shader::mul_variants`: the engine's one u64 accumulator, two interleaved
//! accumulators, a 32-bit lo/hi form without u64), every thread's result checked against
//! arkworks. `--cuda FILE` writes the engine's product as CUDA for `nvcc -Xptxas -v` (the
//! device check compiles it where nvcc is). On G1 of BLS12-377, `--curve bls12-381 | bn254`.
//!
//! cargo run --release --example field_rate -- --threads 262144 --chain 2000

mod common;

use std::time::{Duration, Instant};

use ark_ff::{Field, PrimeField, UniformRand};
use clap::Parser;
use common::cli::{CurveArg, FieldRateCli};
use common::row;
use gpu_msm::internals::curve::Fe;
use gpu_msm::internals::gpu::shader::mul29::Field29;
use gpu_msm::internals::gpu::shader::mul_variants::{cuda_twin, MulForm};
use gpu_msm::{GpuCurve, MsmError};

const HEADER: &str = "| field products | threads x chain | compile and first run | chain products \
                      | rest of a dispatch | M products/s |\n|---|---|---|---|---|---|";

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
    let mut rows = vec![engine_row::<C>(&engine, &ops, threads, chain)];
    let mut failed = false;
    for form in MulForm::ALL {
        let line = match ops.fp_mul_rate::<F>(form, threads, chain) {
            Ok(r) => format!(
                "| {} on F_p: {} | {threads} x {chain} | {:.1} ms | {:.2} ms | {:.2} ms | {} |",
                C::NAME,
                form.name(),
                ms(r.first),
                ms(r.time),
                ms(r.fixed),
                row::rate(Some(threads as u64 * chain as u64), r.time)
            ),
            // A device without 64-bit integers cannot run the u64 forms: said, not failed.
            Err(MsmError::InvalidConfig(e)) => {
                format!("| {}: {} | not run: {e} |", C::NAME, form.name())
            }
            Err(e) => {
                failed = true;
                let e = e.to_string();
                let first: String = e
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .take(120)
                    .collect();
                format!("| {}: {} | FAILED: {first} |", C::NAME, form.name())
            }
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
    if failed {
        exit(&"a form of the product failed (its row says how)");
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The engine's own chain kernel (the self-test's, in its profile: the same `fp_mul` as the
/// first form where the profile is a wide one), timed as the forms are: a run of 2 chain
/// products a thread less a run of chain, so that the host's conversions of the cases and
/// the results, equal in both, drop out. Every thread's result checked.
fn engine_row<C: GpuCurve>(
    engine: &gpu_msm::GpuMsm<C>,
    ops: &gpu_msm::ShaderOps<C>,
    threads: u32,
    chain: u32,
) -> String {
    let mut rng = ark_std::test_rng();
    let pairs: Vec<(Fe<C>, Fe<C>)> = (0..threads)
        .map(|_| (Fe::<C>::rand(&mut rng), Fe::<C>::rand(&mut rng)))
        .collect();
    let cases =
        |k: u32| -> Vec<(Fe<C>, Fe<C>, u32)> { pairs.iter().map(|&(a, b)| (a, b, k)).collect() };
    let (short, long) = (cases(chain), cases(2 * chain));
    let run = |c: &[(Fe<C>, Fe<C>, u32)]| {
        let t = Instant::now();
        let got = ops.fe_mul_chain(c).unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(1)
        });
        let time = t.elapsed();
        if c.iter()
            .zip(&got)
            .any(|((a, b, k), g)| *g != Some(*a * b.pow([*k as u64])))
        {
            eprintln!("error: the engine's chain kernel differs from arkworks");
            std::process::exit(1)
        }
        time
    };
    let t = Instant::now();
    run(&short[..64.min(short.len())]);
    let first = t.elapsed();
    // The faster of two runs each (noise only ever slows a run).
    let once = run(&short).min(run(&short));
    let time = run(&long).min(run(&long)).saturating_sub(once);
    format!(
        "| {} {} (the self-test's kernel) | {threads} x {chain} | {:.1} ms | {:.2} ms | {:.2} ms | {} |",
        C::NAME,
        engine.arithmetic().map_or("no GPU".into(), |a| format!("{a:?}")),
        ms(first),
        ms(time),
        ms(once.saturating_sub(time)),
        row::rate(Some(threads as u64 * chain as u64), time)
    )
}
