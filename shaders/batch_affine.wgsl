// Batch-affine bucket accumulation (MsmConfig::accumulation, Accumulation::BatchAffine; the
// short Weierstrass profiles only), after balanced.wgsl in the same module: the same slices,
// items and bucket writes as accumulate_balanced, but each thread runs BATCH_LANES slices at
// once, its lanes, each lane's run summed in affine coordinates, and the lanes' additions of
// one step share one inversion (Montgomery's trick): about 6 products an addition and one
// inversion a step, where a mixed addition costs 11 (src/gpu/planning/batch_affine.rs counts
// both).
//
// Lane j of thread u sums slice t = u BATCH_LANES + j, entry e = start(t) + s at step s. A
// lane's step is one of (a = 0 on every curve served):
//   - SET: its sum is the identity (a run begins); the sum becomes the base q.
//   - ADD: x != x_q; lambda = (y_q - y) / (x_q - x).
//   - DOUBLE: (x, y) = q, y != 0; lambda = 3 x^2 / (2 y).
//   - CANCEL: x = x_q otherwise ((x, y) = -q, or q = q of order 2): the sum becomes the
//     identity.
// (A lane whose slice has no entry at step s sits it out.)
// Then x3 = lambda^2 - x - x_q, y3 = lambda (x - x3) - y. Only ADD and DOUBLE have a
// denominator (nonzero), so the batch's product is never 0: the affine group law with its
// cases is exact on the whole curve, bases outside the prime-order subgroup included (what
// the carry levels make of those is curve.wgsl's).
//
// A lane's state lives in its item (item t of params.num_slices, balanced.wgsl's layout)
// until its last run is written there: the running sum's x and y and the batch's prefix in
// the words of the tail half (coordinates 0, 1, 2 of its POINT_WORDS), 1 in the tail key
// while the sum is the identity, and the head key as accumulate_balanced keeps it. (In
// memory, not in private arrays indexed at run time: lavapipe took 400 s to compile those.)
// The run's bucket is the bucket of the lane's entry before.

const LANE_SET: u32 = 1u;
const LANE_ADD: u32 = 2u;
const LANE_DOUBLE: u32 = 3u;
const LANE_CANCEL: u32 = 4u;

const LANE_X: u32 = 0u;
const LANE_Y: u32 = 1u;
const LANE_PREFIX: u32 = 2u;

fn lane_load(t: u32, count: u32, c: u32) -> Fe {
    var w: PackedFe;
    for (var i = 0u; i < ELEMENT_WORDS; i++) {
        w[i] = out_sums[(c * ELEMENT_WORDS + i) * 2u * count + 2u * t + 1u];
    }
    return fe_unpack(w);
}

fn lane_store(t: u32, count: u32, c: u32, v: Fe) {
    let w = fe_pack(v);
    for (var i = 0u; i < ELEMENT_WORDS; i++) {
        out_sums[(c * ELEMENT_WORDS + i) * 2u * count + 2u * t + 1u] = w[i];
    }
}

fn lane_is_empty(t: u32) -> bool {
    return out_keys[2u * t + 1u] != 0u;
}

fn lane_set_empty(t: u32, empty: bool) {
    out_keys[2u * t + 1u] = u32(empty);
}

// The lane's running sum as a projective point.
fn lane_point(t: u32, count: u32) -> Point {
    if (lane_is_empty(t)) {
        return point_identity();
    }
    return Point(lane_load(t, count, LANE_X), lane_load(t, count, LANE_Y), FE_ONE);
}

// A lane's step: its case, its running sum (x, y) where it has one, and, for ADD and
// DOUBLE, its denominator.
struct LaneStep {
    case_: u32,
    x: Fe,
    y: Fe,
    denominator: Fe,
}

// What lane t does with base q: its sum's y is read only where x is q's, or, with `full`,
// always (the backward pass, which then updates the sum).
fn lane_step(t: u32, count: u32, q: Affine, full: bool) -> LaneStep {
    var step = LaneStep(LANE_SET, fe_zero(), fe_zero(), FE_ONE);
    if (lane_is_empty(t)) {
        return step;
    }
    step.x = lane_load(t, count, LANE_X);
    let dx = fe_sub(q.x, step.x);
    if (full || fe_is_zero(dx)) {
        step.y = lane_load(t, count, LANE_Y);
    }
    if (!fe_is_zero(dx)) {
        step.case_ = LANE_ADD;
        step.denominator = dx;
    } else if (fe_is_zero(fe_sub(q.y, step.y)) && !fe_is_zero(step.y)) {
        step.case_ = LANE_DOUBLE;
        step.denominator = fe_add(step.y, step.y);
    } else {
        step.case_ = LANE_CANCEL;
    }
    return step;
}

