//! The bucket reduction's plan (`shaders/reduce.wgsl`): how a window's buckets are dealt to
//! the `reduce_level` passes and `reduce_windows`, fixed by the window shape alone, and the
//! additions each pass does (`counts.rs` adds them up).
//!
//! Every pass hands on m items with the window's value R = sum (i + 1) t_i + m sum z_i; a
//! level deals m items to m / J threads, J items each (about 2 additions an item on level 0,
//! over the buckets, which have no z; 3 over items), and `reduce_windows` ends with at most
//! [`MAX_FINAL_ITEMS`] a window, one workgroup a window. Every count here is a power of two:
//! the shaders take log2 as the trailing zeros.

use crate::gpu::shader::contract::LevelParams;
use crate::gpu::shader::field::WORKGROUP_SIZE;

/// Buckets one thread of level 0 sums (its J; fewer when a window has fewer): a window of B
/// buckets has S = B / 16 segments, level 0's items.
pub const LEVEL0_RUN_LENGTH: u32 = 16;

/// Items one thread of a level after level 0 takes (J there).
pub const LEVEL_RUN_LENGTH: u32 = 16;

/// Most items one `reduce_windows` lane takes, in a row.
pub const FINAL_ITEMS_PER_LANE: u32 = 16;

/// Most items of one window that `reduce_windows` takes: more segments than this go through
/// more `reduce_level` passes (windows of 16 bits and more).
pub const MAX_FINAL_ITEMS: u32 = WORKGROUP_SIZE * FINAL_ITEMS_PER_LANE;

/// Most `reduce_level` passes: 22-bit windows (`config::MAX_PRECOMPUTED_WINDOW_BITS`) have
/// 2^21 buckets, then 2^17 segments, 2^13 and 2^9 items (`levels_end_within_the_last_pass`).
pub const MAX_REDUCE_LEVELS: usize = 3;

const _: () = assert!(
    LEVEL0_RUN_LENGTH.is_power_of_two()
        && LEVEL_RUN_LENGTH.is_power_of_two()
        && LEVEL_RUN_LENGTH > 1
        && MAX_FINAL_ITEMS.is_power_of_two()
);

/// The `reduce_level` passes of a window of `buckets` buckets: level 0 takes the buckets to
/// its segments, each level after it `count_in` items a window to `count_out`, until at
/// most [`MAX_FINAL_ITEMS`] remain.
pub fn reduce_levels(buckets: u32) -> Vec<LevelParams> {
    let segments = buckets / LEVEL0_RUN_LENGTH.min(buckets);
    let mut levels = vec![LevelParams {
        count_in: buckets,
        count_out: segments,
        from_buckets: 1,
        ..Default::default()
    }];
    let mut m = segments;
    while m > MAX_FINAL_ITEMS {
        let out = m / LEVEL_RUN_LENGTH;
        levels.push(LevelParams {
            count_in: m,
            count_out: out,
            ..Default::default()
        });
        m = out;
    }
    levels
}

/// Items a window hands `reduce_windows` after `levels`.
pub fn final_items(levels: &[LevelParams]) -> u32 {
    levels.last().map_or(0, |l| l.count_out)
}

fn bits(x: u64) -> u64 {
    64 - x.leading_zeros() as u64
}

/// Additions (doublings included) of one window's `reduce_level` pass: per thread 2J - 1
/// for T and A; over items (not level 0) J more for Z (the first onto the identity) and
/// log2(J) doublings of Z (A starts as J Z).
pub fn level_adds(level: &LevelParams) -> u64 {
    let run = (level.count_in / level.count_out) as u64;
    let z = if level.from_buckets != 0 {
        0
    } else {
        run + run.trailing_zeros() as u64
    };
    level.count_out as u64 * (2 * run - 1 + z)
}

/// Additions of one window's `reduce_windows` over m items: per lane with items, 3M for its
/// running sums, log2(m) doublings of z, bits(lM) - 1 doublings and popcount(lM) additions
/// for lM Tot; then the tree over those lanes.
pub fn window_adds(m: u32) -> u64 {
    let own = (m / WORKGROUP_SIZE).max(1) as u64;
    let lanes = (m as u64).min(WORKGROUP_SIZE as u64);
    let lane: u64 = (0..lanes)
        .map(|l| {
            let off = l * own;
            let scale = bits(off).saturating_sub(1) + off.count_ones() as u64;
            3 * own + scale + (m as u64).trailing_zeros() as u64
        })
        .sum();
    lane + lanes - 1
}

/// Points one `reduce_level` thread of `level` moves through its A slot (the z half of its
/// own item): a store of A's start (the identity, or J Z over items) and a load and a store
/// for each of its J - 1 additions onto A: (loads, stores). Its input items and its T are
/// counted apart.
pub fn level_slot_points(level: &LevelParams) -> (u64, u64) {
    let run = (level.count_in / level.count_out) as u64;
    (run - 1, run)
}

