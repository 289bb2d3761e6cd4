//! What one call on the GPU bucket sort does, counted from its plan and the formulas'
//! costs: its dispatches, field multiplications and device-memory bytes, pass by pass. These
//! are the proxies `docs/PERF.md` reports until a GPU measures time (`examples/op_counts.rs`
//! prints them). The passes are `sort::sort_pass_list`'s, the list the engine builds its
//! passes from; `tests/gpu/resident.rs` checks the dispatch count against the engine's.
//!
//! The counts are for bases already resident (the prover's case), with or without shifted
//! copies (`CallCounts::precomputed`), and uniform scalars: every
//! one of the n W digits is taken as nonzero (an upper bound, off by about 2^-c), every
//! bucket as nonempty, and every carry-level boundary as one addition (a bucket that spans
//! it; at most two per item).

use crate::config::{MAX_PRECOMPUTED_WINDOW_BITS, MIN_WINDOW_BITS};
use crate::digits::{bucket_windows, num_windows};
use crate::error::{MsmError, Result};
use crate::gpu::pipelines::stages::{Phase, Stage};
use crate::gpu::planning::reduction::{
    level_adds, level_slot_points, reduce_levels, window_adds, window_slot_points,
};
use crate::gpu::planning::sort::{
    accumulation_threads, carry_levels, scalar_chunks, scan_levels, sort_pass_list, SortPass,
};
use crate::gpu::shader::contract::{Params, CARRY_FANIN};
use crate::gpu::shader::field::identity_bits_bytes;
use crate::gpu::shader::field::CurveProfile;

/// One pass kind of the call: how many dispatches, the additions it does and the bytes it
/// reads and writes in device memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassCounts {
    /// The stage's entry point.
    pub stage: &'static str,
    /// Dispatches of this stage in the call.
    pub dispatches: u32,
    /// Mixed additions (a bucket plus a stored base).
    pub mixed_adds: u64,
    /// Projective additions (doublings included: the formulas are complete).
    pub adds: u64,
    /// Bytes read from device memory (atomics count as a read and a write).
    pub bytes_read: u64,
    /// Bytes written to device memory.
    pub bytes_written: u64,
}

/// A call's products of F_p by the phase whose time the report gives
/// ([`CallCounts::field_muls_by_phase`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PhaseMuls {
    /// Bucket accumulation and its carry levels.
    pub accumulation: u64,
    /// Bucket reduction (levels and windows).
    pub reduction: u64,
    /// Any other stage (none today: the sort multiplies nothing).
    pub other: u64,
}

/// One resident call of n points at window size c on the GPU bucket sort.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallCounts {
    /// Points.
    pub n: usize,
    /// Window size.
    pub window_bits: u32,
    /// Digit windows (every scalar bit).
    pub windows: u32,
    /// Shifted copies of each base in the resident set (`config::Precompute`; 1: none).
    pub copies: u32,
    /// Windows of buckets: the digit windows folded onto ceil(W / copies).
    pub bucket_windows: u32,
    /// Bucket entries (n W, the upper bound).
    pub entries: u64,
    /// The profile (and curve) the counts are for.
    pub profile: CurveProfile,
    /// The passes, in order.
    pub passes: Vec<PassCounts>,
    /// Doublings and additions of the host's window reduction (c W' doublings, W'
    /// additions over the W' windows of buckets).
    pub host_adds: u64,
    /// Bytes of the call's largest workspace binding (its scalars, its entries, its
    /// carries' items or its buckets): one call must bind it whole.
    pub largest_binding: u64,
}

impl CallCounts {
    /// The counts of an n-point resident call at window size c on `profile`, its scalars
    /// streamed as the default configuration streams them on an adapter with timestamps
    /// (`MsmConfig::stream_chunk_scalars`; a `count_digits` dispatch a chunk).
    pub fn device_sort(n: usize, c: u32, profile: CurveProfile) -> Result<CallCounts> {
        Self::precomputed(n, c, 1, profile)
    }

