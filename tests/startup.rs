//! What an engine does before its first MSM, and what the first call that needs more does:
//! the parts of its start-up, the host-list stages compiled and checked on first use, and
//! the pipeline cache on disk (foreign, stale and corrupt files ignored and replaced).

mod common;

use std::path::PathBuf;

use common::reference;
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::{
    Backend, BucketSort, CalibrationSource, GpuMsm, MsmConfig, MsmError, PipelineCacheDir, SelfTest,
};

fn config(self_test: SelfTest, pipeline_cache: PipelineCacheDir) -> MsmConfig {
    MsmConfig {
        force_backend: Some(Backend::Gpu),
        calibration: CalibrationSource::Defaults,
        self_test,
        pipeline_cache,
        ..Default::default()
    }
}

fn engine(config: MsmConfig) -> GpuMsm {
    common::runtime_dir();
    GpuMsm::with_config(config)
        .unwrap_or_else(|e| panic!("GPU tests need a wgpu adapter (mesa-vulkan-drivers): {e}"))
}

/// The same engine's device, planning every call's buckets on the host.
fn host_lists(e: &GpuMsm) -> GpuMsm {
    e.reconfigured(MsmConfig {
        bucket_sort: BucketSort::Host,
        ..e.config().clone()
    })
    .expect("same device")
}

/// A fresh directory under the system's temporary one.
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gpu-msm-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Start-up's parts add up to no more than the whole; the host-list stages wait for the
/// first call that plans its buckets on the host, which compiles them, checks them with the
/// known-answer MSMs and gets the right sum; calls on the device's bucket sort never build
/// them.
#[test]
fn host_list_stages_are_built_and_checked_by_their_first_call() {
    let e = engine(config(SelfTest::Refuse, PipelineCacheDir::Off));
    let s = e.startup();
    assert!(s.self_test.is_some(), "{s:?}");
    assert!(
        s.device + s.pipelines + s.self_test.unwrap() <= s.total,
        "{s:?}"
    );
    assert_eq!((s.host_list_stages, s.host_list_self_test), (None, None));
    let (bases, scalars) = (random_bases(50, 1), random_scalars(50, 2));
    let want = reference(&bases, &scalars);
    assert_eq!(e.msm(&bases, &scalars).unwrap(), want);
    assert_eq!(
        e.startup().host_list_stages,
        None,
        "the bucket sort needs none"
    );

    let h = host_lists(&e);
    let (got, rep) = h.msm_with_report(&bases, &scalars).unwrap();
    assert_eq!(got, want);
    assert!(
        !rep.route.contains("bucket sort on the GPU"),
        "{}",
        rep.route
    );
    let s = e.startup();
    assert!(
        s.host_list_stages.is_some() && s.host_list_self_test.is_some(),
        "{s:?}"
    );
    // Once per device: later calls, and engines on the same device, reuse both.
    assert_eq!(h.msm(&bases, &scalars).unwrap(), want);
    assert_eq!(host_lists(&e).startup(), s);

    assert_eq!(
        e.pipeline_cache_file(),
        None,
        "PipelineCacheDir::Off keeps no file"
    );
}

