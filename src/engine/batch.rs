//! Many MSMs on one resident set: the host work of the next vector overlaps the GPU's run of
//! the current one.

use std::sync::Arc;
use std::time::Instant;

use ark_bls12_377::{Fr, G1Projective};

use super::prepare::{GpuCall, Prepared};
use super::GpuMsm;
use crate::bases::{Bases, BasesRef};
use crate::error::{MsmError, Result};
use crate::gpu::{GpuContext, InFlight};
use crate::report::MsmReport;

impl GpuMsm {
    /// Many MSMs over the same resident bases, one per scalar vector (each at most as long
    /// as the bases). The host work of vector k + 1 (digits, bucket plan, upload) runs while
    /// the GPU computes vector k. A bad vector fails the call with [`MsmError::Batch`].
    pub fn batch_msm(&self, bases: &Bases, scalars: &[&[Fr]]) -> Result<Vec<G1Projective>> {
        Ok(self
            .batch_msm_with_reports(bases, scalars)?
            .into_iter()
            .map(|(r, _)| r)
            .collect())
    }

    /// [`GpuMsm::batch_msm`] with each vector's report.
    pub fn batch_msm_with_reports(
        &self,
        bases: &Bases,
        scalars: &[&[Fr]],
    ) -> Result<Vec<(G1Projective, MsmReport)>> {
        let _s = tracing::info_span!("gpu_msm.batch", vectors = scalars.len()).entered();
        // Every vector is checked before any work starts.
        for (k, s) in scalars.iter().enumerate() {
            self.validate(BasesRef::Resident(bases), s).map_err(at(k))?;
        }
        if bases.parts() > 1 || !self.holds(bases) {
            // Bases in several device parts, or not on this device: each vector runs as its
            // own call (sliced where it must be), one after the other.
            return scalars
                .iter()
                .enumerate()
                .map(|(k, s)| self.msm_with_report(bases, s).map_err(at(k)))
                .collect();
        }
        self.host_list_stages_before_batch(scalars);
        self.pipelined(bases, scalars)
    }

    /// A batch that may plan vectors on the host (SRE, `BucketSort::Host`) readies the
    /// host-list stages first: their first-use test's calls must not wait for room that a
    /// vector in flight holds. Its outcome is the device's; each vector's planning reads it
    /// (and reports any error).
    fn host_list_stages_before_batch(&self, scalars: &[&[Fr]]) {
        let longest = scalars.iter().map(|s| s.len()).max().unwrap_or(0);
        let on_gpu = matches!(self.route_call(longest), Ok((crate::Backend::Gpu, _)));
        if let (true, true, Some(gpu)) = (self.may_plan_on_host(), on_gpu, self.gpu()) {
            let _ = self.host_list_stages_ready(&gpu);
        }
    }

    /// Whether a vector's planning may still run the host-list stages' known-answer test
    /// (no verdict on the device yet): the batch then collects the vector in flight first.
    fn host_list_check_pending(&self) -> bool {
        self.may_plan_on_host()
            && self.config.self_test != crate::SelfTest::Off
            && self
                .gpu()
                .is_some_and(|g| g.host_list_stages_checked.get().is_none())
    }

    /// Whether this engine's calls may plan their buckets on the host.
    fn may_plan_on_host(&self) -> bool {
        self.config.sre != crate::SreMode::Off || self.config.bucket_sort == crate::BucketSort::Host
    }

    /// A batch on a set held whole on this device: vector k + 1's host work and submission
    /// while vector k runs. One device for the whole batch (the one of its first GPU
    /// vector), even if another call replaces a lost one.
    fn pipelined(
        &self,
        bases: &Bases,
        scalars: &[&[Fr]],
    ) -> Result<Vec<(G1Projective, MsmReport)>> {
        let mut device: Option<Arc<GpuContext>> = None;
        let mut out: Vec<Option<(G1Projective, MsmReport)>> = vec![None; scalars.len()];
        let mut in_flight: Option<Queued> = None;
        for (k, s) in scalars.iter().enumerate() {
            // The host work of vector k, done while vector k - 1 is in flight, is not part
            // of vector k - 1's report.
            if self.host_list_check_pending() {
                // Its calls must not wait for room the vector in flight holds.
                if let (Some(q), Some(gpu)) = (in_flight.take(), device.as_deref()) {
                    let j = q.index;
                    out[j] = Some(self.collect(gpu, q)?);
                }
            }
            let t = Instant::now();
            let route = self.route_call(s.len()).map_err(at(k))?;
            let step = self
                .prepare(BasesRef::Resident(bases), s, route)
                .map_err(at(k))?;
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
            let gpu = match &device {
                None => device.insert(Arc::clone(&p.gpu)),
                // Planned on a device that replaced the batch's: the batch's is lost.
                Some(d) if !Arc::ptr_eq(d, &p.gpu) => {
                    return Err(at(k)(MsmError::DeviceLost(
                        "the batch's device was lost and replaced during the batch".into(),
                    )))
                }
                Some(d) => d,
            };
            let gpu = &**gpu;
            // Waiting for room while holding vector k - 1's could wait forever: when the
            // budget has no room for both, vector k - 1 is collected first.
            let f = match self.submit(gpu, &p, in_flight.is_none()).map_err(at(k))? {
                Some(f) => f,
                None => {
                    let q = in_flight.take().expect("only a call in flight waits");
                    let j = q.index;
                    out[j] = Some(self.collect(gpu, q)?);
                    let f = self.submit(gpu, &p, true).map_err(at(k))?;
                    f.expect("waited for room")
                }
            };
            // Vector k is queued behind the previous one: collect that one now.
            let queued = Queued {
                index: k,
                call: p,
                in_flight: f,
            };
            if let Some(mut q) = in_flight.replace(queued) {
                q.call.overlapped += t.elapsed();
                let tc = Instant::now();
                let j = q.index;
                out[j] = Some(self.collect(gpu, q)?);
                // ... nor is the previous vector's completion part of vector k's report.
                if let Some(next) = in_flight.as_mut() {
                    next.call.overlapped += tc.elapsed();
                }
            }
        }
        if let Some(q) = in_flight {
            let gpu = device.as_deref().expect("set by the vector in flight");
            let j = q.index;
            out[j] = Some(self.collect(gpu, q)?);
        }
        Ok(out
            .into_iter()
            .map(|r| r.expect("every vector ran"))
            .collect())
    }

    /// A queued vector's sum and report, once the GPU is done with it.
    fn collect(&self, gpu: &GpuContext, q: Queued) -> Result<(G1Projective, MsmReport)> {
        let done = self.finish(gpu, q.in_flight);
        self.complete(*q.call, done).map_err(at(q.index))
    }
}

/// A batch's vector in flight on the GPU.
struct Queued<'a> {
    /// Its place in the batch.
    index: usize,
    call: Box<GpuCall<'a>>,
    in_flight: InFlight,
}

/// An error of the batch's vector `index`, as [`MsmError::Batch`].
fn at(index: usize) -> impl Fn(MsmError) -> MsmError {
    move |e| MsmError::Batch {
        index,
        source: Box::new(e),
    }
}
