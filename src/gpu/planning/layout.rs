//! A call's layout: what it runs on (its bases and plan), every buffer's size, its
//! parameter blocks and where its read-back holds what, checked against the adapter's limits.

use ark_ec::short_weierstrass::Affine;

use crate::curve::{Fr, GpuCurve};
use crate::digits::{BucketPlan, MergePlan, MAX_MERGE_LEVELS, MERGE_FANIN};
use crate::error::{MsmError, Result};
use crate::gpu::memory::resident::{Shift, StoredBases};
use crate::gpu::pipelines::slots::Slot;
use crate::gpu::planning::reduction::{self, MAX_REDUCE_LEVELS};
use crate::gpu::shader::contract::{LevelParams, Params, STATUS_WORDS};
use crate::gpu::shader::field::{CurveProfile, PART_SHIFT};
use crate::gpu::{planning::sort, GpuContext};

/// Most compute passes of one call: convert, accumulate, the merge levels and the
/// reduction's passes; or, with the GPU bucket sort, convert, the counts, the scan levels,
/// scatter, accumulate, the carry levels and the reduction's passes.
pub(in crate::gpu) const MAX_PASSES: usize = {
    let host = 2 + MAX_MERGE_LEVELS + sort::reduction_pass_count(MAX_REDUCE_LEVELS);
    let gpu = 1 + sort::sort_pass_count(
        crate::config::MAX_STREAM_CHUNKS,
        sort::MAX_SCAN_LEVELS,
        sort::MAX_CARRY_LEVELS,
        MAX_REDUCE_LEVELS,
    );
    if host > gpu {
        host
    } else {
        gpu
    }
};

/// Timestamp queries: a begin and an end for each pass.
pub(in crate::gpu) const TIMESTAMP_QUERIES: u32 = 2 * MAX_PASSES as u32;

/// Alignment of the sections of the staging buffer and of the merge levels' parameter blocks
/// (WebGPU's minimum uniform buffer offset alignment is at most 256 on every adapter).
pub(in crate::gpu) const SECTION_ALIGN: u64 = 256;

pub(in crate::gpu) fn align(x: u64) -> u64 {
    x.div_ceil(SECTION_ALIGN) * SECTION_ALIGN
}

/// The uploads of a job on the GPU bucket sort in its staging buffer, besides its
/// parameters and points: the level parameters (its scalars have staging buffers of their
/// own, `Slot::ScalarStaging`).
pub(in crate::gpu) fn sort_uploads(levels: usize) -> [(Slot, u64); 1] {
    [(Slot::LevelParams, levels as u64 * SECTION_ALIGN)]
}

/// Places `sections` (slot, bytes) back to back in the staging buffer, each aligned; empty
/// ones are left out. Returns (slot, offset, bytes) of each and the total.
pub(in crate::gpu) fn staging_sections(sections: Vec<(Slot, u64)>) -> (Vec<(Slot, u64, u64)>, u64) {
    let mut at = 0;
    let mut out = Vec::new();
    for (slot, bytes) in sections {
        if bytes > 0 {
            out.push((slot, at, bytes));
            at += align(bytes);
        }
    }
    (out, at)
}

impl Params {
    fn new(first_point: u32, num_points: u32, plan: &BucketPlan) -> Self {
        Self {
            num_chunks: plan.num_chunks(),
            ..Self::for_windows(first_point, num_points, plan.window_bits, plan.num_windows)
        }
    }

    /// The parameters that depend on the window shape only (buckets, the reduction's
    /// segments).
    pub(in crate::gpu) fn for_windows(
        first_point: u32,
        num_points: u32,
        c: u32,
        windows: u32,
    ) -> Self {
        let b = crate::digits::buckets_per_window(c);
        let levels = reduction::reduce_levels(b);
        let segments = levels[0].count_out;
        Self {
            num_points,
            num_windows: windows,
            buckets_per_window: b,
            total_buckets: windows * b,
            segments,
            total_segments: windows * segments,
            first_point,
            window_bits: c,
            digit_windows: windows,
            final_items: reduction::final_items(&levels),
            ..Default::default()
        }
    }
}

