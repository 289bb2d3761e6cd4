//! Memory admission, configurations that cannot work, deadlines and device loss:
//! concurrent calls under a small memory budget, calls larger than the budget, calls past
//! their deadline, recovery from a lost device (and from a failed recovery), and losses
//! injected under concurrent calls of every shape, each against arkworks.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;

use ark_bls12_377::{Fr, G1Projective};
use common::reference;
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::RECREATE_BACKOFF_MIN;
use gpu_msm::{
    Backend, Bases, CalibrationSource, DeviceLoss, GpuMsm, LoadOptions, MemoryBudget, MsmConfig,
    MsmError, Precompute, SelfTest,
};

/// Bytes of the small budget: one 1000-point call needs about 2.3 MB with Limbs29 and 2.7 MB
/// with Limbs29Edwards (lavapipe's default) at c = 8, so two of them never fit at once and 8
/// threads must wait for each other.
const SMALL_BUDGET: u64 = 4 << 20;

/// An engine forced to the GPU path, with `config`'s budget, self-test and loss policy.
fn engine(config: MsmConfig) -> GpuMsm {
    common::runtime_dir();
    GpuMsm::with_config(MsmConfig {
        force_backend: Some(Backend::Gpu),
        calibration: CalibrationSource::Defaults,
        ..config
    })
    .unwrap_or_else(|e| panic!("GPU tests need a wgpu adapter: {e}"))
}

fn with_budget(bytes: u64, self_test: SelfTest) -> GpuMsm {
    engine(MsmConfig {
        memory_budget: MemoryBudget::Bytes(bytes),
        self_test,
        ..Default::default()
    })
}

fn with_loss(device_loss: DeviceLoss) -> GpuMsm {
    engine(MsmConfig {
        device_loss,
        ..Default::default()
    })
}

/// One thread's calls: a size, two scalar vectors and their sums.
type Case = (usize, Vec<Fr>, Vec<Fr>, G1Projective, G1Projective);

#[test]
fn concurrent_calls_share_a_small_budget() {
    let e = with_budget(SMALL_BUDGET, SelfTest::Refuse);
    // The premise, whatever the profile: one 1000-point call fits the budget, two do not.
    let one = e.call_memory(1000, false).unwrap();
    assert!(
        one <= SMALL_BUDGET && 2 * one > SMALL_BUDGET,
        "{one} bytes a call"
    );
    let bases = random_bases(1000, 1);
    let resident = e.load_bases(&bases).unwrap();
    // Each thread: a one-shot call, a resident prefix and a batch of two, of mixed sizes.
    let sizes = [100, 1000, 300, 1000, 16, 700, 1000, 300];
    let cases: Vec<Case> = sizes
        .iter()
        .enumerate()
        .map(|(t, &n)| {
            let s = random_scalars(n, 10 + t as u64);
            let s2 = random_scalars(1000 - n / 2, 20 + t as u64);
            let want = reference(&bases[..n], &s);
            let want2 = reference(&bases[..s2.len()], &s2);
            (n, s, s2, want, want2)
        })
        .collect();
    let start = Arc::new(Barrier::new(sizes.len()));
    std::thread::scope(|scope| {
        for (n, s, s2, want, want2) in &cases {
            let (e, bases, resident, start) = (&e, &bases, &resident, start.clone());
            scope.spawn(move || {
                start.wait();
                assert_eq!(e.msm(&bases[..*n], s).unwrap(), *want, "one-shot {n}");
                assert_eq!(e.msm(resident, s).unwrap(), *want, "resident {n}");
                let got = e.batch_msm(resident, &[s, s2]).unwrap();
                assert_eq!(got, vec![*want, *want2], "batch {n}");
            });
        }
    });
    let u = e.memory_usage().unwrap();
    eprintln!("memory under a {SMALL_BUDGET}-byte budget after 8 threads: {u:?}");
    assert_eq!(u.budget, SMALL_BUDGET);
    assert!(u.peak <= SMALL_BUDGET, "{u:?}");
    assert!(u.waits > 0, "8 threads never waited for room: {u:?}");
    assert_eq!(u.in_flight, 0, "{u:?}");
    assert_eq!(u.resident, resident.device_bytes());
    drop(resident);
    assert_eq!(e.memory_usage().unwrap().resident, 0);

    // One call larger than the whole budget runs in slices that each fit.
    let n = 3000;
    let big = random_bases(n, 2);
    let s = random_scalars(n, 3);
    let cap = e.max_slice_points(n).unwrap();
    assert!(cap > 0 && cap < n, "cap {cap}");
    let (got, rep) = e.msm_with_report(&big, &s).unwrap();
    assert_eq!(got, reference(&big, &s));
    assert!(rep.route.contains("slices"), "{}", rep.route);
    assert!(e.memory_usage().unwrap().peak <= SMALL_BUDGET);

    // A resident set in several parts: every call on it fits beside the whole set.
    let n = 20000;
    let big = random_bases(n, 4);
    let s = random_scalars(n, 5);
    let set = e.load_bases(&big).unwrap();
    assert!(set.part_len() < n / 2, "parts of {}", set.part_len());
    let (got, rep) = e.msm_with_report(&set, &s).unwrap();
    assert_eq!(got, reference(&big, &s));
    assert!(rep.route.contains("slices"), "{}", rep.route);
    assert!(e.memory_usage().unwrap().peak <= SMALL_BUDGET);
}

