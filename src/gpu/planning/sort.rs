//! Host side of the GPU bucket pipeline (`shaders/sort.wgsl`, `scan.wgsl`, `balanced.wgsl`):
//! the tuning constants, the level plans of the prefix sum and of the carry reduction (both
//! fixed by sizes the host knows, never by the data, so that every stage is submitted
//! without a read-back), the streamed chunks of the scalars, and a CPU model of the balanced accumulation that the tests run on skewed
//! bucket shapes.

use crate::config::MAX_STREAM_CHUNKS;
use crate::digits::MAX_CHUNK_ENTRIES;
use crate::gpu::pipelines::stages::StageId;
use crate::gpu::shader::contract::LevelParams;
pub use crate::gpu::shader::contract::{
    sort_wgsl_constants as wgsl_constants, CARRY_FANIN, CARRY_GROUP, MIN_SLICE, SCAN_RUN,
};
use crate::gpu::shader::field::WORKGROUP_SIZE;

/// Most entries one accumulation thread adds (its slice of the sorted entries), whatever the
/// scalars: the pipeline runs ceil(n W / ACCUMULATE_SLICE) accumulation threads.
pub const ACCUMULATE_SLICE: u32 = 64;

/// Entries per accumulation thread for E entries over T threads.
pub fn slice_len(entries: u32, threads: u32) -> u32 {
    entries.div_ceil(threads).max(MIN_SLICE)
}

/// Most levels of the prefix sum: SCAN_BLOCK^4 = 2^40 counts.
pub const MAX_SCAN_LEVELS: usize = 4;

/// Most carry levels: CARRY_GROUP^4 = 2^40 >= 2^32 accumulation threads.
pub const MAX_CARRY_LEVELS: usize = 4;

/// Values one workgroup of the prefix sum scans.
pub fn scan_block() -> u32 {
    WORKGROUP_SIZE * SCAN_RUN
}

const _: () = assert!(ACCUMULATE_SLICE <= MAX_CHUNK_ENTRIES && MIN_SLICE <= ACCUMULATE_SLICE);

/// Levels of the exclusive prefix sum over `count` values that start at element 0 of the
/// scan buffer: level i scans `count_in` values at `in_base` and writes its block totals at
/// `out_base`, the next level's input (the `last` level's one total, the sum of all
/// values, after its values). Returns the levels and the buffer's length in elements.
pub fn scan_levels(count: u32) -> (Vec<LevelParams>, u32) {
    let block = scan_block();
    let mut levels = Vec::new();
    let (mut base, mut len) = (0u32, count);
    loop {
        let blocks = len.div_ceil(block).max(1);
        let last = blocks == 1;
        levels.push(LevelParams {
            count_in: len,
            count_out: blocks,
            in_base: base,
            out_base: base + len,
            last: last as u32,
            ..Default::default()
        });
        if last {
            return (levels, base + len + 1);
        }
        base += len;
        len = blocks;
    }
}

/// A bucket's offset from the scan buffer as the levels leave it (nothing adds the block
/// totals back): the sum of its value on each level, as `shaders/offsets.wgsl` computes it.
pub fn bucket_offset(scan: &[u32], levels: &[LevelParams], g: u32) -> u32 {
    let mut at = g;
    let mut offset = 0u32;
    for level in levels {
        offset = offset.wrapping_add(scan[(level.in_base + at) as usize]);
        at /= scan_block();
    }
    offset
}

/// `scan_blocks` on the CPU, level after level, over a scan buffer that holds the counts
/// from element 0 (for the tests).
pub fn scan_model(scan: &mut [u32], levels: &[LevelParams]) {
    let block = scan_block() as usize;
    for level in levels {
        let (base, count) = (level.in_base as usize, level.count_in as usize);
        for (k, start) in (0..count).step_by(block).enumerate() {
            let mut run = 0u32;
            for v in &mut scan[base + start..base + count.min(start + block)] {
                let x = *v;
                *v = run;
                run = run.wrapping_add(x);
            }
            scan[level.out_base as usize + k] = run;
        }
    }
}

