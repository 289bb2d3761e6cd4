//! An engine on several devices (`MsmConfig::devices`), opened on the shared engine's one
//! adapter (lavapipe here): calls split by points around each split boundary, uneven
//! splits, resident sets placed in shares and batches on them, a device lost in the middle
//! of a split call, and the configuration's errors.

use std::ops::Range;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use ark_bls12_377::{Fr, G1Affine};
use gpu_msm::inputs::{adversarial_scalars, random_bases, random_scalars};
use gpu_msm::MIN_DEVICE_SHARE as MIN;
use gpu_msm::{
    Backend, CalibrationSource, DeviceLoss, Devices, GpuMsm, MsmConfig, MsmError, MsmReport,
};

use crate::common::{self, reference};

/// `count` devices on the shared engine's adapter, every call forced onto the GPU path.
fn on_adapter(count: usize) -> MsmConfig {
    let name = common::gpu_engine().adapter_name().to_string();
    MsmConfig {
        devices: Devices::Named(vec![(name, count)]),
        force_backend: Some(Backend::Gpu),
        calibration: CalibrationSource::Defaults,
        ..Default::default()
    }
}

fn build(config: MsmConfig) -> GpuMsm {
    GpuMsm::with_config(config)
        .unwrap_or_else(|e| panic!("GPU tests need a wgpu adapter (mesa-vulkan-drivers): {e}"))
}

/// Three devices, made after the shared engine so that they find its pipelines cached.
pub(crate) fn three() -> &'static GpuMsm {
    static E: OnceLock<GpuMsm> = OnceLock::new();
    E.get_or_init(|| build(on_adapter(3)))
}

/// Bases with an identity, a duplicate across a split boundary and P, -P on either side
/// of another.
fn bases(n: usize, seed: u64) -> Vec<G1Affine> {
    let mut b = random_bases(n, seed);
    b[5] = G1Affine::identity();
    b[2 * MIN] = b[0];
    b[2 * MIN - 1] = -b[2 * MIN + 1];
    b
}

/// The report's devices cover points 0..n in order, each device once.
fn covers(rep: &MsmReport, n: usize, what: &str) -> Vec<Range<usize>> {
    let mut at = 0;
    let mut seen = Vec::new();
    for d in &rep.devices {
        assert_eq!(d.points.start, at, "{what}: {:?}", rep.devices);
        assert!(!seen.contains(&d.device), "{what}: {:?}", rep.devices);
        seen.push(d.device);
        at = d.points.end;
    }
    assert_eq!(at, n, "{what}: {:?}", rep.devices);
    rep.devices.iter().map(|d| d.points.clone()).collect()
}

#[test]
fn split_calls_equal_arkworks_around_each_split_boundary() {
    let e = three();
    let names = e.device_names();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names
        .iter()
        .all(|n| n == common::gpu_engine().adapter_name()));
    let top = 3 * MIN + 1;
    let b = bases(top, 31);
    let s = random_scalars::<Fr>(top, 32);
    for n in [2 * MIN - 1, 2 * MIN, 2 * MIN + 1, 3 * MIN - 1, 3 * MIN, top] {
        let (got, rep) = e.msm_with_report(&b[..n], &s[..n]).unwrap();
        assert_eq!(got, reference(&b[..n], &s[..n]), "n = {n}");
        assert_eq!(rep.devices.len(), (n / MIN).clamp(1, 3), "n = {n}: {rep}");
        covers(&rep, n, &format!("n = {n}"));
        assert_eq!((rep.backend, rep.n), (Backend::Gpu, n));
    }
    // From the workers of a rayon pool (a prover's parallel loop), calls at once: each
    // worker waits for its shares (on threads of their own, their host work on the engine's
    // host pool), never in rayon's own wait.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let n = 2 * MIN;
    let want = reference(&b[..n], &s[..n]);
    let sums: Vec<_> = pool.install(|| {
        use rayon::prelude::*;
        (0..4)
            .into_par_iter()
            .map(|_| e.msm(&b[..n], &s[..n]))
            .collect()
    });
    assert!(sums.iter().all(|g| *g == Ok(want)));
    let n = 2 * MIN + 1;
    for (name, s) in adversarial_scalars::<Fr>(n, 33) {
        let (got, rep) = e.msm_with_report(&b[..n], &s).unwrap();
        assert_eq!(got, reference(&b[..n], &s), "{name}");
        assert_eq!(rep.devices.len(), 2, "{name}");
    }
    // A base off the curve is named in the caller's numbering, whichever share holds it.
    let mut bad = b[..n].to_vec();
    bad[n - 2] = G1Affine::new_unchecked(bad[n - 2].x, bad[n - 2].x);
    let s = random_scalars::<Fr>(n, 34);
    assert_eq!(e.msm(&bad, &s), Err(MsmError::InvalidBase { index: n - 2 }));
}

