//! An engine on several devices ([`crate::MsmConfig::devices`]): one single-device engine
//! per device (device 0's shares the facade's cell, identity and hooks), each call split
//! across them by points in proportion to their weights, resident sets placed in shares (a
//! call on a set follows the placement), batches split the same way, and a share whose
//! device fails rerun on another device (or on the CPU). The host adds the shares' sums.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the devices, their weights (fixed or learned) and the split of n points among them |
//! | `create.rs` | making the devices (at once), the facade over them, `device_names`, `set_device_weights` |
//!
//! A call split across the devices is a driver of the call (`../call/split.rs`, and
//! `../call/split_batch.rs` for a batch); a set placed on them is loaded by `../load.rs`.

use std::future::Future;
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::Duration;

use ark_ec::short_weierstrass::Projective;

use super::GpuMsm;
use crate::bases::BasesRef;
use crate::config::{DeviceLoss, MIN_DEVICE_SHARE};
use crate::curve::GpuCurve;
use crate::error::{MsmError, Result};
use crate::report::{DeviceRun, MsmReport};

mod create;

/// The devices of an engine on several, and what the split learns of them.
pub(super) struct Several<C: GpuCurve> {
    /// One engine per device, each with `Devices::One`.
    pub(in crate::engine) devices: Vec<Arc<GpuMsm<C>>>,
    /// Each device's weight learned from split calls' finish times ([`Several::learn`]);
    /// `None` until one ran a share.
    learned: Mutex<Vec<Option<f64>>>,
    /// The weights [`GpuMsm::set_device_weights`] fixed, over the learned ones.
    fixed: Mutex<Option<Vec<f64>>>,
    /// A lost device is being replaced in the background.
    replacing: Vec<Arc<AtomicBool>>,
    /// Where the next call that uses fewer devices than there are starts.
    turn: AtomicUsize,
}

/// One device's part of a call: its points, in the call's numbering, and their bases.
pub(in crate::engine) struct Share<'a, C: GpuCurve> {
    pub(in crate::engine) device: usize,
    /// The call's points it takes.
    pub(in crate::engine) range: Range<usize>,
    pub(in crate::engine) bases: BasesRef<'a, C>,
    /// Why it runs on this device though its points are another's.
    pub(in crate::engine) rerun: Option<String>,
}

/// How a call on several devices runs its shares at once: on threads of their own (the
/// blocking calls: each share's host work on its own core), or as futures joined in the
/// caller's task (the calls that do not block: the shares' host work one after the other,
/// on the thread that polls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::engine) enum Spread {
    Threads,
    Joined,
}

/// A share's sum and report, and how long it took.
pub(in crate::engine) type Outcome<C> = (Result<(Projective<C>, MsmReport)>, Duration);

/// Whether a share's error is its device's (rerun elsewhere), not its input's.
pub(in crate::engine) fn device_fault(e: &MsmError) -> bool {
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

/// `f` of each item, all at once, in order; `None` where `f` panicked: on threads of their
/// own, the first on this one, and an item whose thread cannot be made runs here too. Never
/// as rayon tasks, even from a rayon worker: one that waited for them would run other tasks
/// of its pool meanwhile, calls among them, which may wait for room in a budget that these
/// items hold. The items' own parallel work runs on the engine's host pool
/// ([`crate::host_pool`]), whose threads wait for nothing.
pub(super) fn each_at_once<I: Sync, T: Send>(
    items: &[I],
    f: impl Fn(&I) -> T + Sync,
) -> Vec<Option<T>> {
    let caught = |item: &I| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(item))).ok();
    std::thread::scope(|s| {
        let caught = &caught;
        let rest: Vec<_> = items
            .iter()
            .skip(1)
            .map(|item| {
                let spawned = std::thread::Builder::new().spawn_scoped(s, move || caught(item));
                spawned.map_err(|_| item)
            })
            .collect();
        let mut out: Vec<Option<T>> = items.first().map(caught).into_iter().collect();
        for h in rest {
            out.push(match h {
                Ok(h) => h.join().ok().flatten(),
                Err(item) => caught(item),
            });
        }
        out
    })
}

