//! Compiling the stages: one pipeline per entry point of the stage table, each with its
//! explicit bind-group layout, from its module's source (one shader module per module),
//! several at once; the host-list stages on their first use.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::device::scoped;
use super::shader::field::Arithmetic;
use super::stages::{Access, Module, Phase, Stage, StageId};
use super::GpuContext;
use crate::error::Result;

/// The compiled MSM stages (every stage but the self-test kernel, which compiles its own):
/// those every GPU call uses, compiled with the context, and the host-list stages
/// ([`StageId::built_on_first_use`]), compiled by the first call that plans its buckets on
/// the host.
pub(super) struct Pipelines {
    ready: HashMap<StageId, wgpu::ComputePipeline>,
    on_first_use: OnceLock<HashMap<StageId, wgpu::ComputePipeline>>,
    /// Held while the host-list stages compile, so that they compile once.
    building: Mutex<()>,
    /// How long compiling the host-list stages took (zero until they are).
    first_use_time: OnceLock<Duration>,
}

impl Pipelines {
    /// The pipeline of a stage. A host-list stage must have been built
    /// ([`GpuContext::build_host_list_stages`]) before any pass of it is recorded.
    pub(super) fn get(&self, id: StageId) -> &wgpu::ComputePipeline {
        match self.ready.get(&id) {
            Some(p) => p,
            None => self
                .on_first_use
                .get()
                .and_then(|m| m.get(&id))
                .unwrap_or_else(|| panic!("{id:?} is used before it was built")),
        }
    }
}

/// The MSM stages (every stage but the self-test kernel), in table order.
pub(super) fn msm_stages() -> impl Iterator<Item = StageId> {
    StageId::ALL
        .into_iter()
        .filter(|id| id.def().phase != Phase::SelfTest)
}

impl GpuContext {
    /// Compiles the stages every GPU call uses (the host-list stages wait for their first
    /// use).
    pub(super) fn compile(&self) -> Result<Pipelines> {
        let ids: Vec<StageId> = msm_stages().filter(|id| !id.built_on_first_use()).collect();
        Ok(Pipelines {
            ready: self.compile_stages(&ids)?,
            on_first_use: OnceLock::new(),
            building: Mutex::new(()),
            first_use_time: OnceLock::new(),
        })
    }

    /// Compiles the host-list stages if no call has yet: the first call that plans its
    /// buckets on the host waits for them (about 2 s on lavapipe).
    pub(crate) fn build_host_list_stages(&self) -> Result<()> {
        let p = self.pipelines();
        if p.on_first_use.get().is_some() {
            return Ok(());
        }
        let _one = p.building.lock().unwrap_or_else(|e| e.into_inner());
        if p.on_first_use.get().is_none() {
            let start = Instant::now();
            let ids: Vec<StageId> = msm_stages().filter(|id| id.built_on_first_use()).collect();
            let built = self.compile_stages(&ids)?;
            let _ = p.first_use_time.set(start.elapsed());
            let _ = p.on_first_use.set(built);
            self.save_pipeline_cache();
        }
        Ok(())
    }

    /// Saves the driver's pipeline cache to its file, where there is one.
    pub(super) fn save_pipeline_cache(&self) {
        if let Some(c) = &self.disk_cache {
            c.save();
        }
    }

    /// Whether the host-list stages are compiled, and how long they took.
    pub fn host_list_stages_time(&self) -> Option<Duration> {
        self.pipelines.get()?.first_use_time.get().copied()
    }

    /// Compiles `ids`, each stage's pipeline on its own thread (as many at once as the
    /// machine has cores): drivers compile one pipeline on one thread, and a software
    /// adapter spends seconds on each. The shader modules are made first (a millisecond each:
    /// wgpu only parses and validates them; each pipeline's SPIR-V holds only what its entry
    /// point reaches). Each pipeline is dispatched once as soon as it exists ([`WarmUp`]),
    /// when the known-answer test will dispatch them all anyway.
    fn compile_stages(&self, ids: &[StageId]) -> Result<HashMap<StageId, wgpu::ComputePipeline>> {
        let (device, arithmetic, checks) = (&self.device, self.arithmetic, self.runtime_checks);
        let cache = self.disk_cache.as_ref().map(|c| &c.cache);
        let mut modules: HashMap<Module, wgpu::ShaderModule> = HashMap::new();
        scoped(device, "shader modules", || {
            for id in ids {
                let m = id.def().module;
                modules
                    .entry(m)
                    .or_insert_with(|| shader_module(device, arithmetic, m, checks));
            }
            Ok(())
        })?;
        let warm = self.warm_up.then(|| WarmUp::new(device));
        let next = Mutex::new(ids.iter());
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(ids.len());
        let (to_warm, warm_queue) = std::sync::mpsc::channel::<(StageId, wgpu::ComputePipeline)>();
        let (compiled, warmed) = std::thread::scope(|scope| {
            let worker = |to_warm: std::sync::mpsc::Sender<_>| {
                let mut out = Vec::new();
                loop {
                    let Some(&id) = next.lock().unwrap_or_else(|e| e.into_inner()).next() else {
                        return Ok(out);
                    };
                    let stage = id.def();
                    let module = &modules[&stage.module];
                    let p = scoped(device, "pipeline creation", || {
                        Ok(create_pipeline(
                            device,
                            module,
                            arithmetic,
                            stage,
                            &[],
                            cache,
                        ))
                    })?;
                    // The warm-up thread submits it: a submission may wait for the driver.
                    let _ = to_warm.send((id, p.clone()));
                    out.push((id, p));
                }
            };
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    let tx = to_warm.clone();
                    scope.spawn(move || worker(tx))
                })
                .collect();
            drop(to_warm);
            let warmer = scope.spawn(|| {
                scoped(device, "pipeline warm-up", || {
                    for (id, p) in warm_queue {
                        if let Some(warm) = &warm {
                            warm.dispatch(self, id, &p);
                        }
                    }
                    Ok(())
                })
            });
            let compiled: Vec<Result<Vec<(StageId, wgpu::ComputePipeline)>>> =
                handles.into_iter().map(join).collect();
            (compiled, join(warmer))
        });
        warmed?;
        let mut out = HashMap::new();
        for part in compiled {
            out.extend(part?);
        }
        Ok(out)
    }

    pub(super) fn pipelines(&self) -> &Pipelines {
        self.pipelines.get().expect("compiled by GpuContext::new")
    }
}

