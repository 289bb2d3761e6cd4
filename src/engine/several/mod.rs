//! An engine on several devices ([`crate::MsmConfig::devices`]): one single-device engine
//! per device (device 0's shares the facade's cell, identity and hooks), each call split
//! across them by points in proportion to their rates, resident sets placed in shares (a
//! call on a set follows the placement), batches split the same way, and a share whose
//! device fails rerun on another device (or on the CPU). The host adds the shares' sums.

//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the devices, their rates and the split of n points among them |
//! | `create.rs` | making the devices (at once), the facade over them, `device_names`, `set_device_shares` |
//! | `call.rs` | one call split: its shares, run at once, their sums added, a failed share rerun |
//! | `placed.rs` | resident sets placed in shares, and batches on them |

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ark_ec::short_weierstrass::Projective;

use super::GpuMsm;
use crate::bases::BasesRef;
use crate::config::{DeviceLoss, MIN_DEVICE_SHARE};
use crate::curve::GpuCurve;
use crate::error::{MsmError, Result};
use crate::report::{Backend, DeviceRun, MsmReport};

mod call;
mod create;
mod placed;

/// The devices of an engine on several, and what the split learns of them.
pub(super) struct Several<C: GpuCurve> {
    /// One engine per device, each with `Devices::One`.
    devices: Vec<Arc<GpuMsm<C>>>,
    /// Points per second of each device's GPU shares, smoothed; `None` until one ran.
    rates: Mutex<Vec<Option<f64>>>,
    /// The shares [`GpuMsm::set_device_shares`] fixed, over the rates.
    fixed: Mutex<Option<Vec<f64>>>,
    /// A lost device is being replaced in the background.
    replacing: Vec<Arc<AtomicBool>>,
}

/// One device's part of a call: its points, in the call's numbering, and their bases.
struct Share<'a, C: GpuCurve> {
    device: usize,
    points: Range<usize>,
    bases: BasesRef<'a, C>,
    /// Why it runs on this device though its points are another's.
    rerun: Option<String>,
}

/// A share's sum and report, and how long it took.
type Outcome<C> = (Result<(Projective<C>, MsmReport)>, Duration);