/// A configuration that cannot run even one point is `InvalidConfig` at creation, never a
/// `SelfTestFailed` or an engine that silently runs on the CPU; what cannot fit a workable
/// budget is refused before any work, and `max_slice_points` above the adapter's cap is
/// clamped in `load_bases` as in one-shot calls.
#[test]
fn what_cannot_fit_is_refused_before_any_work() {
    // 64 KiB: less than one call's buckets at any window size the cost model picks.
    for self_test in [SelfTest::Refuse, SelfTest::FallBackToCpu, SelfTest::Off] {
        let got = GpuMsm::<ark_bls12_377::g1::Config>::with_config(MsmConfig {
            memory_budget: MemoryBudget::Bytes(64 << 10),
            self_test,
            ..Default::default()
        });
        assert!(
            matches!(got, Err(MsmError::InvalidConfig(_))),
            "{self_test:?}: {got:?}"
        );
    }
    // 1 MiB holds a one-point call, not the known-answer test's calls (at c = 9 their
    // buckets alone take 1 MiB): fine without the test, refused with it.
    let budget = 1 << 20;
    for self_test in [SelfTest::Refuse, SelfTest::FallBackToCpu] {
        let got = GpuMsm::<ark_bls12_377::g1::Config>::with_config(MsmConfig {
            memory_budget: MemoryBudget::Bytes(budget),
            self_test,
            ..Default::default()
        });
        assert!(
            matches!(got, Err(MsmError::InvalidConfig(_))),
            "{self_test:?}: {got:?}"
        );
    }
    let e = with_budget(budget, SelfTest::Off);
    // A window whose buckets cannot fit the budget: refused when reconfigured.
    let wide = e.reconfigured(MsmConfig {
        window_bits: Some(16),
        ..e.config().clone()
    });
    assert!(matches!(wide, Err(MsmError::InvalidConfig(_))), "{wide:?}");
    // A set larger than the budget cannot be loaded.
    let base_bytes = 4 * e.profile().unwrap().base_words() as u64;
    let too_many = (budget / base_bytes) as usize + 1;
    let big = random_bases(too_many, 6);
    assert!(matches!(
        e.load_bases(&big),
        Err(MsmError::InputTooLarge(_))
    ));
    // A set that leaves less room than one point's call: loaded, and its calls refused
    // before any upload rather than run.
    let one = e.call_memory(1, true).unwrap();
    let crowded = ((budget - one / 2) / base_bytes) as usize;
    let bases = &big[..crowded];
    let r = e.load_bases(bases).unwrap();
    let s = random_scalars(10, 5);
    assert!(matches!(e.msm(&r, &s), Err(MsmError::InputTooLarge(_))));
    // A host call that finds no room either, with a base off the curve: that base is named,
    // as on the CPU route, not the room (issue 46's hostile read).
    let mut off = random_bases(10, 7);
    off[3] =
        ark_bls12_377::G1Affine::new_unchecked(off[3].x, off[3].y + ark_bls12_377::Fq::from(1u64));
    assert_eq!(e.msm(&off[..], &s), Err(MsmError::InvalidBase { index: 3 }));
    drop(r);
    // max_slice_points far above what fits is clamped: the parts' calls fit beside the set.
    let clamped = e
        .reconfigured(MsmConfig {
            max_slice_points: Some(usize::MAX),
            ..e.config().clone()
        })
        .unwrap();
    let n = too_many / 4;
    let set = clamped.load_bases(&big[..n]).unwrap();
    assert!(set.part_len() < n, "parts of {}", set.part_len());
    let s = random_scalars(n, 7);
    assert_eq!(clamped.msm(&set, &s).unwrap(), reference(&big[..n], &s));
    let u = e.memory_usage().unwrap();
    assert!(u.peak <= budget && u.in_flight == 0, "{u:?}");
}