    /// The counts of an n-point call at window size c on a resident set stored with
    /// `copies` shifted copies (1: none). [`MsmError::InvalidConfig`] for c outside
    /// `MIN_WINDOW_BITS..=MAX_PRECOMPUTED_WINDOW_BITS` or no copy,
    /// [`MsmError::InputTooLarge`] for n of 2^31 or more (one call's point indices).
    pub fn precomputed(n: usize, c: u32, copies: u32, profile: CurveProfile) -> Result<CallCounts> {
        if !(MIN_WINDOW_BITS..=MAX_PRECOMPUTED_WINDOW_BITS).contains(&c) || copies == 0 {
            return Err(MsmError::InvalidConfig(format!(
                "counts at c = {c} with {copies} copies: c must be in \
                 {MIN_WINDOW_BITS}..={MAX_PRECOMPUTED_WINDOW_BITS}, copies at least 1"
            )));
        }
        if n as u64 >= crate::digits::SIGN_BIT as u64 {
            return Err(MsmError::InputTooLarge(format!(
                "counts of {n} points: at most 2^31 - 1"
            )));
        }
        let a = profile;
        let bits = profile.curve.scalar_bits;
        let digit_windows = num_windows(c, bits);
        let bw = bucket_windows(c, copies, bits);
        // The shape the engine's layout gives the call: buckets and reduction segments.
        let shape = Params::for_windows(0, n as u32, c, bw);
        let buckets = shape.total_buckets as u64;
        let entries = n as u64 * digit_windows as u64;
        let (n64, base, point) = (
            n as u64,
            a.base_words() as u64 * 4,
            a.point_words() as u64 * 4,
        );
        let (scan, _) = scan_levels(buckets as u32 + 1);
        let threads = accumulation_threads(n, digit_windows) as u64;
        let w = bw;
        let carry = carry_levels(threads as u32);
        let levels = reduce_levels(shape.buckets_per_window);
        let item = 2 * (point + 4);
        let mut passes: Vec<PassCounts> = Vec::new();
        // Streamed as the default configuration streams (a dispatch a chunk, the work the
        // same as one's).
        let chunks = scalar_chunks(n, Some(crate::config::DEFAULT_STREAM_CHUNK_SCALARS));
        for step in sort_pass_list(chunks.len(), scan.len(), carry.len(), levels.len()) {
            // (mixed additions, additions, bytes read, bytes written) of one dispatch.
            let (mixed_adds, adds, bytes_read, bytes_written) = match step {
                // Montgomery form in, integer out; the base's identity bit (one 16-byte load
                // serves 128 neighbouring threads); one atomic per digit.
                SortPass::Count(j) => {
                    let m = chunks[j].count_in as u64;
                    let digits = m * digit_windows as u64 * 4;
                    let bits = identity_bits_bytes(n) * m / n64.max(1);
                    (0, 0, m * 32 + bits + digits, m * 32 + digits)
                }
                SortPass::ScanBlocks(i) => {
                    let len = scan[i].count_in as u64 * 4;
                    (0, 0, len, len)
                }
                // The integer, an offset and an atomic per digit (the offset's words on the
                // levels above 0 are shared by a block of buckets: cached, not counted); the
                // entry and its bucket written.
                SortPass::Scatter => (0, 0, n64 * 32 + entries * 12, entries * 12),
                SortPass::Accumulate => (
                    entries,
                    0,
                    entries * (8 + base),
                    buckets.min(entries) * point + threads * item,
                ),
                // A lane keeps its head's sum in its first input item: at most one more
                // point written and read a lane (balanced.wgsl).
                SortPass::Carry(i) => {
                    let (inp, out) = (carry[i].count_in as u64, carry[i].count_out as u64);
                    let lanes = inp.div_ceil(CARRY_FANIN as u64);
                    (
                        0,
                        inp,
                        inp * item + lanes * point,
                        out * item + lanes * point,
                    )
                }
                // Level 0 reads every bucket and its offsets, a level after it two points an
                // item; a thread writes its T and moves its A through memory.
                SortPass::ReduceLevel(i) => {
                    let l = &levels[i];
                    let (inp, out) = (w as u64 * l.count_in as u64, w as u64 * l.count_out as u64);
                    let read = if l.from_buckets != 0 {
                        point + 8
                    } else {
                        2 * point
                    };
                    let (slot_loads, slot_stores) = level_slot_points(l);
                    (
                        0,
                        w as u64 * level_adds(l),
                        inp * read + out * slot_loads * point,
                        out * (1 + slot_stores) * point,
                    )
                }
                SortPass::ReduceWindows => {
                    let m = shape.final_items as u64;
                    let (slot_loads, slot_stores) = window_slot_points(shape.final_items);
                    (
                        0,
                        w as u64 * window_adds(shape.final_items),
                        w as u64 * (m * 2 + slot_loads) * point,
                        w as u64 * (1 + slot_stores) * point,
                    )
                }
            };
            let stage = step.stage().def().entry;
            match passes.last_mut() {
                Some(p) if p.stage == stage => {
                    p.dispatches += 1;
                    p.mixed_adds += mixed_adds;
                    p.adds += adds;
                    p.bytes_read += bytes_read;
                    p.bytes_written += bytes_written;
                }
                _ => passes.push(PassCounts {
                    stage,
                    dispatches: 1,
                    mixed_adds,
                    adds,
                    bytes_read,
                    bytes_written,
                }),
            }
        }
        Ok(CallCounts {
            n,
            window_bits: c,
            windows: digit_windows,
            copies,
            bucket_windows: bw,
            entries,
            profile,
            passes,
            host_adds: w as u64 * (c as u64 + 1),
            // The sizes of `layout.rs`'s sort layout: scalars, entries, items, buckets.
            largest_binding: (n64 * 32)
                .max(entries * 4)
                .max(2 * threads * point)
                .max(buckets * point),
        })
    }

