//! One MSM call, in the order it runs. Read the files in this order:
//!
//! 1. `mod.rs` (here): the entrance, [`GpuMsm::msm_of`]: the call checked once, then handed
//!    to the driver that runs it (`run_call`: split across several devices; `msm_here`: in
//!    slices, or whole by `one_call`, which chains the steps below).
//! 2. `validate.rs`: lengths and ownership checked at the entrance (`validate`, making the
//!    `Call`); the bases' own checks, which `plan` runs (`check_call_bases`).
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
//! - `split.rs`: one call split across several devices (`MsmConfig::devices`);
//! - `split_batch.rs`: a batch on a set placed on several devices.

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

use std::sync::Arc;

use ark_ec::short_weierstrass::{Affine, Projective};

use crate::bases::BasesRef;
use crate::curve::{Fr, GpuCurve};
use crate::engine::several::Spread;
use crate::engine::GpuMsm;
use crate::error::{MsmError, Result};
use crate::report::{Backend, MsmReport};
use crate::routing::Route;
use plan::Planned;
use validate::off_curve_first;

/// One call, checked: its bases and scalars, one base each, the bases this engine's to use.
/// [`GpuMsm::validate`] makes it at the entrance, once per caller's call (once per vector
/// of a batch); the drivers cut it into pieces ([`Call::cut`]: slices, devices' shares),
/// which are not checked again.
pub(in crate::engine) struct Call<'a, C: GpuCurve> {
    /// Where its bases are: host points, a resident set, or one slice of its parts.
    pub bases: BasesRef<'a, C>,
    /// Its bases' points (a resident set's host copy), as many as its scalars.
    pub points: &'a [Affine<C>],
    /// Its scalars.
    pub scalars: &'a [Fr<C>],
}

impl<C: GpuCurve> Clone for Call<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: GpuCurve> Copy for Call<'_, C> {}

impl<'a, C: GpuCurve> Call<'a, C> {
    /// A piece of a checked call, on `bases` (at least as many as `scalars`): a slice of
    /// its points, a slice of its set's parts, a device's share.
    pub(in crate::engine) fn cut(bases: BasesRef<'a, C>, scalars: &'a [Fr<C>]) -> Self {
        Self {
            bases,
            points: &bases.points()[..scalars.len()],
            scalars,
        }
    }

    /// Its length: points and scalars.
    pub(in crate::engine) fn n(&self) -> usize {
        self.scalars.len()
    }
}

impl<C: GpuCurve> GpuMsm<C> {
    /// [`GpuMsm::msm_with_report`] of `src`: checked, then split across the devices on
    /// several (their shares run as `spread` says), else run on this engine's device.
    pub(super) async fn msm_of(
        &self,
        src: BasesRef<'_, C>,
        scalars: &[Fr<C>],
        spread: Spread,
    ) -> Result<(Projective<C>, MsmReport)> {
        let call = self.validate(src, scalars)?;
        self.run_call(call, spread).await
    }

    /// A checked call on this engine's devices: split across them on several, else here.
    pub(in crate::engine) async fn run_call(
        &self,
        call: Call<'_, C>,
        spread: Spread,
    ) -> Result<(Projective<C>, MsmReport)> {
        let out = match &self.several {
            Some(several) => self.split_msm(several, call, spread).await,
            None => self.msm_here(call).await,
        };
        off_curve_first(call, out)
    }

    /// A call on this engine's device (or its CPU paths), sliced where it must be: host
    /// bases or a set not on this device in slices of what one GPU call holds, a set
    /// stored in more parts than one call reads in slices of `Bases::call_len`
    /// ([`GpuMsm::over_parts`]).
    pub(in crate::engine) async fn msm_here(
        &self,
        call: Call<'_, C>,
    ) -> Result<(Projective<C>, MsmReport)> {
        let n = call.n();
        // The path is decided once for the whole call, slices included.
        let route = self.route_call(n)?;
        let on_gpu = route.backend == Backend::Gpu && n > 0;
        let host = |_, r| BasesRef::Host(&call.points[r]);
        match call.bases {
            BasesRef::Host(_) if on_gpu => {
                if let Some(slice) = self.slice_for(n)? {
                    return self.sliced(call, slice, &route, host).await;
                }
            }
            BasesRef::Resident(b) if on_gpu && !self.holds(b) => {
                // Not on this device (loaded while it was lost, or before a new one): the
                // call uploads the set's host copy, sliced to fit as host bases are.
                if let Some(slice) = self.slice_for(n)? {
                    return self.sliced(call, slice, &route, host).await;
                }
                let call = Call::cut(BasesRef::Host(call.points), call.scalars);
                return self.one_call(call, route).await;
            }
            BasesRef::Resident(b) if on_gpu && b.parts() > 1 && n > b.part_len() => {
                return self.over_parts(call, b, route).await;
            }
            _ => {}
        }
        self.one_call(call, route).await
    }

    /// One MSM in one GPU call (or on a CPU path; n = 0 on none), on the path `route`: the
    /// steps in order, plan (`plan.rs`), submit (`submit.rs`), finish (`finish.rs`). The
    /// overlapped drivers (`overlap.rs`) run the same steps with the next call's plan
    /// between a call's submission and its finish.
    pub(in crate::engine) async fn one_call(
        &self,
        call: Call<'_, C>,
        route: Route,
    ) -> Result<(Projective<C>, MsmReport)> {
        match self.plan(call, route)? {
            Planned::Done(r, rep) => Ok((r, *rep)),
            Planned::Gpu(p) => {
                let gpu = Arc::clone(&p.gpu);
                let Some(f) = self.submit(&gpu, &p, self.waits_for_room).await? else {
                    return Err(MsmError::InputTooLarge(
                        "no room in the memory budget now (this call does not wait for it)".into(),
                    ));
                };
                let out = self.await_sums(&gpu, f).await;
                self.finish(*p, out)
            }
        }
    }
}
