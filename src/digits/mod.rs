//! Scalars to signed c-bit digits on the host, the window-size cost model, and the bucket
//! entry lists (grouped by bucket) and merge levels that the GPU's host-lists path consumes;
//! the test oracle of the GPU's own decomposition and bucket sort.
//!
//! | file | what it holds |
//! |---|---|
//! | `window.rs` | windows per scalar, buckets per window, the cost model and the window choice; with shifted copies: bucket windows, their cost and `Precompute::Auto`'s choice |
//! | `decompose.rs` | scalars to signed (or unsigned) digits, one row per scalar |
//! | `bucket_plan.rs` | digits to bucket entry lists, cut into chunks |
//! | `merge_plan.rs` | chunk sums to bucket sums, in levels of bounded fan-in |
//! | `tests.rs` | digits, plans and the cost model against arkworks and brute force |

use ark_bls12_377::Fr;
use ark_ff::PrimeField;

mod bucket_plan;
mod decompose;
mod merge_plan;
mod window;

pub use bucket_plan::*;
pub use decompose::*;
pub use merge_plan::*;
pub use window::*;

/// Bit length of the scalar field modulus r (253 for BLS12-377).
pub const SCALAR_BITS: u32 = Fr::MODULUS_BIT_SIZE;

/// Bit 31 of an entry: the digit was negative, so the point is subtracted.
pub const SIGN_BIT: u32 = 1 << 31;

#[cfg(test)]
mod tests;
