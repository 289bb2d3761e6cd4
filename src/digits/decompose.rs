//! Scalars to signed (or unsigned) c-bit digits, one row per scalar.

use ark_ec::short_weierstrass::Affine;
use ark_ec::AffineRepr;
use ark_ff::PrimeField;
use rayon::prelude::*;

use super::num_windows;
use crate::config::MAX_WINDOW_BITS;
use crate::curve::{Fr, GpuCurve};

/// The scalars as little-endian integers (zero where the base is the point at infinity, which
/// contributes nothing), and the largest bit length among them.
pub fn scalar_integers<C: GpuCurve>(
    bases: &[Affine<C>],
    scalars: &[Fr<C>],
) -> (Vec<[u64; 4]>, u32) {
    assert_eq!(bases.len(), scalars.len());
    crate::host_pool::install(|| {
        let ints: Vec<[u64; 4]> = scalars
            .par_iter()
            .zip(bases.par_iter())
            .map(|(s, p)| {
                if p.is_zero() {
                    [0; 4]
                } else {
                    s.into_bigint().0
                }
            })
            .collect();
        let bits = ints
            .par_iter()
            .map(|k| {
                (0..4)
                    .rev()
                    .find(|&i| k[i] != 0)
                    .map_or(0, |i| 64 * i as u32 + 64 - k[i].leading_zeros())
            })
            .max()
            .unwrap_or(0);
        (ints, bits)
    })
}

/// Raw bits [start, start + c) of a little-endian integer given as 64-bit limbs.
fn window_bits_of(limbs: &[u64], start: u32, c: u32) -> u32 {
    let word = (start / 64) as usize;
    let off = start % 64;
    if word >= limbs.len() {
        return 0;
    }
    let mut v = limbs[word] >> off;
    if off + c > 64 && word + 1 < limbs.len() {
        v |= limbs[word + 1] << (64 - off);
    }
    (v & ((1u64 << c) - 1)) as u32
}

/// Writes the signed c-bit digits of the little-endian integer `limbs` (least significant
/// window first) into `out`. Each digit d is in (-2^(c-1), 2^(c-1)] and
/// sum_w d_w 2^(c w) equals the integer provided `out` has at least
/// ceil((bit length + 1) / c) digits (the top window then never carries out).
pub fn signed_digits_of_limbs(limbs: &[u64], c: u32, out: &mut [i32]) {
    let half = 1u32 << (c - 1);
    let mut carry = 0u32;
    for (w, d) in out.iter_mut().enumerate() {
        let raw = window_bits_of(limbs, w as u32 * c, c) + carry;
        if raw > half {
            *d = raw as i32 - (1i32 << c);
            carry = 1;
        } else {
            *d = raw as i32;
            carry = 0;
        }
    }
    debug_assert_eq!(carry, 0, "top window carried out");
}

/// Writes the plain (unsigned) c-bit windows of `limbs` into `out`, digits in [0, 2^c).
pub fn unsigned_digits_of_limbs(limbs: &[u64], c: u32, out: &mut [i32]) {
    for (w, d) in out.iter_mut().enumerate() {
        *d = window_bits_of(limbs, w as u32 * c, c) as i32;
    }
}

/// Writes the signed c-bit digits of `scalar` (least significant window first) into `out`,
/// which must hold [`num_windows`]`(c)` digits. Each digit d is in (-2^(c-1), 2^(c-1)] and
/// sum_w d_w 2^(c w) equals the scalar.
pub fn signed_digits<F: PrimeField<BigInt = ark_ff::BigInt<4>>>(
    scalar: &F,
    c: u32,
    out: &mut [i32],
) {
    signed_digits_of_limbs(&scalar.into_bigint().0, c, out);
}

/// The digits of many scalars, one row of `num_windows` digits per point.
///
/// Row i multiplies point i: the point is placed, in window w, into the bucket of |digit|,
/// subtracted when the digit is negative. A zero digit places nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigitMatrix {
    /// Window size c.
    pub window_bits: u32,
    /// Digits per row.
    pub num_windows: usize,
    /// Row-major digits, `rows() * num_windows` of them.
    pub digits: Vec<i32>,
}

impl DigitMatrix {
    /// Signed digits of `scalars` at window size c; a point at infinity gets a zero row.
    pub fn new<C: GpuCurve>(bases: &[Affine<C>], scalars: &[Fr<C>], c: u32) -> Self {
        assert_eq!(bases.len(), scalars.len());
        assert!((1..=MAX_WINDOW_BITS).contains(&c));
        let nw = num_windows(c, C::spec().scalar_bits) as usize;
        let mut digits = vec![0i32; scalars.len() * nw];
        crate::host_pool::install(|| {
            digits
                .par_chunks_mut(nw)
                .zip(scalars.par_iter().zip(bases.par_iter()))
                .for_each(|(d, (s, p))| {
                    if !p.is_zero() {
                        signed_digits(s, c, d);
                    }
                })
        });
        Self {
            window_bits: c,
            num_windows: nw,
            digits,
        }
    }

    /// Digits of integers of at most `bits` bits (little-endian 64-bit limbs), signed as in
    /// the engine or plain unsigned windows as in the SRE paper. For statistics at scalar
    /// widths other than BLS12-377's.
    pub fn from_integers(ints: &[Vec<u64>], bits: u32, c: u32, signed: bool) -> Self {
        assert!((1..=MAX_WINDOW_BITS).contains(&c));
        let nw = if signed {
            (bits + 1).div_ceil(c)
        } else {
            bits.div_ceil(c)
        } as usize;
        let mut digits = vec![0i32; ints.len() * nw];
        crate::host_pool::install(|| {
            digits
                .par_chunks_mut(nw.max(1))
                .zip(ints.par_iter())
                .for_each(|(d, k)| {
                    if signed {
                        signed_digits_of_limbs(k, c, d)
                    } else {
                        unsigned_digits_of_limbs(k, c, d)
                    }
                })
        });
        Self {
            window_bits: c,
            num_windows: nw,
            digits,
        }
    }

    /// Signed digits of scalar integers (from [`scalar_integers`]) in `windows` windows of c
    /// bits; `windows` must cover the largest integer ([`super::windows_for_bits`]).
    pub fn from_scalar_integers(ints: &[[u64; 4]], c: u32, windows: u32) -> Self {
        assert!((1..=MAX_WINDOW_BITS).contains(&c));
        let nw = windows as usize;
        let mut digits = vec![0i32; ints.len() * nw];
        if nw > 0 {
            crate::host_pool::install(|| {
                digits
                    .par_chunks_mut(nw)
                    .zip(ints.par_iter())
                    .for_each(|(d, k)| signed_digits_of_limbs(k, c, d))
            });
        }
        Self {
            window_bits: c,
            num_windows: nw,
            digits,
        }
    }

    /// Number of rows (points).
    pub fn rows(&self) -> usize {
        self.digits.len() / self.num_windows.max(1)
    }

    /// The digits of row i.
    pub fn row(&self, i: usize) -> &[i32] {
        &self.digits[i * self.num_windows..(i + 1) * self.num_windows]
    }

    /// Number of nonzero digits: the bucket entries, that is the additions of plain point
    /// merging.
    pub fn nonzero(&self) -> usize {
        crate::host_pool::install(|| self.digits.par_iter().filter(|&&d| d != 0).count())
    }
}
