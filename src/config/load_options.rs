//! How [`crate::GpuMsm::load_bases_with`] stores a resident set: [`LoadOptions`].

/// Whether a resident set also stores shifted copies of its bases (ICICLE's
/// `precompute_factor`).
///
/// With k copies at window size c, copy j of base P is 2^(c W' j) P, W' = ceil(W / k) of the
/// W windows of c bits: a call's W windows fold onto W' windows of buckets (window w of
/// point i adds into window w mod W' as copy w / W'), so the bucket reduction and the
/// host's window reduction shrink k-fold while the bucket additions stay n W. The copies
/// are computed on the device when the set is loaded and count against the memory budget
/// (k times the set's bytes). The set is tied to its window size: the device's bucket sort
/// runs every call on it at that c; other paths (SRE, the host's bucket lists) read copy 0
/// alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precompute {
    /// No copies: the set as [`crate::GpuMsm::load_bases`] stores it (the default).
    #[default]
    None,
    /// k copies (k = 1 is [`Precompute::None`]) at [`LoadOptions::window_bits`] or
    /// `MsmConfig::window_bits` if set, else at the c with the fewest multiplications that
    /// has at least k windows and fits; k from 1 to the window count W of that c (of c = 2,
    /// 127, without a configured one), else
    /// [`crate::MsmError::InvalidConfig`]. Lowered to the fewest copies that give the same
    /// W' (a copy no window reaches is not stored): [`crate::Bases::precomputed_copies`]
    /// says how many were.
    Factor(u32),
    /// The factor and window size whose field multiplications over the whole set are
    /// fewest, each call over the set's parts (up to [`crate::Bases::parts_per_call`] at
    /// once) reducing its own buckets (`digits::choose_precompute`), among those whose
    /// copies and a call over one part fit the memory budget now and that run a call over
    /// the set in no more calls than the set without copies; of the shapes within
    /// `digits::AUTO_TOLERANCE_PERCENT` of the fewest, the one with the fewest copies.
    Auto,
}

/// How a resident set is stored ([`crate::GpuMsm::load_bases_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LoadOptions {
    /// Shifted copies of every base (default [`Precompute::None`]).
    pub precompute: Precompute,
    /// The window size the copies are for, 2 to
    /// [`super::MAX_PRECOMPUTED_WINDOW_BITS`] (wider than calls without copies may be), else
    /// [`crate::MsmError::InvalidConfig`]. Default `None`:
    /// `MsmConfig::window_bits`, else the cost model's. Without copies it changes nothing.
    pub window_bits: Option<u32>,
}
