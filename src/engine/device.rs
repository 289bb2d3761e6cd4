//! The engine's device over its life: the cell that holds it (shared with
//! [`GpuMsm::reconfigured`] engines), the line of devices it shares with engines of other
//! groups ([`GpuMsm::on_device_of`]), whether a call can use it now, its replacement after a
//! loss ([`DeviceLoss::Recreate`]: tested before any call uses it, backing off after a
//! failure, never blocking a call without a deadline), and the engine that runs the
//! known-answer test on a device no call uses yet.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use super::call::route::DeviceState;
use super::known_answer::{self, KAT_POINTS, KAT_WINDOWS};
use super::GpuMsm;
use crate::config::{
    BucketSort, DeviceLoss, MsmConfig, SelfTest, RECREATE_BACKOFF_MAX, RECREATE_BACKOFF_MIN,
};
use crate::curve::CurveSpec;
use crate::curve::GpuCurve;
use crate::error::{MsmError, Result};
use crate::gpu::device::adapters::AdapterKey;
use crate::gpu::{GpuContext, OpenDevice};

/// [`MsmError::InvalidConfig`] unless one point's call on host bases fits `gpu`'s limits and
/// memory budget at `config`'s window size (the cost model's for one point without one),
/// and, with `known_answer`, the known-answer test's calls at its window sizes.
pub(super) fn check_one_point_fits(
    config: &MsmConfig,
    gpu: &GpuContext,
    known_answer: bool,
) -> Result<()> {
    let c = gpu.call_window(config.window_bits, 1, gpu.profile().curve.scalar_bits);
    let mut calls = vec![(1, c)];
    if known_answer {
        calls.extend(KAT_WINDOWS.map(|c| (KAT_POINTS, c)));
    }
    for (n, c) in calls {
        if !gpu.fits_budget(n, true, c) {
            return Err(MsmError::InvalidConfig(format!(
                "a {n}-point call at c = {c} does not fit {}'s limits and the memory budget \
                 ({} bytes; MsmConfig::memory_budget, window_bits)",
                gpu.adapter_name(),
                gpu.memory_usage().budget
            )));
        }
    }
    Ok(())
}

/// The device that the engines of several groups share ([`GpuMsm::on_device_of`]) over its
/// life: the newest one. An engine's replacement after a loss joins it when another engine
/// on the line has already replaced the lost device, so that they share one device (and one
/// memory budget) again.
pub(super) struct DeviceLine {
    newest: Mutex<OpenDevice>,
    /// The adapter a replacement is made on, when it must be the same one (a device of an
    /// engine on several: `MsmConfig::devices`); else the configuration's choice.
    pinned: Option<AdapterKey>,
}

impl DeviceLine {
    pub(super) fn new(first: OpenDevice) -> Arc<Self> {
        Arc::new(Self {
            newest: Mutex::new(first),
            pinned: None,
        })
    }

    /// A line whose replacements are made on `first`'s adapter, `adapter`.
    pub(super) fn pinned(first: OpenDevice, adapter: AdapterKey) -> Arc<Self> {
        Arc::new(Self {
            pinned: Some(adapter),
            newest: Mutex::new(first),
        })
    }

    /// A context for `curve` with `config` on the line's device, or, when that device is
    /// lost, on a new one that becomes the line's. The device is opened under the line's
    /// lock (engines that meet the same loss make one device between them), the pipelines
    /// compiled after it is released.
    pub(super) fn context(
        &self,
        config: &MsmConfig,
        curve: &'static CurveSpec,
        fits: impl FnOnce(&GpuContext) -> Result<()>,
    ) -> Result<GpuContext> {
        let shared = {
            let mut newest = self.newest.lock().unwrap_or_else(|e| e.into_inner());
            if newest.is_lost() {
                let fresh = match &self.pinned {
                    Some(key) => OpenDevice::open_on(key.find()?, config, Instant::now())?,
                    None => OpenDevice::open(config)?,
                };
                *newest = fresh.joined();
                fresh
            } else {
                newest.joined()
            }
        };
        GpuContext::new_on(shared, config, curve, fits)
    }
}

/// The engine's GPU context, replaced by a new one after a device loss; shared with
/// [`GpuMsm::reconfigured`] engines.
pub(super) struct DeviceCell {
    current: RwLock<Arc<GpuContext>>,
    /// The device's line, shared with the engines of other groups on it.
    pub(super) line: Arc<DeviceLine>,
    /// How a replacement is made and tested: the configuration of the engine that made the
    /// cell (with `with_config`, or `on_device_of`), whichever engine sharing the cell
    /// (its `reconfigured` ones) meets the loss.
    policy: MsmConfig,
    recreation: Mutex<Recreation>,
    /// Signalled when a replacement attempt ends.
    attempt_over: Condvar,
    /// Devices made after a loss.
    recreated: AtomicU64,
    /// A thread of its own is replacing the lost device ([`GpuMsm::replace_in_background`]).
    background: AtomicBool,
    /// Whether calls may replace a lost device: false for the engine that runs a
    /// known-answer test on a device not yet in use, whose calls must fail instead.
    may_recreate: bool,
}

