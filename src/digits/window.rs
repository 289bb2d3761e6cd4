//! How many windows and buckets a window size c gives, the cost model of the GPU pipeline
//! and the window size that minimises it.

use crate::config::{MAX_PRECOMPUTED_WINDOW_BITS, MAX_WINDOW_BITS, MIN_WINDOW_BITS};

/// Products of F_p in a profile's two bucket additions on a curve group: the cost model's
/// weights (`CurveProfile::add_costs`, from the step tables: `program.rs`, `edwards.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddCosts {
    /// One mixed addition (a bucket plus a stored base): the accumulation's.
    pub mixed_add: u64,
    /// One projective addition: the carry levels' and the reduction's.
    pub add: u64,
}

impl AddCosts {
    /// The Renes-Costello-Batina complete formulas of `Limbs13` and `Limbs29` on a G1 whose
    /// b is a small integer (its multiplications by 3b are additions).
    pub const RCB: AddCosts = AddCosts {
        mixed_add: 11,
        add: 12,
    };
    /// The twisted Edwards formulas of `Limbs29Edwards`, bases stored precomputed.
    pub const EDWARDS: AddCosts = AddCosts {
        mixed_add: 7,
        add: 9,
    };
}

/// Number of signed c-bit windows for scalars of a field of `scalar_bits` bits (the curve's
/// r: 253 for BLS12-377, 254 for BN254, 255 for BLS12-381).
///
/// Digits lie in (-2^(c-1), 2^(c-1)], so a window may carry one into the next. With
/// ceil((bits + 1) / c) windows the top window holds fewer than c - 1 scalar bits, so its
/// digit plus a carry never exceeds 2^(c-1) and never carries out.
pub fn num_windows(c: u32, scalar_bits: u32) -> u32 {
    (scalar_bits + 1).div_ceil(c)
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
        (bits + 1).div_ceil(c)
    }
}

/// Field multiplications of the GPU pipeline for n points at window size c: n mixed
/// additions per window into the buckets, then two projective additions per bucket for the
/// running sums of the reduction, for scalars of at most `bits` bits (the curve's scalar
/// bits, or fewer where a call's scalars are smaller: only the windows they need).
pub fn pippenger_cost(n: usize, c: u32, bits: u32, costs: AddCosts) -> u64 {
    let w = windows_for_bits(bits, c) as u64;
    let b = buckets_per_window(c) as u64;
    w * (n as u64 * costs.mixed_add + 2 * b * costs.add)
}

/// The window size of a call on n scalars of at most `bits` bits: `configured`
/// (`MsmConfig::window_bits`) if set, else the cost model's under `costs`, the engine's
/// profile's. Every window choice of the engine and of SRE goes through here, but that of
/// a set with shifted copies ([`choose_precompute`], `engine/load.rs`) and that of a call
/// whose window here does not fit the device ([`best_fitting_window`], the bucket sort's
/// `engine/call/plan.rs`, `device_sort`).
pub fn choose_window(configured: Option<u32>, n: usize, bits: u32, costs: AddCosts) -> u32 {
    configured.unwrap_or_else(|| best_window_bits(n.max(1), bits, costs))
}

/// The window size c that minimises [`pippenger_cost`] for n scalars of at most `bits`
/// bits (the smaller c on a tie).
pub fn best_window_bits(n: usize, bits: u32, costs: AddCosts) -> u32 {
    best_fitting_window(n, bits, costs, |_| true).expect("every window fits")
}

/// [`best_window_bits`] among the window sizes `fits` accepts (a call whose cost-model
/// window binds no buckets on the device runs at the cheapest one that does); `None` if it
/// accepts none.
pub fn best_fitting_window(
    n: usize,
    bits: u32,
    costs: AddCosts,
    fits: impl Fn(u32) -> bool,
) -> Option<u32> {
    (MIN_WINDOW_BITS.max(2)..=MAX_WINDOW_BITS)
        .filter(|&c| fits(c))
        .min_by_key(|&c| (pippenger_cost(n, c, bits.max(1), costs), c))
}

