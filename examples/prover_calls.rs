//! What a prover sees: one-shot calls against calls on resident bases, a batch against
//! separate calls, and boolean and byte scalars against uniform ones, each timed beside
//! arkworks (its small-scalar entry points where they apply). GPU path forced.
//!
//! cargo run --release --example prover_calls -- --log-n 16   (`--help` lists the flags)
//!
//! On BLS12-377 G1 by default; `--curve bls12-381 | bn254` and `--group g2` run another
//! group (a Groth16 prover's B query is a G2 MSM over the proving key's resident bases).
//!
//! Each row is the median of R calls (default 3) after one warm-up call. "host" is the
//! report's host time: the call minus the time the host waited for the GPU.

mod common;

use std::time::{Duration, Instant};

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::VariableBaseMSM;
use ark_ff::PrimeField;
use clap::Parser;
use common::cli::ProverCallsCli;
use gpu_msm::inputs::{self, ScalarDistribution};
use gpu_msm::Fr;
use gpu_msm::{AdapterChoice, Backend, GpuCurve, GpuMsm, MsmBases, MsmConfig, MsmReport};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Median total and host time of `reps` calls (after a warm-up), checked against `want`.
fn time_gpu<C: GpuCurve, B: MsmBases<C> + ?Sized>(
    e: &GpuMsm<C>,
    bases: &B,
    scalars: &[Fr<C>],
    want: Projective<C>,
    reps: usize,
) -> (Duration, Duration, MsmReport) {
    let (got, _) = e.msm_with_report(bases, scalars).expect("msm");
    assert_eq!(got, want, "result differs from arkworks");
    let mut total = Vec::new();
    let mut host = Vec::new();
    let mut last = None;
    for _ in 0..reps {
        let (got, rep) = e.msm_with_report(bases, scalars).expect("msm");
        assert_eq!(got, want, "result differs from arkworks");
        total.push(rep.phases.total);
        host.push(rep.host_time);
        last = Some(rep);
    }
    (median(total), median(host), last.expect("reps >= 1"))
}

fn time_cpu<C: GpuCurve>(
    reps: usize,
    mut f: impl FnMut() -> Projective<C>,
) -> (Duration, Projective<C>) {
    let mut v = Vec::new();
    let mut out = f();
    for _ in 0..reps {
        let t = Instant::now();
        out = f();
        v.push(t.elapsed());
    }
    (median(v), out)
}

fn small_ints<C: GpuCurve>(s: &[Fr<C>]) -> Vec<u64> {
    s.iter().map(|k| k.into_bigint().as_ref()[0]).collect()
}

fn main() {
    let cli = ProverCallsCli::parse();
    on_curve!(cli.curve, cli.group, C => run::<C>(&cli))
}

