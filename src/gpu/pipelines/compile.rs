//! Compiling the stages: one pipeline per entry point of the stage table, each with its
//! explicit bind-group layout, from its module's source (one shader module per module),
//! several at once (each dispatched once as made: `warm_up.rs`); the host-list stages on
//! their first use, the shift stage on the first load with shifted copies. The stages that
//! read stored bases once per part count: for one part (every call but one over several
//! device parts of a resident set) and, on the first call over k > 1 parts, for k rounded up
//! to a power of two (at most the profile's `base_parts`): a call pays for a switch over the
//! parts it reads, not over 8 (lavapipe runs every case of a switch: a one-part 2^16 call
//! through an 8-case switch took 15-80% longer, docs/perf-log/2026-12-06.md). The host-list
//! stages read one part only. Bind groups from the table, and one pass.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::gpu::device::setup::scoped;
use crate::gpu::pipelines::stages::{Module, Phase, Stage, StageId};
use crate::gpu::shader::field::{CurveProfile, MAX_BASE_PARTS};
use crate::gpu::GpuContext;

/// The compiled MSM stages (every stage but the self-test kernel, which compiles its own):
/// those every GPU call uses, compiled with the context, and the host-list stages
/// ([`Stage::on_first_use`]), compiled by the first call that plans its buckets on
/// the host.
pub(in crate::gpu) struct Pipelines {
    ready: HashMap<StageId, wgpu::ComputePipeline>,
    on_first_use: OnceLock<HashMap<StageId, wgpu::ComputePipeline>>,
    /// Held while the host-list stages or the shift stage compile, so that each compiles
    /// once.
    building: Mutex<()>,
    /// How long compiling the host-list stages took (`None` until they are).
    first_use_time: OnceLock<Duration>,
    /// The shift stage ([`Phase::Load`]), compiled by the first load with shifted copies.
    shift: OnceLock<wgpu::ComputePipeline>,
    /// The stages that read stored bases for k = 2..=MAX_BASE_PARTS parts (index k - 2),
    /// compiled by the first call over that many ([`GpuContext::build_parted_stages`]).
    parted: [OnceLock<HashMap<StageId, wgpu::ComputePipeline>>; MAX_BASE_PARTS as usize - 1],
}

impl Pipelines {
    /// The pipeline of a stage, compiled for `bound` device parts of stored bases
    /// ([`GpuContext::stage_parts`]; always 1 for a stage that reads none). A host-list
    /// stage must have been built ([`GpuContext::build_host_list_stages`]) before any pass
    /// of it is recorded, a parted one ([`GpuContext::build_parted_stages`]) before any pass
    /// over that many parts.
    pub(in crate::gpu) fn get(&self, id: StageId, bound: u32) -> &wgpu::ComputePipeline {
        if bound > 1 {
            return (self.parted[bound as usize - 2]
                .get()
                .and_then(|m| m.get(&id)))
            .unwrap_or_else(|| panic!("{id:?} over {bound} parts is used before it was built"));
        }
        match self.ready.get(&id) {
            Some(p) => p,
            None if id == StageId::Shift => self
                .shift
                .get()
                .expect("the shift stage is used before it was built"),
            None => self
                .on_first_use
                .get()
                .and_then(|m| m.get(&id))
                .unwrap_or_else(|| panic!("{id:?} is used before it was built")),
        }
    }
}

/// What the host-list stages' known-answer test found on a device
/// (`GpuContext::host_list_stages_checked`, run by the engine on their first use).
#[derive(Debug, Clone)]
pub(crate) enum HostListCheck {
    /// They agree with arkworks (the test's time).
    Passed(Duration),
    /// They disagree: what differed. Kept for the device's life.
    Failed(String),
}

/// The MSM stages (every stage but the self-test kernel and the shift stage), in table
/// order.
pub(in crate::gpu) fn msm_stages() -> impl Iterator<Item = StageId> {
    StageId::ALL
        .into_iter()
        .filter(|id| !matches!(id.def().phase, Phase::SelfTest | Phase::Load))
}

impl GpuContext {
    /// Compiles the stages every GPU call uses (the host-list stages wait for their first
    /// use).
    pub(in crate::gpu) fn compile(&self) -> Result<Pipelines> {
        let ids: Vec<StageId> = msm_stages().filter(|id| !id.def().on_first_use).collect();
        Ok(Pipelines {
            ready: self.compile_stages(&ids, self.warm_up, self.stage_profile(1))?,
            on_first_use: OnceLock::new(),
            building: Mutex::new(()),
            first_use_time: OnceLock::new(),
            shift: OnceLock::new(),
            parted: Default::default(),
        })
    }

    /// The part count a call over `parts` device parts runs its stages for (the parts its
    /// pipelines bind, `bound` where they are passed on): `parts` rounded
    /// up to a power of two, at most the profile's `base_parts` (1 for one part).
    pub(in crate::gpu) fn stage_parts(&self, parts: usize) -> u32 {
        (parts.max(1).next_power_of_two() as u32).min(self.profile.base_parts())
    }

