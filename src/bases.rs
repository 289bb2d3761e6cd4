//! Bases an engine keeps for many calls ([`Bases`]), and the conversion that lets every MSM
//! call take either resident bases or a plain slice ([`MsmBases`]).

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use ark_ec::short_weierstrass::Affine;
use rayon::prelude::*;

use crate::curve::GpuCurve;
use crate::gpu::StoredBases;

/// A set of bases loaded once by [`crate::GpuMsm::load_bases`] or
/// [`crate::GpuMsm::load_bases_with`]: uploaded and converted on the device (when the engine
/// has one), with shifted copies if asked, and a host copy for the CPU paths and SRE.
///
/// Cheap to clone (a shared handle), `Send + Sync`; the device memory is freed when the last
/// handle is dropped. Calls on it may use a prefix (fewer scalars than bases). It belongs to
/// the engine that loaded it (and to engines [`crate::GpuMsm::reconfigured`] from it, which
/// share its device); another engine refuses it with [`crate::MsmError::ForeignBases`].
pub struct Bases<C: GpuCurve = ark_bls12_377::g1::Config> {
    inner: Arc<Inner<C>>,
}

struct Inner<C: GpuCurve> {
    /// The identity of the engine that loaded it (`GpuMsm`'s owner identity).
    owner: u64,
    /// The host copy: `all[range]` (a share of a set on several devices keeps its range of
    /// the set's copy, not a copy of its own).
    all: Arc<Vec<Affine<C>>>,
    range: Range<usize>,
    /// The device copy in parts of `part_len` bases (one part unless the set exceeds what
    /// one binding holds or one call can take); empty on a CPU-only engine.
    parts: Vec<StoredBases>,
    part_len: usize,
    /// Parts one call reads at once (one bucket array over all of them): calls longer
    /// than `parts_per_call * part_len` run in slices of that many points.
    parts_per_call: usize,
    /// The indices of the bases outside the subgroup, once known (at load with
    /// `MsmConfig::validate_subgroup`, where there are none, or at the first call that asks).
    outside_subgroup: OnceLock<Vec<usize>>,
    /// On an engine on several devices (`MsmConfig::devices`): the set's shares, each a
    /// set of its own on one device (its index among the engine's devices), over
    /// consecutive ranges of the bases; empty otherwise.
    shares: Vec<(usize, Bases<C>)>,
}

impl<C: GpuCurve> Clone for Bases<C> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<C: GpuCurve> Bases<C> {
    /// A set (its parts all stored with the same shifted copies); `in_subgroup`: every base was
    /// checked to be in the subgroup.
    pub(crate) fn new(
        owner: u64,
        host: HostBases<C>,
        parts: Vec<StoredBases>,
        (part_len, parts_per_call): (usize, usize),
        in_subgroup: bool,
    ) -> Self {
        let shape = (part_len, parts_per_call);
        Self::with_shares(owner, host, parts, shape, in_subgroup, Vec::new())
    }

    /// A set on several devices: its `shares`, each on the device of its index.
    pub(crate) fn with_shares(
        owner: u64,
        host: HostBases<C>,
        parts: Vec<StoredBases>,
        (part_len, parts_per_call): (usize, usize),
        in_subgroup: bool,
        shares: Vec<(usize, Bases<C>)>,
    ) -> Self {
        debug_assert!(parts.windows(2).all(|p| p[0].shift() == p[1].shift()));
        let outside_subgroup = OnceLock::new();
        if in_subgroup {
            let _ = outside_subgroup.set(Vec::new());
        }
        Self {
            inner: Arc::new(Inner {
                owner,
                all: host.all,
                range: host.range,
                parts,
                part_len: part_len.max(1),
                parts_per_call: parts_per_call.max(1),
                outside_subgroup,
                shares,
            }),
        }
    }

    /// The shares of a set on several devices: (device index, its set), in the order of
    /// their ranges; empty on one device.
    pub(crate) fn shares(&self) -> &[(usize, Bases<C>)] {
        &self.inner.shares
    }

    /// Where this set's bases start in the set it is a share of (0 for a whole set).
    pub(crate) fn start(&self) -> usize {
        self.inner.range.start
    }

    /// The indices of the bases outside the subgroup, found once (a scalar multiplication by r per
    /// base) and kept.
    pub(crate) fn outside_subgroup(&self) -> &[usize] {
        self.inner.outside_subgroup.get_or_init(|| {
            let host = self.points();
            crate::host_pool::install(|| {
                (0..self.len())
                    .into_par_iter()
                    .filter(|&i| !host[i].is_in_correct_subgroup_assuming_on_curve())
                    .collect()
            })
        })
    }

