//! What fits: the adapter's limits against a call's buffers and dispatches, the most points
//! one call can take, and a call's bytes against the memory budget.

use crate::curve::GpuCurve;
use crate::digits::MAX_MERGE_LEVELS;
use crate::error::{MsmError, Result};
use crate::gpu::pipelines::slots::Slot;
use crate::gpu::planning::layout::SECTION_ALIGN;
use crate::gpu::planning::layout::{sort_uploads, staging_sections};
use crate::gpu::shader::contract::Params;
use crate::gpu::shader::field::{CurveProfile, MAX_BASE_PARTS, WORKGROUP_SIZE};
use crate::gpu::{planning::sort, GpuContext};

/// The most workgroup memory one MSM stage uses: the carry tree's (balanced.wgsl:
/// WORKGROUP_SIZE keys and WORKGROUP_SIZE / 2 points, a tree step handing up an item's head
/// and then its tail in the same place); reduce_windows' (WORKGROUP_SIZE / 2 points), the
/// scan's (WORKGROUP_SIZE words) and the shift stage's (WORKGROUP_SIZE packed coordinates,
/// at most a third of a point each) are smaller. The test of `stages.rs` measures every entry
/// point's arrays with naga and checks this figure against the largest. The G2s over
/// 381-bit fields (72-word points) take 9 472 bytes, within WebGPU's default 16 KiB; an
/// adapter with less refuses an engine with [`MsmError::InvalidConfig`].
pub(crate) fn workgroup_bytes(profile: CurveProfile) -> u32 {
    4 * (WORKGROUP_SIZE + WORKGROUP_SIZE / 2 * profile.point_words() as u32)
}

/// Parts of a resident set one call binds on a device of `limits` (`profile`'s
/// `base_parts`): the most, up to `MAX_BASE_PARTS`, with which every MSM stage's storage
/// buffers and binding numbers stay within them (1 where none fits: the engine's own check,
/// [`GpuContext::check_stage_limits`], then refuses the device).
pub(crate) fn base_parts_within(limits: &wgpu::Limits, profile: CurveProfile) -> u32 {
    let fits = |k: u32| {
        let p = profile.with_base_parts(k);
        crate::gpu::pipelines::compile::msm_stages().all(|id| {
            let stage = id.def();
            let (storage, _) = stage.buffer_counts(p);
            storage <= limits.max_storage_buffers_per_shader_stage
                && stage.highest_binding(p) < limits.max_bindings_per_bind_group
        })
    };
    (1..=MAX_BASE_PARTS).rev().find(|&k| fits(k)).unwrap_or(1)
}

impl GpuContext {
    /// The window size of an n-point call on scalars of at most `bits` bits: `fixed`
    /// (`MsmConfig::window_bits`), else the cost model's for this profile's addition costs.
    pub(crate) fn call_window(&self, fixed: Option<u32>, n: usize, bits: u32) -> u32 {
        crate::digits::choose_window(fixed, n, bits, self.profile().add_costs())
    }

