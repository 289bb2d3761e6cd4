//! The warm-up: each new pipeline dispatched once, as soon as it exists, over zeroed
//! buffers, and those dispatches waited for before the pipelines are handed out. A driver
//! that compiles a pipeline at its first dispatch rather than at its creation (lavapipe:
//! LLVM, seconds per stage that adds points on a fresh machine, one stage after another
//! on its queue thread) then compiles each stage while the next ones are still being
//! created, and within the compile's deadline ([`FIRST_DISPATCH_TIMEOUT`]), not inside the
//! first call's wait, whose deadline (`MsmConfig::gpu_timeout`) is for a hung GPU.
//!
//! Every count in the zeroed parameters is zero, so each thread of every stage returns at
//! once or touches only workgroup memory or the first words of these buffers: a rule every
//! stage of `stages.rs` keeps (it says so there).

use std::sync::mpsc;

use crate::config::FIRST_DISPATCH_TIMEOUT;
use crate::error::{MsmError, Result};
use crate::gpu::device::setup::scoped;
use crate::gpu::pipelines::stages::{Access, Stage, StageId};
use crate::gpu::shader::field::CurveProfile;
use crate::gpu::GpuContext;

/// A scoped thread's result; its panic goes on in the caller.
pub(in crate::gpu) fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// Runs `compile` with a thread beside it that dispatches every pipeline `compile` hands to
/// its callback (a submission may wait for the driver, so the compiling threads do not),
/// then waits for those dispatches. The pipelines are `profile`'s (the context's, with the
/// part count they were compiled for).
pub(in crate::gpu) fn while_compiling<T>(
    gpu: &GpuContext,
    profile: CurveProfile,
    compile: impl FnOnce(&(dyn Fn(StageId, &wgpu::ComputePipeline) + Sync)) -> Result<T>,
) -> Result<T> {
    let warm = WarmUp::new(gpu);
    let (tx, rx) = mpsc::channel::<(StageId, wgpu::ComputePipeline)>();
    std::thread::scope(|scope| {
        let warmer = scope.spawn(|| {
            scoped(&gpu.device, "pipeline warm-up", || {
                let mut any = false;
                for (id, p) in rx {
                    warm.dispatch(gpu, profile, id, &p);
                    any = true;
                }
                Ok(any)
            })
        });
        let out = compile(&|id, p| {
            let _ = tx.send((id, p.clone()));
        });
        drop(tx);
        let dispatched = join(warmer)?;
        let out = out?;
        if dispatched {
            compiled_at_first_dispatch(gpu)?;
        }
        Ok(out)
    })
}

/// Waits for the warm-up's dispatches, in which a driver that compiles at first dispatch
/// compiles the new pipelines (and for what the queue holds with them: on a device shared
/// with other engines, their calls): at most [`FIRST_DISPATCH_TIMEOUT`] without progress,
/// past which the device is taken to be hung and dropped.
fn compiled_at_first_dispatch(gpu: &GpuContext) -> Result<()> {
    gpu.wait(FIRST_DISPATCH_TIMEOUT).map_err(|e| match e {
        MsmError::Timeout(_) => MsmError::Timeout(format!(
            "the first dispatches of new pipelines (where a driver may compile them) did not \
             end within {FIRST_DISPATCH_TIMEOUT:?} (FIRST_DISPATCH_TIMEOUT); the device is \
             taken to be hung and was dropped"
        )),
        e => e,
    })
}

/// The zeroed buffers every warm-up dispatch binds.
struct WarmUp {
    /// One buffer per storage binding of a stage (a writable binding may not share a buffer).
    storage: Vec<wgpu::Buffer>,
    uniform: wgpu::Buffer,
}

impl WarmUp {
    /// Bytes of each buffer: 4 KiB, or less where the device binds less.
    fn bytes(limit: u64) -> u64 {
        4096.min(limit) / 16 * 16
    }

    fn new(gpu: &GpuContext) -> Self {
        let limits = gpu.device.limits();
        let buffer = |size, usage| {
            gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("warm-up"),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        let storage = Self::bytes(limits.max_storage_buffer_binding_size);
        let uniform = Self::bytes(limits.max_uniform_buffer_binding_size);
        let most = Stage::ALL
            .iter()
            .map(|s| s.bindings_on(gpu.profile()).len())
            .max()
            .unwrap_or(0);
        Self {
            storage: (0..most)
                .map(|_| buffer(storage, wgpu::BufferUsages::STORAGE))
                .collect(),
            uniform: buffer(uniform, wgpu::BufferUsages::UNIFORM),
        }
    }

    /// Submits one workgroup of `id`'s pipeline over these buffers.
    fn dispatch(
        &self,
        gpu: &GpuContext,
        profile: CurveProfile,
        id: StageId,
        pipeline: &wgpu::ComputePipeline,
    ) {
        let mut storage = self.storage.iter();
        let group = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("warm-up"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &id.def().entries(profile, |b| match b.access {
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
