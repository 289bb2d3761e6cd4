//! What the report compiles: every stage and every self-test function of every arithmetic
//! profile of every curve group, once per GPU family, each stage that reads stored bases
//! also for each count of device parts asked for. One [`Job`] is one pipeline; a worker
//! process compiles it from its command line ([`Job::args`], [`Job::parse`]).

use gpu_msm::internals::curve::CurveSpec;
use gpu_msm::internals::gpu::field::CurveProfile;
use gpu_msm::internals::gpu::{wgsl_modules, ShaderFn};
use gpu_msm::{Arithmetic, GpuCurve};

/// One curve group: its name on the command line and in the tables, and its spec.
#[derive(Debug)]
pub struct CurveGroup {
    pub key: &'static str,
    pub spec: fn() -> &'static CurveSpec,
}

/// Every curve group the engine runs on.
pub const CURVE_GROUPS: [CurveGroup; 6] = [
    CurveGroup {
        key: "bls12-377-g1",
        spec: <ark_bls12_377::g1::Config as GpuCurve>::spec,
    },
    CurveGroup {
        key: "bls12-381-g1",
        spec: <ark_bls12_381::g1::Config as GpuCurve>::spec,
    },
    CurveGroup {
        key: "bn254-g1",
        spec: <ark_bn254::g1::Config as GpuCurve>::spec,
    },
    CurveGroup {
        key: "bls12-377-g2",
        spec: <ark_bls12_377::g2::Config as GpuCurve>::spec,
    },
    CurveGroup {
        key: "bls12-381-g2",
        spec: <ark_bls12_381::g2::Config as GpuCurve>::spec,
    },
    CurveGroup {
        key: "bn254-g2",
        spec: <ark_bn254::g2::Config as GpuCurve>::spec,
    },
];

/// The curve group named `key`.
pub fn curve_group(key: &str) -> Option<&'static CurveGroup> {
    CURVE_GROUPS.iter().find(|c| c.key == key)
}

/// The profiles a curve group runs (the Edwards one only where it has a point of order 2).
pub fn profiles_of(spec: &'static CurveSpec) -> Vec<Arithmetic> {
    (Arithmetic::ALL.into_iter())
        .filter(|a| spec.has_edwards_map() || !a.is_edwards())
        .collect()
}

/// The profile an adapter with 64-bit integers and a large binding gets on `spec` (the
/// engine's default on Vulkan desktop GPUs: `Arithmetic::auto`).
pub fn default_profile(spec: &'static CurveSpec) -> Arithmetic {
    Arithmetic::auto(true, u32::MAX as u64, spec)
}

/// What one pipeline runs: a stage's entry point, or one self-test function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    Stage(&'static str),
    Op(ShaderFn),
}

impl What {
    /// `stage:NAME` or `op:NAME`, as the tables and the budgets name it.
    pub fn key(self) -> String {
        match self {
            What::Stage(e) => format!("stage:{e}"),
            What::Op(f) => format!("op:{}", f.name()),
        }
    }

    /// The pipeline `key` names on `profile`'s modules.
    fn parse(key: &str, profile: CurveProfile) -> Option<What> {
        if let Some(op) = key.strip_prefix("op:") {
            return ShaderFn::ALL
                .into_iter()
                .find(|f| f.name() == op)
                .map(What::Op);
        }
        let entry = key.strip_prefix("stage:")?;
        let all = wgsl_modules(profile);
        (all.iter().flat_map(|m| m.entry_points.iter()))
            .find(|&&e| e == entry)
            .map(|&e| What::Stage(e))
    }
}

/// One pipeline to compile and report.
#[derive(Debug, Clone)]
pub struct Job {
    /// The GPU family (`rdna2`, `rdna3`, or a `RADV_FORCE_FAMILY` name).
    pub family: String,
    pub curve: &'static CurveGroup,
    pub profile: Arithmetic,
    /// Device parts of a resident set one call binds (1 but for the stages that read
    /// stored bases).
    pub parts: u32,
    pub what: What,
}