fn run<C: GpuCurve>(cli: &ProverCallsCli) {
    let (log_n, batch, batch_log, reps) = (
        cli.log_n,
        cli.batch as usize,
        cli.batch_log,
        cli.reps as usize,
    );
    let engine = GpuMsm::<C>::with_config(MsmConfig {
        force_backend: Some(Backend::Gpu),
        adapter: AdapterChoice {
            name_contains: cli.adapter.clone(),
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    });
    println!(
        "{}: adapter: {} ({}); {} rayon threads; median of {reps}",
        C::NAME,
        engine.adapter_name(),
        engine.adapter_backend(),
        rayon::current_num_threads()
    );
    let n = 1usize << log_n;
    let bases: Vec<Affine<C>> = inputs::random_bases(n, 1);
    let t = Instant::now();
    let resident = engine.load_bases(&bases).expect("load_bases");
    println!("load_bases(2^{log_n}): {:.1} ms", ms(t.elapsed()));
    let strict = engine
        .reconfigured(MsmConfig {
            validate_subgroup: true,
            ..engine.config().clone()
        })
        .expect("same device");
    let t = Instant::now();
    drop(strict.load_bases(&bases).expect("bases in the subgroup"));
    println!(
        "load_bases(2^{log_n}) with validate_subgroup: {:.1} ms",
        ms(t.elapsed())
    );

    println!("\n| call | n | arkworks ms | gpu-msm total ms | host ms | buffers allocated |");
    println!("|---|---|---|---|---|---|");
    let uniform = inputs::random_scalars(n, 2);
    let (ark, want) = time_cpu(reps, || Projective::<C>::msm(&bases, &uniform).unwrap());
    for (name, res) in [("one-shot", false), ("resident", true)] {
        let (total, host, rep) = if res {
            time_gpu(&engine, &resident, &uniform, want, reps)
        } else {
            time_gpu(&engine, &bases, &uniform, want, reps)
        };
        println!(
            "| {name}, uniform | 2^{log_n} | {:.1} | {:.1} | {:.1} | {} |",
            ms(ark),
            ms(total),
            ms(host),
            rep.buffers_allocated
        );
    }
    for (name, bits) in [("boolean", 1u32), ("byte", 8)] {
        let s = inputs::scalars(ScalarDistribution::SmallBits(bits), n, 3 + bits as u64);
        let small = small_ints::<C>(&s);
        let (ark, want) = if bits == 1 {
            let b: Vec<bool> = small.iter().map(|&k| k == 1).collect();
            time_cpu(reps, || Projective::<C>::msm_u1(&bases, &b))
        } else {
            let b: Vec<u8> = small.iter().map(|&k| k as u8).collect();
            time_cpu(reps, || Projective::<C>::msm_u8(&bases, &b))
        };
        let (total, host, rep) = time_gpu(&engine, &resident, &s, want, reps);
        println!(
            "| resident, {name} (arkworks msm_u{}) | 2^{log_n} | {:.1} | {:.1} | {:.1} | {} |",
            if bits == 1 { 1 } else { 8 },
            ms(ark),
            ms(total),
            ms(host),
            rep.buffers_allocated
        );
    }

    // A batch of `batch` vectors of 2^batch_log over the same resident bases.
    let m = 1usize << batch_log.min(log_n);
    let vectors: Vec<Vec<Fr<C>>> = (0..batch)
        .map(|k| inputs::random_scalars(m, 100 + k as u64))
        .collect();
    let refs: Vec<&[Fr<C>]> = vectors.iter().map(|v| v.as_slice()).collect();
    let (ark, _) = time_cpu(1, || {
        refs.iter()
            .map(|s| Projective::<C>::msm(&bases[..m], s).unwrap())
            .sum()
    });
    let want: Vec<Projective<C>> = refs
        .iter()
        .map(|s| Projective::<C>::msm(&bases[..m], s).unwrap())
        .collect();
    assert_eq!(engine.batch_msm(&resident, &refs).expect("batch"), want);
    let t = Instant::now();
    assert_eq!(engine.batch_msm(&resident, &refs).expect("batch"), want);
    let batch_time = t.elapsed();
    let t = Instant::now();
    let mut sep_host = Duration::ZERO;
    for (s, w) in refs.iter().zip(&want) {
        let (r, rep) = engine.msm_with_report(&resident, s).expect("msm");
        assert_eq!(r, *w);
        sep_host += rep.host_time;
    }
    let sep_time = t.elapsed();
    // A batch overlaps one vector's host work with the previous one's GPU work, so its
    // per-vector host times do not add up: only its wall time is shown.
    println!(
        "| batch_msm, {batch} x uniform | 2^{} | {:.1} | {:.1} | - | - |",
        batch_log.min(log_n),
        ms(ark),
        ms(batch_time)
    );
    println!(
        "| {batch} separate resident calls | 2^{} | {:.1} | {:.1} | {:.1} | - |",
        batch_log.min(log_n),
        ms(ark),
        ms(sep_time),
        ms(sep_host)
    );
}
