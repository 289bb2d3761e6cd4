//! Compiling the stages: one pipeline per entry point of the stage table, each with its
//! explicit bind-group layout, from its module's source (one shader module per module).

use std::collections::HashMap;

use super::device::scoped;
use super::shader::field::Arithmetic;
use super::stages::{Module, Phase, Stage, StageId};
use super::GpuContext;
use crate::error::Result;

/// The compiled MSM stages (every stage but the self-test kernel, which compiles its own).
pub(super) struct Pipelines(HashMap<StageId, wgpu::ComputePipeline>);

impl Pipelines {
    /// The pipeline of a stage.
    pub(super) fn get(&self, id: StageId) -> &wgpu::ComputePipeline {
        self.0.get(&id).expect("every MSM stage is compiled")
    }
}

/// The MSM stages (every stage but the self-test kernel), in table order.
pub(super) fn msm_stages() -> impl Iterator<Item = (StageId, &'static Stage)> {
    StageId::ALL
        .into_iter()
        .map(|id| (id, id.def()))
        .filter(|(_, s)| s.phase != Phase::SelfTest)
}

impl GpuContext {
    /// Compiles every MSM stage's pipeline.
    pub(super) fn compile(&self) -> Result<Pipelines> {
        let (device, arithmetic, checks) = (&self.device, self.arithmetic, self.runtime_checks);
        scoped(device, "pipeline creation", || {
            let mut modules: HashMap<Module, wgpu::ShaderModule> = HashMap::new();
            let mut out = HashMap::new();
            for (id, stage) in msm_stages() {
                let module = modules
                    .entry(stage.module)
                    .or_insert_with(|| shader_module(device, arithmetic, stage.module, checks));
                out.insert(id, create_pipeline(device, module, arithmetic, stage, &[]));
            }
            Ok(Pipelines(out))
        })
    }

    pub(super) fn pipelines(&self) -> &Pipelines {
        self.pipelines.get().expect("compiled by GpuContext::new")
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

/// One stage's pipeline, with its explicit layout (the stage table's bindings) and values
/// for its pipeline-overridable constants.
pub(crate) fn create_pipeline(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    arithmetic: Arithmetic,
    stage: &Stage,
    constants: &[(&str, f64)],
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
        cache: None,
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