impl Job {
    /// The job's name in the tables and the budgets: `family curve profile what[ xK]`.
    pub fn key(&self) -> String {
        format!("{} {}", self.family, self.row_key())
    }

    /// The job's name without its family: one row of the table.
    pub fn row_key(&self) -> String {
        let parts = match self.parts {
            1 => String::new(),
            k => format!(" x{k}"),
        };
        format!(
            "{} {:?} {}{parts}",
            self.curve.key,
            self.profile,
            self.what.key()
        )
    }

    /// The worker's command line for this job (after `--worker`).
    pub fn args(&self) -> Vec<String> {
        vec![
            self.family.clone(),
            self.curve.key.to_string(),
            format!("{:?}", self.profile),
            self.parts.to_string(),
            self.what.key(),
        ]
    }

    /// The job [`Job::args`] wrote.
    pub fn parse(args: &[String]) -> Result<Job, String> {
        let [family, curve, profile, parts, what] = args else {
            return Err(format!("a job is 5 words, not {args:?}"));
        };
        let profile = Arithmetic::ALL
            .into_iter()
            .find(|a| format!("{a:?}") == *profile)
            .ok_or_else(|| format!("no profile {profile}"))?;
        let curve = curve_group(curve).ok_or_else(|| format!("no curve group {curve}"))?;
        let on = profile.on((curve.spec)());
        Ok(Job {
            family: family.clone(),
            curve,
            profile,
            parts: parts.parse().map_err(|e| format!("parts {parts}: {e}"))?,
            what: What::parse(what, on).ok_or_else(|| format!("no stage or op {what}"))?,
        })
    }

    /// The profile on its curve, binding `parts` device parts.
    pub fn curve_profile(&self) -> CurveProfile {
        self.profile
            .on((self.curve.spec)())
            .with_base_parts(self.parts)
    }

    /// The WGSL module the job compiles, its entry point and its overridable constants, as
    /// the engine builds them (`src/gpu/pipelines/compile.rs`, `selftest.rs`).
    pub fn source(&self) -> Result<Source, String> {
        let (entry, constants) = match self.what {
            What::Stage(e) => (e, vec![]),
            What::Op(f) => ("selftest", vec![("SELFTEST_OP", f.op() as f64)]),
        };
        let module = wgsl_modules(self.curve_profile())
            .into_iter()
            .find(|m| m.entry_points.contains(&entry))
            .ok_or_else(|| format!("no module has {entry}"))?;
        Ok(Source {
            wgsl: module.source,
            entry,
            constants,
        })
    }
}

/// What one job compiles: a module's WGSL, the entry point, its overridable constants.
pub struct Source {
    pub wgsl: String,
    pub entry: &'static str,
    pub constants: Vec<(&'static str, f64)>,
}

/// Every job of `families` x `curves` x their profiles (or `profiles` where given): every
/// stage at one part, each stage that reads stored bases also at each count of `parts`
/// above 1, and every self-test function.
pub fn jobs(
    families: &[String],
    curves: &[&'static CurveGroup],
    profiles: Option<&[Arithmetic]>,
    parts: &[u32],
    stages: bool,
    ops: bool,
) -> Vec<Job> {
    let mut out = Vec::new();
    for family in families {
        for &curve in curves {
            let spec = (curve.spec)();
            for profile in profiles_of(spec) {
                if profiles.is_some_and(|p| !p.contains(&profile)) {
                    continue;
                }
                let job = |parts, what| Job {
                    family: family.clone(),
                    curve,
                    profile,
                    parts,
                    what,
                };
                if stages {
                    for m in wgsl_modules(profile.on(spec)) {
                        for &e in &m.entry_points {
                            if e == "selftest" {
                                continue;
                            }
                            out.push(job(1, What::Stage(e)));
                            if m.reads_bases.contains(&e) {
                                let more = parts.iter().filter(|&&k| k > 1);
                                out.extend(more.map(|&k| job(k, What::Stage(e))));
                            }
                        }
                    }
                }
                if ops {
                    out.extend(ShaderFn::ALL.map(|f| job(1, What::Op(f))));
                }
            }
        }
    }
    out
}
