//! What a call checks before it runs: lengths and ownership, and its bases (on the curve
//! with reduced coordinates, in the prime-order subgroup (G1 or G2) with `validate_subgroup`).

use ark_ec::short_weierstrass::Affine;
use ark_ec::AffineRepr;
use rayon::prelude::*;

use crate::bases::BasesRef;
use crate::curve::{components, Fe, Fr, GpuCurve};
use crate::engine::call::Call;
use crate::engine::GpuMsm;
use crate::error::{MsmError, Result};
use crate::report::Backend;

impl<C: GpuCurve> GpuMsm<C> {
    /// Checks lengths and ownership at the entrance: the call, with the bases it uses.
    pub(in crate::engine) fn validate<'a>(
        &self,
        bases: BasesRef<'a, C>,
        scalars: &'a [Fr<C>],
    ) -> Result<Call<'a, C>> {
        let all = bases.points();
        match bases {
            BasesRef::Host(_) if all.len() != scalars.len() => Err(MsmError::LengthMismatch {
                bases: all.len(),
                scalars: scalars.len(),
            }),
            BasesRef::Resident(_) if scalars.len() > all.len() => Err(MsmError::LengthMismatch {
                bases: all.len(),
                scalars: scalars.len(),
            }),
            BasesRef::Resident(b) | BasesRef::ResidentSlice(b, _) if b.owner() != self.owner => {
                Err(MsmError::ForeignBases)
            }
            BasesRef::ResidentSlice(..) if scalars.len() > all.len() => {
                Err(MsmError::LengthMismatch {
                    bases: all.len(),
                    scalars: scalars.len(),
                })
            }
            _ => Ok(Call {
                bases,
                points: &all[..scalars.len()],
                scalars,
            }),
        }
    }

    /// The checks a call's `bases` need before `backend` runs them, and whether they are all
    /// known to be in the prime-order subgroup (G1 or G2). Host bases: on the curve on the CPU
    /// paths (the GPU's convert stage checks them there), and in the subgroup with
    /// `validate_subgroup`. Resident ones were checked on
    /// the curve when loaded; with `validate_subgroup`, the set's bases outside the subgroup are found
    /// once (at load, or at the first such call) and a call over one of them is refused.
    pub(in crate::engine) fn check_call_bases(
        &self,
        call: Call<C>,
        backend: Backend,
    ) -> Result<bool> {
        let (src, bases) = (call.bases, call.points);
        let subgroup = self.config.validate_subgroup;
        let (BasesRef::Resident(set) | BasesRef::ResidentSlice(set, _)) = src else {
            if backend != Backend::Gpu || subgroup {
                check_bases(bases, subgroup)?;
            }
            return Ok(subgroup);
        };
        let range = src.offset()..src.offset() + bases.len();
        let outside = match subgroup {
            true => Some(set.outside_subgroup()),
            false => set.outside_subgroup_if_known(),
        };
        if let Some(i) = outside.and_then(|o| o.iter().find(|i| range.contains(i))) {
            if subgroup {
                let index = i - range.start;
                return Err(MsmError::BaseNotInSubgroup { index });
            }
            return Ok(false);
        }
        Ok(outside.is_some())
    }
}

/// A base off the curve named before one outside the subgroup or a refusal for room,
/// whatever the call met first: a slice or a device's share that meets the formulas'
/// exceptional case ends the call with `BaseNotInSubgroup`, and a slice refused for room
/// ends it with `InputTooLarge`, before a later one's convert stage has checked its bases
/// on the curve. On those errors only, host bases are checked on the curve (resident ones
/// were, at load), so that the answer does not depend on the slicing, the split or the
/// load, and is the CPU route's.
pub(in crate::engine) fn off_curve_first<C: GpuCurve, T>(
    call: Call<C>,
    out: Result<T>,
) -> Result<T> {
    match (out, call.bases) {
        (
            Err(e @ (MsmError::BaseNotInSubgroup { .. } | MsmError::InputTooLarge(_))),
            BasesRef::Host(bases),
        ) => check_bases(&bases[..call.n()], false).and(Err(e)),
        (out, _) => out,
    }
}

/// Whether a coordinate is stored reduced (each component below p), as every arkworks
/// constructor but `new_unchecked` leaves it: its internal words compared with p, most
/// significant first.
fn reduced<C: GpuCurve>(x: &Fe<C>) -> bool {
    components::<C>(x).all(|c| C::from_internal_words(C::internal_words(&c)).is_some())
}

/// `MsmError::InvalidBase` for the first base off the curve or with a coordinate not
/// reduced (the identity is fine); with `subgroup`, `MsmError::BaseNotInSubgroup` for the
/// first one outside the prime-order subgroup (G1 or G2). The GPU's convert stage makes the same check
/// (`shaders/base_check.wgsl`).
///
/// Why a base outside the subgroup can never give a wrong sum on the GPU path: the complete short
/// Weierstrass formulas are exact for every pair P, Q unless P - Q has order 2, and then they
/// return (0 : 0 : 0) (Renes, Costello and Batina, 2016). (0 : 0 : 0) absorbs every later
/// addition (each output coordinate is a sum of products with one of its coordinates), so
/// the window sum comes back as (0 : 0 : 0), which is not a point and fails the host's check,
/// and the call ends here. The Edwards profile poisons its exceptional case the same way
/// (`src/gpu/shader/edwards.rs`).
pub(in crate::engine) fn check_bases<C: GpuCurve>(
    bases: &[Affine<C>],
    subgroup: bool,
) -> Result<()> {
    let valid = |p: &Affine<C>| {
        p.is_zero() || (reduced::<C>(&p.x) && reduced::<C>(&p.y) && p.is_on_curve())
    };
    let first = |bad: &(dyn Fn(&Affine<C>) -> bool + Sync)| {
        crate::host_pool::install(|| bases.par_iter().position_first(bad))
    };
    if let Some(index) = first(&|p| !valid(p)) {
        return Err(MsmError::InvalidBase { index });
    }
    if !subgroup {
        return Ok(());
    }
    match first(&|p| !p.is_in_correct_subgroup_assuming_on_curve()) {
        Some(index) => Err(MsmError::BaseNotInSubgroup { index }),
        None => Ok(()),
    }
}
