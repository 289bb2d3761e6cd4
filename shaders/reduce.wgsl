// reduce_segments and reduce_windows: bucket reduction. Window w needs
// sum_{k=0}^{B-1} (k + 1) * S_k, where S_k is the sum in the bucket of digit magnitude k + 1.
//
// reduce_segments (in reduce_segments_*.wgsl per profile): the B buckets of a window
// are dealt to S threads in interleaved segments: thread s owns buckets k = j * S + s for j in
// 0..J (J = B / S), so neighbouring threads read neighbouring buckets. Since
// (k + 1) = j * S + (s + 1), the thread's share is
//     S * A + (s + 1) * T,   A = sum_j j * S_{jS+s},   T = sum_j S_{jS+s},
// A and T come from one running sum over j (2J additions), S * A from log2(S) doublings and
// (s + 1) * T from a short double-and-add. Both versions run that as one loop with a single
// point operation in it (see curve.wgsl for why call sites matter):
//   [0, 2J):          j = J-1 .. 0: running += S_j, then (j >= 1) a += running
//   [2J, +log2 S):    a = 2a                      -> a = S * A
//   [.., +2 kbits):   acc = 2acc, acc += running  -> acc = (s + 1) * T
//   last:             a += acc
//
// reduce_windows: one workgroup per window adds its S shares: each thread adds
// S / WORKGROUP_SIZE of them, then a tree in workgroup memory. Only the W window sums leave
// the GPU.


// Bucket g's sum. On the GPU bucket sort only buckets with entries were written: an empty
// one (equal offsets) is the identity, whatever its buffer holds.
fn load_bucket(g: u32) -> Point {
    if (params.device_sort != 0u && bucket_offsets[g] == bucket_offsets[g + 1u]) {
        return point_identity();
    }
    var w: PointWords;
    // unroll
    for (var k = 0u; k < POINT_WORDS; k++) {
        w[k] = buckets[k * params.total_buckets + g];
    }
    return point_from_words(w);
}

fn load_partial(t: u32) -> Point {
    var w: PointWords;
    // unroll
    for (var k = 0u; k < POINT_WORDS; k++) {
        w[k] = partials[k * params.total_segments + t];
    }
    return point_from_words(w);
}

// Thread t's segment: its window's first bucket, k = s + 1, and the step boundaries of the
// loop above.
struct Segment {
    first: u32,
    k: u32,
    kbits: u32,
    n0: u32,
    n1: u32,
    n2: u32,
}

fn segment(t: u32) -> Segment {
    let w = t >> params.log2_segments;
    let s = t & (params.segments - 1u);
    let k = s + 1u;
    let kbits = 32u - countLeadingZeros(k);
    let b = params.buckets_per_window;
    if (params.device_sort != 0u && bucket_offsets[w * b] == bucket_offsets[(w + 1u) * b]) {
        // No entry in the window (small scalars on the GPU bucket sort): its share is the
        // identity, one addition of identities in the loop's last step.
        return Segment(w * b + s, k, kbits, 0u, 0u, 0u);
    }
    let n0 = 2u * params.run_length;
    let n1 = n0 + params.log2_segments;
    return Segment(w * b + s, k, kbits, n0, n1, n1 + 2u * kbits);
}

// The points of the segment loop (indices of SegmentStep's operands).
const P_RUNNING: u32 = 0u;
const P_A: u32 = 1u;
const P_ACC: u32 = 2u;
const P_BUCKET: u32 = 3u;

// What one step of the segment loop does: nothing (`skip`), or dst = x + y, a doubling when
// `double` (then y is x), with y the bucket `bucket` when `load`. One schedule for both
// profiles' entry points.
struct SegmentStep {
    skip: bool,
    double: bool,
    load: bool,
    dst: u32,
    x: u32,
    y: u32,
    bucket: u32,
}

fn segment_step(g: Segment, step: u32) -> SegmentStep {
    // Default (the last step): a += acc.
    var st = SegmentStep(false, false, false, P_A, P_A, P_ACC, 0u);
    if (step < g.n0) {
        let j = params.run_length - 1u - step / 2u;
        if ((step & 1u) == 0u) {
            st.load = true;
            st.bucket = g.first + j * params.segments;
            st.dst = P_RUNNING;
            st.x = P_RUNNING;
            st.y = P_BUCKET;
        } else {
            st.skip = j == 0u;
            st.y = P_RUNNING;
        }
    } else if (step < g.n1) {
        st.double = true;
        st.y = P_A;
    } else if (step < g.n2) {
        let i = (step - g.n1) / 2u;
        st.dst = P_ACC;
        st.x = P_ACC;
        if (((step - g.n1) & 1u) == 0u) {
            st.double = true;
            st.y = P_ACC;
        } else {
            st.skip = ((g.k >> (g.kbits - 1u - i)) & 1u) == 0u;
            st.y = P_RUNNING;
        }
    }
    return st;
}

var<workgroup> tree: array<PointWords, WORKGROUP_SIZE>;

// One loop with one point addition in it (see curve.wgsl for why call sites matter: two
// inlined additions here made this the slowest pipeline to compile): the first `own` steps
// add the thread's share of the partials, the last log2(WORKGROUP_SIZE) steps are the tree,
// a barrier at the start of each. Lane 0 ends with the window's sum.
@compute @workgroup_size(WORKGROUP_SIZE)
fn reduce_windows(@builtin(workgroup_id) wid: vec3<u32>,
                  @builtin(local_invocation_index) lane: u32) {
    let w = wid.x;
    let own = (params.segments + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE;
    let steps = own + countTrailingZeros(WORKGROUP_SIZE);
    var acc = point_identity();
    for (var step = 0u; step < steps; step++) {
        var adds = false;
        var y = acc;
        if (step < own) {
            let s = lane + step * WORKGROUP_SIZE;
            if (w < params.num_windows && s < params.segments) {
                y = load_partial(w * params.segments + s);
                adds = true;
            }
        } else {
            if (step == own) {
                tree[lane] = point_to_words(acc);
            }
            workgroupBarrier();
            let half = WORKGROUP_SIZE >> (step - own + 1u);
            if (lane < half) {
                y = point_from_words(tree[lane + half]);
                adds = true;
            }
        }
        if (adds) {
            acc = point_add(acc, y);
            if (step >= own) {
                tree[lane] = point_to_words(acc);
            }
        }
    }
    if (lane == 0u && w < params.num_windows) {
        let words = point_to_words(acc);
        // unroll
        for (var k = 0u; k < POINT_WORDS; k++) {
            window_sums[w * POINT_WORDS + k] = words[k];
        }
    }
}