    /// Dispatches of the call.
    pub fn dispatches(&self) -> u32 {
        self.passes.iter().map(|p| p.dispatches).sum()
    }

    /// Products of F_p on the device, by the profile's addition costs on its curve group.
    pub fn field_muls(&self) -> u64 {
        let costs = self.profile.add_costs();
        self.passes
            .iter()
            .map(|p| p.mixed_adds * costs.mixed_add + p.adds * costs.add)
            .sum()
    }

    /// Products of F_p on the device in the stages the report times as bucket
    /// accumulation (with its carry levels) and bucket reduction (`PhaseTimes`): the
    /// numerators of the device check's products per second by stage. The sort does none.
    pub fn field_muls_by_phase(&self) -> PhaseMuls {
        let costs = self.profile.add_costs();
        let mut m = PhaseMuls::default();
        for p in &self.passes {
            let muls = p.mixed_adds * costs.mixed_add + p.adds * costs.add;
            match Stage::ALL.iter().find(|d| d.entry == p.stage) {
                Some(d) if d.phase == Phase::Accumulate => m.accumulation += muls,
                Some(d) if d.phase == Phase::Reduce => m.reduction += muls,
                _ => m.other += muls,
            }
        }
        m
    }

    /// Bytes read from device memory.
    pub fn bytes_read(&self) -> u64 {
        self.passes.iter().map(|p| p.bytes_read).sum()
    }

    /// Bytes written to device memory.
    pub fn bytes_written(&self) -> u64 {
        self.passes.iter().map(|p| p.bytes_written).sum()
    }
}