#[test]
fn a_lost_device_is_recreated_by_the_next_call() {
    lost_devices_are_recreated(&with_loss(DeviceLoss::Recreate));
}

/// Device losses on engine `e` of any curve group (`DeviceLoss::Recreate`; BN254 G2's in
/// `g2_reliability.rs`): a validation error, a loss in flight and one between calls, with
/// one-shot calls, resident sets (plain and with shifted copies, loaded before and after
/// the loss) and a batch, each against arkworks.
pub(crate) fn lost_devices_are_recreated<C: gpu_msm::GpuCurve>(e: &GpuMsm<C>) {
    use gpu_msm::Fr as ScalarOf;
    let reference = |b: &[ark_ec::short_weierstrass::Affine<C>], s: &[ScalarOf<C>]| {
        <ark_ec::short_weierstrass::Projective<C> as ark_ec::VariableBaseMSM>::msm(b, s).unwrap()
    };
    let n = 200;
    let bases = random_bases::<C>(n, 7);
    let s: Vec<ScalarOf<C>> = random_scalars(n, 8);
    let s2: Vec<ScalarOf<C>> = random_scalars(n / 2, 9);
    let want = reference(&bases, &s);
    let want2 = reference(&bases[..n / 2], &s2);
    let resident = e.load_bases(&bases).unwrap();
    assert_eq!(e.msm(&resident, &s).unwrap(), want);
    let copies = LoadOptions {
        precompute: Precompute::Factor(3),
        ..Default::default()
    };
    let precomputed = e.load_bases_with(&bases, copies).unwrap();
    let k = precomputed.precomputed_copies();
    assert!(k > 1);
    assert_eq!(e.msm(&precomputed, &s).unwrap(), want);

    // A validation error in a call's submission is that call's typed error; its buffers
    // are given back and the next call is right.
    e.inject_gpu_error_in_next_call();
    match e.msm(&resident, &s) {
        Err(MsmError::Gpu(m)) => assert!(m.contains("validation"), "{m}"),
        other => panic!("a call with a validation error returned {other:?}"),
    }
    assert_eq!(e.memory_usage().unwrap().in_flight, 0);
    assert_eq!(e.msm(&resident, &s).unwrap(), want);
    assert_eq!(e.devices_recreated(), 0);

    // Lost while a call is in flight: that call fails, typed, with no sum.
    e.inject_device_loss_in_next_call();
    match e.msm(&bases, &s) {
        Err(MsmError::DeviceLost(_)) => {}
        other => panic!("a call on a lost device returned {other:?}"),
    }
    // The next call makes a new device (and runs the known-answer test on it).
    assert_eq!(e.msm(&bases, &s).unwrap(), want);
    assert_eq!(e.devices_recreated(), 1);
    // Bases loaded before the loss still give the right sums (uploaded by each call) ...
    let (got, rep) = e.msm_with_report(&resident, &s).unwrap();
    assert_eq!(got, want);
    assert_eq!(rep.backend, Backend::Gpu);
    assert_eq!(
        e.batch_msm(&resident, &[&s, &s2]).unwrap(),
        vec![want, want2]
    );
    // A set with shifted copies too: the call uploads copy 0 alone.
    let (got, rep) = e.msm_with_report(&precomputed, &s).unwrap();
    assert_eq!((got, rep.precomputed_copies), (want, 1));
    // ... and loading them again makes them resident on the new device (its shift stage
    // compiled anew).
    let again = e.load_bases(&bases).unwrap();
    assert_eq!(e.msm(&again, &s).unwrap(), want);
    let precomputed = e.load_bases_with(&bases, copies).unwrap();
    let (got, rep) = e.msm_with_report(&precomputed, &s).unwrap();
    assert_eq!((got, rep.precomputed_copies), (want, k));

    // Lost between calls: the next call recovers at once.
    e.inject_device_loss();
    assert_eq!(e.batch_msm(&again, &[&s2, &s]).unwrap(), vec![want2, want]);
    assert_eq!(e.devices_recreated(), 2);
    assert_eq!(e.msm(&again, &s).unwrap(), want);
}

