//! One call split across the devices: its shares (of the points, or of a set's
//! placement), run at once, their sums added and reports merged; a share whose device failed
//! rerun on another device, or on the CPU.

use std::time::{Duration, Instant};

use ark_ec::short_weierstrass::Projective;
use ark_ff::Zero;

use crate::bases::BasesRef;
use crate::curve::{Fr, GpuCurve};
use crate::engine::call::Call;
use crate::engine::several::{
    device_fault, each_at_once, each_joined, Outcome, Several, Share, Spread,
};
use crate::engine::GpuMsm;
use crate::error::{MsmError, Result};
use crate::report::{Backend, DeviceRun, MsmReport};
use crate::routing::Route;

impl<C: GpuCurve> Several<C> {
    /// A call's shares: on a set placed on the devices, each device's share of its first n
    /// points (a lost device's uploaded by a live one); else n host points split.
    fn shares<'a>(&self, call: Call<'a, C>, live: &[usize]) -> Vec<Share<'a, C>> {
        let (src, points, n) = (call.bases, call.points, call.n());
        let set = match src {
            BasesRef::Resident(b) if !b.shares().is_empty() => b,
            _ => {
                let split = self.split(n, live).into_iter();
                return split
                    .map(|(device, r)| Share {
                        device,
                        bases: BasesRef::Host(&points[r.clone()]),
                        range: r,
                        rerun: None,
                    })
                    .collect();
            }
        };
        let mut out = Vec::new();
        for (i, (k, share)) in set.shares().iter().enumerate() {
            let r = share.start()..(share.start() + share.len()).min(n);
            if r.is_empty() {
                continue;
            }
            out.push(match live.contains(k) {
                true => Share {
                    device: *k,
                    range: r,
                    bases: BasesRef::Resident(share),
                    rerun: None,
                },
                false => Share {
                    device: live[i % live.len()],
                    bases: BasesRef::Host(&points[r.clone()]),
                    range: r,
                    rerun: Some(format!("the set's share is on device {k}, which is lost")),
                },
            });
        }
        out
    }

    /// Each share on its device, all at once, as `spread` says.
    async fn run<'a>(
        &self,
        shares: &[Share<'a, C>],
        scalars: &[Fr<C>],
        spread: Spread,
    ) -> Vec<Outcome<C>> {
        let one = |sh: &Share<'a, C>| {
            let (device, bases) = (&self.devices[sh.device], sh.bases);
            let s = &scalars[sh.range.clone()];
            async move {
                let t = Instant::now();
                let out = device.msm_here(Call::cut(bases, s)).await;
                (out, t.elapsed())
            }
        };
        let outcomes = match spread {
            Spread::Threads => each_at_once(shares, |sh| {
                crate::gpu::device::blocking::block_on_share(one(sh))
            }),
            Spread::Joined => each_joined(shares.iter().map(one).collect()).await,
        };
        outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(panicked))
            .collect()
    }
}

fn panicked<C: GpuCurve>() -> Outcome<C> {
    let e = MsmError::Gpu("a device's share panicked".into());
    (Err(e), Duration::ZERO)
}

impl<C: GpuCurve> GpuMsm<C> {
    /// An MSM split across the devices: each device's share at once, the sums added. A
    /// call the routing keeps off the GPU, or with every device lost, runs as on one device
    /// (device 0's, whose `device_loss` then decides).
    pub(in crate::engine) async fn split_msm(
        &self,
        several: &Several<C>,
        call: Call<'_, C>,
        spread: Spread,
    ) -> Result<(Projective<C>, MsmReport)> {
        let start = Instant::now();
        let (src, scalars, n) = (call.bases, call.scalars, call.n());
        if n == 0 || self.routed(n).backend != Backend::Gpu {
            return self.msm_here(call).await;
        }
        let live = several.live();
        let shares = match live.is_empty() {
            true => Vec::new(),
            false => several.shares(call, &live),
        };
        if shares.is_empty() {
            return self.msm_here(call).await;
        }
        let outcomes = several.run(&shares, scalars, spread).await;
        let combined = self.combine(several, &shares, outcomes, scalars, spread);
        let (sum, mut report) = combined.await?;
        report.n = n;
        report.resident_bases = matches!(src, BasesRef::Resident(_));
        report.phases.total = start.elapsed();
        Ok((sum, report))
    }

