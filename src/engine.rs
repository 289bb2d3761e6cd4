//! `GpuMsm`: the engine a prover holds, and the routing of each call.

use std::time::{Duration, Instant};

use ark_bls12_377::{Fr, G1Affine, G1Projective};
use rayon::prelude::*;

use crate::config::MsmConfig;
use crate::digits::{best_window_bits, BucketPlan, SIGN_BIT};
use crate::error::{MsmError, Result};
use crate::gpu::field::{affine_upload_words, point_from_shader_words, AFFINE_WORDS, POINT_WORDS};
use crate::gpu::selftest::ShaderOps;
use crate::gpu::GpuContext;
use crate::report::{Backend, MsmReport, PhaseTimes};
use crate::{cpu, digits};

/// A multi-scalar multiplication engine for BLS12-377 G1 on one wgpu adapter.
///
/// Build it once (adapter, device and pipeline compilation take time) and share it: it is
/// `Send + Sync`, and concurrent calls from several threads are allowed.
pub struct GpuMsm {
    config: MsmConfig,
    gpu: GpuContext,
}

impl GpuMsm {
    /// An engine on the best adapter with the default configuration.
    pub fn new() -> Result<Self> {
        Self::with_config(MsmConfig::default())
    }

    /// An engine with `config`.
    pub fn with_config(config: MsmConfig) -> Result<Self> {
        config.validate()?;
        let gpu = GpuContext::new(&config)?;
        Ok(Self { config, gpu })
    }

    /// The configuration in use.
    pub fn config(&self) -> &MsmConfig {
        &self.config
    }

    /// The adapter's name.
    pub fn adapter_name(&self) -> &str {
        self.gpu.adapter_name()
    }

    /// The adapter's wgpu backend (Vulkan, Metal, DX12, ...), as text.
    pub fn adapter_backend(&self) -> String {
        format!("{:?}", self.gpu.info.backend)
    }

    /// Time it took to create the compute pipelines.
    pub fn pipeline_creation_time(&self) -> Duration {
        self.gpu.pipeline_creation_time()
    }

    /// Self-test access to the individual shader functions on this engine's device.
    pub fn shader_ops(&self) -> Result<ShaderOps<'_>> {
        ShaderOps::new(&self.gpu)
    }

    /// sum_i scalars[i] * bases[i].
    pub fn msm(&self, bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective> {
        self.msm_with_report(bases, scalars).map(|(r, _)| r)
    }

    /// The MSM and a report of what ran and how long each phase took.
    pub fn msm_with_report(
        &self,
        bases: &[G1Affine],
        scalars: &[Fr],
    ) -> Result<(G1Projective, MsmReport)> {
        let start = Instant::now();
        if bases.len() != scalars.len() {
            return Err(MsmError::LengthMismatch {
                bases: bases.len(),
                scalars: scalars.len(),
            });
        }
        let n = bases.len();
        let mut report = MsmReport {
            backend: Backend::CpuDoubleAndAdd,
            n,
            window_bits: None,
            num_windows: 0,
            num_buckets: 0,
            num_entries: 0,
            gpu_timing: None,
            adapter: self.gpu.adapter_name().to_string(),
            phases: PhaseTimes::default(),
        };
        if n < self.config.small_msm_cutoff {
            let t = Instant::now();
            let r = cpu::double_and_add(bases, scalars);
            report.phases.window_reduction = t.elapsed();
            report.phases.total = start.elapsed();
            return Ok((r, report));
        }
        if n >= SIGN_BIT as usize {
            return Err(MsmError::InputTooLarge(format!(
                "{n} points; point indices must fit 31 bits"
            )));
        }

        let c = self
            .config
            .window_bits
            .unwrap_or_else(|| best_window_bits(n));
        let t = Instant::now();
        let plan = BucketPlan::new(bases, scalars, c);
        report.phases.digits = t.elapsed();

        let t = Instant::now();
        let mut points = vec![0u32; n * AFFINE_WORDS];
        points
            .par_chunks_mut(AFFINE_WORDS)
            .zip(bases.par_iter())
            .for_each(|(out, p)| affine_upload_words(p, out));
        let pack_time = t.elapsed();

        let (sums, times) = self.gpu.run(&points, &plan)?;
        let t = Instant::now();
        let window_sums = sums
            .chunks_exact(POINT_WORDS)
            .map(point_from_shader_words)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                MsmError::Gpu("a window sum came back off the curve or unreduced".into())
            })?;
        let result = cpu::window_reduction(&window_sums, c);
        let p = &mut report.phases;
        p.window_reduction = t.elapsed();
        p.upload = pack_time + times.upload;
        p.point_conversion = times.point_conversion;
        p.bucket_accumulation = times.bucket_accumulation;
        p.bucket_reduction = times.bucket_reduction;
        p.download = times.download;
        p.total = start.elapsed();
        report.backend = Backend::Gpu;
        report.window_bits = Some(c);
        report.num_windows = plan.num_windows;
        report.num_buckets = plan.total_buckets();
        report.num_entries = plan.entries.len();
        report.gpu_timing = Some(self.gpu.timing());
        debug_assert_eq!(plan.num_windows, digits::num_windows(c));
        Ok((result, report))
    }
}

impl std::fmt::Debug for GpuMsm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuMsm")
            .field("adapter", &self.gpu.adapter_name())
            .field("config", &self.config)
            .finish()
    }
}
