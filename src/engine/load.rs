//! Resident sets: [`GpuMsm::load_bases`] and [`GpuMsm::load_bases_with`], their parts, and
//! the window size and copy count of a set stored with shifted copies
//! ([`crate::config::Precompute`]).

use std::ops::Range;
use std::sync::Arc;

use ark_ec::short_weierstrass::Affine;

use super::call::route::DeviceState;
use super::call::validate::check_bases;
use super::several::{device_fault, each_at_once, Several};
use super::GpuMsm;
use crate::bases::{slice_ranges, Bases, HostBases};
use crate::config::{LoadOptions, Precompute, MAX_PRECOMPUTED_WINDOW_BITS};
use crate::curve::GpuCurve;
use crate::digits::{choose_precompute, num_windows, precompute_cost, AddCosts};
use crate::error::{MsmError, Result};
use crate::gpu::{GpuContext, Shift, PART_SHIFT};

impl<C: GpuCurve> GpuMsm<C> {
    /// Loads `bases` for many calls: checked on the host once (a base off the curve, or with
    /// a coordinate not reduced, is [`MsmError::InvalidBase`]; with `validate_subgroup`, one
    /// outside the subgroup is [`MsmError::BaseNotInSubgroup`]), uploaded and stored in the
    /// profile's form on the device once, in parts whose calls fit beside the set. While a
    /// lost device is not replaced, the set stays on the host and calls upload it; when the
    /// GPU is demanded, that is [`MsmError::DeviceLost`] (or the failed replacement's
    /// error).
    /// Stores no shifted copies: [`GpuMsm::load_bases_with`] does.
    ///
    /// Blocks, waiting for room in the memory budget too: from an async task, call it in
    /// `tokio::task::block_in_place` or `spawn_blocking` (a worker blocked here cannot poll
    /// the tasks whose calls hold the room it waits for; they would time out).
    pub fn load_bases(&self, bases: &[Affine<C>]) -> Result<Bases<C>> {
        self.load_bases_with(bases, LoadOptions::default())
    }

    /// [`GpuMsm::load_bases`] with `options`: with [`Precompute::Factor`] or
    /// [`Precompute::Auto`], each device part also stores shifted copies of its bases,
    /// computed on the device, and every call on the device's bucket sort over the set runs
    /// at the set's window size ([`Bases::precomputed_window_bits`]). A factor of 0, or above
    /// the window count, is [`MsmError::InvalidConfig`]. A set with a base of small order
    /// outside the subgroup, whose copy would be the identity or no point of the stored form, is
    /// stored without copies ([`Bases::precomputed_copies`] is then 1). On an engine without
    /// a device now the set is stored on the host only, as `load_bases` does.
    pub fn load_bases_with(&self, bases: &[Affine<C>], options: LoadOptions) -> Result<Bases<C>> {
        let _s = tracing::info_span!("gpu_msm.load_bases", n = bases.len()).entered();
        self.check_options(options)?;
        if let Some(several) = &self.several {
            return self.load_on_several(several, bases, options);
        }
        check_bases(bases, self.config.validate_subgroup)?;
        self.load_checked(HostBases::copy(bases), options)
    }

