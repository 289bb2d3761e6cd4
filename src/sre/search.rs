//! The pair searches over a residual digit matrix.

use std::collections::VecDeque;
use std::time::Instant;

use super::{MergedPair, SreOptions};
use crate::digits::DigitMatrix;

/// Indexed search: most entries of one (window, digit) list a target examines. Lists longer
/// than this arise only when many scalars share a digit (repeated scalars, tiny windows);
/// the first this-many later scalars already hold the best partners there, and the cap keeps
/// the search O(N W) instead of O(N^2 W) on such inputs (all scalars equal, say).
pub const INDEXED_CANDIDATES_PER_LIST: usize = 64;

/// The searches look at the clock for their deadline once per this many comparisons (index
/// entries for the indexed search), and before the first.
const DEADLINE_CHECK_EVERY: u64 = 1024;

/// Search state: the residual digits and the bookkeeping every strategy shares.
pub(super) struct State {
    c: u32,
    nw: usize,
    n: usize,
    r: Vec<i32>,
    /// Nonzero digits left per scalar.
    left: Vec<u32>,
    /// Windows merged per scalar.
    merged: Vec<u32>,
    /// A scalar with this many merged windows is done (early stop).
    merged_limit: u32,
    opposite: bool,
    pairs: Vec<MergedPair>,
    comparisons: u64,
    deadline: Option<Instant>,
    deadline_hit: bool,
    /// `comparisons` at which to look at the clock next.
    next_check: u64,
}

impl State {
    pub(super) fn new(d: &DigitMatrix, opts: &SreOptions, deadline: Option<Instant>) -> Self {
        let nw = d.num_windows;
        let n = d.rows();
        let left = (0..n)
            .map(|i| d.row(i).iter().filter(|&&x| x != 0).count() as u32)
            .collect();
        // "More than t * W windows merged" stops a scalar: the limit is floor(t W) + 1.
        let merged_limit = match opts.early_stop {
            Some(t) if t.is_finite() && t >= 0.0 => (t * nw as f64).floor() as u32 + 1,
            _ => u32::MAX,
        };
        Self {
            c: d.window_bits,
            nw,
            n,
            r: d.digits.clone(),
            left,
            merged: vec![0; n],
            merged_limit,
            opposite: opts.opposite,
            pairs: Vec::new(),
            comparisons: 0,
            deadline,
            deadline_hit: false,
            next_check: 0,
        }
    }

    pub(super) fn finish(self) -> (Vec<MergedPair>, DigitMatrix, u64, bool) {
        let m = DigitMatrix {
            window_bits: self.c,
            num_windows: self.nw,
            digits: self.r,
        };
        (self.pairs, m, self.comparisons, self.deadline_hit)
    }

    fn row(&self, i: usize) -> &[i32] {
        &self.r[i * self.nw..(i + 1) * self.nw]
    }

    /// A scalar that can take part in no further merge.
    fn done(&self, i: usize) -> bool {
        self.left[i] < 2 || self.merged[i] >= self.merged_limit
    }

    /// True (and remembered) once the deadline has passed; looks at the clock at most once
    /// per [`DEADLINE_CHECK_EVERY`] comparisons.
    fn out_of_time(&mut self) -> bool {
        if self.deadline_hit {
            return true;
        }
        if let Some(d) = self.deadline {
            if self.comparisons >= self.next_check {
                self.next_check = self.comparisons + DEADLINE_CHECK_EVERY;
                self.deadline_hit = Instant::now() >= d;
            }
        }
        self.deadline_hit
    }

    /// (equal, opposite) matching windows of i and j.
    fn compare(&mut self, i: usize, j: usize) -> (u32, u32) {
        self.comparisons += 1;
        let (a, b) = (self.row(i), self.row(j));
        let mut eq = 0u32;
        let mut opp = 0u32;
        for (&x, &y) in a.iter().zip(b) {
            eq += (x != 0 && x == y) as u32;
            opp += (x != 0 && x == -y) as u32;
        }
        if !self.opposite {
            opp = 0;
        }
        (eq, opp)
    }

    /// The kind a pair with these counts would merge with, and its size, if at least two.
    fn best_kind(eq: u32, opp: u32) -> Option<(bool, u32)> {
        let (negate, m) = if opp > eq { (true, opp) } else { (false, eq) };
        (m >= 2).then_some((negate, m))
    }