/// The window size the engine picks for an n-point call on `profile` without a configured
/// one (the cost model's, for the curve's scalars).
pub fn window_bits(n: usize, profile: CurveProfile) -> u32 {
    let (bits, costs) = (profile.curve.scalar_bits, profile.add_costs());
    crate::digits::choose_window(None, n, bits, costs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Arithmetic;
    use crate::gpu::planning::sort::scan_block;

    fn edwards() -> CurveProfile {
        Arithmetic::Limbs29Edwards.on(crate::curve::bls12_377_g1())
    }

    /// The products by phase add up to the call's, each stage in the phase the report
    /// times it under: accumulation (with carries) and reduction both multiply, the sort
    /// does not.
    #[test]
    fn products_by_phase_add_up() {
        for (n, c, copies) in [(1 << 12, 9, 1), (1 << 20, 16, 1), (1 << 16, 13, 4)] {
            let k = CallCounts::precomputed(n, c, copies, edwards()).unwrap();
            let m = k.field_muls_by_phase();
            assert_eq!(m.accumulation + m.reduction + m.other, k.field_muls());
            assert_eq!(m.other, 0);
            assert!(m.accumulation > 0 && m.reduction > 0, "{m:?}");
            let costs = edwards().add_costs();
            let acc = k
                .passes
                .iter()
                .find(|p| p.stage == "accumulate_balanced")
                .unwrap();
            assert!(m.accumulation >= acc.mixed_adds * costs.mixed_add);
        }
    }

    #[test]
    fn counts_follow_the_plan() {
        // 2^20 at c = 16: 16 windows of 2^15 buckets; scan of 2^19 + 1 counts in blocks of
        // 1024 (two levels, nothing added back); 2^18 accumulation threads, carried by 1024 a
        // workgroup (two levels); two reduction levels (level 0 over the buckets, one over
        // items).
        assert_eq!(scan_block(), 1024);
        let k = CallCounts::device_sort(1 << 20, 16, edwards()).unwrap();
        assert_eq!((k.windows, k.entries), (16, 16 << 20));
        let d: Vec<(&str, u32)> = k.passes.iter().map(|p| (p.stage, p.dispatches)).collect();
        assert_eq!(
            d,
            [
                // Streamed in 4 chunks of 2^18 scalars.
                ("count_digits", 4),
                ("scan_blocks", 2),
                ("scatter_digits", 1),
                ("accumulate_balanced", 1),
                ("carry_level", 2),
                ("reduce_level", 2),
                ("reduce_windows", 1)
            ]
        );
        assert_eq!(k.dispatches(), 13);
        // Accumulation: one mixed addition (7 multiplications) per entry, most of the total.
        let acc = 7 * (16u64 << 20);
        assert!(k.field_muls() > acc && k.field_muls() < acc + acc / 5);
        // The reduction of one window: level 0, S = 2048 segments of 16 buckets, 31
        // additions each for the running sums; level 1, 128 threads over 16 items each (16
        // for Z, 4 doublings, then 31 for T and A, which starts as 16 Z: 51); 128 items in
        // reduce_windows, 2 a lane.
        let shape = Params::for_windows(0, 1, 16, 1);
        assert_eq!((shape.segments, shape.final_items), (2048, 128));
        let adds = |stage: &str| k.passes.iter().find(|p| p.stage == stage).unwrap().adds;
        assert_eq!(adds("reduce_level"), 16 * (2048 * 31 + 128 * 51));
        // Lane l: 6 for its two items, 7 doublings of z, bits(2l) - 1 = bits(l) doublings
        // and popcount(l) additions for 2l Tot; over the 64 lanes 64 (6 + 7) = 832, plus
        // sum bits(l) = 321 and sum popcount(l) = 192 over l = 1..63; then 63 in the tree.
        assert_eq!(adds("reduce_windows"), 16 * (832 + 321 + 192 + 63));
        // About 2.2 additions a bucket, against 3.66 before the levels.
        let per_bucket =
            (adds("reduce_level") + adds("reduce_windows")) as f64 / (16u64 << 15) as f64;
        assert!((2.1..2.3).contains(&per_bucket), "{per_bucket}");
    }

    #[test]
    fn shapes_outside_the_engine_are_refused() {
        let a = edwards();
        for (c, copies) in [
            (0, 1),
            (MAX_PRECOMPUTED_WINDOW_BITS + 1, 1),
            (40, 1),
            (16, 0),
        ] {
            let e = CallCounts::precomputed(1 << 10, c, copies, a).unwrap_err();
            assert!(matches!(e, MsmError::InvalidConfig(_)), "c = {c}: {e}");
        }
        for c in MIN_WINDOW_BITS..=MAX_PRECOMPUTED_WINDOW_BITS {
            assert!(CallCounts::precomputed(100, c, 2, a).is_ok(), "c = {c}");
        }
        assert!(matches!(
            CallCounts::device_sort(1 << 31, 16, a),
            Err(MsmError::InputTooLarge(_))
        ));
    }

    #[test]
    fn copies_shrink_the_reduction_only() {
        let a = edwards();
        let plain = CallCounts::device_sort(1 << 20, 16, a).unwrap();
        let k = CallCounts::precomputed(1 << 20, 16, 16, a).unwrap();
        assert_eq!((k.windows, k.bucket_windows, k.copies), (16, 1, 16));
        assert_eq!(k.entries, plain.entries);
        let adds = |c: &CallCounts, stage: &str| {
            let p = c.passes.iter().find(|p| p.stage == stage).unwrap();
            (p.mixed_adds, p.adds)
        };
        assert_eq!(
            adds(&k, "accumulate_balanced"),
            adds(&plain, "accumulate_balanced")
        );
        let (_, reduce) = adds(&k, "reduce_level");
        assert_eq!(reduce * 16, adds(&plain, "reduce_level").1);
        assert!(k.field_muls() < plain.field_muls());
        assert_eq!(k.host_adds * 16, plain.host_adds);
    }
}