/// One dispatch of a call on the GPU bucket sort, in order: the one list that `passes.rs`
/// builds the call's passes from, `counts.rs` counts and [`sort_pass_count`] bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortPass {
    /// `count_digits` over streamed chunk `chunk` of the scalars ([`scalar_chunks`]): each
    /// scalar's integer written back, the buckets counted.
    Count(usize),
    /// `scan_blocks` on prefix-sum level `level`, the levels going up (nothing comes back
    /// down: the stages after it add one value a level, `shaders/offsets.wgsl`).
    ScanBlocks(usize),
    /// `scatter_digits`: the entries placed.
    Scatter,
    /// `accumulate_balanced`: equal slices of the sorted entries.
    Accumulate,
    /// `carry_level` on carry level `level`.
    Carry(usize),
    /// `reduce_level` on reduction level `level` (`reduction.rs`; level 0 reads the
    /// buckets). The levels and the last pass end the host-list path's calls too:
    /// [`reduction_pass_list`].
    ReduceLevel(usize),
    /// `reduce_windows`: one window sum per workgroup.
    ReduceWindows,
}

impl SortPass {
    /// The stage the pass dispatches.
    pub(crate) fn stage(self) -> StageId {
        match self {
            SortPass::Count(_) => StageId::CountDigits,
            SortPass::ScanBlocks(_) => StageId::ScanBlocks,
            SortPass::Scatter => StageId::ScatterDigits,
            SortPass::Accumulate => StageId::AccumulateBalanced,
            SortPass::Carry(_) => StageId::CarryLevel,
            SortPass::ReduceLevel(_) => StageId::ReduceLevel,
            SortPass::ReduceWindows => StageId::ReduceWindows,
        }
    }
}

/// The passes of a call on the GPU bucket sort with `chunks` streamed chunks of its scalars
/// ([`scalar_chunks`]), `scan` prefix-sum levels, `carry` carry levels and `reduce`
/// reduction levels (a call that uploads its bases runs the convert pass first).
pub fn sort_pass_list(chunks: usize, scan: usize, carry: usize, reduce: usize) -> Vec<SortPass> {
    let mut out: Vec<SortPass> = (0..chunks).map(SortPass::Count).collect();
    out.extend((0..scan).map(SortPass::ScanBlocks));
    out.extend([SortPass::Scatter, SortPass::Accumulate]);
    out.extend((0..carry).map(SortPass::Carry));
    out.extend(reduction_pass_list(reduce));
    out
}

/// The bucket reduction's passes with `reduce` reduction levels (level 0 included), which
/// end every call.
pub fn reduction_pass_list(reduce: usize) -> Vec<SortPass> {
    let mut out: Vec<SortPass> = (0..reduce).map(SortPass::ReduceLevel).collect();
    out.push(SortPass::ReduceWindows);
    out
}

/// How long [`reduction_pass_list`] is, as a constant (for `MAX_PASSES`).
pub const fn reduction_pass_count(reduce: usize) -> usize {
    1 + reduce
}

/// How long [`sort_pass_list`] is, as a constant (for `MAX_PASSES`).
pub const fn sort_pass_count(chunks: usize, scan: usize, carry: usize, reduce: usize) -> usize {
    // The counts, scatter, accumulate, the scan levels, the carries, the reduction.
    2 + chunks + scan + carry + reduction_pass_count(reduce)
}

/// The streamed chunks of an n-point call's scalars, as the level blocks of their
/// `count_digits` passes (`in_base` the first point, `count_in` the points): one over all
/// n, or, with chunks of at least `chunk` scalars (`MsmConfig::stream_chunk_scalars`), as
/// many as fit, rounded down to a power of two up to [`MAX_STREAM_CHUNKS`]; in order,
/// covering 0..n, of equal length within one point. Powers of two keep what a call
/// reserves (`SortLayout::chunk_staging_bytes`, a chunk's staging buffer each, in
/// power-of-two size classes) from falling as n grows: 2 chunks of m take what one of 2m
/// does, where 3 would take less than 2 of 1.5m.
pub fn scalar_chunks(n: usize, chunk: Option<usize>) -> Vec<LevelParams> {
    let fit = chunk.map_or(1, |c| (n / c.max(1)).clamp(1, MAX_STREAM_CHUNKS));
    let k = 1 << fit.ilog2();
    (0..k)
        .map(|j| {
            let (from, to) = (j * n / k, (j + 1) * n / k);
            LevelParams {
                count_in: (to - from) as u32,
                in_base: from as u32,
                ..Default::default()
            }
        })
        .collect()
}