/// Points one window's `reduce_windows` moves through its lanes' S slots: per lane with
/// items a store of m Z, a load and a store for each of its M + popcount(off) additions
/// onto S, and the load of S before the tree: (loads, stores).
pub fn window_slot_points(m: u32) -> (u64, u64) {
    let own = (m / WORKGROUP_SIZE).max(1) as u64;
    let lanes = (m as u64).min(WORKGROUP_SIZE as u64);
    let onto: u64 = (0..lanes)
        .map(|l| own + (l * own).count_ones() as u64)
        .sum();
    (onto + lanes, onto + lanes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_end_within_the_last_pass() {
        // Windows of 2..=22 bits: B = 2^(c-1) buckets.
        for c in 2..=crate::config::MAX_PRECOMPUTED_WINDOW_BITS {
            let b = 1 << (c - 1);
            let levels = reduce_levels(b);
            let s = levels[0].count_out;
            assert_eq!(s * LEVEL0_RUN_LENGTH.min(b), b);
            assert!(levels.len() <= MAX_REDUCE_LEVELS, "c = {c}");
            let m = final_items(&levels);
            assert!(
                (1..=MAX_FINAL_ITEMS).contains(&m) && m.is_power_of_two(),
                "c = {c}"
            );
            assert_eq!(
                (
                    levels[0].count_in,
                    levels[0].count_out,
                    levels[0].from_buckets
                ),
                (b, s, 1)
            );
            for l in &levels[1..] {
                assert_eq!(l.count_in, l.count_out * LEVEL_RUN_LENGTH);
                assert_eq!(l.from_buckets, 0);
            }
        }
        // m = 1: one lane, 3 steps for its item, no doubling, no tree; m = 2: lane 0 as for
        // m = 1 plus one doubling of z (4), lane 1 also adds Tot once (5), one tree step.
        assert_eq!(window_adds(1), 3);
        assert_eq!(window_adds(2), 4 + 5 + 1);
        // c = 16: 2048 segments of 16 buckets, one more level to 128 items; c = 15: none.
        assert_eq!(reduce_levels(1 << 15)[0].count_out, 2048);
        assert_eq!(final_items(&reduce_levels(1 << 15)), 128);
        assert_eq!(reduce_levels(1 << 14).len(), 1);
    }

    /// The reduction's form, run on integers: every pass's items keep
    /// R = sum (i + 1) t_i + m sum z_i, and the passes end with sum (k + 1) S_k.
    #[test]
    fn the_form_holds_on_integers() {
        for c in [2u32, 5, 11, 13, 16, 17, 20] {
            let b = 1u32 << (c - 1);
            let sums: Vec<u128> = (0..b as u128).map(|k| (k * 7919 + 13) % 1009).collect();
            let want: u128 = sums
                .iter()
                .enumerate()
                .map(|(k, s)| (k as u128 + 1) * s)
                .sum();
            let levels = reduce_levels(b);
            let (s, run) = (
                levels[0].count_out,
                levels[0].count_in / levels[0].count_out,
            );
            // Level 0: thread s takes buckets j S + s.
            let mut items: Vec<(u128, u128)> = (0..s as usize)
                .map(|i| {
                    let col = (0..run as usize).map(|j| sums[j * s as usize + i]);
                    let t: u128 = col.clone().sum();
                    let a: u128 = col.enumerate().map(|(j, x)| j as u128 * x).sum();
                    (t, a)
                })
                .collect();
            for l in &levels[1..] {
                let (m_out, run) = (l.count_out as usize, (l.count_in / l.count_out) as u128);
                items = (0..m_out)
                    .map(|i| {
                        let col = (0..run as usize).map(|j| items[j * m_out + i]);
                        let t: u128 = col.clone().map(|x| x.0).sum();
                        let a: u128 = col.clone().enumerate().map(|(j, x)| j as u128 * x.0).sum();
                        let z: u128 = col.map(|x| x.1).sum();
                        (t, a + run * z)
                    })
                    .collect();
            }
            let m = items.len() as u128;
            let got: u128 = items
                .iter()
                .enumerate()
                .map(|(i, (t, z))| (i as u128 + 1) * t + m * z)
                .sum();
            assert_eq!(got, want, "c = {c}");
            // reduce_windows: lane l takes items [l M, (l + 1) M) from the top.
            let own = (m as u32 / WORKGROUP_SIZE).max(1) as usize;
            let lanes: u128 = (0..WORKGROUP_SIZE as usize)
                .filter(|l| l * own < items.len())
                .map(|l| {
                    let (off, (mut run, mut w, mut z)) = (l * own, (0, 0, 0));
                    for (t, zz) in items[off..off + own].iter().rev() {
                        run += t;
                        w += run;
                        z += zz;
                    }
                    w + off as u128 * run + m * z
                })
                .sum();
            assert_eq!(lanes, want, "c = {c}");
        }
    }
}
