//! The known-answer test an engine runs on its device when it is created, and on every device
//! made to replace a lost one before any call uses it: a few small MSMs
//! over adversarial inputs at several window sizes, computed on the GPU path and by
//! arkworks. A device that disagrees (a miscompiled shader, a driver bug) is refused with
//! [`crate::MsmError::SelfTestFailed`], or replaced by the CPU paths, per
//! [`crate::config::SelfTest`].

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ark_bls12_377::{Fr, G1Affine, G1Projective};
use ark_ec::{AffineRepr, VariableBaseMSM};
use ark_ff::{Field, One, Zero};

use super::GpuMsm;
use crate::config::{BucketSort, MsmConfig, SelfTest};

use crate::error::{MsmError, Result};
use crate::gpu::GpuContext;
use crate::inputs::{random_bases, random_scalars};
use crate::report::Backend;
use crate::routing::AdapterFacts;

/// Points in each known-answer MSM.
pub const KAT_POINTS: usize = 24;

/// Window sizes the known-answer MSMs run at: the smallest the cost model picks, one in the
/// middle, and one whose digits span two 32-bit words.
pub const KAT_WINDOWS: [u32; 3] = [2, 5, 9];

/// Bases with the identity, a duplicate and a P, -P pair; scalars 0, 1, r - 1, 2^252, a
/// repeated value and random ones.
pub fn inputs() -> (Vec<G1Affine>, Vec<Fr>) {
    let mut bases = random_bases(KAT_POINTS, 0x6b61_7400);
    bases[1] = G1Affine::zero();
    bases[3] = bases[2];
    bases[5] = -bases[4];
    let mut scalars = random_scalars(KAT_POINTS, 0x6b61_7401);
    scalars[0] = Fr::zero();
    scalars[2] = Fr::one();
    scalars[4] = -Fr::one();
    scalars[5] = -Fr::one();
    scalars[6] = Fr::from(2u64).pow([252u64]);
    scalars[7] = scalars[8];
    (bases, scalars)
}

/// Runs the known-answer MSMs on `engine`'s GPU path, bucket sort `sort` (the device's
/// stages or the host lists'): the time they took, or
/// [`MsmError::SelfTestFailed`] saying what disagreed. A call that does not fit the engine's
/// memory budget is [`MsmError::InvalidConfig`] instead: the configuration, not the device,
/// is at fault. `tamper` changes the expected sums (a test hook for the failure path).
pub(crate) fn run(engine: &GpuMsm, sort: BucketSort, tamper: bool) -> Result<Duration> {
    let start = Instant::now();
    let (bases, scalars) = inputs();
    let failed = |detail: String| MsmError::SelfTestFailed {
        adapter: engine.adapter_name().to_string(),
        detail,
    };
    let mut want = G1Projective::msm(&bases, &scalars).expect("equal lengths");
    if tamper {
        want += G1Projective::from(bases[0]);
    }
    for c in KAT_WINDOWS {
        let e = engine.reconfigured(MsmConfig {
            window_bits: Some(c),
            force_backend: Some(Backend::Gpu),
            calibration: crate::CalibrationSource::Defaults,
            sre: crate::SreMode::Off,
            bucket_sort: sort,
            ..engine.config().clone()
        })?;
        match e.msm_with_report(&bases, &scalars) {
            Ok((_, report)) if report.backend != Backend::Gpu => {
                return Err(failed(format!(
                    "the {KAT_POINTS}-point MSM at c = {c} did not run on the GPU: {}",
                    report.route
                )))
            }
            Ok((got, _)) if got == want => {}
            Ok(_) => {
                return Err(failed(format!(
                    "the {KAT_POINTS}-point MSM at c = {c} is wrong"
                )))
            }
            Err(MsmError::InputTooLarge(why)) => {
                return Err(MsmError::InvalidConfig(format!(
                    "the known-answer test's {KAT_POINTS}-point call at c = {c} does not fit: \
                     {why}"
                )))
            }
            Err(err) => {
                return Err(failed(format!(
                    "the {KAT_POINTS}-point MSM at c = {c}: {err}"
                )))
            }
        }
    }
    Ok(start.elapsed())
}