    /// [`Bases::outside_subgroup`] if already known.
    pub(crate) fn outside_subgroup_if_known(&self) -> Option<&[usize]> {
        self.inner.outside_subgroup.get().map(Vec::as_slice)
    }

    /// Bases per device part (on an engine on several devices, the whole set's length:
    /// each device's share has parts of its own).
    pub fn part_len(&self) -> usize {
        self.inner.part_len
    }

    /// Device parts one call reads at once, with one bucket array, one sort and one
    /// reduction over all of them (as many as the adapter binds in one stage and the call
    /// fits beside the set, at most `MAX_BASE_PARTS`, 8): a call on the set runs in one pass
    /// up to [`Bases::call_len`] points, in slices of that many beyond.
    pub fn parts_per_call(&self) -> usize {
        self.inner.parts_per_call
    }

    /// Points one call on the set reads at once: [`Bases::parts_per_call`] parts'.
    pub fn call_len(&self) -> usize {
        self.inner
            .part_len
            .saturating_mul(self.inner.parts_per_call)
    }

    /// Copies of each base the device parts hold (`config::Precompute`): 1 without
    /// shifted copies, and on an engine without a GPU. After a device loss the set still
    /// says what it holds, but calls upload copy 0 alone until it is loaded again
    /// (`MsmReport::precomputed_copies` says what a call read). On several devices, the
    /// first share's (each share picks its own with `Precompute::Auto`).
    pub fn precomputed_copies(&self) -> u32 {
        self.shift().copies()
    }

    /// The window size the parts' shifted copies are for, where they hold copies: calls on
    /// the device's bucket sort over the set run at it unless their own window is cheaper
    /// (short prefixes).
    pub fn precomputed_window_bits(&self) -> Option<u32> {
        self.shift().window_bits()
    }

    /// The shifted copies every device part holds.
    pub(crate) fn shift(&self) -> crate::gpu::Shift {
        match self.inner.shares.first() {
            Some((_, share)) => share.shift(),
            None => self.part(0).map_or(crate::gpu::Shift::NONE, |p| p.shift()),
        }
    }

    /// The number of device parts.
    pub(crate) fn parts(&self) -> usize {
        self.inner.parts.len()
    }

    /// Device part k (bases `k * part_len ..`).
    pub(crate) fn part(&self, k: usize) -> Option<&StoredBases> {
        self.inner.parts.get(k)
    }

    /// Number of bases.
    pub fn len(&self) -> usize {
        self.inner.range.len()
    }

    /// Whether there are no bases.
    pub fn is_empty(&self) -> bool {
        self.inner.range.is_empty()
    }

    /// The bases, as loaded.
    pub fn points(&self) -> &[Affine<C>] {
        &self.inner.all[self.inner.range.clone()]
    }

    /// Bytes the set holds on its devices (zero on an engine without a GPU).
    pub fn device_bytes(&self) -> u64 {
        let shares: u64 = self
            .inner
            .shares
            .iter()
            .map(|(_, s)| s.device_bytes())
            .sum();
        shares + self.inner.parts.iter().map(|r| r.bytes()).sum::<u64>()
    }

    /// The owner identity of the engine that loaded the set.
    pub(crate) fn owner(&self) -> u64 {
        self.inner.owner
    }

    /// The converted points on the device, if the engine has one.
    pub(crate) fn resident(&self) -> Option<&StoredBases> {
        self.part(0)
    }

    /// The device parts a call over `n` points from part `first` on reads: as many as
    /// hold them, at most [`Bases::parts_per_call`] (`None` where not on a device).
    fn parts_from(&self, first: usize, n: usize) -> Option<&[StoredBases]> {
        let count = n.div_ceil(self.part_len()).clamp(1, self.parts_per_call());
        let end = (first + count).min(self.inner.parts.len());
        self.inner.parts.get(first..end).filter(|p| !p.is_empty())
    }
}

impl<C: GpuCurve> std::fmt::Debug for Bases<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bases")
            .field("len", &self.len())
            .field("device_bytes", &self.device_bytes())
            .field("precomputed_copies", &self.precomputed_copies())
            .finish()
    }
}

/// A set's host copy: `all[range]`, shared by the shares of a set on several devices.
pub(crate) struct HostBases<C: GpuCurve> {
    pub all: Arc<Vec<Affine<C>>>,
    pub range: Range<usize>,
}

impl<C: GpuCurve> HostBases<C> {
    /// A whole set's copy of `points`.
    pub(crate) fn copy(points: &[Affine<C>]) -> Self {
        Self {
            range: 0..points.len(),
            all: Arc::new(points.to_vec()),
        }
    }
}

