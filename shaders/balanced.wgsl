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

// Half h (0: head, 1: tail) of item k of `count`. A half whose key is NO_KEY is never read:
// its sum is not written.
fn store_half(k: u32, count: u32, h: u32, key: u32, sum: Point) {
    out_keys[2u * k + h] = key;
    if (key != NO_KEY) {
        let w = point_to_words(sum);
        // unroll
        for (var i = 0u; i < POINT_WORDS; i++) {
            out_sums[i * 2u * count + 2u * k + h] = w[i];
        }
    }
}

fn store_item(k: u32, count: u32, head_key: u32, head: Point, tail_key: u32, tail: Point) {
    store_half(k, count, 0u, head_key, head);
    store_half(k, count, 1u, tail_key, tail);
}

fn load_half(k: u32, half: u32, count: u32) -> Point {
    var w: PointWords;
    // unroll
    for (var i = 0u; i < POINT_WORDS; i++) {
        w[i] = in_sums[i * 2u * count + 2u * k + half];
    }
    return point_from_words(w);
}

// A carry lane's runs: its first run (head_key, its sum in memory), kept once it has a
// second, and the run it sums (key, acc), its last. The head's sum lives where the head of
// the lane's first input item was, which its first fold step reads and no one reads after
// (in_sums is this level's input): registers hold the run being summed and the run that
// joins it, two points, not three (RDNA2, BLS12-377 G1: 216 -> 168 VGPRs; the G2s over 377-
// and 381-bit fields still spill 4 and 47: docs/PERF.md, "The shaders as a GPU compiler
// sees them").
// (accumulate_balanced writes its first run out at once: end_accumulated_run.)
fn store_head(first_item: u32, sum: Point) {
    let w = point_to_words(sum);
    // unroll
    for (var i = 0u; i < POINT_WORDS; i++) {
        in_sums[i * 2u * level.count_in + 2u * first_item] = w[i];
    }
}

fn load_head(first_item: u32) -> Point {
    return load_half(first_item, 0u, level.count_in);
}

// A carry lane's run being summed ends with `sum`: it becomes the lane's head if it has none
// (it may continue in the lanes before), else it is complete and written. A lane without
// input items never ends a run (its right neighbours have none either).
fn end_run(head_key: ptr<function, u32>, first_item: u32, key: u32, sum: Point) {
    if (*head_key == NO_KEY) {
        *head_key = key;
        store_head(first_item, sum);
    } else {
        store_bucket(key, sum);
    }
}

// The lane's runs as item k of `count`: (head, last), or the last alone.
fn store_runs(k: u32, count: u32, head_key: u32, first_item: u32, key: u32, acc: Point) {
    if (head_key == NO_KEY) {
        store_item(k, count, key, acc, NO_KEY, point_identity());
    } else {
        store_item(k, count, head_key, load_head(first_item), key, acc);
    }
}

// A run of accumulate_balanced ends with `sum`: the thread's first is its item's head (it
// may continue in the threads before), written at once, a later one a complete bucket. One
// store site for both (the head and a bucket differ only in where each word goes).
fn end_accumulated_run(t: u32, count: u32, head_key: ptr<function, u32>, key: u32, sum: Point) {
    let to_head = *head_key == NO_KEY;
    if (to_head) {
        *head_key = key;
        out_keys[2u * t] = key;
    }
    let w = point_to_words(sum);
    // unroll
    for (var i = 0u; i < POINT_WORDS; i++) {
        if (to_head) {
            out_sums[i * 2u * count + 2u * t] = w[i];
        } else {
            buckets[i * params.total_buckets + key] = w[i];
        }
    }
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
    // Only the run being summed stays in registers: the first run to end is written out as
    // the item's head at once (the hot loop keeps its key, not its sum).
    var key = entry_buckets[start];
    var acc = point_identity();
    var head_key = NO_KEY;
    for (var e = start; e < end; e++) {
        let b = entry_buckets[e];
        if (b != key) {
            end_accumulated_run(t, count, &head_key, key, acc);
            key = b;
            acc = point_identity();
        }
        acc = point_add_mixed(acc, entry_base(entries[e]));
    }
    // The last run: the tail, or the head of a slice that holds one bucket.
    if (head_key == NO_KEY) {
        store_item(t, count, key, acc, NO_KEY, point_identity());
    } else {
        store_half(t, count, 1u, key, acc);
    }
}

// A run of a carry level's input: a bucket key (NO_KEY: none) and its sum.
struct Run {
    key: u32,
    sum: Point,
}

