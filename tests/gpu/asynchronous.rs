//! The calls that do not block (`msm_async`, `msm_with_report_async`, `batch_msm_async`,
//! `batch_msm_with_reports_async`):
//! 64 calls at once from one thread of a tokio runtime under a small memory budget, a
//! heartbeat task on the same thread beating all along; futures dropped before they finish
//! (waiting for room, or with the GPU running them) leave nothing behind; a minimal
//! executor of the test's own.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use ark_bls12_377::{Fr, G1Projective};
use gpu_msm::inputs::{adversarial_scalars, random_bases, random_scalars};
use gpu_msm::{Backend, CalibrationSource, GpuMsm, LoadOptions, MemoryBudget, MsmConfig};

use crate::common::{self, reference};

/// Points per call: enough GPU work that calls overlap on lavapipe.
const N: usize = 1 << 12;

/// An engine of its own whose budget holds about three N-point calls on host bases, every
/// call forced onto the GPU.
fn small_budget() -> &'static GpuMsm {
    static E: OnceLock<GpuMsm> = OnceLock::new();
    E.get_or_init(|| {
        let one = common::gpu_engine()
            .call_memory(N, false)
            .expect("the shared engine has a GPU");
        common::runtime_dir();
        GpuMsm::with_config(MsmConfig {
            memory_budget: MemoryBudget::Bytes(3 * one + one / 2),
            force_backend: Some(Backend::Gpu),
            calibration: CalibrationSource::Defaults,
            ..Default::default()
        })
        .unwrap_or_else(|e| panic!("GPU tests need a wgpu adapter (mesa-vulkan-drivers): {e}"))
    })
}

/// The longest poll of [`join_all`]: its futures' host work between two waits.
static LONGEST_POLL: Mutex<Duration> = Mutex::new(Duration::ZERO);

/// The tests on [`small_budget`]'s engine, one at a time (each reads its memory usage).
static SMALL_BUDGET: Mutex<()> = Mutex::new(());

/// Every future in `futures`, polled in the caller's task until all are done (one task,
/// hence one thread at a time), in order.
async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let t = Instant::now();
        let mut pending = false;
        for (f, o) in futures.iter_mut().zip(out.iter_mut()) {
            if o.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *o = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        let mut longest = LONGEST_POLL.lock().unwrap();
        *longest = longest.max(t.elapsed());
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(|o| o.expect("done")).collect()
}

/// A tokio runtime with one worker thread: every task spawned on it shares that thread.
fn one_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .expect("a tokio runtime")
}

