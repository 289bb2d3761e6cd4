//! `GpuMsm`: the engine a prover holds. A thin facade over the phases: validation and
//! routing ([`crate::routing`]), the SRE policy ([`crate::sre`]), digits and bucket plans
//! ([`crate::digits`]), the GPU run ([`crate::gpu`]) and the window reduction ([`crate::cpu`]).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ark_bls12_377::{Fq, Fr, G1Affine, G1Projective};
use ark_ec::AffineRepr;
use ark_ff::{PrimeField, Zero};
use rayon::prelude::*;

use crate::bases::{slice_ranges, Bases, BasesRef, MsmBases};
use crate::calibration::{Calibration, CalibrationSource, CALIBRATION_ENV};
use crate::config::{BucketSort, MsmConfig, SelfTest};
use crate::digits::{
    best_window_bits, best_window_bits_for, buckets_per_window, num_windows, scalar_integers,
    windows_for_bits, BucketPlan, DigitMatrix, SIGN_BIT,
};
use crate::error::{MsmError, Result};
use crate::gpu::selftest::ShaderOps;
use crate::gpu::{CallOutput, GpuContext, InFlight, Job, JobPlan, Points};
use crate::known_answer::{KAT_POINTS, KAT_WINDOWS};
use crate::report::{Backend, MsmReport, PhaseTimes};
use crate::routing::{self, AdapterFacts};
use crate::sre::policy::{Placement, SrePolicy};
use crate::{cpu, sre};

mod device;

use device::{DeviceCell, DeviceState, Hooks};

/// Identities of devices (and of CPU-only engines), so that a [`Bases`] is used only where
/// it was loaded.
static NEXT_DEVICE: AtomicU64 = AtomicU64::new(1);

/// A multi-scalar multiplication engine for BLS12-377 G1 on one wgpu adapter.
///
/// Build it once (adapter, device and pipeline compilation take time) and share it: it is
/// `Send + Sync`, and concurrent calls from several threads are allowed. Without any GPU
/// adapter it still works, on the CPU paths (unless [`MsmConfig::require_gpu`]).
pub struct GpuMsm {
    config: MsmConfig,
    gpu: Option<Arc<DeviceCell>>,
    adapter: AdapterFacts,
    device: u64,
    /// Crossovers for routing, when configured.
    calibration: Option<Calibration>,
    sre: SrePolicy,
    /// How long the known-answer test took at creation, if it ran and passed.
    self_test_time: Option<Duration>,
    /// Fault injection for the tests, shared with [`GpuMsm::reconfigured`] engines.
    hooks: Arc<Hooks>,
}

/// A GPU call after its host work, ready to submit.
struct Prepared<'a> {
    report: MsmReport,
    start: Instant,
    bases: BasesRef<'a>,
    n: usize,
    c: u32,
    plan: PreparedPlan,
    scalars: &'a [Fr],
    merged: Vec<G1Affine>,
    /// Time spent on other calls' host work while this one was in flight (a batch).
    overlapped: Duration,
}

/// How a prepared call's bucket entries are made.
enum PreparedPlan {
    /// The host's bucket lists (SRE, or [`BucketSort::Host`]).
    Host(BucketPlan),
    /// On the GPU, from the scalars, at the call's window size c.
    Gpu,
}

/// A call after validation, routing and host work: done on the CPU, or GPU work to submit.
enum Step<'a> {
    Done(G1Projective, Box<MsmReport>),
    Gpu(Box<Prepared<'a>>),
}

impl GpuMsm {
    /// An engine on the best adapter with the default configuration.
    pub fn new() -> Result<Self> {
        Self::with_config(MsmConfig::default())
    }

    /// An engine with `config`. A configuration that cannot run even one point's call on
    /// the adapter (a memory budget or window size too large for it, for the known-answer
    /// test too) is [`MsmError::InvalidConfig`].
    pub fn with_config(config: MsmConfig) -> Result<Self> {
        config.validate()?;
        let calibration = load_calibration(&config.calibration)?;
        let known_answer = config.self_test != SelfTest::Off;
        let fits = |g: &GpuContext| check_one_point_fits(&config, g, known_answer);
        let (gpu, adapter) = match GpuContext::new(&config, fits) {
            Ok(g) => {
                let facts = AdapterFacts::Gpu {
                    name: g.adapter_name().to_string(),
                    software: g.is_software(),
                };
                (Some(Arc::new(g)), facts)
            }
            // No adapter at all: the CPU paths, unless a GPU was asked for (by requirement,
            // by a forced GPU backend, or by naming an adapter).
            Err(MsmError::NoAdapter { detail })
                if !config.demands_gpu() && config.adapter_filter().is_none() =>
            {
                (None, AdapterFacts::None(detail))
            }
            Err(e) => return Err(e),
        };
        let cell = gpu
            .as_ref()
            .map(|g| Arc::new(DeviceCell::new(Arc::clone(g), config.clone(), true)));
        let mut engine = Self {
            config,
            calibration,
            gpu: cell,
            adapter,
            device: NEXT_DEVICE.fetch_add(1, Ordering::Relaxed),
            sre: SrePolicy::default(),
            self_test_time: None,
            hooks: Arc::default(),
        };
        if let Some(g) = gpu {
            engine.run_self_test(&g)?;
        }
        Ok(engine)
    }

