//! Differential soak: random sizes, window sizes, scalar distributions and base shapes,
//! each MSM one-shot, on resident bases (a prefix of a longer set) and in a batch, all
//! compared with arkworks. `GPU_MSM_SOAK_CASES` sets the number of cases (default
//! [`DEFAULT_CASES`], a slice that fits CI); `GPU_MSM_SOAK_SEED` the first seed;
//! `GPU_MSM_SOAK_ARITHMETIC=limbs13` (or `limbs32`, `limbs32-edwards`) runs that profile instead
//! of the adapter's own. `GPU_MSM_SOAK_THREADS` runs the cases on that many threads at once,
//! sharing one engine, and `GPU_MSM_SOAK_BUDGET` (bytes) gives that engine its own memory
//! budget, so that the calls wait for each other (memory admission under load).
//!
//! GPU_MSM_SOAK_CASES=10000 cargo test --release --test soak -- --nocapture

mod common;

use ark_bls12_377::{Fr, G1Affine};
use ark_ff::{Field, One, Zero};
use ark_std::rand::{rngs::StdRng, Rng, SeedableRng};
use common::{engine_for, gpu_engine, reference};
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::{GpuMsm, MemoryBudget, MsmConfig};

/// Cases CI runs (each is three or more MSMs).
const DEFAULT_CASES: u64 = 60;

/// Largest log2 of a case's size.
const MAX_LOG_N: u32 = 11;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The named scalar distributions of the soak.
const DISTRIBUTIONS: [&str; 8] = [
    "uniform",
    "small",
    "0/1",
    "repeated",
    "r-1",
    "sparse",
    "powers of two",
    "mixed",
];

fn scalars(dist: &str, n: usize, rng: &mut StdRng) -> Vec<Fr> {
    let seed = rng.gen();
    let uniform = random_scalars(n, seed);
    (0..n)
        .map(|i| match dist {
            "uniform" => uniform[i],
            "small" => Fr::from(rng.gen::<u64>() >> rng.gen_range(0..64)),
            "0/1" => Fr::from(rng.gen_range(0..2u64)),
            "repeated" => uniform[i % 3],
            "r-1" => -Fr::one(),
            "sparse" if rng.gen_bool(0.02) => uniform[i],
            "sparse" => Fr::zero(),
            "powers of two" => Fr::from(2u64).pow([rng.gen_range(0..253u64)]),
            _ => match rng.gen_range(0..4) {
                0 => Fr::zero(),
                1 => -uniform[i],
                2 => Fr::from(rng.gen_range(0..1000u64)),
                _ => uniform[i],
            },
        })
        .collect()
}

/// Bases: random, sometimes with identities, duplicates and P, -P pairs.
fn bases(n: usize, rng: &mut StdRng) -> Vec<G1Affine> {
    let mut b = random_bases(n, rng.gen());
    if rng.gen_bool(0.3) {
        for _ in 0..1 + n / 8 {
            let (i, j) = (rng.gen_range(0..n), rng.gen_range(0..n));
            match rng.gen_range(0..3) {
                0 => b[i] = G1Affine::identity(),
                1 => b[i] = b[j],
                _ => b[i] = -b[j],
            }
        }
    }
    b
}

/// One case's MSMs (one-shot, resident, a batch of two) on `base` at a random window size:
/// how many ran, and what went wrong.
fn run_case(base: &GpuMsm, case: u64) -> (u64, Vec<String>) {
    let mut rng = StdRng::seed_from_u64(case);
    let log = rng.gen_range(0..=MAX_LOG_N);
    let n = rng.gen_range(1..=1usize << log);
    let dist = DISTRIBUTIONS[rng.gen_range(0..DISTRIBUTIONS.len())];
    let window = rng.gen_bool(0.3).then(|| rng.gen_range(1..=16u32));
    let e = base
        .reconfigured(MsmConfig {
            window_bits: window,
            ..base.config().clone()
        })
        .unwrap();
    let extra = rng.gen_range(0..4);
    let all = bases(n + extra, &mut rng);
    let s = scalars(dist, n, &mut rng);
    let s2 = scalars(dist, rng.gen_range(0..=n), &mut rng);
    let want = reference(&all[..n], &s);
    let want2 = reference(&all[..s2.len()], &s2);
    let what = format!("case {case}: n = {n}, {dist}, window {window:?}");
    let mut msms = 0;
    let mut mismatches = Vec::new();
    let mut check = |mode: &str, got: Result<ark_bls12_377::G1Projective, _>, want| {
        msms += 1;
        match got {
            Ok(g) if g == want => {}
            Ok(_) => mismatches.push(format!("{what}, {mode}: wrong sum")),
            Err(err) => mismatches.push(format!("{what}, {mode}: {err}")),
        }
    };
    check("one-shot", e.msm(&all[..n], &s), want);
    match e.load_bases(&all) {
        Ok(resident) => {
            check("resident", e.msm(&resident, &s), want);
            match e.batch_msm(&resident, &[&s, &s2]) {
                Ok(v) => {
                    check("batch[0]", Ok(v[0]), want);
                    check("batch[1]", Ok(v[1]), want2);
                }
                Err(err) => check("batch", Err(err), want),
            }
        }
        Err(err) => check("load_bases", Err(err), want),
    }
    (msms, mismatches)
}

/// Adds up MSM counts and mismatch lists.
fn tally((m, mut bad): (u64, Vec<String>), (k, b): (u64, Vec<String>)) -> (u64, Vec<String>) {
    bad.extend(b);
    (m + k, bad)
}

#[test]
fn differential_soak_against_arkworks() {
    let cases = env("GPU_MSM_SOAK_CASES", DEFAULT_CASES);
    let first = env("GPU_MSM_SOAK_SEED", 1);
    let threads = env("GPU_MSM_SOAK_THREADS", 1).max(1);
    let arithmetic = match std::env::var("GPU_MSM_SOAK_ARITHMETIC").as_deref() {
        Ok("limbs13") => Some(gpu_msm::Arithmetic::Limbs13),
        Ok("limbs32") => Some(gpu_msm::Arithmetic::Limbs32),
        Ok("limbs32-edwards") => Some(gpu_msm::Arithmetic::Limbs32Edwards),
        _ => None,
    };
    let budgeted = std::env::var("GPU_MSM_SOAK_BUDGET")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(|bytes| {
            GpuMsm::with_config(MsmConfig {
                arithmetic,
                memory_budget: MemoryBudget::Bytes(bytes),
                ..gpu_engine().config().clone()
            })
            .expect("an engine with the soak's budget")
        });
    let base = match (&budgeted, arithmetic) {
        (Some(e), _) => e,
        (None, Some(a)) => engine_for(a).expect("the adapter runs this profile"),
        (None, None) => gpu_engine(),
    };
    let (msms, mismatches) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    (first + t..first + cases)
                        .step_by(threads as usize)
                        .map(|case| run_case(base, case))
                        .fold((0, Vec::new()), tally)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a soak thread panicked"))
            .fold((0, Vec::new()), tally)
    });
    eprintln!(
        "soak: {cases} cases from seed {first} on {threads} thread(s), {msms} MSMs, {} \
         mismatches, on {} ({:?}); memory {:?}",
        mismatches.len(),
        base.adapter_name(),
        base.arithmetic(),
        base.memory_usage()
    );
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