    /// The profile of the stages compiled for `bound` device parts.
    pub(in crate::gpu) fn stage_profile(&self, bound: u32) -> CurveProfile {
        self.profile.with_base_parts(bound)
    }

    /// Compiles the stages that read stored bases for `bound` > 1 device parts
    /// ([`GpuContext::stage_parts`]) if no call over that many has yet: the first such call
    /// waits for them (seconds on a software adapter), and one that comes meanwhile waits at
    /// most `timeout`.
    pub(crate) fn build_parted_stages(&self, bound: u32, timeout: Duration) -> Result<()> {
        let p = self.pipelines();
        let cell = &p.parted[bound as usize - 2];
        self.build_once(cell, timeout, "to compile the parted stages", || {
            let ids: Vec<StageId> = msm_stages()
                .filter(|id| id.def().reads_bases() && !id.def().on_first_use)
                .collect();
            self.compile_stages(&ids, true, self.stage_profile(bound))
        })
    }

    /// Compiles the shift stage if no load has yet (a load with shifted copies waits for
    /// it; one that comes meanwhile waits at most `timeout`).
    pub(crate) fn build_shift_stage(&self, timeout: Duration) -> Result<()> {
        let p = self.pipelines();
        self.build_once(&p.shift, timeout, "to compile the shift stage", || {
            let built = self.compile_stages(&[StageId::Shift], true, self.stage_profile(1))?;
            Ok(built[&StageId::Shift].clone())
        })
    }

    /// Compiles the host-list stages if no call has yet: the first call that plans its
    /// buckets on the host waits for them (seconds on a software adapter), and a call that comes
    /// meanwhile waits at most `timeout` for that one.
    pub(crate) fn build_host_list_stages(&self, timeout: Duration) -> Result<()> {
        let p = self.pipelines();
        self.build_once(
            &p.on_first_use,
            timeout,
            "to compile the host-list stages",
            || {
                let start = Instant::now();
                let ids: Vec<StageId> = msm_stages().filter(|id| id.def().on_first_use).collect();
                let built = self.compile_stages(&ids, true, self.stage_profile(1))?;
                let _ = p.first_use_time.set(start.elapsed());
                Ok(built)
            },
        )
    }

    /// Fills `cell` with `build`'s pipelines once, under the `building` lock (waited for at
    /// most `timeout`, `what` naming the wait), and saves the driver's pipeline cache.
    fn build_once<T>(
        &self,
        cell: &OnceLock<T>,
        timeout: Duration,
        what: &str,
        build: impl FnOnce() -> Result<T>,
    ) -> Result<()> {
        if cell.get().is_some() {
            return Ok(());
        }
        let _one = crate::gpu::lock_within(&self.pipelines().building, timeout, what)?;
        if cell.get().is_none() {
            let _ = cell.set(build()?);
            self.save_pipeline_cache();
        }
        Ok(())
    }

    /// Saves the driver's pipeline cache to its file, where there is one.
    pub(in crate::gpu) fn save_pipeline_cache(&self) {
        if let Some(c) = &self.disk_cache {
            c.save();
        }
    }

    /// Whether the host-list stages are compiled, and how long they took.
    pub fn host_list_stages_time(&self) -> Option<Duration> {
        self.pipelines.get()?.first_use_time.get().copied()
    }

    /// Compiles `ids`, on as many threads as the machine has cores: drivers compile one
    /// pipeline on one thread, and a software adapter spends seconds on each. With `warm`,
    /// each pipeline is then dispatched once as soon as it exists, and the dispatches are
    /// waited for (`crate::gpu::pipelines::warm_up`): at creation when the known-answer test will dispatch
    /// them all anyway, and always for the stages compiled on their first use, which the
    /// call that waits for them runs next. For `profile` ([`GpuContext::stage_profile`]).
    fn compile_stages(
        &self,
        ids: &[StageId],
        warm: bool,
        profile: CurveProfile,
    ) -> Result<HashMap<StageId, wgpu::ComputePipeline>> {
        let modules = self.shader_modules(ids, profile)?;
        if !warm {
            return self.compile_parallel(ids, &modules, profile, &|_, _| {});
        }
        crate::gpu::pipelines::warm_up::while_compiling(self, profile, |made| {
            self.compile_parallel(ids, &modules, profile, made)
        })
    }

    /// The shader modules of `ids`' stages, a millisecond each (wgpu parses and validates
    /// them; each pipeline's SPIR-V holds only what its entry point reaches).
    fn shader_modules(
        &self,
        ids: &[StageId],
        profile: CurveProfile,
    ) -> Result<HashMap<Module, wgpu::ShaderModule>> {
        let (device, checks) = (&self.device, self.runtime_checks);
        let mut modules = HashMap::new();
        scoped(device, "shader modules", || {
            for id in ids {
                let m = id.def().module;
                modules
                    .entry(m)
                    .or_insert_with(|| shader_module(device, profile, m, checks));
            }
            Ok(())
        })?;
        Ok(modules)
    }