/// Each future's output, all polled in the caller's task until every one is done, in
/// order; `None` where polling one panicked (it is not polled again).
pub(super) async fn each_joined<F: Future>(futures: Vec<F>) -> Vec<Option<F::Output>> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<Option<F::Output>>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, o) in futures.iter_mut().zip(out.iter_mut()) {
            if o.is_some() {
                continue;
            }
            let polled = std::panic::catch_unwind(AssertUnwindSafe(|| f.as_mut().poll(cx)));
            match polled {
                Ok(Poll::Ready(v)) => *o = Some(Some(v)),
                Ok(Poll::Pending) => pending = true,
                Err(_) => *o = Some(None),
            }
        }
        match pending {
            true => Poll::Pending,
            false => Poll::Ready(()),
        }
    })
    .await;
    out.into_iter()
        .map(|o| o.expect("every one done"))
        .collect()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `n` split in proportion to `weights` (positive), each length rounded down and the rest
/// given to the largest remainders: the lengths add up to n.
pub(crate) fn proportional(n: usize, weights: &[f64]) -> Vec<usize> {
    // Scaled to at most 1 first, so that huge weights do not add up to infinity.
    let top = weights.iter().copied().fold(0.0, f64::max);
    let weights: Vec<f64> = weights.iter().map(|w| w / top).collect();
    let total: f64 = weights.iter().sum();
    let exact: Vec<f64> = weights.iter().map(|w| n as f64 * w / total).collect();
    let mut lens: Vec<usize> = exact.iter().map(|e| (e.floor() as usize).min(n)).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    // Fewer than one point per weight is left (the floors lose less than 1 each).
    let mut given: usize = lens.iter().sum();
    for &i in &order {
        if given >= n {
            break;
        }
        lens[i] += 1;
        given += 1;
    }
    // Rounding beyond that (not met with finite weights): the rest to the first.
    if given < n {
        lens[0] += n - given;
    }
    lens
}

