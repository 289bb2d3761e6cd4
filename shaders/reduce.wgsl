// Bucket reduction: reduce_level (once or more) and reduce_windows.
// Window w needs sum_{k<B} (k + 1) b_k, where b_k is the sum in the bucket of digit
// magnitude k + 1. Every pass hands on the window's value in one form: m items (t_i, z_i),
//     R = sum_{i<m} (i + 1) t_i + m sum_{i<m} z_i,
// item i of window w kept at w S + i in `partials` (S = params.segments, the items a window
// has after level 0), both halves. The buckets are that form with t_k = b_k, z_k = 0, m = B:
// level 0 reads them (level.from_buckets), the levels after it read the partials.
//
// One level deals m items to m' = m / J threads in interleaved runs: thread s takes items
// i = j m' + s, j < J, so that neighbouring threads read neighbouring items. With
// (i + 1) = j m' + (s + 1):
//     R = sum_s (s + 1) T_s + m' sum_s (A_s + J Z_s),
//     T_s = sum_j t_{jm'+s},  A_s = sum_j j t_{jm'+s},  Z_s = sum_j z_{jm'+s},
// the same form with m' items (T_s, A_s + J Z_s). Z comes from J additions (the first onto
// the identity) and J Z from log2(J) doublings; A starts as J Z (the identity over the
// buckets, which have no z) and T and A come from one running sum over j (2J - 1
// additions): about 2 additions an item over the buckets, 3 over items. No thread
// multiplies by its own index.
//
// reduce_windows: one workgroup per window ends it. Lane l takes the contiguous items
// [off, off + M), off = l M, M = m / WORKGROUP_SIZE (one item for the first m lanes when m
// is smaller): a running sum from the top gives Tot (their t sum) and
// Wt = sum (i - off + 1) t_i, so that
//     R = sum_l (Wt_l + off_l Tot_l + m Z_l),
// off Tot by double-and-add over the bits of off, m Z by log2(m) doublings, then a tree in
// workgroup memory. Only the window sums leave the GPU.
//
// J, m and M are powers of two (log2 is countTrailingZeros here): src/gpu/planning/reduction.rs
// plans them and counts these steps. Every loop runs one point addition per step (see
// curve.wgsl for why call sites matter); a doubling is the addition P + P, which every
// profile's formulas compute (they are complete).
//
// Registers. A thread carries one point in registers, acc, and every step is acc + y with
// y loaded (a bucket, an item's half, a sum the thread keeps in memory, a point of the tree)
// or acc itself (a doubling); the sum replaces acc, or goes back to the memory y came from.
// A thread's second running sum (A, S) lives in the z half of its own item, which it alone
// reads and writes once its own z there is read. So a step holds two points and one
// addition's temporaries: carrying every running sum in registers and picking the operands
// by branches held six points, which spilled on RDNA2 (docs/PERF.md, "The shaders as a GPU
// compiler sees them").


// Bucket g's sum. On the GPU bucket sort only buckets with entries were written: an empty
// one (equal offsets) is the identity, whatever its buffer holds.
fn load_bucket(g: u32) -> Point {
    if (params.device_sort != 0u && range_is_empty(g, g + 1u)) {
        return point_identity();
    }
    var w: PointWords;
    // unroll
    for (var k = 0u; k < POINT_WORDS; k++) {
        w[k] = buckets[k * params.total_buckets + g];
    }
    return point_from_words(w);
}

// Half h of item t (h = 0: t_i, h = 1: z_i), t counted over all windows.
fn load_partial(h: u32, t: u32) -> Point {
    var w: PointWords;
    // unroll
    for (var k = 0u; k < POINT_WORDS; k++) {
        w[k] = partials[(h * POINT_WORDS + k) * params.total_segments + t];
    }
    return point_from_words(w);
}

fn store_partial(h: u32, t: u32, p: Point) {
    let a = point_to_words(p);
    // unroll
    for (var k = 0u; k < POINT_WORDS; k++) {
        partials[(h * POINT_WORDS + k) * params.total_segments + t] = a[k];
    }
}