/// A runtime for the calls that do not block.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap()
}

/// The calls that do not block, split across the devices (their shares joined in the
/// caller's task): one-shot around each boundary, on a placed set, and a batch.
#[test]
fn split_calls_as_futures() {
    let e = three();
    let top = 3 * MIN + 1;
    let b = bases(top, 61);
    let s = random_scalars::<Fr>(top, 62);
    let set = e.load_bases(&b).unwrap();
    let rt = runtime();
    for n in [2 * MIN - 1, 2 * MIN + 1, 3 * MIN, top] {
        let (got, rep) = rt
            .block_on(e.msm_with_report_async(&b[..n], &s[..n]))
            .unwrap();
        assert_eq!(got, reference(&b[..n], &s[..n]), "n = {n}");
        assert_eq!(rep.devices.len(), (n / MIN).clamp(1, 3), "n = {n}: {rep}");
        covers(&rep, n, &format!("n = {n}"));
        let got = rt.block_on(e.msm_async(&set, &s[..n])).unwrap();
        assert_eq!(got, reference(&b[..n], &s[..n]), "set, n = {n}");
    }
    let lens = [top, MIN + 1, 0, 2 * MIN];
    let vectors: Vec<&[Fr]> = lens.iter().map(|&n| &s[..n]).collect();
    let sums = rt.block_on(e.batch_msm_async(&set, &vectors)).unwrap();
    for (got, &n) in sums.iter().zip(&lens) {
        assert_eq!(*got, reference(&b[..n], &s[..n]), "batch vector of {n}");
    }
}

#[test]
fn uneven_shares_resident_sets_and_batches() {
    // A facade of its own over the same devices: its shares are not the other tests'.
    let e = three().reconfigured(three().config().clone()).unwrap();
    let weights = vec![1.0, 6.0, 0.5];
    e.set_device_weights(Some(weights.clone())).unwrap();
    let status = e.device_status();
    assert_eq!(status.iter().map(|d| d.weight).collect::<Vec<_>>(), weights);
    assert!(status.iter().all(|d| !d.lost && d.memory.is_some()));
    let top = 3 * MIN + 1;
    let b = bases(top, 41);
    let s = random_scalars::<Fr>(top, 42);
    let (got, rep) = e.msm_with_report(&b, &s).unwrap();
    assert_eq!(got, reference(&b, &s));
    for (d, w) in covers(&rep, top, "uneven").iter().zip(&weights) {
        let want = top as f64 * w / 7.5;
        assert!((d.len() as f64 - want).abs() <= 1.0, "{d:?} for {want}");
    }
    // A set is placed as the shares say, and calls follow the placement.
    let set = e.load_bases(&b).unwrap();
    let placed = covers(&e.msm_with_report(&set, &s).unwrap().1, top, "placed");
    let (b0, b1) = (placed[0].end, placed[1].end);
    e.set_device_weights(Some(vec![0.0, 1.0, 0.0])).unwrap();
    let (got, rep) = e.msm_with_report(&b, &s).unwrap();
    assert_eq!(got, reference(&b, &s));
    assert_eq!(rep.devices.len(), 1, "{rep}");
    assert_eq!(rep.devices[0].device, Some(1));
    for n in [0, 1, b0 - 1, b0, b0 + 1, b1 - 1, b1, b1 + 1, top] {
        let (got, rep) = e.msm_with_report(&set, &s[..n]).unwrap();
        assert_eq!(got, reference(&b[..n], &s[..n]), "prefix {n}");
        if n > 0 {
            let shares = placed.iter().filter(|r| r.start < n).count();
            assert_eq!(rep.devices.len(), shares, "prefix {n}: {rep}");
            assert!(rep.resident_bases);
        }
    }
    // A base off the curve in a later device's share of a set is named in the set's
    // numbering.
    let mut bad = b.clone();
    bad[top - 2] = G1Affine::new_unchecked(bad[top - 2].x, bad[top - 2].x);
    e.set_device_weights(Some(weights.clone())).unwrap();
    assert_eq!(
        e.load_bases(&bad).map(|_| ()),
        Err(MsmError::InvalidBase { index: top - 2 })
    );
    // The same set on the engine it was reconfigured from (the same devices).
    assert_eq!(three().msm(&set, &s).unwrap(), reference(&b, &s));
    let lens = [top, b0 + 1, 0, 1, b1, b0];
    let vectors: Vec<&[Fr]> = lens.iter().map(|&n| &s[..n]).collect();
    let sums = e.batch_msm_with_reports(&set, &vectors).unwrap();
    for ((got, rep), &n) in sums.iter().zip(&lens) {
        assert_eq!(*got, reference(&b[..n], &s[..n]), "batch vector of {n}");
        assert_eq!(rep.n, n);
    }
    // Shares that cannot be.
    for bad in [
        vec![1.0, 1.0],
        vec![0.0; 3],
        vec![f64::NAN, 1.0, 1.0],
        vec![-1.0, 1.0, 1.0],
    ] {
        let out = e.set_device_weights(Some(bad.clone()));
        assert!(matches!(out, Err(MsmError::InvalidConfig(_))), "{bad:?}");
    }
    e.set_device_weights(None).unwrap();
    let one = common::gpu_engine().set_device_weights(None);
    assert!(matches!(one, Err(MsmError::InvalidConfig(_))));
}

