//! Other adapters' limits, emulated on this one (`MsmConfig::limits`): a storage-binding
//! limit that is not a power of two, with a buffer limit below twice it (as Vulkan on NVIDIA
//! binds at most 2^31 - 1 bytes), and WebGPU's defaults (close to Metal's, DX12's and
//! browsers'). Whole MSMs against arkworks on both sides of each call-size limit, one-shot,
//! resident and batched, in every profile the emulated adapter runs.

use crate::common;

use common::reference;
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::{
    wgpu, Arithmetic, Backend, BucketSort, CalibrationSource, GpuMsm, MsmConfig, MsmError, SreMode,
};
use gpu_msm::{SreOptions, SreStrategy};

/// A storage binding of 1.5 MiB + 4 bytes and buffers of 1.75 MiB: the known-answer test's
/// buckets (c = 9) still bind, and a call holds some thousands of bases, so that the limits
/// are crossed at sizes lavapipe runs quickly. The pool's size classes (powers of two)
/// exceed both: the c = 9 buckets (over 1 MiB) get a buffer held to 1.75 MiB and bound to
/// 1.5 MiB + 4, and so does the staging buffer of the host's bucket lists.
fn odd_limits() -> wgpu::Limits {
    wgpu::Limits {
        max_storage_buffer_binding_size: (3 << 19) + 4,
        max_buffer_size: 7 << 18,
        ..wgpu::Limits::default()
    }
}

fn engine(limits: wgpu::Limits, arithmetic: Option<Arithmetic>) -> Result<GpuMsm, MsmError> {
    crate::common::runtime_dir();
    GpuMsm::with_config(MsmConfig {
        limits: Some(limits),
        arithmetic,
        force_backend: Some(Backend::Gpu),
        calibration: CalibrationSource::Defaults,
        ..Default::default()
    })
}

/// One-shot calls of cap - 1, cap and cap + 1 points (the last in two slices), a resident
/// set in parts with calls across the first part's end and over all of them, and a
/// batch on it: every sum equals arkworks'.
fn crosses_every_call_limit(e: &GpuMsm) {
    let cap = e.max_slice_points(1 << 20).expect("a GPU engine");
    assert!((1 << 12..1 << 15).contains(&cap), "{cap} points per call");
    // The limits, not the memory budget, stop the call there: cap points take a fraction
    // of the budget.
    let budget = e.memory_usage().unwrap().budget;
    assert!(
        e.call_memory(cap, false).unwrap() < budget / 4,
        "cap = {cap}"
    );
    let n = 2 * cap + 7;
    let bases = random_bases(n, 901);
    let scalars = random_scalars(n, 902);
    for m in [cap - 1, cap, cap + 1] {
        let (got, rep) = e.msm_with_report(&bases[..m], &scalars[..m]).unwrap();
        assert_eq!(
            got,
            reference(&bases[..m], &scalars[..m]),
            "one-shot, n = {m}"
        );
        assert_eq!(rep.backend, Backend::Gpu);
        assert_eq!(
            rep.route.contains("slices"),
            m > cap,
            "n = {m}: {}",
            rep.route
        );
    }
    let set = e.load_bases(&bases).unwrap();
    for m in [cap + 1, n] {
        let got = e.msm(&set, &scalars[..m]).unwrap();
        assert_eq!(
            got,
            reference(&bases[..m], &scalars[..m]),
            "resident, n = {m}"
        );
    }
    let vectors = [&scalars[..cap], &scalars[..n]];
    let sums = e.batch_msm(&set, &vectors).unwrap();
    for (got, s) in sums.iter().zip(vectors) {
        assert_eq!(
            *got,
            reference(&bases[..s.len()], s),
            "batch, n = {}",
            s.len()
        );
    }
}