    /// Merges i and j on their equal (or, with `negate`, opposite) windows.
    fn merge(&mut self, i: usize, j: usize, negate: bool) {
        let nw = self.nw;
        let mut windows = Vec::new();
        for w in 0..nw {
            let x = self.r[i * nw + w];
            let y = self.r[j * nw + w];
            let hit = x != 0 && if negate { x == -y } else { x == y };
            if hit {
                windows.push((w as u32, x));
                self.r[i * nw + w] = 0;
                self.r[j * nw + w] = 0;
            }
        }
        let m = windows.len() as u32;
        debug_assert!(m >= 2);
        self.left[i] -= m;
        self.left[j] -= m;
        self.merged[i] += m;
        self.merged[j] += m;
        self.pairs.push(MergedPair {
            i: i as u32,
            j: j as u32,
            negate_j: negate,
            windows,
        });
    }

    /// Vanilla array-based (paper 4.1): each scalar, in order, merges with every later scalar
    /// it matches until it is done.
    pub(super) fn array(&mut self) {
        for i in 0..self.n {
            if self.done(i) {
                continue;
            }
            for j in i + 1..self.n {
                if self.done(i) || self.out_of_time() {
                    break;
                }
                if self.done(j) {
                    continue;
                }
                let (eq, opp) = self.compare(i, j);
                if let Some((negate, _)) = Self::best_kind(eq, opp) {
                    self.merge(i, j, negate);
                }
            }
            if self.deadline_hit {
                return;
            }
        }
    }

    /// List-based (paper 4.2 greedy, 4.3 exhaustive). In each round the head of the list
    /// looks for a partner in the rest of the list: the first match (greedy) or the one with
    /// most matching windows (exhaustive, first on a tie). Both leave the list for the next
    /// round. Rounds repeat, over every scalar not done, until a round merges nothing; then no
    /// two scalars left match (every pair was compared in that round).
    pub(super) fn list(&mut self, exhaustive: bool) {
        let mut list: VecDeque<u32> = (0..self.n as u32)
            .filter(|&i| !self.done(i as usize))
            .collect();
        loop {
            let mut next = Vec::with_capacity(list.len());
            let mut merges = 0usize;
            while let Some(h) = list.pop_front() {
                let h = h as usize;
                if self.done(h) {
                    continue;
                }
                let mut best: Option<(usize, bool, u32)> = None;
                for (pos, &j) in list.iter().enumerate() {
                    let j = j as usize;
                    if self.done(j) {
                        continue;
                    }
                    let (eq, opp) = self.compare(h, j);
                    if let Some((negate, m)) = Self::best_kind(eq, opp) {
                        if best.is_none_or(|(_, _, bm)| m > bm) {
                            best = Some((pos, negate, m));
                        }
                        if !exhaustive {
                            break;
                        }
                    }
                }
                if let Some((pos, negate, _)) = best {
                    let j = list.remove(pos).expect("position from the scan") as usize;
                    self.merge(h, j, negate);
                    merges += 1;
                    next.push(j as u32);
                }
                next.push(h as u32);
                if self.out_of_time() {
                    return;
                }
            }
            if merges == 0 {
                return;
            }
            list = next
                .into_iter()
                .filter(|&i| !self.done(i as usize))
                .collect();
        }
    }

    /// First pass of the indexed search: scalars with identical digit rows (or negated ones,
    /// when opposite matches are on) pair up in index order, since each is the other's best
    /// possible partner: every nonzero window matches. Repeated scalars, the inputs where
    /// SRE pays most, are then found in O(N W) instead of through long index lists.
    fn pair_identical_rows(&mut self) {
        use std::collections::hash_map::Entry;
        use std::collections::HashMap;
        // Row, with its sign flipped when opposite matches are on and its first nonzero
        // digit is negative: rows equal up to sign share a key.
        let mut waiting: HashMap<Vec<i32>, (u32, bool)> = HashMap::new();
        for i in 0..self.n {
            if self.done(i) {
                continue;
            }
            self.comparisons += 1;
            let row = self.row(i);
            let flip = self.opposite && row.iter().find(|&&d| d != 0).is_some_and(|&d| d < 0);
            let k: Vec<i32> = if flip {
                row.iter().map(|d| -d).collect()
            } else {
                row.to_vec()
            };
            match waiting.entry(k) {
                Entry::Occupied(e) => {
                    let (j, jflip) = e.remove();
                    self.merge(j as usize, i, jflip != flip);
                }
                Entry::Vacant(e) => {
                    e.insert((i as u32, flip));
                }
            }
            if self.out_of_time() {
                return;
            }
        }
    }