// The items handed up a tree step (at most WORKGROUP_SIZE / 2 a step): item k's head and
// tail keys at 2k and 2k + 1, its head's sum at k, then its tail's in the same place once
// the head was read (WORKGROUP_SIZE keys and WORKGROUP_SIZE / 2 points: 4 (WORKGROUP_SIZE +
// POINT_WORDS WORKGROUP_SIZE / 2) bytes, which src/gpu/capacity.rs checks; a G2 over a
// 381-bit field fits 16 KiB).
var<workgroup> up_keys: array<u32, WORKGROUP_SIZE>;
var<workgroup> up_sums: array<PointWords, WORKGROUP_SIZE / 2u>;

const FOLD_STEPS: u32 = 2u * CARRY_FANIN;

// Fold step `step` of a lane whose items are [first_item, end): the half it reads (the head
// of an item, then its tail), or no run.
fn fold_input(first_item: u32, end: u32, step: u32) -> Run {
    let h = 2u * first_item + step;
    var run = Run(NO_KEY, point_identity());
    if (h < 2u * end) {
        run.key = in_keys[h];
        if (run.key != NO_KEY) {
            run.sum = load_half(h / 2u, h % 2u, level.count_in);
        }
    }
    return run;
}

// A right lane of a tree step hands its runs up as item `slot`: the keys and the head's sum
// (its tail's sum, `acc`, follows once the head was read).
fn hand_up(slot: u32, head_key: u32, first_item: u32, key: u32, acc: Point) {
    var item_head = Run(key, acc);
    var tail_key = NO_KEY;
    if (head_key != NO_KEY) {
        item_head = Run(head_key, load_head(first_item));
        tail_key = key;
    }
    up_keys[2u * slot] = item_head.key;
    up_keys[2u * slot + 1u] = tail_key;
    up_sums[slot] = point_to_words(item_head.sum);
}

// One loop with one point addition in it (a call site is thousands of instructions:
// curve.wgsl): FOLD_STEPS steps over the lane's items' halves, then the tree steps, four
// barriers each, around the head's hand-up and the tail's (every lane runs the same steps,
// with no early exit, so the barriers stay in uniform control flow).
@compute @workgroup_size(WORKGROUP_SIZE)
fn carry_level(@builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lane: u32) {
    let group = workgroup_index(wid, nwg);
    let first_item = group * CARRY_GROUP + lane * CARRY_FANIN;
    let end = min(first_item + CARRY_FANIN, level.count_in);
    var key = NO_KEY;
    var acc = point_identity();
    var head_key = NO_KEY;
    let steps = FOLD_STEPS + countTrailingZeros(WORKGROUP_SIZE);
    for (var step = 0u; step < steps; step++) {
        // The next run, if any; on a tree step, the taken item's tail key when it has two
        // runs (its sum replaces the head's at `slot`, and stays there until the next
        // step's first barrier).
        var next = Run(NO_KEY, acc);
        var tail_key = NO_KEY;
        var slot = 0u;
        if (step < FOLD_STEPS) {
            next = fold_input(first_item, end, step);
        } else {
            let stride = 1u << (step - FOLD_STEPS);
            slot = lane / (2u * stride);
            let right = lane % (2u * stride) == stride;
            // The previous step's left lanes have read their slots.
            workgroupBarrier();
            if (right) {
                hand_up(slot, head_key, first_item, key, acc);
            }
            workgroupBarrier();
            if (lane % (2u * stride) == 0u && up_keys[2u * slot] != NO_KEY) {
                next = Run(up_keys[2u * slot], point_from_words(up_sums[slot]));
                tail_key = up_keys[2u * slot + 1u];
            }
            // The heads are read: the tails' sums take their places.
            workgroupBarrier();
            if (right) {
                up_sums[slot] = point_to_words(acc);
            }
            workgroupBarrier();
        }
        // The next run joins the one being summed (the addition) or ends it.
        let adds = next.key != NO_KEY && next.key == key;
        if (next.key != NO_KEY && !adds) {
            if (key != NO_KEY) {
                end_run(&head_key, first_item, key, acc);
            }
            key = next.key;
            acc = next.sum;
        }
        var sum = acc;
        if (adds) {
            sum = point_add(acc, next.sum);
        }
        // A taken item with two runs: its head (joined or not) ends, its tail is the last.
        if (tail_key != NO_KEY) {
            end_run(&head_key, first_item, key, sum);
            key = tail_key;
            sum = point_from_words(up_sums[slot]);
        }
        acc = sum;
    }
    if (lane != 0u || group >= level.count_out) {
        return;
    }
    if (level.last != 0u) {
        if (head_key != NO_KEY) {
            store_bucket(head_key, load_head(first_item));
        }
        if (key != NO_KEY) {
            store_bucket(key, acc);
        }
    } else {
        store_runs(group, level.count_out, head_key, first_item, key, acc);
    }
}