/// Where a call's bases come from.
pub(crate) enum JobBases<'a, C: GpuCurve> {
    /// Bases on the host, uploaded and converted by this call.
    Host(&'a [Affine<C>]),
    /// The first `n` bases of consecutive device parts of a resident set, in order (one
    /// call binds at most the profile's `base_parts`; parts before the last are all of
    /// the first's length).
    Resident(&'a [StoredBases], usize),
}

impl<C: GpuCurve> JobBases<'_, C> {
    pub(in crate::gpu) fn len(&self) -> usize {
        match self {
            JobBases::Host(b) => b.len(),
            JobBases::Resident(_, n) => *n,
        }
    }
}

/// One MSM's GPU work: its points, the SRE merged points appended to them (indices from
/// the points' length on), and how its entries reach the buckets.
pub(crate) struct Job<'a, C: GpuCurve> {
    pub bases: JobBases<'a, C>,
    pub merged: &'a [Affine<C>],
    pub plan: JobPlan<'a, C>,
}

/// How a job's bucket entries are made.
pub(crate) enum JobPlan<'a, C: GpuCurve> {
    /// By the host (`src/digits/`): chunked bucket lists, merged in levels.
    HostLists(&'a BucketPlan),
    /// On the GPU from the scalars as they are: decomposition, bucket sort, balanced
    /// accumulation (`shaders/sort.wgsl`, `scan.wgsl`, `balanced.wgsl`).
    DeviceSort {
        /// The scalars, one per point.
        scalars: &'a [Fr<C>],
        /// Window size c (every scalar bit is covered: `num_windows(c)` windows).
        window_bits: u32,
        /// The shifted copies of the resident part the call reads (`Shift::NONE`: copy 0
        /// alone); they must be the part's.
        shift: Shift,
    },
}

/// The level plans of a job on the GPU bucket sort.
pub(in crate::gpu) struct SortLayout {
    pub(in crate::gpu) scan: Vec<LevelParams>,
    pub(in crate::gpu) carry: Vec<LevelParams>,
    /// Byte offset of the entry count in the scan buffer: the top scan level's total, after
    /// its values.
    pub(in crate::gpu) entry_count_at: u64,
    /// The streamed chunks of the scalars (`sort::scalar_chunks`), a `count_digits` pass
    /// each over its range of points; chunk j is written into staging buffer
    /// `Slot::ScalarStaging(j)`.
    pub(in crate::gpu) scalar_chunks: Vec<LevelParams>,
}

impl SortLayout {
    /// Bytes of the scalars of streamed chunk `j`.
    pub(in crate::gpu) fn chunk_bytes(&self, j: usize) -> u64 {
        self.scalar_chunks[j].count_in as u64 * 32
    }

    /// Bytes each chunk's staging buffer is asked for: the largest chunk's, so that what
    /// a call reserves never falls as n grows (chunks are equal within one scalar).
    pub(in crate::gpu) fn chunk_staging_bytes(&self) -> u64 {
        let largest = self.scalar_chunks.iter().map(|c| c.count_in).max();
        largest.unwrap_or(0) as u64 * 32
    }
}

/// Sizes and parameters of one job ([`GpuContext::layout`]).
pub(in crate::gpu) struct JobLayout {
    pub(in crate::gpu) merge: MergePlan,
    pub(in crate::gpu) sort: Option<SortLayout>,
    /// The bucket reduction's `reduce_level` passes (`reduction.rs`), on either path.
    pub(in crate::gpu) reduce_levels: Vec<LevelParams>,
    pub(in crate::gpu) params: Params,
    /// The first base uploaded by the call (0 for one-shot bases, n for the SRE merged
    /// points after resident ones), if the call uploads any: they live in the workspace's
    /// stored bases, and the convert stage checks (and converts) them there.
    pub(in crate::gpu) convert_from: Option<usize>,
    /// Bytes of each workspace slot the call uses.
    pub(in crate::gpu) sizes: Vec<(Slot, u64)>,
    pub(in crate::gpu) sum_bytes: u64,
}