// One level: level.count_in items a window to level.count_out (m to m'). Thread (w, s)
// reads items j m' + s of window w (level 0: buckets w B + j m' + s; after it, partials
// w S + j m' + s) and writes item own = w S + s, which no other thread of a level over
// partials reads: those levels run in place, and the thread keeps A in own's z half once
// it has read z_0 there. Over items the steps are J for Z (z_j, j = J-1 .. 0), log2(J)
// doublings, then A = J Z is stored; then, as over the buckets, for j = J-1 .. 0:
// acc += t_j and (j >= 1) A += acc. acc ends as T. On the GPU bucket sort a window without
// entries (small scalars) runs no step: its items are the identity.
@compute @workgroup_size(WORKGROUP_SIZE)
fn reduce_level(@builtin(global_invocation_id) gid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = thread_index(gid, nwg);
    let m_out = level.count_out;
    if (m_out == 0u || g >= params.num_windows * m_out) {
        return;
    }
    let w = g / m_out;
    let s = g % m_out;
    let per = level.count_in / m_out;
    // Where window w's input starts: its buckets, or its items in the partials.
    let buckets_in = level.from_buckets != 0u;
    let in_stride = select(params.segments, params.buckets_per_window, buckets_in);
    let first = w * in_stride + s;
    let own = w * params.segments + s;
    let z_steps = select(per + countTrailingZeros(per), 0u, buckets_in);
    var t_steps = 2u * per - 1u;
    if (buckets_in && params.device_sort != 0u
        && range_is_empty(w * in_stride, (w + 1u) * in_stride)) {
        t_steps = 0u;
    }
    var acc = point_identity();
    if (buckets_in) {
        store_partial(1u, own, acc);
    }
    for (var step = 0u; step < z_steps + t_steps; step++) {
        if (step == z_steps && !buckets_in) {
            // A = J Z; acc starts over as the running t sum.
            store_partial(1u, own, acc);
            acc = point_identity();
        }
        var y = acc;
        var to_a = false;
        if (step < z_steps) {
            if (step < per) {
                y = load_partial(1u, first + (per - 1u - step) * m_out);
            }
        } else {
            let k = step - z_steps;
            if ((k & 1u) == 0u) {
                let at = first + (per - 1u - k / 2u) * m_out;
                if (buckets_in) {
                    y = load_bucket(at);
                } else {
                    y = load_partial(0u, at);
                }
            } else {
                y = load_partial(1u, own);
                to_a = true;
            }
        }
        let p = point_add(acc, y);
        if (to_a) {
            store_partial(1u, own, p);
        } else {
            acc = p;
        }
    }
    store_partial(0u, own, acc);
}

// The points a tree step hands down: lane half + i's at i (half <= WORKGROUP_SIZE / 2).
var<workgroup> tree: array<PointWords, WORKGROUP_SIZE / 2u>;

// One loop with one point addition in it. A lane's own steps, each skipped where it has no
// items: M for Z (its items' z from the top), log2(m) doublings, S = m Z stored in its first
// item's z half; 2M for T from the top (acc += t_i, S += acc); 2 kbits for the bits of off,
// low to high (S += acc where the bit is set, acc doubled while higher bits remain; kbits:
// bits of the largest off, the same on every lane). Then acc = S, and the tree over the
// lanes that hold items (min(m, WORKGROUP_SIZE) of them, the others keep the identity):
// log2 of that many steps, none for m = 1, each halving the lanes: the upper half writes
// its sums between two barriers and the lower half adds them (every lane runs the same
// steps). Lane 0 ends with the window's sum.
@compute @workgroup_size(WORKGROUP_SIZE)
fn reduce_windows(@builtin(workgroup_id) wid: vec3<u32>,
                  @builtin(local_invocation_index) lane: u32) {
    let w = wid.x;
    let m = params.final_items;
    let own = max(m / WORKGROUP_SIZE, 1u);
    let off = lane * own;
    let has = w < params.num_windows && off < m;
    // The lane's items are w S + off .. + own; S is kept in the first one's z half.
    let slot = w * params.segments + off;
    let top = slot + own - 1u;
    let kbits = 32u - countLeadingZeros(max(m, 1u) - 1u);
    let z_end = own + countTrailingZeros(m);
    let t_end = z_end + 2u * own;
    let own_steps = t_end + 2u * kbits;
    let lanes = clamp(m, 1u, WORKGROUP_SIZE);
    let steps = own_steps + countTrailingZeros(lanes);
    var acc = point_identity();
    for (var step = 0u; step < steps; step++) {
        if (step == z_end && has) {
            store_partial(1u, slot, acc);
            acc = point_identity();
        }
        if (step == own_steps && has) {
            acc = load_partial(1u, slot);
        }
        var adds = has;
        var y = acc;
        var to_s = false;
        if (step < own) {
            if (has) {
                y = load_partial(1u, top - step);
            }
        } else if (step < z_end) {
            // y = acc: a doubling of Z.
        } else if (step < t_end) {
            let k = step - z_end;
            to_s = (k & 1u) == 1u;
            if (has) {
                y = load_partial(select(0u, 1u, to_s), select(top - k / 2u, slot, to_s));
            }
        } else if (step < own_steps) {
            let k = step - t_end;
            let bit = k / 2u;
            if ((k & 1u) == 0u) {
                adds = has && ((off >> bit) & 1u) == 1u;
                to_s = true;
                if (adds) {
                    y = load_partial(1u, slot);
                }
            } else {
                adds = has && (off >> (bit + 1u)) != 0u;
            }
        } else {
            let half = lanes >> (step - own_steps + 1u);
            // The previous step's lower half has read its points.
            workgroupBarrier();
            if (lane >= half && lane < 2u * half) {
                tree[lane - half] = point_to_words(acc);
            }
            workgroupBarrier();
            adds = lane < half;
            if (adds) {
                y = point_from_words(tree[lane]);
            }
        }
        if (adds) {
            let p = point_add(acc, y);
            if (to_s) {
                store_partial(1u, slot, p);
            } else {
                acc = p;
            }
        }
    }
    if (steps == own_steps && has) {
        // No tree (m = 1): the loop ended before acc = S.
        acc = load_partial(1u, slot);
    }
    if (lane == 0u && w < params.num_windows) {
        let words = point_to_words(acc);
        // unroll
        for (var k = 0u; k < POINT_WORDS; k++) {
            window_sums[w * POINT_WORDS + k] = words[k];
        }
    }
}
