//! `GpuMsm`: the engine a prover holds, and the routing of each call.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ark_bls12_377::{Fr, G1Affine, G1Projective};
use ark_ec::{AffineRepr, VariableBaseMSM};
use rayon::prelude::*;

use crate::calibration::{Calibration, CalibrationSource, CALIBRATION_ENV};
use crate::config::{MsmConfig, SreMode};
use crate::digits::{best_window_bits, pippenger_cost, BucketPlan, DigitMatrix, SIGN_BIT};
use crate::error::{MsmError, Result};
use crate::gpu::field::{affine_upload_words, point_from_shader_words, AFFINE_WORDS, POINT_WORDS};
use crate::gpu::selftest::ShaderOps;
use crate::gpu::GpuContext;
use crate::report::{Backend, MsmReport, PhaseTimes, SreReport};
use crate::sre;
use crate::sre::auto::{self, Rates, DEFAULT_MERGE_NS};
use crate::{cpu, digits};

/// A multi-scalar multiplication engine for BLS12-377 G1 on one wgpu adapter.
///
/// Build it once (adapter, device and pipeline compilation take time) and share it: it is
/// `Send + Sync`, and concurrent calls from several threads are allowed.
pub struct GpuMsm {
    config: MsmConfig,
    gpu: Arc<GpuContext>,
    /// Crossovers for routing, when configured.
    calibration: Option<Calibration>,
    /// Rates measured on this engine's GPU calls, by floor(log2 n), for `SreMode::Auto`.
    rates: Mutex<BTreeMap<u32, Rates>>,
}

impl GpuMsm {
    /// An engine on the best adapter with the default configuration.
    pub fn new() -> Result<Self> {
        Self::with_config(MsmConfig::default())
    }

    /// An engine with `config`.
    pub fn with_config(config: MsmConfig) -> Result<Self> {
        config.validate()?;
        let calibration = load_calibration(&config.calibration)?;
        let gpu = GpuContext::new(&config)?;
        Ok(Self {
            config,
            calibration,
            gpu: Arc::new(gpu),
            rates: Mutex::new(BTreeMap::new()),
        })
    }

    /// An engine with `config` on this engine's device and pipelines (no new adapter or
    /// compilation). `config` must keep the adapter choice and the shader checks.
    pub fn reconfigured(&self, config: MsmConfig) -> Result<Self> {
        config.validate()?;
        if config.adapter != self.config.adapter
            || config.shader_runtime_checks != self.config.shader_runtime_checks
        {
            return Err(MsmError::InvalidConfig(
                "reconfigured() keeps the device: adapter choice and shader checks must match"
                    .into(),
            ));
        }
        Ok(Self {
            calibration: load_calibration(&config.calibration)?,
            config,
            gpu: Arc::clone(&self.gpu),
            rates: Mutex::new(BTreeMap::new()),
        })
    }

