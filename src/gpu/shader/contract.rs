//! The host/shader contract, written once in Rust: the uniform parameter blocks and the
//! constants the shaders share with the host are generated into every stage's WGSL from the
//! definitions here (register numbers and step tables come from [`super::program`], field
//! constants from [`super::field`]). Nothing is kept in sync by hand.

/// A `#[repr(C)]` block of u32 fields, with its WGSL declaration generated from the same
/// field list (in order, with the doc comments).
macro_rules! shader_struct {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[doc = $d:literal])* $f:ident,)* }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
        pub struct $name {
            $($(#[doc = $d])* pub $f: u32,)*
        }

        impl $name {
            /// The WGSL declaration of this block.
            pub fn wgsl() -> String {
                let mut s = format!("struct {} {{\n", stringify!($name));
                $(
                    $(s += &format!("    //{}\n", $d);)*
                    s += &format!("    {}: u32,\n", stringify!($f));
                )*
                s + "}\n"
            }
        }
    };
}

shader_struct! {
    /// Uniform parameters shared by the MSM stages.
    pub struct Params {
        /// The convert stage checks (and, per profile, converts) bases `first_point .. num_points`.
        num_points,
        /// Windows of buckets: W, or W' = ceil(W / k) on bases stored with k shifted copies
        /// (the reduction's and the read-back's windows).
        num_windows,
        /// Buckets per window B (signed digits: B = 2^(c-1)).
        buckets_per_window,
        /// W * B.
        total_buckets,
        /// Level 0 of the bucket reduction sums a window's B buckets into S interleaved
        /// segments, its items (the partials keep a window's items S apart).
        segments,
        /// W * S.
        total_segments,
        /// Accumulation chunks.
        num_chunks,
        /// First point the convert stage converts.
        first_point,
        /// Window size c (the GPU bucket sort's digits).
        window_bits,
        /// Balanced accumulation threads T (each adds at most ceil(E / T) entries).
        num_slices,
        /// 1 on the GPU bucket sort: the reduction reads its bucket offsets, skips windows
        /// without entries and reads an empty bucket (never written) as the identity; 0 on
        /// the host's bucket lists, whose merge writes every bucket.
        device_sort,
        /// Digit windows of the GPU bucket sort: W = `num_windows(c)` (`num_windows` is
        /// the windows of buckets, W' = ceil(W / k) on bases stored with k shifted copies).
        digit_windows,
        /// Bases between one shifted copy and the next in each of the call's device parts
        /// but the last (a resident part's length; unused without copies): digit window w
        /// of point i, base l of part p, places copy w / W' of it, at
        /// (p << PART_SHIFT) | ((w / W') * stride + l), in window w mod W'.
        copy_stride,
        /// Items of a window that reach reduce_windows (S, or fewer after more reduce_level
        /// passes).
        final_items,
        /// Levels of the prefix sum of the bucket counts (GPU bucket sort; offsets.wgsl).
        scan_levels,
        /// Where level 1 of the prefix sum starts in the scan buffer (if there is one).
        scan_base1,
        /// Where level 2 starts.
        scan_base2,
        /// Where level 3 starts.
        scan_base3,
        /// Where the stored bases' identity bits start, in 16-byte loads of each part's
        /// binding (after its bases and copies): bit l % 32 of word l / 32 is set when the
        /// part's base l is the identity (GPU bucket sort; `packing::pack_identity_bits`); in
        /// each part but the last (`last_identity_quads`).
        identity_quads,
        /// Points of each of the call's device parts but the last: point i is base
        /// i mod part_len of part i / part_len (one part: at least the call's points).
        part_len,
        /// The call's last part (bound to `bases` or `bases_{last_part}`).
        last_part,
        /// [`Params::copy_stride`] of the last part (its own length).
        last_copy_stride,
        /// [`Params::identity_quads`] of the last part.
        last_identity_quads,
        /// Padding to a multiple of 16 bytes.
        pad0,
    }
}