#[test]
fn a_lost_device_can_fall_back_to_the_cpu() {
    let e = with_loss(DeviceLoss::FallBackToCpu);
    let n = 100;
    let bases = random_bases(n, 11);
    let s = random_scalars(n, 12);
    let want = reference(&bases, &s);
    e.inject_device_loss_in_next_call();
    assert!(matches!(e.msm(&bases, &s), Err(MsmError::DeviceLost(_))));
    let (got, rep) = e.msm_with_report(&bases, &s).unwrap();
    assert_eq!(got, want);
    assert_eq!(rep.backend, Backend::CpuArkworks);
    assert!(rep.route.contains("lost"), "{}", rep.route);
    let r = e.load_bases(&bases).unwrap();
    assert_eq!(e.msm(&r, &s).unwrap(), want);
    assert_eq!(e.devices_recreated(), 0);
}

/// A routed (not forced) engine on `e`'s device whose calibration sends every call from n = 1
/// to the GPU, so that routing, not a forced backend, decides.
fn routed_to_the_gpu(e: &GpuMsm) -> GpuMsm {
    e.reconfigured(MsmConfig {
        force_backend: None,
        calibration: common::gpu_from(e, 1, "gpu-from-one.json"),
        ..e.config().clone()
    })
    .unwrap()
}

/// Runs `f` on its own thread and fails the test if it does not return within `limit` (a
/// hang), rather than waiting forever.
fn under_watchdog<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("hung: no result within {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the watched thread panicked"),
    }
}

/// A failed replacement of a lost device: a replacement lost during its own known-answer
/// test fails that test rather than deadlock, and the call that tried gets the error, even
/// from an engine that skips the test (the replacement is made as the engine that made the
/// device says); calls until the next try do not retry (forced ones fail at once, routed
/// ones run on the CPU and say so, a set loaded meanwhile stays on the host); after the
/// back-off a good replacement serves calls again, and the set loaded meanwhile runs in
/// slices like host bases.
#[test]
fn a_failed_replacement_backs_off() {
    let e = Arc::new(with_loss(DeviceLoss::Recreate));
    let routed = routed_to_the_gpu(&e);
    let n = 50;
    let bases = random_bases(n, 30);
    let s = random_scalars(n, 31);
    let want = reference(&bases, &s);
    assert_eq!(
        routed.msm_with_report(&bases, &s).unwrap().1.backend,
        Backend::Gpu
    );

    let untested = e
        .reconfigured(MsmConfig {
            self_test: SelfTest::Off,
            ..e.config().clone()
        })
        .unwrap();
    // The replacement is lost during its known-answer test (which runs, as the engine that
    // made the device says), and the test's own calls must not wait for the recreation
    // they run in: a watchdog.
    e.lose_next_recreation_during_its_self_test();
    e.inject_device_loss();
    let (u, b2, s2) = (Arc::new(untested), bases.clone(), s.clone());
    let got = under_watchdog(Duration::from_secs(600), move || u.msm(&b2, &s2));
    assert!(
        matches!(got, Err(MsmError::SelfTestFailed { .. })),
        "{got:?}"
    );
    // Not retried (the hook is spent: a retry would succeed and count a new device).
    let got = e.msm(&bases, &s);
    assert!(matches!(got, Err(MsmError::DeviceLost(_))), "{got:?}");
    let (got, rep) = routed.msm_with_report(&bases, &s).unwrap();
    assert_eq!(got, want);
    assert_eq!(rep.backend, Backend::CpuArkworks);
    assert!(rep.route.contains("next try"), "{}", rep.route);
    let sliced = routed
        .reconfigured(MsmConfig {
            max_slice_points: Some(20),
            ..routed.config().clone()
        })
        .unwrap();
    let late = sliced.load_bases(&bases).unwrap();
    assert_eq!(late.device_bytes(), 0, "loaded with no device");
    assert_eq!(e.devices_recreated(), 0);

    // After the back-off a good device serves calls again.
    std::thread::sleep(RECREATE_BACKOFF_MIN);
    let (got, rep) = routed.msm_with_report(&bases, &s).unwrap();
    assert_eq!((got, rep.backend), (want, Backend::Gpu), "{}", rep.route);
    assert_eq!(e.devices_recreated(), 1);
    assert_eq!(e.msm(&bases, &s).unwrap(), want);
    let (got, rep) = sliced.msm_with_report(&late, &s).unwrap();
    assert_eq!((got, rep.backend), (want, Backend::Gpu));
    assert!(rep.route.contains("slices of at most 20"), "{}", rep.route);
}

