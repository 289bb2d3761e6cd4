//! What one MSM call did and how long each phase took.

use std::fmt;
use std::time::Duration;

pub use crate::config::Backend;
use crate::config::SreOptions;

/// How the GPU phases were timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuTiming {
    /// GPU timestamp queries around each compute pass.
    Timestamps,
    /// Host wall clock around a separate submission per stage (no timestamp support).
    WallClock,
}

/// What a device's memory budget holds now (`GpuMsm::memory_usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// The budget, in bytes.
    pub budget: u64,
    /// Bytes reserved by calls in flight.
    pub in_flight: u64,
    /// Bytes held by idle pooled workspaces.
    pub idle: u64,
    /// Bytes held by resident bases.
    pub resident: u64,
    /// The largest total (in flight + idle + resident) ever admitted.
    pub peak: u64,
    /// How many times a call or a load waited for room.
    pub waits: u64,
}

impl MemoryUsage {
    /// Bytes counted against the budget now.
    pub fn total(&self) -> u64 {
        self.in_flight + self.idle + self.resident
    }
}

/// Where an engine's start-up went ([`crate::GpuMsm::startup`]): from `GpuMsm::new` until
/// the first MSM can start, and what the first call that plans its buckets on the host adds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Startup {
    /// All of it: `GpuMsm::new` (or `with_config`) until it returned.
    pub total: Duration,
    /// Choosing the adapter and creating the device (zero without an adapter).
    pub device: Duration,
    /// Compiling the pipelines every GPU call uses, several at once.
    pub pipelines: Duration,
    /// The known-answer test (`None` when it did not run, or failed and the engine fell
    /// back to the CPU). On a software adapter most of it
    /// is the driver compiling each shader at its first dispatch, seconds on a fresh machine
    /// and little once Mesa's disk cache holds them.
    pub self_test: Option<Duration>,
    /// The host-list stages (accumulation and merge), compiled by the first call that plans
    /// its buckets on the host (SRE, `BucketSort::Host`): `None` until one has.
    pub host_list_stages: Option<Duration>,
    /// Their known-answer test, run by that call after compiling them: `None` until it
    /// passed (not run yet, off, or failed).
    pub host_list_self_test: Option<Duration>,
}

impl fmt::Display for Startup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opt = |t: Option<Duration>, none: &str| t.map_or(none.into(), |t| format!("{t:.2?}"));
        write!(
            f,
            "{:.2?} (device {:.2?}, pipelines {:.2?}, known-answer test {})",
            self.total,
            self.device,
            self.pipelines,
            opt(self.self_test, "not run")
        )?;
        if self.host_list_stages.is_some() {
            write!(
                f,
                "; host-list stages on first use {}, their test {}",
                opt(self.host_list_stages, "-"),
                opt(self.host_list_self_test, "not passed")
            )?;
        }
        Ok(())
    }
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
    /// Packing bases, entries and scalars into the staging buffers (host; the device-side
    /// copies run before the first stage, a streamed chunk's scalars before its count,
    /// while the host writes the next chunk).
    pub upload: Duration,
    /// The convert stage (GPU): every uploaded base checked on the curve, and stored in the
    /// profile's form (a Montgomery radix change, or the Edwards map and precomputation).
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
    /// The whole call, without `stage_setup`.
    pub total: Duration,
    /// Compiling and checking stages on their first use on this device (the first call
    /// that plans its buckets on the host: [`Startup::host_list_stages`]); once per device,
    /// so not part of `total`.
    pub stage_setup: Duration,
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

/// Report of one MSM call. A call split across several devices (`devices` not empty)
/// reports the first share's window shape, profile, SRE and adapter, the shares' counts
/// added, and their phase and host times added: shares run at once, so these may exceed
/// `phases.total`, the call's wall-clock time.
#[derive(Debug, Clone, PartialEq)]
pub struct MsmReport {
    /// The curve group of the call ([`crate::GpuCurve::NAME`]: "BLS12-377 G1").
    pub curve: &'static str,
    /// The path that ran.
    pub backend: Backend,
    /// Why that path: the calibration's crossover or the default rule.
    pub route: String,
    /// Number of points.
    pub n: usize,
    /// Window size c (GPU path).
    pub window_bits: Option<u32>,
    /// Number of windows of buckets (GPU path): the digit windows divided among the
    /// set's shifted copies where it has some (`precomputed_copies`).
    pub num_windows: u32,
    /// Shifted copies of each base the call read (`config::Precompute`): 1 but on the
    /// GPU bucket sort over a resident set loaded with copies.
    pub precomputed_copies: u32,
    /// Buckets over all windows (GPU path).
    pub num_buckets: u32,
    /// (bucket, point) entries placed, that is mixed additions in bucket accumulation.
    pub num_entries: usize,
    /// How the GPU phases were timed (GPU path).
    pub gpu_timing: Option<GpuTiming>,
    /// The shaders' field arithmetic (GPU path).
    pub arithmetic: Option<crate::config::Arithmetic>,
    /// Adapter name.
    pub adapter: String,
    /// SRE, when the mode was not `Off` and the GPU path ran.
    pub sre: Option<SreReport>,
    /// The call ran on resident bases ([`crate::Bases`]).
    pub resident_bases: bool,
    /// GPU buffers the call created: zero in the steady state, where the pooled buffers of
    /// earlier calls are large enough.
    pub buffers_allocated: u32,
    /// Compute dispatches the GPU ran for the call (all slices together; zero off the GPU).
    pub dispatches: u32,
    /// Host time: the whole call minus the time it waited for the GPU (the CPU work a
    /// faster GPU cannot hide; in a call that does not block, what runs on the thread that
    /// polls it).
    pub host_time: Duration,
    /// Phase times.
    pub phases: PhaseTimes,
    /// On an engine on several devices (`MsmConfig::devices`), what each device ran of the
    /// call, in the order of their points; empty on one device.
    pub devices: Vec<DeviceRun>,
}

