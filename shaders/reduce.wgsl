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
// the same form with m' items (T_s, A_s + J Z_s). T and A come from one running sum over j
// (2J - 1 additions), Z from J more (the first onto the identity) and J Z from log2(J)
// doublings, then one addition: about 2 additions an item over the buckets (no z, so no Z
// steps), 3 over items. No thread multiplies by its own index.
//
// reduce_windows: one workgroup per window ends it. Lane l takes the contiguous items
// [off, off + M), off = l M, M = m / WORKGROUP_SIZE (one item for the first m lanes when m
// is smaller): a running sum from the top gives Tot (their t sum) and
// Wt = sum (i - off + 1) t_i, so that
//     R = sum_l (Wt_l + off_l Tot_l + m Z_l),
// off Tot by double-and-add over the bits of off, m Z by log2(m) doublings, then a tree in
// workgroup memory. Only the window sums leave the GPU.
//
// J, m and M are powers of two (log2 is countTrailingZeros here): src/gpu/reduction.rs
// plans them and counts these steps. Every loop runs one point addition per step (see
// curve.wgsl for why call sites matter), its operands and destination picked by branches;
// a doubling is the addition P + P, which every profile's formulas compute (they are
// complete).


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

fn store_partial(t: u32, tp: Point, zp: Point) {
    let a = point_to_words(tp);
    let b = point_to_words(zp);
    // unroll
    for (var k = 0u; k < POINT_WORDS; k++) {
        partials[k * params.total_segments + t] = a[k];
        partials[(POINT_WORDS + k) * params.total_segments + t] = b[k];
    }
}

// reduce_level's points, by the step's choice.
const L_RUN: u32 = 0u;
const L_A: u32 = 1u;
const L_Z: u32 = 2u;

// One level: level.count_in items a window to level.count_out (m to m'). Thread (w, s)
// reads items j m' + s of window w (level 0: buckets w B + j m' + s; after it, partials
// w S + j m' + s) and writes item w S + s, which no other thread of a level over partials
// reads: those levels run in place. Over the buckets a step reads t_j or adds the running
// sum (no z); over items a third step adds z_j, then J z is made and added. On the GPU
// bucket sort a window without entries (small scalars) runs no step: its items are the
// identity.
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
    let per_item = select(3u, 2u, buckets_in);
    let loads = per_item * per;
    var steps = select(loads + countTrailingZeros(per) + 1u, loads, buckets_in);
    if (buckets_in && params.device_sort != 0u
        && range_is_empty(w * in_stride, (w + 1u) * in_stride)) {
        steps = 0u;
    }
    var running = point_identity();
    var a = point_identity();
    var z = point_identity();
    for (var step = 0u; step < steps; step++) {
        // The last step over items: a += J z.
        var dst = L_A;
        var x = a;
        var y = z;
        if (step < loads) {
            // Items j = J-1 .. 0: running += t_j; (j >= 1) a += running; z += z_j.
            let j = per - 1u - step / per_item;
            let at = first + j * m_out;
            let r = step % per_item;
            if (r == 0u) {
                dst = L_RUN;
                x = running;
                if (buckets_in) {
                    y = load_bucket(at);
                } else {
                    y = load_partial(0u, at);
                }
            } else if (r == 1u) {
                if (j == 0u) {
                    continue;
                }
                y = running;
            } else {
                dst = L_Z;
                x = z;
                y = load_partial(1u, at);
            }
        } else if (step + 1u < steps) {
            // z = J z.
            dst = L_Z;
            x = z;
        }
        let p = point_add(x, y);
        if (dst == L_RUN) {
            running = p;
        } else if (dst == L_A) {
            a = p;
        } else {
            z = p;
        }
    }
    store_partial(w * params.segments + s, running, a);
}

// The points a tree step hands down: lane half + i's at i (half <= WORKGROUP_SIZE / 2).
var<workgroup> tree: array<PointWords, WORKGROUP_SIZE / 2u>;

// reduce_windows' points, by the step's choice.
const W_RUN: u32 = 0u;
const W_WT: u32 = 1u;
const W_Z: u32 = 2u;
const W_V: u32 = 3u;

// A WindowStep's `load` when its y is a point already held.
const NO_LOAD: u32 = 2u;