/// Accumulation threads for n scalars in W windows (at most n W entries).
pub fn accumulation_threads(n: usize, windows: u32) -> u32 {
    ((n as u64 * windows as u64).div_ceil(ACCUMULATE_SLICE as u64)).max(1) as u32
}

/// Levels of the carry reduction of `items` items: each level joins CARRY_GROUP items per
/// workgroup until one workgroup (the last level) remains.
pub fn carry_levels(items: u32) -> Vec<LevelParams> {
    let mut levels = Vec::new();
    let mut count = items;
    loop {
        let out = count.div_ceil(CARRY_GROUP);
        levels.push(LevelParams {
            count_in: count,
            count_out: out,
            last: (out == 1) as u32,
            ..Default::default()
        });
        if out == 1 {
            return levels;
        }
        count = out;
    }
}

/// The balanced accumulation and carry levels of balanced.wgsl run on the CPU over sorted
/// bucket keys with integer "points" (each entry adds 1): returns each bucket's sum and how
/// many times it was written. The shaders' logic, step for step (a carry lane's loop in
/// [`CarryLane::step`], the tree's hand-up slots as `carry_level` lays them out), for the
/// tests.
pub fn model(keys: &[u32], buckets: usize, threads: u32) -> (Vec<u64>, Vec<u32>) {
    let mut sums = vec![0u64; buckets];
    let mut writes = vec![0u32; buckets];
    let mut done = Vec::new();
    let total = keys.len() as u32;
    let slice = slice_len(total, threads);
    let mut items: Vec<ModelItem> = (0..threads)
        .map(|t| {
            let start = (t * slice).min(total);
            let end = (start + slice).min(total);
            // `accumulate_balanced`: each entry adds 1 to the run summed, a new key ends it
            // (`end_run`), as a carry lane's step does with one-entry runs.
            let mut lane = CarryLane::EMPTY;
            for &k in &keys[start as usize..end as usize] {
                lane.step((k, 1), (NO_KEY, 0), &mut done);
            }
            lane.item()
        })
        .collect();
    for level in carry_levels(threads) {
        let lanes: Vec<CarryLane> = (0..level.count_out)
            .map(|group| carry_group(&items, group, &mut done))
            .collect();
        if level.last != 0 {
            let lane = lanes[0];
            done.extend([lane.head, (lane.key, lane.acc)]);
            break;
        }
        items = lanes.iter().map(CarryLane::item).collect();
    }
    for (k, v) in done.into_iter().filter(|&(k, _)| k != NO_KEY) {
        sums[k as usize] = v;
        writes[k as usize] += 1;
    }
    (sums, writes)
}

const NO_KEY: u32 = u32::MAX;

/// (head key, head sum, tail key, tail sum) of the model.
type ModelItem = (u32, u64, u32, u64);

/// A carry lane's runs as `carry_level` keeps them: its head (once it has a second run) and
/// the run it sums, (key, acc).
#[derive(Clone, Copy)]
struct CarryLane {
    head: (u32, u64),
    key: u32,
    acc: u64,
}

impl CarryLane {
    const EMPTY: CarryLane = CarryLane {
        head: (NO_KEY, 0),
        key: NO_KEY,
        acc: 0,
    };

    /// `end_run`: the run summed ends with `sum`.
    fn end_run(&mut self, sum: u64, done: &mut Vec<(u32, u64)>) {
        if self.head.0 == NO_KEY {
            self.head = (self.key, sum);
        } else {
            done.push((self.key, sum));
        }
    }

    /// One step of `carry_level`'s loop: the next run (NO_KEY: none) and, on a tree step, the
    /// taken item's tail.
    fn step(&mut self, next: (u32, u64), tail: (u32, u64), done: &mut Vec<(u32, u64)>) {
        let adds = next.0 != NO_KEY && next.0 == self.key;
        if next.0 != NO_KEY && !adds {
            if self.key != NO_KEY {
                self.end_run(self.acc, done);
            }
            (self.key, self.acc) = next;
        }
        let mut sum = self.acc;
        if adds {
            sum += next.1;
        }
        if tail.0 != NO_KEY {
            self.end_run(sum, done);
            (self.key, sum) = tail;
        }
        self.acc = sum;
    }

    /// The item `hand_up` and `store_runs` write.
    fn item(&self) -> ModelItem {
        if self.head.0 == NO_KEY {
            (self.key, self.acc, NO_KEY, 0)
        } else {
            (self.head.0, self.head.1, self.key, self.acc)
        }
    }
}