#[test]
fn a_binding_limit_that_is_not_a_power_of_two_holds_in_every_profile() {
    let limits = odd_limits();
    // The default under these limits: Limbs29 where there are 64-bit integers (the
    // Edwards bases would not bind 2^16 at once), else Limbs13.
    let default = engine(limits.clone(), None).unwrap();
    let int64 = default.arithmetic() != Some(Arithmetic::Limbs13);
    // At the cost model's windows the buckets' binding sets the cap (c grows with n); at
    // a fixed c = 9 the per-point buffers do, the staging buffer first, on the GPU bucket
    // sort and on the host's bucket lists.
    crosses_every_call_limit(&default);
    for bucket_sort in [BucketSort::Gpu, BucketSort::Host] {
        let fixed = default
            .reconfigured(MsmConfig {
                window_bits: Some(9),
                bucket_sort,
                ..default.config().clone()
            })
            .unwrap();
        crosses_every_call_limit(&fixed);
    }
    for a in Arithmetic::ALL {
        if Some(a) == default.arithmetic() {
            continue;
        }
        match engine(limits.clone(), Some(a)) {
            Ok(e) => crosses_every_call_limit(&e),
            // Without 64-bit integers only Limbs13 runs; with them, every profile must.
            Err(MsmError::InvalidConfig(why)) if !int64 && a != Arithmetic::Limbs13 => {
                eprintln!("NOTE: {a:?} not run on this adapter: {why}");
            }
            Err(e) => panic!("{a:?}: {e}"),
        }
    }
}

/// SRE's merged points are bases a call adds to its n. Where the bindings set the most
/// points a call takes (a binding limit far below the buffer limit, as on NVIDIA, and a
/// window whose per-point buffers are about a base's size), a call that slicing sized to
/// that limit has no room for them: it drops SRE (the route says so) and still equals
/// arkworks, one-shot and resident (its SRE report says not applied). A call with room
/// keeps SRE.
#[test]
fn sre_calls_at_the_limits_drop_their_merged_points_and_stay_exact() {
    let limits = wgpu::Limits {
        max_storage_buffer_binding_size: (4 << 20) + 4,
        ..wgpu::Limits::default()
    };
    let e = engine(limits, Some(Arithmetic::Limbs29)).unwrap();
    let e = e
        .reconfigured(MsmConfig {
            sre: SreMode::On(SreOptions::new(SreStrategy::Indexed)),
            // c = 11: 23 windows, 92 bytes of entries a point, about a base's 96.
            window_bits: Some(11),
            ..e.config().clone()
        })
        .unwrap();
    let cap = e.max_slice_points(1 << 20).unwrap();
    // Near the bases' binding (96 bytes a base): a call of cap points has no room for the
    // cap / 3 or more merged points SRE makes of these scalars.
    assert!(
        (cap * 96..cap * 96 * 4 / 3).contains(&(4 << 20)),
        "cap = {cap}"
    );
    let bases = random_bases(cap, 921);
    // Scalars from a small set: equal digits everywhere, so SRE merges many pairs.
    let few = random_scalars(3, 922);
    let scalars: Vec<_> = (0..cap).map(|i| few[i % few.len()]).collect();
    let set = e.load_bases(&bases).unwrap();
    for (m, full) in [(cap / 8, false), (cap, true)] {
        let want = reference(&bases[..m], &scalars[..m]);
        for (mode, out) in [
            ("one-shot", e.msm_with_report(&bases[..m], &scalars[..m])),
            ("resident", e.msm_with_report(&set, &scalars[..m])),
        ] {
            let (got, rep) = out.unwrap_or_else(|err| panic!("{mode}, n = {m}: {err}"));
            assert_eq!(got, want, "{mode}, n = {m}");
            let dropped = rep.route.contains("merged points do not fit");
            assert_eq!(dropped, full, "{mode}, n = {m}: {}", rep.route);
            let applied = rep.sre.as_ref().map(|s| s.applied);
            assert_eq!(applied, Some(!dropped), "{mode}, n = {m}: {}", rep.route);
        }
    }
}