/// A call whose GPU wait passes `gpu_timeout` fails with `Timeout`, gives its memory back,
/// and the device, taken to be hung, is replaced by the next call; the same when the wait's
/// poll itself never returns (the poller's watchdog). A device dropped so is kept only until
/// its queue is idle (lavapipe's soon is), then freed.
#[test]
fn a_call_past_its_deadline_times_out_and_the_engine_recovers() {
    let (hung_before, _) = <GpuMsm>::hung_devices();
    let e = with_loss(DeviceLoss::Recreate);
    let hasty = e
        .reconfigured(MsmConfig {
            gpu_timeout: Duration::from_micros(1),
            ..e.config().clone()
        })
        .unwrap();
    let n = 4096;
    let bases = random_bases(n, 40);
    let s = random_scalars(n, 41);
    let got = hasty.msm(&bases, &s);
    assert!(matches!(got, Err(MsmError::Timeout(_))), "{got:?}");
    assert_eq!(e.memory_usage().unwrap().in_flight, 0);
    assert_eq!(e.msm(&bases, &s).unwrap(), reference(&bases, &s));
    assert_eq!(e.devices_recreated(), 1);
    // A poll that never returns (as one blocked in wgpu behind a driver's submit that waits
    // for a hung GPU): the poller's watchdog takes the device to be hung once the call's
    // deadline and a grace of an eighth of it pass, without a call into wgpu; the next call
    // runs on a new device.
    let patient = e
        .reconfigured(MsmConfig {
            gpu_timeout: Duration::from_secs(2),
            ..e.config().clone()
        })
        .unwrap();
    patient.inject_stalled_poll();
    let (got, took) = {
        let (bases, s) = (bases.clone(), s.clone());
        under_watchdog(Duration::from_secs(90), move || {
            let began = std::time::Instant::now();
            (patient.msm(&bases, &s), began.elapsed())
        })
    };
    eprintln!("a stalled poll: {:?} after {took:?}", got.as_ref().err());
    assert!(matches!(got, Err(MsmError::Timeout(_))), "{got:?}");
    // The hook gives up after a minute: a call that ends only then had no watchdog.
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert_eq!(e.msm(&bases, &s).unwrap(), reference(&bases, &s));
    assert_eq!(e.devices_recreated(), 2);
    // Both devices dropped as hung are freed once idle. The count is the process's: another
    // test's device dropped as hung meanwhile is waited for too (on lavapipe, briefly).
    let give_up = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (ever, kept) = <GpuMsm>::hung_devices();
        assert!(ever >= hung_before + 2, "{ever} devices taken to be hung");
        if kept == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < give_up,
            "{kept} hung devices still kept"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let zero = MsmConfig {
        gpu_timeout: Duration::ZERO,
        ..e.config().clone()
    };
    assert!(matches!(
        e.reconfigured(zero),
        Err(MsmError::InvalidConfig(_))
    ));
}