/// n points split among the devices `weighted` lists with their weights: those of weight
/// above zero (all if none is), at most `n / MIN_DEVICE_SHARE` of them (at least one),
/// taken from the `turn`-th on (so that calls that use fewer devices than there are spread
/// over them), each given a range in proportion to its weight, the ranges in device order.
fn split(n: usize, weighted: &[(usize, f64)], turn: usize) -> Vec<(usize, Range<usize>)> {
    let mut ranked: Vec<(usize, f64)> = weighted
        .iter()
        .copied()
        .filter(|(_, w)| *w > 0.0 && w.is_finite())
        .collect();
    if ranked.is_empty() {
        ranked = weighted.iter().map(|&(k, _)| (k, 1.0)).collect();
    }
    if ranked.is_empty() {
        return Vec::new();
    }
    let turn = turn % ranked.len();
    ranked.rotate_left(turn);
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

impl<C: GpuCurve> Several<C> {
    fn new(devices: Vec<GpuMsm<C>>) -> Self {
        // Each device's engine is on one device: no facade over facades.
        debug_assert!(devices.iter().all(|e| e.several.is_none()));
        let d = devices.len();
        Self {
            devices: devices.into_iter().map(Arc::new).collect(),
            learned: Mutex::new(vec![None; d]),
            fixed: Mutex::new(None),
            replacing: (0..d).map(|_| Arc::default()).collect(),
            turn: AtomicUsize::new(0),
        }
    }

    /// Device k's engine.
    #[cfg(feature = "fault-injection")]
    pub(super) fn device(&self, k: usize) -> Option<&GpuMsm<C>> {
        self.devices.get(k).map(|d| &**d)
    }

    /// The devices that can take a share now; a lost one is replaced in the background
    /// (`DeviceLoss::Recreate`) and left out until it is.
    pub(in crate::engine) fn live(&self) -> Vec<usize> {
        let live: Vec<usize> = (0..self.devices.len()).filter(|&k| !self.lost(k)).collect();
        for k in (0..self.devices.len()).filter(|&k| self.lost(k)) {
            self.replace_in_background(k);
        }
        live
    }

    /// Whether device k is lost now (and not replaced yet).
    fn lost(&self, k: usize) -> bool {
        self.devices[k].gpu().is_none_or(|g| g.is_lost())
    }

    /// The error of a call on lost device k ([`MsmError::Timeout`] when it was taken to be
    /// hung).
    pub(in crate::engine) fn lost_error(&self, k: usize) -> MsmError {
        let what = format!("device {k} is lost");
        match self.devices[k].gpu() {
            Some(g) => g.lost_error(&what),
            None => MsmError::DeviceLost(what),
        }
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
        /// Clears the flag however the attempt ends (a panic too).
        struct Done(Arc<AtomicBool>);
        impl Drop for Done {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let spawned = std::thread::Builder::new()
            .name(format!("gpu-msm device {k} replacement"))
            .spawn(move || {
                let _done = Done(flag);
                let _ = d.device_ready();
            });
        if spawned.is_err() {
            self.replacing[k].store(false, Ordering::Release);
        }
    }

    /// Each device's weight in the split: the fixed weights if set, else the learned ones
    /// once every device in `live` has one, else equal.
    pub(super) fn weights(&self, live: &[usize]) -> Vec<f64> {
        if let Some(f) = lock(&self.fixed).as_ref() {
            return live.iter().map(|&k| f[k]).collect();
        }
        let learned = lock(&self.learned);
        let measured: Option<Vec<f64>> = live.iter().map(|&k| learned[k]).collect();
        measured.unwrap_or_else(|| vec![1.0; live.len()])
    }

    /// n points split among the devices in `live` by their weights ([`split`]), each call
    /// starting one device further on.
    pub(in crate::engine) fn split(&self, n: usize, live: &[usize]) -> Vec<(usize, Range<usize>)> {
        let weighted: Vec<(usize, f64)> = live.iter().copied().zip(self.weights(live)).collect();
        let turn = self.turn.fetch_add(1, Ordering::Relaxed);
        split(n, &weighted, turn)
    }

    /// Learns from a split call's shares `(device, points, time)`, each run on its own
    /// device's GPU: each device's weight moves towards the one that would have made the
    /// shares finish together (its share of the points, scaled by the mean time over its
    /// own). Balancing times, not points per second, keeps a share's fixed cost from
    /// shrinking a device's share further at every call.
    pub(in crate::engine) fn learn(&self, shares: &[(usize, usize, Duration)]) {
        if shares.len() < 2 || shares.iter().any(|s| s.1 == 0 || s.2.is_zero()) {
            return;
        }
        let n: usize = shares.iter().map(|s| s.1).sum();
        let mean = shares.iter().map(|s| s.2.as_secs_f64()).sum::<f64>() / shares.len() as f64;
        let target: Vec<f64> = shares
            .iter()
            .map(|s| s.1 as f64 / n as f64 * mean / s.2.as_secs_f64())
            .collect();
        let mut learned = lock(&self.learned);
        let before: f64 = shares.iter().map(|s| learned[s.0].unwrap_or(1.0)).sum();
        let after: f64 = target.iter().sum();
        for (s, t) in shares.iter().zip(target) {
            let w = t / after * before;
            learned[s.0] = Some(learned[s.0].map_or(w, |old| 0.7 * old + 0.3 * w));
        }
    }

    /// What device k ran.
    pub(in crate::engine) fn run_of(
        &self,
        k: usize,
        sh: &Share<C>,
        rep: &MsmReport,
        time: Duration,
    ) -> DeviceRun {
        DeviceRun {
            device: Some(k),
            adapter: self.devices[k].adapter_name().to_string(),
            points: sh.range.clone(),
            route: format!("{:?}: {}", rep.backend, rep.route),
            time,
            rerun: sh.rerun.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{proportional, split, MIN_DEVICE_SHARE as MIN};
    use proptest::prelude::*;

    #[test]
    fn a_call_takes_one_device_per_min_share_in_turn() {
        let three = [(0, 1.0), (1, 1.0), (2, 1.0)];
        let devices =
            |n, turn| -> Vec<usize> { split(n, &three, turn).iter().map(|s| s.0).collect() };
        assert_eq!(devices(2 * MIN - 1, 0), [0]);
        assert_eq!(devices(2 * MIN - 1, 1), [1]);
        assert_eq!(devices(2 * MIN - 1, 5), [2]);
        assert_eq!(devices(2 * MIN, 1), [1, 2]);
        assert_eq!(devices(2 * MIN, 2), [0, 2]);
        assert_eq!(devices(3 * MIN, 7), [0, 1, 2]);
        assert_eq!(devices(100 * MIN, 0), [0, 1, 2]);
        // Zero weights leave a device out, unless all are zero; no device, no split.
        let weighted = [(0, 0.0), (1, 2.0), (2, 0.0)];
        assert_eq!(split(10 * MIN, &weighted, 0), [(1, 0..10 * MIN)]);
        let zeros = [(4, 0.0), (6, f64::NAN)];
        assert_eq!(
            split(3 * MIN, &zeros, 0),
            [(4, 0..3 * MIN / 2), (6, 3 * MIN / 2..3 * MIN)]
        );
        assert!(split(MIN, &[], 0).is_empty());
        assert_eq!(split(0, &three, 0), []);
    }

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