/// The slices of n points, at most `len` each (`len` >= 1), in order: how an MSM too large
/// for one call is cut (one-shot slices, and a resident set's device parts).
pub(crate) fn slice_ranges(n: usize, len: usize) -> impl Iterator<Item = Range<usize>> {
    let len = len.max(1);
    (0..n.div_ceil(len)).map(move |k| k * len..((k + 1) * len).min(n))
}

/// The bases of one call: a host slice (uploaded by the call) or a resident set.
pub enum BasesRef<'a, C: GpuCurve = ark_bls12_377::g1::Config> {
    /// Bases on the host; the call needs exactly one scalar per base.
    Host(&'a [Affine<C>]),
    /// A resident set; the call uses its first `scalars.len()` bases.
    Resident(&'a Bases<C>),
    /// A slice of a call on a resident set longer than one call reads
    /// ([`Bases::call_len`]) that starts at device part k: its bases from `k * part_len`
    /// on, in parts `k ..`.
    ResidentSlice(&'a Bases<C>, usize),
}

impl<C: GpuCurve> Clone for BasesRef<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: GpuCurve> Copy for BasesRef<'_, C> {}

impl<'a, C: GpuCurve> BasesRef<'a, C> {
    /// Where the call's bases start in the set they come from (0 but for a slice).
    pub fn offset(&self) -> usize {
        match self {
            BasesRef::ResidentSlice(b, k) => k * b.part_len(),
            _ => 0,
        }
    }

    /// The device parts a call over its first `n` bases reads, if resident (and stored on
    /// a device): from part 0 of a set, or from a slice's first part.
    pub(crate) fn stored_parts(&self, n: usize) -> Option<&'a [StoredBases]> {
        match self {
            BasesRef::Host(_) => None,
            BasesRef::Resident(b) => b.parts_from(0, n),
            BasesRef::ResidentSlice(b, k) => b.parts_from(*k, n),
        }
    }

    /// The host copy of the bases.
    pub fn points(&self) -> &'a [Affine<C>] {
        match self {
            BasesRef::Host(b) => b,
            BasesRef::Resident(b) => b.points(),
            BasesRef::ResidentSlice(b, k) => &b.points()[(k * b.part_len()).min(b.len())..],
        }
    }
}

/// Anything an MSM call takes as its bases: `&[Affine<C>]`, `&Vec<Affine<C>>`, an array, or a
/// resident [`Bases`] handle. Sealed: the crate implements it for these alone.
pub trait MsmBases<C: GpuCurve = ark_bls12_377::g1::Config>: sealed::Sealed {
    /// The bases of the call, as the engine reads them.
    #[doc(hidden)]
    fn bases_ref(&self) -> BasesRef<'_, C>;
}

mod sealed {
    /// Only this crate implements [`super::MsmBases`].
    pub trait Sealed {}
    impl<C: crate::curve::GpuCurve> Sealed for [super::Affine<C>] {}
    impl<C: crate::curve::GpuCurve> Sealed for Vec<super::Affine<C>> {}
    impl<C: crate::curve::GpuCurve, const N: usize> Sealed for [super::Affine<C>; N] {}
    impl<C: crate::curve::GpuCurve> Sealed for super::Bases<C> {}
    impl<T: Sealed + ?Sized> Sealed for &T {}
}

impl<C: GpuCurve> MsmBases<C> for [Affine<C>] {
    fn bases_ref(&self) -> BasesRef<'_, C> {
        BasesRef::Host(self)
    }
}

impl<C: GpuCurve> MsmBases<C> for Vec<Affine<C>> {
    fn bases_ref(&self) -> BasesRef<'_, C> {
        BasesRef::Host(self)
    }
}

impl<C: GpuCurve, const N: usize> MsmBases<C> for [Affine<C>; N] {
    fn bases_ref(&self) -> BasesRef<'_, C> {
        BasesRef::Host(self)
    }
}

impl<C: GpuCurve> MsmBases<C> for Bases<C> {
    fn bases_ref(&self) -> BasesRef<'_, C> {
        BasesRef::Resident(self)
    }
}

impl<C: GpuCurve, T: MsmBases<C> + ?Sized> MsmBases<C> for &T {
    fn bases_ref(&self) -> BasesRef<'_, C> {
        (**self).bases_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Slicing covers every point exactly once, in order, each slice nonempty and at
        /// most `len` long, in ceil(n / len) slices.
        #[test]
        fn slices_cover_every_point_once(n in 0usize..5000, len in 1usize..600) {
            let slices: Vec<Range<usize>> = slice_ranges(n, len).collect();
            prop_assert_eq!(slices.len(), n.div_ceil(len));
            let mut next = 0;
            for r in &slices {
                prop_assert_eq!(r.start, next);
                prop_assert!(!r.is_empty() && r.len() <= len);
                next = r.end;
            }
            prop_assert_eq!(next, n);
        }
    }
}