    /// The known-answer test on the engine's new device, per `config.self_test`.
    fn run_self_test(&mut self, gpu: &Arc<GpuContext>) -> Result<()> {
        if self.config.self_test == SelfTest::Off {
            return Ok(());
        }
        let _s = tracing::info_span!("gpu_msm.self_test").entered();
        let policy = self.config.clone();
        let detail = match self.known_answer_test(&policy, gpu, policy.self_test_inject_fault) {
            Ok(t) => {
                self.self_test_time = Some(t);
                return Ok(());
            }
            Err(MsmError::SelfTestFailed { detail, .. }) => detail,
            Err(e) => return Err(e),
        };
        let adapter = self.adapter_name().to_string();
        let fall_back =
            self.config.self_test == SelfTest::FallBackToCpu && !self.config.demands_gpu();
        if !fall_back {
            return Err(MsmError::SelfTestFailed { adapter, detail });
        }
        self.gpu = None;
        self.adapter = AdapterFacts::None(format!(
            "{adapter} failed the known-answer self-test ({detail}); running on the CPU"
        ));
        Ok(())
    }

    /// How long the known-answer test took when the engine was created (`None` when it did
    /// not run, or failed and the engine fell back to the CPU).
    pub fn self_test_time(&self) -> Option<Duration> {
        self.self_test_time
    }

    /// An engine with `config` on this engine's device and pipelines (no new adapter or
    /// compilation); [`Bases`] loaded by either engine work on both. `config` must keep the
    /// adapter choice, the shader checks, the arithmetic and the memory budget; a window
    /// size whose one-point call cannot fit is [`MsmError::InvalidConfig`].
    pub fn reconfigured(&self, config: MsmConfig) -> Result<Self> {
        config.validate()?;
        if config.adapter != self.config.adapter
            || config.shader_runtime_checks != self.config.shader_runtime_checks
            || config.arithmetic != self.config.arithmetic
            || config.memory_budget != self.config.memory_budget
        {
            return Err(MsmError::InvalidConfig(
                "reconfigured() keeps the device: adapter choice, shader checks, \
                 arithmetic and memory budget must match"
                    .into(),
            ));
        }
        if self.gpu.is_none() && config.demands_gpu() {
            return Err(MsmError::NoAdapter {
                detail: "this engine has no GPU adapter".into(),
            });
        }
        let engine = Self {
            calibration: load_calibration(&config.calibration)?,
            config,
            gpu: self.gpu.clone(),
            adapter: self.adapter.clone(),
            device: self.device,
            sre: SrePolicy::default(),
            self_test_time: self.self_test_time,
            hooks: Arc::clone(&self.hooks),
        };
        if let Some(g) = engine.gpu() {
            check_one_point_fits(&engine.config, &g, false)?;
        }
        Ok(engine)
    }
    /// The calibration the engine routes by, if one was loaded.
    pub fn calibration(&self) -> Option<&Calibration> {
        self.calibration.as_ref()
    }

    /// The configuration in use.
    pub fn config(&self) -> &MsmConfig {
        &self.config
    }

    /// Whether the engine has a GPU adapter (else it runs everything on the CPU).
    pub fn has_gpu(&self) -> bool {
        self.gpu.is_some()
    }

    /// The shaders' field arithmetic on this engine's adapter (`None` without one).
    pub fn arithmetic(&self) -> Option<crate::Arithmetic> {
        self.gpu().map(|g| g.arithmetic)
    }

    /// Whether the adapter is a software rasterizer (lavapipe, llvmpipe, WARP).
    pub fn is_software_adapter(&self) -> bool {
        matches!(self.adapter, AdapterFacts::Gpu { software: true, .. })
    }

    /// The adapter's name ("none" without an adapter).
    pub fn adapter_name(&self) -> &str {
        match (&self.gpu, &self.adapter) {
            (Some(_), AdapterFacts::Gpu { name, .. }) => name,
            _ => "none",
        }
    }

    /// The adapter's wgpu backend (Vulkan, Metal, DX12, ...), as text; without an adapter,
    /// why there is none.
    pub fn adapter_backend(&self) -> String {
        match (self.gpu(), &self.adapter) {
            (Some(g), _) => format!("{:?}", g.info.backend),
            (None, AdapterFacts::None(why)) => format!("CPU only: {why}"),
            (None, _) => "CPU only".into(),
        }
    }

    /// Time it took to create the compute pipelines (zero without an adapter).
    pub fn pipeline_creation_time(&self) -> Duration {
        self.gpu()
            .map_or(Duration::ZERO, |g| g.pipeline_creation_time())
    }

