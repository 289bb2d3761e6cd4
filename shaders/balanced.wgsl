// Balanced bucket accumulation over the sorted entries (after sort.wgsl and scan.wgsl).
//
// accumulate_balanced: thread t takes entries [t L, (t + 1) L) with
// L = max(ceil(E / T), MIN_SLICE), E the entry count (the last offset) and T =
// params.num_slices threads (the host picks T so that ceil(n W / T) <= ACCUMULATE_SLICE),
// whatever the buckets look like: no thread adds more than L points, and a hot bucket is
// spread over many threads.
// A bucket whose entries lie strictly inside the slice (neither the slice's first nor its
// last bucket) is complete: the thread writes its sum. The first and last buckets of the
// slice may continue in the neighbouring slices, so the thread hands them on as an item:
// (head key, head sum, tail key, tail sum), tail key NO_KEY when the slice holds one bucket.
//
// carry_level: a segmented reduction of the items, CARRY_GROUP = WORKGROUP_SIZE * CARRY_FANIN
// items a workgroup a level, one output item a workgroup. Lane l first merges equal
// neighbouring keys of its CARRY_FANIN items in order; again a run that is neither its first
// nor its last is complete and written, the first and last are the lane's item. Then
// log2(WORKGROUP_SIZE) tree steps join neighbouring lanes' items in workgroup memory (step d:
// lane l, l a multiple of 2^(d+1), takes the item of lane l + 2^d), writing the runs that
// the join completes. Lane 0 ends with the workgroup's item; on the last level (one
// workgroup) it writes both its runs. Each bucket with entries is written exactly once; an
// empty one is never written, and the reduction (reduce.wgsl) reads it as the identity from
// its offsets.
//
// Items and bucket sums are stored limb-major: word i of (item k, half h) of a level of
// `count` items sits at i * 2 count + 2 k + h; word i of bucket g at i * total_buckets + g.

// Bindings are declared by src/gpu/stages.rs; the bases are read through bases.wgsl.

const NO_KEY: u32 = 0xffffffffu;

fn store_bucket(g: u32, p: Point) {
    let w = point_to_words(p);
    // unroll
    for (var i = 0u; i < POINT_WORDS; i++) {
        buckets[i * params.total_buckets + g] = w[i];
    }
}

// A half whose key is NO_KEY is never read: its sum is not written.
fn store_item(k: u32, count: u32, head_key: u32, head: Point, tail_key: u32, tail: Point) {
    out_keys[2u * k] = head_key;
    out_keys[2u * k + 1u] = tail_key;
    if (head_key != NO_KEY) {
        let h = point_to_words(head);
        // unroll
        for (var i = 0u; i < POINT_WORDS; i++) {
            out_sums[i * 2u * count + 2u * k] = h[i];
        }
    }
    if (tail_key != NO_KEY) {
        let t = point_to_words(tail);
        // unroll
        for (var i = 0u; i < POINT_WORDS; i++) {
            out_sums[i * 2u * count + 2u * k + 1u] = t[i];
        }
    }
}