    /// [`MsmError::InvalidConfig`] unless every MSM stage fits the device's per-stage
    /// limits: storage and uniform buffers per stage, invocations per workgroup, and the
    /// workgroup memory of the carry's tree (`shaders/balanced.wgsl`, a key per invocation
    /// and a point per two), which bounds the reduction's (`shaders/reduce.wgsl`, a point
    /// per two invocations) and the scan's (a word per invocation).
    pub(in crate::gpu) fn check_stage_limits(&self) -> Result<()> {
        let limits = self.device.limits();
        let refuse = |what: String| {
            Err(MsmError::InvalidConfig(format!(
                "{what} on {} (MsmConfig::limits, or the adapter's)",
                self.info.name
            )))
        };
        if limits.max_bind_groups < 1 {
            return refuse("every stage needs one bind group".into());
        }
        for stage in crate::gpu::pipelines::compile::msm_stages().map(|id| id.def()) {
            // Binding numbers are the module's (stages of a module share them), so the
            // highest number a stage uses, not how many it binds, must be within the limit.
            let highest = stage.highest_binding(self.profile);
            if highest >= limits.max_bindings_per_bind_group {
                let max = limits.max_bindings_per_bind_group;
                return refuse(format!(
                    "{} uses binding number {highest}, at most {}",
                    stage.entry,
                    max.saturating_sub(1)
                ));
            }
            let (storage, uniform) = stage.buffer_counts(self.profile);
            if storage > limits.max_storage_buffers_per_shader_stage {
                let max = limits.max_storage_buffers_per_shader_stage;
                return refuse(format!(
                    "{} binds {storage} storage buffers, at most {max}",
                    stage.entry
                ));
            }
            if uniform > limits.max_uniform_buffers_per_shader_stage {
                let max = limits.max_uniform_buffers_per_shader_stage;
                return refuse(format!(
                    "{} binds {uniform} uniform buffers, at most {max}",
                    stage.entry
                ));
            }
        }
        // What every call binds and dispatches whatever its size: level parameter blocks
        // at SECTION_ALIGN offsets inside uniform buffers of a few blocks, one workgroup per
        // window (up to 256 windows at c = 1, for BLS12-381's 255-bit scalars).
        if limits.min_uniform_buffer_offset_alignment as u64 > SECTION_ALIGN {
            return refuse(format!(
                "parameter blocks sit at {SECTION_ALIGN}-byte offsets"
            ));
        }
        let uniform = (MAX_MERGE_LEVELS as u64 * SECTION_ALIGN).max(SECTION_ALIGN);
        if limits.max_uniform_buffer_binding_size < uniform {
            return refuse(format!("uniform bindings of {uniform} bytes do not fit"));
        }
        let windows = crate::digits::num_windows(
            crate::config::MIN_WINDOW_BITS,
            self.profile.curve.scalar_bits,
        );
        if limits.max_compute_workgroups_per_dimension < windows {
            return refuse(format!(
                "a call dispatches up to {windows} workgroups in one row"
            ));
        }
        if WORKGROUP_SIZE > limits.max_compute_invocations_per_workgroup
            || WORKGROUP_SIZE > limits.max_compute_workgroup_size_x
        {
            return refuse(format!(
                "workgroups of {WORKGROUP_SIZE} invocations do not fit"
            ));
        }
        let shared = workgroup_bytes(self.profile);
        if shared > limits.max_compute_workgroup_storage_size {
            let max = limits.max_compute_workgroup_storage_size;
            return refuse(format!(
                "the carry's and the reduction's workgroups need {shared} bytes, at most {max}"
            ));
        }
        Ok(())
    }

    pub(in crate::gpu) fn check_sizes(
        &self,
        sizes: &[(&str, u64)],
        threads: &[(&str, u64)],
    ) -> Result<()> {
        let limits = self.device.limits();
        for (name, bytes) in sizes {
            if *bytes > limits.max_storage_buffer_binding_size || *bytes > limits.max_buffer_size {
                return Err(MsmError::InputTooLarge(format!(
                    "{name} needs {bytes} bytes; this adapter binds at most {} (buffer {})",
                    limits.max_storage_buffer_binding_size, limits.max_buffer_size
                )));
            }
        }
        let max = limits.max_compute_workgroups_per_dimension as u64;
        for (name, t) in threads {
            let g = t.div_ceil(WORKGROUP_SIZE as u64);
            if g > max * max {
                return Err(MsmError::InputTooLarge(format!(
                    "{name} needs {g} workgroups; at most {max} x {max}"
                )));
            }
        }
        Ok(())
    }

    /// Most points one call can take at window size c: every buffer that grows with n
    /// (stored bases, scalars, entries and their buckets, carry items) within the adapter's
    /// storage-binding and buffer limits.
    pub(crate) fn max_call_points(&self, c: u32) -> usize {
        let limits = self.device.limits();
        let bind = self.max_binding_bytes();
        let a = self.profile;
        let w = crate::digits::num_windows(c, a.curve.scalar_bits) as u64;
        let per_point = [
            // A base and its identity bit.
            a.stored_bytes_per_base(1),
            32,
            4 * w,
            // Carry items: two sums per accumulation thread, a thread per ACCUMULATE_SLICE.
            (2 * a.point_words() as u64 * 4 * w).div_ceil(sort::ACCUMULATE_SLICE as u64),
        ]
        .into_iter()
        .max()
        .expect("non-empty");
        // A one-shot call stages its bases and its scalars (GPU bucket sort; the scalars in
        // staging buffers of their own), or its bases and at most w bucket entries a point,
        // with their chunk offsets and merge groups (at most one word per entry; the host's
        // bucket lists): bounded as if in one buffer.
        let staged_per_point = a.stored_bytes_per_base(1) + 32.max(8 * w);
        // An entry names a point of one part below 2^PART_SHIFT (`layout.rs`).
        ((bind / per_point).min(limits.max_buffer_size / staged_per_point) as usize)
            .clamp(1, 1 << crate::gpu::shader::field::PART_SHIFT)
    }