    /// [`GpuMsm::load_bases_with`] of bases already checked (`host`), on this engine's
    /// device.
    pub(super) fn load_checked(
        &self,
        host: HostBases<C>,
        options: LoadOptions,
    ) -> Result<Bases<C>> {
        let all = std::sync::Arc::clone(&host.all);
        let bases = &all[host.range.clone()];
        // A lost device not replaced now: the set lives on the host, and calls on it upload
        // its bases once there is a device again.
        let on_device = matches!(self.device_ready()?, DeviceState::Ready);
        let gpu = self.gpu().filter(|g| on_device && !g.is_lost());
        let in_subgroup = self.config.validate_subgroup;
        let Some(g) = gpu else {
            let part_len = self
                .config
                .max_slice_points
                .map_or(bases.len(), |s| s.min(bases.len()))
                .max(1);
            return Ok(Bases::new(
                self.owner,
                host,
                Vec::new(),
                (part_len, 1),
                in_subgroup,
            ));
        };
        let (c, copies) = self.precompute_shape(&g, bases.len(), options)?;
        // An empty set has nothing to copy.
        let shift = match bases.len() {
            0 => Shift::NONE,
            _ => Shift::new(c, copies, C::spec().scalar_bits),
        };
        let store = |shift: Shift| -> Result<Option<(Vec<_>, (usize, usize))>> {
            let part_len = self.part_len(&g, bases.len(), shift)?;
            let per_call = self.parts_per_call(&g, bases.len(), part_len, shift);
            let parts = slice_ranges(bases.len(), part_len)
                .map(|part| g.store_bases(&bases[part], shift, self.config.gpu_timeout))
                .collect::<Result<Option<Vec<_>>>>()
                .map_err(|e| Self::on_device(&g, e))?;
            Ok(parts.map(|p| (p, (part_len, per_call))))
        };
        // A part whose copies failed (a base of small order outside the subgroup): the whole set
        // without copies (one shape per set), in the parts a set without copies gets.
        let (parts, shape) = match store(shift)? {
            Some(stored) => stored,
            None => store(Shift::NONE)?.expect("a set without copies is always stored"),
        };
        Ok(Bases::new(self.owner, host, parts, shape, in_subgroup))
    }

    /// [`MsmError::InvalidConfig`] for a window size outside 2 to
    /// [`MAX_PRECOMPUTED_WINDOW_BITS`], or a factor of 0 or above the window count of the
    /// set's window size (of the smallest, 2 bits, without one).
    fn check_options(&self, options: LoadOptions) -> Result<()> {
        if let Some(c) = options.window_bits {
            if !(2..=MAX_PRECOMPUTED_WINDOW_BITS).contains(&c) {
                return Err(MsmError::InvalidConfig(format!(
                    "LoadOptions::window_bits {c} outside 2..={MAX_PRECOMPUTED_WINDOW_BITS}"
                )));
            }
        }
        let Precompute::Factor(k) = options.precompute else {
            return Ok(());
        };
        let configured = options.window_bits.or(self.config.window_bits);
        let c = configured.unwrap_or(2);
        // MsmConfig::window_bits may be 1, which copies cannot take.
        if k > 1 && c < 2 {
            return Err(MsmError::InvalidConfig(format!(
                "Precompute::Factor({k}): copies need windows of 2 bits or more \
                 (MsmConfig::window_bits is {c}; set LoadOptions::window_bits)"
            )));
        }
        let bits = C::spec().scalar_bits;
        if k == 0 || k > num_windows(c, bits) {
            return Err(MsmError::InvalidConfig(format!(
                "Precompute::Factor({k}): a factor from 1 to the window count ({} at {} \
                 window bits)",
                num_windows(c, bits),
                match configured {
                    Some(c) => format!("the configured {c}"),
                    None => "the smallest, 2,".to_string(),
                }
            )));
        }
        Ok(())
    }

