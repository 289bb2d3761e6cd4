//! Many MSMs on one resident set: the host work of the next vector overlaps the GPU's run of
//! the current one (`overlap.rs`).

use ark_ec::short_weierstrass::Projective;

use super::overlap::Piece;
use super::GpuMsm;
use crate::bases::{Bases, BasesRef};
use crate::curve::{Fr, GpuCurve};
use crate::error::{MsmError, Result};
use crate::report::MsmReport;

impl<C: GpuCurve> GpuMsm<C> {
    /// Many MSMs over the same resident bases, one per scalar vector (each at most as long
    /// as the bases). The host work of vector k + 1 (digits, bucket plan, upload) runs while
    /// the GPU computes vector k. A bad vector fails the call with [`MsmError::Batch`].
    pub fn batch_msm(&self, bases: &Bases<C>, scalars: &[&[Fr<C>]]) -> Result<Vec<Projective<C>>> {
        Ok(self
            .batch_msm_with_reports(bases, scalars)?
            .into_iter()
            .map(|(r, _)| r)
            .collect())
    }

    /// [`GpuMsm::batch_msm`] with each vector's report.
    pub fn batch_msm_with_reports(
        &self,
        bases: &Bases<C>,
        scalars: &[&[Fr<C>]],
    ) -> Result<Vec<(Projective<C>, MsmReport)>> {
        let _s = tracing::info_span!("gpu_msm.batch", vectors = scalars.len()).entered();
        // Every vector is checked before any work starts.
        for (k, s) in scalars.iter().enumerate() {
            self.validate(BasesRef::Resident(bases), s).map_err(at(k))?;
        }
        if let Some(several) = &self.several {
            if !bases.shares().is_empty() {
                return self.split_batch(several, bases, scalars);
            }
            // A set kept on the host (loaded while every device was lost): each vector
            // split as a one-shot call.
            return scalars
                .iter()
                .enumerate()
                .map(|(k, s)| self.msm_of(BasesRef::Resident(bases), s).map_err(at(k)))
                .collect();
        }
        if bases.parts() > 1 || !self.holds(bases) {
            // Bases in several device parts, or not on this device: each vector runs as its
            // own call (sliced where it must be, the slices overlapped), one after the other.
            return scalars
                .iter()
                .enumerate()
                .map(|(k, s)| self.msm_with_report(bases, s).map_err(at(k)))
                .collect();
        }
        self.host_list_stages_before_batch(scalars);
        let pieces = scalars.iter().map(|s| Piece {
            bases: BasesRef::Resident(bases),
            scalars: s,
            route: None,
        });
        self.run_overlapped(pieces, |k, e| at(k)(e))
    }

    /// A batch that may plan vectors on the host (SRE, `BucketSort::Host`) readies the
    /// host-list stages first: their first-use test's calls must not wait for room that a
    /// vector in flight holds. Its outcome is the device's; each vector's planning reads it
    /// (and reports any error).
    fn host_list_stages_before_batch(&self, scalars: &[&[Fr<C>]]) {
        let longest = scalars.iter().map(|s| s.len()).max().unwrap_or(0);
        let on_gpu = matches!(self.route_call(longest), Ok((crate::Backend::Gpu, _)));
        if let (true, true, Some(gpu)) = (self.may_plan_on_host(), on_gpu, self.gpu()) {
            let _ = self.host_list_stages_ready(&gpu);
        }
    }
}

/// An error of the batch's vector `index`, as [`MsmError::Batch`].
fn at(index: usize) -> impl Fn(MsmError) -> MsmError {
    move |e| MsmError::Batch {
        index,
        source: Box::new(e),
    }
}
