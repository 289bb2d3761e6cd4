//! A resident set stored in several device parts (its bytes, copies included, beyond one
//! storage binding) runs as one pass: one call binds its parts, with one bucket sort, one
//! bucket array and one reduction over all of them, with shifted copies too (what lets
//! 2^24 and 2^26 sets take copies on a GPU). Forced into parts here by a small binding
//! limit (`MsmConfig::limits`), against arkworks: every prefix around the parts' ends,
//! adversarial scalars, identity, duplicate and opposite bases; and, where a device binds
//! fewer parts than the set has, slices of as many parts as it binds.

use crate::common;

use ark_bls12_377::G1Affine;
use common::reference;
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::{
    wgpu, Arithmetic, Backend, CalibrationSource, GpuMsm, LoadOptions, MemoryBudget, MsmConfig,
    Precompute,
};

/// A 1.5 MiB storage binding (the known-answer test's buckets at c = 9 bind), and `storage`
/// storage buffers a stage (the stage that reads bases has 6 of its own: 9 gives three parts
/// a call; 16: up to eight), Edwards profile, the GPU path forced.
pub(crate) fn config(storage: u32) -> MsmConfig {
    MsmConfig {
        limits: Some(wgpu::Limits {
            max_storage_buffer_binding_size: 3 << 19,
            max_storage_buffers_per_shader_stage: storage,
            ..wgpu::Limits::default()
        }),
        arithmetic: Some(Arithmetic::Limbs29Edwards),
        force_backend: Some(Backend::Gpu),
        calibration: CalibrationSource::Defaults,
        ..Default::default()
    }
}

/// An engine with [`config`].
fn engine(storage: u32) -> GpuMsm {
    common::runtime_dir();
    GpuMsm::with_config(config(storage)).expect("an engine under the limits")
}

/// Bases with the identity, a duplicate and a point beside its negation, on both sides of
/// the first part's end `at`.
fn awkward_bases(n: usize, at: usize) -> Vec<G1Affine> {
    let mut b = random_bases(n, 4901);
    b[1] = G1Affine::identity();
    b[at] = G1Affine::identity();
    b[at - 1] = b[3];
    b[at + 1] = -b[5];
    b
}

/// 8 500 Edwards bases (144 bytes) with 4 copies at c = 9 take 4 parts of about 2 700
/// under the 1.5 MiB binding; a call over all of them fits (its carries' items, 6 bytes an
/// entry, bind). With up to eight parts a call, every call runs as one pass over the parts
/// it reads (never in slices); with three (not a power of two: the stages compiled for 3
/// parts, and for 2), in slices of three parts and one. Every sum equals arkworks'.
#[test]
fn a_set_in_parts_runs_in_one_pass_with_copies() {
    let n = 8500;
    let options = LoadOptions {
        precompute: Precompute::Factor(4),
        window_bits: Some(9),
    };
    for (storage, per_call) in [(16, 4), (9, 3)] {
        let e = engine(storage);
        let what = format!("{storage} storage buffers a stage");
        let most = (storage - 6).min(8);
        assert_eq!(e.profile().unwrap().base_parts(), most, "{what}");
        let probe = e.load_bases_with(&random_bases(n, 1), options).unwrap();
        let len = probe.part_len();
        drop(probe);
        let bases = awkward_bases(n, len);
        let set = e.load_bases_with(&bases, options).unwrap();
        assert_eq!(set.precomputed_copies(), 4, "{what}");
        assert_eq!(n.div_ceil(set.part_len()), 4, "{what}: parts of {len}");
        assert_eq!(set.parts_per_call(), per_call, "{what}");
        let scalars = random_scalars(n, 4904);
        for m in [n, n - 1, 2 * len + 1, 2 * len, len + 1, len, len - 1, 1] {
            let (got, rep) = e.msm_with_report(&set, &scalars[..m]).unwrap();
            assert_eq!(got, reference(&bases[..m], &scalars[..m]), "{what}, {m}");
            let parts = m.div_ceil(len);
            let slices = parts.div_ceil(per_call);
            let pass = parts.min(per_call);
            // A one-point call takes its own window, without the copies.
            let copies = if m > 1 { 4 } else { 1 };
            assert_eq!(rep.precomputed_copies, copies, "{what}, {m}: {}", rep.route);
            assert_eq!(
                rep.route
                    .contains(&format!("{pass} device parts in one pass")),
                pass > 1,
                "{what}, {m}: {}",
                rep.route
            );
            assert_eq!(
                rep.route.contains(&format!("{slices} slices")),
                slices > 1,
                "{what}, {m}: {}",
                rep.route
            );
        }
        // The nonzero scalar in the last part.
        for (kind, s) in common::adversarial_scalars(n, 4902, n - 2) {
            assert_eq!(e.msm(&set, &s), Ok(reference(&bases, &s)), "{what}, {kind}");
        }
        // A batch on the set, and the set without copies.
        let batch = [&scalars[..n], &scalars[..len + 1]];
        let want: Vec<_> = batch
            .iter()
            .map(|s| reference(&bases[..s.len()], s))
            .collect();
        assert_eq!(e.batch_msm(&set, &batch), Ok(want), "{what}, batch");
        let plain = e.load_bases(&bases).unwrap();
        assert_eq!(
            e.msm(&plain, &scalars),
            Ok(reference(&bases, &scalars)),
            "{what}"
        );
    }
}

/// The parts a call reads are sized when the set is loaded, against the room of then; a
/// later load (here a filler set) may leave room for one part's call and not for theirs.
/// The call then runs in slices of one part, and says so, rather than being refused.
#[test]
fn a_call_over_parts_that_no_longer_fits_runs_one_part_a_call() {
    common::runtime_dir();
    let e = GpuMsm::with_config(MsmConfig {
        memory_budget: MemoryBudget::Bytes(48 << 20),
        ..engine(16).config().clone()
    })
    .unwrap();
    let n = 8500;
    let options = LoadOptions {
        precompute: Precompute::Factor(4),
        window_bits: Some(9),
    };
    let bases = random_bases(n, 4905);
    let set = e.load_bases_with(&bases, options).unwrap();
    assert!(set.parts_per_call() > 1, "{}", set.parts_per_call());
    let scalars = random_scalars(n, 4906);
    assert_eq!(e.msm(&set, &scalars), Ok(reference(&bases, &scalars)));
    let u = e.memory_usage().unwrap();
    // What the call over every part took beside the set (its pooled workspace included).
    let whole = u.peak - u.resident;
    let mut fell_back = false;
    for share in [0.7, 0.55, 0.4, 0.85] {
        let room = (whole as f64 * share) as u64;
        let filler_bytes = u.budget - u.resident - room;
        let filler = random_bases((filler_bytes / 150) as usize, 4907);
        let Ok(_held) = e.load_bases(&filler) else {
            continue;
        };
        match e.msm_with_report(&set, &scalars) {
            Ok((got, rep)) if rep.route.contains("one part a call") => {
                assert_eq!(got, reference(&bases, &scalars), "{}", rep.route);
                fell_back = true;
                break;
            }
            Ok((got, rep)) => assert_eq!(got, reference(&bases, &scalars), "{}", rep.route),
            Err(err) => panic!("room for {share} of the call over every part: {err}"),
        }
    }
    assert!(
        fell_back,
        "no filler left room for one part's call only (whole call: {whole} bytes)"
    );
}