    /// Self-test access to the individual shader functions on this engine's device.
    pub fn shader_ops(&self) -> Result<ShaderOps<'_>> {
        ShaderOps::new(self.gpu_context()?)
    }

    /// Idle pooled GPU workspaces (buffers kept for the next calls).
    pub fn idle_workspaces(&self) -> usize {
        self.gpu().map_or(0, |g| g.idle_workspaces())
    }

    /// The device-memory budget ([`MsmConfig::memory_budget`]) and what is counted against
    /// it now: resident bases, calls in flight, idle buffers, the peak and how many times a
    /// call waited for room (`None` without a GPU).
    pub fn memory_usage(&self) -> Option<crate::MemoryUsage> {
        self.gpu().map(|g| g.memory_usage())
    }

    /// Bytes of memory the adapter offers: its largest device-local heap where the backend
    /// reports one (Vulkan), else its largest buffer (`None` without a GPU).
    pub fn adapter_memory(&self) -> Option<u64> {
        self.gpu().map(|g| g.adapter_memory())
    }

    /// The current GPU context (`None` without a GPU).
    fn gpu(&self) -> Option<Arc<GpuContext>> {
        self.gpu.as_ref().map(|c| c.current())
    }

    /// A GPU call's error, as [`MsmError::DeviceLost`] when the device was lost.
    fn on_device(gpu: &GpuContext, e: MsmError) -> MsmError {
        match e {
            MsmError::Gpu(m) if gpu.is_lost() => MsmError::DeviceLost(m),
            e => e,
        }
    }

    fn gpu_context(&self) -> Result<Arc<GpuContext>> {
        self.gpu().ok_or_else(no_gpu)
    }

    /// Loads `bases` for many calls: checked on the host once (a base off the curve, or with
    /// a coordinate not reduced, is [`MsmError::InvalidBase`]; with `validate_subgroup`, one
    /// outside G1 is [`MsmError::BaseNotInSubgroup`]), uploaded and stored in the profile's
    /// form on the device once, in parts whose calls fit beside the set. While a lost device
    /// is not replaced, the set stays on the host and calls upload it; when the GPU is
    /// demanded, that is [`MsmError::DeviceLost`] (or the failed replacement's error).
    pub fn load_bases(&self, bases: &[G1Affine]) -> Result<Bases> {
        let _s = tracing::info_span!("gpu_msm.load_bases", n = bases.len()).entered();
        check_bases(bases, self.config.validate_subgroup)?;
        // A lost device not replaced now: the set lives on the host, and calls on it upload
        // its bases once there is a device again.
        let on_device = matches!(self.device_ready()?, DeviceState::Ready);
        // Parts as long as one call on them can take beside the whole set, so that calls
        // on the set run one slice per part; the binding limit alone where the budget leaves
        // no room for a call (such calls are then refused, the set loaded). A configured
        // MsmConfig::max_slice_points only lowers that, as it does for one-shot calls.
        let gpu = self.gpu().filter(|_| on_device);
        let reserve = gpu.as_ref().map_or(0, |g| g.resident_bytes(bases.len()));
        let cap = self
            .max_call_len(bases.len(), false, reserve)
            .filter(|&p| p > 0)
            .or_else(|| {
                let c = self
                    .config
                    .window_bits
                    .unwrap_or_else(|| best_window_bits(bases.len()));
                gpu.as_ref().map(|g| g.max_points(c))
            })
            .unwrap_or(bases.len());
        let part_len = self
            .config
            .max_slice_points
            .map_or(cap, |s| s.min(cap))
            .max(1);
        let parts = match gpu {
            Some(g) if !g.is_lost() => slice_ranges(bases.len(), part_len)
                .map(|part| g.load_points(&bases[part], self.config.gpu_timeout))
                .collect::<Result<Vec<_>>>()
                .map_err(|e| Self::on_device(&g, e))?,
            _ => Vec::new(),
        };
        let in_g1 = self.config.validate_subgroup;
        Ok(Bases::new(
            self.device,
            bases.to_vec(),
            parts,
            part_len,
            in_g1,
        ))
    }

    /// `sum_i scalars[i] * bases[i]`. `bases` is a slice or `Vec` of points (one scalar
    /// each) or a resident [`Bases`] (its first `scalars.len()` points).
    pub fn msm<B: MsmBases + ?Sized>(&self, bases: &B, scalars: &[Fr]) -> Result<G1Projective> {
        self.msm_with_report(bases, scalars).map(|(r, _)| r)
    }

    /// The MSM and a report of what ran and how long each phase took.
    pub fn msm_with_report<B: MsmBases + ?Sized>(
        &self,
        bases: &B,
        scalars: &[Fr],
    ) -> Result<(G1Projective, MsmReport)> {
        let span = tracing::info_span!(
            "gpu_msm.msm",
            n = scalars.len(),
            backend = tracing::field::Empty
        );
        let _call = span.enter();
        let src = bases.bases_ref();
        self.validate(src, scalars)?;
        let n = scalars.len();
        // The path is decided once for the whole call, slices included.
        let route = self.route_call(n)?;
        let on_gpu = route.0 == Backend::Gpu && n > 0;
        match src {
            BasesRef::Host(points) if on_gpu => {
                if let Some(slice) = self.slice_for(n)? {
                    let host = |_, r| BasesRef::Host(&points[r]);
                    return self.sliced(scalars, slice, &route, host);
                }
            }
            BasesRef::Resident(b) if on_gpu && !self.holds(b) => {
                // Not on this device (loaded while it was lost, or before a new one): the
                // call uploads the set's host copy, sliced to fit as host bases are.
                let points = &b.points()[..n];
                if let Some(slice) = self.slice_for(n)? {
                    let host = |_, r| BasesRef::Host(&points[r]);
                    return self.sliced(scalars, slice, &route, host);
                }
                return self.one_call(BasesRef::Host(points), scalars, route);
            }
            BasesRef::Resident(b) if on_gpu && b.parts() > 1 && n > b.part_len() => {
                let part = |k, _| BasesRef::ResidentPart(b, k);
                return self.sliced(scalars, b.part_len(), &route, part);
            }
            _ => {}
        }
        self.one_call(src, scalars, route)
    }

    /// The path of an n-point call and why: the routing's choice, moved to the CPU when the
    /// device cannot take it now ([`GpuMsm::device_ready`], asked only for GPU calls).
    fn route_call(&self, n: usize) -> Result<(Backend, String)> {
        if n == 0 {
            // Whatever the routing would say: nothing touches the device.
            let why = "n = 0: the empty sum is the zero point; nothing ran";
            return Ok((Backend::CpuDoubleAndAdd, why.into()));
        }
        let (backend, why) =
            routing::route(n, &self.config, self.calibration.as_ref(), &self.adapter);
        if backend != Backend::Gpu {
            return Ok((backend, why));
        }
        Ok(match self.device_ready()? {
            DeviceState::Ready => (backend, why),
            DeviceState::OnCpu(lost) => (Backend::CpuArkworks, format!("{why}; {lost}")),
        })
    }

    /// Whether `b`'s device copy is on this engine's current device.
    fn holds(&self, b: &Bases) -> bool {
        let gpu = self.gpu();
        b.resident()
            .is_some_and(|r| gpu.as_ref().is_some_and(|g| g.holds(r)))
    }

    /// One MSM in one GPU call (or on a CPU path; n = 0 on none), on the path `route`.
    fn one_call(
        &self,
        src: BasesRef<'_>,
        scalars: &[Fr],
        route: (Backend, String),
    ) -> Result<(G1Projective, MsmReport)> {
        match self.prepare(src, scalars, route)? {
            Step::Done(r, rep) => Ok((r, *rep)),
            Step::Gpu(p) => {
                let gpu = self.gpu_context()?;
                let f = self.submit(&gpu, &p, true)?.expect("waited for room");
                let out = self.finish(&gpu, f);
                self.complete(*p, out)
            }
        }
    }

    /// Device bytes one n-point GPU call reserves against the memory budget in a fresh
    /// workspace (its bases uploaded by the call unless `resident`), at the window size the
    /// engine picks for it: what to budget for ([`MsmConfig::memory_budget`]). `None`
    /// without a GPU, or when the call exceeds the adapter's buffer limits.
    pub fn call_memory(&self, n: usize, resident: bool) -> Option<u64> {
        let c = self
            .config
            .window_bits
            .unwrap_or_else(|| best_window_bits(n.max(1)));
        self.gpu()?.call_bytes(n, !resident, c).ok()
    }

    /// Most points, up to n, that one GPU call on host bases takes on this engine's
    /// adapter: within the adapter's buffer limits and within what the memory budget leaves
    /// beside resident bases, each call at its own window size (the cost model's, or
    /// `MsmConfig::window_bits`). `None` without a GPU, zero when not one point fits.
    pub fn max_slice_points(&self, n: usize) -> Option<usize> {
        self.max_call_len(n, true, 0)
    }

    /// The most points, up to n, whose call fits the adapter's limits and the budget with
    /// `reserve` more bytes held (bases uploaded by the call if `host`).
    fn max_call_len(&self, n: usize, host: bool, reserve: u64) -> Option<usize> {
        let gpu = self.gpu()?;
        if n == 0 {
            return Some(0);
        }
        let fits = |m: usize| {
            let c = self
                .config
                .window_bits
                .unwrap_or_else(|| best_window_bits(m.max(1)));
            gpu.fits_call(m, host, c, reserve)
        };
        if fits(n) {
            return Some(n);
        }
        // A call's footprint grows with its length (a longer call also picks a window at
        // least as large): the largest length that fits, by bisection.
        let (mut lo, mut hi) = (0, n);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }

    /// The slice length when an n-point GPU call on host bases must run in slices (larger
    /// than [`MsmConfig::max_slice_points`] or than one call can hold);
    /// [`MsmError::InputTooLarge`], before any host work, when not one point fits.
    fn slice_for(&self, n: usize) -> Result<Option<usize>> {
        let Some(mut cap) = self.max_slice_points(n) else {
            return Ok(None);
        };
        if let Some(s) = self.config.max_slice_points {
            cap = cap.min(s);
        }
        if cap == 0 {
            return Err(self.too_large_for_budget());
        }
        Ok((n > cap).then_some(cap))
    }

    fn too_large_for_budget(&self) -> MsmError {
        let u = self.memory_usage().unwrap_or_default();
        MsmError::InputTooLarge(format!(
            "not one point's call fits the memory budget of {} bytes ({} held by resident \
             bases; MsmConfig::memory_budget)",
            u.budget, u.resident
        ))
    }

    /// An MSM in slices of at most `slice` points ([`slice_ranges`]; the bases of slice k,
    /// over points `range`, from `bases(k, range)`), one call each, the sums added on the
    /// host; the report adds up the slices' counts and times. A slice's error names its
    /// bases in the caller's numbering.
    fn sliced<'a>(
        &self,
        scalars: &[Fr],
        slice: usize,
        route: &(Backend, String),
        bases: impl Fn(usize, Range<usize>) -> BasesRef<'a>,
    ) -> Result<(G1Projective, MsmReport)> {
        let start = Instant::now();
        let mut sum = G1Projective::zero();
        let mut report: Option<MsmReport> = None;
        let slices = scalars.len().div_ceil(slice);
        for (k, range) in slice_ranges(scalars.len(), slice).enumerate() {
            let (r, rep) = self
                .one_call(
                    bases(k, range.clone()),
                    &scalars[range.clone()],
                    route.clone(),
                )
                .map_err(|e| e.at_offset(range.start))?;
            sum += r;
            report = Some(match report {
                None => rep,
                Some(acc) => acc.plus_slice(rep),
            });
        }
        let mut report = report.expect("at least one slice");
        report.n = scalars.len();
        report.route += &format!("; {slices} slices of at most {slice} points");
        report.phases.total = start.elapsed();
        Ok((sum, report))
    }

    /// Many MSMs over the same resident bases, one per scalar vector (each at most as long
    /// as the bases). The host work of vector k + 1 (digits, bucket plan, upload) runs while
    /// the GPU computes vector k. A bad vector fails the call with [`MsmError::Batch`].
    pub fn batch_msm(&self, bases: &Bases, scalars: &[&[Fr]]) -> Result<Vec<G1Projective>> {
        Ok(self
            .batch_msm_with_reports(bases, scalars)?
            .into_iter()
            .map(|(r, _)| r)
            .collect())
    }

    /// [`GpuMsm::batch_msm`] with each vector's report.
    pub fn batch_msm_with_reports(
        &self,
        bases: &Bases,
        scalars: &[&[Fr]],
    ) -> Result<Vec<(G1Projective, MsmReport)>> {
        let _s = tracing::info_span!("gpu_msm.batch", vectors = scalars.len()).entered();
        let at = |index: usize| {
            move |e: MsmError| MsmError::Batch {
                index,
                source: Box::new(e),
            }
        };
        // Every vector is checked before any work starts.
        for (k, s) in scalars.iter().enumerate() {
            self.validate(BasesRef::Resident(bases), s).map_err(at(k))?;
        }
        if bases.parts() > 1 || !self.holds(bases) {
            // Bases in several device parts, or not on this device: each vector runs as its
            // own call (sliced where it must be), one after the other.
            return scalars
                .iter()
                .enumerate()
                .map(|(k, s)| self.msm_with_report(bases, s).map_err(at(k)))
                .collect();
        }
        // One device for the whole batch (the one of its first GPU vector), even if another
        // call replaces a lost one.
        let mut device: Option<Arc<GpuContext>> = None;
        let mut out: Vec<Option<(G1Projective, MsmReport)>> = vec![None; scalars.len()];
        let mut in_flight: Option<(usize, Box<Prepared>, InFlight)> = None;
        for (k, s) in scalars.iter().enumerate() {
            // The host work of vector k, done while vector k - 1 is in flight, is not part
            // of vector k - 1's report.
            let t = Instant::now();
            let route = self.route_call(s.len()).map_err(at(k))?;
            let step = self
                .prepare(BasesRef::Resident(bases), s, route)
                .map_err(at(k))?;
            let p = match step {
                Step::Done(r, rep) => {
                    out[k] = Some((r, *rep));
                    if let Some((_, pj, _)) = in_flight.as_mut() {
                        pj.overlapped += t.elapsed();
                    }
                    continue;
                }
                Step::Gpu(p) => p,
            };
            if device.is_none() {
                device = Some(self.gpu_context().map_err(at(k))?);
            }
            let gpu = device.as_deref().expect("set above");
            // Waiting for room while holding vector k - 1's could wait forever: when the
            // budget has no room for both, vector k - 1 is collected first.
            let f = match self.submit(gpu, &p, in_flight.is_none()).map_err(at(k))? {
                Some(f) => f,
                None => {
                    let (j, pj, fj) = in_flight.take().expect("only a call in flight waits");
                    let done = self.finish(gpu, fj);
                    out[j] = Some(self.complete(*pj, done).map_err(at(j))?);
                    let f = self.submit(gpu, &p, true).map_err(at(k))?;
                    f.expect("waited for room")
                }
            };
            // Vector k is queued behind the previous one: collect that one now.
            if let Some((j, mut pj, fj)) = in_flight.replace((k, p, f)) {
                pj.overlapped += t.elapsed();
                let tc = Instant::now();
                let done = self.finish(gpu, fj);
                out[j] = Some(self.complete(*pj, done).map_err(at(j))?);
                // ... nor is the previous vector's completion part of vector k's report.
                if let Some((_, pk, _)) = in_flight.as_mut() {
                    pk.overlapped += tc.elapsed();
                }
            }
        }
        if let Some((j, pj, fj)) = in_flight {
            let gpu = device.as_deref().expect("set by the vector in flight");
            let done = self.finish(gpu, fj);
            out[j] = Some(self.complete(*pj, done).map_err(at(j))?);
        }
        Ok(out
            .into_iter()
            .map(|r| r.expect("every vector ran"))
            .collect())
    }

    /// Checks lengths and ownership; returns the bases the call uses.
    fn validate<'a>(&self, bases: BasesRef<'a>, scalars: &[Fr]) -> Result<&'a [G1Affine]> {
        let all = bases.points();
        match bases {
            BasesRef::Host(_) if all.len() != scalars.len() => Err(MsmError::LengthMismatch {
                bases: all.len(),
                scalars: scalars.len(),
            }),
            BasesRef::Resident(_) if scalars.len() > all.len() => Err(MsmError::LengthMismatch {
                bases: all.len(),
                scalars: scalars.len(),
            }),
            BasesRef::Resident(b) | BasesRef::ResidentPart(b, _) if b.device() != self.device => {
                Err(MsmError::ForeignBases)
            }
            BasesRef::ResidentPart(..) if scalars.len() > all.len() => {
                Err(MsmError::LengthMismatch {
                    bases: all.len(),
                    scalars: scalars.len(),
                })
            }
            _ => Ok(&all[..scalars.len()]),
        }
    }

    /// Validation, routing and all host work before the GPU.
    fn prepare<'a>(
        &self,
        src: BasesRef<'a>,
        scalars: &'a [Fr],
        (backend, route): (Backend, String),
    ) -> Result<Step<'a>> {
        let start = Instant::now();
        let bases = self.validate(src, scalars)?;
        let n = scalars.len();
        tracing::Span::current().record("backend", tracing::field::debug(backend));
        let mut report = MsmReport {
            backend,
            route,
            n,
            window_bits: None,
            num_windows: 0,
            num_buckets: 0,
            num_entries: 0,
            gpu_timing: None,
            arithmetic: None,
            adapter: self.adapter_name().to_string(),
            sre: None,
            resident_bases: matches!(src, BasesRef::Resident(_) | BasesRef::ResidentPart(..)),
            buffers_allocated: 0,
            host_time: Duration::ZERO,
            phases: PhaseTimes::default(),
        };
        if n == 0 {
            report.phases.total = start.elapsed();
            report.host_time = report.phases.total;
            return Ok(Step::Done(G1Projective::zero(), Box::new(report)));
        }
        let in_g1 = self.check_call_bases(src, bases, backend)?;
        if backend != Backend::Gpu {
            let t = Instant::now();
            let r = cpu_msm(backend, bases, scalars, in_g1);
            report.phases.window_reduction = t.elapsed();
            report.phases.total = start.elapsed();
            report.host_time = report.phases.total;
            return Ok(Step::Done(r, Box::new(report)));
        }
        if n >= SIGN_BIT as usize {
            return Err(MsmError::InputTooLarge(format!(
                "{n} points; point indices must fit 31 bits"
            )));
        }
        let placement = {
            let _s = tracing::info_span!("gpu_msm.sre_search").entered();
            self.sre.plan(&self.config, bases, scalars, &mut report)
        };
        let gpu_sort = placement.sre.is_none()
            && placement.digits.is_none()
            && self.config.bucket_sort != BucketSort::Host;
        if gpu_sort {
            // Everything per scalar happens on the GPU; the window covers every scalar bit.
            let c = placement
                .c
                .or(self.config.window_bits)
                .unwrap_or_else(|| best_window_bits(n));
            let gpu = self.gpu_context()?;
            let host = matches!(src, BasesRef::Host(_));
            if !gpu.fits_call(n, host, c, 0) {
                // Refused before any upload (one-shot calls were sliced to fit already).
                return Err(MsmError::InputTooLarge(format!(
                    "{n} points on {} bases at c = {c} need more than the adapter's limits \
                     or the memory budget allow ({:?}); run fewer points per call or raise \
                     MsmConfig::memory_budget",
                    if host { "host" } else { "resident" },
                    gpu.memory_usage()
                )));
            }
            let w = num_windows(c);
            report.window_bits = Some(c);
            report.num_windows = w;
            report.num_buckets = w * buckets_per_window(c);
            report.route += "; bucket sort on the GPU";
            return Ok(Step::Gpu(Box::new(Prepared {
                report,
                start,
                bases: src,
                n,
                c,
                plan: PreparedPlan::Gpu,
                scalars,
                merged: Vec::new(),
                overlapped: Duration::ZERO,
            })));
        }
        let (c, plan, merged) = match placement {
            Placement {
                c: Some(c),
                sre: Some(sp),
                ..
            } => self.sre_plan(bases, &sp, c, &mut report)?,
            Placement { c, digits, .. } => {
                let t = Instant::now();
                let _s = tracing::info_span!("gpu_msm.digits").entered();
                let d = match digits {
                    Some(d) => d,
                    None => {
                        let (ints, bits) = scalar_integers(bases, scalars);
                        let c = c.or(self.config.window_bits);
                        let c = c.unwrap_or_else(|| best_window_bits_for(n, bits));
                        DigitMatrix::from_scalar_integers(&ints, c, windows_for_bits(bits, c))
                    }
                };
                let plan = BucketPlan::from_digits(&d);
                report.phases.digits += t.elapsed();
                (d.window_bits, plan, Vec::new())
            }
        };
        report.window_bits = Some(c);
        report.num_windows = plan.num_windows;
        report.num_buckets = plan.total_buckets();
        report.num_entries = plan.entries.len();
        if plan.entries.is_empty() {
            // Every scalar zero (or every base the identity): nothing for the GPU to add, and
            // no convert stage to check host bases, so the host checks them.
            if let BasesRef::Host(_) = src {
                check_bases(bases, false)?;
            }
            report.route += "; no nonzero digit, nothing to add";
            report.phases.total = start.elapsed();
            report.host_time = report.phases.total;
            return Ok(Step::Done(G1Projective::zero(), Box::new(report)));
        }
        Ok(Step::Gpu(Box::new(Prepared {
            report,
            start,
            bases: src,
            n,
            c,
            plan: PreparedPlan::Host(plan),
            scalars,
            merged,
            overlapped: Duration::ZERO,
        })))
    }

    /// The checks a call's `bases` need before `backend` runs them, and whether they are all
    /// known to be in G1. Host bases: on the curve on the CPU paths (the GPU's convert stage
    /// checks them there), and in G1 with `validate_subgroup`. Resident ones were checked on
    /// the curve when loaded; with `validate_subgroup`, the set's bases outside G1 are found
    /// once (at load, or at the first such call) and a call over one of them is refused.
    fn check_call_bases(
        &self,
        src: BasesRef,
        bases: &[G1Affine],
        backend: Backend,
    ) -> Result<bool> {
        let subgroup = self.config.validate_subgroup;
        let (BasesRef::Resident(set) | BasesRef::ResidentPart(set, _)) = src else {
            if backend != Backend::Gpu || subgroup {
                check_bases(bases, subgroup)?;
            }
            return Ok(subgroup);
        };
        let range = src.offset()..src.offset() + bases.len();
        let outside = match subgroup {
            true => Some(set.outside_g1()),
            false => set.outside_g1_if_known(),
        };
        if let Some(i) = outside.and_then(|o| o.iter().find(|i| range.contains(i))) {
            if subgroup {
                let index = i - range.start;
                return Err(MsmError::BaseNotInSubgroup { index });
            }
            return Ok(false);
        }
        Ok(outside.is_some())
    }

    /// The merged points and bucket plan of an SRE placement.
    fn sre_plan(
        &self,
        bases: &[G1Affine],
        sp: &sre::SrePlan,
        c: u32,
        report: &mut MsmReport,
    ) -> Result<(u32, BucketPlan, Vec<G1Affine>)> {
        let tm = Instant::now();
        let merged = {
            let _s = tracing::info_span!("gpu_msm.merged_points", pairs = sp.pairs.len()).entered();
            sre::merged_points(bases, &sp.pairs)
        };
        report.phases.merged_points = tm.elapsed();
        let t = Instant::now();
        let _s = tracing::info_span!("gpu_msm.digits").entered();
        let rows = sp.placement_rows(|k| !merged[k].is_zero());
        if rows.rows() >= SIGN_BIT as usize {
            return Err(MsmError::InputTooLarge(format!(
                "{} points with merged ones; point indices must fit 31 bits",
                rows.rows()
            )));
        }
        let plan = BucketPlan::from_digits(&rows);
        report.phases.digits += t.elapsed();
        Ok((c, plan, merged))
    }

    /// Uploads a prepared call and submits its stages (no wait for the GPU). The call first
    /// waits for room in the memory budget if `wait`; else it returns `None` when there is
    /// none.
    fn submit(&self, gpu: &GpuContext, p: &Prepared, wait: bool) -> Result<Option<InFlight>> {
        let _s = tracing::info_span!("gpu_msm.upload", n = p.n).entered();
        // Resident sets loaded on a device that was lost since are uploaded by the call.
        let points = match p.bases {
            BasesRef::Host(b) => Points::Host(b),
            BasesRef::Resident(b) => match b.resident() {
                Some(r) if gpu.holds(r) => Points::Resident(r, p.n),
                _ => Points::Host(&b.points()[..p.n]),
            },
            BasesRef::ResidentPart(b, k) => match b.part(k) {
                Some(r) if gpu.holds(r) => Points::Resident(r, p.n),
                _ => Points::Host(&p.bases.points()[..p.n]),
            },
        };
        let out = gpu.submit_if(
            &Job {
                points,
                merged: &p.merged,
                plan: match &p.plan {
                    PreparedPlan::Host(plan) => JobPlan::Host(plan),
                    PreparedPlan::Gpu => JobPlan::Gpu {
                        scalars: p.scalars,
                        window_bits: p.c,
                    },
                },
            },
            wait,
            self.config.gpu_timeout,
        );
        out.map_err(|e| Self::on_device(gpu, e))
    }

    /// Waits for a submitted call's window sums.
    fn finish(&self, gpu: &GpuContext, f: InFlight) -> Result<CallOutput> {
        let _s = tracing::info_span!("gpu_msm.gpu").entered();
        if self.hooks.lose_in_flight.swap(false, Ordering::AcqRel) {
            gpu.lose();
        }
        let out = gpu
            .finish(f, self.config.gpu_timeout)
            .map_err(|e| Self::on_device(gpu, e));
        match out {
            Err(MsmError::Timeout(m)) => Err(MsmError::Timeout(m)),
            // Whatever came back, it came from a device that is gone.
            _ if gpu.is_lost() => Err(MsmError::DeviceLost(
                "the device was lost while the call ran".into(),
            )),
            out => out,
        }
    }

    /// The window sums of a finished call, checked and reduced; the report completed.
    fn complete(
        &self,
        p: Prepared,
        gpu_out: Result<CallOutput>,
    ) -> Result<(G1Projective, MsmReport)> {
        let Prepared {
            mut report,
            start,
            bases,
            n,
            c,
            overlapped,
            ..
        } = p;
        let CallOutput {
            sums,
            times,
            bad_base,
        } = gpu_out?;
        if let Some(i) = bad_base {
            // The convert stage found an uploaded base off the curve: the sums mean nothing.
            // The host names the first such base (its check is the same one).
            return Err(match check_bases(&bases.points()[..n], false) {
                Err(e) => e,
                Ok(()) => MsmError::Gpu(format!(
                    "the GPU's check refused base {i}, which the host finds on the curve"
                )),
            });
        }
        let arithmetic = self.gpu_context()?.arithmetic;
        let _wr = tracing::info_span!("gpu_msm.window_reduction").entered();
        let t = Instant::now();
        let window_sums = sums
            .chunks_exact(arithmetic.point_words())
            .map(|w| arithmetic.point_from_shader_words(w))
            .collect::<Option<Vec<_>>>()
            .map_or_else(
                // A sum off the curve: a base outside G1 that met the formulas' exceptional
                // case (every base is on the curve: checked when loaded, or by the convert
                // stage above), or a GPU fault.
                || match check_bases(&bases.points()[..n], true) {
                    Err(e) => Err(e),
                    Ok(()) => Err(MsmError::Gpu(
                        "a window sum came back off the curve or unreduced".into(),
                    )),
                },
                Ok,
            )?;
        let result = cpu::window_reduction(&window_sums, c);
        let ph = &mut report.phases;
        ph.window_reduction = t.elapsed();
        ph.upload = times.upload;
        ph.point_conversion = times.point_conversion;
        ph.bucket_sort = times.bucket_sort;
        if let Some(e) = times.entries {
            report.num_entries = e as usize;
        }
        ph.bucket_accumulation = times.bucket_accumulation;
        ph.bucket_reduction = times.bucket_reduction;
        ph.download = times.download;
        ph.total = start.elapsed().saturating_sub(overlapped);
        report.host_time = ph.total.saturating_sub(times.wait);
        report.buffers_allocated = times.buffers_allocated;
        report.gpu_timing = self.gpu().map(|g| g.timing());
        report.arithmetic = Some(arithmetic);
        tracing::info!(
            target: "gpu_msm",
            timing = ?report.gpu_timing,
            upload_ms = ms(times.upload),
            point_conversion_ms = ms(times.point_conversion),
            bucket_sort_ms = ms(times.bucket_sort),
            bucket_accumulation_ms = ms(times.bucket_accumulation),
            bucket_reduction_ms = ms(times.bucket_reduction),
            download_ms = ms(times.download),
            "gpu phases"
        );
        self.sre.learn(&report);
        Ok((result, report))
    }
}