/// Host-list stages that fail their known-answer test: the call is refused, or (falling
/// back) runs on the device's bucket sort, which passed at creation; never a wrong sum.
#[test]
fn failing_host_list_stages_are_refused_or_replaced_by_the_bucket_sort() {
    let (bases, scalars) = (random_bases(40, 3), random_scalars(40, 4));
    let want = reference(&bases, &scalars);

    // One device, so one verdict: engines on it with either policy see the same failure.
    // The fallback is routed to the GPU by a calibration (a software adapter's calls go to
    // arkworks otherwise), not forced.
    let e = engine(MsmConfig {
        force_backend: None,
        ..config(SelfTest::FallBackToCpu, PipelineCacheDir::Off)
    });
    e.fail_host_list_self_test();
    let fall_back = e
        .reconfigured(MsmConfig {
            bucket_sort: BucketSort::Host,
            calibration: common::gpu_from(&e, 1, "startup-fallback.json"),
            ..e.config().clone()
        })
        .unwrap();
    let (got, rep) = fall_back.msm_with_report(&bases, &scalars).unwrap();
    assert_eq!(got, want);
    assert_eq!(rep.backend, Backend::Gpu, "{}", rep.route);
    assert!(
        rep.route.contains("host-list stages failed") && rep.route.contains("bucket sort"),
        "{}",
        rep.route
    );
    assert_eq!(e.startup().host_list_self_test, None, "it failed");
    let with = |self_test, force_backend| {
        fall_back
            .reconfigured(MsmConfig {
                self_test,
                force_backend,
                ..fall_back.config().clone()
            })
            .unwrap()
    };
    // Refusing: the call fails with what disagreed, at every later call too.
    for _ in 0..2 {
        match with(SelfTest::Refuse, None).msm(&bases, &scalars) {
            Err(MsmError::SelfTestFailed { detail, .. }) => {
                assert!(detail.contains("c = 2"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
    }
    // The fallback is the GPU's bucket sort: a forced GPU gets it too.
    let (got, rep) = with(SelfTest::FallBackToCpu, Some(Backend::Gpu))
        .msm_with_report(&bases, &scalars)
        .unwrap();
    assert_eq!((got, rep.backend), (want, Backend::Gpu), "{}", rep.route);
    // An engine without the test still honours the device's failed verdict.
    let (got, rep) = with(SelfTest::Off, None)
        .msm_with_report(&bases, &scalars)
        .unwrap();
    assert_eq!(got, want);
    assert!(
        rep.route.contains("host-list stages failed"),
        "{}",
        rep.route
    );
    // The device's bucket sort passed at creation and still runs.
    let sorted = fall_back
        .reconfigured(MsmConfig {
            bucket_sort: BucketSort::Gpu,
            ..fall_back.config().clone()
        })
        .unwrap();
    let (got, rep) = sorted.msm_with_report(&bases, &scalars).unwrap();
    assert_eq!((got, rep.backend), (want, Backend::Gpu), "{}", rep.route);
}

/// The pipeline cache: written where configured, a corrupt file ignored and replaced, a
/// stale file of the same adapter and profile removed, another profile's file left alone
/// (none with `Off`: the first test).
#[test]
fn the_pipeline_cache_ignores_and_replaces_bad_files() {
    let magic = b"gpumsmpc";
    let dir = temp_dir("pipeline-cache");
    let first = engine(config(SelfTest::Off, PipelineCacheDir::Dir(dir.clone())));
    let Some(file) = first.pipeline_cache_file() else {
        // Adapters without Features::PIPELINE_CACHE keep no file; Vulkan always has one.
        assert_ne!(
            first.adapter_backend(),
            "Vulkan",
            "Vulkan offers a pipeline cache"
        );
        return;
    };
    assert!(file.starts_with(&dir), "{}", file.display());
    let good = std::fs::read(&file).expect("saved at creation");
    assert_eq!(&good[..8], magic);

    // Corrupt: a flipped payload byte, so the checksum disagrees. A stale file of the same
    // profile (another key) and a foreign file (another profile) beside it.
    let mut bad = good.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    std::fs::write(&file, &bad).unwrap();
    let name = file.file_name().unwrap().to_str().unwrap().to_string();
    let prefix = &name[..name.len() - "0123456789abcdef.bin".len()];
    let stale = dir.join(format!("{prefix}0000000000000000.bin"));
    std::fs::write(&stale, &good).unwrap();
    let foreign = dir.join("pipelines-0000000000000000-0000000000000000.bin");
    std::fs::write(&foreign, &good).unwrap();

    let second = engine(config(SelfTest::Refuse, PipelineCacheDir::Dir(dir.clone())));
    assert_eq!(second.pipeline_cache_file().as_ref(), Some(&file));
    let (bases, scalars) = (random_bases(30, 5), random_scalars(30, 6));
    assert_eq!(
        second.msm(&bases, &scalars).unwrap(),
        reference(&bases, &scalars)
    );
    let rewritten = std::fs::read(&file).unwrap();
    assert_eq!(&rewritten[..8], magic);
    assert_ne!(rewritten, bad, "the corrupt file was replaced");
    assert!(!stale.exists(), "the stale file was removed");
    assert!(
        foreign.exists(),
        "another profile's file is not ours to remove"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