/// Workgroup `group` of a carry level over `items`: each lane's fold steps, then the tree
/// steps through the hand-up slots; lane 0 (its runs) comes back.
fn carry_group(items: &[ModelItem], group: u32, done: &mut Vec<(u32, u64)>) -> CarryLane {
    let lanes_n = WORKGROUP_SIZE as usize;
    let mut lanes = vec![CarryLane::EMPTY; lanes_n];
    for (l, lane) in lanes.iter_mut().enumerate() {
        let first_item = group * CARRY_GROUP + l as u32 * CARRY_FANIN;
        let end = (first_item + CARRY_FANIN).min(items.len() as u32);
        for step in 0..2 * CARRY_FANIN {
            let h = 2 * first_item + step;
            let next = if h < 2 * end {
                let (hk, hv, tk, tv) = items[(h / 2) as usize];
                if h.is_multiple_of(2) {
                    (hk, hv)
                } else {
                    (tk, tv)
                }
            } else {
                (NO_KEY, 0)
            };
            lane.step(next, (NO_KEY, 0), done);
        }
    }
    let mut stride = 1;
    while stride < lanes_n {
        let mut up = vec![(NO_KEY, 0, NO_KEY, 0); lanes_n / 2];
        for l in (stride..lanes_n).step_by(2 * stride) {
            up[l / (2 * stride)] = lanes[l].item();
        }
        for l in (0..lanes_n).step_by(2 * stride) {
            let (hk, hv, tk, tv) = up[l / (2 * stride)];
            if hk != NO_KEY {
                lanes[l].step((hk, hv), (tk, tv), done);
            }
        }
        stride *= 2;
    }
    lanes[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::planning::reduction::MAX_REDUCE_LEVELS;
    use proptest::prelude::*;

    fn check(keys: &[u32], buckets: usize, threads: u32) {
        let (sums, writes) = model(keys, buckets, threads);
        let mut want = vec![0u64; buckets];
        for &k in keys {
            want[k as usize] += 1;
        }
        for b in 0..buckets {
            assert_eq!(sums[b], want[b], "bucket {b}, {threads} threads");
            // Every nonempty bucket written exactly once; empty ones never (the reduction
            // reads them as the identity).
            assert_eq!(
                writes[b],
                (want[b] > 0) as u32,
                "bucket {b}, {threads} threads"
            );
        }
    }

    #[test]
    fn offsets_are_the_sum_of_one_value_a_level() {
        let block = scan_block();
        for count in [
            1,
            2,
            block - 1,
            block,
            block + 1,
            3 * block + 5,
            block * block + 7,
        ] {
            let (levels, len) = scan_levels(count);
            let counts: Vec<u32> = (0..count).map(|i| (i * 7 + 3) % 5).collect();
            let mut scan = vec![0u32; len as usize];
            scan[..count as usize].copy_from_slice(&counts);
            scan_model(&mut scan, &levels);
            let mut want = 0u32;
            for (g, c) in counts.iter().enumerate() {
                assert_eq!(
                    bucket_offset(&scan, &levels, g as u32),
                    want,
                    "{count}: {g}"
                );
                want += c;
            }
            // The top level's one total, after its values, is the sum of all counts.
            let top = levels.last().unwrap();
            assert_eq!((top.count_out, top.out_base + 1), (1, len));
            assert_eq!(scan[top.out_base as usize], want, "{count}");
        }
    }

    #[test]
    fn the_pass_list_and_its_count_agree() {
        for (scan, count) in (1..=MAX_SCAN_LEVELS).zip((1..=MAX_STREAM_CHUNKS).cycle()) {
            for (carry, reduce) in (1..=MAX_CARRY_LEVELS).zip((1..=MAX_REDUCE_LEVELS).cycle()) {
                let list = sort_pass_list(count, scan, carry, reduce);
                assert_eq!(list.len(), sort_pass_count(count, scan, carry, reduce));
                // The counts come first, chunk 0 first.
                let counts: Vec<SortPass> = (0..count).map(SortPass::Count).collect();
                assert_eq!(list[..count], counts[..]);
                assert_eq!(list.last(), Some(&SortPass::ReduceWindows));
                // The scan goes up, level 0 first, and nothing comes back down.
                let levels: Vec<usize> = list
                    .iter()
                    .filter_map(|p| match p {
                        SortPass::ScanBlocks(l) => Some(*l),
                        _ => None,
                    })
                    .collect();
                assert_eq!(levels, (0..scan).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn streamed_chunks_cover_the_call_in_order() {
        for chunk in [None, Some(1), Some(7), Some(1000), Some(1 << 18)] {
            for n in [
                0,
                1,
                6,
                7,
                13,
                14,
                15,
                999,
                1000,
                1999,
                2000,
                2001,
                4001,
                1 << 20,
            ] {
                let chunks = scalar_chunks(n, chunk);
                let fit = chunk.map_or(1, |c| (n / c).clamp(1, MAX_STREAM_CHUNKS));
                let want = [1, 2, 2, 4][fit - 1];
                assert_eq!(chunks.len(), want, "{n} {chunk:?}");
                let mut at = 0;
                for l in &chunks {
                    assert_eq!(l.in_base, at, "{n} {chunk:?}");
                    at += l.count_in;
                    // Equal within one point, and none below the chunk where there are
                    // several.
                    assert!(l.count_in.abs_diff(chunks[0].count_in) <= 1);
                    if want > 1 {
                        assert!(l.count_in as usize >= chunk.unwrap());
                    }
                }
                assert_eq!(at as usize, n);
            }
        }
    }

    #[test]
    fn skewed_shapes_around_the_fanin_and_slice() {
        let (f, g) = (CARRY_FANIN, CARRY_GROUP);
        // Around a lane's items, a workgroup's and a second carry level's.
        for threads in [1, 2, f - 1, f, f + 1, f * f + 1, g - 1, g, g + 1, 2 * g + 1] {
            // Fewer entries than MIN_SLICE per thread, around it.
            for e in [MIN_SLICE - 1, MIN_SLICE, MIN_SLICE + 1] {
                check(&vec![1; (e * threads) as usize], 3, threads);
            }
            // One hot bucket, all entries.
            check(&vec![3; 5000], 8, threads);
            // Every bucket one entry; buckets with gaps.
            let keys: Vec<u32> = (0..300).map(|i| 2 * i).collect();
            check(&keys, 600, threads);
            // A hot bucket between small ones, at both ends.
            let mut keys = vec![0, 1, 1];
            keys.extend(std::iter::repeat_n(2, 1000));
            keys.extend([5, 6, 6, 7]);
            check(&keys, 8, threads);
            // Fewer entries than threads.
            check(&[4, 4, 9], 10, threads);
            check(&[], 4, threads);
        }
    }

    #[test]
    fn level_plans() {
        let (levels, len) = scan_levels(1);
        assert_eq!(levels.len(), 1);
        // The value and the top level's total after it.
        assert_eq!(len, 2);
        let b = scan_block();
        for count in [b - 1, b, b + 1, b * b, b * b + 1] {
            let (levels, len) = scan_levels(count);
            assert_eq!(levels[0].count_in, count);
            assert_eq!(levels.last().unwrap().last, 1);
            assert_eq!(levels.last().unwrap().count_out, 1);
            for w in levels.windows(2) {
                assert_eq!(w[1].count_in, w[0].count_out);
                assert_eq!(w[1].in_base, w[0].out_base);
            }
            let top = levels.last().unwrap();
            assert_eq!(len, top.in_base + top.count_in + 1);
            assert!(levels.len() <= MAX_SCAN_LEVELS);
        }
        for items in [1, 2, CARRY_GROUP, CARRY_GROUP + 1, 1 << 20, u32::MAX] {
            let levels = carry_levels(items);
            assert_eq!(levels[0].count_in, items);
            assert_eq!(levels.last().unwrap().count_out, 1);
            assert!(levels.len() <= MAX_CARRY_LEVELS);
        }
        assert_eq!(accumulation_threads(0, 20), 1);
        assert_eq!(accumulation_threads(64, 1), 1);
        assert_eq!(accumulation_threads(65, 1), 2);
    }

    proptest! {
        #[test]
        fn model_matches_counts(
            sizes in proptest::collection::vec(0u32..200, 1..40),
            threads in 1u32..300,
        ) {
            let keys: Vec<u32> = sizes
                .iter()
                .enumerate()
                .flat_map(|(b, &s)| std::iter::repeat_n(b as u32, s as usize))
                .collect();
            check(&keys, sizes.len(), threads);
        }
    }
}