    /// Device bytes an n-point call on the GPU bucket sort holds in a fresh workspace at
    /// window size c (points uploaded by the call if `host`, else read from a part stored
    /// with `copies` shifted copies): what it reserves against the memory budget.
    pub(crate) fn call_bytes(&self, n: usize, host: bool, c: u32, copies: u32) -> Result<u64> {
        let lay = self.sort_layout(n, host, c, copies)?;
        let levels = lay.level_blocks().len();
        let mut sections = vec![(Slot::Params, std::mem::size_of::<Params>() as u64)];
        sections.extend(sort_uploads(levels));
        if host {
            sections.push((Slot::Bases, self.profile.stored_set_bytes(n, 1)));
        }
        let (sections, staging) = staging_sections(sections);
        let needs = self.needs(&sections, staging, &lay)?;
        Ok(self.pool.empty_workspace().footprint_with(&needs))
    }

    /// Whether an n-point call at window size c fits the adapter's limits and the whole
    /// memory budget, whatever else is held now: whether the configuration can run it at all.
    pub(crate) fn fits_budget(&self, n: usize, host: bool, c: u32) -> bool {
        let budget = self.pool.usage().budget;
        n <= self.max_call_points(c) && self.call_bytes(n, host, c, 1).is_ok_and(|b| b <= budget)
    }

    /// Whether an n-point call on the GPU bucket sort at window size c fits the adapter's
    /// limits, and the memory budget beside the resident bases and `reserve` more bytes
    /// (waiting, if it must, for other calls); `copies`: as [`GpuContext::call_bytes`].
    pub(crate) fn fits_call(&self, n: usize, host: bool, shape: (u32, u32), reserve: u64) -> bool {
        self.call_fit(n, host, shape, reserve).is_ok()
    }

    /// [`GpuContext::fits_call`], and why not: the adapter's limit it meets (named), or the
    /// memory budget (with what holds it).
    pub(crate) fn call_fit(
        &self,
        n: usize,
        host: bool,
        (c, copies): (u32, u32),
        reserve: u64,
    ) -> std::result::Result<(), String> {
        let max = self.max_call_points(c);
        if n > max {
            return Err(format!(
                "one call holds at most {max} points at this window (each of its buffers \
                 within the adapter's storage-binding limit of {} bytes)",
                self.max_binding_bytes()
            ));
        }
        let bytes = match self.call_bytes(n, host, c, copies) {
            Ok(b) => b,
            Err(MsmError::InputTooLarge(why)) => {
                return Err(format!("beyond the adapter's limits: {why}"))
            }
            Err(e) => return Err(format!("beyond the adapter's limits: {e}")),
        };
        let u = self.pool.usage();
        let held = u.resident.saturating_add(reserve);
        let room = u.budget.saturating_sub(held);
        match bytes <= room {
            true => Ok(()),
            false => Err(format!(
                "its buffers take {bytes} bytes, more than the {room} the memory budget \
                 leaves ({} bytes, {} held by resident bases, {reserve} by the set it is \
                 sized beside; MsmConfig::memory_budget)",
                u.budget, u.resident
            )),
        }
    }

    /// Whether `job` fits the adapter's limits and the memory budget beside the resident
    /// bases: what slicing made sure of for the bucket sort, which a call on the host's
    /// lists with SRE's merged points (more bases than points) may exceed.
    pub(crate) fn job_fits<C: GpuCurve>(&self, job: &crate::gpu::Job<C>) -> bool {
        let Ok(lay) = self.layout(job) else {
            return false;
        };
        let (sections, staging) = self.uploads(job, &lay).layout();
        let Ok(needs) = self.needs(&sections, staging, &lay) else {
            return false;
        };
        let u = self.pool.usage();
        let room = u.budget.saturating_sub(u.resident);
        self.pool.empty_workspace().footprint_with(&needs) <= room
    }

    /// The most bytes one storage binding holds on this adapter (and one buffer).
    pub(crate) fn max_binding_bytes(&self) -> u64 {
        let limits = self.device.limits();
        limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size)
    }

    /// Bytes `n` bases take on the device, stored with `copies` shifted copies (1: none)
    /// and their identity bits: what a resident part's buffer holds and the budget is
    /// charged.
    pub(crate) fn resident_bytes(&self, n: usize, copies: u32) -> u64 {
        self.profile.stored_set_bytes(n, copies).max(SECTION_ALIGN)
    }

    pub(in crate::gpu) fn dispatch_dims(&self, threads: u64) -> (u32, u32) {
        let groups = threads.div_ceil(WORKGROUP_SIZE as u64).max(1);
        let max = self.device.limits().max_compute_workgroups_per_dimension as u64;
        if groups <= max {
            (groups as u32, 1)
        } else {
            (max as u32, groups.div_ceil(max) as u32)
        }
    }
}