/// Calls from every rayon worker, plain threads and a tokio worker at once, and loads,
/// under a budget that holds two calls: the host work of a call or load that holds room
/// (packing its bases for upload) never needs a thread that waits for that room, so every
/// call ends with its sum, none by `Timeout`. Before the engine's host pool, rayon workers
/// blocked in `msm` were the very threads an admitted plain thread's packing needed, and
/// nothing moved until `gpu_timeout`.
#[test]
fn rayon_workers_threads_and_tasks_share_a_small_budget() {
    use rayon::prelude::*;
    const N: usize = 1 << 11;
    let one = common::gpu_engine().call_memory(N, false).unwrap();
    let e = engine(MsmConfig {
        memory_budget: MemoryBudget::Bytes(2 * one + one / 2),
        gpu_timeout: Duration::from_secs(30),
        ..Default::default()
    });
    let bases = random_bases(N, 90);
    let scalars: Vec<Vec<Fr>> = (0..6).map(|k| random_scalars(N, 91 + k)).collect();
    let want: Vec<G1Projective> = scalars.iter().map(|s| reference(&bases, s)).collect();
    let (e, bases) = (&e, &bases);
    let check = |k: usize, got: Result<G1Projective, MsmError>, who: &str| match got {
        Ok(sum) => assert_eq!(sum, want[k % 6], "{who}, call {k}"),
        Err(err) => panic!("{who}, call {k}: {err}"),
    };
    let call = |k: usize| e.msm(bases, &scalars[k % 6]);
    // Every worker of rayon's global pool (where the engine's packing ran) takes calls.
    let tasks = 2 * rayon::current_num_threads() + 2;
    std::thread::scope(|s| {
        for t in 0..2 {
            s.spawn(move || (0..3).for_each(|k| check(t + k, call(t + k), "a thread")));
        }
        s.spawn(|| {
            let set = e.load_bases(bases).expect("a load from a thread");
            check(5, e.msm(&set, &scalars[5]), "a call on a set");
        });
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .build()
                .expect("a tokio runtime");
            rt.block_on(async {
                for (k, s) in scalars.iter().enumerate().take(3) {
                    check(k, e.msm_async(bases, s).await, "a tokio task");
                }
            });
        });
        (0..tasks).into_par_iter().for_each(|k| match k % 5 {
            4 => {
                let set = e.load_bases(bases).expect("a load from a rayon worker");
                check(k, e.msm(&set, &scalars[k % 6]), "a rayon worker's set");
            }
            _ => check(k, call(k), "a rayon worker"),
        });
    });
    let u = e.memory_usage().unwrap();
    assert_eq!(u.in_flight, 0, "{u:?}");
    assert!(u.waits > 0, "no call waited for room: {u:?}");
}