shader_struct! {
    /// Parameters of the shift stage (shift.wgsl): one shifted copy of a resident part.
    pub struct ShiftParams {
        /// Bases per copy (the part's length).
        num_points,
        /// The copy written, from copy - 1: copy j holds 2^(doublings j) P.
        copy,
        /// Doublings from one copy to the next, c W'.
        doublings,
        /// Padding to 16 bytes.
        pad0,
    }
}

shader_struct! {
    /// One level of the prefix sum (scan.wgsl), of the carry reduction (balanced.wgsl) or
    /// of the bucket reduction (reduce_level in reduce.wgsl).
    pub struct LevelParams {
        /// Values (scan), items (carry, all of them) or a window's items (reduction; level 0:
        /// its buckets) the level reads; a streamed chunk's scalars (`count_digits`).
        count_in,
        /// Block totals (scan), items (carry, one a workgroup) or a window's items
        /// (reduction) the level writes.
        count_out,
        /// Scan: where the level's values start in the scan buffer; `count_digits`: the
        /// chunk's first point.
        in_base,
        /// Scan: where its block totals go (the top level's one total: the entry count).
        out_base,
        /// 1 on the top level (carry: write the buckets; scan: unused, the plan's mark).
        last,
        /// Bucket reduction: 1 on level 0, which reads the buckets (items without z).
        from_buckets,
        /// Padding to 32 bytes.
        pad0,
        /// Padding.
        pad1,
    }
}

shader_struct! {
    /// One merge level's parameters (merge.wgsl).
    pub struct MergeParams {
        /// Outputs of the level.
        num_groups,
        /// Inputs of the level.
        num_inputs,
        /// Where the level's group boundaries start in the groups buffer.
        group_base,
        /// Padding to 16 bytes.
        pad0,
    }
}

shader_struct! {
    /// Parameters of the self-test kernel (selftest.wgsl).
    pub struct SelfTestParams {
        /// Cases to evaluate.
        count,
        /// Padding.
        pad0,
    }
}

/// Words of a call's status buffer, which the convert stage writes and the host reads back
/// with the window sums.
pub const STATUS_WORDS: usize = 1;

/// Status word: the first uploaded base that failed the check of `base_check.wgsl`, as
/// [`bad_base_marker`] (zero: none). Kept with `atomicMax`, so the smallest index wins.
pub const STATUS_BAD_BASE: usize = 0;

/// The value a failed base i leaves in [`STATUS_BAD_BASE`]: u32::MAX - i, nonzero for every
/// index below 2^31 and largest for the smallest index.
pub const fn bad_base_marker(i: u32) -> u32 {
    u32::MAX - i
}

/// The base a status word names, if any ([`bad_base_marker`] read back).
pub fn bad_base(word: u32) -> Option<u32> {
    (word != 0).then(|| u32::MAX - word)
}

/// The generated WGSL of the contract: the parameter blocks and the entry sign bit.
pub fn wgsl(curve: &crate::curve::CurveSpec) -> String {
    let mut s = String::from("// Generated from src/gpu/shader/contract.rs.\n");
    s += &Params::wgsl();
    s += &MergeParams::wgsl();
    s += &LevelParams::wgsl();
    s += &sort_wgsl_constants(curve);
    s += &SelfTestParams::wgsl();
    s += &ShiftParams::wgsl();
    s += &format!(
        "// Bit 31 of a bucket entry: the digit was negative.\nconst SIGN_BIT: u32 = {}u;\n",
        crate::digits::SIGN_BIT
    );
    s += &format!(
        "// Bits 28..31 of a bucket entry: the device part of its base (field::PART_SHIFT).\n\
         const PART_SHIFT: u32 = {}u;\nconst PLACE_MASK: u32 = {}u;\n",
        super::field::PART_SHIFT,
        (1u32 << super::field::PART_SHIFT) - 1
    );
    s += &format!(
        "// The status word of a failed base (src/gpu/shader/contract.rs).\n\
         const STATUS_BAD_BASE: u32 = {STATUS_BAD_BASE}u;\n\
         fn bad_base_marker(i: u32) -> u32 {{\n    return {}u - i;\n}}\n",
        u32::MAX
    );
    s
}

// The GPU bucket pipeline's tuning constants (`src/gpu/planning/sort.rs` plans with them).

