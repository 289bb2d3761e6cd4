//! One row of the device check's summary table (`.ci/device-check`), appended by the msm and
//! field_rate examples to the file `--table` names: what ran, the phases' times, and for the
//! stages that multiply, field products per second (the call's counts from its plan,
//! `gpu::counts`, over the stage's measured time).

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use gpu_msm::{CallCounts, PhaseMuls};
use gpu_msm::{CurveProfile, MsmReport};

/// The MSM table's header.
pub const MSM_HEADER: &str = "| run | c | copies | parts | ok | timing | total ms | upload ms \
    | sort ms | accumulation ms | reduction ms | host ms | arkworks ms | accumulation Mmul/s \
    | reduction Mmul/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

/// Products of F_p by phase in a call of n points in `parts` equal parts, as the engine
/// planned it (`None` where the counts do not apply: no window, a CPU route).
pub fn phase_muls(report: &MsmReport, profile: CurveProfile, parts: usize) -> Option<PhaseMuls> {
    let c = report.window_bits?;
    let part = report.n.div_ceil(parts.max(1));
    let k = CallCounts::precomputed(part, c, report.precomputed_copies.max(1), profile).ok()?;
    let m = k.field_muls_by_phase();
    let p = parts as u64;
    Some(PhaseMuls {
        accumulation: m.accumulation * p,
        reduction: m.reduction * p,
        other: m.other * p,
    })
}

/// Millions of products per second of `muls` in `time`, or "-" (no count, or no time:
/// a difference of two runs that noise ate).
pub fn rate(muls: Option<u64>, time: Duration) -> String {
    match muls {
        Some(m) if !time.is_zero() => format!("{:.1}", m as f64 / time.as_secs_f64() / 1e6),
        _ => "-".into(),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

/// The MSM row of the last call: `ok` of `runs` matched arkworks.
pub fn msm_row(
    label: &str,
    report: &MsmReport,
    muls: Option<PhaseMuls>,
    parts: usize,
    (ok, runs): (u64, u64),
    arkworks: Duration,
) -> String {
    let p = &report.phases;
    format!(
        "| {label} | {} | {} | {parts} | {ok}/{runs} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        report.window_bits.map_or("-".into(), |c| c.to_string()),
        report.precomputed_copies,
        match report.gpu_timing {
            Some(gpu_msm::GpuTiming::Timestamps) => "timestamps",
            Some(gpu_msm::GpuTiming::WallClock) => "wall clock",
            None => "CPU",
        },
        ms(p.total),
        ms(p.upload),
        ms(p.bucket_sort),
        ms(p.bucket_accumulation),
        ms(p.bucket_reduction),
        ms(report.host_time),
        ms(arkworks),
        rate(muls.map(|m| m.accumulation), p.bucket_accumulation),
        rate(muls.map(|m| m.reduction), p.bucket_reduction),
    )
}

/// Appends `row` to `file`, and `header` first where the file is new or empty.
pub fn append(file: &Path, header: &str, row: &str) -> std::io::Result<()> {
    let new = std::fs::metadata(file).map_or(true, |m| m.len() == 0);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?;
    if new {
        writeln!(f, "{header}")?;
    }
    writeln!(f, "{row}")
}
