//! Every shader module of a profile as the engine assembles it, for reading and for tools
//! (`cargo run --example profiles -- --dump-wgsl DIR`, `examples/compiler_report.rs`).

use crate::gpu::pipelines::stages::{Module, Stage};
use crate::gpu::shader::field::CurveProfile;

/// One shader module as compiled for a profile: what [`wgsl_modules`] lists.
#[derive(Debug, Clone)]
pub struct WgslModule {
    /// The module's name (`Convert`, `Sort`, ...).
    pub name: String,
    /// Its entry points, each one stage.
    pub entry_points: Vec<&'static str>,
    /// Those of its entry points that read stored bases: compiled once per count of device
    /// parts a call binds (the module assembled for that count: [`CurveProfile::with_base_parts`]).
    pub reads_bases: Vec<&'static str>,
    /// The files of `shaders/` it adds after the prelude.
    pub files: Vec<&'static str>,
    /// The whole WGSL the driver compiles.
    pub source: String,
}

/// Every shader module of a profile, assembled as the engine compiles it (for reading:
/// `cargo run --example profiles -- --dump-wgsl DIR` writes them out).
pub fn wgsl_modules(profile: CurveProfile) -> Vec<WgslModule> {
    let mut modules: Vec<Module> = Vec::new();
    for stage in &Stage::ALL {
        if !modules.contains(&stage.module) {
            modules.push(stage.module);
        }
    }
    modules
        .into_iter()
        .map(|m| WgslModule {
            name: format!("{m:?}"),
            entry_points: Stage::ALL
                .iter()
                .filter(|s| s.module == m)
                .map(|s| s.entry)
                .collect(),
            reads_bases: Stage::ALL
                .iter()
                .filter(|s| s.module == m && s.reads_bases())
                .map(|s| s.entry)
                .collect(),
            files: m.files(profile).iter().map(|f| f.name).collect(),
            source: m.source(profile),
        })
        .collect()
}
