//! Evaluates single shader functions (field and curve arithmetic) on the engine's GPU, so
//! that they can be compared with arkworks: the tests do, and a user can run the same checks
//! on a new adapter.

use std::collections::HashMap;
use std::sync::Mutex;

use ark_ec::short_weierstrass::{Affine, Projective};
use wgpu::util::DeviceExt;

use crate::config::{MsmConfig, DEFAULT_GPU_TIMEOUT};
use crate::curve::{Fe, Fr, GpuCurve};
use crate::error::{MsmError, Result};
use crate::gpu::pipelines::compile::{create_pipeline, shader_module};
use crate::gpu::pipelines::stages::StageId;
use crate::gpu::shader::field::{Arithmetic, CurveProfile, WORKGROUP_SIZE};
use crate::gpu::shader::packing::arkworks_words;
use crate::gpu::GpuContext;

/// The shader function a self-test case runs (the `op` of selftest.wgsl, the
/// pipeline-overridable constant `SELFTEST_OP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ShaderFn {
    FeAdd = 0,
    FeSub = 1,
    FeMul = 2,
    FeNeg = 3,
    FeFromArkworks = 4,
    FeSquare = 5,
    FeMulChain = 6,
    PointAdd = 7,
    PointAddMixed = 8,
    PointDouble = 9,
    PointNeg = 10,
    PointMulSmall = 11,
    PointIdentity = 12,
    FeInverse = 13,
    UploadIsValid = 14,
}

impl ShaderFn {
    /// Every function, in op order.
    pub const ALL: [ShaderFn; 15] = {
        use ShaderFn::*;
        [
            FeAdd,
            FeSub,
            FeMul,
            FeNeg,
            FeFromArkworks,
            FeSquare,
            FeMulChain,
            PointAdd,
            PointAddMixed,
            PointDouble,
            PointNeg,
            PointMulSmall,
            PointIdentity,
            FeInverse,
            UploadIsValid,
        ]
    };

    /// Its `SELFTEST_OP`.
    pub fn op(self) -> u32 {
        self as u32
    }

    /// The shader function it runs, as selftest.wgsl names it (`fe_mul_chain`: k chained
    /// `fe_mul`s).
    pub fn name(self) -> &'static str {
        use ShaderFn::*;
        match self {
            FeAdd => "fe_add",
            FeSub => "fe_sub",
            FeMul => "fe_mul",
            FeNeg => "fe_neg",
            FeFromArkworks => "fe_from_arkworks",
            FeSquare => "fe_square",
            FeMulChain => "fe_mul_chain",
            PointAdd => "point_add",
            PointAddMixed => "point_add_mixed",
            PointDouble => "point_double",
            PointNeg => "point_neg",
            PointMulSmall => "point_mul_small",
            PointIdentity => "point_identity",
            FeInverse => "fe_inverse",
            UploadIsValid => "upload_is_valid",
        }
    }
}

/// How long a self-test dispatch may take. Its pipeline is compiled on first use, and a
/// software adapter compiles at the first dispatch: on lavapipe a G2's formulas in Limbs13
/// take up to a minute alone (docs/PERF.md, "The G2s over F_p^2"), and on a loaded
/// machine they went past [`DEFAULT_GPU_TIMEOUT`]. The self-test kernels are a test tool:
/// this bound is theirs, not `MsmConfig::gpu_timeout`.
const SELFTEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// One case of raw input words: operand a and operand b (a point's words each), then a
/// small integer k.
type Case = Vec<u32>;

/// The self-test kernels on an engine's device: one pipeline per function, compiled when
/// first used (with the engine's runtime-check setting and arithmetic profile), on the
/// engine's curve `C`.
pub struct ShaderOps<'a, C: GpuCurve = ark_bls12_377::g1::Config> {
    gpu: std::sync::Arc<GpuContext>,
    _engine: std::marker::PhantomData<(&'a (), C)>,
    pipelines: Mutex<HashMap<ShaderFn, wgpu::ComputePipeline>>,
}

impl<'a, C: GpuCurve> ShaderOps<'a, C> {
    /// The self-test kernels of `gpu`, whose shaders compute on `C`.
    pub(crate) fn new(gpu: std::sync::Arc<GpuContext>) -> Result<Self> {
        gpu.check_curve::<C>()?;
        Ok(Self {
            gpu,
            _engine: std::marker::PhantomData,
            pipelines: Mutex::new(HashMap::new()),
        })
    }