// What one of a lane's steps before the tree does: nothing (`skip`), or dst = x + y, y
// being half `load` of item `item` unless `load` is NO_LOAD. `takes_bit`: the step adds
// Tot for a bit of off, after which the doublings of v count.
struct WindowStep {
    skip: bool,
    dst: u32,
    x: u32,
    y: u32,
    load: u32,
    item: u32,
    takes_bit: bool,
}

// Lane steps in order: 3M loads (running += t_i, Wt += running, z += z_i from the top),
// 2 kbits for v = off Tot (kbits: bits of the largest off; v = 2v once a bit was taken,
// v += Tot on each set bit), log2(m) doublings of z, then v += Wt and v += z.
fn window_step(step: u32, own: u32, off: u32, has: bool, kbits: u32, started: bool) -> WindowStep {
    var st = WindowStep(!has, W_V, W_V, W_V, NO_LOAD, 0u, false);
    let loads = 3u * own;
    if (step < loads) {
        let item = off + own - 1u - step / 3u;
        let r = step % 3u;
        if (r == 0u) {
            st.dst = W_RUN;
            st.x = W_RUN;
            st.load = 0u;
            st.item = item;
        } else if (r == 1u) {
            st.dst = W_WT;
            st.x = W_WT;
            st.y = W_RUN;
        } else {
            st.dst = W_Z;
            st.x = W_Z;
            st.load = 1u;
            st.item = item;
        }
        return st;
    }
    let bits_end = loads + 2u * kbits;
    if (step < bits_end) {
        let bit = kbits - 1u - (step - loads) / 2u;
        if (((step - loads) & 1u) == 0u) {
            st.skip = st.skip || !started;
        } else {
            st.skip = st.skip || ((off >> bit) & 1u) == 0u;
            st.y = W_RUN;
            st.takes_bit = true;
        }
        return st;
    }
    let log2m = countTrailingZeros(params.final_items);
    if (step < bits_end + log2m) {
        st.dst = W_Z;
        st.x = W_Z;
        st.y = W_Z;
    } else if (step == bits_end + log2m) {
        st.y = W_WT;
    } else {
        st.y = W_Z;
    }
    return st;
}

// Point `i` of a lane's four, by branches (no array indexed at run time: on a GPU it would
// live in local memory).
fn window_point(i: u32, running: Point, wt: Point, z: Point, v: Point) -> Point {
    if (i == W_RUN) {
        return running;
    } else if (i == W_WT) {
        return wt;
    } else if (i == W_Z) {
        return z;
    }
    return v;
}

// One loop with one point addition in it: the lane's steps (window_step), then the tree over
// the lanes that hold items (min(m, WORKGROUP_SIZE) of them, the others keep the identity):
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
    let kbits = 32u - countLeadingZeros(max(m, 1u) - 1u);
    let own_steps = 3u * own + 2u * kbits + countTrailingZeros(m) + 2u;
    let lanes = clamp(m, 1u, WORKGROUP_SIZE);
    let steps = own_steps + countTrailingZeros(lanes);
    var running = point_identity();
    var wt = point_identity();
    var z = point_identity();
    var v = point_identity();
    var started = false;
    for (var step = 0u; step < steps; step++) {
        var adds = false;
        var dst = W_V;
        var x = v;
        var y = v;
        if (step < own_steps) {
            let st = window_step(step, own, off, has, kbits, started);
            adds = !st.skip;
            started = started || (adds && st.takes_bit);
            dst = st.dst;
            x = window_point(st.x, running, wt, z, v);
            if (st.load == NO_LOAD) {
                y = window_point(st.y, running, wt, z, v);
            } else if (adds) {
                y = load_partial(st.load, w * params.segments + st.item);
            }
        } else {
            let half = lanes >> (step - own_steps + 1u);
            // The previous step's lower half has read its points.
            workgroupBarrier();
            if (lane >= half && lane < 2u * half) {
                tree[lane - half] = point_to_words(v);
            }
            workgroupBarrier();
            if (lane < half) {
                y = point_from_words(tree[lane]);
                adds = true;
            }
        }
        if (adds) {
            let p = point_add(x, y);
            if (dst == W_RUN) {
                running = p;
            } else if (dst == W_WT) {
                wt = p;
            } else if (dst == W_Z) {
                z = p;
            } else {
                v = p;
            }
        }
    }
    if (lane == 0u && w < params.num_windows) {
        let words = point_to_words(v);
        // unroll
        for (var k = 0u; k < POINT_WORDS; k++) {
            window_sums[w * POINT_WORDS + k] = words[k];
        }
    }
}