    /// The calibration the engine routes by, if one was loaded.
    pub fn calibration(&self) -> Option<&Calibration> {
        self.calibration.as_ref()
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

    /// `sum_i scalars[i] * bases[i]`.
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
        let span = tracing::info_span!(
            "gpu_msm.msm",
            n,
            backend = tracing::field::Empty,
            window_bits = tracing::field::Empty
        );
        let _call = span.enter();
        let (backend, route) = self.route(n);
        span.record("backend", tracing::field::debug(backend));
        let mut report = MsmReport {
            backend,
            route,
            n,
            window_bits: None,
            num_windows: 0,
            num_buckets: 0,
            num_entries: 0,
            gpu_timing: None,
            adapter: self.gpu.adapter_name().to_string(),
            sre: None,
            phases: PhaseTimes::default(),
        };
        if backend != Backend::Gpu {
            check_on_curve(bases)?;
            let t = Instant::now();
            let r = if backend == Backend::CpuDoubleAndAdd {
                let _s = tracing::info_span!("gpu_msm.double_and_add").entered();
                cpu::double_and_add(bases, scalars)
            } else {
                let _s = tracing::info_span!("gpu_msm.arkworks_msm").entered();
                G1Projective::msm(bases, scalars).map_err(|_| MsmError::LengthMismatch {
                    bases: bases.len(),
                    scalars: scalars.len(),
                })?
            };
            report.phases.window_reduction = t.elapsed();
            report.phases.total = start.elapsed();
            return Ok((r, report));
        }
        if n >= SIGN_BIT as usize {
            return Err(MsmError::InputTooLarge(format!(
                "{n} points; point indices must fit 31 bits"
            )));
        }

        // Window size and SRE: fixed by the configuration, or decided by the cost model.
        let Placement { c, digits, sre } = {
            let _s = tracing::info_span!("gpu_msm.sre_search").entered();
            self.plan_sre(bases, scalars, &mut report)
        };
        span.record("window_bits", c);

        let t = Instant::now();
        let (plan, merged) = match &sre {
            None => {
                let _s = tracing::info_span!("gpu_msm.digits").entered();
                let d = digits.unwrap_or_else(|| DigitMatrix::new(bases, scalars, c));
                (BucketPlan::from_digits(&d), Vec::new())
            }
            Some(sp) => {
                let tm = Instant::now();
                let merged = {
                    let _s = tracing::info_span!("gpu_msm.merged_points", pairs = sp.pairs.len())
                        .entered();
                    sre::merged_points(bases, &sp.pairs)
                };
                report.phases.merged_points = tm.elapsed();
                let _s = tracing::info_span!("gpu_msm.digits").entered();
                let rows = sp.placement_rows(|k| !merged[k].is_zero());
                if rows.rows() >= SIGN_BIT as usize {
                    return Err(MsmError::InputTooLarge(format!(
                        "{} points with merged ones; point indices must fit 31 bits",
                        rows.rows()
                    )));
                }
                (BucketPlan::from_digits(&rows), merged)
            }
        };
        report.phases.digits += t.elapsed().saturating_sub(report.phases.merged_points);

        let t = Instant::now();
        let upload_span = tracing::info_span!("gpu_msm.upload").entered();
        let mut points = vec![0u32; (n + merged.len()) * AFFINE_WORDS];
        points
            .par_chunks_mut(AFFINE_WORDS)
            .zip(bases.par_iter().chain(merged.par_iter()))
            .for_each(|(out, p)| affine_upload_words(p, out));
        let pack_time = t.elapsed();
        drop(upload_span);

        let (sums, times) = {
            // Host wall time of the whole GPU submission; the per-stage GPU times follow as
            // events (timestamp queries cannot be spans of the host's clock).
            let _s = tracing::info_span!("gpu_msm.gpu", entries = plan.entries.len()).entered();
            self.gpu.run(&points, &plan)?
        };
        tracing::info!(
            target: "gpu_msm",
            timing = ?self.gpu.timing(),
            upload_ms = ms(times.upload),
            point_conversion_ms = ms(times.point_conversion),
            bucket_accumulation_ms = ms(times.bucket_accumulation),
            bucket_reduction_ms = ms(times.bucket_reduction),
            download_ms = ms(times.download),
            "gpu phases"
        );
        let _wr = tracing::info_span!("gpu_msm.window_reduction").entered();
        let t = Instant::now();
        let window_sums = sums
            .chunks_exact(POINT_WORDS)
            .map(point_from_shader_words)
            .collect::<Option<Vec<_>>>()
            .map_or_else(
                // A sum off the curve: bad input (checked only now, at no cost to good
                // calls) or a GPU fault.
                || match check_on_curve(bases) {
                    Err(e) => Err(e),
                    Ok(()) => Err(MsmError::Gpu(
                        "a window sum came back off the curve or unreduced".into(),
                    )),
                },
                Ok,
            )?;
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
        self.learn_rates(&report);
        Ok((result, report))
    }