/// [`MsmError::InvalidConfig`] unless one point's call on host bases fits `gpu`'s limits and
/// memory budget at `config`'s window size (the cost model's for one point without one),
/// and, with `known_answer`, the known-answer test's calls at its window sizes.
fn check_one_point_fits(config: &MsmConfig, gpu: &GpuContext, known_answer: bool) -> Result<()> {
    let c = config.window_bits.unwrap_or_else(|| best_window_bits(1));
    let mut calls = vec![(1, c)];
    if known_answer {
        calls.extend(KAT_WINDOWS.map(|c| (KAT_POINTS, c)));
    }
    for (n, c) in calls {
        if !gpu.fits_budget(n, true, c) {
            return Err(MsmError::InvalidConfig(format!(
                "a {n}-point call at c = {c} does not fit {}'s limits and the memory budget \
                 ({} bytes; MsmConfig::memory_budget, window_bits)",
                gpu.adapter_name(),
                gpu.memory_usage().budget
            )));
        }
    }
    Ok(())
}

fn no_gpu() -> MsmError {
    MsmError::NoAdapter {
        detail: "this engine runs on the CPU only".into(),
    }
}

/// An MSM on a CPU path (equal lengths; `in_g1`: every base is known to be in G1).
fn cpu_msm(backend: Backend, bases: &[G1Affine], scalars: &[Fr], in_g1: bool) -> G1Projective {
    if backend == Backend::CpuDoubleAndAdd {
        let _s = tracing::info_span!("gpu_msm.double_and_add").entered();
        return cpu::double_and_add(bases, scalars);
    }
    let _s = tracing::info_span!("gpu_msm.arkworks_msm").entered();
    cpu::arkworks_msm(bases, scalars, in_g1)
}

