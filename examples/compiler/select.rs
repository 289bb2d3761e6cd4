//! Which pipelines a run compiles (`--curves`, `--profiles`, `--ops`), and whether a
//! budget's pipeline is among them.

use super::cli::ReportCli;
use super::fail;
use super::jobs::{self, CurveGroup, Job};
use gpu_msm::internals::gpu::ShaderFn;
use gpu_msm::Arithmetic;

/// Whether `--ops` takes `what` (every stage is taken).
pub fn op_selected(cli: &ReportCli, what: jobs::What) -> bool {
    match what {
        jobs::What::Stage(_) => true,
        jobs::What::Op(f) => cli.ops.iter().any(|o| o == "all" || o == f.name()),
    }
}

/// The profile filter of `--profiles`: None for all.
pub type ProfileFilter = Option<Box<dyn Fn(&Job) -> bool>>;

pub fn profile_selection(names: &[String]) -> ProfileFilter {
    if names.iter().any(|n| n == "all") {
        return None;
    }
    let mut wanted: Vec<Arithmetic> = Vec::new();
    let mut default = false;
    for n in names {
        match n.as_str() {
            "default" => default = true,
            "limbs13" => wanted.push(Arithmetic::Limbs13),
            "limbs29" => wanted.push(Arithmetic::Limbs29),
            "limbs29-edwards" => wanted.push(Arithmetic::Limbs29Edwards),
            other => fail(&format!("no profile {other}")),
        }
    }
    Some(Box::new(move |j: &Job| {
        wanted.contains(&j.profile)
            || default && j.profile == jobs::default_profile((j.curve.spec)())
    }))
}

pub fn curve_selection(names: &[String]) -> Vec<&'static CurveGroup> {
    if names.iter().any(|n| n == "all") {
        return jobs::CURVE_GROUPS.iter().collect();
    }
    (names.iter())
        .map(|n| jobs::curve_group(n).unwrap_or_else(|| fail(&format!("no curve group {n}"))))
        .collect()
}

/// Whether this run's selection compiles the pipeline `key` names (a budget's key).
pub fn covers(
    key: &str,
    cli: &ReportCli,
    curves: &[&'static CurveGroup],
    profiles: &ProfileFilter,
) -> bool {
    let words: Vec<&str> = key.split_whitespace().collect();
    let (family, curve, what) = (words[0], words[1], words.get(3).copied().unwrap_or(""));
    let parts = match words.get(4) {
        Some(k) => k.trim_start_matches('x').parse().unwrap_or(0),
        None => 1,
    };
    let Some(group) = curves.iter().find(|c| c.key == curve) else {
        return false;
    };
    let Some(profile) = Arithmetic::ALL
        .into_iter()
        .find(|a| format!("{a:?}") == words[2])
    else {
        return false;
    };
    let probe = Job {
        family: family.to_string(),
        curve: group,
        profile,
        parts: 1,
        what: jobs::What::Op(ShaderFn::FeAdd),
    };
    cli.families.iter().any(|f| f == family)
        && profiles.as_ref().is_none_or(|p| p(&probe))
        && (cli.parts.contains(&parts) || parts == 1)
        && match what.strip_prefix("op:") {
            Some(op) => !cli.stages_only && cli.ops.iter().any(|o| o == "all" || o == op),
            None => !cli.ops_only,
        }
}
