//! Differential soak: random sizes, window sizes, slice lengths, scalar distributions and
//! base shapes (bad ones too: off the curve, outside G1, with zero scalars), each MSM
//! one-shot, on resident bases (a prefix of a longer set, sometimes with shifted copies) and
//! in a batch with an empty vector, all compared with arkworks, the integer sum or the exact error. `GPU_MSM_SOAK_CASES` sets the number of cases (default
//! [`DEFAULT_CASES`], a slice that fits CI); `GPU_MSM_SOAK_SEED` the first seed;
//! `GPU_MSM_SOAK_ARITHMETIC=limbs13` (or `limbs32`, `limbs32-edwards`) runs that profile instead
//! of the adapter's own. `GPU_MSM_SOAK_THREADS` runs the cases on that many threads at once,
//! sharing one engine, and `GPU_MSM_SOAK_BUDGET` (bytes) gives that engine its own memory
//! budget, so that the calls wait for each other (memory admission under load).
//!
//! GPU_MSM_SOAK_CASES=10000 cargo test --release --test gpu soak -- --nocapture

use crate::common;

use ark_bls12_377::{Fq, Fr, G1Affine, G1Projective};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{Field, One, Zero};
use ark_std::rand::{rngs::StdRng, Rng, SeedableRng};
use common::{engine_for, gpu_engine, reference};
use gpu_msm::cpu::double_and_add;
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::{GpuMsm, LoadOptions, MemoryBudget, MsmConfig, MsmError, Precompute};

/// Cases CI runs (each is up to five MSMs: one-shot, resident, a batch of three).
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

/// Bases that must not give a plain sum: off the curve (a wrong y; x = -1, whose Edwards
/// image has order 2), or on it outside G1 (orders 2 and 3, and the exceptional case's
/// partner -P + T of an earlier base P, T of order 2).
fn bad_base(b: &[G1Affine], i: usize, rng: &mut StdRng) -> (G1Affine, bool) {
    let p = b[i];
    let t = G1Affine::new_unchecked(-Fq::one(), Fq::zero());
    match rng.gen_range(0..5) {
        0 if !p.is_zero() => (G1Affine::new_unchecked(p.x, p.y + Fq::one()), false),
        1 if !p.is_zero() => (G1Affine::new_unchecked(-Fq::one(), p.y), false),
        2 => (t, true),
        3 => (G1Affine::new_unchecked(Fq::zero(), Fq::one()), true),
        _ if i > 0 => ((-b[i - 1] + t).into_affine(), true),
        _ => (t, true),
    }
}

/// What a call on `bases` may return: the sum (every scalar taken as its integer in [0, r));
/// `InvalidBase` at the first base off the curve; with bases outside G1, the sum or
/// `BaseNotInSubgroup` at one of them.
fn expected(bases: &[G1Affine], scalars: &[Fr]) -> Expect {
    let valid = |p: &G1Affine| p.is_zero() || p.is_on_curve();
    if let Some(i) = bases.iter().position(|p| !valid(p)) {
        return Expect::Invalid(i);
    }
    let outside: Vec<usize> = (0..bases.len())
        .filter(|&i| !bases[i].is_in_correct_subgroup_assuming_on_curve())
        .collect();
    if outside.is_empty() {
        return Expect::Sum(reference(bases, scalars));
    }
    Expect::SumOrOutside(double_and_add(bases, scalars), outside)
}

enum Expect {
    Sum(G1Projective),
    Invalid(usize),
    SumOrOutside(G1Projective, Vec<usize>),
}

impl Expect {
    fn holds(&self, got: &Result<G1Projective, MsmError>) -> bool {
        match (self, got) {
            (Expect::Sum(w), Ok(g)) | (Expect::SumOrOutside(w, _), Ok(g)) => g == w,
            (Expect::Invalid(i), Err(MsmError::InvalidBase { index })) => index == i,
            (Expect::SumOrOutside(_, out), Err(MsmError::BaseNotInSubgroup { index })) => {
                out.contains(index)
            }
            _ => false,
        }
    }
}

