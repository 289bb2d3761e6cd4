//! The known-answer test: a few small MSMs over adversarial inputs at several window sizes,
//! computed on the GPU path and by arkworks. An engine runs it on its device when it is
//! created, and on every device made to replace a lost one before any call uses it, over the
//! stages compiled with the device (the GPU bucket sort). A device that disagrees (a
//! miscompiled shader, a driver bug) is refused with [`crate::MsmError::SelfTestFailed`], or
//! replaced by the CPU paths, per [`crate::config::SelfTest`].
//!
//! The host-list stages, compiled by the first call that plans its buckets on the host, are
//! tested by that call on the host lists, once per device
//! (`GpuMsm::host_list_stages_ready`): stages that disagree refuse the call, or (falling
//! back, or with the test off) leave it to the device's bucket sort.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::{AffineRepr, VariableBaseMSM};
use ark_ff::{Field, One, Zero};

use super::call::plan::ON_DEVICE;
use super::GpuMsm;
use crate::config::{BucketSort, MsmConfig, SelfTest};
use crate::curve::{Fr, GpuCurve};
use crate::error::{MsmError, Result};
use crate::gpu::{GpuContext, HostListCheck};
use crate::inputs::{random_bases, random_scalars};
use crate::report::Backend;
use crate::routing::AdapterFacts;

/// Points in each known-answer MSM.
pub const KAT_POINTS: usize = 24;

/// Window sizes the known-answer MSMs run at: the smallest the cost model picks, one in the
/// middle, and one whose digits span two 32-bit words.
pub const KAT_WINDOWS: [u32; 3] = [2, 5, 9];

/// Bases with the identity, a duplicate and a P, -P pair; scalars 0, 1, r - 1, 2^(bits - 1), a
/// repeated value and random ones.
pub fn inputs<C: GpuCurve>() -> (Vec<Affine<C>>, Vec<Fr<C>>) {
    let mut bases = random_bases(KAT_POINTS, 0x6b61_7400);
    bases[1] = Affine::<C>::zero();
    bases[3] = bases[2];
    bases[5] = -bases[4];
    let mut scalars = random_scalars(KAT_POINTS, 0x6b61_7401);
    scalars[0] = Fr::<C>::zero();
    scalars[2] = Fr::<C>::one();
    scalars[4] = -Fr::<C>::one();
    scalars[5] = -Fr::<C>::one();
    // The scalar field's top bit (2^252 on BLS12-377, 2^253 on BN254, 2^254 on BLS12-381).
    scalars[6] = Fr::<C>::from(2u64).pow([u64::from(C::spec().scalar_bits) - 1]);
    scalars[7] = scalars[8];
    (bases, scalars)
}

/// Why the known-answer MSMs did not pass.
pub(crate) enum Failure {
    /// A sum disagreed with arkworks', or a call did not run on the GPU: a verdict on the
    /// device's stages.
    Wrong(String),
    /// A call failed before it gave a sum (a loss, a timeout, no room): no verdict.
    Call { detail: String, error: MsmError },
    /// The test's engine could not be made (its configuration): the caller's error as is.
    Config(MsmError),
}

impl Failure {
    /// The error an engine's creation (or a device's replacement) on `gpu` reports: a call
    /// that does not fit is the configuration's fault ([`MsmError::InvalidConfig`]), or,
    /// beside resident sets (of engines sharing the device, `GpuMsm::on_device_of`), a
    /// lack of room now ([`MsmError::InputTooLarge`]); anything else refuses the device
    /// ([`MsmError::SelfTestFailed`]).
    pub(crate) fn refusal(self, gpu: &GpuContext) -> MsmError {
        let detail = match self {
            Failure::Config(error) => return error,
            Failure::Call {
                detail,
                error: MsmError::InputTooLarge(why),
            } => {
                let resident = gpu.memory_usage().resident;
                return match resident {
                    0 => MsmError::InvalidConfig(format!(
                        "the known-answer test's call ({detail}) does not fit: {why}"
                    )),
                    _ => MsmError::InputTooLarge(format!(
                        "the known-answer test's call ({detail}) does not fit beside the \
                         {resident} bytes of resident bases on the device: {why}"
                    )),
                };
            }
            Failure::Wrong(detail) => detail,
            Failure::Call { detail, error } => format!("{detail}: {error}"),
        };
        MsmError::SelfTestFailed {
            adapter: gpu.adapter_name().to_string(),
            detail,
        }
    }
}

/// Runs the known-answer MSMs on `engine`'s GPU path, bucket sort `sort` (the device's
/// stages or the host lists'): the time they took, or why they did not pass. `tamper`
/// changes the expected sums (a test hook for the failure path).
pub(crate) fn run<C: GpuCurve>(
    engine: &GpuMsm<C>,
    sort: BucketSort,
    tamper: bool,
) -> std::result::Result<Duration, Failure> {
    let start = Instant::now();
    let (bases, scalars) = inputs::<C>();
    let want = crate::host_pool::install(|| Projective::<C>::msm(&bases, &scalars));
    let mut want = want.expect("equal lengths");
    if tamper {
        want += Projective::<C>::from(bases[0]);
    }
    for c in KAT_WINDOWS {
        let what = format!("the {KAT_POINTS}-point MSM at c = {c}");
        let e = engine
            .reconfigured(MsmConfig {
                window_bits: Some(c),
                force_backend: Some(Backend::Gpu),
                calibration: crate::config::CalibrationSource::Defaults,
                sre: crate::config::SreMode::Off,
                bucket_sort: sort,
                ..engine.config().clone()
            })
            .map_err(Failure::Config)?;
        match e.msm_with_report(&bases, &scalars) {
            Ok((_, report)) if report.backend != Backend::Gpu => {
                return Err(Failure::Wrong(format!(
                    "{what} did not run on the GPU: {}",
                    report.route
                )))
            }
            // The host lists did not fit and the call ran on the bucket sort: their stages
            // were not tested.
            Ok((_, report)) if sort == BucketSort::Host && report.route.contains(ON_DEVICE) => {
                return Err(Failure::Call {
                    detail: what,
                    error: MsmError::InputTooLarge(format!(
                        "it ran on the bucket sort: {}",
                        report.route
                    )),
                })
            }
            Ok((got, _)) if got == want => {}
            Ok(_) => return Err(Failure::Wrong(format!("{what} is wrong"))),
            Err(error) => {
                return Err(Failure::Call {
                    detail: what,
                    error,
                })
            }
        }
    }
    Ok(start.elapsed())
}

