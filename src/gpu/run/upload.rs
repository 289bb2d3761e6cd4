//! A call's uploads: packed on the host into sections of the staging buffer, the scalars
//! into staging buffers of their own (a streamed chunk each, `stream.rs`), then copied into
//! the workspace's buffers on the GPU.

use ark_ec::short_weierstrass::Affine;
use rayon::prelude::*;

use crate::curve::{Fr, GpuCurve};
use crate::digits::{MergePlan, MAX_MERGE_LEVELS};
use crate::error::{MsmError, Result};
use crate::gpu::memory::workspace::Workspace;
use crate::gpu::pipelines::slots::Slot;
use crate::gpu::planning::layout::{
    sort_uploads, staging_sections, Job, JobBases, JobLayout, JobPlan, SortLayout, SECTION_ALIGN,
    TIMESTAMP_QUERIES,
};
use crate::gpu::shader::contract::{LevelParams, MergeParams, Params};
use crate::gpu::shader::field::CurveProfile;
use crate::gpu::shader::packing::{pack_affine, pack_identity_bits};
use crate::gpu::GpuContext;

/// Fewest scalars (2 MiB) one thread of the scalar copy writes: below that a thread's start
/// costs more than its share of the copy saves.
const SCALARS_PER_THREAD: usize = 1 << 16;

/// One part of the mapped scalars section, for a thread of its own.
struct SendPart<'a>(wgpu::WriteOnly<'a, [[u8; 32]]>);

// SAFETY: a `WriteOnly<'a, [T]>` is exclusive, write-only access to its elements, like
// `&'a mut [T]`, which is `Send` for `T: Send`; wgpu implements `Send` for `WriteOnly<'a, T>`
// with `T: Send` only for sized `T` (its impl lacks `?Sized`), not for slices. The parts come
// from `split_at`, so no two overlap, and the mapping outlives them (`'a`, and the scope
// joins every thread before `write_scalars` returns).
unsafe impl Send for SendPart<'_> {}

impl SendPart<'_> {
    /// Writes `src` (exactly as many scalars as the part holds) into the part.
    fn write<C: GpuCurve>(self, src: &[Fr<C>]) {
        debug_assert_eq!(self.0.len(), src.len());
        self.0.write_iter(src.iter().map(|s| {
            let mut b = [0u8; 32];
            for (o, l) in b.chunks_exact_mut(8).zip(C::scalar_internal_words(s)) {
                o.copy_from_slice(&l.to_le_bytes());
            }
            b
        }))
    }
}

/// The cores the scalar copy may use (asked once: it reads the cgroup's limits).
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The upload of one call, laid out in sections of the staging buffer.
pub(in crate::gpu) struct Uploads<'a, C: GpuCurve> {
    pub(in crate::gpu) params: Params,
    pub(in crate::gpu) merge: &'a MergePlan,
    /// The host's bucket lists, or (GPU bucket sort) the scalars.
    pub(in crate::gpu) plan: JobPlan<'a, C>,
    /// The level parameters: the GPU bucket sort's scan and carry levels, then the bucket
    /// reduction's levels (the host-list path's only ones).
    pub(in crate::gpu) levels: Vec<LevelParams>,
    /// Host bases in arkworks' form (one-shot bases and merged points).
    pub(in crate::gpu) bases: Vec<&'a [Affine<C>]>,
    /// The profile, for the stored bases' layout.
    pub(in crate::gpu) profile: CurveProfile,
    /// The streamed chunks of the scalars (the GPU bucket sort's; `SortLayout`), each
    /// written into a staging buffer of its own.
    pub(in crate::gpu) scalar_chunks: &'a [LevelParams],
}

