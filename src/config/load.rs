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
    /// k copies (k = 1 is [`Precompute::None`]); k at most the window count W of the set's
    /// window size, else [`crate::MsmError::InvalidConfig`].
    Factor(u32),
    /// The factor and window size whose field multiplications per call over the whole set
    /// are fewest (`digits::precompute_cost`), among those whose copies and one call over
    /// the whole set fit one binding and the memory budget now; the smallest such factor
    /// within 1% of the fewest.
    Auto,
}

/// How a resident set is stored ([`crate::GpuMsm::load_bases_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LoadOptions {
    /// Shifted copies of every base (default [`Precompute::None`]).
    pub precompute: Precompute,
}
