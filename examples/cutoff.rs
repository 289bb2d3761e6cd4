//! Measures the small-MSM cutoff of a curve group: our CPU double-and-add against arkworks'
//! MSM on one thread, for n = 2..=64 (median of --reps runs each), and prints where arkworks
//! wins: the group's `GpuCurve::SMALL_MSM_CUTOFF` (docs/PERF.md, "Small-MSM cutoff per
//! group").
//!
//! cargo run --release --example cutoff -- [--curve bls12-377] [--group g1] [--reps 51]

use std::time::{Duration, Instant};

use ark_ec::short_weierstrass::Projective;
use ark_ec::VariableBaseMSM;
use gpu_msm::{inputs, internals::cpu, GpuCurve};

mod common;

use clap::Parser;
use common::cli::CutoffCli;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let cli = CutoffCli::parse();
    on_curve!(cli.curve, cli.group, C => run::<C>(cli.reps as usize))
}

fn run<C: GpuCurve>(reps: usize) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    println!("{} (SMALL_MSM_CUTOFF now {})", C::NAME, C::SMALL_MSM_CUTOFF);
    println!("n\tdouble-and-add (us)\tarkworks 1 thread (us)\tfaster");
    let mut first_ark_win = None;
    pool.install(|| {
        for n in (2..=40).chain([48, 64]) {
            let bases = inputs::random_bases::<C>(n, n as u64);
            let scalars = inputs::random_scalars(n, 7);
            let (mut da, mut ark) = (Vec::new(), Vec::new());
            for _ in 0..reps {
                let t = Instant::now();
                let a = cpu::double_and_add(&bases, &scalars);
                da.push(t.elapsed());
                let t = Instant::now();
                let b = Projective::<C>::msm(&bases, &scalars).unwrap();
                ark.push(t.elapsed());
                assert_eq!(a, b);
            }
            let (da, ark) = (median(da), median(ark));
            let winner = if ark < da {
                "arkworks"
            } else {
                "double-and-add"
            };
            if ark < da && first_ark_win.is_none() {
                first_ark_win = Some(n);
            }
            println!(
                "{n}\t{:.1}\t{:.1}\t{winner}",
                da.as_secs_f64() * 1e6,
                ark.as_secs_f64() * 1e6
            );
        }
    });
    println!("arkworks first faster at n = {first_ark_win:?}");
}