    /// The path for an n-point call, and why: the calibration when it is for this adapter,
    /// else the defaults (double-and-add below `small_msm_cutoff`, the GPU from it).
    fn route(&self, n: usize) -> (Backend, String) {
        match &self.calibration {
            Some(cal) if cal.adapter == self.adapter_name() => {
                if n < cal.arkworks_from {
                    let why = format!(
                        "calibrated: n < {} where arkworks overtakes double-and-add",
                        cal.arkworks_from
                    );
                    (Backend::CpuDoubleAndAdd, why)
                } else {
                    match cal.gpu_from {
                        Some(g) if n >= g => (
                            Backend::Gpu,
                            format!("calibrated: n >= {g} where the GPU overtakes the CPU"),
                        ),
                        Some(g) => (
                            Backend::CpuArkworks,
                            format!(
                                "calibrated: {} <= n < {g}, where arkworks is the fastest",
                                cal.arkworks_from
                            ),
                        ),
                        None => (
                            Backend::CpuArkworks,
                            format!(
                                "calibrated: n >= {}, and the GPU never won in the sweep (to n = {})",
                                cal.arkworks_from,
                                cal.rows.last().map_or(0, |r| r.n)
                            ),
                        ),
                    }
                }
            }
            other => {
                let note = match other {
                    Some(cal) => {
                        format!("calibration is for {:?}, not this adapter; ", cal.adapter)
                    }
                    None => String::new(),
                };
                let cutoff = self.config.small_msm_cutoff;
                if n < cutoff {
                    let why = format!("{note}default: n < small_msm_cutoff = {cutoff}");
                    (Backend::CpuDoubleAndAdd, why)
                } else {
                    let why = format!("{note}default: n >= small_msm_cutoff = {cutoff}");
                    (Backend::Gpu, why)
                }
            }
        }
    }

    /// Window size and SRE plan for a GPU call, per `config.sre`; fills the report's SRE part.
    fn plan_sre(&self, bases: &[G1Affine], scalars: &[Fr], report: &mut MsmReport) -> Placement {
        let n = bases.len();
        let c = self
            .config
            .window_bits
            .unwrap_or_else(|| best_window_bits(n));
        let plain = |c, digits| Placement {
            c,
            digits,
            sre: None,
        };
        match self.config.sre {
            SreMode::Off => plain(c, None),
            SreMode::On(opts) => {
                let t = Instant::now();
                let d = DigitMatrix::new(bases, scalars, c);
                report.phases.digits += t.elapsed();
                let plan = sre::search(&d, &opts, None);
                report.phases.sre_search = plan.stats.search_time;
                report.sre = Some(SreReport {
                    options: opts,
                    stats: plan.stats,
                    applied: true,
                    reason: "SRE on by configuration".into(),
                });
                Placement {
                    c,
                    digits: None,
                    sre: Some(plan),
                }
            }
            SreMode::Auto => {
                let rates = self.rates_near(n);
                let dec = auto::decide(bases, scalars, rates, self.config.window_bits);
                let mut rep = SreReport {
                    options: auto::AUTO_OPTIONS,
                    stats: dec.pilot_stats,
                    applied: false,
                    reason: dec.reason.clone(),
                };
                report.phases.sre_search = dec.pilot_time;
                let mut out = plain(dec.plain_window_bits, None);
                if let (true, Some(r)) = (dec.search, rates) {
                    let (plan, digits) = match dec.plan {
                        Some(p) => (p, None),
                        None => {
                            let t = Instant::now();
                            let d = DigitMatrix::new(bases, scalars, dec.window_bits);
                            report.phases.digits += t.elapsed();
                            let p = sre::search(&d, &auto::AUTO_OPTIONS, Some(dec.deadline));
                            report.phases.sre_search += p.stats.search_time;
                            (p, Some(d))
                        }
                    };
                    let st = &plan.stats;
                    let predicted = auto::sre_ns(
                        &r,
                        n,
                        dec.window_bits,
                        st.additions_saved as f64,
                        st.pairs as f64,
                        0.0,
                    );
                    rep.stats = plan.stats;
                    if predicted < dec.plain_ns {
                        rep.applied = true;
                        rep.reason +=
                            &format!("; full search: {:.3} ms predicted with it", predicted / 1e6);
                        out = Placement {
                            c: dec.window_bits,
                            digits: None,
                            sre: Some(plan),
                        };
                    } else {
                        rep.reason += &format!(
                            "; full search found too little ({:.3} ms predicted), plain",
                            predicted / 1e6
                        );
                        // Plain at the best plain window: reuse the digits if they are for it.
                        let c = dec.plain_window_bits;
                        out = plain(c, digits.filter(|d| d.window_bits == c));
                    }
                }
                report.sre = Some(rep);
                out
            }
        }
    }