/// WebGPU's defaults (8 storage buffers a stage, 256 invocations a workgroup, 128 MiB
/// bindings) admit the engine and its calls (no call here is large enough to cross them).
#[test]
fn webgpu_default_limits_run_one_shot_and_resident_msms() {
    let e = engine(wgpu::Limits::default(), None).unwrap();
    let n = 3000;
    let bases = random_bases(n, 911);
    let scalars = random_scalars(n, 912);
    assert_eq!(
        e.msm(&bases, &scalars).unwrap(),
        reference(&bases, &scalars)
    );
    let set = e.load_bases(&bases).unwrap();
    assert_eq!(e.msm(&set, &scalars).unwrap(), reference(&bases, &scalars));
}

/// Limits beyond the adapter's, or under which the pipeline cannot run, are refused at
/// creation with an `InvalidConfig` that names the limit.
#[test]
fn limits_beyond_the_adapter_or_the_pipeline_are_an_invalid_config() {
    let d = wgpu::Limits::default;
    let cases = [
        (
            "max_buffer_size",
            wgpu::Limits {
                max_buffer_size: u64::MAX,
                ..d()
            },
        ),
        (
            "storage buffers",
            wgpu::Limits {
                max_storage_buffers_per_shader_stage: 2,
                ..d()
            },
        ),
        (
            "offsets",
            wgpu::Limits {
                min_uniform_buffer_offset_alignment: 512,
                ..d()
            },
        ),
    ];
    for (named, limits) in cases {
        match engine(limits, None) {
            Err(MsmError::InvalidConfig(why)) => assert!(why.contains(named), "{why}"),
            other => panic!("{named}: {other:?}"),
        }
    }
}

/// Sets with shifted copies under a binding limit, stored in parts sized for their copies'
/// window: every call on them runs, whichever window the cost model would pick for its
/// own length (one whose buckets do not bind was refused, naming the memory budget), and
/// is exact; a load that cannot be names the limit it meets; `Precompute::Auto` never
/// runs a call over the set in more calls than the set without copies.
#[test]
fn sets_with_copies_run_every_call_under_a_binding_limit() {
    use gpu_msm::{LoadOptions, Precompute};
    let e = engine(odd_limits(), None).expect("an engine under the limits");
    let n = 9000;
    let bases = random_bases(n, 911);
    let scalars = random_scalars(n, 912);
    for (k, c) in [(2, 5), (3, 7), (2, 9)] {
        let opts = LoadOptions {
            precompute: Precompute::Factor(k),
            window_bits: Some(c),
        };
        let set = e.load_bases_with(&bases, opts).unwrap();
        assert!(set.part_len() < n, "k = {k}, c = {c}: one part");
        for m in [n, set.part_len() + 1, set.part_len(), n / 2, 100, 1] {
            let got = e.msm(&set, &scalars[..m]);
            let want = reference(&bases[..m], &scalars[..m]);
            assert_eq!(got, Ok(want), "k = {k}, c = {c}, {m} of {n} points");
        }
    }
    let wide = LoadOptions {
        precompute: Precompute::Factor(2),
        window_bits: Some(12),
    };
    let refused = e.load_bases_with(&bases, wide).map(|_| ());
    let Err(MsmError::InputTooLarge(why)) = refused else {
        panic!("{refused:?}")
    };
    assert!(
        why.contains("binds at most") && !why.contains("memory_budget"),
        "{why}"
    );
    let auto = LoadOptions {
        precompute: Precompute::Auto,
        window_bits: None,
    };
    for n in [3000, 14000, 20000] {
        let bases = random_bases(n, 913);
        let plain_calls = n.div_ceil(e.load_bases(&bases).unwrap().call_len());
        let set = e.load_bases_with(&bases, auto).unwrap();
        let calls = n.div_ceil(set.call_len());
        assert!(calls <= plain_calls, "n = {n}: {calls} > {plain_calls}");
        let s = random_scalars(n, 914);
        assert_eq!(e.msm(&set, &s), Ok(reference(&bases, &s)), "n = {n}");
    }
}