    /// The window size and copy count of a set of n bases under `options` (one copy: none,
    /// at the cost model's c for n points). The window size is `options.window_bits`, else
    /// `MsmConfig::window_bits`, else the one with the fewest multiplications (each call
    /// over the set's parts reducing its own buckets) among those at which the copies and a
    /// call fit now; a factor k takes only window sizes with at least k windows.
    fn precompute_shape(
        &self,
        gpu: &GpuContext,
        n: usize,
        options: LoadOptions,
    ) -> Result<(u32, u32)> {
        let configured = options.window_bits.or(self.config.window_bits);
        let costs = gpu.profile().add_costs();
        let bits = C::spec().scalar_bits;
        // In how many calls an n-point call on the set runs with k copies at c (as
        // `part_len` cuts it into parts, `parts_per_call` of them a call), where a call over
        // a part fits beside them now.
        let calls = |shift: Shift| {
            let len = self.callable_part_len(gpu, n, shift)?;
            let per_call = self.parts_per_call(gpu, n, len, shift);
            Some(n.div_ceil(len * per_call) as u64)
        };
        let plain = calls(Shift::NONE);
        let parts = |c: u32, k: u32| match k {
            1 => plain,
            _ => calls(Shift::new(c, k, bits)),
        };
        // Auto's: copies whose bases alone bind in more parts than the set without copies
        // reads in all its calls (`most` parts a call), are not sized (`choose_precompute`
        // drops them), which keeps the search short.
        let most = gpu.profile().base_parts() as u64;
        let auto_parts = |c: u32, k: u32| match plain {
            Some(p) if k > 1 && n.div_ceil(self.bindable(gpu, n, k)) as u64 > most * p => None,
            _ => parts(c, k),
        };
        match options.precompute {
            Precompute::None | Precompute::Factor(1) => Ok((
                gpu.call_window(self.config.window_bits, n, C::spec().scalar_bits),
                1,
            )),
            Precompute::Factor(k) => {
                let only_k = |c: u32, j: u32| if j == k { parts(c, j) } else { None };
                let (c, found) = choose_precompute(configured, n, bits, costs, only_k);
                match found {
                    // No c fits a call over a whole part beside the copies: the configured
                    // c, else the cheapest with k windows and at most MAX_WINDOW_BITS (the
                    // smaller buckets); shorter parts may fit, or the load says what fails.
                    1 => Ok((
                        configured.unwrap_or_else(|| cheapest_for(n, k, bits, costs)),
                        k,
                    )),
                    _ => Ok((c, k)),
                }
            }
            Precompute::Auto => Ok(choose_precompute(configured, n, bits, costs, auto_parts)),
        }
    }

    /// Bases per device part of an n-base set stored with `shift`: as long as one call on it
    /// can take beside the whole set, so that a call on the set reads whole parts (up to
    /// [`GpuMsm::parts_per_call`] of them at once); the
    /// binding limit alone where the budget leaves no room for a call (such calls are then
    /// refused, the set loaded). A configured `MsmConfig::max_slice_points` only lowers
    /// that, as it does for one-shot calls ([`GpuMsm::bindable`]). A set with copies that
    /// leaves no room for one call is refused ([`MsmError::InputTooLarge`]): the copies
    /// would only make it unusable.
    fn part_len(&self, gpu: &GpuContext, n: usize, shift: Shift) -> Result<usize> {
        if let Some(len) = self.callable_part_len(gpu, n, shift) {
            return Ok(len);
        }
        let copies = shift.copies();
        let Some(c) = shift.window_bits() else {
            let c = gpu.call_window(self.config.window_bits, n, C::spec().scalar_bits);
            return Ok(gpu.max_call_points(c).min(self.bindable(gpu, n, copies)));
        };
        let reserve = gpu.resident_bytes(n, copies);
        Err(MsmError::InputTooLarge(format!(
            "no call fits beside {n} bases with {copies} shifted copies at c = {c}: a \
             one-point call there: {}; try Precompute::Auto, fewer copies, or a smaller \
             LoadOptions::window_bits",
            gpu.call_fit(1, false, (c, copies), reserve)
                .err()
                .unwrap_or_default()
        )))
    }

    /// [`GpuMsm::part_len`] where a call over a part fits beside the set; `None` where not
    /// even a one-point call does.
    fn callable_part_len(&self, gpu: &GpuContext, n: usize, shift: Shift) -> Option<usize> {
        let copies = shift.copies();
        let reserve = gpu.resident_bytes(n, copies);
        let shape = shift.window_bits().map(|c| (c, copies));
        let cap = self.max_call_len(n, false, reserve, shape)?;
        (cap > 0).then(|| cap.min(self.bindable(gpu, n, copies)))
    }

    /// The most of n bases, with `copies` copies each, that one device part holds: one
    /// binding (whose copies' places a bucket entry names in `PART_SHIFT` bits), and at
    /// most `MsmConfig::max_slice_points`.
    fn bindable(&self, gpu: &GpuContext, n: usize, copies: u32) -> usize {
        let per_base = gpu.profile().stored_bytes_per_base(copies);
        let bind = (gpu.max_binding_bytes() / per_base) as usize;
        let bind = bind.min((1usize << PART_SHIFT) / copies as usize);
        let cap = self.config.max_slice_points.map_or(bind, |s| s.min(bind));
        cap.min(n).max(1)
    }