impl<C: GpuCurve> Uploads<'_, C> {
    /// (slot, offset in staging, bytes) of every section; the total size last.
    pub(in crate::gpu) fn layout(&self) -> (Vec<(Slot, u64, u64)>, u64) {
        let points: usize = self.bases.iter().map(|p| p.len()).sum();
        let mut sections = vec![(Slot::Params, std::mem::size_of::<Params>() as u64)];
        match self.plan {
            JobPlan::HostLists(plan) => sections.extend([
                (Slot::MergeParams, MAX_MERGE_LEVELS as u64 * SECTION_ALIGN),
                // The reduction levels' blocks (level 0's at least).
                (Slot::LevelParams, self.levels.len() as u64 * SECTION_ALIGN),
                (Slot::ChunkOffsets, plan.chunk_offsets.len() as u64 * 4),
                (Slot::Entries, plan.entries.len() as u64 * 4),
                (Slot::MergeGroups, self.merge.groups.len() as u64 * 4),
            ]),
            JobPlan::DeviceSort { .. } => sections.extend(sort_uploads(self.levels.len())),
        }
        sections.push((Slot::Bases, self.bases_bytes(points)));
        staging_sections(sections)
    }

    /// Bytes of the uploaded bases: with their identity bits on the GPU bucket sort, whose
    /// `count_digits` reads them.
    fn bases_bytes(&self, points: usize) -> u64 {
        match self.plan {
            JobPlan::DeviceSort { .. } => self.profile.stored_set_bytes(points, 1),
            JobPlan::HostLists(_) => self.profile.stored_base_bytes(points),
        }
    }

    /// Writes streamed chunk `j` of the scalars into its staging buffer
    /// (`Slot::ScalarStaging(j)`, mapped), then unmaps it for the GPU to copy.
    pub(in crate::gpu) fn write_chunk(&self, ws: &Workspace, j: usize) -> Result<()> {
        let slot = Slot::ScalarStaging(j as u8);
        let chunk = &self.scalar_chunks[j];
        let (from, to) = (
            chunk.in_base as usize,
            (chunk.in_base + chunk.count_in) as usize,
        );
        let bytes = (to - from) * 32;
        if bytes > 0 {
            let mut view = ws
                .get(slot)
                .get_mapped_range_mut(..bytes as u64)
                .map_err(|e| MsmError::Gpu(format!("scalar chunk {j}: {e}")))?;
            self.write_scalars(view.slice(0..bytes), from..to);
        }
        ws.unmap_staging(slot);
        Ok(())
    }

    /// Writes scalars `range`, as arkworks keeps them (Montgomery form, little-endian
    /// words), straight into a mapped staging buffer: in equal parts of at least
    /// [`SCALARS_PER_THREAD`], one per core, on scoped threads of their own (not rayon's
    /// pool, whose workers could be busy in other calls waiting for this one's memory).
    fn write_scalars(&self, out: wgpu::WriteOnly<'_, [u8]>, range: std::ops::Range<usize>) {
        let JobPlan::DeviceSort { scalars, .. } = self.plan else {
            unreachable!("scalars are uploaded for the GPU bucket sort only")
        };
        let scalars = &scalars[range];
        let (mut rest, _) = out.into_chunks::<32>();
        let threads = scalars.len().div_ceil(SCALARS_PER_THREAD).clamp(1, cores());
        let per = scalars.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| {
            let mut parts = scalars.chunks(per).map(|src| {
                let (part, tail) = std::mem::take(&mut rest).split_at(src.len());
                rest = tail;
                (src, SendPart(part))
            });
            let first = parts.next();
            for (src, part) in parts.by_ref() {
                scope.spawn(move || part.write::<C>(src));
            }
            if let Some((src, part)) = first {
                part.write::<C>(src);
            }
        });
    }

    /// Writes section `slot` into `out` (its bytes).
    pub(in crate::gpu) fn write(&self, slot: Slot, out: &mut [u8]) {
        match slot {
            Slot::Params => out.copy_from_slice(bytemuck::bytes_of(&self.params)),
            Slot::MergeParams => {
                out.fill(0);
                for (i, lv) in self.merge.levels.iter().enumerate() {
                    let p = MergeParams {
                        num_groups: lv.num_groups,
                        num_inputs: lv.num_inputs,
                        group_base: lv.group_base,
                        ..Default::default()
                    };
                    let at = i * SECTION_ALIGN as usize;
                    out[at..at + 16].copy_from_slice(bytemuck::bytes_of(&p));
                }
            }
            Slot::LevelParams => {
                out.fill(0);
                for (i, lv) in self.levels.iter().enumerate() {
                    let at = i * SECTION_ALIGN as usize;
                    let bytes = bytemuck::bytes_of(lv);
                    out[at..at + bytes.len()].copy_from_slice(bytes);
                }
            }
            Slot::ChunkOffsets | Slot::Entries => {
                let JobPlan::HostLists(plan) = self.plan else {
                    unreachable!("bucket lists are uploaded for the host plan only")
                };
                let words = match slot {
                    Slot::ChunkOffsets => &plan.chunk_offsets,
                    _ => &plan.entries,
                };
                out.copy_from_slice(bytemuck::cast_slice(words))
            }
            Slot::MergeGroups => out.copy_from_slice(bytemuck::cast_slice(&self.merge.groups)),
            Slot::Bases => {
                let words: &mut [u32] = bytemuck::cast_slice_mut(out);
                let pts = self.bases.iter().flat_map(|p| p.iter()).collect::<Vec<_>>();
                let (bases, bits) =
                    words.split_at_mut(self.profile.stored_base_bytes(pts.len()) as usize / 4);
                pack_affine(pts.par_iter().copied(), self.profile, bases);
                if !bits.is_empty() {
                    pack_identity_bits(pts.par_iter().copied(), bits);
                }
            }
            _ => unreachable!("not an upload slot"),
        }
    }
}

