//! Resident sets on several devices, placed in shares (a call on one follows the
//! placement), and batches on them.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ark_ec::short_weierstrass::{Affine, Projective};

use super::{device_fault, each_at_once, each_joined, Outcome, Several, Share, Spread};
use crate::bases::{Bases, BasesRef, HostBases};
use crate::config::LoadOptions;
use crate::curve::{Fr, GpuCurve};
use crate::engine::checks::check_bases;
use crate::engine::GpuMsm;
use crate::error::{MsmError, Result};
use crate::report::MsmReport;

impl<C: GpuCurve> GpuMsm<C> {
    /// A set loaded on several devices: each live device checks and stores its share of
    /// the bases (split as a call of their length would be), all at once; the host copy is
    /// one, shared. With every device lost the set stays on the host.
    pub(in crate::engine) fn load_on_several(
        &self,
        several: &Several<C>,
        bases: &[Affine<C>],
        options: LoadOptions,
    ) -> Result<Bases<C>> {
        let host = HostBases::copy(bases);
        let in_subgroup = self.config.validate_subgroup;
        let live = several.live();
        let split = match live.is_empty() {
            true => Vec::new(),
            false => several.split(bases.len(), &live),
        };
        if split.is_empty() {
            check_bases(bases, in_subgroup)?;
        }
        // Every share checked first: a bad base fails the load, the first one as on one
        // device, before any device's error.
        let panicked = || MsmError::Gpu("a share's load panicked".into());
        let check = |(_, r): &(usize, Range<usize>)| {
            check_bases(&bases[r.clone()], in_subgroup).map_err(|e| e.at_offset(r.start))
        };
        for checked in each_at_once(&split, check) {
            checked.unwrap_or_else(|| Err(panicked()))?;
        }
        let share_of = |r: &Range<usize>| HostBases {
            all: Arc::clone(&host.all),
            range: r.clone(),
        };
        let store =
            |(k, r): &(usize, Range<usize>)| several.devices[*k].load_checked(share_of(r), options);
        let loaded = each_at_once(&split, store);
        let mut shares = Vec::new();
        for ((k, r), out) in split.iter().zip(loaded) {
            let share = match out.unwrap_or_else(|| Err(panicked())) {
                Ok(b) => b,
                // A device that failed keeps its share on the host: calls upload it, on
                // that device once replaced or on another.
                Err(e) if device_fault(&e) => {
                    tracing::warn!(target: "gpu_msm", device = k, error = %e, "a share stays on the host");
                    let owner = several.devices[*k].device;
                    Bases::new(owner, share_of(r), Vec::new(), r.len().max(1), in_subgroup)
                }
                Err(e) => return Err(e),
            };
            shares.push((*k, share));
        }
        let len = bases.len().max(1);
        Ok(Bases::with_shares(
            self.device,
            host,
            Vec::new(),
            len,
            in_subgroup,
            shares,
        ))
    }

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
        let jobs: Vec<Job<C>> = bases
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
                    points: clip(scalars[i], r),
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
type Job<'a, C> = (usize, &'a Bases<C>, Range<usize>);

/// The part of vector `v` in `r`.
fn clip<T>(v: &[T], r: &Range<usize>) -> Range<usize> {
    r.start.min(v.len())..r.end.min(v.len())
}

impl<C: GpuCurve> Several<C> {
    /// Each job's batch on its device, all at once as `spread` says (a lost device's fails
    /// at once).
    async fn run_batches<'a>(
        &self,
        jobs: &[Job<'a, C>],
        scalars: &[&[Fr<C>]],
        spread: Spread,
    ) -> Vec<Result<Sums<C>>> {
        let live = self.live();
        let batch = |(k, set, r): &Job<'a, C>| {
            let (k, set) = (*k, *set);
            let vs: Vec<&[Fr<C>]> = scalars.iter().map(|v| &v[clip(v, r)]).collect();
            let device = live.contains(&k).then(|| &self.devices[k]);
            async move {
                match device {
                    Some(d) => d.batch_here(set, &vs).await,
                    None => Err(self.lost_error(k)),
                }
            }
        };
        let outcomes = match spread {
            Spread::Threads => {
                each_at_once(jobs, |j| crate::gpu::device::blocking::share(batch(j)))
            }
            Spread::Joined => each_joined(jobs.iter().map(batch).collect()).await,
        };
        let panicked = || Err(MsmError::Gpu("a device's batch panicked".into()));
        outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(panicked))
            .collect()
    }
}