impl JobLayout {
    /// The layout of a call that reads `copies` copies of the resident parts of `lens`
    /// bases (all but the last of one length), each holding `held` copies: in each part the
    /// copies its length apart, the identity bits after all it holds (whichever copies the
    /// call reads). Every entry names its part (below the profile's `base_parts`) and a
    /// place in it below 2^PART_SHIFT, the sign in bit 31.
    fn on_parts(mut self, lens: &[usize], copies: u32, held: u32, a: CurveProfile) -> Result<Self> {
        let (Some(&first), Some(&last)) = (lens.first(), lens.last()) else {
            return Err(MsmError::Gpu("a resident call on no part".into()));
        };
        if lens.len() > a.base_parts() as usize {
            return Err(MsmError::Gpu(format!(
                "a call over {} parts; this device binds {}",
                lens.len(),
                a.base_parts()
            )));
        }
        if copies as u64 * first.max(last) as u64 > 1 << PART_SHIFT {
            return Err(MsmError::InputTooLarge(format!(
                "{copies} copies of {} bases: places in a part must fit {PART_SHIFT} bits",
                first.max(last)
            )));
        }
        let p = &mut self.params;
        // One part: every point in it (the call may read a prefix).
        p.part_len = match lens.len() {
            1 => first.max(p.num_points as usize).max(1) as u32,
            _ => first as u32,
        };
        p.copy_stride = first as u32;
        p.identity_quads = a.identity_quads(first, held);
        p.last_part = lens.len() as u32 - 1;
        p.last_copy_stride = last as u32;
        p.last_identity_quads = a.identity_quads(last, held);
        Ok(self)
    }

    /// The call's level parameter blocks, uploaded back to back (one `SECTION_ALIGN` each):
    /// the scan levels' and the carry levels' (GPU bucket sort), the reduction's, then the
    /// streamed scalar chunks' (GPU bucket sort). A pass binds block [`JobLayout::scan_at`],
    /// [`JobLayout::carry_at`], [`JobLayout::reduce_at`] or [`JobLayout::chunk_at`].
    pub(in crate::gpu) fn level_blocks(&self) -> Vec<LevelParams> {
        let sort = |f: fn(&SortLayout) -> &[LevelParams]| self.sort.iter().flat_map(f);
        sort(|s| &s.scan)
            .chain(sort(|s| &s.carry))
            .chain(&self.reduce_levels)
            .chain(sort(|s| &s.scalar_chunks))
            .copied()
            .collect()
    }

    /// Where scan level `i`'s block is in [`JobLayout::level_blocks`].
    pub(in crate::gpu) fn scan_at(&self, i: usize) -> usize {
        i
    }

    /// Where carry level `i`'s block is.
    pub(in crate::gpu) fn carry_at(&self, i: usize) -> usize {
        self.sort.as_ref().map_or(0, |s| s.scan.len()) + i
    }

    /// Where reduction level `i`'s block is (the host-list path's only blocks).
    pub(in crate::gpu) fn reduce_at(&self, i: usize) -> usize {
        self.carry_at(self.sort.as_ref().map_or(0, |s| s.carry.len())) + i
    }

    /// Where streamed scalar chunk `j`'s block is (its `count_digits` pass's range).
    pub(in crate::gpu) fn chunk_at(&self, j: usize) -> usize {
        self.reduce_at(self.reduce_levels.len()) + j
    }

    /// The staging buffers the call writes: the staging buffer, and one per streamed chunk
    /// of the scalars (GPU bucket sort).
    pub(in crate::gpu) fn staging_slots(&self) -> Vec<Slot> {
        let chunks = self.sort.as_ref().map_or(0, |s| s.scalar_chunks.len());
        std::iter::once(Slot::Staging)
            .chain((0..chunks).map(|j| Slot::ScalarStaging(j as u8)))
            .collect()
    }

    /// Bytes read back: the window sums, then one word for the entry count of the GPU bucket
    /// sort ([`READ_ENTRIES_AT`]) and the call's status words ([`READ_STATUS_AT`]).
    pub(in crate::gpu) fn read_bytes(&self) -> u64 {
        self.sum_bytes + READ_STATUS_AT + 4 * STATUS_WORDS as u64
    }
}