/// Whether a share's error is its device's (rerun elsewhere), not its input's.
fn device_fault(e: &MsmError) -> bool {
    matches!(
        e,
        MsmError::DeviceLost(_)
            | MsmError::Timeout(_)
            | MsmError::Gpu(_)
            | MsmError::DeviceRequest(_)
            | MsmError::NoAdapter { .. }
            | MsmError::SelfTestFailed { .. }
    )
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `n` split in proportion to `weights` (positive), each length rounded down and the rest
/// given to the largest remainders: the lengths add up to n.
pub(crate) fn proportional(n: usize, weights: &[f64]) -> Vec<usize> {
    let total: f64 = weights.iter().sum();
    let exact: Vec<f64> = weights.iter().map(|w| n as f64 * w / total).collect();
    let mut lens: Vec<usize> = exact.iter().map(|e| (e.floor() as usize).min(n)).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    let mut given: usize = lens.iter().sum();
    for &i in order.iter().cycle().take(weights.len() * 2) {
        if given >= n {
            break;
        }
        lens[i] += 1;
        given += 1;
    }
    // Rounding beyond the remainders (not met with finite weights): the rest to the first.
    if given < n {
        lens[0] += n - given;
    }
    lens
}

impl<C: GpuCurve> Several<C> {
    fn new(devices: Vec<GpuMsm<C>>) -> Self {
        let d = devices.len();
        Self {
            devices: devices.into_iter().map(Arc::new).collect(),
            rates: Mutex::new(vec![None; d]),
            fixed: Mutex::new(None),
            replacing: (0..d).map(|_| Arc::default()).collect(),
        }
    }

    /// Device k's engine.
    #[cfg(feature = "fault-injection")]
    pub(super) fn device(&self, k: usize) -> Option<&GpuMsm<C>> {
        self.devices.get(k).map(|d| &**d)
    }

    /// The devices that can take a share now; a lost one is replaced in the background
    /// (`DeviceLoss::Recreate`) and left out until it is.
    fn live(&self) -> Vec<usize> {
        let lost = |k: usize| self.devices[k].gpu().is_none_or(|g| g.is_lost());
        let live: Vec<usize> = (0..self.devices.len()).filter(|&k| !lost(k)).collect();
        for k in (0..self.devices.len()).filter(|&k| lost(k)) {
            self.replace_in_background(k);
        }
        live
    }

    /// Starts replacing lost device k on a thread of its own, unless one is at it.
    fn replace_in_background(&self, k: usize) {
        let d = &self.devices[k];
        if d.config.device_loss != DeviceLoss::Recreate || d.gpu.is_none() {
            return;
        }
        if self.replacing[k].swap(true, Ordering::AcqRel) {
            return;
        }
        let (d, flag) = (Arc::clone(d), Arc::clone(&self.replacing[k]));
        let spawned = std::thread::Builder::new()
            .name(format!("gpu-msm device {k} replacement"))
            .spawn(move || {
                let _ = d.device_ready();
                flag.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            self.replacing[k].store(false, Ordering::Release);
        }
    }

    /// Each device's weight in the split: the fixed shares if set, else the measured rates
    /// once every device in `live` has one, else equal.
    fn weights(&self, live: &[usize]) -> Vec<f64> {
        if let Some(f) = lock(&self.fixed).as_ref() {
            return live.iter().map(|&k| f[k]).collect();
        }
        let rates = lock(&self.rates);
        let measured: Option<Vec<f64>> = live.iter().map(|&k| rates[k]).collect();
        measured.unwrap_or_else(|| vec![1.0; live.len()])
    }

    /// n points split among the devices in `live`: at most `n / MIN_DEVICE_SHARE` of them
    /// (at least one), the heaviest, each given a range in proportion to its weight, the
    /// ranges in device order.
    fn split(&self, n: usize, live: &[usize]) -> Vec<(usize, Range<usize>)> {
        let mut ranked: Vec<(usize, f64)> = live
            .iter()
            .copied()
            .zip(self.weights(live))
            .filter(|(_, w)| *w > 0.0 && w.is_finite())
            .collect();
        if ranked.is_empty() {
            ranked = live.iter().map(|&k| (k, 1.0)).collect();
        }
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        ranked.truncate((n / MIN_DEVICE_SHARE).max(1));
        ranked.sort_by_key(|r| r.0);
        let weights: Vec<f64> = ranked.iter().map(|r| r.1).collect();
        let mut at = 0;
        ranked
            .iter()
            .zip(proportional(n, &weights))
            .filter(|(_, len)| *len > 0)
            .map(|(&(k, _), len)| {
                at += len;
                (k, at - len..at)
            })
            .collect()
    }

    /// Learns device k's rate from a share of `len` points that took `time`.
    fn learn(&self, k: usize, len: usize, report: &MsmReport, time: Duration) {
        if report.backend != Backend::Gpu || time.is_zero() {
            return;
        }
        let rate = len as f64 / time.as_secs_f64();
        let mut rates = lock(&self.rates);
        rates[k] = Some(rates[k].map_or(rate, |old| 0.7 * old + 0.3 * rate));
    }

    /// What device k ran.
    fn run_of(&self, k: usize, sh: &Share<C>, rep: &MsmReport, time: Duration) -> DeviceRun {
        DeviceRun {
            device: k,
            adapter: self.devices[k].adapter_name().to_string(),
            points: sh.points.clone(),
            route: format!("{:?}: {}", rep.backend, rep.route),
            time,
            rerun: sh.rerun.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::proportional;
    use proptest::prelude::*;

    proptest! {
        /// The lengths add up to n, each within one point of its exact share.
        #[test]
        fn shares_add_up_and_follow_the_weights(
            n in 0usize..100_000,
            weights in proptest::collection::vec(0.001f64..1000.0, 1..9),
        ) {
            let lens = proportional(n, &weights);
            prop_assert_eq!(lens.iter().sum::<usize>(), n);
            let total: f64 = weights.iter().sum();
            for (len, w) in lens.iter().zip(&weights) {
                let exact = n as f64 * w / total;
                prop_assert!((*len as f64 - exact).abs() < 1.0 + 1e-9, "{} for {}", len, exact);
            }
        }
    }
}
