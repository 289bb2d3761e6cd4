//! Scalar Redundancy Elimination (SRE): before bucket placement, find pairs of scalars whose
//! windows hold the same digit in two or more windows, add their points once, and place the
//! sum in those buckets instead of the two points.
//!
//! A pair (i, j) that shares m windows turns 2m bucket entries into m entries of the merged
//! point R plus the one addition that makes R: it saves m - 1 additions of the point-merging
//! phase. Bucket reduction and window reduction are unchanged.
//!
//! # Matches with signed digits
//!
//! The engine's digits are signed. A window w *matches* for (i, j) when both digits are
//! nonzero and
//! - equal, `d_i[w] = d_j[w] = d`: then d P_i + d P_j = d (P_i + P_j), R = P_i + P_j; or
//! - opposite, `d_i[w] = -d_j[w] = d` (only when [`SreOptions::opposite`] is on):
//!   d P_i - d P_j = d (P_i - P_j), R = P_i - P_j.
//!
//! One merged pair uses one kind: it takes the windows of the kind with more matches (equal
//! on a tie), at least two of them. The other kind's windows stay with i and j and may
//! match again later (with any scalar, j included). Zero digits place no point, so they never
//! match. Merged windows are removed from both scalars (the paper's "replace with X").
//!
//! # Strategies
//!
//! The paper's three searches (section 4), plus an indexed one:
//! - [`SreStrategy::Array`] (4.1): each scalar in turn is compared with every later one and
//!   merged with each one it matches, until its windows run out. O(N^2 W).
//! - [`SreStrategy::Greedy`] (4.2): rounds over a list; the head merges with the first match
//!   in the rest of the list, both leave the round; rounds repeat until one merges nothing.
//! - [`SreStrategy::Exhaustive`] (4.3): as greedy, but the head merges with its best match.
//! - [`SreStrategy::Indexed`]: scalars are indexed by (window, digit), so a target meets only
//!   scalars that share at least one of its digits; it merges with its best match among
//!   them, repeatedly. About N W (N / 2^(c-1)) digit visits on random scalars instead of
//!   N^2 W, with the exhaustive strategy's choice of partner (within
//!   [`INDEXED_CANDIDATES_PER_LIST`]).
//!
//! Early stopping (4.4): with threshold t, a scalar leaves the search once more than
//! t * W of its windows are merged.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | merged pairs, plans and their digit rows |
//! | `search.rs` | the four searches |
//! | `merge.rs` | the merged points R = P_i +- P_j, in one batch |
//! | `auto.rs` | `SreMode::Auto`'s cost model: pilots and the decision |
//! | `policy.rs` | what the engine does per call, and what it learns from measured calls |
//! | `sre_tests.rs` | the searches and plans against arkworks and each other |

pub mod auto;
mod merge;
pub(crate) mod policy;
mod search;

use std::time::Instant;

pub use crate::config::{SreOptions, SreStrategy, PAPER_EARLY_STOP};
pub use crate::report::SreStats;
pub use merge::merged_points;
pub use search::INDEXED_CANDIDATES_PER_LIST;

use crate::digits::DigitMatrix;

/// One merged pair: R = P_i + P_j (or P_i - P_j when `negate_j`), placed in `windows`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedPair {
    /// First point.
    pub i: u32,
    /// Second point.
    pub j: u32,
    /// R = P_i - P_j (opposite digits) instead of P_i + P_j.
    pub negate_j: bool,
    /// (window, digit of scalar i) for each merged window, ascending window.
    pub windows: Vec<(u32, i32)>,
}

/// The result of a search: merged pairs, the digits left to place point by point, and stats.
#[derive(Debug, Clone, PartialEq)]
pub struct SrePlan {
    /// The merged pairs, in the order found.
    pub pairs: Vec<MergedPair>,
    /// The input digits with every merged window set to zero in both scalars.
    pub residual: DigitMatrix,
    /// Statistics.
    pub stats: SreStats,
}

impl SrePlan {
    /// Digit rows for bucket placement over the point array `points ++ merged`: the residual
    /// rows, then one row per pair holding its merged windows. Pairs with `keep(k)` false
    /// (their R is the point at infinity) get a zero row.
    pub fn placement_rows(&self, keep: impl Fn(usize) -> bool) -> DigitMatrix {
        let nw = self.residual.num_windows;
        let mut digits = Vec::with_capacity(self.residual.digits.len() + self.pairs.len() * nw);
        digits.extend_from_slice(&self.residual.digits);
        for (k, p) in self.pairs.iter().enumerate() {
            let start = digits.len();
            digits.resize(start + nw, 0);
            if keep(k) {
                for &(w, d) in &p.windows {
                    digits[start + w as usize] = d;
                }
            }
        }
        DigitMatrix {
            window_bits: self.residual.window_bits,
            num_windows: nw,
            digits,
        }
    }
}

/// Runs the search `opts` on `digits`; it stops early, with what it has found, at `deadline`.
pub fn search(digits: &DigitMatrix, opts: &SreOptions, deadline: Option<Instant>) -> SrePlan {
    let start = Instant::now();
    let nonzero = digits.nonzero() as u64;
    let mut st = search::State::new(digits, opts, deadline);
    match opts.strategy {
        SreStrategy::Array => st.array(),
        SreStrategy::Greedy => st.list(false),
        SreStrategy::Exhaustive => st.list(true),
        SreStrategy::Indexed => st.indexed(),
    }
    let (pairs, residual, comparisons, deadline_hit) = st.finish();
    let merged_windows: u64 = pairs.iter().map(|p| p.windows.len() as u64).sum();
    let stats = SreStats {
        nonzero_digits: nonzero,
        pairs: pairs.len() as u64,
        merged_windows,
        additions_saved: merged_windows - pairs.len() as u64,
        comparisons,
        deadline_hit,
        search_time: start.elapsed(),
    };
    SrePlan {
        pairs,
        residual,
        stats,
    }
}

#[cfg(test)]
#[path = "sre_tests.rs"]
mod tests;
