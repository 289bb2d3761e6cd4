//! Calls run back to back on one device, each call's host work (digits, plan, upload) and
//! submission done while the call before it runs on the GPU: a batch's vectors
//! (`batch.rs`) and a large call's slices (`slicing.rs`). Two calls may then hold memory at
//! once; when the budget has no room for both, the one in flight is collected first.

use std::sync::Arc;
use std::time::Instant;

use ark_ec::short_weierstrass::Projective;

use crate::curve::GpuCurve;
use crate::engine::call::plan::{OnGpu, Planned};
use crate::engine::call::Call;
use crate::engine::GpuMsm;
use crate::error::{MsmError, Result};
use crate::gpu::{GpuContext, InFlight};
use crate::report::MsmReport;
use crate::routing::Route;

/// One call of an overlapped run.
pub(in crate::engine) struct Piece<'a, C: GpuCurve> {
    /// Its bases and scalars.
    pub call: Call<'a, C>,
    /// Its path, if decided already (a slice takes its call's); else routed on its own.
    pub route: Option<Route>,
}

/// A piece submitted to the GPU and not yet collected.
struct Queued<'a, C: GpuCurve> {
    /// Its place among the pieces.
    index: usize,
    call: Box<OnGpu<'a, C>>,
    in_flight: InFlight,
}

/// An overlapped run's state: each piece's result once collected, the device the pieces
/// run on, the piece in flight, and how an error names piece k (`err(k, e)`).
struct Run<'a, C: GpuCurve, E> {
    out: Vec<Option<(Projective<C>, MsmReport)>>,
    device: Option<Arc<GpuContext>>,
    queued: Option<Queued<'a, C>>,
    err: E,
}

impl<C: GpuCurve> GpuMsm<C> {
    /// The pieces' sums and reports, in order: piece k + 1 is prepared and submitted while
    /// piece k runs. On an error the piece in flight is collected first, so that the error
    /// is the earliest piece's, as if they had run one at a time (and no piece is left
    /// running on the GPU). A piece planned on a device that replaced a lost one first
    /// collects the piece in flight on the lost one, if any (which fails: `DeviceLost`, or
    /// `Timeout` on a device dropped as hung);
    /// with nothing in flight the run goes on on the new device (a resident part it does not
    /// hold is uploaded from the host copy, as a single call's would be). `err(k, e)` names
    /// piece k in an error.
    pub(in crate::engine) async fn run_overlapped<'a>(
        &self,
        pieces: Vec<Piece<'a, C>>,
        err: impl Fn(usize, MsmError) -> MsmError,
    ) -> Result<Vec<(Projective<C>, MsmReport)>> {
        let mut run = Run {
            out: Vec::new(),
            device: None,
            queued: None,
            err,
        };
        for (k, piece) in pieces.into_iter().enumerate() {
            run.out.push(None);
            if let Err(e) = self.run_piece(&mut run, k, piece).await {
                match run.queued.take() {
                    // Piece k - 1, still in flight: it ran first, so its error comes first.
                    Some(q) if q.index < k => self.collect_one(&mut run, q).await?,
                    // Piece k itself (the one before it failed): waited for, so that the error
                    // comes with nothing of the run left on the GPU.
                    Some(q) => {
                        let gpu = run.device.clone().expect("set by the queued piece");
                        let _ = self.await_sums(&gpu, q.in_flight).await;
                    }
                    None => {}
                }
                return Err(e);
            }
        }
        self.collect_queued(&mut run).await?;
        Ok(run
            .out
            .into_iter()
            .map(|r| r.expect("every piece ran"))
            .collect())
    }

    /// Piece k: prepared, then done on the CPU or submitted and queued (the piece before it
    /// collected meanwhile). An error of piece k is named by `err`.
    async fn run_piece<'a, E: Fn(usize, MsmError) -> MsmError>(
        &self,
        run: &mut Run<'a, C, E>,
        k: usize,
        piece: Piece<'a, C>,
    ) -> Result<()> {
        if self.host_list_check_pending() {
            // Its planning's test calls must not wait for room the piece in flight holds.
            self.collect_queued(run).await?;
        }
        // The host work of piece k, done while piece k - 1 is in flight, is not part of
        // piece k - 1's report.
        let t = Instant::now();
        let named = |e| (run.err)(k, e);
        let route = match piece.route {
            Some(r) => r,
            None => self.route_call(piece.call.n()).map_err(named)?,
        };
        let step = self.plan(piece.call, route).map_err(named)?;
        let mut p = match step {
            Planned::Done(r, rep) => {
                run.out[k] = Some((r, *rep));
                if let Some(q) = run.queued.as_mut() {
                    q.call.overlapped += t.elapsed();
                }
                return Ok(());
            }
            Planned::Gpu(p) => p,
        };
        if run.device.as_ref().is_some_and(|d| !Arc::ptr_eq(d, &p.gpu)) {
            // The run's device was lost and replaced.
            self.collect_queued(run).await?;
        }
        run.device = Some(Arc::clone(&p.gpu));
        let in_flight = self.submit_piece(run, k, &mut p, t).await?;
        let queued = Queued {
            index: k,
            call: p,
            in_flight,
        };
        let Some(mut before) = run.queued.replace(queued) else {
            return Ok(());
        };
        before.call.overlapped += t.elapsed();
        let tc = Instant::now();
        self.collect_one(run, before).await?;
        if let Some(next) = run.queued.as_mut() {
            next.call.overlapped += tc.elapsed();
        }
        Ok(())
    }

    /// Submits piece k (prepared from `t` on) beside the one in flight, or, when the budget
    /// has no room for both, after collecting that one (waiting for room while holding it
    /// could wait forever); neither report counts the other's work.
    async fn submit_piece<E: Fn(usize, MsmError) -> MsmError>(
        &self,
        run: &mut Run<'_, C, E>,
        k: usize,
        p: &mut OnGpu<'_, C>,
        t: Instant,
    ) -> Result<InFlight> {
        let gpu = Arc::clone(&p.gpu);
        let submitted = self.submit(&gpu, p, run.queued.is_none()).await;
        if let Some(f) = submitted.map_err(|e| (run.err)(k, e))? {
            return Ok(f);
        }
        if let Some(q) = run.queued.as_mut() {
            q.call.overlapped += t.elapsed();
        }
        let tc = Instant::now();
        self.collect_queued(run).await?;
        p.overlapped += tc.elapsed();
        let f = self.submit(&gpu, p, true).await;
        let f = f.map_err(|e| (run.err)(k, e))?;
        Ok(f.expect("waited for room"))
    }

    /// Collects the piece in flight, if any.
    async fn collect_queued<E: Fn(usize, MsmError) -> MsmError>(
        &self,
        run: &mut Run<'_, C, E>,
    ) -> Result<()> {
        match run.queued.take() {
            Some(q) => self.collect_one(run, q).await,
            None => Ok(()),
        }
    }

    /// A queued piece's sum and report, once the GPU is done with it, into its place.
    async fn collect_one<E: Fn(usize, MsmError) -> MsmError>(
        &self,
        run: &mut Run<'_, C, E>,
        q: Queued<'_, C>,
    ) -> Result<()> {
        let gpu = Arc::clone(run.device.as_ref().expect("set by the queued piece"));
        let j = q.index;
        let done = self.await_sums(&gpu, q.in_flight).await;
        let result = self.finish(*q.call, done).map_err(|e| (run.err)(j, e))?;
        run.out[j] = Some(result);
        Ok(())
    }
}
