//! Scalars streamed in chunks (`MsmConfig::stream_chunk_scalars`): the GPU copies and
//! counts chunk j while the host writes chunk j + 1, one `count_digits` pass a chunk. Here
//! with chunks of at least 1 000 scalars, so that small calls stream: around each chunk
//! count's threshold (2k - 1, 2k, ... scalars), one-shot (the convert pass before the
//! counts), resident, and over device parts with shifted copies (a small binding limit, as
//! in `parts.rs`), against arkworks, with adversarial scalars and awkward bases.

use std::sync::OnceLock;

use crate::common;

use ark_bls12_377::{Fr, G1Affine};
use common::reference;
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::internals::gpu::sort::scalar_chunks;
use gpu_msm::{GpuMsm, GpuTiming, LoadOptions, MsmConfig, MsmError, Precompute, MAX_STREAM_CHUNKS};

/// Fewest scalars in a streamed chunk here.
const CHUNK: usize = 1000;

/// An engine whose calls of 2 000 scalars and more stream, under a 1.5 MiB storage binding
/// (a set of 8 500 bases with 4 copies takes 4 parts).
fn engine() -> &'static GpuMsm {
    static E: OnceLock<GpuMsm> = OnceLock::new();
    E.get_or_init(|| {
        common::runtime_dir();
        // The parts tests' limits (`parts::config`): their 4-part set fits here too.
        GpuMsm::with_config(MsmConfig {
            stream_chunk_scalars: Some(CHUNK),
            ..crate::parts::config(16)
        })
        .expect("GPU tests need a wgpu adapter (mesa-vulkan-drivers)")
    })
}

/// The identity, a duplicate and a point beside its negation, near chunk boundaries.
fn awkward_bases(n: usize) -> Vec<G1Affine> {
    let mut b = random_bases(n, 5101);
    b[1] = G1Affine::identity();
    b[CHUNK] = G1Affine::identity();
    b[CHUNK - 1] = b[3];
    b[CHUNK + 1] = -b[5];
    b[2 * CHUNK] = b[2 * CHUNK - 1];
    b
}

/// [`common::adversarial_scalars`], the nonzero one in the last chunk.
fn adversarial(n: usize) -> Vec<(&'static str, Vec<Fr>)> {
    common::adversarial_scalars(n, 5102, n - 2)
}

/// The chunks a call of n scalars streams in where the adapter has timestamps (one where
/// it times by wall clock, a submission a pass).
fn chunks(n: usize, timing: Option<GpuTiming>) -> u32 {
    match timing {
        Some(GpuTiming::Timestamps) => scalar_chunks(n, Some(CHUNK)).len() as u32,
        _ => 1,
    }
}

/// Around each chunk count's threshold, one-shot and resident: arkworks' sums, and one
/// dispatch more a chunk than an engine that uploads in one piece runs.
#[test]
fn streamed_calls_equal_arkworks_around_each_chunk_count() {
    let e = engine();
    let whole = GpuMsm::with_config(MsmConfig {
        stream_chunk_scalars: None,
        ..e.config().clone()
    })
    .unwrap();
    let n = 4 * CHUNK + 7;
    let bases = awkward_bases(n);
    let scalars = random_scalars(n, 5104);
    let set = e.load_bases(&bases).unwrap();
    let whole_set = whole.load_bases(&bases).unwrap();
    assert_eq!(
        chunks(n, Some(GpuTiming::Timestamps)),
        MAX_STREAM_CHUNKS as u32
    );
    for m in [
        2 * CHUNK - 1,
        2 * CHUNK,
        3 * CHUNK - 1,
        3 * CHUNK,
        4 * CHUNK - 1,
        4 * CHUNK + 1,
        n,
    ] {
        let want = reference(&bases[..m], &scalars[..m]);
        let (got, rep) = e.msm_with_report(&set, &scalars[..m]).unwrap();
        assert_eq!(got, want, "resident, {m}");
        let (plain, one) = whole.msm_with_report(&whole_set, &scalars[..m]).unwrap();
        assert_eq!(plain, want, "resident in one upload, {m}");
        let extra = chunks(m, rep.gpu_timing) - 1;
        assert_eq!(rep.dispatches, one.dispatches + extra, "{m}: {}", rep.route);
        let (got, rep) = e.msm_with_report(&bases[..m], &scalars[..m]).unwrap();
        assert_eq!(got, want, "one-shot, {m}: {}", rep.route);
    }
    for (kind, s) in adversarial(n) {
        let want = reference(&bases, &s);
        assert_eq!(e.msm(&set, &s), Ok(want), "resident, {kind}");
        assert_eq!(e.msm(&bases[..], &s), Ok(want), "one-shot, {kind}");
    }
    let batch = [&scalars[..n], &scalars[..2 * CHUNK], &scalars[..CHUNK]];
    let want: Vec<_> = batch
        .iter()
        .map(|s| reference(&bases[..s.len()], s))
        .collect();
    assert_eq!(e.batch_msm(&set, &batch), Ok(want), "batch");
}