    /// The shares' sums added and their reports merged ([`merge`]). In point order, as on
    /// one device: a share that failed for its input fails the call (its indices in the
    /// call's numbering), one whose device failed is rerun first (on a device whose share
    /// succeeded, else on another live one). The devices' weights learn from the shares'
    /// times only where they ran at once on threads of their own (`spread`): joined in one
    /// task, a share's time holds the others' host work.
    pub(in crate::engine) async fn combine(
        &self,
        several: &Several<C>,
        shares: &[Share<'_, C>],
        outcomes: Vec<Outcome<C>>,
        scalars: &[Fr<C>],
        spread: Spread,
    ) -> Result<(Projective<C>, MsmReport)> {
        let live = several.live();
        let mut candidates: Vec<usize> = Vec::new();
        let succeeded = shares
            .iter()
            .zip(&outcomes)
            .filter(|(_, (out, _))| out.is_ok());
        for k in succeeded
            .map(|(sh, _)| sh.device)
            .chain(live.iter().copied())
        {
            if live.contains(&k) && !candidates.contains(&k) {
                candidates.push(k);
            }
        }
        let mut timed = Vec::new();
        let mut parts = Vec::new();
        for (sh, (out, time)) in shares.iter().zip(outcomes) {
            parts.push(match out {
                Ok((r, rep)) => {
                    let own = rep.backend == Backend::Gpu && sh.rerun.is_none();
                    timed.push((sh.device, sh.range.len(), time, own));
                    let run = several.run_of(sh.device, sh, &rep, time);
                    (r, rep, run)
                }
                Err(e) if !device_fault(&e) => return Err(e.at_offset(sh.range.start)),
                Err(e) => self.rerun(several, sh, e, &candidates, scalars).await?,
            });
        }
        if spread == Spread::Threads && timed.iter().all(|t| t.3) {
            let timed: Vec<_> = timed.iter().map(|&(k, len, t, _)| (k, len, t)).collect();
            several.learn(&timed);
        }
        Ok(merge(parts))
    }

    /// A share whose device failed (`why`), rerun from its host bases on the first of
    /// `candidates` that can, else on the CPU; where the configuration demands the GPU, `why`
    /// fails the call, unless every device is lost: then as a call with every device lost
    /// runs (on device 0, once replaced, or on the CPU with `DeviceLoss::FallBackToCpu`).
    async fn rerun(
        &self,
        several: &Several<C>,
        sh: &Share<'_, C>,
        why: MsmError,
        candidates: &[usize],
        scalars: &[Fr<C>],
    ) -> Result<(Projective<C>, MsmReport, DeviceRun)> {
        let points = &sh.bases.points()[..sh.range.len()];
        let host = Call::cut(BasesRef::Host(points), &scalars[sh.range.clone()]);
        let because = format!("device {} failed its share ({why})", sh.device);
        for &j in candidates.iter().filter(|&&j| j != sh.device) {
            let t = Instant::now();
            match several.devices[j].msm_here(host).await {
                Ok((r, rep)) => {
                    let moved = Share {
                        device: sh.device,
                        range: sh.range.clone(),
                        bases: sh.bases,
                        rerun: Some(format!("{because}: rerun here")),
                    };
                    let run = several.run_of(j, &moved, &rep, t.elapsed());
                    return Ok((r, rep, run));
                }
                Err(e) if device_fault(&e) => continue,
                Err(e) => return Err(e.at_offset(sh.range.start)),
            }
        }
        // No live device took it. A call that may move runs it on the CPU; one that demands
        // the GPU fails with the share's error, unless every device is lost: then it runs as
        // a call with every device lost does, as on one device (device 0's), whose
        // `device_loss` decides (its replacement waited for, or the CPU).
        let demanded = self.config.demands_gpu();
        if demanded && !several.live().is_empty() {
            return Err(why);
        }
        let t = Instant::now();
        let (r, rep) = match demanded {
            true => self.msm_here(host).await,
            false => {
                let route = Route::new(Backend::CpuArkworks, format!("{because}; on the CPU"));
                self.one_call(host, route).await
            }
        }
        .map_err(|e| e.at_offset(sh.range.start))?;
        let gpu = rep.backend == Backend::Gpu;
        let run = DeviceRun {
            device: gpu.then_some(0),
            adapter: match gpu {
                true => self.adapter_name().to_string(),
                false => "none (the CPU)".into(),
            },
            points: sh.range.clone(),
            route: format!("{:?}: {}", rep.backend, rep.route),
            time: t.elapsed(),
            rerun: Some(because),
        };
        Ok((r, rep, run))
    }
}

/// The shares' sums added and their reports merged: counts and phases summed, the first
/// share's shape kept, the backend the GPU's if any share ran there.
fn merge<C: GpuCurve>(
    parts: Vec<(Projective<C>, MsmReport, DeviceRun)>,
) -> (Projective<C>, MsmReport) {
    let mut sum = Projective::<C>::zero();
    let mut merged: Option<MsmReport> = None;
    let mut runs = Vec::new();
    for (r, rep, run) in parts {
        sum += r;
        runs.push(run);
        merged = Some(match merged {
            None => rep,
            Some(acc) => {
                let gpu = acc.backend == Backend::Gpu || rep.backend == Backend::Gpu;
                let mut acc = acc.plus_slice(rep);
                if gpu {
                    acc.backend = Backend::Gpu;
                }
                acc
            }
        });
    }
    let mut report = merged.expect("at least one share");
    report.route = format!(
        "split across {} device(s) by points; the first share's route: {}",
        runs.len(),
        report.route
    );
    report.devices = runs;
    (sum, report)
}
