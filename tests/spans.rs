//! The phases of a GPU call are `tracing` spans. Alone in its binary: tracing caches each
//! call site's interest, and a call site first reached by another test without a subscriber
//! could be missed.

mod common;

use std::sync::{Arc, Mutex};

use common::{gpu_engine, reference};
use gpu_msm::inputs::{random_bases, random_scalars};
use gpu_msm::{MsmConfig, SreMode};
use gpu_msm::{SreOptions, SreStrategy};

/// Span names seen by a subscriber.
#[derive(Clone, Default)]
struct Names(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Names {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        self.0
            .lock()
            .unwrap()
            .push(attrs.metadata().name().to_string());
    }
}

#[test]
fn phases_are_tracing_spans() {
    use tracing_subscriber::layer::SubscriberExt;
    let names = Names::default();
    let subscriber = tracing_subscriber::registry().with(names.clone());
    let base = gpu_engine();
    let e = base
        .reconfigured(MsmConfig {
            sre: SreMode::On(SreOptions::new(SreStrategy::Indexed)),
            ..base.config().clone()
        })
        .unwrap();
    let bases = random_bases(64, 1);
    let scalars = vec![random_scalars(1, 2)[0]; 64];
    tracing::subscriber::with_default(subscriber, || {
        assert_eq!(
            e.msm(&bases, &scalars).unwrap(),
            reference(&bases, &scalars)
        );
    });
    let seen = names.0.lock().unwrap().clone();
    for want in [
        "gpu_msm.msm",
        "gpu_msm.sre_search",
        "gpu_msm.merged_points",
        "gpu_msm.digits",
        "gpu_msm.upload",
        "gpu_msm.gpu",
        "gpu_msm.window_reduction",
    ] {
        assert!(seen.iter().any(|s| s == want), "{want} not in {seen:?}");
    }
}
