//! What one MSM call did and how long each phase took.

use std::fmt;
use std::time::Duration;

use crate::sre::{SreOptions, SreStats};

/// Which path computed the MSM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// CPU double-and-add with one shared doubling chain (small MSMs).
    CpuDoubleAndAdd,
    /// arkworks' CPU `VariableBaseMSM::msm` (sizes where a calibration found it fastest).
    CpuArkworks,
    /// The GPU Pippenger pipeline.
    Gpu,
}

/// How the GPU phases were timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuTiming {
    /// GPU timestamp queries around each compute pass.
    Timestamps,
    /// Host wall clock around a separate submission per stage (no timestamp support).
    WallClock,
}

/// Wall time of each phase. Phases that did not run are zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PhaseTimes {
    /// Scalars to signed digits and the bucket entry lists (host).
    pub digits: Duration,
    /// SRE pair search, including the `Auto` cost model's pilot searches (host).
    pub sre_search: Duration,
    /// SRE merged points R = P_i +- P_j, one batch (host).
    pub merged_points: Duration,
    /// Packing bases and entries into the staging buffer (host; the device-side copy runs in
    /// the call's one submission, before the first stage).
    pub upload: Duration,
    /// The convert stage (GPU): every uploaded base checked on the curve, and stored in the
    /// profile's form (Limbs32 stores arkworks' form as it is: there it is the check alone).
    pub point_conversion: Duration,
    /// Scalar decomposition and the bucket sort on the GPU (count, prefix sum, scatter).
    pub bucket_sort: Duration,
    /// Bucket accumulation, the point-merging phase (GPU).
    pub bucket_accumulation: Duration,
    /// Bucket reduction to one sum per window (GPU).
    pub bucket_reduction: Duration,
    /// Reading the window sums back.
    pub download: Duration,
    /// Horner over windows (host), or the whole MSM on a CPU path.
    pub window_reduction: Duration,
    /// The whole call.
    pub total: Duration,
}

/// What SRE did in one call.
#[derive(Debug, Clone, PartialEq)]
pub struct SreReport {
    /// The search that ran (or that `Auto` considered).
    pub options: SreOptions,
    /// Its statistics (zero when no search ran).
    pub stats: SreStats,
    /// The merged pairs were used for bucket placement.
    pub applied: bool,
    /// Why: the mode, or the `Auto` cost model's figures.
    pub reason: String,
}

/// Report of one MSM call.
#[derive(Debug, Clone, PartialEq)]
pub struct MsmReport {
    /// The path that ran.
    pub backend: Backend,
    /// Why that path: the calibration's crossover or the default rule.
    pub route: String,
    /// Number of points.
    pub n: usize,
    /// Window size c (GPU path).
    pub window_bits: Option<u32>,
    /// Number of windows (GPU path).
    pub num_windows: u32,
    /// Buckets over all windows (GPU path).
    pub num_buckets: u32,
    /// (bucket, point) entries placed, that is mixed additions in bucket accumulation.
    pub num_entries: usize,
    /// How the GPU phases were timed (GPU path).
    pub gpu_timing: Option<GpuTiming>,
    /// The shaders' field arithmetic (GPU path).
    pub arithmetic: Option<crate::Arithmetic>,
    /// Adapter name.
    pub adapter: String,
    /// SRE, when the mode was not `Off` and the GPU path ran.
    pub sre: Option<SreReport>,
    /// The call ran on resident bases ([`crate::Bases`]).
    pub resident_bases: bool,
    /// GPU buffers the call created: zero in the steady state, where the pooled buffers of
    /// earlier calls are large enough.
    pub buffers_allocated: u32,
    /// Host time: the whole call minus the time the host was blocked waiting for the GPU
    /// (the CPU work a faster GPU cannot hide).
    pub host_time: Duration,
    /// Phase times.
    pub phases: PhaseTimes,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl MsmReport {
    /// This report with the next slice's added: counts and phase times summed, the first
    /// slice's window shape and route kept.
    pub(crate) fn plus_slice(mut self, other: MsmReport) -> MsmReport {
        self.num_entries += other.num_entries;
        self.buffers_allocated += other.buffers_allocated;
        self.host_time += other.host_time;
        let (p, q) = (&mut self.phases, other.phases);
        p.digits += q.digits;
        p.sre_search += q.sre_search;
        p.merged_points += q.merged_points;
        p.upload += q.upload;
        p.point_conversion += q.point_conversion;
        p.bucket_sort += q.bucket_sort;
        p.bucket_accumulation += q.bucket_accumulation;
        p.bucket_reduction += q.bucket_reduction;
        p.download += q.download;
        p.window_reduction += q.window_reduction;
        self
    }
}

impl fmt::Display for MsmReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "backend      {:?} on {}", self.backend, self.adapter)?;
        writeln!(f, "route        {}", self.route)?;
        writeln!(f, "n            {}", self.n)?;
        if let Some(c) = self.window_bits {
            writeln!(
                f,
                "window       c = {c}, {} windows, {} buckets, {} entries",
                self.num_windows, self.num_buckets, self.num_entries
            )?;
        }
        if let Some(s) = &self.sre {
            writeln!(
                f,
                "sre          {} ({}, early stop {:?}): {} pairs, {} additions saved, \
                 redundancy={:.2}%; {}",
                if s.applied { "applied" } else { "not applied" },
                s.options.strategy.name(),
                s.options.early_stop,
                s.stats.pairs,
                s.stats.additions_saved,
                s.stats.redundancy_percent(),
                s.reason
            )?;
        }
        if let Some(t) = self.gpu_timing {
            writeln!(f, "gpu timing   {t:?}")?;
            if let Some(a) = self.arithmetic {
                writeln!(f, "arithmetic   {a:?}")?;
            }
            writeln!(
                f,
                "bases        {}; {} buffers allocated",
                if self.resident_bases {
                    "resident"
                } else {
                    "uploaded by the call"
                },
                self.buffers_allocated
            )?;
        }
        let p = &self.phases;
        let rows = [
            ("digits", p.digits),
            ("sre search", p.sre_search),
            ("merged points", p.merged_points),
            ("upload", p.upload),
            ("point conversion", p.point_conversion),
            ("bucket sort", p.bucket_sort),
            ("bucket accumulation", p.bucket_accumulation),
            ("bucket reduction", p.bucket_reduction),
            ("download", p.download),
            ("window reduction", p.window_reduction),
            ("total", p.total),
            ("host time", self.host_time),
        ];
        for (name, d) in rows {
            writeln!(f, "  {name:<20} {:>10.3} ms", ms(d))?;
        }
        Ok(())
    }
}
