//! Step 4 of a call, [`GpuMsm::plan`]: its host work before the GPU, per path: the CPU paths
//! run the call here; the GPU paths plan its bucket entries on the device (the bucket sort,
//! [`GpuMsm::device_sort`]) or on the host (bucket lists, [`GpuMsm::host_lists`], with SRE or
//! `BucketSort::Host`), the host-list stages readied first (`engine/known_answer.rs`,
//! `host_list_stages_ready`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::AffineRepr;
use ark_ff::Zero;

use crate::bases::BasesRef;
use crate::config::BucketSort;
use crate::cpu;
use crate::curve::{Fr, GpuCurve};
use crate::digits::{
    best_fitting_window, bucket_windows, buckets_per_window, pippenger_cost, precompute_cost,
    scalar_integers, windows_for_bits, BucketPlan, DigitMatrix, SIGN_BIT,
};
use crate::engine::call::validate::check_bases;
use crate::engine::call::Call;
use crate::engine::GpuMsm;
use crate::error::{MsmError, Result};
use crate::gpu::{GpuContext, Shift};
use crate::report::{Backend, MsmReport, PhaseTimes};
use crate::routing::Route;
use crate::sre::policy::Placement;
use crate::sre::{self, SrePlan};

/// What a GPU call on the device's bucket sort adds to its route.
pub(in crate::engine) const ON_DEVICE: &str = "; bucket sort on the GPU";

/// A call after validation, routing and host work: done on the CPU, or GPU work to submit.
pub(in crate::engine) enum Planned<'a, C: GpuCurve> {
    Done(Projective<C>, Box<MsmReport>),
    Gpu(Box<OnGpu<'a, C>>),
}

/// A call planned for the GPU (`Planned::Gpu`): the call, its window, copies and bucket
/// plan, its report so far; ready to submit.
pub(in crate::engine) struct OnGpu<'a, C: GpuCurve> {
    pub(in crate::engine) report: MsmReport,
    pub(in crate::engine) start: Instant,
    /// The device its host work was planned for (its stages built and checked there): the
    /// call runs there, or fails if that device is lost since.
    pub(in crate::engine) gpu: Arc<GpuContext>,
    /// The call itself: its bases and scalars.
    pub(in crate::engine) call: Call<'a, C>,
    pub(in crate::engine) c: u32,
    /// The shifted copies of the resident part the call reads (device sort only).
    pub(in crate::engine) shift: Shift,
    pub(in crate::engine) plan: CallPlan,
    /// SRE's merged points, uploaded after the bases.
    pub(in crate::engine) merged: Vec<Affine<C>>,
    /// Time not part of its total: other calls' host work while this one was in flight (a
    /// batch), and its stages' setup on first use.
    pub(in crate::engine) overlapped: Duration,
}

/// The host-lists path's window size, bucket plan and SRE's merged points.
type HostLists<C> = (u32, BucketPlan, Vec<Affine<C>>);

/// How a GPU call's bucket entries are made.
pub(in crate::engine) enum CallPlan {
    /// The host's bucket lists (SRE, or [`BucketSort::Host`]).
    HostLists(BucketPlan),
    /// The bucket sort on the device, from the scalars, at the call's window size c.
    DeviceSort,
}