/// Values each thread of the prefix sum adds serially; a workgroup scans
/// `WORKGROUP_SIZE * SCAN_RUN` values per level.
pub const SCAN_RUN: u32 = 16;

/// Items each lane of a carry level merges before its workgroup's tree (at most
/// `2 * CARRY_FANIN - 1` additions a lane, then at most one a tree step).
pub const CARRY_FANIN: u32 = 16;

/// Items one workgroup of a carry level joins into one.
pub const CARRY_GROUP: u32 = super::field::WORKGROUP_SIZE * CARRY_FANIN;

/// Steps of one of the shift stage's scans over a workgroup (shift.wgsl): log2 of its size.
/// A workgroup's bases share one field inversion (about 570 multiplications).
pub const SHIFT_SCAN_STEPS: u32 = super::field::WORKGROUP_SIZE.trailing_zeros();
const _: () = assert!(super::field::WORKGROUP_SIZE.is_power_of_two());

/// Fewest entries an accumulation thread takes while there are entries left (when E / T is
/// smaller: sparse or small scalars), so that few entries do not each become a carried item.
pub const MIN_SLICE: u32 = 8;

/// WGSL constants of the GPU bucket pipeline: the tuning constants and the curve's F_r
/// modulus (to take the scalars out of Montgomery form).
pub fn sort_wgsl_constants(curve: &crate::curve::CurveSpec) -> String {
    let r = curve.scalar_modulus;
    let words: Vec<String> = super::field::u64_words_to_u32(&r)
        .iter()
        .map(|w| format!("{w}u"))
        .collect();
    format!(
        "const SCAN_RUN: u32 = {SCAN_RUN}u;\nconst SCAN_BLOCK: u32 = WORKGROUP_SIZE * SCAN_RUN;\n\
         const CARRY_FANIN: u32 = {CARRY_FANIN}u;\nconst CARRY_GROUP: u32 = WORKGROUP_SIZE * CARRY_FANIN;\n\
         const MIN_SLICE: u32 = {MIN_SLICE}u;\nconst SHIFT_SCAN_STEPS: u32 = {SHIFT_SCAN_STEPS}u;\n\
         const FR_INV: u32 = {}u;\nconst FR_MODULUS: array<u32, 8> = array<u32, 8>({});\n",
        crate::curve::neg_inv_word(r[0] as u32),
        words.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_uniform_sized_and_declared_in_order() {
        assert_eq!(std::mem::size_of::<Params>() % 16, 0);
        assert_eq!(std::mem::size_of::<MergeParams>(), 16);
        assert_eq!(std::mem::size_of::<LevelParams>(), 32);
        let w = Params::wgsl();
        let fields: Vec<&str> = w
            .lines()
            .filter(|l| l.trim_end().ends_with(": u32,"))
            .map(|l| l.trim().trim_end_matches(": u32,"))
            .collect();
        assert_eq!(fields.len() * 4, std::mem::size_of::<Params>());
        assert_eq!(fields[0], "num_points");
        assert!(fields.contains(&"first_point"));
        assert!(wgsl(crate::curve::bls12_377_g1())
            .contains(&format!("const SIGN_BIT: u32 = {}u;", 1u32 << 31)));
    }

    #[test]
    fn bad_base_markers_round_trip_and_the_smallest_index_wins() {
        assert_eq!(bad_base(0), None);
        for i in [0u32, 1, 45, (1 << 31) - 1] {
            assert_eq!(bad_base(bad_base_marker(i)), Some(i));
            assert!(bad_base_marker(i) > bad_base_marker(i + 1));
        }
        assert!(wgsl(crate::curve::bls12_377_g1()).contains(&format!("return {}u - i;", u32::MAX)));
    }

    #[test]
    fn fr_constants() {
        let s = sort_wgsl_constants(crate::curve::bls12_377_g1());
        // -r^-1 mod 2^32: r = 1 mod 2^32 for BLS12-377's scalar field.
        assert!(
            s.contains(&format!("const FR_INV: u32 = {}u;", u32::MAX)),
            "{s}"
        );
        assert!(s.contains("const FR_MODULUS: array<u32, 8>"));
    }
}
