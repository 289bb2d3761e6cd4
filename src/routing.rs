//! Which path runs an n-point MSM, and why: a forced backend, the calibration measured on
//! this adapter, or the defaults (which never send work to a software adapter).

use crate::calibration::Calibration;
use crate::config::MsmConfig;
use crate::report::Backend;

/// What routing needs to know about the engine's adapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdapterFacts {
    /// A GPU adapter: its name, and whether it is a software rasterizer
    /// (`wgpu::DeviceType::Cpu`: lavapipe, llvmpipe, WARP).
    Gpu {
        /// Adapter name.
        name: String,
        /// Software rasterizer.
        software: bool,
    },
    /// No adapter at all: why (the engine runs on the CPU paths).
    None(String),
}

/// The path a call runs on, and why (the report's `route` starts with it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Where the call runs.
    pub backend: Backend,
    /// Why: what decided it, for the report.
    pub why: String,
}

impl Route {
    /// `backend`, for the reason `why`.
    pub fn new(backend: Backend, why: impl Into<String>) -> Self {
        Self {
            backend,
            why: why.into(),
        }
    }
}

/// The path for an n-point call on the curve group `curve` ([`crate::GpuCurve::NAME`]) and
/// the reason, for the report. `cutoff` is the engine's small-MSM cutoff
/// ([`crate::GpuMsm::small_msm_cutoff`]: the config's, or the group's own); `config`'s own
/// `small_msm_cutoff` is not read here. A calibration counts only for its adapter and its
/// curve.
pub fn route(
    n: usize,
    config: &MsmConfig,
    cutoff: usize,
    calibration: Option<&Calibration>,
    (adapter, curve): (&AdapterFacts, &str),
) -> Route {
    if let (Some(b), true) = (config.force_backend, n >= 1) {
        return Route::new(b, "forced by MsmConfig::force_backend");
    }
    // The CPU's own choice: double-and-add below the cutoff, arkworks from it.
    let cpu = |why: String| {
        if n < cutoff {
            Route::new(
                Backend::CpuDoubleAndAdd,
                format!("{why}; n < small_msm_cutoff = {cutoff}"),
            )
        } else {
            Route::new(
                Backend::CpuArkworks,
                format!("{why}; n >= small_msm_cutoff = {cutoff}"),
            )
        }
    };
    let (name, software) = match adapter {
        AdapterFacts::None(why) => return cpu(format!("no GPU adapter ({why})")),
        AdapterFacts::Gpu { name, software } => (name.as_str(), *software),
    };
    let note = match calibration {
        Some(cal) if cal.adapter == name && cal.curve == curve => return calibrated(n, cal),
        Some(cal) if cal.adapter == name => {
            format!("calibration is for {}, not {curve}; ", cal.curve)
        }
        Some(cal) => format!("calibration is for {:?}, not this adapter; ", cal.adapter),
        None => String::new(),
    };
    if software {
        return cpu(format!(
            "{note}{name} is a software adapter with no calibration for it: the CPU is faster \
             (force_backend or a calibration sends work to it)"
        ));
    }
    if n < cutoff {
        let why = format!("{note}default: n < small_msm_cutoff = {cutoff}");
        Route::new(Backend::CpuDoubleAndAdd, why)
    } else {
        let why = format!("{note}default: n >= small_msm_cutoff = {cutoff}");
        Route::new(Backend::Gpu, why)
    }
}

/// Routing by a calibration made on this adapter.
fn calibrated(n: usize, cal: &Calibration) -> Route {
    if n < cal.arkworks_from {
        let why = format!(
            "calibrated: n < {} where arkworks overtakes double-and-add",
            cal.arkworks_from
        );
        return Route::new(Backend::CpuDoubleAndAdd, why);
    }
    match cal.gpu_from {
        Some(g) if n >= g => Route::new(
            Backend::Gpu,
            format!("calibrated: n >= {g} where the GPU overtakes the CPU"),
        ),
        Some(g) => Route::new(
            Backend::CpuArkworks,
            format!(
                "calibrated: {} <= n < {g}, where arkworks is the fastest",
                cal.arkworks_from
            ),
        ),
        None => Route::new(
            Backend::CpuArkworks,
            format!(
                "calibrated: n >= {}, and the GPU never won in the sweep (to n = {})",
                cal.arkworks_from,
                cal.rows.last().map_or(0, |r| r.n)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small-MSM cutoff, as an engine passes it.
    const CUTOFF: usize = 11;

    fn gpu(software: bool) -> AdapterFacts {
        AdapterFacts::Gpu {
            name: "A".into(),
            software,
        }
    }

    #[test]
    fn software_adapters_get_no_work_unless_forced_or_calibrated() {
        let config = MsmConfig::default();
        let c = CUTOFF;
        for (n, want) in [
            (c - 1, Backend::CpuDoubleAndAdd),
            (c, Backend::CpuArkworks),
            (c + 1, Backend::CpuArkworks),
            (1 << 20, Backend::CpuArkworks),
        ] {
            let Route { backend: b, why } =
                route(n, &config, CUTOFF, None, (&gpu(true), "BLS12-377 G1"));
            assert_eq!(b, want, "n = {n}");
            assert!(why.contains("software adapter"), "{why}");
            let Route { backend: b, .. } = route(
                n,
                &config,
                CUTOFF,
                None,
                (&AdapterFacts::None("none".into()), "BLS12-377 G1"),
            );
            assert_eq!(b, want, "no adapter, n = {n}");
        }
        // A hardware adapter gets the GPU from the cutoff on.
        assert_eq!(
            route(c - 1, &config, CUTOFF, None, (&gpu(false), "BLS12-377 G1")).backend,
            Backend::CpuDoubleAndAdd
        );
        assert_eq!(
            route(c, &config, CUTOFF, None, (&gpu(false), "BLS12-377 G1")).backend,
            Backend::Gpu
        );
        // Forced: every n >= 1 (n = 0 needs no path).
        let forced = MsmConfig {
            force_backend: Some(Backend::Gpu),
            ..Default::default()
        };
        for n in [1, 2, c, 1 << 20] {
            let Route { backend: b, why } =
                route(n, &forced, CUTOFF, None, (&gpu(true), "BLS12-377 G1"));
            assert_eq!(b, Backend::Gpu);
            assert!(why.contains("force_backend"));
        }
        assert_ne!(
            route(0, &forced, CUTOFF, None, (&gpu(true), "BLS12-377 G1")).backend,
            Backend::Gpu
        );
        // A calibration for the software adapter itself is obeyed.
        let cal = Calibration {
            format: crate::calibration::CALIBRATION_FORMAT,
            curve: "BLS12-377 G1".into(),
            adapter: "A".into(),
            machine: String::new(),
            arkworks_from: 4,
            gpu_from: Some(100),
            rows: vec![],
        };
        assert_eq!(
            route(
                100,
                &config,
                CUTOFF,
                Some(&cal),
                (&gpu(true), "BLS12-377 G1")
            )
            .backend,
            Backend::Gpu
        );
        assert_eq!(
            route(
                99,
                &config,
                CUTOFF,
                Some(&cal),
                (&gpu(true), "BLS12-377 G1")
            )
            .backend,
            Backend::CpuArkworks
        );
        // Another curve's calibration is not obeyed, and the route says why.
        let Route { backend: b, why } =
            route(100, &config, CUTOFF, Some(&cal), (&gpu(true), "BN254 G1"));
        assert_eq!(b, Backend::CpuArkworks);
        assert!(
            why.contains("calibration is for BLS12-377 G1, not BN254 G1"),
            "{why}"
        );
    }
}