/// A scoped thread's result; its panic goes on in the caller.
fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// Zeroed buffers to dispatch a new pipeline over once. A driver that compiles a pipeline
/// at its first dispatch rather than at its creation (lavapipe: LLVM, about 3 s per curve
/// stage on a fresh machine, one stage after another on its queue thread) then compiles
/// each stage while the next ones are still being created, instead of in the known-answer
/// test's first call. Every count in the zeroed parameters is zero, so each thread returns
/// at once or touches only the first words of these buffers.
struct WarmUp {
    /// One buffer per storage binding of a stage (a writable binding may not share a buffer).
    storage: Vec<wgpu::Buffer>,
    uniform: wgpu::Buffer,
}

impl WarmUp {
    const BYTES: u64 = 4096;

    fn new(device: &wgpu::Device) -> Self {
        let buffer = |usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("warm-up"),
                size: Self::BYTES,
                usage,
                mapped_at_creation: false,
            })
        };
        let most = Stage::ALL
            .iter()
            .map(|s| s.bindings.len())
            .max()
            .unwrap_or(0);
        Self {
            storage: (0..most)
                .map(|_| buffer(wgpu::BufferUsages::STORAGE))
                .collect(),
            uniform: buffer(wgpu::BufferUsages::UNIFORM),
        }
    }

    /// Submits one workgroup of `id`'s pipeline over these buffers.
    fn dispatch(&self, gpu: &GpuContext, id: StageId, pipeline: &wgpu::ComputePipeline) {
        let mut storage = self.storage.iter();
        let group = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("warm-up"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &id.def().entries(|b| match b.access {
                Access::Uniform(_) => self.uniform.as_entire_binding(),
                _ => storage
                    .next()
                    .expect("a buffer per binding")
                    .as_entire_binding(),
            }),
        });
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(1, 1, 1);
        }
        gpu.queue.submit([encoder.finish()]);
    }
}

/// Compiles one module. Unchecked unless `checks`: the stages index fixed-size arrays only
/// over constant in-range loops, and storage buffers only at indices the host bounds (thread
/// guards against the counts in `Params`, point indices < n built by the host).
pub(crate) fn shader_module(
    device: &wgpu::Device,
    arithmetic: Arithmetic,
    module: Module,
    checks: bool,
) -> wgpu::ShaderModule {
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some(&format!("{module:?}")),
        source: wgpu::ShaderSource::Wgsl(module.source(arithmetic).into()),
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
    arithmetic: Arithmetic,
    stage: &Stage,
    constants: &[(&str, f64)],
    cache: Option<&wgpu::PipelineCache>,
) -> wgpu::ComputePipeline {
    let group = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(stage.entry),
        entries: &stage.layout_entries(arithmetic),
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
    /// A bind group of one stage's pipeline, each binding's resource from `resource`.
    pub(super) fn bind<'a>(
        &self,
        stage: StageId,
        resource: impl FnMut(&super::stages::Binding) -> wgpu::BindingResource<'a>,
    ) -> wgpu::BindGroup {
        let def = stage.def();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(def.entry),
            layout: &self.pipelines().get(stage).get_bind_group_layout(0),
            entries: &def.entries(resource),
        })
    }
}

/// One compute pass: its phase, pipeline, bind group and dispatch size.
pub(super) struct Pass {
    pub(super) phase: Phase,
    pub(super) pipeline: wgpu::ComputePipeline,
    pub(super) group: wgpu::BindGroup,
    pub(super) dims: (u32, u32),
}

impl Pass {
    pub(super) fn record(&self, pass: &mut wgpu::ComputePass) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.group, &[]);
        pass.dispatch_workgroups(self.dims.0, self.dims.1, 1);
    }
}