/// One case's MSMs (one-shot, resident, a batch of three with an empty vector) on `base`
/// at a random window size, sometimes in slices and device parts of a random length, and
/// sometimes with bad bases: how many ran, and what went wrong.
fn run_case(base: &GpuMsm, case: u64) -> Tally {
    let mut rng = StdRng::seed_from_u64(case);
    let log = rng.gen_range(0..=MAX_LOG_N);
    let n = rng.gen_range(1..=1usize << log);
    let dist = DISTRIBUTIONS[rng.gen_range(0..DISTRIBUTIONS.len())];
    let window = rng.gen_bool(0.3).then(|| rng.gen_range(1..=16u32));
    let slice = rng.gen_bool(0.2).then(|| rng.gen_range(1..=n));
    // Shifted copies on a third of the resident sets: a factor up to the window count of
    // the configured window (of c = 2 without one), or Auto.
    let most = gpu_msm::digits::num_windows(window.unwrap_or(2).max(2), common::bits());
    let precompute = match rng.gen_range(0..6) {
        // A configured 1-bit window refuses factors (tests/gpu/precompute.rs).
        0 if window != Some(1) => Precompute::Factor(rng.gen_range(2..=most.min(40))),
        1 => Precompute::Auto,
        _ => Precompute::None,
    };
    let e = base
        .reconfigured(MsmConfig {
            window_bits: window,
            max_slice_points: slice,
            ..base.config().clone()
        })
        .unwrap();
    let extra = rng.gen_range(0..4);
    let mut all = bases(n + extra, &mut rng);
    let mut s = scalars(dist, n, &mut rng);
    let s2 = scalars(dist, rng.gen_range(0..=n), &mut rng);
    let mut bad = Vec::new();
    if rng.gen_bool(0.1) {
        for _ in 0..rng.gen_range(1..=2) {
            let i = rng.gen_range(0..n + extra);
            let (p, on_curve) = bad_base(&all, i, &mut rng);
            all[i] = p;
            if i < n && rng.gen_bool(0.3) {
                s[i] = Fr::zero();
            }
            if on_curve && i > 0 && i < n {
                s[i] = s[i - 1]; // the exceptional case's pair shares its buckets
            }
            bad.push(i);
        }
    }
    let want = expected(&all[..n], &s);
    let want2 = expected(&all[..s2.len()], &s2);
    // load_bases checks the whole set, past the call's prefix too: it loads (a "sum" of
    // zero stands for that) or names the first base off the curve.
    let loaded = match all.iter().position(|p| !(p.is_zero() || p.is_on_curve())) {
        Some(i) => Expect::Invalid(i),
        None => Expect::Sum(G1Projective::zero()),
    };
    let what = format!(
        "case {case}: n = {n}, {dist}, window {window:?}, slices {slice:?}, {precompute:?}, \
         bad {bad:?}"
    );
    let mut t = Tally {
        bad_cases: u64::from(!bad.is_empty()),
        ..Tally::default()
    };
    let mut check = |mode: &str, got: Result<G1Projective, MsmError>, want: &Expect| {
        t.msms += 1;
        t.refused += u64::from(got.is_err());
        if !want.holds(&got) {
            t.mismatches.push(format!("{what}, {mode}: {got:?}"));
        }
    };
    let zero = Expect::Sum(G1Projective::zero());
    check("one-shot", e.msm(&all[..n], &s), &want);
    // Copies that leave no room for a call (a small soak budget) are refused: load plain.
    let options = LoadOptions {
        precompute,
        ..Default::default()
    };
    let set = match e.load_bases_with(&all, options) {
        Err(MsmError::InputTooLarge(_)) if precompute != Precompute::None => e.load_bases(&all),
        set => set,
    };
    match (set, &loaded) {
        (Ok(resident), Expect::Sum(_)) => {
            check("resident", e.msm(&resident, &s), &want);
            let empty: &[Fr] = &[];
            match e.batch_msm(&resident, &[&s, empty, &s2]) {
                Ok(v) => {
                    check("batch[0]", Ok(v[0]), &want);
                    check("batch[1]", Ok(v[1]), &zero);
                    check("batch[2]", Ok(v[2]), &want2);
                }
                Err(MsmError::Batch { index, source }) => {
                    let w = [&want, &zero, &want2][index];
                    check(&format!("batch[{index}]"), Err(*source), w);
                }
                Err(err) => check("batch", Err(err), &want),
            }
        }
        (got, expect) => check("load_bases", got.map(|_| G1Projective::zero()), expect),
    }
    t
}

/// What cases ran: MSMs (loads refused count as one), cases with bad bases, calls that got
/// the typed error they had to, and what went wrong.
#[derive(Default)]
struct Tally {
    msms: u64,
    bad_cases: u64,
    refused: u64,
    mismatches: Vec<String>,
}

impl Tally {
    fn plus(mut self, other: Tally) -> Tally {
        self.msms += other.msms;
        self.bad_cases += other.bad_cases;
        self.refused += other.refused;
        self.mismatches.extend(other.mismatches);
        self
    }
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
    let t = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    (first + t..first + cases)
                        .step_by(threads as usize)
                        .map(|case| run_case(base, case))
                        .fold(Tally::default(), Tally::plus)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a soak thread panicked"))
            .fold(Tally::default(), Tally::plus)
    });
    eprintln!(
        "soak: {cases} cases from seed {first} on {threads} thread(s), {} MSMs ({} cases \
         with bad bases, {} calls refused as they had to be), {} mismatches, on {} ({:?}); \
         memory {:?}",
        t.msms,
        t.bad_cases,
        t.refused,
        t.mismatches.len(),
        base.adapter_name(),
        base.arithmetic(),
        base.memory_usage()
    );
    assert!(t.mismatches.is_empty(), "{:#?}", t.mismatches);
}