impl<C: GpuCurve> GpuMsm<C> {
    /// The bases' checks (`validate.rs`'s `check_call_bases`) and all host work before the
    /// GPU, on the path `route` chose: the CPU paths run the call here.
    pub(in crate::engine) fn plan<'a>(
        &self,
        call: Call<'a, C>,
        Route { backend, why }: Route,
    ) -> Result<Planned<'a, C>> {
        let start = Instant::now();
        let (src, bases, scalars, n) = (call.bases, call.points, call.scalars, call.n());
        tracing::Span::current().record("backend", tracing::field::debug(backend));
        let mut report = self.empty_report(src, n, backend, why);
        if n == 0 {
            return Ok(done(Projective::<C>::zero(), report, start));
        }
        let in_subgroup = self.check_call_bases(call, backend)?;
        if backend != Backend::Gpu {
            let t = Instant::now();
            let r = cpu_msm(backend, bases, scalars, in_subgroup);
            report.phases.window_reduction = t.elapsed();
            return Ok(done(r, report, start));
        }
        if n >= SIGN_BIT as usize {
            return Err(MsmError::InputTooLarge(format!(
                "{n} points; point indices must fit 31 bits"
            )));
        }
        let gpu = self.gpu_context()?;
        let placement = {
            let _s = tracing::info_span!("gpu_msm.sre_search").entered();
            let costs = gpu.profile().add_costs();
            self.sre
                .plan(&self.config, bases, scalars, costs, &mut report)
        };
        let host = matches!(src, BasesRef::Host(_));
        let on_host = placement.sre.is_some()
            || placement.digits.is_some()
            || self.config.bucket_sort == BucketSort::Host;
        let mut setup = Duration::ZERO;
        let mut fallback = None;
        let parts = src.stored_parts(n).map_or(1, <[_]>::len);
        if on_host && parts > 1 {
            fallback = Some(format!(
                "the host's bucket lists read one device part; this call reads {parts} at once"
            ));
        } else if on_host {
            let t = Instant::now();
            fallback = self.host_list_stages_ready(&gpu)?;
            setup = t.elapsed();
        }
        if let Some(why) = &fallback {
            not_applied(&mut report, why);
        }
        let mut shift = Shift::NONE;
        let plan = match fallback {
            None if on_host => self
                .host_lists(&gpu, &mut report, bases, scalars, placement)?
                .map(|(c, plan, merged)| (c, CallPlan::HostLists(plan), merged)),
            // SRE's window was never checked against the bucket sort's buffers: the bucket
            // sort picks its own then, as slicing did.
            _ => {
                let (c, s) = self.device_sort(
                    &gpu,
                    &mut report,
                    (src, n),
                    placement.c.filter(|_| placement.sre.is_none()),
                )?;
                shift = s;
                Some((c, CallPlan::DeviceSort, Vec::new()))
            }
        };
        let Some((c, plan, merged)) = plan else {
            // Every scalar zero (or every base the identity): nothing for the GPU to add,
            // and no convert stage to check host bases, so the host checks them.
            if host {
                check_bases(bases, false)?;
            }
            return Ok(done(Projective::<C>::zero(), report, start));
        };
        let mut p = OnGpu {
            report,
            start,
            gpu,
            call,
            c,
            shift,
            plan,
            merged,
            overlapped: setup,
        };
        p.report.phases.stage_setup = setup;
        self.fit_host_lists(&mut p)?;
        Ok(Planned::Gpu(Box::new(p)))
    }

    /// Runs a call planned for the host's bucket lists on the device's bucket sort instead
    /// (exact, and within what slicing checked for it) when its job does not fit: SRE's
    /// merged points (more bases than the call's n, for which slicing sized it) or the
    /// lists exceed the adapter's limits or the memory budget.
    fn fit_host_lists(&self, p: &mut OnGpu<C>) -> Result<()> {
        if !matches!(p.plan, CallPlan::HostLists(_)) || p.gpu.job_fits(&Self::job(&p.gpu, p)) {
            return Ok(());
        }
        let why = match p.merged.len() {
            0 => "the host's bucket lists do not fit (adapter limits or memory budget)".to_string(),
            m => format!(
                "SRE's {m} merged points do not fit beside the {} bases (adapter limits or \
                 memory budget)",
                p.call.n()
            ),
        };
        let report = &mut p.report;
        not_applied(report, &why);
        report.num_entries = 0;
        (p.c, p.shift) = self.device_sort(&p.gpu, report, (p.call.bases, p.call.n()), None)?;
        p.plan = CallPlan::DeviceSort;
        p.merged = Vec::new();
        Ok(())
    }

    /// A report of a call that has not run yet.
    fn empty_report(
        &self,
        src: BasesRef<C>,
        n: usize,
        backend: Backend,
        route: String,
    ) -> MsmReport {
        MsmReport {
            curve: C::NAME,
            backend,
            route,
            n,
            window_bits: None,
            num_windows: 0,
            precomputed_copies: 1,
            num_buckets: 0,
            num_entries: 0,
            gpu_timing: None,
            arithmetic: None,
            adapter: self.adapter_name().to_string(),
            sre: None,
            resident_bases: matches!(src, BasesRef::Resident(_) | BasesRef::ResidentSlice(..)),
            buffers_allocated: 0,
            dispatches: 0,
            host_time: Duration::ZERO,
            phases: PhaseTimes::default(),
            devices: Vec::new(),
        }
    }

    /// The device-sort path's window size and the copies it reads: everything per scalar
    /// happens on the GPU, at window size `c` (the policy's, the configured one or the cost
    /// model's) over every scalar bit, or, on a resident part on this device stored with
    /// shifted copies, at the part's c on its copies where the cost model finds that
    /// cheaper (not for short prefixes). A call that does not fit is refused before any
    /// upload (one-shot calls were sliced to fit).
    fn device_sort(
        &self,
        gpu: &GpuContext,
        report: &mut MsmReport,
        (src, n): (BasesRef<C>, usize),
        c: Option<u32>,
    ) -> Result<(u32, Shift)> {
        let host = matches!(src, BasesRef::Host(_));
        // Only the configuration fixes the window: `c` here is the cost model's too (SRE's
        // plain window when its plan was not applied).
        let fixed = self.config.window_bits;
        let own =
            c.unwrap_or_else(|| gpu.call_window(self.config.window_bits, n, C::spec().scalar_bits));
        let parts = src.stored_parts(n).filter(|parts| gpu.holds(&parts[0]));
        let held = parts.map_or(Shift::NONE, |parts| parts[0].shift());
        let (costs, bits) = (gpu.profile().add_costs(), C::spec().scalar_bits);
        let forced = self.read_copies_always.load(Ordering::Acquire);
        let fits = |c: u32, k: u32| gpu.fits_call(n, host, (c, k), 0);
        // The copies where they are cheaper and fit; else copy 0 at the call's own window.
        // Where that does not fit: the copies if they do (a part sized for the copies'
        // window always runs at it), else, with no window fixed, the cheapest window that
        // fits (the cost model's may bind no buckets under a low binding limit).
        let copies = held
            .window_bits()
            .filter(|&set_c| fits(set_c, held.copies()));
        let cheaper = |set_c| {
            forced
                || precompute_cost(n, set_c, held.copies(), bits, costs)
                    < pippenger_cost(n, own, bits, costs)
        };
        let own_fits = fits(own, 1);
        let (c, shift) = match copies {
            Some(set_c) if cheaper(set_c) || !own_fits => (set_c, held),
            _ if own_fits => (own, Shift::NONE),
            _ => match best_fitting_window(n, bits, costs, |c| fits(c, 1)) {
                Some(c) if fixed.is_none() => (c, Shift::NONE),
                _ => return Err(self.call_too_large(gpu, n, host, own, fixed.is_some())),
            },
        };
        if !own_fits {
            report.route += &format!("; c = {c}: the cost model's {own} does not fit the device");
        }
        let copies = shift.copies();
        let w = bucket_windows(c, copies, bits);
        report.window_bits = Some(c);
        report.num_windows = w;
        report.precomputed_copies = copies;
        report.num_buckets = w * buckets_per_window(c);
        report.route += ON_DEVICE;
        if copies > 1 {
            report.route += &format!("; bases precomputed, {copies} copies");
        }
        if let Some(p) = parts.filter(|p| p.len() > 1) {
            report.route += &format!("; {} device parts in one pass", p.len());
        }
        Ok((c, shift))
    }

    /// [`MsmError::InputTooLarge`] for an n-point call at window size c (`fixed` by the
    /// caller or the configuration, else the cost model's, no other fitting either): which
    /// limit it exceeds.
    fn call_too_large(
        &self,
        gpu: &GpuContext,
        n: usize,
        host: bool,
        c: u32,
        fixed: bool,
    ) -> MsmError {
        let bases = if host { "host" } else { "resident" };
        let window = match fixed {
            true => "fixed by MsmConfig::window_bits",
            false => "no window fits",
        };
        let why = gpu.call_fit(n, host, (c, 1), 0).err().unwrap_or_default();
        MsmError::InputTooLarge(format!(
            "{n} points on {bases} bases at c = {c} ({window}): {why}"
        ))
    }

    /// The host-lists path: signed digits on the host (or SRE's placement), bucket lists
    /// cut into chunks: the window size, the plan and SRE's merged points, or `None` when no
    /// digit is nonzero (no GPU work at all).
    fn host_lists(
        &self,
        gpu: &GpuContext,
        report: &mut MsmReport,
        bases: &[Affine<C>],
        scalars: &[Fr<C>],
        placement: Placement,
    ) -> Result<Option<HostLists<C>>> {
        let (c, plan, merged) = match placement {
            Placement {
                c: Some(c),
                sre: Some(sp),
                ..
            } => self.sre_plan(bases, &sp, c, report)?,
            Placement { c, digits, .. } => {
                let t = Instant::now();
                let _s = tracing::info_span!("gpu_msm.digits").entered();
                let d = match digits {
                    Some(d) => d,
                    None => {
                        let (ints, bits) = scalar_integers(bases, scalars);
                        let c = c.unwrap_or_else(|| {
                            gpu.call_window(self.config.window_bits, scalars.len(), bits)
                        });
                        DigitMatrix::from_scalar_integers(&ints, c, windows_for_bits(bits, c))
                    }
                };
                let plan = BucketPlan::from_digits(&d);
                report.phases.digits += t.elapsed();
                (d.window_bits, plan, Vec::new())
            }
        };
        report.window_bits = Some(c);
        report.num_windows = plan.num_windows;
        report.num_buckets = plan.total_buckets();
        report.num_entries = plan.entries.len();
        if plan.entries.is_empty() {
            report.route += "; no nonzero digit, nothing to add";
            return Ok(None);
        }
        Ok(Some((c, plan, merged)))
    }

    /// The merged points and bucket plan of an SRE placement.
    fn sre_plan(
        &self,
        bases: &[Affine<C>],
        sp: &SrePlan,
        c: u32,
        report: &mut MsmReport,
    ) -> Result<(u32, BucketPlan, Vec<Affine<C>>)> {
        let tm = Instant::now();
        let merged = {
            let _s = tracing::info_span!("gpu_msm.merged_points", pairs = sp.pairs.len()).entered();
            sre::merged_points(bases, &sp.pairs)
        };
        report.phases.merged_points = tm.elapsed();
        let t = Instant::now();
        let _s = tracing::info_span!("gpu_msm.digits").entered();
        let rows = sp.placement_rows(|k| !merged[k].is_zero());
        if rows.rows() >= SIGN_BIT as usize {
            return Err(MsmError::InputTooLarge(format!(
                "{} points with merged ones; point indices must fit 31 bits",
                rows.rows()
            )));
        }
        let plan = BucketPlan::from_digits(&rows);
        report.phases.digits += t.elapsed();
        Ok((c, plan, merged))
    }
}