/// The `reduce_level` passes of a call of window shape `params`, within `MAX_PASSES`.
fn reduce_plan(params: &Params) -> Result<Vec<LevelParams>> {
    let levels = reduction::reduce_levels(params.buckets_per_window);
    if levels.len() > MAX_REDUCE_LEVELS {
        return Err(MsmError::InputTooLarge(format!(
            "{} reduction levels; at most {MAX_REDUCE_LEVELS}",
            levels.len()
        )));
    }
    Ok(levels)
}

/// Where the read-back holds the GPU bucket sort's entry count, after the window sums.
pub(in crate::gpu) const READ_ENTRIES_AT: u64 = 0;

/// Where the read-back holds the call's status words (`gpu::shader::contract`), after the window
/// sums.
pub(in crate::gpu) const READ_STATUS_AT: u64 = 4;

impl GpuContext {
    /// Sizes and parameters of a job, checked against the adapter's limits.
    pub(in crate::gpu) fn layout<C: GpuCurve>(&self, job: &Job<C>) -> Result<JobLayout> {
        match job.plan {
            JobPlan::HostLists(plan) => self.host_layout(job, plan),
            JobPlan::DeviceSort {
                window_bits, shift, ..
            } => {
                debug_assert!(job.merged.is_empty(), "SRE plans on the host");
                let (parts, held) = match job.bases {
                    JobBases::Host(_) => (None, Shift::NONE),
                    JobBases::Resident(r, _) => {
                        (Some(r), r.first().map_or(Shift::NONE, |p| p.shift))
                    }
                };
                let copies = shift.copies();
                // Copies the part does not hold, or made for another c, would be wrong sums;
                // a window wider than MAX_WINDOW_BITS is for copies only.
                let wide = window_bits > crate::config::MAX_WINDOW_BITS;
                if (copies > 1 && (held != shift || shift.window_bits() != Some(window_bits)))
                    || (copies == 1 && wide)
                {
                    return Err(MsmError::Gpu(format!(
                        "a call at c = {window_bits} planned for {shift:?} on a part holding \
                         {held:?}"
                    )));
                }
                let n = job.bases.len();
                let lay = self.sort_layout(n, parts.is_none(), window_bits, copies)?;
                match parts {
                    None => Ok(lay),
                    Some(parts) => {
                        if parts.iter().any(|p| p.shift != held) {
                            return Err(MsmError::Gpu("a call over parts of two shapes".into()));
                        }
                        let lens: Vec<usize> = parts.iter().map(|p| p.len).collect();
                        lay.on_parts(&lens, copies, held.copies(), self.profile)
                    }
                }
            }
        }
    }

