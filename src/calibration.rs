//! Measured CPU/GPU crossovers of one machine and adapter, and the routing they give.
//!
//! `examples/crossover.rs` times the three paths (double-and-add, arkworks' CPU MSM, the GPU
//! pipeline) over a sweep of sizes and writes a [`Calibration`] as JSON. An engine given one
//! (by [`crate::MsmConfig::calibration`] or the [`CALIBRATION_ENV`] variable) routes each call:
//! double-and-add below the first crossover, arkworks between the two, the GPU above.

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::config::CalibrationSource;
use crate::error::{MsmError, Result};

/// Environment variable: path of a calibration file, used when the configuration says
/// [`CalibrationSource::FromEnv`] (the default).
pub const CALIBRATION_ENV: &str = "GPU_MSM_CALIBRATION";

/// Version of the file format this crate writes and reads.
pub const CALIBRATION_FORMAT: u32 = 1;

/// One measured size: median times in microseconds (`None`: not measured).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationRow {
    /// Number of points.
    pub n: usize,
    /// Double-and-add.
    pub double_and_add_us: Option<f64>,
    /// arkworks' `VariableBaseMSM::msm`.
    pub arkworks_us: Option<f64>,
    /// The GPU pipeline, whole call.
    pub gpu_us: Option<f64>,
}

/// The crossovers measured on one machine and adapter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// File format version, [`CALIBRATION_FORMAT`].
    pub format: u32,
    /// The curve group measured ([`crate::GpuCurve::NAME`]); the engine uses the file only
    /// for that group. Files from before the curves had none: BLS12-377 G1's.
    #[serde(default = "bls12_377_g1")]
    pub curve: String,
    /// Adapter name the GPU column was measured on; the engine uses the file only on an
    /// adapter of that name.
    pub adapter: String,
    /// Free text: machine, threads, date.
    pub machine: String,
    /// arkworks' MSM is faster than double-and-add from this n on (within the sweep).
    pub arkworks_from: usize,
    /// The GPU is faster than both CPU paths from this n on; `None` if it never was in the
    /// sweep.
    pub gpu_from: Option<usize>,
    /// The measurements.
    pub rows: Vec<CalibrationRow>,
}

/// The smallest n of the sweep from which `faster` wins at every larger measured n, if any;
/// rows must be sorted by n. A row where either time is missing ends the considered range.
pub fn crossover(
    rows: &[CalibrationRow],
    faster: impl Fn(&CalibrationRow) -> Option<bool>,
) -> Option<usize> {
    let measured: Vec<(usize, bool)> = rows
        .iter()
        .map_while(|r| faster(r).map(|f| (r.n, f)))
        .collect();
    let losing_tail_start = measured.iter().rposition(|&(_, f)| !f);
    match losing_tail_start {
        None => measured.first().map(|&(n, _)| n),
        Some(i) => measured.get(i + 1).map(|&(n, _)| n),
    }
}

/// The curve of calibration files written before the engine ran other curves.
fn bls12_377_g1() -> String {
    "BLS12-377 G1".into()
}

impl Calibration {
    /// Reads the calibration `source` names, if any.
    pub(crate) fn of_source(source: &CalibrationSource) -> Result<Option<Calibration>> {
        match source {
            CalibrationSource::Defaults => Ok(None),
            CalibrationSource::File(p) => Self::load(p).map(Some),
            CalibrationSource::FromEnv => match std::env::var_os(CALIBRATION_ENV) {
                Some(p) if !p.is_empty() => Self::load(std::path::Path::new(&p)).map(Some),
                _ => Ok(None),
            },
        }
    }

    /// Builds a calibration of `curve` ([`crate::GpuCurve::NAME`]) from measured rows
    /// (sorted by n here).
    pub fn from_rows(
        curve: &str,
        adapter: &str,
        machine: &str,
        mut rows: Vec<CalibrationRow>,
    ) -> Self {
        rows.sort_by_key(|r| r.n);
        let arkworks_from =
            crossover(&rows, |r| Some(r.arkworks_us? < r.double_and_add_us?)).unwrap_or(usize::MAX);
        let gpu_from = crossover(&rows, |r| {
            let cpu = r
                .arkworks_us?
                .min(r.double_and_add_us.unwrap_or(f64::INFINITY));
            Some(r.gpu_us? < cpu)
        });
        Self {
            curve: curve.into(),
            format: CALIBRATION_FORMAT,
            adapter: adapter.to_string(),
            machine: machine.to_string(),
            arkworks_from,
            gpu_from,
            rows,
        }
    }

    /// Reads a calibration file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| MsmError::InvalidConfig(format!("calibration {}: {e}", path.display())))?;
        let c: Self = serde_json::from_str(&text)
            .map_err(|e| MsmError::InvalidConfig(format!("calibration {}: {e}", path.display())))?;
        if c.format != CALIBRATION_FORMAT {
            return Err(MsmError::InvalidConfig(format!(
                "calibration {}: format {} (this build reads {CALIBRATION_FORMAT})",
                path.display(),
                c.format
            )));
        }
        Ok(c)
    }

    /// Writes the calibration as JSON.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(path, text + "\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: usize, dd: f64, ark: f64, gpu: Option<f64>) -> CalibrationRow {
        CalibrationRow {
            n,
            double_and_add_us: Some(dd),
            arkworks_us: Some(ark),
            gpu_us: gpu,
        }
    }

    #[test]
    fn crossovers_need_a_stable_win() {
        let rows = vec![
            row(2, 10.0, 20.0, Some(500.0)),
            row(8, 40.0, 35.0, Some(500.0)),  // arkworks wins once...
            row(10, 50.0, 55.0, Some(500.0)), // ...then loses again
            row(16, 80.0, 60.0, Some(90.0)),
            row(64, 300.0, 150.0, Some(100.0)),
            row(256, 1200.0, 400.0, Some(110.0)),
        ];
        let c = Calibration::from_rows("C", "test", "here", rows.clone());
        assert_eq!(c.arkworks_from, 16);
        assert_eq!(c.gpu_from, Some(64));
        // Never faster: no crossover.
        let slow: Vec<_> = rows
            .iter()
            .map(|r| CalibrationRow {
                gpu_us: Some(1e9),
                ..r.clone()
            })
            .collect();
        assert_eq!(Calibration::from_rows("C", "t", "m", slow).gpu_from, None);
        // Faster from the first row.
        assert_eq!(crossover(&rows, |_| Some(true)), Some(2));
        // Missing GPU times end the range.
        let mut partial = rows.clone();
        partial[5].gpu_us = None;
        assert_eq!(
            Calibration::from_rows("C", "t", "m", partial.clone()).gpu_from,
            Some(64)
        );
        partial[4].gpu_us = None;
        assert_eq!(
            Calibration::from_rows("C", "t", "m", partial).gpu_from,
            None
        );
    }

    #[test]
    fn files_round_trip_and_bad_ones_are_typed_errors() {
        let dir = std::env::temp_dir().join(format!("gpu-msm-cal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("c.json");
        let c = Calibration::from_rows("C", "A", "M", vec![row(4, 1.0, 2.0, None)]);
        c.save(&p).unwrap();
        assert_eq!(Calibration::load(&p).unwrap(), c);
        std::fs::write(&p, "{ not json").unwrap();
        assert!(matches!(
            Calibration::load(&p),
            Err(MsmError::InvalidConfig(_))
        ));
        let mut other = c.clone();
        other.format = 99;
        other.save(&p).unwrap();
        assert!(Calibration::load(&p).is_err());
        assert!(Calibration::load(&dir.join("missing.json")).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