/// 64 calls at once from one task, beside a heartbeat task on the same (single) worker
/// thread, under a budget of about three calls: most wait for room, without a thread
/// blocked. Every sum equals arkworks; the heartbeat beats while the calls are pending
/// (a call that blocked its thread would stop it until every call was done), over a GPU
/// made to look busy for the first half second (`hold_gpu_progress`), so that the calls
/// wait for it whatever the adapter's speed; one call is
/// larger than the budget holds (sliced), some on a resident set, some with adversarial
/// scalars; no reservation is left at the end.
#[test]
fn sixty_four_calls_from_one_tokio_thread_block_nothing() {
    let _alone = SMALL_BUDGET.lock().unwrap_or_else(|e| e.into_inner());
    let engine = small_budget();
    let bases = Arc::new(random_bases(N * 5, 71));
    let set = Arc::new(engine.load_bases(&bases[..N]).expect("load"));
    let adversarial = adversarial_scalars::<Fr>(N, 5);
    let scalars: Arc<Vec<Vec<Fr>>> = Arc::new(
        (0..65)
            .map(|k| match k {
                64 => random_scalars(N * 5, 99),
                _ if k % 8 == 7 => adversarial[k / 8 % adversarial.len()].1.clone(),
                _ => random_scalars(N, 1000 + k as u64),
            })
            .collect(),
    );
    // What a device does once, on the first call that needs it (the host-list stages
    // compiled and tested, for the scalars SRE plans on the host), blocks that call's
    // thread: done before the heartbeat starts.
    let warm = Instant::now();
    for k in (7..64).step_by(8) {
        assert_eq!(
            engine.msm(&bases[..N], &scalars[k]).expect("msm"),
            reference(&bases[..N], &scalars[k])
        );
    }
    eprintln!("first uses: {:?}", warm.elapsed());
    let rt = one_thread();
    let beats = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let heartbeat = {
        let (beats, stop) = (Arc::clone(&beats), Arc::clone(&stop));
        rt.spawn(async move {
            while !stop.load(Ordering::Acquire) {
                tokio::time::sleep(Duration::from_millis(1)).await;
                beats.lock().unwrap().push(Instant::now());
            }
        })
    };
    // Beats seen when the first call finished.
    let first = Arc::new(AtomicUsize::new(usize::MAX));
    let calls = {
        let (bases, set, scalars) = (Arc::clone(&bases), Arc::clone(&set), Arc::clone(&scalars));
        let (beats, first) = (Arc::clone(&beats), Arc::clone(&first));
        // One task on the runtime's one worker, beside the heartbeat.
        rt.spawn(async move {
            let one = |k: usize| {
                let (bases, set, s) = (&bases, &set, &scalars[k]);
                let (beats, first) = (&beats, &first);
                async move {
                    let out = match k {
                        64 => engine.msm_async(&bases[..], s).await,
                        _ if k % 4 == 3 => engine.msm_async(&**set, s).await,
                        _ => engine.msm_async(&bases[k..k + N], s).await,
                    };
                    let seen = beats.lock().unwrap().len();
                    let _ = first.compare_exchange(
                        usize::MAX,
                        seen,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    );
                    out
                }
            };
            join_all((0..65).map(one).collect()).await
        })
    };
    let start = Instant::now();
    let held = engine.hold_gpu_progress();
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        drop(held);
    });
    let results = rt.block_on(calls).expect("the calls' task");
    let window = (start, Instant::now());
    release.join().expect("the release");
    stop.store(true, Ordering::Release);
    rt.block_on(heartbeat).expect("the heartbeat ran");
    for (k, out) in results.iter().enumerate() {
        let want = match k {
            64 => reference(&bases, &scalars[k]),
            _ if k % 4 == 3 => reference(&bases[..N], &scalars[k]),
            _ => reference(&bases[k..k + N], &scalars[k]),
        };
        assert_eq!(out.as_ref().expect("call"), &want, "call {k}");
    }
    let beats = beats.lock().unwrap().clone();
    let inside = beats
        .iter()
        .copied()
        .filter(|t| *t >= window.0 && *t <= window.1);
    let during: Vec<Instant> = std::iter::once(window.0)
        .chain(inside)
        .chain([window.1])
        .collect();
    let took = window.1 - window.0;
    let gap = during.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(took);
    let first = first.load(Ordering::Acquire);
    let usage = engine.memory_usage().expect("a GPU");
    eprintln!(
        "65 async calls: {took:?}, {} heartbeats, longest gap {gap:?}, {first} beats before \
         the first call finished, longest poll {:?}; {usage:?}",
        during.len() - 2,
        LONGEST_POLL.lock().unwrap()
    );
    assert!(
        during.len() >= 66,
        "{} heartbeats in {took:?}",
        during.len() - 2
    );
    assert!(
        gap < took / 4,
        "the heartbeat stopped for {gap:?} of {took:?}"
    );
    assert_eq!(usage.in_flight, 0, "{usage:?}");
    assert!(usage.peak <= usage.budget, "{usage:?}");
    assert!(usage.waits > 0, "no call waited for room: {usage:?}");
}

