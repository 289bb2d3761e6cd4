//! Differential soak: random sizes, window sizes, slice lengths, scalar distributions and
//! base shapes (bad ones too: off the curve, outside G1, with zero scalars), each MSM
//! one-shot, on resident bases (a prefix of a longer set, sometimes with shifted copies) and
//! in a batch with an empty vector, all compared with arkworks, the integer sum or the exact
//! error. `GPU_MSM_SOAK_CASES` sets the number of cases (default [`DEFAULT_CASES`], a slice
//! that fits CI); `GPU_MSM_SOAK_SEED` the first seed; `GPU_MSM_SOAK_ARITHMETIC=limbs13` (or
//! `limbs29`, `limbs29-edwards`) runs that profile instead of the adapter's own.
//! `GPU_MSM_SOAK_THREADS` runs the cases on that many threads at once, sharing one engine;
//! `GPU_MSM_SOAK_BUDGET` (bytes) gives that engine its own memory budget, so that the calls
//! wait for each other (memory admission under load); `GPU_MSM_SOAK_DEVICES=N` runs an
//! engine on N devices of the adapter (the calls split across them);
//! `GPU_MSM_SOAK_STREAM_CHUNK=K` gives it streamed chunks of K scalars
//! (`MsmConfig::stream_chunk_scalars`: with K = 200, calls of 400 scalars and more stream
//! in 2 or 4 chunks). A third of the cases
//! run on those threads, a third from rayon's workers and a third as tasks of a tokio
//! runtime calling the `_async` forms (one-shot and batch), all at once;
//! `GPU_MSM_SOAK_CALLERS=threads` runs every case on the threads. Any error a case did not
//! have to meet, `Timeout` among them, is a mismatch, but for what a small budget justifies:
//! a configured window whose one-point call it cannot hold (the case runs without it), and
//! `InputTooLarge` where one point's call at the case's window exceeds it (both counted).
//!
//! GPU_MSM_SOAK_CASES=10000 cargo test --release --test gpu soak -- --nocapture

use crate::common;

use ark_bls12_377::{Fq, Fr, G1Affine, G1Projective};
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::{Field, One, Zero};
use ark_std::rand::{rngs::StdRng, Rng, SeedableRng};
use common::{engine_for, gpu_engine, reference};
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::internals::cpu::double_and_add;
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
        return Expect::Sum(on_reference_pool(|| reference(bases, scalars)));
    }
    Expect::SumOrOutside(double_and_add(bases, scalars), outside)
}

