//! Many MSMs on one resident set: the host work of the next vector overlaps the GPU's run of
//! the current one (`overlap.rs`).

use ark_ec::short_weierstrass::Projective;

use crate::bases::{Bases, BasesRef};
use crate::curve::{Fr, GpuCurve};
use crate::engine::call::overlap::Piece;
use crate::engine::call::Call;
use crate::engine::several::Spread;
use crate::engine::GpuMsm;
use crate::error::{MsmError, Result};
use crate::report::{Backend, MsmReport};

impl<C: GpuCurve> GpuMsm<C> {
    /// A batch on this engine's devices (on several, their shares run as `spread` says),
    /// every vector checked before any work starts.
    pub(in crate::engine) async fn batch_of(
        &self,
        bases: &Bases<C>,
        scalars: &[&[Fr<C>]],
        spread: Spread,
    ) -> Result<Vec<(Projective<C>, MsmReport)>> {
        let calls = self.validate_batch(bases, scalars)?;
        let Some(several) = &self.several else {
            return self.batch_here(bases, &calls).await;
        };
        if !bases.shares().is_empty() && !several.live().is_empty() {
            return self.split_batch(several, bases, scalars, spread).await;
        }
        // A set kept on the host (loaded while every device was lost), or every device lost
        // now: each vector as a call on the set (split, or as on one device, device 0's,
        // whose `device_loss` then decides).
        let mut out = Vec::new();
        for (k, call) in calls.into_iter().enumerate() {
            out.push(self.run_call(call, spread).await.map_err(at(k))?);
        }
        Ok(out)
    }

    /// A batch of checked calls on one set, on this engine's device alone.
    pub(in crate::engine) async fn batch_here(
        &self,
        bases: &Bases<C>,
        calls: &[Call<'_, C>],
    ) -> Result<Vec<(Projective<C>, MsmReport)>> {
        if bases.parts() > 1 || !self.holds(bases) {
            // Bases in several device parts, or not on this device: each vector runs as its
            // own call (sliced where it must be, the slices overlapped), one after the other.
            let mut out = Vec::new();
            for (k, call) in calls.iter().enumerate() {
                out.push(self.msm_here(*call).await.map_err(at(k))?);
            }
            return Ok(out);
        }
        self.host_list_stages_before_batch(calls);
        let pieces: Vec<Piece<C>> = (calls.iter())
            .map(|&call| Piece { call, route: None })
            .collect();
        self.run_overlapped(pieces, |k, e| at(k)(e)).await
    }

    /// Every vector checked, before any work starts: the batch's calls.
    fn validate_batch<'a>(
        &self,
        bases: &'a Bases<C>,
        scalars: &[&'a [Fr<C>]],
    ) -> Result<Vec<Call<'a, C>>> {
        (scalars.iter().enumerate())
            .map(|(k, s)| self.validate(BasesRef::Resident(bases), s).map_err(at(k)))
            .collect()
    }

    /// A batch that may plan vectors on the host (SRE, `BucketSort::Host`) readies the
    /// host-list stages first: their first-use test's calls must not wait for room that a
    /// vector in flight holds. Its outcome is the device's; each vector's planning reads it
    /// (and reports any error).
    fn host_list_stages_before_batch(&self, calls: &[Call<C>]) {
        let longest = calls.iter().map(|c| c.n()).max().unwrap_or(0);
        let on_gpu = matches!(self.route_call(longest), Ok(r) if r.backend == Backend::Gpu);
        if let (true, true, Some(gpu)) = (self.may_plan_on_host(), on_gpu, self.gpu()) {
            let _ = self.host_list_stages_ready(&gpu);
        }
    }
}

/// The span of one batch.
pub(in crate::engine) fn batch_span(vectors: usize) -> tracing::Span {
    tracing::info_span!("gpu_msm.batch", vectors)
}

/// An error of the batch's vector `index`, as [`MsmError::Batch`].
fn at(index: usize) -> impl Fn(MsmError) -> MsmError {
    move |e| MsmError::Batch {
        index,
        source: Box::new(e),
    }
}