// Lane t's step with base q, given its denominator's inverse (ADD and DOUBLE).
fn lane_apply(t: u32, count: u32, q: Affine, step: LaneStep, inv: Fe) {
    switch step.case_ {
        case LANE_SET: {
            lane_store(t, count, LANE_X, q.x);
            lane_store(t, count, LANE_Y, q.y);
            lane_set_empty(t, false);
        }
        case LANE_CANCEL: {
            lane_set_empty(t, true);
        }
        default: {
            var num = fe_sub(q.y, step.y);
            if (step.case_ == LANE_DOUBLE) {
                let xx = fe_square(step.x);
                num = fe_add(fe_add(xx, xx), xx);
            }
            let lambda = fe_mul(num, inv);
            let x3 = fe_sub(fe_sub(fe_square(lambda), step.x), q.x);
            lane_store(t, count, LANE_Y, fe_sub(fe_mul(lambda, fe_sub(step.x, x3)), step.y));
            lane_store(t, count, LANE_X, x3);
        }
    }
}

// Lane t's entry at step s, or NO_KEY where its slice (`slice` entries from t slice, of
// `total`) has none.
fn lane_entry(t: u32, count: u32, slice: u32, total: u32, s: u32) -> u32 {
    let start = min(t * slice, total);
    let e = start + s;
    if (t >= count || e >= min(start + slice, total)) {
        return NO_KEY;
    }
    return e;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn accumulate_batch_affine(@builtin(global_invocation_id) gid: vec3<u32>,
                           @builtin(num_workgroups) nwg: vec3<u32>) {
    let u = thread_index(gid, nwg);
    let count = params.num_slices;
    if (u * BATCH_LANES >= count) {
        return;
    }
    let first = u * BATCH_LANES;
    let lanes = min(count - first, BATCH_LANES);
    let total = bucket_offset(params.total_buckets);
    let slice = max((total + count - 1u) / count, MIN_SLICE);
    for (var t = first; t < first + lanes; t++) {
        if (lane_entry(t, count, slice, total, 0u) == NO_KEY) {
            store_item(t, count, NO_KEY, point_identity(), NO_KEY, point_identity());
        } else {
            out_keys[2u * t] = NO_KEY;
            lane_set_empty(t, true);
        }
    }
    for (var s = 0u; s < slice; s++) {
        // Forward: runs that end are written, each ADD or DOUBLE's denominator joins the
        // product.
        var product = FE_ONE;
        var batched = 0u;
        for (var t = first; t < first + lanes; t++) {
            let e = lane_entry(t, count, slice, total, s);
            if (e == NO_KEY) {
                continue;
            }
            if (s != 0u && entry_buckets[e] != entry_buckets[e - 1u]) {
                var head = out_keys[2u * t];
                end_accumulated_run(t, count, &head, entry_buckets[e - 1u], lane_point(t, count));
                lane_set_empty(t, true);
            }
            let step = lane_step(t, count, entry_base(entries[e]), false);
            if (step.case_ == LANE_ADD || step.case_ == LANE_DOUBLE) {
                lane_store(t, count, LANE_PREFIX, product);
                product = fe_mul(product, step.denominator);
                batched++;
            }
        }
        var inv = FE_ONE;
        if (batched != 0u) {
            inv = fe_inverse(product);
        }
        // Backward: each denominator's inverse from the running inverse and its prefix.
        for (var k = lanes; k > 0u; k--) {
            let t = first + k - 1u;
            let e = lane_entry(t, count, slice, total, s);
            if (e == NO_KEY) {
                continue;
            }
            let q = entry_base(entries[e]);
            let step = lane_step(t, count, q, true);
            var inv_d = FE_ONE;
            if (step.case_ == LANE_ADD || step.case_ == LANE_DOUBLE) {
                inv_d = fe_mul(inv, lane_load(t, count, LANE_PREFIX));
                inv = fe_mul(inv, step.denominator);
            }
            lane_apply(t, count, q, step, inv_d);
        }
    }
    // Each lane's last run: the tail, or the head of a slice that holds one bucket.
    for (var t = first; t < first + lanes; t++) {
        let start = min(t * slice, total);
        let end = min(start + slice, total);
        if (start == end) {
            continue;
        }
        let sum = lane_point(t, count);
        let key = entry_buckets[end - 1u];
        if (out_keys[2u * t] == NO_KEY) {
            store_item(t, count, key, sum, NO_KEY, point_identity());
        } else {
            store_half(t, count, 1u, key, sum);
        }
    }
}