/// One device of an engine on several, now ([`crate::GpuMsm::device_status`]).
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceStatus {
    /// Its adapter's name.
    pub adapter: String,
    /// Lost and not replaced yet (calls leave it out meanwhile).
    pub lost: bool,
    /// Its weight in the split of calls and sets: `set_device_weights`' if set, else the
    /// one learned from split calls' finish times, else 1 (weights are relative).
    pub weight: f64,
    /// Its memory budget and what holds it now.
    pub memory: Option<MemoryUsage>,
    /// How many times it was replaced after a loss.
    pub recreated: u64,
}

/// What one device of an engine on several ran of a call ([`MsmReport::devices`]).
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceRun {
    /// The device that ran it, by its index among the engine's
    /// ([`crate::GpuMsm::device_names`]); `None`: the CPU ran it, no device could.
    pub device: Option<usize>,
    /// The device's adapter name ("none (the CPU)" without one).
    pub adapter: String,
    /// The call's points it ran (its share), in the call's numbering.
    pub points: std::ops::Range<usize>,
    /// Its path and why (its own call's route).
    pub route: String,
    /// How long its share took, from the split to its sum.
    pub time: Duration,
    /// Why it ran this share though the share was another device's (that device, named
    /// here, failed or was lost); `None` for its own share.
    pub rerun: Option<String>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl std::ops::AddAssign for PhaseTimes {
    /// Every phase's time summed, the total too.
    fn add_assign(&mut self, q: PhaseTimes) {
        let PhaseTimes {
            digits,
            sre_search,
            merged_points,
            upload,
            point_conversion,
            bucket_sort,
            bucket_accumulation,
            bucket_reduction,
            download,
            window_reduction,
            total,
            stage_setup,
        } = q;
        self.digits += digits;
        self.sre_search += sre_search;
        self.merged_points += merged_points;
        self.upload += upload;
        self.point_conversion += point_conversion;
        self.bucket_sort += bucket_sort;
        self.bucket_accumulation += bucket_accumulation;
        self.bucket_reduction += bucket_reduction;
        self.download += download;
        self.window_reduction += window_reduction;
        self.total += total;
        self.stage_setup += stage_setup;
    }
}

impl MsmReport {
    /// This report with the next slice's added: counts and phase times summed (the caller
    /// sets the total; slices overlap, so the phases' sum may exceed it), the first slice's
    /// window shape and route kept.
    pub(crate) fn plus_slice(mut self, other: MsmReport) -> MsmReport {
        self.num_entries += other.num_entries;
        self.buffers_allocated += other.buffers_allocated;
        self.dispatches += other.dispatches;
        self.host_time += other.host_time;
        self.phases += other.phases;
        self
    }
}

impl fmt::Display for MsmReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "curve        {}", self.curve)?;
        writeln!(f, "backend      {:?} on {}", self.backend, self.adapter)?;
        writeln!(f, "route        {}", self.route)?;
        for d in &self.devices {
            let rerun = d
                .rerun
                .as_ref()
                .map_or(String::new(), |r| format!(" ({r})"));
            let on = d.device.map_or("CPU".into(), |k| k.to_string());
            writeln!(
                f,
                "device {on:<5} {}: points {:?} in {:.2?}{rerun}; {}",
                d.adapter, d.points, d.time, d.route
            )?;
        }
        writeln!(f, "n            {}", self.n)?;
        if let Some(c) = self.window_bits {
            let copies = match self.precomputed_copies {
                1 => String::new(),
                k => format!(" (over {k} shifted copies)"),
            };
            writeln!(
                f,
                "window       c = {c}, {} windows{copies}, {} buckets, {} entries",
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
                "bases        {}; {} buffers allocated; {} dispatches",
                if self.resident_bases {
                    "resident"
                } else {
                    "uploaded by the call"
                },
                self.buffers_allocated,
                self.dispatches
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

/// What a search found and what it cost.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SreStats {
    /// Nonzero digits before the search: the additions plain point merging does.
    pub nonzero_digits: u64,
    /// Merged pairs.
    pub pairs: u64,
    /// Windows merged, over all pairs.
    pub merged_windows: u64,
    /// Additions saved: merged windows minus pairs.
    pub additions_saved: u64,
    /// Pair comparisons (array/list searches) or index entries visited (indexed search).
    pub comparisons: u64,
    /// The search stopped at its deadline before finishing.
    pub deadline_hit: bool,
    /// Wall time of the search.
    pub search_time: Duration,
}

impl SreStats {
    /// Additions saved as a share of plain point merging, in percent.
    pub fn redundancy_percent(&self) -> f64 {
        if self.nonzero_digits == 0 {
            0.0
        } else {
            100.0 * self.additions_saved as f64 / self.nonzero_digits as f64
        }
    }
}

impl std::ops::AddAssign for SreStats {
    /// Two searches' statistics together: counts and times summed, a deadline hit by either.
    fn add_assign(&mut self, q: SreStats) {
        let SreStats {
            nonzero_digits,
            pairs,
            merged_windows,
            additions_saved,
            comparisons,
            deadline_hit,
            search_time,
        } = q;
        self.nonzero_digits += nonzero_digits;
        self.pairs += pairs;
        self.merged_windows += merged_windows;
        self.additions_saved += additions_saved;
        self.comparisons += comparisons;
        self.deadline_hit |= deadline_hit;
        self.search_time += search_time;
    }
}
