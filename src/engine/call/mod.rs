//! One MSM call, in the order it runs. Read the files in this order:
//!
//! 1. `mod.rs` (here): the entrance, [`GpuMsm::msm_of`]: the call checked once, then handed
//!    to the driver that runs it: split across several devices, in slices, or whole.
//! 2. `validate.rs`: lengths and ownership checked at the entrance; the bases' checks.
//! 3. `route.rs`: the path of the call, decided once for all its slices ([`Route`]).
//! 4. `plan.rs`: the host work before the GPU: the CPU paths run the call here; the GPU
//!    paths choose the window and plan the buckets (on the device, or on the host).
//! 5. `submit.rs`: the planned call uploaded and submitted.
//! 6. `finish.rs`: the wait for its window sums, their checks, the window reduction and the
//!    report.
//!
//! The drivers compose these steps, each in a file of its own:
//! - `slicing.rs`: a call larger than one GPU call holds, in slices;
//! - `overlap.rs`: calls back to back on one device, each one's host work while the one
//!   before runs (a batch's vectors, a call's slices);
//! - `batch.rs`: many scalar vectors on one resident set;
//! - `split.rs`: one call split across several devices (`MsmConfig::devices`).

pub(super) mod batch;
mod finish;
mod overlap;
pub(super) mod plan;
pub(super) mod route;
mod slicing;
mod split;
mod split_batch;
mod submit;
pub(super) mod validate;

use ark_ec::short_weierstrass::Projective;

use crate::bases::BasesRef;
use crate::curve::{Fr, GpuCurve};
use crate::engine::several::Spread;
use crate::engine::GpuMsm;
use crate::error::Result;
use crate::report::{Backend, MsmReport};
use validate::off_curve_first;

impl<C: GpuCurve> GpuMsm<C> {
    /// [`GpuMsm::msm_with_report`] of `src`: split across the devices on several (their
    /// shares run as `spread` says), else on this engine's device.
    pub(super) async fn msm_of(
        &self,
        src: BasesRef<'_, C>,
        scalars: &[Fr<C>],
        spread: Spread,
    ) -> Result<(Projective<C>, MsmReport)> {
        self.validate(src, scalars)?;
        let out = match &self.several {
            Some(several) => self.split_msm(several, src, scalars, spread).await,
            None => self.msm_here(src, scalars).await,
        };
        off_curve_first(src, scalars.len(), out)
    }

    /// [`GpuMsm::msm_with_report`] on this engine's device alone (a device of an engine on
    /// several runs its shares so).
    pub(super) async fn msm_share(
        &self,
        src: BasesRef<'_, C>,
        scalars: &[Fr<C>],
    ) -> Result<(Projective<C>, MsmReport)> {
        self.validate(src, scalars)?;
        self.msm_here(src, scalars).await
    }

    /// An MSM on this engine's device (or its CPU paths), sliced where it must be.
    pub(super) async fn msm_here(
        &self,
        src: BasesRef<'_, C>,
        scalars: &[Fr<C>],
    ) -> Result<(Projective<C>, MsmReport)> {
        let n = scalars.len();
        // The path is decided once for the whole call, slices included.
        let route = self.route_call(n)?;
        let on_gpu = route.0 == Backend::Gpu && n > 0;
        match src {
            BasesRef::Host(points) if on_gpu => {
                if let Some(slice) = self.slice_for(n)? {
                    let host = |_, r| BasesRef::Host(&points[r]);
                    return self.sliced(scalars, slice, &route, host).await;
                }
            }
            BasesRef::Resident(b) if on_gpu && !self.holds(b) => {
                // Not on this device (loaded while it was lost, or before a new one): the
                // call uploads the set's host copy, sliced to fit as host bases are.
                let points = &b.points()[..n];
                if let Some(slice) = self.slice_for(n)? {
                    let host = |_, r| BasesRef::Host(&points[r]);
                    return self.sliced(scalars, slice, &route, host).await;
                }
                return self.one_call(BasesRef::Host(points), scalars, route).await;
            }
            BasesRef::Resident(b) if on_gpu && b.parts() > 1 && n > b.part_len() => {
                let part = |k, _| BasesRef::ResidentPart(b, k);
                return self.sliced(scalars, b.part_len(), &route, part).await;
            }
            _ => {}
        }
        self.one_call(src, scalars, route).await
    }
}