    /// The self-test kernels of `C` on the adapter `config` chooses, on a device of their
    /// own whose MSM stages are not compiled (each kernel compiles on first use): to check
    /// a new adapter's field and curve functions against arkworks on any curve.
    pub fn open(config: &MsmConfig) -> Result<ShaderOps<'static, C>> {
        config.validate()?;
        let gpu = GpuContext::for_shader_ops(config, C::spec())?;
        ShaderOps::new(std::sync::Arc::new(gpu))
    }

    /// [`MsmError::InvalidConfig`] where the kernels were opened without the MSM stages
    /// ([`ShaderOps::open`]), which `what` runs.
    fn need_stages(&self, what: &str) -> Result<()> {
        match self.gpu.has_stages() {
            true => Ok(()),
            false => Err(MsmError::InvalidConfig(format!(
                "ShaderOps::{what} runs the MSM stages, which ShaderOps::open does not compile: \
                 take the kernels from an engine (GpuMsm::shader_ops)"
            ))),
        }
    }

    fn pipeline(&self, op: ShaderFn) -> Result<wgpu::ComputePipeline> {
        let mut map = self.pipelines.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = map.get(&op) {
            return Ok(p.clone());
        }
        let gpu = &self.gpu;
        let scope = gpu.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let stage = StageId::SelfTest.def();
        let module = shader_module(&gpu.device, gpu.profile, stage.module, gpu.runtime_checks);
        let constants = [("SELFTEST_OP", op as u32 as f64)];
        let p = create_pipeline(
            &gpu.device,
            &module,
            gpu.profile,
            stage,
            &constants,
            gpu.disk_cache.as_ref().map(|c| &c.cache),
        );
        if let Some(e) = crate::gpu::device::blocking::ready(scope.pop()) {
            return Err(MsmError::Gpu(format!("self-test pipeline {op:?}: {e}")));
        }
        map.insert(op, p.clone());
        Ok(p)
    }

    /// The device the kernels run on (the microbenchmarks of `crate::gpu::inspect::mul_bench` too).
    pub(in crate::gpu) fn context(&self) -> &GpuContext {
        &self.gpu
    }

    /// The arithmetic profile under test.
    pub fn arithmetic(&self) -> Arithmetic {
        self.gpu.profile.arithmetic
    }

    /// The profile on its curve.
    pub fn profile(&self) -> CurveProfile {
        self.gpu.profile
    }

    fn case(&self, a: &[u32], b: &[u32], k: u32) -> Case {
        let pw = self.profile().point_words();
        let mut c = vec![0u32; 2 * pw + 1];
        c[..a.len()].copy_from_slice(a);
        c[pw..pw + b.len()].copy_from_slice(b);
        c[2 * pw] = k;
        c
    }

    /// A point's words (every point of the prime-order subgroup maps to every profile's
    /// coordinates).
    fn point(&self, p: &Projective<C>) -> Vec<u32> {
        self.profile()
            .point_to_shader_words::<C>(p)
            .expect("points of the prime-order subgroup map to every profile's coordinates")
    }

    fn run(&self, op: ShaderFn, cases: &[Case]) -> Result<Vec<Vec<u32>>> {
        let point_words = self.profile().point_words();
        let dev = &self.gpu.device;
        let scope = dev.push_error_scope(wgpu::ErrorFilter::Validation);
        let input: Vec<u32> = cases.iter().flatten().copied().collect();
        let input = if input.is_empty() { vec![0] } else { input };
        let in_buf = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("selftest in"),
            contents: bytemuck::cast_slice(&input),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let out_bytes = (cases.len().max(1) * point_words * 4) as u64;
        let out_buf = dev.create_buffer(&wgpu::BufferDescriptor {
            label: Some("selftest out"),
            size: out_bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let read = dev.create_buffer(&wgpu::BufferDescriptor {
            label: Some("selftest read"),
            size: out_bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let pipeline = self.pipeline(op)?;
        let params = crate::gpu::shader::contract::SelfTestParams {
            count: cases.len() as u32,
            ..Default::default()
        };
        let params_buf = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("selftest params"),
            contents: bytemuck::bytes_of(&params),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let stage = StageId::SelfTest.def();
        let entries = stage.entries(self.profile(), |b| match b.name {
            "input" => in_buf.as_entire_binding(),
            "output" => out_buf.as_entire_binding(),
            _ => params_buf.as_entire_binding(),
        });
        let group = dev.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(stage.entry),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let mut encoder = dev.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups((cases.len() as u32).div_ceil(WORKGROUP_SIZE).max(1), 1, 1);
        }
        encoder.copy_buffer_to_buffer(&out_buf, 0, &read, 0, out_bytes);
        self.gpu.queue.submit([encoder.finish()]);
        let bytes = self.gpu.read_buffer(&read, SELFTEST_TIMEOUT)?;
        if let Some(e) = crate::gpu::device::blocking::ready(scope.pop()) {
            return Err(MsmError::Gpu(format!("self-test: {e}")));
        }
        let words: &[u32] = bytemuck::cast_slice(&bytes);
        Ok(words
            .chunks_exact(point_words)
            .take(cases.len())
            .map(|c| c.to_vec())
            .collect())
    }

    fn field_op(&self, op: ShaderFn, cases: Vec<Case>) -> Result<Vec<Option<Fe<C>>>> {
        Ok(self
            .run(op, &cases)?
            .iter()
            .map(|w| {
                let ew = self.profile().element_words();
                self.profile().from_shader_words::<C>(&w[..ew])
            })
            .collect())
    }

    fn point_op(&self, op: ShaderFn, cases: Vec<Case>) -> Result<Vec<Option<Projective<C>>>> {
        Ok(self
            .run(op, &cases)?
            .iter()
            .map(|w| self.profile().point_from_shader_words::<C>(w))
            .collect())
    }

    fn fe_pairs(&self, op: ShaderFn, pairs: &[(Fe<C>, Fe<C>)]) -> Result<Vec<Option<Fe<C>>>> {
        let cases = pairs
            .iter()
            .map(|(a, b)| {
                self.case(
                    &self.profile().to_shader_words::<C>(a),
                    &self.profile().to_shader_words::<C>(b),
                    0,
                )
            })
            .collect();
        self.field_op(op, cases)
    }

    /// a + b per pair. `None` marks an unreduced result.
    pub fn fe_add(&self, pairs: &[(Fe<C>, Fe<C>)]) -> Result<Vec<Option<Fe<C>>>> {
        self.fe_pairs(ShaderFn::FeAdd, pairs)
    }

    /// a - b per pair.
    pub fn fe_sub(&self, pairs: &[(Fe<C>, Fe<C>)]) -> Result<Vec<Option<Fe<C>>>> {
        self.fe_pairs(ShaderFn::FeSub, pairs)
    }

    /// a * b per pair (Montgomery multiplication).
    pub fn fe_mul(&self, pairs: &[(Fe<C>, Fe<C>)]) -> Result<Vec<Option<Fe<C>>>> {
        self.fe_pairs(ShaderFn::FeMul, pairs)
    }

    /// a * b^k per case, as k chained multiplications on the GPU.
    pub fn fe_mul_chain(&self, cases: &[(Fe<C>, Fe<C>, u32)]) -> Result<Vec<Option<Fe<C>>>> {
        let cases = cases
            .iter()
            .map(|(a, b, k)| {
                self.case(
                    &self.profile().to_shader_words::<C>(a),
                    &self.profile().to_shader_words::<C>(b),
                    *k,
                )
            })
            .collect();
        self.field_op(ShaderFn::FeMulChain, cases)
    }

    /// A one-operand field function per element.
    fn fe_unary(&self, op: ShaderFn, xs: &[Fe<C>]) -> Result<Vec<Option<Fe<C>>>> {
        let cases = xs
            .iter()
            .map(|a| self.case(&self.profile().to_shader_words::<C>(a), &[], 0))
            .collect();
        self.field_op(op, cases)
    }

    /// a^2 per element.
    pub fn fe_square(&self, xs: &[Fe<C>]) -> Result<Vec<Option<Fe<C>>>> {
        self.fe_unary(ShaderFn::FeSquare, xs)
    }

    /// -a per element.
    pub fn fe_neg(&self, xs: &[Fe<C>]) -> Result<Vec<Option<Fe<C>>>> {
        self.fe_unary(ShaderFn::FeNeg, xs)
    }

    /// a^-1 per element (0 for 0), by Fermat.
    pub fn fe_inverse(&self, xs: &[Fe<C>]) -> Result<Vec<Option<Fe<C>>>> {
        self.fe_unary(ShaderFn::FeInverse, xs)
    }

    /// Loads `bases` as a resident set (upload and convert stage) and reads back each base's
    /// stored words ([`CurveProfile::base_words`] per base), to compare with
    /// [`CurveProfile::affine_to_shader_words`].
    pub fn stored_bases(&self, bases: &[Affine<C>]) -> Result<Vec<Vec<u32>>> {
        self.need_stages("stored_bases")?;
        let resident = self
            .gpu
            .store_bases(bases, crate::gpu::Shift::NONE, DEFAULT_GPU_TIMEOUT)?
            .expect("a set without copies is always stored");
        let words = self.gpu.read_stored_bases(&resident)?;
        Ok(words
            .chunks_exact(self.profile().base_words())
            .take(bases.len())
            .map(|c| c.to_vec())
            .collect())
    }

    /// The GPU bucket sort at window size c (for the tests): the W B + 1 bucket offsets and
    /// the entries (point index, sign in bit 31), each bucket's range in no fixed order.
    pub fn bucket_sort(
        &self,
        bases: &[Affine<C>],
        scalars: &[Fr<C>],
        c: u32,
    ) -> Result<(Vec<u32>, Vec<u32>)> {
        self.need_stages("bucket_sort")?;
        self.gpu.bucket_sort(bases, scalars, c)
    }

    /// The conversion of the upload path: from arkworks' words to the shaders' form.
    pub fn fe_from_arkworks(&self, xs: &[Fe<C>]) -> Result<Vec<Option<Fe<C>>>> {
        let cases = xs
            .iter()
            .map(|a| self.case(&arkworks_words::<C>(a), &[], 0))
            .collect();
        self.field_op(ShaderFn::FeFromArkworks, cases)
    }

    fn point_pairs(
        &self,
        op: ShaderFn,
        pairs: &[(Projective<C>, Projective<C>)],
    ) -> Result<Vec<Option<Projective<C>>>> {
        let cases = pairs
            .iter()
            .map(|(a, b)| self.case(&self.point(a), &self.point(b), 0))
            .collect();
        self.point_op(op, cases)
    }

    /// P + Q (complete projective addition). `None` marks a result off the curve.
    pub fn point_add(
        &self,
        pairs: &[(Projective<C>, Projective<C>)],
    ) -> Result<Vec<Option<Projective<C>>>> {
        self.point_pairs(ShaderFn::PointAdd, pairs)
    }

    /// P + Q with Q affine; Q must not be the identity (the engine never passes one).
    pub fn point_add_mixed(
        &self,
        pairs: &[(Projective<C>, Affine<C>)],
    ) -> Result<Vec<Option<Projective<C>>>> {
        let cases = pairs
            .iter()
            .map(|(a, q)| {
                let b = self
                    .profile()
                    .affine_to_shader_words::<C>(q)
                    .expect("a point of the subgroup other than the identity");
                self.case(&self.point(a), &b, 0)
            })
            .collect();
        self.point_op(ShaderFn::PointAddMixed, cases)
    }

    /// 2P.
    pub fn point_double(&self, ps: &[Projective<C>]) -> Result<Vec<Option<Projective<C>>>> {
        let cases = ps
            .iter()
            .map(|a| self.case(&self.point(a), &[], 0))
            .collect();
        self.point_op(ShaderFn::PointDouble, cases)
    }

    /// -P.
    pub fn point_neg(&self, ps: &[Projective<C>]) -> Result<Vec<Option<Projective<C>>>> {
        let cases = ps
            .iter()
            .map(|a| self.case(&self.point(a), &[], 0))
            .collect();
        self.point_op(ShaderFn::PointNeg, cases)
    }

    /// k * P for small k.
    pub fn point_mul_small(
        &self,
        cases: &[(Projective<C>, u32)],
    ) -> Result<Vec<Option<Projective<C>>>> {
        let cases = cases
            .iter()
            .map(|(a, k)| self.case(&self.point(a), &[], *k))
            .collect();
        self.point_op(ShaderFn::PointMulSmall, cases)
    }

    /// The convert stage's check of uploaded bases (`shaders/base_check.wgsl`), on raw upload
    /// words (arkworks' Montgomery words of x and y, which may be unreduced): whether each
    /// is the identity (all zero) or a point on the curve with reduced coordinates.
    pub fn upload_is_valid(&self, uploads: &[(Vec<u32>, Vec<u32>)]) -> Result<Vec<bool>> {
        let cases: Vec<Case> = uploads.iter().map(|(x, y)| self.case(x, y, 0)).collect();
        Ok(self
            .run(ShaderFn::UploadIsValid, &cases)?
            .iter()
            .map(|w| w[0] == 1)
            .collect())
    }

    /// The shaders' identity point, `count` times.
    pub fn point_identity(&self, count: usize) -> Result<Vec<Option<Projective<C>>>> {
        self.point_op(ShaderFn::PointIdentity, vec![self.case(&[], &[], 0); count])
    }
}
