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
//! | `digits_tests.rs` | digits, plans and the cost model against arkworks and brute force |

mod bucket_plan;
mod decompose;
mod merge_plan;
mod window;

pub use bucket_plan::*;
pub use decompose::*;
pub use merge_plan::*;
pub use window::*;

/// Bit length of BLS12-377's scalar field modulus r, 253: the tests' curve (every window
/// count takes the curve's own, `CurveSpec::scalar_bits`).
#[cfg(test)]
pub(crate) const SCALAR_BITS: u32 = 253;

/// Bit 31 of an entry: the digit was negative, so the point is subtracted.
pub const SIGN_BIT: u32 = 1 << 31;

#[cfg(test)]
#[path = "digits_tests.rs"]
mod tests;