    /// Parts of `part_len` bases one call over an n-base set with `shift` reads at once:
    /// as many as the device binds (its profile's `base_parts`) where a call over them
    /// fits beside the set now; one on an engine whose calls may plan their buckets on the
    /// host (SRE, `BucketSort::Host`: the host's lists name points of one part).
    fn parts_per_call(&self, gpu: &GpuContext, n: usize, part_len: usize, shift: Shift) -> usize {
        let parts = n.div_ceil(part_len.max(1)).max(1);
        let most = (gpu.profile().base_parts() as usize).min(parts);
        if most == 1 || self.may_plan_on_host() {
            return 1;
        }
        let copies = shift.copies();
        let reserve = gpu.resident_bytes(n, copies);
        let shape = shift.window_bits().map(|c| (c, copies));
        let Some(cap) = self.max_call_len(n, false, reserve, shape) else {
            return 1;
        };
        // A call over g parts reads min(n, g part_len) points.
        (1..=most)
            .rev()
            .find(|&g| (g * part_len).min(n) <= cap)
            .unwrap_or(1)
    }
}

/// The window size with the fewest multiplications for n points on k copies, among those
/// of at most `MAX_WINDOW_BITS` with at least k windows.
fn cheapest_for(n: usize, k: u32, scalar_bits: u32, costs: AddCosts) -> u32 {
    (2..=crate::config::MAX_WINDOW_BITS)
        .filter(|&c| k <= num_windows(c, scalar_bits))
        .min_by_key(|&c| (precompute_cost(n.max(1), c, k, scalar_bits, costs), c))
        .unwrap_or(2)
}

impl<C: GpuCurve> GpuMsm<C> {
    /// A set loaded on several devices: each live device checks and stores its share of
    /// the bases (split as a call of their length would be), all at once; the host copy is
    /// one, shared. With every device lost the set stays on the host.
    pub(in crate::engine) fn load_on_several(
        &self,
        several: &Several<C>,
        bases: &[Affine<C>],
        options: LoadOptions,
    ) -> Result<Bases<C>> {
        let host = HostBases::copy(bases);
        let in_subgroup = self.config.validate_subgroup;
        let live = several.live();
        let split = match live.is_empty() {
            true => Vec::new(),
            false => several.split(bases.len(), &live),
        };
        if split.is_empty() {
            check_bases(bases, in_subgroup)?;
        }
        // Every share checked first: a bad base fails the load, the first one as on one
        // device, before any device's error.
        let panicked = || MsmError::Gpu("a share's load panicked".into());
        let check = |(_, r): &(usize, Range<usize>)| {
            check_bases(&bases[r.clone()], in_subgroup).map_err(|e| e.at_offset(r.start))
        };
        for checked in each_at_once(&split, check) {
            checked.unwrap_or_else(|| Err(panicked()))?;
        }
        let share_of = |r: &Range<usize>| HostBases {
            all: Arc::clone(&host.all),
            range: r.clone(),
        };
        let store =
            |(k, r): &(usize, Range<usize>)| several.devices[*k].load_checked(share_of(r), options);
        let loaded = each_at_once(&split, store);
        let mut shares = Vec::new();
        for ((k, r), out) in split.iter().zip(loaded) {
            let share = match out.unwrap_or_else(|| Err(panicked())) {
                Ok(b) => b,
                // A device that failed keeps its share on the host: calls upload it, on
                // that device once replaced or on another.
                Err(e) if device_fault(&e) => {
                    tracing::warn!(target: "gpu_msm", device = k, error = %e, "a share stays on the host");
                    let owner = several.devices[*k].owner;
                    let shape = (r.len().max(1), 1);
                    Bases::new(owner, share_of(r), Vec::new(), shape, in_subgroup)
                }
                Err(e) => return Err(e),
            };
            shares.push((*k, share));
        }
        let len = bases.len().max(1);
        Ok(Bases::with_shares(
            self.owner,
            host,
            Vec::new(),
            (len, 1),
            in_subgroup,
            shares,
        ))
    }
}