impl<C: GpuCurve> GpuMsm<C> {
    /// The known-answer test on the engine's new device, per `config.self_test`.
    pub(super) fn run_self_test(&mut self, gpu: &Arc<GpuContext>, tamper: bool) -> Result<()> {
        if self.config.self_test == SelfTest::Off {
            return Ok(());
        }
        let _s = tracing::info_span!("gpu_msm.self_test").entered();
        let policy = self.config.clone();
        let detail = match self
            .known_answer_test(&policy, gpu, tamper)
            .map_err(|f| f.refusal(gpu))
        {
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

impl<C: GpuCurve> GpuMsm<C> {
    /// Makes the host-list stages ready on `gpu` before a call that plans its buckets on the
    /// host: compiled on their first use, then checked once per device by the known-answer
    /// MSMs on the host lists (unless `self_test` is off). `Ok(None)`: run the call on them.
    /// `Ok(Some(why))`: run it on the device's bucket sort instead, which passed at creation
    /// (they failed and the policy falls back or is off, or their test cannot run now). They
    /// failed and the policy refuses: [`MsmError::SelfTestFailed`]. Waits for another
    /// thread's compile or test at most `gpu_timeout`.
    ///
    /// Re-entrancy: the test's own engine has `self_test` off, so it never takes the
    /// checking lock its caller holds.
    pub(super) fn host_list_stages_ready(&self, gpu: &Arc<GpuContext>) -> Result<Option<String>> {
        let timeout = self.config.gpu_timeout;
        gpu.build_host_list_stages(timeout)
            .map_err(|e| Self::on_device(gpu, e))?;
        let check = match gpu.host_list_check() {
            Some(c) => c,
            None if self.config.self_test == SelfTest::Off => return Ok(None),
            None => match self.check_host_list_stages(gpu)? {
                Ok(c) => c,
                Err(cannot) => return Ok(Some(cannot)),
            },
        };
        let HostListCheck::Failed(detail) = check else {
            return Ok(None);
        };
        let adapter = self.adapter_name().to_string();
        if self.config.self_test == SelfTest::Refuse {
            return Err(MsmError::SelfTestFailed { adapter, detail });
        }
        Ok(Some(format!(
            "the host-list stages failed the known-answer test on {adapter} ({detail})"
        )))
    }

    /// Runs the host-list stages' known-answer test on `gpu` if no call has yet, and keeps
    /// its verdict. `Ok(Err(why))`: it cannot run now (its calls do not fit beside what is
    /// held): no verdict. A loss or a timeout during it is the caller's error.
    fn check_host_list_stages(
        &self,
        gpu: &Arc<GpuContext>,
    ) -> Result<std::result::Result<HostListCheck, String>> {
        let timeout = self.config.gpu_timeout;
        // Its calls block, which the engine's own threads may not: no verdict yet.
        let test = "the host-list stages' known-answer test does not run";
        if let Some(why) = crate::gpu::device::blocking::not_on_engine_thread(test) {
            return Ok(Err(why));
        }
        gpu.check_host_list_stages_once(timeout, || {
            let tamper = self.hooks.fail_host_list_self_test.load(Ordering::Acquire);
            // Its calls do not wait for room: with none now, no verdict yet (calls in the
            // caller's task may hold it, and cannot give it back while this test waits).
            let tester = GpuMsm {
                waits_for_room: false,
                ..self.tester(&self.config, gpu)
            };
            Ok(Ok(match run(&tester, BucketSort::Host, tamper) {
                Ok(t) => HostListCheck::Passed(t),
                Err(Failure::Wrong(detail)) => HostListCheck::Failed(detail),
                Err(Failure::Call {
                    detail,
                    error: MsmError::InputTooLarge(why) | MsmError::InvalidConfig(why),
                }) => {
                    return Ok(Err(format!(
                        "the host-list stages' known-answer test cannot run now ({detail}: {why})"
                    )))
                }
                Err(Failure::Call { error, .. } | Failure::Config(error)) => return Err(error),
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    type Bls = ark_bls12_377::g1::Config;
    use super::*;
    use ark_bls12_377::Fr;

    #[test]
    fn inputs_are_adversarial_and_the_windows_are_valid() {
        let (bases, scalars) = inputs::<Bls>();
        assert_eq!((bases.len(), scalars.len()), (KAT_POINTS, KAT_POINTS));
        assert!(bases[1].is_zero() && bases[3] == bases[2] && bases[5] == -bases[4]);
        assert!(scalars.contains(&Fr::zero()) && scalars.contains(&-Fr::one()));
        for c in KAT_WINDOWS {
            assert!((crate::config::MIN_WINDOW_BITS..=crate::config::MAX_WINDOW_BITS).contains(&c));
        }
    }
}
