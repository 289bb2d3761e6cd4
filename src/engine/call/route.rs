//! Step 3 of a call: its path, decided once for all its slices ([`Route`]: the routing's
//! choice, moved to the CPU while the device cannot take it), and whether its planning may
//! need the host-list stages; `holds`: whether a set's device copy is on this device. The
//! device's readiness is `engine/device.rs`' (`GpuMsm::device_ready`).

use crate::bases::Bases;
use crate::config::{BucketSort, SelfTest, SreMode};
use crate::curve::GpuCurve;
use crate::engine::GpuMsm;
use crate::error::Result;
use crate::report::Backend;
use crate::routing::{self, Route};

/// Whether the GPU can take a call ([`GpuMsm::device_ready`]).
pub(in crate::engine) enum DeviceState {
    /// The device is alive (or there is none and routing knows it).
    Ready,
    /// The device is lost and not replaced now: calls routed to it run on the CPU, for this
    /// reason (said in the report's route).
    OnCpu(String),
}

impl<C: GpuCurve> GpuMsm<C> {
    /// The path of an n-point call and why: the routing's choice, moved to the CPU when the
    /// device cannot take it now ([`GpuMsm::device_ready`], asked only for GPU calls).
    pub(in crate::engine) fn route_call(&self, n: usize) -> Result<Route> {
        if n == 0 {
            // Whatever the routing would say: nothing touches the device.
            let why = "n = 0: the empty sum is the zero point; nothing ran";
            return Ok(Route::new(Backend::CpuDoubleAndAdd, why));
        }
        let route = self.routed(n);
        if route.backend != Backend::Gpu {
            return Ok(route);
        }
        Ok(match self.device_ready()? {
            DeviceState::Ready => route,
            DeviceState::OnCpu(lost) => {
                Route::new(Backend::CpuArkworks, format!("{}; {lost}", route.why))
            }
        })
    }

    /// The routing's choice for an n-point call (n > 0), whatever the device's state.
    pub(in crate::engine) fn routed(&self, n: usize) -> Route {
        routing::route(
            n,
            &self.config,
            self.small_msm_cutoff(),
            self.calibration.as_ref(),
            (&self.adapter, C::NAME),
        )
    }

    /// Whether this engine's calls may plan their buckets on the host (SRE,
    /// `BucketSort::Host`).
    pub(in crate::engine) fn may_plan_on_host(&self) -> bool {
        self.config.sre != SreMode::Off || self.config.bucket_sort == BucketSort::Host
    }

    /// Whether a call's planning may still run the host-list stages' known-answer test (no
    /// verdict on the device yet): overlapped calls then collect the call in flight first.
    pub(in crate::engine) fn host_list_check_pending(&self) -> bool {
        self.may_plan_on_host()
            && self.config.self_test != SelfTest::Off
            && self.gpu().is_some_and(|g| g.host_list_check().is_none())
    }

    /// Whether `b`'s device copy is on this engine's current device.
    pub(in crate::engine) fn holds(&self, b: &Bases<C>) -> bool {
        let gpu = self.gpu();
        b.resident()
            .is_some_and(|r| gpu.as_ref().is_some_and(|g| g.holds(r)))
    }
}