/// `f` (arkworks' parallel MSM) on a rayon pool of the soak's own. On rayon's global pool, a
/// tokio task's reference could wait for workers that wait for room in the budget, which
/// another task holds: one that the same tokio worker, blocked in that reference, never
/// polls again (a caller's own lock-up, not the engine's). A rayon worker waits on a plain
/// thread, as the engine's own host work does: waiting in `install` itself, it would run
/// other queued cases meanwhile, one inside another, until its stack overflowed.
fn on_reference_pool<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    let pool = POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("soak reference {i}"))
            .build()
            .expect("a rayon pool")
    });
    if rayon::current_thread_index().is_none() {
        return pool.install(f);
    }
    std::thread::scope(|s| {
        s.spawn(|| pool.install(f))
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
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

/// Who makes a case's calls.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Caller {
    /// A plain thread, blocking calls.
    Thread,
    /// One of rayon's workers, blocking calls.
    Rayon,
    /// A tokio task, the `_async` forms (loads block, in `block_in_place`: they have no
    /// other form).
    Task,
}

/// One case's MSMs (one-shot, resident, a batch of three with an empty vector) on `base`
/// at a random window size, sometimes in slices and device parts of a random length, and
/// sometimes with bad bases, made by `caller`: how many ran, and what went wrong. A future
/// that never waits but in the `_async` calls, which only a [`Caller::Task`] makes.
async fn run_case(base: &GpuMsm, case: u64, caller: Caller) -> Tally {
    let task = caller == Caller::Task;
    let mut rng = StdRng::seed_from_u64(case);
    let log = rng.gen_range(0..=MAX_LOG_N);
    let n = rng.gen_range(1..=1usize << log);
    let dist = DISTRIBUTIONS[rng.gen_range(0..DISTRIBUTIONS.len())];
    let window = rng.gen_bool(0.3).then(|| rng.gen_range(1..=16u32));
    let slice = rng.gen_bool(0.2).then(|| rng.gen_range(1..=n));
    // Shifted copies on a third of the resident sets: a factor up to the window count of
    // the configured window (of c = 2 without one), or Auto.
    let most = gpu_msm::internals::digits::num_windows(window.unwrap_or(2).max(2), common::bits());
    let precompute = match rng.gen_range(0..6) {
        // A configured 1-bit window refuses factors (tests/gpu/precompute.rs).
        0 if window != Some(1) => Precompute::Factor(rng.gen_range(2..=most.min(40))),
        1 => Precompute::Auto,
        _ => Precompute::None,
    };
    let with_window = |window_bits| {
        base.reconfigured(MsmConfig {
            window_bits,
            max_slice_points: slice,
            ..base.config().clone()
        })
    };
    // A window whose one-point call a small soak budget cannot hold is refused with the
    // configuration: the case runs at the cost model's windows instead.
    let (e, window_refused) = match with_window(window) {
        Err(MsmError::InvalidConfig(_)) if window.is_some() => (with_window(None).unwrap(), true),
        e => (e.unwrap(), false),
    };
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
        "case {case} ({caller:?}): n = {n}, {dist}, window {window:?}, slices {slice:?}, \
         {precompute:?}, bad {bad:?}"
    );
    let mut t = Tally {
        bad_cases: u64::from(!bad.is_empty()),
        windows_refused: u64::from(window_refused),
        ..Tally::default()
    };
    // A budget too small for one point's call at the case's window (a soak budget, a wide
    // configured window) refuses it: justified by the load, not a mismatch.
    let budget = e.memory_usage().map_or(u64::MAX, |u| u.budget);
    let no_room = e.call_memory(1, false).is_none_or(|b| b > budget);
    // Bytes of the case's own resident set once loaded: a refusal is the load's only where
    // other cases' sets held more than that, under a soak budget.
    let own = std::sync::atomic::AtomicU64::new(0);
    let soak_budget = std::env::var("GPU_MSM_SOAK_BUDGET").is_ok();
    let mut check = |mode: &str, got: Result<G1Projective, MsmError>, want: &Expect| {
        t.msms += 1;
        t.refused += u64::from(got.is_err());
        if no_room && matches!(got, Err(MsmError::InputTooLarge(_))) {
            t.no_room += 1;
        } else if soak_budget
            && resident_held(&got)
                .is_some_and(|held| held > own.load(std::sync::atomic::Ordering::Relaxed))
        {
            t.resident_full += 1;
        } else if !want.holds(&got) {
            t.mismatches.push(format!("{what}, {mode}: {got:?}"));
        }
    };
    let zero = Expect::Sum(G1Projective::zero());
    let one_shot = match task {
        true => e.msm_async(&all[..n], &s).await,
        false => e.msm(&all[..n], &s),
    };
    check("one-shot", one_shot, &want);
    // Copies that leave no room for a call (a small soak budget) are refused: load plain.
    let options = LoadOptions {
        precompute,
        ..Default::default()
    };
    let load = || match e.load_bases_with(&all, options) {
        Err(MsmError::InputTooLarge(_)) if precompute != Precompute::None => e.load_bases(&all),
        set => set,
    };
    // A load blocks while it waits for room: a task hands its worker to the runtime first,
    // or the tasks whose calls hold that room might have no worker left to poll them.
    let set = match task {
        true => tokio::task::block_in_place(load),
        false => load(),
    };
    match (set, &loaded) {
        (Ok(resident), Expect::Sum(_)) => {
            own.store(
                resident.device_bytes(),
                std::sync::atomic::Ordering::Relaxed,
            );
            let on_set = match task {
                true => e.msm_async(&resident, &s).await,
                false => e.msm(&resident, &s),
            };
            check("resident", on_set, &want);
            let empty: &[Fr] = &[];
            let vectors = [&s[..], empty, &s2[..]];
            let batch = match task {
                true => e.batch_msm_async(&resident, &vectors).await,
                false => e.batch_msm(&resident, &vectors),
            };
            match batch {
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

/// The bytes resident sets held when `got`, a refusal for room, was made, as its message
/// says. Where they are more than the case's own set, under a soak budget, concurrent
/// cases' sets took the room: justified by the load, not a mismatch; counted apart.
fn resident_held(got: &Result<G1Projective, MsmError>) -> Option<u64> {
    let Err(MsmError::InputTooLarge(why)) = got else {
        return None;
    };
    let before = (why.split(" held by resident bases").next()).filter(|b| b.len() < why.len())?;
    let before = before.trim_end_matches(" of them");
    before
        .rsplit([' ', '('])
        .next()
        .and_then(|n| n.parse::<u64>().ok())
}

/// What cases ran: MSMs (loads refused count as one), cases with bad bases, calls that got
/// the typed error they had to, and what went wrong.
#[derive(Default)]
struct Tally {
    msms: u64,
    bad_cases: u64,
    refused: u64,
    /// Calls refused for a budget that holds no call at their window.
    no_room: u64,
    /// Calls refused as other cases' resident sets held the budget's room ([`resident_held`]).
    resident_full: u64,
    /// Cases whose configured window the budget refused (`InvalidConfig`), run without it.
    windows_refused: u64,
    mismatches: Vec<String>,
}

impl Tally {
    fn plus(mut self, other: Tally) -> Tally {
        self.msms += other.msms;
        self.bad_cases += other.bad_cases;
        self.refused += other.refused;
        self.no_room += other.no_room;
        self.resident_full += other.resident_full;
        self.windows_refused += other.windows_refused;
        self.mismatches.extend(other.mismatches);
        self
    }
}

/// A future that never waits ([`run_case`] of a blocking caller), run to its end.
fn ready_now<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("a blocking case waited"),
    }
}

/// The soak's engine: the shared one, or one of its own for a budget, a profile, several
/// devices or streamed chunks (kept for the process: tasks borrow it).
fn soak_engine(arithmetic: Option<gpu_msm::Arithmetic>) -> &'static GpuMsm {
    let budget = std::env::var("GPU_MSM_SOAK_BUDGET")
        .ok()
        .and_then(|v| v.parse().ok());
    let devices = env("GPU_MSM_SOAK_DEVICES", 1);
    let stream = std::env::var("GPU_MSM_SOAK_STREAM_CHUNK")
        .ok()
        .and_then(|v| v.parse().ok());
    if budget.is_none() && devices == 1 && stream.is_none() {
        return match arithmetic {
            Some(a) => engine_for(a).expect("the adapter runs this profile"),
            None => gpu_engine(),
        };
    }
    let mut config = MsmConfig {
        arithmetic,
        ..gpu_engine().config().clone()
    };
    if let Some(bytes) = budget {
        config.memory_budget = MemoryBudget::Bytes(bytes);
    }
    if let Some(k) = stream {
        config.stream_chunk_scalars = Some(k);
    }
    if devices > 1 {
        let name = gpu_engine().adapter_name().to_string();
        config.devices = gpu_msm::Devices::Named(vec![(name, devices as usize)]);
    }
    let e = GpuMsm::with_config(config).expect("an engine with the soak's settings");
    Box::leak(Box::new(e))
}

/// Each case's caller: a plain thread's, or with `mixed` a third each (by case).
fn caller_of(case: u64, mixed: bool) -> Caller {
    match (mixed, case % 3) {
        (false, _) | (true, 0) => Caller::Thread,
        (true, 1) => Caller::Rayon,
        _ => Caller::Task,
    }
}

/// The cases, each run by its caller, all at once: `threads` plain threads, rayon's
/// workers, and a tokio runtime of two workers.
fn run_cases(base: &'static GpuMsm, cases: &[u64], threads: u64, mixed: bool) -> Tally {
    use rayon::prelude::*;
    let of = |who: Caller| -> Vec<u64> {
        (cases.iter().copied())
            .filter(|&c| caller_of(c, mixed) == who)
            .collect()
    };
    let (plain, rayon_cases, tasks) = (of(Caller::Thread), of(Caller::Rayon), of(Caller::Task));
    std::thread::scope(|scope| {
        let mut workers: Vec<_> = (0..threads as usize)
            .map(|t| {
                let mine: Vec<u64> = plain
                    .iter()
                    .copied()
                    .skip(t)
                    .step_by(threads as usize)
                    .collect();
                scope.spawn(move || {
                    (mine.into_iter())
                        .map(|case| ready_now(run_case(base, case, Caller::Thread)))
                        .fold(Tally::default(), Tally::plus)
                })
            })
            .collect();
        workers.push(scope.spawn(move || {
            (rayon_cases.into_par_iter())
                .map(|case| ready_now(run_case(base, case, Caller::Rayon)))
                .reduce(Tally::default, Tally::plus)
        }));
        workers.push(scope.spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .build()
                .expect("a tokio runtime");
            let spawned: Vec<_> = (tasks.into_iter())
                .map(|case| rt.spawn(run_case(base, case, Caller::Task)))
                .collect();
            rt.block_on(async {
                let mut t = Tally::default();
                for task in spawned {
                    t = t.plus(task.await.expect("a soak task panicked"));
                }
                t
            })
        }));
        workers
            .into_iter()
            .map(|w| w.join().expect("a soak thread panicked"))
            .fold(Tally::default(), Tally::plus)
    })
}

