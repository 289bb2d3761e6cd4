//! The merged points R = P_i +- P_j of a search, computed in one batch on the CPU.

use ark_bls12_377::{G1Affine, G1Projective};
use ark_ec::CurveGroup;
use rayon::prelude::*;

use super::MergedPair;

/// R = P_i + P_j (P_i - P_j for `negate_j`) for every pair, in affine form: projective
/// additions in parallel, then one batched normalisation (a single field inversion for the
/// batch). A sum that is the point at infinity comes back as the affine identity.
pub fn merged_points(bases: &[G1Affine], pairs: &[MergedPair]) -> Vec<G1Affine> {
    let sums: Vec<G1Projective> = pairs
        .par_iter()
        .map(|p| {
            let a = G1Projective::from(bases[p.i as usize]);
            let b = bases[p.j as usize];
            if p.negate_j {
                a - b
            } else {
                a + b
            }
        })
        .collect();
    G1Projective::normalize_batch(&sums)
}