/// Windows of buckets of a call at window size c on bases stored with `copies` shifted
/// copies (`config::Precompute`): its `num_windows(c, scalar_bits)` digit windows fold onto
/// ceil(W / copies) of them, window w of point i adding into window w mod W' as copy
/// w / W'.
pub fn bucket_windows(c: u32, copies: u32, scalar_bits: u32) -> u32 {
    num_windows(c, scalar_bits).div_ceil(copies.max(1))
}

/// [`pippenger_cost`] on bases stored with `copies` shifted copies: the same n W mixed
/// additions, the reduction over [`bucket_windows`] windows only.
pub fn precompute_cost(n: usize, c: u32, copies: u32, scalar_bits: u32, costs: AddCosts) -> u64 {
    calls_cost(n as u64, (c, copies), 1, scalar_bits, costs)
}

/// [`precompute_cost`] of n points in `calls` calls (each over as many device parts as it
/// binds): each call reduces its own buckets.
fn calls_cost(n: u64, (c, copies): (u32, u32), calls: u64, bits: u32, costs: AddCosts) -> u64 {
    let reduction = bucket_windows(c, copies, bits) as u64 * 2 * buckets_per_window(c) as u64;
    num_windows(c, bits) as u64 * n * costs.mixed_add + calls * reduction * costs.add
}

/// How much more than the fewest multiplications `Precompute::Auto` accepts for fewer
/// copies (less memory), in percent.
pub const AUTO_TOLERANCE_PERCENT: u64 = 1;

/// The window size and copy count of `config::Precompute::Auto` for a set of n bases.
/// `calls(c, k)`: in how many calls an n-point call on the set runs with k copies at c
/// (its device parts, as many a call as the device binds and the call fits), or `None`
/// where its copies and a call beside them do not fit; each call reduces its own buckets,
/// so a shape costs `calls` reductions, and no shape with copies may take more calls than
/// the set without them. Among the shapes that fit, those whose
/// multiplications are within [`AUTO_TOLERANCE_PERCENT`] of the fewest; of them the fewest
/// copies, then the smaller c. `configured` (`LoadOptions::window_bits` or
/// `MsmConfig::window_bits`) fixes the copies' c; the set without copies (one copy, at the
/// configured c if within `MAX_WINDOW_BITS`, else at the cost model's) is always among the
/// shapes, and the answer where nothing fits.
pub fn choose_precompute(
    configured: Option<u32>,
    n: usize,
    scalar_bits: u32,
    costs: AddCosts,
    calls: impl Fn(u32, u32) -> Option<u64>,
) -> (u32, u32) {
    let sizes: Vec<u32> = match configured {
        Some(c) => vec![c],
        None => (MIN_WINDOW_BITS.max(2)..=MAX_PRECOMPUTED_WINDOW_BITS).collect(),
    };
    let n = n.max(1) as u64;
    // The set without copies: its calls stay within MAX_WINDOW_BITS.
    let plain = configured.filter(|&c| c <= MAX_WINDOW_BITS);
    let plain = choose_window(plain, n as usize, scalar_bits, costs);
    let mut options: Vec<((u32, u32), u64)> = Vec::new();
    let plain_calls = calls(plain, 1).filter(|&p| p > 0);
    if let Some(p) = plain_calls {
        options.push(((plain, 1), calls_cost(n, (plain, 1), p, scalar_bits, costs)));
    }
    // Copies never in more calls than the set without them: each call costs more than its
    // reduction (sort, scan, dispatches), which the count leaves out; on lavapipe at 2^20,
    // 4 copies in 5 parts, a call each, ran 12% slower than 2 plain parts (docs/PERF.md).
    let most_calls = plain_calls.unwrap_or(u64::MAX);
    for &c in &sizes {
        for k in 2..=num_windows(c, scalar_bits) {
            if let Some(p) = calls(c, k).filter(|&p| p > 0 && p <= most_calls) {
                options.push(((c, k), calls_cost(n, (c, k), p, scalar_bits, costs)));
            }
        }
    }
    let Some(least) = options.iter().map(|o| o.1).min() else {
        return (plain, 1);
    };
    options
        .into_iter()
        .filter(|o| o.1 * 100 <= least * (100 + AUTO_TOLERANCE_PERCENT))
        .map(|o| o.0)
        .min_by_key(|&(c, k)| (k, c))
        .expect("the least is within 1% of itself")
}