/// A call planned for the host's bucket lists runs on the device's bucket sort: the route
/// says why, and an SRE report stays, not applied (so that SRE's cost model learns
/// nothing from it).
fn not_applied(report: &mut MsmReport, why: &str) {
    report.route += &format!("; {why}");
    if let Some(sre) = report.sre.as_mut() {
        sre.applied = false;
        sre.reason += &format!("; not applied: {why}");
    }
}

/// A call finished on the host: its sum and its report, timed from `start`.
fn done<'a, C: GpuCurve>(
    sum: Projective<C>,
    mut report: MsmReport,
    start: Instant,
) -> Planned<'a, C> {
    report.phases.total = start.elapsed();
    report.host_time = report.phases.total;
    Planned::Done(sum, Box::new(report))
}

/// An MSM on a CPU path (equal lengths; `in_subgroup`: every base is known to be in the subgroup).
fn cpu_msm<C: GpuCurve>(
    backend: Backend,
    bases: &[Affine<C>],
    scalars: &[Fr<C>],
    in_subgroup: bool,
) -> Projective<C> {
    if backend == Backend::CpuDoubleAndAdd {
        let _s = tracing::info_span!("gpu_msm.double_and_add").entered();
        return cpu::double_and_add(bases, scalars);
    }
    let _s = tracing::info_span!("gpu_msm.arkworks_msm").entered();
    cpu::arkworks_msm(bases, scalars, in_subgroup)
}
