//! The product forms of [`crate::gpu::shader::mul_variants`] timed at throughput on an engine's
//! device: each thread raises a random a by `chain` products by its b, every thread's result
//! checked against arkworks (a b^chain). What the device check prints as "field products per
//! second" by form; on lavapipe it is a correctness test only (`tests/gpu/shader_ops.rs`).

use std::time::{Duration, Instant};

use ark_ff::PrimeField;
use wgpu::util::DeviceExt;

use crate::curve::GpuCurve;
use crate::error::{MsmError, Result};
use crate::gpu::inspect::selftest::ShaderOps;
use crate::gpu::shader::mul29::Field29;
use crate::gpu::shader::mul_variants::{bench_wgsl, MulForm, BENCH_WORKGROUP};

/// How long one timed dispatch may take (a slow adapter at 2^18 threads).
const BENCH_TIMEOUT: Duration = Duration::from_secs(300);

/// The longest chain: its double, the longer dispatch's loop, stays below the 65,535
/// iterations after which llvmpipe ends a loop without an error.
pub const MAX_CHAIN: u32 = 32_767;

/// Workgroups of one dimension of a dispatch (WebGPU's default limit).
const MAX_WORKGROUPS: u32 = 65_535;

/// One form's measurement.
#[derive(Debug, Clone)]
pub struct MulRate {
    /// The form timed.
    pub form: MulForm,
    /// Threads of the dispatch.
    pub threads: u32,
    /// Dependent products per thread.
    pub chain: u32,
    /// Both pipelines' creation and the first dispatch (the driver's compilation).
    pub first: Duration,
    /// `chain` products a thread: a dispatch of 2 chain less one of chain (host clock,
    /// submission to read-back; zero where noise made the longer one no slower).
    pub time: Duration,
    /// What a dispatch costs beside its products: upload, launch, read-back.
    pub fixed: Duration,
}

