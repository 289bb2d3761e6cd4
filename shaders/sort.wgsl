// The bucket sort on the GPU (a counting sort, the sparse-matrix transpose of cuZK and of
// Derei and Koh's WebGPU MSM): count_digits counts the entries of every bucket, scan.wgsl
// turns the counts into levels of offsets (a bucket's offset is bucket_offset, offsets.wgsl),
// scatter_digits writes each entry at its bucket's offset.
// The host uploads the scalars as arkworks keeps them (Fr in Montgomery form, 8 words each)
// and does no work per scalar.
//
// count_digits reduces each scalar out of Montgomery form once and writes the integer back
// over it (zero where the base places nothing), so scatter_digits reads neither the scalar's
// Montgomery form nor the base; both recompute the W digits from the integer rather than
// store an n x W digit matrix. So count_digits must run exactly once on each scalar, after
// its upload and before scatter_digits: one pass per streamed chunk of the scalars, each
// right after its chunk's copy (src/gpu/run/stream.rs), the chunks covering every point
// once (sort_passes in src/gpu/run/passes.rs).
//
// This file's loops are deliberately not marked `// unroll` (src/gpu/shader/unroll.rs):
// written out, scalar_integer made the sort 30-45% slower on lavapipe at 2^20 (docs/PERF.md),
// and drivers unroll 8-word loops themselves. Digits are the
// host's (src/digits/, the test oracle): signed c-bit windows in (-2^(c-1), 2^(c-1)],
// least significant first, a carry into the next window; digit d of window w places
// point | sign in bucket w * B + |d| - 1 (without shifted copies; with them, see below). An
// identity base places nothing (its bit in the identity bits, base_places_nothing).
//
// On bases stored with shifted copies (src/engine/load.rs, Precompute) the W = digit_windows
// digit windows fold onto W' = num_windows windows of buckets: digit window w of point i
// places copy w / W' of it (point (w / W') * copy_stride + i) in window w mod W'. Without
// copies W' = W and every digit places copy 0.
//
// A call over several device parts of a resident set (bound as bases, bases_1, ...; one
// bucket array for all) finds point i in part p = i / part_len as its base l = i mod
// part_len, and an entry names the part in bits PART_SHIFT.. and the copy's place in the
// part below them (place_of). One part: p = 0, and the entry is the copy's place alone.
// Within a bucket the order of entries is not fixed (atomics); the sum does not depend on it.

// The bindings come from the stage table (src/gpu/pipelines/stages.rs), with base_quad,
// which reads part p's binding. Neither kernel reads a stored base: count_digits reads the
// identity bits after them (base_places_nothing), so this module does not include
// bases.wgsl.

// (lo, hi) of a * b with 32-bit integers only (16-bit halves), so that every profile runs it.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    let hi = a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(lo, hi);
}

// Scalar i as an integer: its Montgomery form a = k 2^256 mod r reduced, k = a 2^-256 mod r
// (8 rounds of word-wise Montgomery reduction by FR_MODULUS, FR_INV = -r^-1 mod 2^32). The
// result t = (a + m r) / 2^256 is at most r for every a below 2^256, and it is exactly
// arkworks' `into_bigint` (the same reduction, no final subtraction): a scalar whose words
// are not reduced (a >= r, only from `new_unchecked`) gives the integer arkworks' MSM and the
// host's paths use (t = r for a = r), so no route differs from another on bases outside the
// prime-order subgroup, where r P is not the identity.
fn scalar_integer(i: u32) -> array<u32, 8> {
    var t: array<u32, 9>;
    for (var j = 0u; j < 8u; j++) {
        t[j] = scalars[i * 8u + j];
    }
    for (var round = 0u; round < 8u; round++) {
        let m = t[0] * FR_INV;
        var carry = 0u;
        for (var j = 0u; j < 8u; j++) {
            // t[j] + m r_j + carry < 2^64: the high word never overflows.
            let p = mul_wide(m, FR_MODULUS[j]);
            let s1 = t[j] + p.x;
            let s2 = s1 + carry;
            carry = p.y + select(0u, 1u, s1 < p.x) + select(0u, 1u, s2 < s1);
            t[j] = s2;
        }
        t[8] += carry;
        // t[0] is now zero: shift down one word.
        for (var j = 0u; j < 8u; j++) {
            t[j] = t[j + 1u];
        }
        t[8] = 0u;
    }
    // t <= r < 2^255: t[8] is zero.
    var k: array<u32, 8>;
    for (var j = 0u; j < 8u; j++) {
        k[j] = t[j];
    }
    return k;
}

// Scalar i's integer as count_digits stored it, read once, a word at a time, and handed out
// c bits at a time from the least significant (c <= MAX_PRECOMPUTED_WINDOW_BITS < 32,
// asserted in src/config/mod.rs): the
// bits not yet handed out sit in (lo, hi), `have` of them; hi is zero whenever have < 32.
// Bits past the integer's 256 read as zero.
struct ScalarBits {
    lo: u32,
    hi: u32,
    have: u32,
    next_word: u32,
}

fn scalar_bits() -> ScalarBits {
    return ScalarBits(0u, 0u, 0u, 0u);
}