impl GpuMsm {
    /// The known-answer test on the engine's new device, per `config.self_test`.
    pub(super) fn run_self_test(&mut self, gpu: &Arc<GpuContext>, tamper: bool) -> Result<()> {
        if self.config.self_test == SelfTest::Off {
            return Ok(());
        }
        let _s = tracing::info_span!("gpu_msm.self_test").entered();
        let policy = self.config.clone();
        let detail = match self.known_answer_test(&policy, gpu, BucketSort::Gpu, tamper) {
            Ok(t) => {
                self.self_test_time = Some(t);
                return Ok(());
            }
            Err(MsmError::SelfTestFailed { detail, .. }) => detail,
            Err(e) => return Err(e),
        };
        let adapter = self.adapter_name().to_string();
        let fall_back =
            self.config.self_test == SelfTest::FallBackToCpu && !self.config.demands_gpu();
        if !fall_back {
            return Err(MsmError::SelfTestFailed { adapter, detail });
        }
        self.gpu = None;
        self.adapter = AdapterFacts::None(format!(
            "{adapter} failed the known-answer self-test ({detail}); running on the CPU"
        ));
        Ok(())
    }
}

impl GpuMsm {
    /// Makes the host-list stages ready before the first call that plans its buckets on the
    /// host: compiled, then (unless `self_test` is off) checked by the known-answer MSMs on
    /// the host lists, once per device. `Ok(None)`: ready. `Ok(Some(why))`: they failed the
    /// test and the engine falls back ([`SelfTest::FallBackToCpu`]): the call uses the
    /// device's bucket sort, which passed at creation. A failure is
    /// [`MsmError::SelfTestFailed`] otherwise.
    pub(super) fn host_lists_ready(&self) -> Result<Option<String>> {
        let gpu = self.gpu_context()?;
        if self.config.self_test == SelfTest::Off {
            // The known-answer engines too: their caller holds the check below.
            gpu.build_host_list_stages()?;
            return Ok(None);
        }
        let checked = match gpu.host_lists_checked.get() {
            Some(c) => c.clone(),
            None => {
                let _one = gpu
                    .host_lists_checking
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                match gpu.host_lists_checked.get() {
                    Some(c) => c.clone(),
                    None => {
                        gpu.build_host_list_stages()?;
                        let policy = self.config.clone();
                        let tamper = self.hooks.fail_host_list_test.load(Ordering::Acquire);
                        let c =
                            match self.known_answer_test(&policy, &gpu, BucketSort::Host, tamper) {
                                Ok(t) => Ok(t),
                                Err(MsmError::SelfTestFailed { detail, .. }) => Err(detail),
                                // Not a verdict on the stages (a loss, a timeout): the next call
                                // checks again.
                                Err(e) => return Err(e),
                            };
                        let _ = gpu.host_lists_checked.set(c.clone());
                        c
                    }
                }
            }
        };
        let Err(detail) = checked else {
            return Ok(None);
        };
        let adapter = self.adapter_name().to_string();
        if self.config.self_test == SelfTest::FallBackToCpu && !self.config.demands_gpu() {
            return Ok(Some(format!(
                "the host-list stages failed the known-answer test on {adapter} ({detail})"
            )));
        }
        Err(MsmError::SelfTestFailed { adapter, detail })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_adversarial_and_the_windows_are_valid() {
        let (bases, scalars) = inputs();
        assert_eq!((bases.len(), scalars.len()), (KAT_POINTS, KAT_POINTS));
        assert!(bases[1].is_zero() && bases[3] == bases[2] && bases[5] == -bases[4]);
        assert!(scalars.contains(&Fr::zero()) && scalars.contains(&-Fr::one()));
        for c in KAT_WINDOWS {
            assert!((crate::config::MIN_WINDOW_BITS..=crate::config::MAX_WINDOW_BITS).contains(&c));
        }
    }
}
