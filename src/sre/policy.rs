//! The engine's SRE policy per call: off, on by configuration, or `Auto` (the cost model of
//! [`super::auto`] fed with rates measured on the engine's own GPU calls).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use ark_ec::short_weierstrass::Affine;

use super::auto::{self, Rates, DEFAULT_MERGE_NS};
use super::SrePlan;
use crate::config::{MsmConfig, SreMode};
use crate::curve::{Fr, GpuCurve};
use crate::digits::{pippenger_cost, AddCosts, DigitMatrix};
use crate::report::{MsmReport, SreReport};

/// What a GPU call places in buckets: the window size (`None`: chosen from the scalars'
/// largest bit length), and either an SRE plan or plain digits (`digits`, when already
/// computed at `c`; else they are computed from the scalars).
pub(crate) struct Placement {
    pub c: Option<u32>,
    pub digits: Option<DigitMatrix>,
    pub sre: Option<SrePlan>,
}

/// The rates `Auto` predicts with, by floor(log2 n), learned from finished GPU calls.
#[derive(Default)]
pub(crate) struct SrePolicy {
    rates: Mutex<BTreeMap<u32, Rates>>,
}

impl SrePolicy {
    /// Window size and SRE plan for a GPU call, per `config.sre`; fills the report's SRE part.
    pub(crate) fn plan<C: GpuCurve>(
        &self,
        config: &MsmConfig,
        bases: &[Affine<C>],
        scalars: &[Fr<C>],
        costs: AddCosts,
        report: &mut MsmReport,
    ) -> Placement {
        let n = bases.len();
        let plain = |c, digits| Placement {
            c,
            digits,
            sre: None,
        };
        match config.sre {
            SreMode::Off => plain(config.window_bits, None),
            SreMode::On(opts) => {
                let bits = C::spec().scalar_bits;
                let c = crate::digits::choose_window(config.window_bits, n, bits, costs);
                let t = Instant::now();
                let d = DigitMatrix::new(bases, scalars, c);
                report.phases.digits += t.elapsed();
                let plan = super::search(&d, &opts, None);
                report.phases.sre_search = plan.stats.search_time;
                report.sre = Some(SreReport {
                    options: opts,
                    stats: plan.stats,
                    applied: true,
                    reason: "SRE on by configuration".into(),
                });
                Placement {
                    c: Some(c),
                    digits: None,
                    sre: Some(plan),
                }
            }
            SreMode::Auto => self.auto(config, bases, scalars, costs, report),
        }
    }

    fn auto<C: GpuCurve>(
        &self,
        config: &MsmConfig,
        bases: &[Affine<C>],
        scalars: &[Fr<C>],
        costs: AddCosts,
        report: &mut MsmReport,
    ) -> Placement {
        let n = bases.len();
        let rates = self.rates_near(n);
        let dec = auto::decide(bases, scalars, rates, config.window_bits, costs);
        let mut rep = SreReport {
            options: auto::AUTO_OPTIONS,
            stats: dec.pilot_stats,
            applied: false,
            reason: dec.reason.clone(),
        };
        report.phases.sre_search = dec.pilot_time;
        let mut out = Placement {
            c: Some(dec.plain_window_bits),
            digits: None,
            sre: None,
        };
        if let (true, Some(r)) = (dec.search, rates) {
            let (plan, digits) = match dec.plan {
                Some(p) => (p, None),
                None => {
                    let t = Instant::now();
                    let d = DigitMatrix::new(bases, scalars, dec.window_bits);
                    report.phases.digits += t.elapsed();
                    let p = super::search(&d, &auto::AUTO_OPTIONS, Some(dec.deadline));
                    report.phases.sre_search += p.stats.search_time;
                    (p, Some(d))
                }
            };
            let st = &plan.stats;
            let predicted = auto::sre_ns(
                &r,
                n,
                dec.window_bits,
                st.additions_saved as f64,
                st.pairs as f64,
                0.0,
            );
            rep.stats = plan.stats;
            if predicted < dec.plain_ns {
                rep.applied = true;
                rep.reason +=
                    &format!("; full search: {:.3} ms predicted with it", predicted / 1e6);
                out = Placement {
                    c: Some(dec.window_bits),
                    digits: None,
                    sre: Some(plan),
                };
            } else {
                rep.reason += &format!(
                    "; full search found too little ({:.3} ms predicted), plain",
                    predicted / 1e6
                );
                // Plain at the best plain window: reuse the digits if they are for it.
                let c = dec.plain_window_bits;
                out = Placement {
                    c: Some(c),
                    digits: digits.filter(|d| d.window_bits == c),
                    sre: None,
                };
            }
        }
        report.sre = Some(rep);
        out
    }

    /// The rates measured at the size nearest n (log scale), if any.
    fn rates_near(&self, n: usize) -> Option<Rates> {
        let log = n.max(1).ilog2();
        let map = self.rates.lock().ok()?;
        let below = map.range(..=log).next_back();
        let above = map.range(log..).next();
        match (below, above) {
            (Some((&a, ra)), Some((&b, rb))) => Some(if log - a <= b - log { *ra } else { *rb }),
            (Some((_, r)), None) | (None, Some((_, r))) => Some(*r),
            (None, None) => None,
        }
    }

    /// Updates the rates from a finished GPU call, whose profile's additions cost `costs`
    /// on its curve group. Only full-width calls teach the whole-call rate (a call on small
    /// scalars runs fewer windows than the model counts).
    pub(crate) fn learn(&self, rep: &MsmReport, scalar_bits: u32, costs: AddCosts) {
        let (Some(c), true) = (rep.window_bits, rep.num_entries > 0) else {
            return;
        };
        let p = &rep.phases;
        let call = p.total.saturating_sub(p.sre_search + p.merged_points);
        let entry_ns = p.bucket_accumulation.as_nanos() as f64 / rep.num_entries as f64;
        let full_width = rep.num_windows == crate::digits::num_windows(c, scalar_bits);
        let call_ns_per_mul =
            call.as_nanos() as f64 / pippenger_cost(rep.n, c, scalar_bits, costs) as f64;
        let applied = rep.sre.as_ref().is_some_and(|s| s.applied);
        let Ok(mut map) = self.rates.lock() else {
            return;
        };
        let log = rep.n.max(1).ilog2();
        let prev = map.get(&log).copied();
        let mut merge_ns = prev.map_or(DEFAULT_MERGE_NS, |r| r.merge_ns);
        if let Some(s) = rep
            .sre
            .as_ref()
            .filter(|s| s.applied && s.stats.pairs >= 64)
        {
            merge_ns = p.merged_points.as_nanos() as f64 / s.stats.pairs as f64;
        }
        // Newest measurement weighs half: a warm-up outlier fades within a few calls.
        let mix = |old: Option<f64>, new: f64| old.map_or(new, |o| 0.5 * o + 0.5 * new);
        map.insert(
            log,
            Rates {
                entry_ns: mix(prev.map(|r| r.entry_ns), entry_ns),
                // A call with SRE, or on fewer windows, did less than pippenger_cost: it
                // says nothing about a plain full-width call.
                call_ns_per_mul: match (applied || !full_width, prev) {
                    (true, Some(p)) => p.call_ns_per_mul,
                    _ => mix(prev.map(|r| r.call_ns_per_mul), call_ns_per_mul),
                },
                merge_ns,
                scalar_bits,
                costs,
            },
        );
    }
}
