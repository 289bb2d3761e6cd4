//! A driver: a batch on a set placed on several devices, each device's share of every
//! vector run as a batch on that device (`batch.rs`), the vectors' shares added
//! (`split.rs`).

use std::ops::Range;
use std::time::{Duration, Instant};

use ark_ec::short_weierstrass::Projective;

use crate::bases::{Bases, BasesRef};
use crate::curve::{Fr, GpuCurve};
use crate::engine::call::Call;
use crate::engine::several::{
    device_fault, each_at_once, each_joined, Outcome, Several, Share, Spread,
};
use crate::engine::GpuMsm;
use crate::error::{MsmError, Result};
use crate::report::MsmReport;

impl<C: GpuCurve> GpuMsm<C> {
    /// A batch on a set placed on several devices: each device runs the batch of its share
    /// of every vector (vectors shorter than the share's start give it nothing to do) at
    /// once, and each vector's shares are added; a share whose device failed is rerun, one
    /// vector at a time, as a call's would be.
    pub(in crate::engine) async fn split_batch(
        &self,
        several: &Several<C>,
        bases: &Bases<C>,
        scalars: &[&[Fr<C>]],
        spread: Spread,
    ) -> Result<Sums<C>> {
        let start = Instant::now();
        // Share 0 always runs, so that every vector has a report.
        let jobs: Vec<DeviceBatch<C>> = bases
            .shares()
            .iter()
            .map(|(k, set)| (*k, set, set.start()..set.start() + set.len()))
            .filter(|(_, _, r)| r.start == 0 || scalars.iter().any(|v| v.len() > r.start))
            .collect();
        let outcomes = several.run_batches(&jobs, scalars, spread).await;
        // A vector that failed for its input fails the batch: the first such vector's.
        let input_error = jobs
            .iter()
            .zip(&outcomes)
            .filter_map(|((_, _, r), out)| match out {
                Err(MsmError::Batch { index, source }) if !device_fault(source) => {
                    Some((*index, (**source).clone().at_offset(r.start)))
                }
                _ => None,
            })
            .min_by_key(|(index, _)| *index);
        if let Some((index, e)) = input_error {
            return Err(MsmError::Batch {
                index,
                source: Box::new(e),
            });
        }
        let mut per_vector: Vec<VectorShares<C>> =
            scalars.iter().map(|_| (Vec::new(), Vec::new())).collect();
        for ((k, set, r), outcome) in jobs.iter().zip(outcomes) {
            let results: Vec<Result<(Projective<C>, MsmReport)>> = match outcome {
                Ok(done) => done.into_iter().map(Ok).collect(),
                // The device failed: each vector's part of its share is rerun.
                Err(MsmError::Batch { source, .. }) => vec![Err(*source); scalars.len()],
                Err(e) => vec![Err(e); scalars.len()],
            };
            for (i, result) in results.into_iter().enumerate() {
                per_vector[i].0.push(Share {
                    device: *k,
                    range: clip(scalars[i], r),
                    bases: BasesRef::Resident(set),
                    rerun: None,
                });
                per_vector[i].1.push((result, Duration::ZERO));
            }
        }
        let mut sums = Vec::new();
        for (i, (shares, outcomes)) in per_vector.into_iter().enumerate() {
            let at = |e| MsmError::Batch {
                index: i,
                source: Box::new(e),
            };
            let combined = self.combine(several, &shares, outcomes, scalars[i], spread);
            let combined = combined.await;
            let (sum, mut report) = combined.map_err(at)?;
            report.n = scalars[i].len();
            report.resident_bases = true;
            report.phases.total = start.elapsed();
            sums.push((sum, report));
        }
        Ok(sums)
    }
}

/// One vector's shares and their outcomes.
type VectorShares<'a, C> = (Vec<Share<'a, C>>, Vec<Outcome<C>>);

/// A batch's sums and reports.
type Sums<C> = Vec<(Projective<C>, MsmReport)>;

/// One device's part of a batch: its index, its share of the set and the share's points.
type DeviceBatch<'a, C> = (usize, &'a Bases<C>, Range<usize>);

/// The part of vector `v` in `r`.
fn clip<T>(v: &[T], r: &Range<usize>) -> Range<usize> {
    r.start.min(v.len())..r.end.min(v.len())
}

impl<C: GpuCurve> Several<C> {
    /// Each job's batch on its device, all at once as `spread` says (a lost device's fails
    /// at once).
    async fn run_batches<'a>(
        &self,
        jobs: &[DeviceBatch<'a, C>],
        scalars: &[&[Fr<C>]],
        spread: Spread,
    ) -> Vec<Result<Sums<C>>> {
        let live = self.live();
        let batch = |(k, set, r): &DeviceBatch<'a, C>| {
            let (k, set) = (*k, *set);
            let calls: Vec<Call<C>> = (scalars.iter())
                .map(|v| Call::cut(BasesRef::Resident(set), &v[clip(v, r)]))
                .collect();
            let device = live.contains(&k).then(|| &self.devices[k]);
            async move {
                match device {
                    Some(d) => d.batch_here(set, &calls).await,
                    None => Err(self.lost_error(k)),
                }
            }
        };
        let outcomes = match spread {
            Spread::Threads => each_at_once(jobs, |j| {
                crate::gpu::device::blocking::block_on_share(batch(j))
            }),
            Spread::Joined => each_joined(jobs.iter().map(batch).collect()).await,
        };
        let panicked = || Err(MsmError::Gpu("a device's batch panicked".into()));
        outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(panicked))
            .collect()
    }
}
