//! Building a call's passes: for each stage it runs, the pipeline, the bind group (from the
//! stage table, cached in the workspace) and the dispatch size.

use crate::curve::GpuCurve;
use crate::gpu::memory::resident::StoredBases;
use crate::gpu::memory::workspace::{BasesIds, BindGroupKey, Workspace};
use crate::gpu::pipelines::compile::Pass;
use crate::gpu::pipelines::slots::Slot;
use crate::gpu::pipelines::stages::{Binding, Source, StageId};
use crate::gpu::planning::layout::{Job, JobBases, JobLayout, SortLayout, SECTION_ALIGN};
use crate::gpu::planning::sort::{reduction_pass_list, sort_pass_list, SortPass};
use crate::gpu::shader::contract::{LevelParams, MergeParams};
use crate::gpu::shader::field::{MAX_BASE_PARTS, WORKGROUP_SIZE};
use crate::gpu::{GpuContext, WORKSPACE_BASES_ID};

/// What one pass binds, by the stage table's [`Source`]s: the workspace's slots, the call's
/// bases, its level's parameter block, and the slots it gives by name.
#[derive(Clone, Copy)]
struct Binds<'a> {
    /// The resident parts the call reads in place, in order, if it reads a set.
    resident: Option<&'a [StoredBases]>,
    /// The pass's level (scan, carry or merge), for [`Source::Level`].
    level: usize,
    /// The slot of each [`Source::Given`] binding, by name.
    given: &'a [(&'static str, Slot)],
}

impl<'a> Binds<'a> {
    const NONE: Binds<'static> = Binds {
        resident: None,
        level: 0,
        given: &[],
    };

    /// Part k of the stored bases the pass reads: the call's part k, its first where it
    /// reads fewer, or the workspace's bases.
    fn part<'w>(&self, ws: &'w Workspace, k: usize) -> wgpu::BindingResource<'w>
    where
        'a: 'w,
    {
        match self.resident {
            Some(parts) => parts.get(k).unwrap_or(&parts[0]).buffer.as_entire_binding(),
            None => ws.bound(Slot::Bases),
        }
    }

    /// How many device parts of a resident set the pass reads (1 for the workspace's bases).
    fn parts(&self) -> usize {
        self.resident.map_or(1, |parts| parts.len())
    }

    /// The ids of the buffers [`Binds::part`] binds, part by part.
    fn bases_ids(&self, reads_bases: bool) -> BasesIds {
        let mut ids = [WORKSPACE_BASES_ID; MAX_BASE_PARTS as usize];
        if let (Some(parts), true) = (self.resident, reads_bases) {
            for (k, id) in ids.iter_mut().enumerate() {
                *id = parts.get(k).unwrap_or(&parts[0]).id;
            }
        }
        ids
    }

    fn resource<'w>(&self, ws: &'w Workspace, bind: &Binding) -> wgpu::BindingResource<'w>
    where
        'a: 'w,
    {
        match bind.source {
            Source::Slot(slot) => ws.bound(slot),
            Source::Bases => self.part(ws, 0),
            Source::Part(k) => self.part(ws, k as usize),
            Source::Level(slot) => {
                let block = match slot {
                    Slot::MergeParams => std::mem::size_of::<MergeParams>(),
                    _ => std::mem::size_of::<LevelParams>(),
                };
                wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: ws.get(slot),
                    offset: self.level as u64 * SECTION_ALIGN,
                    size: wgpu::BufferSize::new(block as u64),
                })
            }
            Source::Given => {
                let (_, slot) = self
                    .given
                    .iter()
                    .find(|(name, _)| *name == bind.name)
                    .unwrap_or_else(|| panic!("the pass gives no {}", bind.name));
                ws.bound(*slot)
            }
        }
    }
}

impl GpuContext {
    /// One pass of `stage` over `dims` workgroups, its bind group cached in the workspace
    /// under what it binds besides the workspace's buffers (the key is derived, never
    /// written by hand).
    fn pass(&self, ws: &mut Workspace, stage: StageId, binds: Binds, dims: (u32, u32)) -> Pass {
        let def = stage.def();
        let bases_ids = binds.bases_ids(def.reads_bases());
        // A stage that reads no stored bases has one pipeline, for any call.
        let bound = match def.reads_bases() {
            true => self.stage_parts(binds.parts()),
            false => 1,
        };
        let mut given = [None; 4];
        // Every given slot is part of the key: a pass may give no more than it holds.
        assert!(
            binds.given.len() <= given.len(),
            "{stage:?} gives too many slots"
        );
        for (g, (_, slot)) in given.iter_mut().zip(binds.given) {
            *g = Some(*slot);
        }
        let key = BindGroupKey {
            context: self.id,
            stage,
            bound_parts: bound,
            level: binds.level,
            given,
        };
        let group = ws.group(key, bases_ids, |ws| {
            self.bind(stage, bound, |b| binds.resource(ws, b))
        });
        Pass {
            stage,
            phase: def.phase,
            pipeline: self.pipelines().get(stage, bound).clone(),
            group,
            dims,
        }
    }

