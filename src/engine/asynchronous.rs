//! The calls that do not block a thread: each returns a `Send` future that completes when
//! the GPU's work and the host's window reduction are done. While the GPU runs (and while
//! a call waits for room in the memory budget) the future is pending and its thread free:
//! the device's poller thread polls the device and wakes it. The blocking calls are these
//! futures waited for on the caller's thread.
//!
//! Dropping a future before it completes cancels the call: a call waiting for room leaves
//! the queue; one the GPU is running leaves its buffers and reservation with the device's
//! poller, which gives them back when the GPU is done with them. The engine stays usable.
//!
//! What still runs on the thread that polls (each as a blocking call would run it):
//! - the call's host work: checks, digits or bucket plan, upload, window reduction
//!   (`MsmReport::host_time`; its figures are in docs/PERF.md);
//! - a call the routing keeps on the CPU (below `small_msm_cutoff`, arkworks on a software
//!   adapter unless the GPU is forced, `DeviceLoss::FallBackToCpu`, a share rerun on the
//!   CPU): the whole MSM;
//! - on several devices, each share's host work in turn (the blocking calls run the shares
//!   on threads of their own);
//! - once per device: the host-list stages compiled and tested by the first call that needs
//!   them (seconds on a software adapter; its test does not wait for room), and a lost device's
//!   replacement (or, when the GPU is demanded, the wait for another call's).
//!
//! The futures borrow the engine, the bases and the scalars, and start on their first poll.
//! To run one beside other work, poll it there (`join`), or spawn it with owned data:
//! `let e = Arc::new(engine); tokio::spawn(async move { e.msm_async(&bases, &scalars).await })`
//! (the bases type must be `Sync` for the future to be `Send`).
//!
//! Where a call that does not finish waits: its room in the memory budget
//! (`gpu/memory/pool.rs`, `RoomWait`), its hand-off to the device's submitting thread
//! (`gpu/device/submitter.rs`), the GPU's callbacks the device's poller waits for
//! (`gpu/device/poller/`). Each wait ends within `MsmConfig::gpu_timeout` without progress.

use std::future::Future;

use ark_ec::short_weierstrass::Projective;
use tracing::Instrument;

use super::call::batch::batch_span;
use super::several::Spread;
use super::{msm_span, GpuMsm};
use crate::bases::{Bases, MsmBases};
use crate::curve::{Fr, GpuCurve};
use crate::error::Result;
use crate::report::MsmReport;

impl<C: GpuCurve> GpuMsm<C> {
    /// [`GpuMsm::msm`] as a future that blocks no thread while the GPU runs.
    pub fn msm_async<'a, B: MsmBases<C> + Sync + ?Sized>(
        &'a self,
        bases: &'a B,
        scalars: &'a [Fr<C>],
    ) -> impl Future<Output = Result<Projective<C>>> + Send + 'a {
        let call = self.msm_with_report_async(bases, scalars);
        async move { call.await.map(|(r, _)| r) }
    }

    /// [`GpuMsm::msm_with_report`] as a future that blocks no thread while the GPU runs.
    pub fn msm_with_report_async<'a, B: MsmBases<C> + Sync + ?Sized>(
        &'a self,
        bases: &'a B,
        scalars: &'a [Fr<C>],
    ) -> impl Future<Output = Result<(Projective<C>, MsmReport)>> + Send + 'a {
        let call = self.msm_of(bases.bases_ref(), scalars, Spread::Joined);
        call.instrument(msm_span(scalars.len()))
    }

    /// [`GpuMsm::batch_msm`] as a future that blocks no thread while the GPU runs.
    pub fn batch_msm_async<'a>(
        &'a self,
        bases: &'a Bases<C>,
        scalars: &'a [&'a [Fr<C>]],
    ) -> impl Future<Output = Result<Vec<Projective<C>>>> + Send + 'a {
        let batch = self.batch_msm_with_reports_async(bases, scalars);
        async move { Ok(batch.await?.into_iter().map(|(r, _)| r).collect()) }
    }

    /// [`GpuMsm::batch_msm_with_reports`] as a future that blocks no thread while the GPU
    /// runs.
    pub fn batch_msm_with_reports_async<'a>(
        &'a self,
        bases: &'a Bases<C>,
        scalars: &'a [&'a [Fr<C>]],
    ) -> impl Future<Output = Result<Vec<(Projective<C>, MsmReport)>>> + Send + 'a {
        let batch = self.batch_of(bases, scalars, Spread::Joined);
        batch.instrument(batch_span(scalars.len()))
    }
}