/// Whether a coordinate is stored reduced (below p), as every arkworks constructor but
/// `Fq::new_unchecked` leaves it.
fn reduced(x: &Fq) -> bool {
    x.0 < Fq::MODULUS
}

/// `MsmError::InvalidBase` for the first base off the curve or with a coordinate not
/// reduced (the identity is fine); with `subgroup`, `MsmError::BaseNotInSubgroup` for the
/// first one outside G1. The GPU's convert stage makes the same check
/// (`shaders/base_check.wgsl`).
///
/// Why a base outside G1 can never give a wrong sum on the GPU path: the complete short
/// Weierstrass formulas are exact for every pair P, Q unless P - Q has order 2, and then they
/// return (0 : 0 : 0) (Renes, Costello and Batina, 2016). (0 : 0 : 0) absorbs every later
/// addition (each output coordinate is a sum of products with one of its coordinates), so
/// the window sum comes back as (0 : 0 : 0), which is not a point and fails the host's check,
/// and the call ends here. The Edwards profile poisons its exceptional case the same way
/// (`src/gpu/shader/edwards.rs`).
fn check_bases(bases: &[G1Affine], subgroup: bool) -> Result<()> {
    let valid = |p: &G1Affine| p.is_zero() || (reduced(&p.x) && reduced(&p.y) && p.is_on_curve());
    if let Some(index) = bases.par_iter().position_first(|p| !valid(p)) {
        return Err(MsmError::InvalidBase { index });
    }
    if !subgroup {
        return Ok(());
    }
    match bases
        .par_iter()
        .position_first(|p| !p.is_in_correct_subgroup_assuming_on_curve())
    {
        Some(index) => Err(MsmError::BaseNotInSubgroup { index }),
        None => Ok(()),
    }
}

/// Reads the calibration `source` names, if any.
fn load_calibration(source: &CalibrationSource) -> Result<Option<Calibration>> {
    match source {
        CalibrationSource::Defaults => Ok(None),
        CalibrationSource::File(p) => Calibration::load(p).map(Some),
        CalibrationSource::FromEnv => match std::env::var_os(CALIBRATION_ENV) {
            Some(p) if !p.is_empty() => Calibration::load(std::path::Path::new(&p)).map(Some),
            _ => Ok(None),
        },
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl std::fmt::Debug for GpuMsm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuMsm")
            .field("adapter", &self.adapter_name())
            .field("config", &self.config)
            .finish()
    }
}