    /// The GPU bucket sort's passes, as `sort::sort_pass_list` orders them: the counts (a
    /// streamed chunk of the scalars each), prefix sum, scatter, balanced accumulation and
    /// the carry levels, which leave every nonempty bucket's sum in place (the reduction
    /// reads the empty ones as the identity), then the reduction. Each binds its level's
    /// parameter block (`JobLayout::scan_at` and the like).
    fn sort_passes(
        &self,
        ws: &mut Workspace,
        lay: &JobLayout,
        sort: &SortLayout,
        on_bases: Binds,
        out: &mut Vec<Pass>,
    ) {
        let params = &lay.params;
        const EVEN: &[(&str, Slot)] = &[
            ("in_keys", Slot::ItemKeysA),
            ("in_sums", Slot::ItemSumsA),
            ("out_keys", Slot::ItemKeysB),
            ("out_sums", Slot::ItemSumsB),
        ];
        const ODD: &[(&str, Slot)] = &[
            ("in_keys", Slot::ItemKeysB),
            ("in_sums", Slot::ItemSumsB),
            ("out_keys", Slot::ItemKeysA),
            ("out_sums", Slot::ItemSumsA),
        ];
        let threads = |t: u64| self.dispatch_dims(t);
        let n = params.num_points as u64;
        let at = |level| Binds {
            level,
            ..Binds::NONE
        };
        let (chunks, reduce) = (sort.scalar_chunks.len(), lay.reduce_levels.len());
        for step in sort_pass_list(chunks, sort.scan.len(), sort.carry.len(), reduce) {
            let (binds, dims) = match step {
                SortPass::Count(j) => (
                    Binds {
                        level: lay.chunk_at(j),
                        ..on_bases
                    },
                    threads(sort.scalar_chunks[j].count_in as u64),
                ),
                SortPass::Scatter => (on_bases, threads(n)),
                SortPass::ScanBlocks(i) => (
                    at(lay.scan_at(i)),
                    threads(sort.scan[i].count_out as u64 * WORKGROUP_SIZE as u64),
                ),
                SortPass::Accumulate => (on_bases, threads(params.num_slices as u64)),
                SortPass::Carry(i) => (
                    Binds {
                        level: lay.carry_at(i),
                        given: if i % 2 == 0 { EVEN } else { ODD },
                        ..Binds::NONE
                    },
                    // A workgroup an output item.
                    threads(sort.carry[i].count_out as u64 * WORKGROUP_SIZE as u64),
                ),
                SortPass::ReduceLevel(_) | SortPass::ReduceWindows => {
                    self.reduction_binds(lay, step)
                }
            };
            out.push(self.pass(ws, step.stage(), binds, dims));
        }
    }

    /// What a pass of the bucket reduction, which both paths end with, binds (its level's
    /// parameter block, `JobLayout::reduce_at`) and its dispatch size.
    fn reduction_binds(&self, lay: &JobLayout, step: SortPass) -> (Binds<'static>, (u32, u32)) {
        let params = &lay.params;
        match step {
            SortPass::ReduceLevel(i) => (
                Binds {
                    level: lay.reduce_at(i),
                    ..Binds::NONE
                },
                self.dispatch_dims(
                    params.num_windows as u64 * lay.reduce_levels[i].count_out as u64,
                ),
            ),
            SortPass::ReduceWindows => (Binds::NONE, (params.num_windows, 1)),
            other => unreachable!("{other:?} is not a reduction pass"),
        }
    }

    /// The host plan's passes: accumulation of the chunks, then the merge levels, the last
    /// of which writes the buckets.
    fn host_passes(
        &self,
        ws: &mut Workspace,
        lay: &JobLayout,
        on_bases: Binds,
        out: &mut Vec<Pass>,
    ) {
        let dims = self.dispatch_dims(lay.params.num_chunks as u64);
        out.push(self.pass(ws, StageId::Accumulate, on_bases, dims));
        let levels = lay.merge.levels.len();
        for (i, lv) in lay.merge.levels.iter().enumerate() {
            let last = i + 1 == levels;
            let (src, dst) = match (i % 2, last) {
                (0, true) => (Slot::ChunkSums, Slot::Buckets),
                (_, true) => (Slot::MergeTmp, Slot::Buckets),
                (0, false) => (Slot::ChunkSums, Slot::MergeTmp),
                (_, false) => (Slot::MergeTmp, Slot::ChunkSums),
            };
            let given = [("merge_in", src), ("merge_out", dst)];
            let binds = Binds {
                level: i,
                given: &given,
                ..Binds::NONE
            };
            let dims = self.dispatch_dims(lv.num_groups as u64);
            out.push(self.pass(ws, StageId::Merge, binds, dims));
        }
    }

    /// The passes of a job, with their bind groups (cached in the workspace).
    pub(in crate::gpu) fn passes<C: GpuCurve>(
        &self,
        ws: &mut Workspace,
        job: &Job<C>,
        lay: &JobLayout,
    ) -> Vec<Pass> {
        let params = &lay.params;
        let bases = match (&job.bases, lay.convert_from) {
            (JobBases::Resident(parts, _), None) => Binds {
                resident: Some(parts),
                ..Binds::NONE
            },
            _ => Binds::NONE,
        };
        let mut out = Vec::new();
        // Every call that uploads bases runs the convert stage: it checks them.
        if lay.convert_from.is_some() {
            let threads = self
                .profile
                .arithmetic
                .convert_threads((params.num_points - params.first_point) as u64);
            let dims = self.dispatch_dims(threads);
            out.push(self.pass(ws, StageId::Convert, Binds::NONE, dims));
        }
        match &lay.sort {
            Some(sort) => self.sort_passes(ws, lay, sort, bases, &mut out),
            None => {
                self.host_passes(ws, lay, bases, &mut out);
                for step in reduction_pass_list(lay.reduce_levels.len()) {
                    let (binds, dims) = self.reduction_binds(lay, step);
                    out.push(self.pass(ws, step.stage(), binds, dims));
                }
            }
        }
        out
    }
}