/// Attempts to replace a lost device.
#[derive(Default)]
struct Recreation {
    /// A call is making a replacement now (without holding the lock).
    in_progress: bool,
    /// Failed attempts in a row.
    failures: u32,
    /// No new attempt before this.
    retry_at: Option<Instant>,
    /// Why the last attempt failed.
    last_error: Option<MsmError>,
}

impl DeviceCell {
    /// A cell for `gpu`, on a line of its own.
    pub(super) fn new(gpu: Arc<GpuContext>, policy: MsmConfig, may_recreate: bool) -> Self {
        let line = DeviceLine::new(gpu.open_device());
        Self::on_line(gpu, policy, may_recreate, line)
    }

    /// A cell for `gpu`, a context on `line`'s device.
    pub(super) fn on_line(
        gpu: Arc<GpuContext>,
        policy: MsmConfig,
        may_recreate: bool,
        line: Arc<DeviceLine>,
    ) -> Self {
        Self {
            current: RwLock::new(gpu),
            line,
            policy,
            recreation: Mutex::new(Recreation::default()),
            attempt_over: Condvar::new(),
            recreated: AtomicU64::new(0),
            background: AtomicBool::new(false),
            may_recreate,
        }
    }

    pub(super) fn current(&self) -> Arc<GpuContext> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    fn lock(&self) -> MutexGuard<'_, Recreation> {
        self.recreation.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A lost device not replaced now, `why`: the call on the CPU, or, where the GPU is
/// demanded, [`MsmError::DeviceLost`].
fn lost_for_now(why: String, demanded: bool) -> Result<DeviceState> {
    match demanded {
        false => Ok(DeviceState::OnCpu(format!("{why}: on the CPU"))),
        true => Err(MsmError::DeviceLost(why)),
    }
}

/// Ends a replacement attempt even if making the device panics, so that waiters go on.
struct AttemptGuard<'a>(&'a DeviceCell);

impl Drop for AttemptGuard<'_> {
    fn drop(&mut self) {
        self.0.lock().in_progress = false;
        self.0.attempt_over.notify_all();
    }
}