    pub(in crate::gpu) fn host_layout<C: GpuCurve>(
        &self,
        job: &Job<C>,
        plan: &BucketPlan,
    ) -> Result<JobLayout> {
        let n = job.bases.len();
        let total_points = n + job.merged.len();
        let merge = MergePlan::new(&plan.bucket_chunks, MERGE_FANIN);
        if merge.levels.len() > MAX_MERGE_LEVELS {
            return Err(MsmError::InputTooLarge(format!(
                "{} merge levels; at most {MAX_MERGE_LEVELS}",
                merge.levels.len()
            )));
        }
        let convert_from = match job.bases {
            JobBases::Host(_) => Some(0),
            JobBases::Resident(..) if !job.merged.is_empty() => Some(n),
            JobBases::Resident(..) => None,
        };
        // The host's entries name a point of one part, below 2^PART_SHIFT.
        if matches!(job.bases, JobBases::Resident(p, _) if p.len() > 1) {
            return Err(MsmError::Gpu("host bucket lists over several parts".into()));
        }
        if total_points as u64 > 1 << PART_SHIFT {
            return Err(MsmError::InputTooLarge(format!(
                "{total_points} points in one call of the host's bucket lists; at most 2^{PART_SHIFT}"
            )));
        }
        let params = Params::new(convert_from.unwrap_or(0) as u32, total_points as u32, plan);
        let tmp_items = merge
            .levels
            .iter()
            .take(merge.levels.len() - 1)
            .map(|l| l.num_groups as u64)
            .chain([params.num_chunks as u64])
            .max()
            .unwrap_or(0);
        let a = self.profile;
        let sum_bytes = a.sums_bytes(params.num_windows as u64);
        let sizes = vec![
            (Slot::Bases, a.stored_base_bytes(total_points)),
            (Slot::ChunkSums, a.sums_bytes(tmp_items)),
            (Slot::MergeTmp, a.sums_bytes(tmp_items)),
            (Slot::Buckets, a.sums_bytes(params.total_buckets as u64)),
            // Two points an item (reduce.wgsl).
            (
                Slot::Partials,
                a.sums_bytes(2 * params.total_segments as u64),
            ),
            (Slot::Sums, sum_bytes),
            (
                Slot::Readback,
                sum_bytes + READ_STATUS_AT + 4 * STATUS_WORDS as u64,
            ),
            (Slot::Status, 4 * STATUS_WORDS as u64),
            // Bound by the reduction, which reads it only on the GPU bucket sort.
            (Slot::Scan, 4),
        ];
        self.check_sizes(
            &[
                ("bases", sizes[0].1),
                ("entries", plan.entries.len() as u64 * 4),
                ("chunk sums", sizes[1].1),
                ("buckets", sizes[3].1),
                ("partials", sizes[4].1),
            ],
            &[
                ("convert", a.convert_threads(total_points as u64)),
                ("accumulate", params.num_chunks as u64),
                ("merge", tmp_items.max(params.total_buckets as u64)),
            ],
        )?;
        Ok(JobLayout {
            merge,
            sort: None,
            reduce_levels: reduce_plan(&params)?,
            params,
            convert_from,
            sizes,
            sum_bytes,
        })
    }

    /// The layout of a job on the GPU bucket sort, every size from n, c and the copies of
    /// its bases alone: n bases (uploaded by the call if `host`), stored with `copies`
    /// shifted copies (`config::Precompute`; 1: none), their W = `num_windows(c)` digit
    /// windows folded onto `bucket_windows(c, copies)` windows of buckets. The copies' stride
    /// is the stored parts' ([`JobLayout::on_parts`]).
    pub(in crate::gpu) fn sort_layout(
        &self,
        n: usize,
        host: bool,
        c: u32,
        copies: u32,
    ) -> Result<JobLayout> {
        let bits = self.profile.curve.scalar_bits;
        let digit_windows = crate::digits::num_windows(c, bits);
        let windows = crate::digits::bucket_windows(c, copies, bits);
        let slices = sort::accumulation_threads(n, digit_windows);
        let mut params = Params {
            num_slices: slices,
            device_sort: 1,
            digit_windows,
            // The uploaded bases', one part (a call on resident parts:
            // `JobLayout::on_parts`).
            identity_quads: self.profile.identity_quads(n, 1),
            part_len: n.max(1) as u32,
            last_copy_stride: n as u32,
            last_identity_quads: self.profile.identity_quads(n, 1),
            ..Params::for_windows(0, n as u32, c, windows)
        };
        let buckets = params.total_buckets as u64;
        let (scan, scan_len) = sort::scan_levels(params.total_buckets + 1);
        // Where the stages after the scan find each level (shaders/offsets.wgsl).
        params.scan_levels = scan.len() as u32;
        let base = |i: usize| scan.get(i).map_or(0, |l| l.in_base);
        (params.scan_base1, params.scan_base2, params.scan_base3) = (base(1), base(2), base(3));
        let carry = sort::carry_levels(slices);
        if scan.len() > sort::MAX_SCAN_LEVELS || carry.len() > sort::MAX_CARRY_LEVELS {
            return Err(MsmError::InputTooLarge(format!(
                "{} scan and {} carry levels",
                scan.len(),
                carry.len()
            )));
        }
        let a = self.profile;
        let sum_bytes = a.sums_bytes(windows as u64);
        let max_entries = n as u64 * digit_windows as u64;
        let items = a.sums_bytes(2 * slices as u64);
        let sizes = vec![
            (Slot::Bases, a.stored_set_bytes(n, 1)),
            (Slot::Scan, scan_len as u64 * 4),
            (Slot::Counters, buckets * 4),
            (Slot::Entries, max_entries * 4),
            (Slot::EntryBuckets, max_entries * 4),
            (Slot::ItemKeysA, slices as u64 * 8),
            (Slot::ItemSumsA, items),
            (Slot::ItemKeysB, slices as u64 * 8),
            (Slot::ItemSumsB, items),
            (Slot::Buckets, a.sums_bytes(buckets)),
            // Two points an item (reduce.wgsl).
            (
                Slot::Partials,
                a.sums_bytes(2 * params.total_segments as u64),
            ),
            (Slot::Sums, sum_bytes),
            (
                Slot::Readback,
                sum_bytes + READ_STATUS_AT + 4 * STATUS_WORDS as u64,
            ),
            (Slot::Status, 4 * STATUS_WORDS as u64),
            // Uploaded in streamed chunks (`SortLayout::scalar_chunks`).
            (Slot::Scalars, n as u64 * 32),
        ];
        let checked: Vec<(&str, u64)> = sizes.iter().map(|&(s, b)| (s.name(), b)).collect();
        self.check_sizes(
            &checked,
            &[
                ("convert", a.convert_threads(n as u64)),
                ("decompose", n as u64),
                ("accumulate", slices as u64),
            ],
        )?;
        let convert_from = host.then_some(0);
        // The top level's total, after its values.
        let entry_count_at = scan.last().map_or(0, |l| l.out_base as u64 * 4);
        Ok(JobLayout {
            merge: MergePlan::default(),
            reduce_levels: reduce_plan(&params)?,
            sort: Some(SortLayout {
                scan,
                carry,
                entry_count_at,
                // Streamed only with timestamps: timing by wall clock submits and awaits one
                // pass at a time, so nothing would overlap.
                scalar_chunks: sort::scalar_chunks(
                    n,
                    self.stream_chunk.filter(|_| self.timestamps),
                ),
            }),
            params,
            convert_from,
            sizes,
            sum_bytes,
        })
    }

