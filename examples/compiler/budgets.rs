//! The gate on the report: a budget for every pipeline (its instructions, VGPRs, spills and
//! waves as last recorded), which a change may not pass without the budget file changing
//! with it, in the same commit, where a reviewer sees it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::worker::Row;

/// One pipeline's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    pub instructions: u32,
    pub vgprs: u32,
    pub spilled_vgprs: u32,
    pub spilled_sgprs: u32,
    /// The fewest waves a SIMD may keep resident.
    pub waves: u32,
}

impl Budget {
    fn of(row: &Row) -> Budget {
        Budget {
            instructions: row.instructions,
            vgprs: row.vgprs,
            spilled_vgprs: row.spilled_vgprs,
            spilled_sgprs: row.spilled_sgprs,
            waves: row.waves,
        }
    }
}

/// The budget file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Budgets {
    /// What the file is, for a reader who opens it.
    pub about: String,
    /// The driver the figures were recorded on (instructions and registers are only
    /// compared on the same one; spills everywhere).
    pub driver: String,
    /// Every pipeline's budget, by [`Row::key`].
    pub budgets: BTreeMap<String, Budget>,
}

const ABOUT: &str = "Budgets of the compiler report (examples/compiler_report.rs): every \
    pipeline's instructions, VGPRs, spills and waves on RADV's null device, as recorded by \
    `compiler_report --write-budgets`. .ci/compiler-report fails where a pipeline passes \
    one; a change that moves them rewrites this file in the same commit.";

/// Writes `rows` as the budgets (rows without figures are left out: the gate fails them).
pub fn write(path: &Path, rows: &[Row]) -> Result<(), String> {
    let driver = rows
        .iter()
        .find(|r| r.error.is_none())
        .map(|r| r.driver.clone());
    let file = Budgets {
        about: ABOUT.to_string(),
        driver: driver.unwrap_or_default(),
        budgets: (rows.iter())
            .filter(|r| r.error.is_none())
            .map(|r| (r.key.clone(), Budget::of(r)))
            .collect(),
    };
    let text = serde_json::to_string_pretty(&file).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
}

/// The gate's verdict: what fails it and what is worth saying.
#[derive(Debug, Default)]
pub struct Verdict {
    pub failures: Vec<String>,
    pub notes: Vec<String>,
}

/// Checks `rows` against the budgets in `path`. `covered(key)` says whether this run
/// compiles the pipeline a budget names (a budget of a pipeline the run covers but did not
/// produce fails: a stage removed or renamed without its budget).
pub fn check(path: &Path, rows: &[Row], covered: impl Fn(&str) -> bool) -> Result<Verdict, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file: Budgets =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut v = Verdict::default();
    for row in rows {
        let key = &row.key;
        if let Some(e) = &row.error {
            v.failures.push(format!("{key}: {e}"));
            continue;
        }
        let Some(b) = file.budgets.get(key) else {
            v.failures.push(format!(
                "{key}: no budget (a new pipeline: record it with --write-budgets)"
            ));
            continue;
        };
        let same_driver = row.driver == file.driver;
        let mut fail = |what: String| v.failures.push(format!("{key}: {what}"));
        if row.spilled_vgprs > b.spilled_vgprs || row.spilled_sgprs > b.spilled_sgprs {
            fail(format!(
                "spills {} VGPRs and {} SGPRs (budget {} and {})",
                row.spilled_vgprs, row.spilled_sgprs, b.spilled_vgprs, b.spilled_sgprs
            ));
        }
        if !same_driver {
            continue;
        }
        if row.instructions > b.instructions {
            fail(format!(
                "{} instructions (budget {})",
                row.instructions, b.instructions
            ));
        }
        if row.vgprs > b.vgprs {
            fail(format!("{} VGPRs (budget {})", row.vgprs, b.vgprs));
        }
        if row.waves < b.waves {
            fail(format!(
                "{} waves a SIMD (budget at least {})",
                row.waves, b.waves
            ));
        }
        if Budget::of(row) != *b
            && v.failures
                .last()
                .is_none_or(|f| !f.starts_with(key.as_str()))
        {
            v.notes.push(format!(
                "{key}: under budget ({} instructions, {} VGPRs, {} waves; budget {}, {}, {}): \
                 tighten it with --write-budgets",
                row.instructions, row.vgprs, row.waves, b.instructions, b.vgprs, b.waves
            ));
        }
    }
    if let Some(r) = rows
        .iter()
        .find(|r| r.error.is_none() && r.driver != file.driver)
    {
        v.notes.push(format!(
            "the budgets were recorded on {:?}, this run is on {:?}: spills compared, \
             instructions, VGPRs and waves not",
            file.driver, r.driver
        ));
    }
    for key in file.budgets.keys() {
        if covered(key) && !rows.iter().any(|r| &r.key == key) {
            v.failures.push(format!(
                "{key}: budgeted but not compiled (removed or renamed?)"
            ));
        }
    }
    Ok(v)
}