/// Futures dropped while they wait for room or while the GPU runs them: their reservations
/// come back (those the GPU still uses once it is done), the queue empties, and the engine's
/// next calls and batches are exact.
#[test]
fn dropped_futures_leave_no_reservation() {
    let _alone = SMALL_BUDGET.lock().unwrap_or_else(|e| e.into_inner());
    let engine = small_budget();
    let bases = random_bases(N, 72);
    let scalars: Vec<Vec<Fr>> = (0..12).map(|k| random_scalars(N, 2000 + k)).collect();
    let rt = one_thread();
    // What the GPU finishes is not seen meanwhile (but by later submissions' own polls):
    // the last call submitted is in flight when the futures are dropped, whatever the
    // adapter's speed.
    let held = engine.hold_gpu_progress();
    rt.block_on(async {
        // Each polled for a while, then dropped: the first ones with the GPU running them,
        // the rest waiting for room.
        let cut = scalars
            .iter()
            .map(|s| tokio::time::timeout(Duration::from_millis(20), engine.msm_async(&bases, s)))
            .collect();
        let outcomes = join_all(cut).await;
        let finished = outcomes.iter().filter(|o| o.is_ok()).count();
        let after = engine.memory_usage().expect("a GPU");
        eprintln!("12 calls cut at 20 ms: {finished} finished; right after: {after:?}");
        // Those cut while the GPU ran them keep their reservations until it is done.
        assert!(finished < 12, "no call was cut");
        assert!(
            after.in_flight > 0,
            "reservations came back before the GPU was done"
        );
    });
    drop(held);
    let give_up = Instant::now() + Duration::from_secs(120);
    loop {
        let u = engine.memory_usage().expect("a GPU");
        if u.in_flight == 0 {
            break;
        }
        assert!(
            Instant::now() < give_up,
            "reservations never came back: {u:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let set = engine.load_bases(&bases).expect("load");
    let vectors: Vec<&[Fr]> = scalars.iter().take(3).map(|s| s.as_slice()).collect();
    let sums = rt
        .block_on(engine.batch_msm_async(&set, &vectors))
        .expect("batch");
    for (k, sum) in sums.iter().enumerate() {
        assert_eq!(sum, &reference(&bases, vectors[k]), "vector {k}");
    }
    assert_eq!(engine.memory_usage().expect("a GPU").in_flight, 0);
}

/// Wakes the thread that waits in [`block_on`].
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// A minimal executor: polls `f` on this thread, parked until woken.
fn block_on<F: Future>(f: F) -> (F::Output, usize) {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    let mut polls = 0;
    loop {
        polls += 1;
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return (v, polls);
        }
        std::thread::park();
    }
}

fn is_send<T: Send>(t: T) -> T {
    t
}

/// The futures on a minimal executor: a one-shot call, its report, a batch, an empty call
/// and a bad one (a typed error, as from the blocking call). Each future is `Send`.
#[test]
fn a_minimal_executor_drives_the_futures() {
    let engine = common::gpu_engine();
    let bases = random_bases(N + 1, 73);
    let scalars = random_scalars(N + 1, 74);
    {
        let set = engine.load_bases(&bases).expect("load");
        let v: [&[Fr]; 1] = [&scalars];
        drop(is_send(engine.msm_async(&bases, &scalars)));
        drop(is_send(engine.msm_with_report_async(&set, &scalars)));
        drop(is_send(engine.batch_msm_async(&set, &v)));
        drop(is_send(engine.batch_msm_with_reports_async(&set, &v)));
    }
    let (sum, polls) = block_on(engine.msm_async(&bases, &scalars));
    assert_eq!(sum.expect("msm"), reference(&bases, &scalars));
    eprintln!("one call took {polls} polls");
    let (out, _) = block_on(engine.msm_with_report_async(&bases[..N], &scalars[..N]));
    let (sum, report) = out.expect("msm");
    assert_eq!(sum, reference(&bases[..N], &scalars[..N]));
    assert_eq!(report.backend, Backend::Gpu);
    let set = engine
        .load_bases_with(&bases, LoadOptions::default())
        .expect("load");
    let vectors = [&scalars[..N - 1], &scalars[..], &scalars[..1]];
    let (sums, _) = block_on(engine.batch_msm_with_reports_async(&set, &vectors));
    for (v, (sum, report)) in vectors.iter().zip(sums.expect("batch")) {
        assert_eq!(sum, reference(&bases[..v.len()], v));
        assert_eq!(report.n, v.len());
    }
    let (empty, _) = block_on(engine.msm_async(&bases[..0], &scalars[..0]));
    assert_eq!(empty.expect("empty"), G1Projective::default());
    let (bad, _) = block_on(engine.msm_async(&bases[..2], &scalars[..3]));
    assert_eq!(
        bad.err(),
        engine.msm(&bases[..2], &scalars[..3]).err(),
        "the same error as the blocking call"
    );
}

/// Blocking waits (resident loads, blocking calls, on threads of their own) and calls that
/// do not block (from one tokio thread), all at once on one device: every wait is served
/// by the device's one poller, which never waits inside wgpu (a timed-out wait there can
/// race another thread's poll in wgpu-core 30.0.2 and lose callbacks, gfx-rs/wgpu#9958).
/// Every sum equals arkworks.
#[test]
fn blocking_and_async_waits_at_once_on_one_device() {
    let engine = common::gpu_engine();
    let n = N / 4;
    let bases = Arc::new(random_bases(n * 4, 75));
    let scalars: Vec<Vec<Fr>> = (0..8).map(|k| random_scalars(n, 3000 + k)).collect();
    let (blocking, asynchronous) = scalars.split_at(4);
    let rt = one_thread();
    let futures: Vec<_> = asynchronous
        .iter()
        .enumerate()
        .map(|(k, s)| engine.msm_async(&bases[k * n..(k + 1) * n], s))
        .collect();
    let (async_sums, blocking_sums) = std::thread::scope(|scope| {
        let threads: Vec<_> = blocking
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let bases = &bases[k * n..(k + 1) * n];
                scope.spawn(move || match k % 2 {
                    0 => {
                        let set = engine.load_bases(bases).expect("load");
                        engine.msm(&set, s).expect("msm on a resident set")
                    }
                    _ => engine.msm(bases, s).expect("msm"),
                })
            })
            .collect();
        let async_sums = rt.block_on(join_all(futures));
        let blocking_sums: Vec<_> = threads
            .into_iter()
            .map(|t| t.join().expect("a blocking call's thread"))
            .collect();
        (async_sums, blocking_sums)
    });
    for (k, sum) in blocking_sums.iter().enumerate() {
        let want = reference(&bases[k * n..(k + 1) * n], &blocking[k]);
        assert_eq!(sum, &want, "blocking call {k}");
    }
    for (k, sum) in async_sums.into_iter().enumerate() {
        let want = reference(&bases[k * n..(k + 1) * n], &asynchronous[k]);
        assert_eq!(sum.expect("async call"), want, "async call {k}");
    }
}