impl<C: GpuCurve> GpuMsm<C> {
    /// Before a GPU call: whether the device can take it. After a loss, with
    /// [`DeviceLoss::Recreate`], one call makes a new device and runs the known-answer test
    /// on it before it becomes the engine's device. Meanwhile, and until the next attempt
    /// after a failed one (backing off from [`RECREATE_BACKOFF_MIN`]), calls run on the CPU,
    /// or, when the configuration demands the GPU, wait for the attempt at most
    /// `gpu_timeout` ([`MsmError::Timeout`]) or fail with [`MsmError::DeviceLost`] during a
    /// back-off. The call that made a failed attempt gets its error. On one of the engine's
    /// own threads no attempt is made nor waited for (as during a back-off, but starting
    /// none).
    pub(super) fn device_ready(&self) -> Result<DeviceState> {
        let Some(cell) = &self.gpu else {
            return Ok(DeviceState::Ready);
        };
        if !cell.current().is_lost() {
            return Ok(DeviceState::Ready);
        }
        if !cell.may_recreate {
            // The known-answer test's own engine: its calls fail, never move to the CPU.
            return Err(cell
                .current()
                .lost_error("the device under test was lost; it is not replaced"));
        }
        if self.config.device_loss == DeviceLoss::FallBackToCpu {
            return Ok(DeviceState::OnCpu(
                "the device was lost: on the CPU (DeviceLoss::FallBackToCpu)".into(),
            ));
        }
        let demanded = self.config.demands_gpu();
        // A replacement's known-answer test blocks, and so does a wait for another call's
        // attempt, which the engine's own threads may not: no attempt here, so no failure
        // to back off from, and no wait; a thread of its own makes one (calls made only on
        // engine threads would otherwise never see the device again).
        let refused = "the device was lost, and a new one is not made nor waited for";
        if let Some(why) = crate::gpu::device::blocking::not_on_engine_thread(refused) {
            self.replace_in_background(cell);
            return lost_for_now(why, demanded);
        }
        let timeout = self.config.gpu_timeout;
        let deadline = Instant::now().checked_add(timeout);
        let mut state = cell.lock();
        while state.in_progress {
            if !demanded {
                return Ok(DeviceState::OnCpu(
                    "the device was lost and a new one is being made: on the CPU".into(),
                ));
            }
            let left = deadline.map_or(Duration::MAX, |d| {
                d.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return Err(MsmError::Timeout(format!(
                    "waited {timeout:?} for a new device to replace the lost one \
                     (MsmConfig::gpu_timeout)"
                )));
            }
            state = cell
                .attempt_over
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        if !cell.current().is_lost() {
            return Ok(DeviceState::Ready); // another call made it
        }
        let now = Instant::now();
        if let (Some(at), Some(err)) = (state.retry_at, &state.last_error) {
            if now < at {
                let why = format!(
                    "the device was lost and making a new one failed ({err}); the next try \
                     is in {:.1} s",
                    (at - now).as_secs_f64()
                );
                return lost_for_now(why, demanded);
            }
        }
        self.replace_device(cell, state)
    }

    /// Starts one attempt to replace the lost device on a thread of its own (not one of the
    /// engine's), unless one is at it: through an engine on the same cell, as a call on a
    /// caller's thread would. A failed attempt backs off as a call's does.
    fn replace_in_background(&self, cell: &Arc<DeviceCell>) {
        if cell.background.swap(true, Ordering::AcqRel) {
            return;
        }
        /// Clears the flag however the attempt ends.
        struct Done(Arc<DeviceCell>);
        impl Drop for Done {
            fn drop(&mut self) {
                self.0.background.store(false, Ordering::Release);
            }
        }
        let done = Done(Arc::clone(cell));
        let engine = Self::assemble(
            self.config.clone(),
            None,
            Some(Arc::clone(cell)),
            self.adapter.clone(),
        );
        let spawned = std::thread::Builder::new()
            .name("gpu-msm device replacement".into())
            .spawn(move || {
                let _done = done;
                let _ = engine.device_ready();
            });
        if let Err(e) = spawned {
            tracing::warn!(target: "gpu_msm", error = %e, "cannot start a device's replacement");
        }
    }

    /// One attempt to replace the lost device, started under the recreation lock (`state`)
    /// and made without holding it; a failure sets the back-off before the next attempt.
    fn replace_device(
        &self,
        cell: &DeviceCell,
        mut state: MutexGuard<'_, Recreation>,
    ) -> Result<DeviceState> {
        state.in_progress = true;
        drop(state);
        let attempt = AttemptGuard(cell);
        let made = self.new_device(cell);
        let mut state = cell.lock();
        let out = match made {
            Ok(fresh) => {
                *cell.current.write().unwrap_or_else(|e| e.into_inner()) = fresh;
                cell.recreated.fetch_add(1, Ordering::Relaxed);
                *state = Recreation::default();
                Ok(DeviceState::Ready)
            }
            Err(e) => {
                state.failures += 1;
                let doublings = (state.failures - 1).min(16);
                let delay = (RECREATE_BACKOFF_MIN * 2u32.pow(doublings)).min(RECREATE_BACKOFF_MAX);
                state.retry_at = Some(Instant::now() + delay);
                state.last_error = Some(e.clone());
                tracing::warn!(target: "gpu_msm", error = %e, ?delay, "replacing the lost device failed");
                Err(e)
            }
        };
        drop(state);
        drop(attempt);
        out
    }

    /// A replacement context made and tested as the cell's policy says, before anything
    /// uses it: on the device another engine of the line made after the loss, else on a
    /// new one. A context that fails the test is dropped; its device stays, for the other
    /// engines that passed on it and for the next attempt (a fresh device would run the
    /// same shaders on the same adapter).
    fn new_device(&self, cell: &DeviceCell) -> Result<Arc<GpuContext>> {
        let _s = tracing::info_span!("gpu_msm.recreate_device").entered();
        let policy = &cell.policy;
        let known_answer = policy.self_test != SelfTest::Off;
        let fits = |g: &GpuContext| check_one_point_fits(policy, g, known_answer);
        let fresh = Arc::new(cell.line.context(policy, <C as GpuCurve>::spec(), fits)?);
        if !known_answer {
            return Ok(fresh);
        }
        match self.known_answer_test(policy, &fresh, false) {
            Ok(_) => Ok(fresh),
            Err(f) => Err(f.refusal(&fresh)),
        }
    }

    /// Runs the known-answer test of the stages compiled with `gpu`, a device no call uses
    /// yet (at creation, or replacing a lost one), through [`GpuMsm::tester`]. `tamper`:
    /// expect a wrong sum.
    pub(super) fn known_answer_test(
        &self,
        policy: &MsmConfig,
        gpu: &Arc<GpuContext>,
        tamper: bool,
    ) -> std::result::Result<Duration, known_answer::Failure> {
        let tester = self.tester(policy, gpu);
        if self.hooks.lose_in_recreation.swap(false, Ordering::AcqRel) {
            tester.hooks.lose_in_flight.store(true, Ordering::Release);
        }
        known_answer::run(&tester, BucketSort::Gpu, tamper)
    }

    /// An engine of its own on `gpu` with `policy` for a known-answer test: its calls run on
    /// the GPU or fail (a loss during the test fails the test), never wait for a
    /// recreation, and run no known-answer test of their own (`self_test` off).
    pub(super) fn tester(&self, policy: &MsmConfig, gpu: &Arc<GpuContext>) -> GpuMsm<C> {
        let config = MsmConfig {
            self_test: SelfTest::Off,
            ..policy.clone()
        };
        let cell = DeviceCell::new(Arc::clone(gpu), config.clone(), false);
        Self::assemble(config, None, Some(Arc::new(cell)), self.adapter.clone())
    }

    /// How many times the engine has replaced its lost device ([`DeviceLoss::Recreate`]):
    /// with a device it opened, or with the one another engine on its device made first
    /// ([`GpuMsm::on_device_of`]).
    pub fn devices_recreated(&self) -> u64 {
        self.gpu
            .as_ref()
            .map_or(0, |c| c.recreated.load(Ordering::Relaxed))
    }
}