/// A lost device met on one of the engine's own threads (a future polled inside its waker,
/// where no blocking call runs) is not replaced there, and that is no failed replacement: a
/// thread of its own replaces it (calls made only on engine threads would otherwise never
/// see a device again), with no back-off.
#[test]
fn a_loss_met_on_an_engine_thread_starts_no_back_off() {
    use std::future::Future;
    use std::task::{Context, Waker};
    let e = Arc::new(with_loss(DeviceLoss::Recreate));
    let bases = random_bases(64, 81);
    let s = random_scalars(64, 82);
    e.inject_device_loss();
    let on_engine = {
        let (e, bases, s) = (Arc::clone(&e), bases.clone(), s.clone());
        <GpuMsm>::on_engine_thread(move || {
            let mut call = std::pin::pin!(e.msm_async(&bases, &s));
            call.as_mut().poll(&mut Context::from_waker(Waker::noop()))
        })
    };
    assert!(
        matches!(
            on_engine,
            std::task::Poll::Ready(Err(MsmError::DeviceLost(_)))
        ),
        "{on_engine:?}"
    );
    let give_up = std::time::Instant::now() + Duration::from_secs(120);
    while e.devices_recreated() == 0 {
        assert!(std::time::Instant::now() < give_up, "never replaced");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(e.msm(&bases, &s).unwrap(), reference(&bases, &s));
    assert_eq!(e.devices_recreated(), 1);
}

/// What one call of a shape may return while devices are lost: the sum, or a typed error of
/// a lost device.
fn lost_or_right(got: Result<G1Projective, MsmError>, want: G1Projective, what: &str) -> bool {
    match got {
        Ok(g) => {
            assert_eq!(g, want, "{what}: a wrong sum");
            true
        }
        Err(MsmError::Batch { source, .. }) => lost_or_right(Err(*source), want, what),
        Err(MsmError::DeviceLost(_) | MsmError::SelfTestFailed { .. } | MsmError::Timeout(_)) => {
            false
        }
        Err(other) => panic!("{what}: {other}"),
    }
}

/// Device losses, between calls and in flight, while four threads run one-shot, sliced,
/// resident, resident-in-parts and batched calls: every result equals arkworks or is
/// `DeviceLost`, `SelfTestFailed` or `Timeout`, none hangs (a watchdog), and afterwards every
/// shape is right again with no memory left in flight.
#[test]
fn device_losses_under_concurrent_calls_of_every_shape() {
    let e = Arc::new(with_loss(DeviceLoss::Recreate));
    let sliced = Arc::new(
        e.reconfigured(MsmConfig {
            max_slice_points: Some(64),
            ..e.config().clone()
        })
        .unwrap(),
    );
    let n = 200;
    let bases = Arc::new(random_bases(n, 50));
    let s = Arc::new(random_scalars(n, 51));
    let want = reference(&bases, &s);
    let whole: Bases = e.load_bases(&bases).unwrap();
    let parts: Bases = sliced.load_bases(&bases).unwrap();
    assert!(parts.part_len() < n);
    let stop = Arc::new(AtomicBool::new(false));
    let (good, lost) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let watched = {
        let (e, stop, good, lost) = (e.clone(), stop.clone(), good.clone(), lost.clone());
        let (sliced, bases, s) = (sliced.clone(), bases.clone(), s.clone());
        let (whole, parts) = (whole.clone(), parts.clone());
        move || {
            std::thread::scope(|scope| {
                for t in 0..4 {
                    let (e, sliced, bases, s) = (&e, &sliced, &bases, &s);
                    let (whole, parts, stop) = (&whole, &parts, &stop);
                    let (good, lost) = (&good, &lost);
                    scope.spawn(move || {
                        let mut k = t;
                        while !stop.load(Ordering::Acquire) {
                            let (what, got) = match k % 5 {
                                0 => ("one-shot", e.msm(&bases[..], &s[..])),
                                1 => ("sliced", sliced.msm(&bases[..], &s[..])),
                                2 => ("resident", e.msm(whole, &s[..])),
                                3 => ("parts", sliced.msm(parts, &s[..])),
                                _ => ("batch", e.batch_msm(whole, &[&s[..], &s[..]]).map(|v| v[1])),
                            };
                            let counter = if lost_or_right(got, want, what) {
                                good
                            } else {
                                lost
                            };
                            counter.fetch_add(1, Ordering::Relaxed);
                            k += 1;
                        }
                    });
                }
                // Two losses: one between calls, one while a call is in flight; each time
                // the calls go on until a new device is serving.
                for round in 0..2u64 {
                    std::thread::sleep(Duration::from_millis(500));
                    match round {
                        0 => e.inject_device_loss(),
                        _ => e.inject_device_loss_in_next_call(),
                    }
                    while e.devices_recreated() <= round {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
                std::thread::sleep(Duration::from_millis(500));
                stop.store(true, Ordering::Release);
            });
        }
    };
    under_watchdog(Duration::from_secs(900), watched);
    let (good, lost) = (good.load(Ordering::Relaxed), lost.load(Ordering::Relaxed));
    eprintln!("device losses under load: {good} right sums, {lost} typed errors");
    assert!(good > 0 && lost > 0, "{good} right, {lost} lost");
    assert_eq!(e.devices_recreated(), 2);
    assert_eq!(e.msm(&bases[..], &s[..]).unwrap(), want);
    assert_eq!(sliced.msm(&parts, &s[..]).unwrap(), want);
    assert_eq!(e.batch_msm(&whole, &[&s[..]]).unwrap(), vec![want]);
    assert_eq!(e.memory_usage().unwrap().in_flight, 0);
}