#[test]
fn lost_devices_have_their_shares_rerun_are_replaced_and_batches_survive_losing_all() {
    let e = build(MsmConfig {
        require_gpu: true,
        ..on_adapter(2)
    });
    let n = 2 * MIN + 3;
    let b = bases(n, 51);
    let s = random_scalars::<Fr>(n, 52);
    let want = reference(&b, &s);
    let set = e.load_bases(&b).unwrap();
    let device1 = e.device_engine(1).expect("two devices");
    device1.inject_device_loss_in_next_call();
    let (got, rep) = e.msm_with_report(&b, &s).unwrap();
    assert_eq!(got, want);
    let rerun: Vec<_> = rep.devices.iter().filter(|d| d.rerun.is_some()).collect();
    assert_eq!(rerun.len(), 1, "{rep}");
    assert_eq!(rerun[0].device, Some(0), "{rep}");
    // The next calls run on the device that is left (or on device 1 once replaced).
    let replaced = |rep: &MsmReport| device1.devices_recreated() > 0 || rep.devices.len() == 1;
    let (got, rep) = e.msm_with_report(&b, &s).unwrap();
    assert_eq!(got, want);
    assert!(replaced(&rep), "{rep}");
    // Device 1's share of the set, lost with it, is uploaded by device 0.
    let (got, rep) = e.msm_with_report(&set, &s).unwrap();
    assert_eq!(got, want);
    assert!(
        replaced(&rep) || rep.devices.iter().any(|d| d.rerun.is_some()),
        "{rep}"
    );
    // A batch on the set, device 1's shares rerun or uploaded while it is lost.
    let vectors = [&s[..], &s[..MIN + 1], &s[..0]];
    let sums = e.batch_msm(&set, &vectors).unwrap();
    for (got, v) in sums.iter().zip(vectors) {
        assert_eq!(
            *got,
            reference(&b[..v.len()], v),
            "batch vector of {}",
            v.len()
        );
    }
    // Replaced in the background: then both devices take shares again.
    let give_up = Instant::now() + Duration::from_secs(300);
    while device1.devices_recreated() == 0 {
        assert!(Instant::now() < give_up, "device 1 was not replaced");
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = e.device_status();
    assert!(!status[1].lost && status[1].recreated == 1, "{status:?}");
    // A call that does not block, device 1 lost in it: its share rerun on device 0.
    device1.inject_device_loss_in_next_call();
    let (got, rep) = runtime().block_on(e.msm_with_report_async(&b, &s)).unwrap();
    assert_eq!(got, want);
    assert_eq!(
        rep.devices.iter().filter(|d| d.rerun.is_some()).count(),
        1,
        "{rep}"
    );
    let give_up = Instant::now() + Duration::from_secs(300);
    while device1.devices_recreated() < 2 {
        assert!(Instant::now() < give_up, "device 1 was not replaced again");
        std::thread::sleep(Duration::from_millis(100));
    }
    for _ in 0..2 {
        let (got, rep) = e.msm_with_report(&set, &s).unwrap();
        assert_eq!(got, want);
        assert_eq!(rep.devices.len(), 2, "{rep}");
        let (got, rep) = e.msm_with_report(&b, &s).unwrap();
        assert_eq!(got, want);
        assert_eq!(rep.devices.len(), 2, "{rep}");
    }
    // Every device lost under a set placed on them: a batch on it runs as a call on it does,
    // on device 0's replacement (the GPU is demanded), and with DeviceLoss::FallBackToCpu on
    // the CPU.
    let vectors = [&s[..], &s[..MIN + 1]];
    let sums_of =
        |v: &[&[Fr]]| -> Vec<_> { v.iter().map(|v| reference(&b[..v.len()], v)).collect() };
    e.inject_device_loss();
    device1.inject_device_loss();
    assert_eq!(e.batch_msm(&set, &vectors).unwrap(), sums_of(&vectors));
    let cpu = e
        .reconfigured(MsmConfig {
            require_gpu: false,
            device_loss: DeviceLoss::FallBackToCpu,
            ..e.config().clone()
        })
        .unwrap();
    cpu.inject_device_loss();
    cpu.device_engine(1)
        .expect("two devices")
        .inject_device_loss();
    assert_eq!(cpu.batch_msm(&set, &vectors).unwrap(), sums_of(&vectors));
    let sums = runtime().block_on(cpu.batch_msm_async(&set, &vectors));
    assert_eq!(sums.unwrap(), sums_of(&vectors));
    assert_eq!(cpu.msm(&set, &s).unwrap(), want);
    // Every device lost: a set loaded then stays on the host, and calls on it wait for
    // device 0's replacement (the GPU is demanded) and upload it.
    e.inject_device_loss();
    device1.inject_device_loss();
    let on_host = e.load_bases(&b).unwrap();
    assert_eq!(on_host.device_bytes(), 0);
    assert_eq!(e.msm(&on_host, &s).unwrap(), want);
    let sums = e.batch_msm(&on_host, &[&s[..], &s[..MIN]]).unwrap();
    assert_eq!(sums, [want, reference(&b[..MIN], &s[..MIN])]);
}

#[test]
fn another_group_on_the_same_devices() {
    let config = MsmConfig {
        devices: three().config().devices.clone(),
        ..common::gpu_engine().config().clone()
    };
    let bn = GpuMsm::<ark_bn254::g1::Config>::on_device_of(three(), config.clone()).unwrap();
    assert_eq!(bn.device_names(), three().device_names());
    let n = 2 * MIN + 1;
    let b = random_bases::<ark_bn254::g1::Config>(n, 71);
    let s = random_scalars::<ark_bn254::Fr>(n, 72);
    let (got, rep) = bn.msm_with_report(&b, &s).unwrap();
    let want: ark_bn254::G1Projective = ark_ec::VariableBaseMSM::msm(&b, &s).unwrap();
    assert_eq!(got, want);
    assert_eq!(rep.devices.len(), 2, "{rep}");
    let one_device = GpuMsm::<ark_bn254::g1::Config>::on_device_of(
        three(),
        MsmConfig {
            devices: Devices::One,
            ..config
        },
    );
    assert!(matches!(one_device, Err(MsmError::InvalidConfig(_))));
}

#[test]
fn device_lists_that_cannot_be_are_refused() {
    common::runtime_dir();
    let with = |devices| MsmConfig {
        devices,
        ..Default::default()
    };
    for bad in [
        Devices::Named(vec![]),
        Devices::Named(vec![("llvmpipe".into(), 0)]),
        Devices::Named(vec![(" ".into(), 1)]),
    ] {
        let out = GpuMsm::<ark_bls12_377::g1::Config>::with_config(with(bad.clone()));
        assert!(matches!(out, Err(MsmError::InvalidConfig(_))), "{bad:?}");
    }
    // A named device that fails its known-answer test is an error, even where one device
    // would fall back to the CPU.
    let failing = MsmConfig {
        self_test: gpu_msm::SelfTest::FallBackToCpu,
        ..on_adapter(2)
    };
    let out = GpuMsm::<ark_bls12_377::g1::Config>::with_config_failing_self_test(failing);
    assert!(
        matches!(out, Err(MsmError::SelfTestFailed { .. })),
        "{out:?}"
    );
    let none = Devices::Named(vec![("no adapter is named this".into(), 1)]);
    let out = GpuMsm::<ark_bls12_377::g1::Config>::with_config(with(none));
    let seen_and_why = |out: Result<GpuMsm, MsmError>, why: &str| {
        let Err(e @ MsmError::NoAdapter { .. }) = out else {
            panic!("{out:?}")
        };
        // The adapters seen are named, why none was taken said, and no driver advised.
        let text = e.to_string();
        let name = common::gpu_engine().adapter_name().to_string();
        assert!(text.contains(&name) && text.contains(why), "{text}");
        assert!(!text.contains("mesa-vulkan-drivers"), "{text}");
    };
    seen_and_why(out, "no adapter is named this");
    // Every hardware adapter: none on a machine with only a software one, where the engine
    // runs on the CPU (or, with the GPU demanded, is refused).
    let all = GpuMsm::<ark_bls12_377::g1::Config>::with_config(with(Devices::AllHardware)).unwrap();
    let software = common::gpu_engine().is_software_adapter();
    if software && all.device_names().is_empty() {
        assert!(!all.has_gpu());
        let b = random_bases::<ark_bls12_377::g1::Config>(20, 61);
        let s = random_scalars::<Fr>(20, 62);
        assert_eq!(all.msm(&b, &s).unwrap(), reference(&b, &s));
        let demanded = MsmConfig {
            require_gpu: true,
            ..with(Devices::AllHardware)
        };
        let out = GpuMsm::<ark_bls12_377::g1::Config>::with_config(demanded);
        seen_and_why(out, "Devices::AllHardware takes");
    } else {
        assert!(all.has_gpu() && !all.is_software_adapter());
    }
}
