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
// carry_level: a segmented reduction of the items, CARRY_FANIN items per thread per level:
// the thread merges equal neighbouring keys of its items in order; again a run that is
// neither its first nor its last is complete and written, the first and last become the
// output item. The last level (one thread) writes both. Each bucket with entries is written
// exactly once; an empty one is never written, and the reduction (reduce.wgsl) reads it as the
// identity from its offsets.
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

@compute @workgroup_size(WORKGROUP_SIZE)
fn carry_level(@builtin(global_invocation_id) gid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = thread_index(gid, nwg);
    if (g >= level.count_out) {
        return;
    }
    let first = g * CARRY_FANIN;
    let end = min(first + CARRY_FANIN, level.count_in);
    var key = NO_KEY;
    var acc = point_identity();
    var head_key = NO_KEY;
    var head = point_identity();
    // The items' halves in order: head of k, then its tail (if any).
    for (var h = 2u * first; h < 2u * end; h++) {
        let k = in_keys[h];
        if (k == NO_KEY) {
            continue;
        }
        let p = load_half(h / 2u, h % 2u, level.count_in);
        if (key == NO_KEY) {
            key = k;
            acc = p;
        } else if (k == key) {
            acc = point_add(acc, p);
        } else {
            if (head_key == NO_KEY) {
                head_key = key;
                head = acc;
            } else {
                store_bucket(key, acc);
            }
            key = k;
            acc = p;
        }
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
        store_item(g, level.count_out, key, acc, NO_KEY, point_identity());
    } else {
        store_item(g, level.count_out, head_key, head, key, acc);
    }
}