    /// Compiles `ids` from `modules` on a pool of worker threads (at most one per core),
    /// calling `made` with each pipeline as it is made.
    fn compile_parallel(
        &self,
        ids: &[StageId],
        modules: &HashMap<Module, wgpu::ShaderModule>,
        profile: CurveProfile,
        made: &(dyn Fn(StageId, &wgpu::ComputePipeline) + Sync),
    ) -> Result<HashMap<StageId, wgpu::ComputePipeline>> {
        let cache = self.disk_cache.as_ref().map(|c| &c.cache);
        let next = Mutex::new(ids.iter());
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(ids.len());
        let worker = || -> Result<Vec<(StageId, wgpu::ComputePipeline)>> {
            let mut out = Vec::new();
            loop {
                // Its own statement: the lock is released before the compile.
                let Some(&id) = next.lock().unwrap_or_else(|e| e.into_inner()).next() else {
                    return Ok(out);
                };
                let stage = id.def();
                let p = scoped(&self.device, "pipeline creation", || {
                    Ok(create_pipeline(
                        &self.device,
                        &modules[&stage.module],
                        profile,
                        stage,
                        &[],
                        cache,
                    ))
                })?;
                made(id, &p);
                out.push((id, p));
            }
        };
        let parts: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers).map(|_| scope.spawn(worker)).collect();
            handles
                .into_iter()
                .map(crate::gpu::pipelines::warm_up::join)
                .collect()
        });
        let mut out = HashMap::new();
        for part in parts {
            out.extend(part?);
        }
        Ok(out)
    }

    /// Whether the MSM stages were compiled (every context but one made for the self-test
    /// kernels alone).
    pub(crate) fn has_stages(&self) -> bool {
        self.pipelines.get().is_some()
    }

    pub(in crate::gpu) fn pipelines(&self) -> &Pipelines {
        self.pipelines.get().expect("compiled by GpuContext::new")
    }
}

/// Compiles one module. Unchecked unless `checks`: the stages index fixed-size arrays only
/// over constant in-range loops, and storage buffers only at indices the host bounds (thread
/// guards against the counts in `Params`, point indices < n built by the host).
pub(crate) fn shader_module(
    device: &wgpu::Device,
    profile: CurveProfile,
    module: Module,
    checks: bool,
) -> wgpu::ShaderModule {
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some(&format!("{module:?}")),
        source: wgpu::ShaderSource::Wgsl(module.source(profile).into()),
    };
    if checks {
        device.create_shader_module(desc)
    } else {
        // SAFETY: see the function comment; every index in these shaders is in range.
        unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
    }
}

/// One stage's pipeline, with its explicit layout (the stage table's bindings), values for
/// its pipeline-overridable constants, and the driver's pipeline cache where there is one.
pub(crate) fn create_pipeline(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    profile: CurveProfile,
    stage: &Stage,
    constants: &[(&str, f64)],
    cache: Option<&wgpu::PipelineCache>,
) -> wgpu::ComputePipeline {
    let group = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(stage.entry),
        entries: &stage.layout_entries(profile),
    });
    let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(stage.entry),
        bind_group_layouts: &[Some(&group)],
        immediate_size: 0,
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(stage.entry),
        layout: Some(&layout),
        module,
        entry_point: Some(stage.entry),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants,
            ..Default::default()
        },
        cache,
    })
}

impl GpuContext {
    /// A bind group of one stage's pipeline for `bound` device parts
    /// ([`GpuContext::stage_parts`]; 1 for a stage that reads no stored bases), each
    /// binding's resource from `resource`.
    pub(in crate::gpu) fn bind<'a>(
        &self,
        stage: StageId,
        bound: u32,
        resource: impl FnMut(&crate::gpu::pipelines::stages::Binding) -> wgpu::BindingResource<'a>,
    ) -> wgpu::BindGroup {
        let def = stage.def();
        let profile = self.stage_profile(bound);
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(def.entry),
            layout: &self.pipelines().get(stage, bound).get_bind_group_layout(0),
            entries: &def.entries(profile, resource),
        })
    }
}

/// One compute pass: its phase, pipeline, bind group and dispatch size.
pub(in crate::gpu) struct Pass {
    /// The stage it dispatches.
    pub(in crate::gpu) stage: StageId,
    pub(in crate::gpu) phase: Phase,
    pub(in crate::gpu) pipeline: wgpu::ComputePipeline,
    pub(in crate::gpu) group: wgpu::BindGroup,
    pub(in crate::gpu) dims: (u32, u32),
}

impl Pass {
    pub(in crate::gpu) fn record(&self, pass: &mut wgpu::ComputePass) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.group, &[]);
        pass.dispatch_workgroups(self.dims.0, self.dims.1, 1);
    }
}