#[test]
fn differential_soak_against_arkworks() {
    let cases = env("GPU_MSM_SOAK_CASES", DEFAULT_CASES);
    let first = env("GPU_MSM_SOAK_SEED", 1);
    let threads = env("GPU_MSM_SOAK_THREADS", 1).max(1);
    let mixed = std::env::var("GPU_MSM_SOAK_CALLERS").as_deref() != Ok("threads");
    let arithmetic = match std::env::var("GPU_MSM_SOAK_ARITHMETIC").as_deref() {
        Ok("limbs13") => Some(gpu_msm::Arithmetic::Limbs13),
        Ok("limbs29" | "limbs32") => Some(gpu_msm::Arithmetic::Limbs29),
        Ok("limbs29-edwards" | "limbs32-edwards") => Some(gpu_msm::Arithmetic::Limbs29Edwards),
        _ => None,
    };
    let base = soak_engine(arithmetic);
    let all: Vec<u64> = (first..first + cases).collect();
    let t = run_cases(base, &all, threads, mixed);
    eprintln!(
        "soak: {cases} cases from seed {first} on {threads} thread(s){}, {} MSMs ({} cases \
         with bad bases, {} calls refused as they had to be, {} of them for a budget that \
         holds no call at their window, {} for room that other cases' resident sets held; {} configured \
         windows refused by the budget), {} mismatches, on {} x{} ({:?}); memory {:?}",
        if mixed {
            " (callers mixed: threads, rayon, tokio tasks)"
        } else {
            ""
        },
        t.msms,
        t.bad_cases,
        t.refused,
        t.no_room,
        t.resident_full,
        t.windows_refused,
        t.mismatches.len(),
        base.adapter_name(),
        base.device_names().len().max(1),
        base.arithmetic(),
        base.memory_usage()
    );
    assert!(t.mismatches.is_empty(), "{:#?}", t.mismatches);
}
