//! Calls run back to back on one device, each call's host work (digits, plan, upload) and
//! submission done while the call before it runs on the GPU: a batch's vectors
//! (`batch.rs`) and a large call's slices (`slicing.rs`).

use std::sync::Arc;
use std::time::Instant;

use ark_bls12_377::{Fr, G1Projective};

use super::prepare::{GpuCall, Prepared};
use super::GpuMsm;
use crate::bases::BasesRef;
use crate::error::{MsmError, Result};
use crate::gpu::{GpuContext, InFlight};
use crate::report::{Backend, MsmReport};

/// One call of a pipeline.
pub(super) struct Piece<'a> {
    /// Its bases.
    pub bases: BasesRef<'a>,
    /// Its scalars.
    pub scalars: &'a [Fr],
    /// Its path, if decided already (a slice takes its call's); else routed on its own.
    pub route: Option<(Backend, String)>,
}

impl GpuMsm {
    /// The pieces' sums and reports, in order: piece k + 1 is prepared and submitted while
    /// piece k runs. A piece planned on a device that replaced the one before (lost) first
    /// collects the piece in flight there (exact, or its error); then a piece on host bases
    /// goes on on the new device, and one on resident bases, which the lost device held, is
    /// [`MsmError::DeviceLost`]. When the memory budget has no room for two pieces at once,
    /// piece k is collected before piece k + 1 waits for room. `err(k, e)` names piece k in
    /// an error.
    pub(super) fn pipelined<'a>(
        &self,
        pieces: impl IntoIterator<Item = Piece<'a>>,
        err: impl Fn(usize, MsmError) -> MsmError,
    ) -> Result<Vec<(G1Projective, MsmReport)>> {
        let mut device: Option<Arc<GpuContext>> = None;
        let mut out: Vec<Option<(G1Projective, MsmReport)>> = Vec::new();
        let mut in_flight: Option<Queued> = None;
        for (k, piece) in pieces.into_iter().enumerate() {
            out.push(None);
            // The host work of piece k, done while piece k - 1 is in flight, is not part
            // of piece k - 1's report.
            if self.host_list_check_pending() {
                // Its calls must not wait for room the piece in flight holds.
                if let (Some(q), Some(gpu)) = (in_flight.take(), device.as_deref()) {
                    let j = q.index;
                    out[j] = Some(self.collect(gpu, q).map_err(|e| err(j, e))?);
                }
            }
            let t = Instant::now();
            let route = match piece.route {
                Some(r) => r,
                None => self
                    .route_call(piece.scalars.len())
                    .map_err(|e| err(k, e))?,
            };
            let step = self
                .prepare(piece.bases, piece.scalars, route)
                .map_err(|e| err(k, e))?;
            let p = match step {
                Prepared::Done(r, rep) => {
                    out[k] = Some((r, *rep));
                    if let Some(q) = in_flight.as_mut() {
                        q.call.overlapped += t.elapsed();
                    }
                    continue;
                }
                Prepared::Gpu(p) => p,
            };
            if device.as_ref().is_some_and(|d| !Arc::ptr_eq(d, &p.gpu)) {
                // Planned on a device that replaced the pipeline's: that one was lost. The
                // piece in flight there is exact or fails; host bases go on on the new one.
                if let Some(q) = in_flight.take() {
                    let (j, old) = (q.index, device.as_deref().expect("set"));
                    out[j] = Some(self.collect(old, q).map_err(|e| err(j, e))?);
                }
                if !matches!(piece.bases, BasesRef::Host(_)) {
                    return Err(err(
                        k,
                        MsmError::DeviceLost(
                            "the device holding the bases was lost and replaced during the call"
                                .into(),
                        ),
                    ));
                }
                device = None;
            }
            let gpu = device.get_or_insert_with(|| Arc::clone(&p.gpu));
            let gpu = &**gpu;
            // Waiting for room while holding piece k - 1's could wait forever: when the
            // budget has no room for both, piece k - 1 is collected first.
            let f = match self
                .submit(gpu, &p, in_flight.is_none())
                .map_err(|e| err(k, e))?
            {
                Some(f) => f,
                None => {
                    let q = in_flight.take().expect("only a call in flight waits");
                    let j = q.index;
                    out[j] = Some(self.collect(gpu, q).map_err(|e| err(j, e))?);
                    let f = self.submit(gpu, &p, true).map_err(|e| err(k, e))?;
                    f.expect("waited for room")
                }
            };
            // Piece k is queued behind the previous one: collect that one now.
            let queued = Queued {
                index: k,
                call: p,
                in_flight: f,
            };
            if let Some(mut q) = in_flight.replace(queued) {
                q.call.overlapped += t.elapsed();
                let tc = Instant::now();
                let j = q.index;
                out[j] = Some(self.collect(gpu, q).map_err(|e| err(j, e))?);
                // ... nor is the previous piece's completion part of piece k's report.
                if let Some(next) = in_flight.as_mut() {
                    next.call.overlapped += tc.elapsed();
                }
            }
        }
        if let Some(q) = in_flight {
            let gpu = device.as_deref().expect("set by the piece in flight");
            let j = q.index;
            out[j] = Some(self.collect(gpu, q).map_err(|e| err(j, e))?);
        }
        Ok(out
            .into_iter()
            .map(|r| r.expect("every piece ran"))
            .collect())
    }

    /// Whether a piece's planning may still run the host-list stages' known-answer test
    /// (no verdict on the device yet): the pipeline then collects the piece in flight first.
    fn host_list_check_pending(&self) -> bool {
        self.may_plan_on_host()
            && self.config.self_test != crate::SelfTest::Off
            && self
                .gpu()
                .is_some_and(|g| g.host_list_stages_checked.get().is_none())
    }

    /// Whether this engine's calls may plan their buckets on the host.
    pub(super) fn may_plan_on_host(&self) -> bool {
        self.config.sre != crate::SreMode::Off || self.config.bucket_sort == crate::BucketSort::Host
    }

    /// A queued piece's sum and report, once the GPU is done with it.
    fn collect(&self, gpu: &GpuContext, q: Queued) -> Result<(G1Projective, MsmReport)> {
        let done = self.finish(gpu, q.in_flight);
        self.complete(*q.call, done)
    }
}

/// A piece in flight on the GPU.
struct Queued<'a> {
    /// Its place among the pieces.
    index: usize,
    call: Box<GpuCall<'a>>,
    in_flight: InFlight,
}