impl<C: GpuCurve> ShaderOps<'_, C> {
    /// Times `form` of the product on F (a prime field of at most 16 limbs of 29 bits), with
    /// `threads` threads: dispatches of `chain` and of `2 chain` products a thread, each run
    /// once untimed (the driver's compilation) and twice timed; the difference of the faster
    /// of each is the products' time.
    /// [`MsmError::InvalidConfig`] for a u64 form on a device without `SHADER_INT64`,
    /// [`MsmError::Gpu`] where a thread's result is not arkworks' a b^chain.
    pub fn fp_mul_rate<F: PrimeField>(
        &self,
        form: MulForm,
        threads: u32,
        chain: u32,
    ) -> Result<MulRate> {
        let gpu = self.context();
        if form.needs_int64() && !gpu.device.features().contains(wgpu::Features::SHADER_INT64) {
            return Err(MsmError::InvalidConfig(format!(
                "{}: the device has no SHADER_INT64",
                form.name()
            )));
        }
        if threads == 0 || threads.div_ceil(BENCH_WORKGROUP) > MAX_WORKGROUPS {
            return Err(MsmError::InvalidConfig(format!(
                "fp_mul_rate: {threads} threads (1 to {} in one dispatch)",
                MAX_WORKGROUPS * BENCH_WORKGROUP
            )));
        }
        if !(1..=MAX_CHAIN).contains(&chain) {
            return Err(MsmError::InvalidConfig(format!(
                "fp_mul_rate: a chain of {chain} (1 to {MAX_CHAIN}: twice it stays under \
                 llvmpipe's 65,535 iterations a loop)"
            )));
        }
        let f = Field29::of::<F>();
        let r = F::from(2u64).pow([f.radix_bits() as u64]);
        let mont = |x: F| f.limbs_of((x * r).into_bigint().as_ref());
        let pairs = bench_pairs::<F>(threads as usize, f.radix_bits());
        let input: Vec<u32> = (pairs.iter())
            .flat_map(|&(a, b)| mont(a).into_iter().chain(mont(b)))
            .collect();
        let t = Instant::now();
        let (short, layout) = self.bench_pipeline(&f, form, threads, chain)?;
        let (long, _) = self.bench_pipeline(&f, form, threads, 2 * chain)?;
        let run = |p| self.bench_dispatch(p, &layout, f.limb_count(), &input, threads);
        // A driver may compile at the first dispatch: both pipelines run once untimed.
        let _ = run(&short)?;
        let _ = run(&long)?;
        let first = t.elapsed();
        let n = f.limb_count();
        let check = |out: &[u32], k: u32| {
            let bad = (pairs.iter().zip(out.chunks_exact(n)))
                .position(|((a, b), got)| got != mont(*a * b.pow([k as u64])).as_slice());
            match bad {
                Some(i) => Err(MsmError::Gpu(format!(
                    "{}: thread {i}'s a b^{k} differs from arkworks'",
                    form.name()
                ))),
                None => Ok(()),
            }
        };
        // Two dispatches that differ only in their chains' length: the difference is
        // `chain` products a thread, without the upload, launch and read-back of either.
        // Each timed twice, the shorter kept (a dispatch is only ever slowed by noise).
        let timed = |p| -> Result<(Duration, Vec<u32>)> {
            let (mut best, mut out) = (Duration::MAX, Vec::new());
            for _ in 0..2 {
                let t = Instant::now();
                out = run(p)?;
                best = best.min(t.elapsed());
            }
            Ok((best, out))
        };
        let (once, out) = timed(&short)?;
        let (twice, out2) = timed(&long)?;
        check(&out, chain)?;
        check(&out2, 2 * chain)?;
        let time = twice.saturating_sub(once);
        Ok(MulRate {
            form,
            threads,
            chain,
            first,
            time,
            fixed: once.saturating_sub(time),
        })
    }

    /// `bench` of `form` on F, and its bind-group layout.
    fn bench_pipeline(
        &self,
        f: &Field29,
        form: MulForm,
        threads: u32,
        chain: u32,
    ) -> Result<(wgpu::ComputePipeline, wgpu::BindGroupLayout)> {
        let dev = &self.context().device;
        let scope = dev.push_error_scope(wgpu::ErrorFilter::Validation);
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some("fp_mul bench"),
            source: wgpu::ShaderSource::Wgsl(bench_wgsl(f, form).into()),
        };
        // SAFETY: `bench` indexes its buffers below threads x words, which they hold.
        let module = unsafe {
            dev.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked())
        };
        let storage = |binding, read_only| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        // The shader's signature: input (a, b a thread), output (a b^CHAIN a thread).
        let layout = dev.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("fp_mul bench"),
            entries: &[storage(0, true), storage(1, false)],
        });
        let pipeline_layout = dev.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("fp_mul bench"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let constants = [("CHAIN", chain as f64), ("THREADS", threads as f64)];
        let pipeline = dev.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("fp_mul bench"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("bench"),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                ..Default::default()
            },
            cache: None,
        });
        match crate::gpu::device::blocking::ready(scope.pop()) {
            Some(e) => Err(MsmError::Gpu(format!(
                "fp_mul bench ({}): {e}",
                form.name()
            ))),
            None => Ok((pipeline, layout)),
        }
    }

    /// One dispatch of `bench`, the output (`limbs` words a thread) read back.
    fn bench_dispatch(
        &self,
        pipeline: &wgpu::ComputePipeline,
        layout: &wgpu::BindGroupLayout,
        limbs: usize,
        input: &[u32],
        threads: u32,
    ) -> Result<Vec<u32>> {
        let gpu = self.context();
        let dev = &gpu.device;
        let scope = dev.push_error_scope(wgpu::ErrorFilter::Validation);
        let in_buf = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("fp_mul bench in"),
            contents: bytemuck::cast_slice(input),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let out_bytes = threads as u64 * limbs as u64 * 4;
        let buffer = |label, usage| {
            dev.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: out_bytes,
                usage,
                mapped_at_creation: false,
            })
        };
        let out = buffer(
            "fp_mul bench out",
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        );
        let read = buffer(
            "fp_mul bench read",
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        let group = dev.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("fp_mul bench"),
            layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: in_buf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: out.as_entire_binding(),
                },
            ],
        });
        let mut encoder = dev.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(threads.div_ceil(BENCH_WORKGROUP).max(1), 1, 1);
        }
        encoder.copy_buffer_to_buffer(&out, 0, &read, 0, out_bytes);
        gpu.queue.submit([encoder.finish()]);
        let bytes = gpu.read_buffer(&read, BENCH_TIMEOUT)?;
        if let Some(e) = crate::gpu::device::blocking::ready(scope.pop()) {
            return Err(MsmError::Gpu(format!("fp_mul bench: {e}")));
        }
        let words: &[u32] = bytemuck::cast_slice(&bytes);
        Ok(words.to_vec())
    }
}

/// The threads' (a, b): every pair of edge values first (0, 1, p - 1, p - 2, 2, 1/2, R and
/// 1/R, 2^k - 1 and 2^k at limb and word boundaries), then random ones.
fn bench_pairs<F: PrimeField>(threads: usize, radix_bits: u32) -> Vec<(F, F)> {
    let two = F::from(2u64);
    let r = two.pow([radix_bits as u64]);
    let mut edges = vec![
        F::zero(),
        F::one(),
        -F::one(),
        -two,
        two,
        two.inverse().unwrap(),
        r,
    ];
    edges.push(r.inverse().unwrap());
    for k in [29u64, 32, 58, 64, 116, 128, 232, 256, 348] {
        let p = two.pow([k]);
        edges.extend([p - F::one(), p]);
    }
    let mut rng = ark_std::test_rng();
    let random = std::iter::repeat_with(|| (F::rand(&mut rng), F::rand(&mut rng)));
    (edges.iter())
        .flat_map(|&a| edges.iter().map(move |&b| (a, b)))
        .chain(random)
        .take(threads)
        .collect()
}