    /// The rates measured at the size nearest n (log scale), if any.
    fn rates_near(&self, n: usize) -> Option<Rates> {
        let log = n.max(1).ilog2();
        let map = self.rates.lock().ok()?;
        let below = map.range(..=log).next_back();
        let above = map.range(log..).next();
        match (below, above) {
            (Some((&a, ra)), Some((&b, rb))) => Some(if log - a <= b - log { *ra } else { *rb }),
            (Some((_, r)), None) | (None, Some((_, r))) => Some(*r),
            (None, None) => None,
        }
    }

    /// Updates the `Auto` rates from a finished GPU call.
    fn learn_rates(&self, rep: &MsmReport) {
        let (Some(c), true) = (rep.window_bits, rep.num_entries > 0) else {
            return;
        };
        let p = &rep.phases;
        let call = p.total.saturating_sub(p.sre_search + p.merged_points);
        let entry_ns = p.bucket_accumulation.as_nanos() as f64 / rep.num_entries as f64;
        let call_ns_per_mul = call.as_nanos() as f64 / pippenger_cost(rep.n, c) as f64;
        let applied = rep.sre.as_ref().is_some_and(|s| s.applied);
        let Ok(mut map) = self.rates.lock() else {
            return;
        };
        let log = rep.n.max(1).ilog2();
        let prev = map.get(&log).copied();
        let mut merge_ns = prev.map_or(DEFAULT_MERGE_NS, |r| r.merge_ns);
        if let Some(s) = rep
            .sre
            .as_ref()
            .filter(|s| s.applied && s.stats.pairs >= 64)
        {
            merge_ns = p.merged_points.as_nanos() as f64 / s.stats.pairs as f64;
        }
        // Newest measurement weighs half: a warm-up outlier fades within a few calls.
        let mix = |old: Option<f64>, new: f64| old.map_or(new, |o| 0.5 * o + 0.5 * new);
        map.insert(
            log,
            Rates {
                entry_ns: mix(prev.map(|r| r.entry_ns), entry_ns),
                // A call with SRE did less than pippenger_cost: it says nothing about plain.
                call_ns_per_mul: match (applied, prev) {
                    (true, Some(p)) => p.call_ns_per_mul,
                    _ => mix(prev.map(|r| r.call_ns_per_mul), call_ns_per_mul),
                },
                merge_ns,
            },
        );
    }
}

/// What a GPU call places in buckets: window size c, and either an SRE plan or plain digits
/// (`digits`, when already computed at c; else they are computed from the scalars).
struct Placement {
    c: u32,
    digits: Option<DigitMatrix>,
    sre: Option<sre::SrePlan>,
}

/// `MsmError::InvalidBase` for the first base off the curve (the identity is fine).
fn check_on_curve(bases: &[G1Affine]) -> Result<()> {
    match bases.par_iter().position_first(|p| !p.is_on_curve()) {
        Some(index) => Err(MsmError::InvalidBase { index }),
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
            .field("adapter", &self.gpu.adapter_name())
            .field("config", &self.config)
            .finish()
    }
}