/// A set in four device parts with four copies, read in one pass, its scalars streamed.
#[test]
fn a_streamed_call_over_parts_with_copies_equals_arkworks() {
    let e = engine();
    let n = 8500;
    let options = LoadOptions {
        precompute: Precompute::Factor(4),
        window_bits: Some(9),
    };
    let bases = awkward_bases(n);
    let set = e.load_bases_with(&bases, options).unwrap();
    assert_eq!(set.precomputed_copies(), 4);
    assert!(set.parts_per_call() > 1, "{}", set.parts_per_call());
    let scalars = random_scalars(n, 5105);
    for m in [n, 3 * CHUNK + 1, 2 * CHUNK] {
        let (got, rep) = e.msm_with_report(&set, &scalars[..m]).unwrap();
        assert_eq!(
            got,
            reference(&bases[..m], &scalars[..m]),
            "{m}: {}",
            rep.route
        );
    }
    for (kind, s) in adversarial(n) {
        assert_eq!(e.msm(&set, &s), Ok(reference(&bases, &s)), "{kind}");
    }
}

/// What a call reserves never falls as n grows, across the chunk counts' thresholds (the
/// planner finds the longest call that fits by bisection): one-shot and resident, at a
/// fixed window.
#[test]
fn a_call_never_reserves_less_for_more_scalars() {
    let e = engine()
        .reconfigured(MsmConfig {
            window_bits: Some(9),
            ..engine().config().clone()
        })
        .unwrap();
    for resident in [true, false] {
        let mut last = 0;
        for k in [2, 3, 4, 5] {
            for m in k * CHUNK - 40..k * CHUNK + 40 {
                let bytes = e.call_memory(m, resident).unwrap();
                assert!(
                    bytes >= last,
                    "{m} scalars, resident {resident}: {bytes} < {last}"
                );
                last = bytes;
            }
        }
    }
}

/// A chunk of no scalars is refused; an engine on the same device must stream alike.
#[test]
fn stream_chunks_are_checked() {
    let bad = MsmConfig {
        stream_chunk_scalars: Some(0),
        ..Default::default()
    };
    assert!(matches!(bad.validate(), Err(MsmError::InvalidConfig(_))));
    let e = engine();
    let other = MsmConfig {
        stream_chunk_scalars: Some(2 * CHUNK),
        ..e.config().clone()
    };
    assert!(matches!(
        e.reconfigured(other),
        Err(MsmError::InvalidConfig(_))
    ));
}

/// A streamed call (4 chunks) that meets a validation error, a device lost while it is in
/// flight, or a device lost between its first and second submissions, fails with its typed
/// error and holds no memory after; the next streamed call equals arkworks (on a
/// replacement device after a loss).
#[test]
fn a_streamed_call_that_fails_gives_its_memory_back() {
    common::runtime_dir();
    // An engine of its own: its device is lost here.
    let e = GpuMsm::with_config(MsmConfig {
        stream_chunk_scalars: Some(CHUNK),
        ..crate::parts::config(16)
    })
    .unwrap();
    let n = 4 * CHUNK + 3;
    let bases = awkward_bases(n);
    let scalars = random_scalars(n, 5106);
    let want = reference(&bases, &scalars);
    let set = e.load_bases(&bases).unwrap();
    e.inject_gpu_error_in_next_call();
    match e.msm(&set, &scalars) {
        Err(MsmError::Gpu(m)) => assert!(m.contains("validation"), "{m}"),
        other => panic!("a streamed call with a validation error returned {other:?}"),
    }
    assert_eq!(e.memory_usage().unwrap().in_flight, 0);
    assert_eq!(e.msm(&set, &scalars), Ok(want));
    e.inject_device_loss_in_next_call();
    match e.msm(&bases[..], &scalars) {
        Err(MsmError::DeviceLost(_)) => {}
        other => panic!("a streamed call on a lost device returned {other:?}"),
    }
    assert_eq!(e.msm(&bases[..], &scalars), Ok(want));
    assert_eq!(e.devices_recreated(), 1);
    assert_eq!(e.memory_usage().unwrap().in_flight, 0);
    // A set loaded again is resident on the new device.
    let set = e.load_bases(&bases).unwrap();
    let (sum, rep) = e.msm_with_report(&set, &scalars).unwrap();
    assert_eq!(sum, want);
    // Lost between two submissions: after chunk 0's, before chunk 1 is written (a call in
    // one submission, timing by wall clock, never reaches that point).
    e.inject_device_loss_between_chunks();
    let streamed = chunks(n, rep.gpu_timing);
    match (e.msm(&set, &scalars), streamed) {
        (Err(MsmError::DeviceLost(_)), 4) => {}
        (Ok(sum), 1) => assert_eq!(sum, want),
        (other, k) => panic!("a call of {k} chunks lost between two returned {other:?}"),
    }
    assert_eq!(e.memory_usage().unwrap().in_flight, 0);
    assert_eq!(e.msm(&bases[..], &scalars), Ok(want));
    let lost = 1 + (streamed > 1) as u64;
    assert_eq!(e.devices_recreated(), lost);
    assert_eq!(e.memory_usage().unwrap().in_flight, 0);
}
