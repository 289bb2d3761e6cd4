//! The merged points R = P_i +- P_j of a search, computed in one batch on the CPU.

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::CurveGroup;
use rayon::prelude::*;

use super::MergedPair;
use crate::curve::GpuCurve;

/// R = P_i + P_j (P_i - P_j for `negate_j`) for every pair, in affine form: projective
/// additions in parallel, then one batched normalisation (a single field inversion for the
/// batch). A sum that is the point at infinity comes back as the affine identity.
pub fn merged_points<C: GpuCurve>(bases: &[Affine<C>], pairs: &[MergedPair]) -> Vec<Affine<C>> {
    crate::host_pool::install(|| {
        let sums: Vec<Projective<C>> = pairs
            .par_iter()
            .map(|p| {
                let a = Projective::<C>::from(bases[p.i as usize]);
                let b = bases[p.j as usize];
                if p.negate_j {
                    a - b
                } else {
                    a + b
                }
            })
            .collect();
        Projective::<C>::normalize_batch(&sums)
    })
}