fn load_half(k: u32, half: u32, count: u32) -> Point {
    var w: PointWords;
    // unroll
    for (var i = 0u; i < POINT_WORDS; i++) {
        w[i] = in_sums[i * 2u * count + 2u * k + half];
    }
    return point_from_words(w);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn accumulate_balanced(@builtin(global_invocation_id) gid: vec3<u32>,
                       @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = thread_index(gid, nwg);
    let count = params.num_slices;
    if (t >= count) {
        return;
    }
    let total = bucket_offset(params.total_buckets);
    let slice = max((total + count - 1u) / count, MIN_SLICE);
    let start = min(t * slice, total);
    let end = min(start + slice, total);
    if (start == end) {
        store_item(t, count, NO_KEY, point_identity(), NO_KEY, point_identity());
        return;
    }
    var key = entry_buckets[start];
    var acc = point_identity();
    var head_key = NO_KEY;
    var head = point_identity();
    for (var e = start; e < end; e++) {
        let b = entry_buckets[e];
        if (b != key) {
            if (head_key == NO_KEY) {
                head_key = key;
                head = acc;
            } else {
                store_bucket(key, acc);
            }
            key = b;
            acc = point_identity();
        }
        acc = point_add_mixed(acc, entry_base(entries[e]));
    }
    if (head_key == NO_KEY) {
        store_item(t, count, key, acc, NO_KEY, point_identity());
    } else {
        store_item(t, count, head_key, head, key, acc);
    }
}

// The items handed up a tree step (at most WORKGROUP_SIZE / 2 a step): item k's keys at 2k and
// 2k + 1, its sums at the same places (12 KiB for 48-word points).
var<workgroup> up_keys: array<u32, WORKGROUP_SIZE>;
var<workgroup> up_sums: array<PointWords, WORKGROUP_SIZE>;

const FOLD_STEPS: u32 = 2u * CARRY_FANIN;

// One loop with one point addition in it: FOLD_STEPS steps over the lane's items' halves
// (head of k, then its tail), then the tree steps, two barriers each (every lane runs the
// same steps, so the barriers stay in uniform control flow). A lane's state is its first
// run (head_key, head), kept only once it has a second, and its last run (key, acc).
@compute @workgroup_size(WORKGROUP_SIZE)
fn carry_level(@builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lane: u32) {
    let group = wid.x + wid.y * nwg.x;
    let first = (group * WORKGROUP_SIZE + lane) * CARRY_FANIN;
    let end = min(first + CARRY_FANIN, level.count_in);
    var key = NO_KEY;
    var acc = point_identity();
    var head_key = NO_KEY;
    var head = point_identity();
    let steps = FOLD_STEPS + countTrailingZeros(WORKGROUP_SIZE);
    for (var step = 0u; step < steps; step++) {
        // The next run (k, p), if any; on a tree step, the taken item's last run (tail_key,
        // its sum at `slot`) when it has two.
        var k = NO_KEY;
        var p = acc;
        var tail_key = NO_KEY;
        var slot = 0u;
        if (step < FOLD_STEPS) {
            let h = 2u * first + step;
            if (h < 2u * end) {
                k = in_keys[h];
                if (k != NO_KEY) {
                    p = load_half(h / 2u, h % 2u, level.count_in);
                }
            }
        } else {
            let stride = 1u << (step - FOLD_STEPS);
            slot = lane / (2u * stride);
            workgroupBarrier();
            if (lane % (2u * stride) == stride) {
                // A right lane hands its item up: its first run, then its last (or none).
                var first_key = key;
                var last_key = NO_KEY;
                var first_sum = acc;
                if (head_key != NO_KEY) {
                    first_key = head_key;
                    last_key = key;
                    first_sum = head;
                }
                up_keys[2u * slot] = first_key;
                up_keys[2u * slot + 1u] = last_key;
                up_sums[2u * slot] = point_to_words(first_sum);
                up_sums[2u * slot + 1u] = point_to_words(acc);
            }
            workgroupBarrier();
            if (lane % (2u * stride) == 0u) {
                k = up_keys[2u * slot];
                if (k != NO_KEY) {
                    p = point_from_words(up_sums[2u * slot]);
                    tail_key = up_keys[2u * slot + 1u];
                }
            }
        }
        // Run k joins the last run (the addition below) or ends it and starts anew.
        let adds = k != NO_KEY && k == key;
        if (k != NO_KEY && !adds) {
            if (key != NO_KEY) {
                close_run(&head_key, &head, key, acc);
            }
            key = k;
            acc = p;
        }
        var sum = acc;
        if (adds) {
            sum = point_add(acc, p);
        }
        // An item with two runs: its first (joined or not) is the lane's last until its
        // second, the new last, comes.
        if (tail_key != NO_KEY) {
            close_run(&head_key, &head, key, sum);
            key = tail_key;
            sum = point_from_words(up_sums[2u * slot + 1u]);
        }
        acc = sum;
    }
    if (lane != 0u || group >= level.count_out) {
        return;
    }
    if (level.last != 0u) {
        if (head_key != NO_KEY) {
            store_bucket(head_key, head);
        }
        if (key != NO_KEY) {
            store_bucket(key, acc);
        }
        return;
    }
    if (head_key == NO_KEY) {
        store_item(group, level.count_out, key, acc, NO_KEY, point_identity());
    } else {
        store_item(group, level.count_out, head_key, head, key, acc);
    }
}

// A lane's last run (key, sum) ends: it becomes the lane's first run if there is none yet
// (it may continue in the lanes before), else it is complete and written.
fn close_run(head_key: ptr<function, u32>, head: ptr<function, Point>, key: u32, sum: Point) {
    if (*head_key == NO_KEY) {
        *head_key = key;
        *head = sum;
    } else {
        store_bucket(key, sum);
    }
}
