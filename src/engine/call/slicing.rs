//! What one GPU call can hold (adapter limits and memory budget), and MSMs run in slices.

use std::ops::Range;
use std::time::Instant;

use ark_ec::short_weierstrass::Projective;
use ark_ff::Zero;

use crate::bases::{slice_ranges, Bases, BasesRef};
use crate::curve::GpuCurve;
use crate::engine::call::overlap::Piece;
use crate::engine::call::Call;
use crate::engine::GpuMsm;
use crate::error::{MsmError, Result};
use crate::report::MsmReport;
use crate::routing::Route;

impl<C: GpuCurve> GpuMsm<C> {
    /// The most points, up to n, whose call fits the adapter's limits and the budget with
    /// `reserve` more bytes held (bases uploaded by the call if `host`), each at the window
    /// size the engine picks for it, or at `shape` (window size, copies) on a set stored
    /// with shifted copies.
    pub(in crate::engine) fn max_call_len(
        &self,
        n: usize,
        host: bool,
        reserve: u64,
        shape: Option<(u32, u32)>,
    ) -> Option<usize> {
        let gpu = self.gpu()?;
        if n == 0 {
            return Some(0);
        }
        let fits = |m: usize| {
            let shape = shape.unwrap_or_else(|| {
                (
                    gpu.call_window(self.config.window_bits, m, C::spec().scalar_bits),
                    1,
                )
            });
            gpu.fits_call(m, host, shape, reserve)
        };
        if fits(n) {
            return Some(n);
        }
        // A call's footprint grows with its length (a longer call also picks a window at
        // least as large): the largest length that fits, by bisection.
        let (mut lo, mut hi) = (0, n);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }

    /// The slice length when an n-point GPU call on host bases must run in slices (larger
    /// than [`MsmConfig::max_slice_points`] or than one call can hold);
    /// [`MsmError::InputTooLarge`], before any host work, when not one point fits.
    pub(in crate::engine) fn slice_for(&self, n: usize) -> Result<Option<usize>> {
        let Some(mut cap) = self.max_slice_points(n) else {
            return Ok(None);
        };
        if let Some(s) = self.config.max_slice_points {
            cap = cap.min(s);
        }
        if cap == 0 {
            return Err(self.too_large_for_budget());
        }
        Ok((n > cap).then_some(cap))
    }

    pub(in crate::engine) fn too_large_for_budget(&self) -> MsmError {
        let u = self.memory_usage().unwrap_or_default();
        MsmError::InputTooLarge(format!(
            "not one point's call fits the memory budget of {} bytes ({} held by resident \
             bases; MsmConfig::memory_budget)",
            u.budget, u.resident
        ))
    }

    /// A call over more than one device part of resident set `b`: one pass over the parts
    /// one call reads ([`Bases::call_len`]), in slices of that many beyond; and where that
    /// is refused as too large ([`MsmError::InputTooLarge`]), again in slices of one part.
    /// The parts a call reads were sized when the set was loaded, against the budget and
    /// window of then: a later load, or a sibling engine with its own fixed window, may
    /// leave room for one part's call and not for theirs.
    pub(in crate::engine) async fn over_parts(
        &self,
        call: Call<'_, C>,
        b: &Bases<C>,
        route: Route,
    ) -> Result<(Projective<C>, MsmReport)> {
        let from_part = |_, r: Range<usize>| BasesRef::ResidentSlice(b, r.start / b.part_len());
        let first = match call.n() > b.call_len() {
            true => self.sliced(call, b.call_len(), &route, from_part).await,
            false => self.one_call(call, route.clone()).await,
        };
        match first {
            Err(MsmError::InputTooLarge(why)) if b.parts_per_call() > 1 => {
                let (sum, mut report) = self.sliced(call, b.part_len(), &route, from_part).await?;
                report.route += &format!(
                    "; one part a call: {} parts a call did not fit ({why})",
                    b.parts_per_call()
                );
                Ok((sum, report))
            }
            out => out,
        }
    }

    /// An MSM in slices of at most `slice` points ([`slice_ranges`]; the bases of slice k,
    /// over points `range`, from `bases(k, range)`), one call each, overlapped
    /// (`overlap.rs`: slice k + 1's host work and submission while slice k runs), the sums
    /// added on the host; the report adds up the slices' counts and times (the phases' sum
    /// may exceed the wall-clock total, which is the call's). A slice's error names its
    /// bases in the caller's numbering.
    pub(in crate::engine) async fn sliced<'a>(
        &self,
        call: Call<'a, C>,
        slice: usize,
        route: &Route,
        bases: impl Fn(usize, Range<usize>) -> BasesRef<'a, C>,
    ) -> Result<(Projective<C>, MsmReport)> {
        let start = Instant::now();
        let scalars = call.scalars;
        let ranges: Vec<Range<usize>> = slice_ranges(scalars.len(), slice).collect();
        let pieces: Vec<Piece<C>> = (ranges.iter().enumerate())
            .map(|(k, r)| Piece {
                call: Call::cut(bases(k, r.clone()), &scalars[r.clone()]),
                route: Some(route.clone()),
            })
            .collect();
        // A slice too large is named as the caller's call.
        let n = scalars.len();
        let err = |k: usize, e: MsmError| match e.at_offset(ranges[k].start) {
            MsmError::InputTooLarge(why) => MsmError::InputTooLarge(format!(
                "slice {k} (points {:?}) of a call of {n} points: {why}",
                ranges[k]
            )),
            e => e,
        };
        let done = self.run_overlapped(pieces, err).await?;
        let slices = done.len();
        let mut sum = Projective::<C>::zero();
        let mut report: Option<MsmReport> = None;
        for (r, rep) in done {
            sum += r;
            report = Some(match report {
                None => rep,
                Some(acc) => acc.plus_slice(rep),
            });
        }
        let mut report = report.expect("at least one slice");
        report.n = scalars.len();
        report.route += &format!("; {slices} slices of at most {slice} points");
        report.phases.total = start.elapsed();
        Ok((sum, report))
    }
}