    /// Indexed: scalars listed by (window, digit); each target, in order, counts for every
    /// later scalar how many of its digits it shares (equal, and opposite when enabled), using
    /// only the lists of its own digits, merges with the best, and repeats until no later
    /// scalar shares two windows with it. Earlier scalars need no look: when one was the
    /// target it left no match of two windows among the candidates it saw, and merges only
    /// remove windows.
    pub(super) fn indexed(&mut self) {
        self.pair_identical_rows();
        let (nw, n, c) = (self.nw, self.n, self.c);
        // Digits lie in (-2^c, 2^c) for both signed and unsigned windows.
        let span = (1usize << (c + 1)) + 1;
        let key = |w: usize, d: i32| w * span + (d + (1i32 << c)) as usize;
        let mut offsets = vec![0u32; nw * span + 1];
        for i in 0..n {
            for (w, &d) in self.row(i).iter().enumerate() {
                if d != 0 {
                    offsets[key(w, d) + 1] += 1;
                }
            }
        }
        for k in 1..offsets.len() {
            offsets[k] += offsets[k - 1];
        }
        let mut fill = offsets.clone();
        let mut lists = vec![0u32; *offsets.last().unwrap_or(&0) as usize];
        for i in 0..n {
            for w in 0..nw {
                let d = self.r[i * nw + w];
                if d != 0 {
                    let k = key(w, d);
                    lists[fill[k] as usize] = i as u32;
                    fill[k] += 1;
                }
            }
        }
        // cursor[k]: first entry of list k not yet known to be at or before the target.
        let mut cursor = offsets[..offsets.len() - 1].to_vec();
        let mut eq = vec![0u16; n];
        let mut opp = vec![0u16; n];
        let mut touched: Vec<u32> = Vec::new();

        for i in 0..n {
            if self.out_of_time() {
                return;
            }
            while !self.done(i) {
                for w in 0..nw {
                    let d = self.r[i * nw + w];
                    if d == 0 {
                        continue;
                    }
                    let kinds: &[(i32, bool)] = if self.opposite {
                        &[(1, false), (-1, true)]
                    } else {
                        &[(1, false)]
                    };
                    for &(sign, is_opp) in kinds {
                        let want = sign * d;
                        if want.unsigned_abs() >= 1 << c {
                            continue;
                        }
                        let k = key(w, want);
                        let end = offsets[k + 1] as usize;
                        let mut at = cursor[k] as usize;
                        while at < end && lists[at] as usize <= i {
                            at += 1;
                        }
                        cursor[k] = at as u32;
                        let stop = end.min(at + INDEXED_CANDIDATES_PER_LIST);
                        self.comparisons += (stop - at) as u64;
                        for &j in &lists[at..stop] {
                            let ju = j as usize;
                            // Stale entries: the window was merged away since indexing.
                            if self.r[ju * nw + w] != want || self.done(ju) {
                                continue;
                            }
                            if eq[ju] == 0 && opp[ju] == 0 {
                                touched.push(j);
                            }
                            if is_opp {
                                opp[ju] += 1;
                            } else {
                                eq[ju] += 1;
                            }
                        }
                    }
                }
                let mut best: Option<(u32, bool, u32)> = None;
                for &j in &touched {
                    let ju = j as usize;
                    if let Some((negate, m)) = Self::best_kind(eq[ju] as u32, opp[ju] as u32) {
                        let better = match best {
                            None => true,
                            Some((bj, _, bm)) => m > bm || (m == bm && j < bj),
                        };
                        if better {
                            best = Some((j, negate, m));
                        }
                    }
                    eq[ju] = 0;
                    opp[ju] = 0;
                }
                touched.clear();
                match best {
                    Some((j, negate, _)) => self.merge(i, j as usize, negate),
                    None => break,
                }
            }
        }
    }
}