fn take_bits(b: ptr<function, ScalarBits>, i: u32, c: u32) -> u32 {
    if ((*b).have < c) {
        var w = 0u;
        if ((*b).next_word < 8u) {
            w = scalars[i * 8u + (*b).next_word];
            (*b).next_word += 1u;
        }
        // Appended above the `have` bits left (have < c < 32, so hi is zero).
        if ((*b).have == 0u) {
            (*b).lo = w;
        } else {
            (*b).lo |= w << (*b).have;
            (*b).hi = w >> (32u - (*b).have);
        }
        (*b).have += 32u;
    }
    let v = (*b).lo & ((1u << c) - 1u);
    (*b).lo = ((*b).lo >> c) | ((*b).hi << (32u - c));
    (*b).hi >>= c;
    (*b).have -= c;
    return v;
}

// Where point i lives: its part, its index l in the part, the part's copy stride and the
// 16-byte load where the part's identity bits start (the last part's own, the others'
// shared).
struct Place {
    part: u32,
    local: u32,
    stride: u32,
    identity_quads: u32,
}

fn place_of(i: u32) -> Place {
    let part = i / params.part_len;
    let local = i - part * params.part_len;
    if (part == params.last_part) {
        return Place(part, local, params.last_copy_stride, params.last_identity_quads);
    }
    return Place(part, local, params.copy_stride, params.identity_quads);
}

// Whether the base at `at` places nothing: its identity bit, which the host set where the
// base is the identity (field::pack_identity_bits), one 16-byte load of the bits after its
// part's stored bases instead of the base itself.
fn base_places_nothing(at: Place) -> bool {
    let word = at.local / 32u;
    let q = quad_words(base_quad(at.part, at.identity_quads + word / 4u));
    return ((q[word % 4u] >> (at.local % 32u)) & 1u) != 0u;
}

// Digit of window w (magnitude and sign bit) given the carry in; updates the carry.
struct Digit {
    magnitude: u32,
    sign: u32,
    carry: u32,
}

// Where digit window w places its digits: bucket window w mod W', and copy w / W' of the
// point, whose entry (part and place, no sign) is `entry`; `stride` is the part's copy
// stride. Advanced once per digit window.
struct Fold {
    bucket_window: u32,
    entry: u32,
    stride: u32,
}

// Digit window 0 of the point at `at`: copy 0.
fn first_fold(at: Place) -> Fold {
    return Fold(0u, (at.part << PART_SHIFT) | at.local, at.stride);
}

fn next_fold(f: Fold) -> Fold {
    if (f.bucket_window + 1u == params.num_windows) {
        return Fold(0u, f.entry + f.stride, f.stride);
    }
    return Fold(f.bucket_window + 1u, f.entry, f.stride);
}

// The bucket of a nonzero digit, and the entry that places the point's copy there.
fn bucket_of(f: Fold, d: Digit) -> u32 {
    return f.bucket_window * params.buckets_per_window + d.magnitude - 1u;
}

fn entry_of(f: Fold, d: Digit) -> u32 {
    return f.entry | d.sign;
}

// The next digit window of scalar i's bits (the reader moves on: call it once per window,
// in order).
fn next_digit(i: u32, bits: ptr<function, ScalarBits>, carry: u32) -> Digit {
    let c = params.window_bits;
    let raw = take_bits(bits, i, c) + carry;
    let half = 1u << (c - 1u);
    if (raw > half) {
        return Digit((1u << c) - raw, SIGN_BIT, 1u);
    }
    return Digit(raw, 0u, 0u);
}

// Scalar i's integer written over its Montgomery form, or zero where its base places
// nothing: what both kernels' digits read from then on.
fn store_integer(i: u32, at: Place) {
    var k = scalar_integer(i);
    if (base_places_nothing(at)) {
        k = array<u32, 8>();
    }
    for (var j = 0u; j < 8u; j++) {
        scalars[i * 8u + j] = k[j];
    }
}

// count_digits and scatter_digits keep their own loops: one function shared by both with a
// flag makes the count kernel reference every buffer of the scatter, so its bind group would
// need them all (and the scan buffer bound both as counters and as read-only offsets, which
// WebGPU forbids in one dispatch).
@compute @workgroup_size(WORKGROUP_SIZE)
fn count_digits(@builtin(global_invocation_id) gid: vec3<u32>,
                @builtin(num_workgroups) nwg: vec3<u32>) {
    // One pass per streamed chunk of the scalars: level.count_in points from level.in_base
    // (src/gpu/planning/sort.rs, scalar_chunks), the chunks covering 0..num_points.
    let t = thread_index(gid, nwg);
    if (t >= level.count_in) {
        return;
    }
    let i = level.in_base + t;
    let at = place_of(i);
    store_integer(i, at);
    var carry = 0u;
    var bits = scalar_bits();
    var f = first_fold(at);
    for (var w = 0u; w < params.digit_windows; w++) {
        let d = next_digit(i, &bits, carry);
        carry = d.carry;
        if (d.magnitude != 0u) {
            atomicAdd(&counters[bucket_of(f, d)], 1u);
        }
        f = next_fold(f);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn scatter_digits(@builtin(global_invocation_id) gid: vec3<u32>,
                  @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = thread_index(gid, nwg);
    if (i >= params.num_points) {
        return;
    }
    var carry = 0u;
    var bits = scalar_bits();
    var f = first_fold(place_of(i));
    for (var w = 0u; w < params.digit_windows; w++) {
        let d = next_digit(i, &bits, carry);
        carry = d.carry;
        if (d.magnitude != 0u) {
            let g = bucket_of(f, d);
            let at = bucket_offset(g) + atomicAdd(&counters[g], 1u);
            entries[at] = entry_of(f, d);
            entry_buckets[at] = g;
        }
        f = next_fold(f);
    }
}
