//! The gate on the report: a budget for every pipeline (its instructions, VGPRs, spills and
//! waves as last recorded, and the driver that recorded them), which a change may not pass
//! without the budget file changing with it, in the same commit, where a reviewer sees it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::worker::Row;

/// One pipeline's budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    pub instructions: u32,
    pub vgprs: u32,
    pub spilled_vgprs: u32,
    pub spilled_sgprs: u32,
    /// The fewest waves a SIMD may keep resident.
    pub waves: u32,
    /// The driver and device that recorded it: instructions, VGPRs and waves are compared
    /// on the same driver only (another Mesa compiles otherwise), spills on every driver.
    pub driver: String,
    pub device: String,
}

impl Budget {
    fn of(row: &Row) -> Budget {
        Budget {
            instructions: row.instructions,
            vgprs: row.vgprs,
            spilled_vgprs: row.spilled_vgprs,
            spilled_sgprs: row.spilled_sgprs,
            waves: row.waves,
            driver: row.driver.clone(),
            device: row.device.clone(),
        }
    }
}

/// The budget file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Budgets {
    /// What the file is, for a reader who opens it.
    pub about: String,
    /// Every pipeline's budget, by [`Row::key`].
    pub budgets: BTreeMap<String, Budget>,
}

const ABOUT: &str = "Budgets of the compiler report (examples/compiler_report.rs): every \
    gated pipeline's instructions, VGPRs, spills and waves on RADV's null devices (CI: \
    Debian 12's mesa-vulkan-drivers, Mesa 22.3.6), as `.ci/compiler-report --write` \
    recorded them. .ci/compiler-report fails where a pipeline passes one; a change that \
    moves them rewrites this file in the same commit (docs/PERF.md, \"The shaders as a GPU \
    compiler sees them\").";

fn read(path: &Path) -> Result<Budgets, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes `rows` as the budgets of the pipelines this run covers (`covered(key)`), keeping
/// the file's others (so that runs of different selections fill one file); rows without
/// figures are left out (the gate fails them).
pub fn write(path: &Path, rows: &[Row], covered: impl Fn(&str) -> bool) -> Result<(), String> {
    let mut budgets: BTreeMap<String, Budget> = match path.exists() {
        true => (read(path)?.budgets.into_iter())
            .filter(|(k, _)| !covered(k))
            .collect(),
        false => BTreeMap::new(),
    };
    budgets.extend(
        (rows.iter())
            .filter(|r| r.error.is_none())
            .map(|r| (r.key.clone(), Budget::of(r))),
    );
    let file = Budgets {
        about: ABOUT.to_string(),
        budgets,
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

/// Where `row` passes `b`: spills on any driver; instructions, VGPRs and waves on the one
/// that recorded the budget.
fn overruns(row: &Row, b: &Budget) -> Vec<String> {
    let mut over = Vec::new();
    if row.spilled_vgprs > b.spilled_vgprs || row.spilled_sgprs > b.spilled_sgprs {
        over.push(format!(
            "spills {} VGPRs and {} SGPRs (budget {} and {})",
            row.spilled_vgprs, row.spilled_sgprs, b.spilled_vgprs, b.spilled_sgprs
        ));
    }
    if row.driver != b.driver {
        return over;
    }
    if row.instructions > b.instructions {
        over.push(format!(
            "{} instructions (budget {})",
            row.instructions, b.instructions
        ));
    }
    if row.vgprs > b.vgprs {
        over.push(format!("{} VGPRs (budget {})", row.vgprs, b.vgprs));
    }
    if row.waves < b.waves {
        over.push(format!(
            "{} waves a SIMD (budget at least {})",
            row.waves, b.waves
        ));
    }
    over
}

/// Checks `rows` against the budgets in `path`. `covered(key)` says whether this run
/// compiles the pipeline a budget names (a budget of a pipeline the run covers but did not
/// produce fails: a stage removed or renamed without its budget).
/// With `same_driver`, a budget recorded on another driver fails.
pub fn check(
    path: &Path,
    rows: &[Row],
    covered: impl Fn(&str) -> bool,
    same_driver: bool,
) -> Result<Verdict, String> {
    let file = read(path)?;
    let mut v = Verdict::default();
    for row in rows {
        let key = &row.key;
        if let Some(e) = &row.error {
            v.failures.push(format!("{key}: {e}"));
            continue;
        }
        let Some(b) = file.budgets.get(key) else {
            v.failures.push(format!(
                "{key}: no budget (a new pipeline: record it with .ci/compiler-report --write)"
            ));
            continue;
        };
        let over = overruns(row, b);
        if over.is_empty() && row.driver == b.driver && Budget::of(row) != *b {
            v.notes.push(format!(
                "{key}: under budget ({} instructions, {} VGPRs, {} waves; budget {}, {}, {}): \
                 tighten it with .ci/compiler-report --write",
                row.instructions, row.vgprs, row.waves, b.instructions, b.vgprs, b.waves
            ));
        }
        if row.driver != b.driver {
            let (to, what) = match same_driver {
                true => (&mut v.failures, "record it again on this driver"),
                false => (
                    &mut v.notes,
                    "spills compared, instructions, VGPRs and waves not",
                ),
            };
            to.push(format!(
                "{key}: recorded on {:?}, compiled on {:?}: {what}",
                b.driver, row.driver
            ));
        }
        v.failures
            .extend(over.into_iter().map(|o| format!("{key}: {o}")));
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
