//! How many windows and buckets a window size c gives, the cost model of the GPU pipeline
//! and the window size that minimises it.

use super::SCALAR_BITS;
use crate::config::{MAX_WINDOW_BITS, MIN_WINDOW_BITS};

/// Field multiplications in one mixed (projective + affine) addition, as the cost model
/// counts them: the Renes-Costello-Batina formulas of the `Limbs13` and `Limbs32` profiles.
/// The default `Limbs32Edwards` profile does 7 (and 9 per addition); the window choice
/// still uses these counts (a per-profile cost model is future work), so it is the same on
/// every profile.
pub const MIXED_ADD_MULS: u64 = 11;
/// Field multiplications in one projective addition, as the cost model counts them (see
/// [`MIXED_ADD_MULS`]).
pub const ADD_MULS: u64 = 12;

/// Number of signed c-bit windows for a `SCALAR_BITS`-bit scalar.
///
/// Digits lie in (-2^(c-1), 2^(c-1)], so a window may carry one into the next. With
/// ceil((SCALAR_BITS + 1) / c) windows the top window holds fewer than c - 1 scalar bits,
/// so its digit plus a carry never exceeds 2^(c-1) and never carries out.
pub fn num_windows(c: u32) -> u32 {
    (SCALAR_BITS + 1).div_ceil(c)
}

/// Buckets per window with signed digits: one per magnitude 1..=2^(c-1).
pub fn buckets_per_window(c: u32) -> u32 {
    1 << (c - 1)
}

/// Signed c-bit windows that scalars of at most `bits` bits need: ceil((bits + 1) / c), so
/// that the top window never carries out; none for `bits = 0` (all scalars zero).
pub fn windows_for_bits(bits: u32, c: u32) -> u32 {
    if bits == 0 {
        0
    } else {
        (bits.min(SCALAR_BITS) + 1).div_ceil(c)
    }
}

/// Field multiplications of the GPU pipeline for n points at window size c: n mixed
/// additions per window into the buckets, then two projective additions per bucket for the
/// running sums of the reduction.
pub fn pippenger_cost(n: usize, c: u32) -> u64 {
    pippenger_cost_for_bits(n, c, SCALAR_BITS)
}

/// [`pippenger_cost`] for scalars of at most `bits` bits (only the windows they need).
pub fn pippenger_cost_for_bits(n: usize, c: u32, bits: u32) -> u64 {
    let w = windows_for_bits(bits, c) as u64;
    let b = buckets_per_window(c) as u64;
    w * (n as u64 * MIXED_ADD_MULS + 2 * b * ADD_MULS)
}

/// The window size c that minimises [`pippenger_cost`] for n points.
pub fn best_window_bits(n: usize) -> u32 {
    best_window_bits_for(n, SCALAR_BITS)
}

/// The window size c that minimises [`pippenger_cost_for_bits`] for n scalars of at most
/// `bits` bits.
pub fn best_window_bits_for(n: usize, bits: u32) -> u32 {
    (MIN_WINDOW_BITS.max(2)..=MAX_WINDOW_BITS)
        .min_by_key(|&c| (pippenger_cost_for_bits(n, c, bits.max(1)), c))
        .expect("non-empty range")
}