    /// Every buffer a job needs, and its bytes (the staging buffer first): what the call
    /// reserves against the memory budget and what [`GpuContext::stage`] makes.
    pub(in crate::gpu) fn needs(
        &self,
        sections: &[(Slot, u64, u64)],
        staging_bytes: u64,
        lay: &JobLayout,
    ) -> Result<Vec<(Slot, u64)>> {
        let mut needs = vec![(Slot::Staging, staging_bytes.max(SECTION_ALIGN))];
        // The streamed chunks of the scalars, a staging buffer each.
        if let Some(sort) = &lay.sort {
            let bytes = sort.chunk_staging_bytes();
            let chunks = lay.staging_slots().into_iter().skip(1);
            needs.extend(chunks.map(|slot| (slot, bytes)));
        }
        needs.extend(
            sections
                .iter()
                // The layout's sizes hold the stored bases.
                .filter(|&&(slot, ..)| slot != Slot::Bases)
                .map(|&(slot, _, bytes)| (slot, bytes)),
        );
        needs.extend(
            lay.sizes
                .iter()
                .filter(|&&(slot, _)| slot != Slot::Bases || lay.convert_from.is_some()),
        );
        needs.push((Slot::Params, SECTION_ALIGN));
        needs.push((Slot::MergeParams, MAX_MERGE_LEVELS as u64 * SECTION_ALIGN));
        if self.timestamps {
            needs.push((Slot::TimestampResolve, 8 * TIMESTAMP_QUERIES as u64));
            needs.push((Slot::TimestampRead, 8 * TIMESTAMP_QUERIES as u64));
        }
        // Every buffer within the adapter's buffer limit, the staging buffer included (the
        // bound ones were checked against the binding limit with the layout).
        let max = self.device.limits().max_buffer_size;
        if let Some(&(slot, bytes)) = needs.iter().find(|&&(_, b)| b > max) {
            return Err(MsmError::InputTooLarge(format!(
                "the call's {} need {bytes} bytes; this adapter's buffers hold at most {max}",
                slot.name()
            )));
        }
        Ok(needs)
    }
}

impl<C: GpuCurve> Clone for JobPlan<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: GpuCurve> Copy for JobPlan<'_, C> {}