impl GpuContext {
    /// Writes a job's uploads into the workspace's staging buffer, and streamed chunk 0 of
    /// its scalars into its own (the later chunks are written by `stream.rs`), and makes
    /// every buffer of `needs` large enough (the allocation half of the pool).
    pub(in crate::gpu) fn stage<C: GpuCurve>(
        &self,
        ws: &mut Workspace,
        uploads: &Uploads<C>,
        sections: &[(Slot, u64, u64)],
        needs: &[(Slot, u64)],
    ) -> Result<()> {
        let dev = &self.device;
        let (staging_slot, staging_bytes) = needs[0];
        debug_assert_eq!(staging_slot, Slot::Staging);
        self.ready_staging(ws, needs);
        {
            let mut view = ws
                .get(Slot::Staging)
                .get_mapped_range_mut(..staging_bytes)
                .map_err(|e| MsmError::Gpu(format!("staging: {e}")))?;
            for &(slot, at, bytes) in sections {
                let mut host = vec![0u8; bytes as usize];
                uploads.write(slot, &mut host);
                view.slice(at as usize..(at + bytes) as usize)
                    .copy_from_slice(&host);
            }
        }
        ws.unmap_staging(Slot::Staging);
        if !uploads.scalar_chunks.is_empty() {
            uploads.write_chunk(ws, 0)?;
        }
        for &(slot, bytes) in needs.iter().filter(|(slot, _)| !slot.is_staging()) {
            ws.ensure(dev, slot, bytes);
        }
        if self.timestamps && ws.queries.is_none() {
            ws.queries = Some(dev.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("stage timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: TIMESTAMP_QUERIES,
            }));
        }
        Ok(())
    }

    /// Makes the staging buffers of `needs` large enough and mapped for writing.
    fn ready_staging(&self, ws: &mut Workspace, needs: &[(Slot, u64)]) {
        let staging = || needs.iter().filter(|(slot, _)| slot.is_staging());
        for &(slot, bytes) in staging() {
            ws.ensure(&self.device, slot, bytes);
        }
        if staging().any(|&(slot, _)| !ws.staging_mapped(slot)) {
            // A pooled workspace's last call finished, so its staging buffers' re-maps only
            // wait for a poll to run their callbacks: poll without waiting for other calls.
            let _ = crate::gpu::device::foreign::poll(&self.device);
        }
        for &(slot, _) in staging() {
            if !ws.staging_mapped(slot) {
                // A re-map's callback runs in whichever thread polls (the device's poller,
                // another call's upload, a submit): it can still be pending in another
                // thread's poll (or have failed) when this poll returns. A new mapped buffer
                // of the same size does not wait.
                ws.fresh_staging(&self.device, slot);
            }
        }
    }

    /// Copies from the staging buffer, and streamed chunk 0 of the scalars from its own
    /// (and, for SRE on resident bases, the resident set's stored bases), into the
    /// workspace's buffers.
    pub(in crate::gpu) fn encode_copies<C: GpuCurve>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        ws: &Workspace,
        sections: &[(Slot, u64, u64)],
        job: &Job<C>,
        lay: &JobLayout,
    ) {
        let n = job.bases.len();
        let staging = ws.get(Slot::Staging);
        for &(slot, at, bytes) in sections {
            let dst_at = match (slot, &job.bases) {
                (Slot::Bases, JobBases::Resident(..)) => self.profile.stored_base_bytes(n),
                _ => 0,
            };
            encoder.copy_buffer_to_buffer(staging, at, ws.get(slot), dst_at, bytes);
        }
        if let Some(sort) = &lay.sort {
            copy_chunk(encoder, ws, sort, 0);
            // The bucket counts (scan level 0) and the scatter's cursors start at zero.
            encoder.clear_buffer(ws.get(Slot::Scan), 0, None);
            encoder.clear_buffer(ws.get(Slot::Counters), 0, None);
        }
        // No base has failed the check yet (a call on resident bases reads back zero).
        encoder.clear_buffer(ws.get(Slot::Status), 0, None);
        // SRE's merged points after resident bases: the host lists' calls read one part.
        if let (JobBases::Resident([r], _), Some(_), true) = (&job.bases, lay.convert_from, n > 0) {
            encoder.copy_buffer_to_buffer(
                &r.buffer,
                0,
                ws.get(Slot::Bases),
                0,
                self.profile.stored_base_bytes(n),
            );
        }
    }
}

/// Copies streamed chunk `j` of the scalars from its staging buffer to its place.
pub(in crate::gpu) fn copy_chunk(
    encoder: &mut wgpu::CommandEncoder,
    ws: &Workspace,
    sort: &SortLayout,
    j: usize,
) {
    let bytes = sort.chunk_bytes(j);
    if bytes > 0 {
        let staging = ws.get(Slot::ScalarStaging(j as u8));
        let at = sort.scalar_chunks[j].in_base as u64 * 32;
        encoder.copy_buffer_to_buffer(staging, 0, ws.get(Slot::Scalars), at, bytes);
    }
}
