//! Every pipeline stage, defined once: its entry point, its phase, the files after the
//! prelude that make its module, and its bindings (name, access, where the resource comes
//! from). Both sides are generated from this table: the WGSL `@binding` declarations of each
//! module ([`Module::declarations`]), the explicit bind-group layout of each stage
//! ([`Stage::layout_entries`]) and the bind-group entries of each pass ([`Stage::entries`]).
//! A binding's number is its place among its module's bindings, in table order.
//!
//! Which file encodes each stage's passes: `passes.rs` (every MSM stage), `resident.rs`
//! (convert and shift, when bases are loaded), `selftest.rs` (the self-test kernel).

use crate::gpu::pipelines::part_reads::{base_reads, PART_NAMES};
use crate::gpu::pipelines::slots::Slot;
use crate::gpu::shader::field::CurveProfile;
use crate::gpu::shader::{files, prelude, unroll, ShaderFile};

/// Which phase of a call a stage belongs to (its time is reported under it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Checking and converting uploaded bases.
    Convert,
    /// Decomposition and bucket sort on the GPU.
    Sort,
    /// Bucket accumulation (and the merge or carry levels).
    Accumulate,
    /// Bucket reduction.
    Reduce,
    /// Not part of an MSM call (the self-test kernel).
    SelfTest,
    /// Not part of an MSM call: the shift stage, run when a set is loaded with shifted
    /// copies. Compiled by the first such load (`GpuContext::build_shift_stage` in
    /// `compile.rs`), not with the device and not with the host-list stages
    /// ([`Stage::on_first_use`] is theirs).
    Load,
}

/// How a stage uses a binding; the WGSL type follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// `var<storage, read> name: array<u32>`.
    Read,
    /// `var<storage, read> name: array<BaseQuad>`: the stored bases as the stages after
    /// the convert stage read them, 16 bytes a load (a "quad": four u32 words, whatever type
    /// carries them) (every profile's stored base is a whole
    /// number of them, asserted where `BASE_QUADS` is generated); `BaseQuad` and
    /// `quad_words` are the profile's (`CurveProfile::wgsl_header`).
    ReadQuads,
    /// `var<storage, read_write> name: array<u32>`.
    ReadWrite,
    /// `var<storage, read_write> name: array<atomic<u32>>`.
    Atomic,
    /// `var<uniform> name: T`, T a block of `shader::contract`.
    Uniform(&'static str),
    /// The bases the convert stage reads: [`Access::ReadWrite`] where the profile stores
    /// them converted, in place ([`CurveProfile::converts_bases`]), [`Access::Read`] where it
    /// only checks them.
    ConvertedInPlace,
}

impl Access {
    /// The access on `arithmetic`'s shaders: [`Access::ConvertedInPlace`] resolved.
    pub fn on(self, profile: CurveProfile) -> Access {
        match self {
            Access::ConvertedInPlace if profile.converts_bases() => Access::ReadWrite,
            Access::ConvertedInPlace => Access::Read,
            other => other,
        }
    }
}

/// Where a binding's resource comes from when a call's pass binds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// A workspace slot, whole.
    Slot(Slot),
    /// The stored bases the call reads: a resident set's first part in the call, or the
    /// workspace's.
    Bases,
    /// Part k (from 1) of the resident set's parts in the call (`bases_k`; where the call
    /// reads fewer parts, or the workspace's bases, whatever [`Source::Bases`] binds).
    /// Generated for the stages that read [`Source::Bases`], one per part of the profile's
    /// [`CurveProfile::base_parts`] after the first, numbered after the module's own
    /// bindings.
    Part(u32),
    /// The pass's level's block of a slot of per-level parameter blocks (one block every
    /// `SECTION_ALIGN` bytes).
    Level(Slot),
    /// Given by the pass that binds it (ping-pong buffers, the self-test's own buffers).
    Given,
}

/// One binding of a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Binding {
    /// The variable's name in WGSL.
    pub name: &'static str,
    /// How the stage uses it.
    pub access: Access,
    /// Where its resource comes from.
    pub source: Source,
}

const fn b(name: &'static str, access: Access, source: Source) -> Binding {
    Binding {
        name,
        access,
        source,
    }
}

/// The stages' shader modules: the files each adds after the prelude. Stages of one module
/// share its source and its binding numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Module {
    /// The profile's convert stage, after the base check and the status words.
    Convert,
    /// Counting and scattering the digits.
    Sort,
    /// The prefix sum.
    Scan,
    /// Balanced accumulation and the carry levels.
    Balanced,
    /// The host plan's accumulation.
    Accumulate,
    /// The host plan's merge levels.
    Merge,
    /// Bucket reduction.
    Reduce,
    /// The self-test kernel (runs the base check too).
    SelfTest,
    /// The shifted copies of a resident set (`config::Precompute`).
    Shift,
}

impl Module {
    /// Every module.
    pub const ALL: [Module; 9] = [
        Module::Convert,
        Module::Sort,
        Module::Scan,
        Module::Balanced,
        Module::Accumulate,
        Module::Merge,
        Module::Reduce,
        Module::SelfTest,
        Module::Shift,
    ];

    /// The files this module adds after the prelude, in order.
    pub fn files(self, profile: CurveProfile) -> Vec<ShaderFile> {
        match self {
            Module::Convert => vec![
                files::BASE_CHECK,
                files::BASE_STATUS,
                profile.convert_file(),
            ],
            // No stored base is read (the identity bits are): no bases.wgsl.
            Module::Sort => vec![files::OFFSETS, files::SORT],
            Module::Scan => vec![files::SCAN],
            Module::Balanced => vec![files::BASES, files::OFFSETS, files::BALANCED],
            Module::Accumulate => vec![files::BASES, files::ACCUMULATE],
            Module::Merge => vec![files::MERGE],
            Module::Reduce => vec![files::OFFSETS, files::REDUCE],
            Module::SelfTest => vec![files::BASE_CHECK, files::SELFTEST],
            Module::Shift => vec![files::SHIFT],
        }
    }

    /// The module's bindings, numbered by their place: every binding of its stages, each
    /// once, in table order.
    pub fn bindings(self) -> Vec<Binding> {
        let mut out: Vec<Binding> = Vec::new();
        for stage in Stage::ALL.iter().filter(|s| s.module == self) {
            for bind in stage.bindings {
                if !out.iter().any(|o| o.name == bind.name) {
                    out.push(*bind);
                }
            }
        }
        out
    }

    /// Whether its stages read stored bases ([`Source::Bases`]).
    fn reads_bases(self) -> bool {
        self.bindings().iter().any(|b| b.source == Bases)
    }

    /// The module's bindings on `profile`'s shaders: its own, then, where it reads stored
    /// bases, one more for each part of a resident set a call binds after the first
    /// (`bases_1`, ...: [`Source::Part`]).
    pub fn bindings_on(self, profile: CurveProfile) -> Vec<Binding> {
        let mut out = self.bindings();
        if self.reads_bases() {
            out.extend(part_bindings(profile));
        }
        out
    }

    /// The binding number of `name` in this module (a part's binding after the module's
    /// own).
    pub fn number(self, name: &str) -> u32 {
        let own = self.bindings();
        if let Some(i) = own.iter().position(|b| b.name == name) {
            return i as u32;
        }
        match PART_NAMES.iter().position(|&p| p == name) {
            Some(k) if self.reads_bases() => (own.len() + k) as u32,
            _ => panic!("{self:?} has no binding {name}"),
        }
    }

    /// The generated `@binding` declarations of this module on `profile`'s shaders, and
    /// `base_quad` and `part_words` where it reads stored bases (`base_reads`).
    pub fn declarations(self, profile: CurveProfile) -> String {
        let mut s = format!(
            "// Bindings of module {self:?}, generated from src/gpu/pipelines/stages.rs.\n"
        );
        for (i, bind) in self.bindings_on(profile).iter().enumerate() {
            let access = bind.access.on(profile);
            let var = match access {
                Access::Read | Access::ReadQuads => "var<storage, read>",
                Access::ReadWrite | Access::Atomic => "var<storage, read_write>",
                Access::Uniform(_) => "var<uniform>",
                Access::ConvertedInPlace => unreachable!("resolved by Access::on"),
            };
            let ty = match access {
                Access::Read | Access::ReadWrite => "array<u32>",
                Access::ReadQuads => "array<BaseQuad>",
                Access::Atomic => "array<atomic<u32>>",
                Access::Uniform(t) => t,
                Access::ConvertedInPlace => unreachable!("resolved by Access::on"),
            };
            s += &format!("@group(0) @binding({i}) {var} {}: {ty};\n", bind.name);
        }
        if self.reads_bases() {
            s += &base_reads(profile);
        }
        s
    }

    /// The module's whole WGSL source for a profile: prelude, bindings, files, with the
    /// loops marked `// unroll` written out (`shader/unroll.rs`).
    pub fn source(self, profile: CurveProfile) -> String {
        let mut parts = vec![prelude(profile), self.declarations(profile)];
        parts.extend(
            self.files(profile)
                .iter()
                .map(|f| format!("// ---- shaders/{} ----\n{}", f.name, f.text)),
        );
        // The markers are ours: a bad one fails every test that builds a module.
        unroll::expand(&parts.join("\n")).unwrap_or_else(|e| panic!("{self:?}: {e}"))
    }
}

/// One entry point: what it is called, its module, its phase, its bindings and when it is
/// compiled.
///
/// Every stage does nothing harmful at zero counts: with every field of its uniform blocks
/// zero, each thread returns at once or touches only workgroup memory or the first words of
/// its buffers (the warm-up, `warm_up.rs`, dispatches each stage so, unchecked).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Stage {
    /// The entry point's name in WGSL.
    pub entry: &'static str,
    /// The module it is compiled from.
    pub module: Module,
    /// The phase its passes are timed under.
    pub phase: Phase,
    /// Every binding it uses, no other.
    pub bindings: &'static [Binding],
    /// Compiled by the first call that uses it rather than with the device: the host-list
    /// path's accumulation and merge, which only calls that plan their buckets on the host
    /// (SRE, `BucketSort::Host`) run.
    pub on_first_use: bool,
}

use Access::{Atomic, Read, ReadQuads, ReadWrite, Uniform};
use Source::{Bases, Given, Level};

/// The bindings of parts 1.. of the stored bases on `profile`'s shaders.
fn part_bindings(profile: CurveProfile) -> impl Iterator<Item = Binding> {
    (1..profile.base_parts()).map(|k| b(PART_NAMES[k as usize - 1], ReadQuads, Source::Part(k)))
}

const PARAMS: Binding = b("params", Uniform("Params"), Source::Slot(Slot::Params));

/// Names of the stages (an index into [`Stage::ALL`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum StageId {
    Convert,
    CountDigits,
    ScatterDigits,
    ScanBlocks,
    AccumulateBalanced,
    CarryLevel,
    Accumulate,
    Merge,
    ReduceLevel,
    ReduceWindows,
    SelfTest,
    Shift,
}

impl StageId {
    /// Every stage, in table order.
    pub const ALL: [StageId; 12] = {
        use StageId::*;
        [
            Convert,
            CountDigits,
            ScatterDigits,
            ScanBlocks,
            AccumulateBalanced,
            CarryLevel,
            Accumulate,
            Merge,
            ReduceLevel,
            ReduceWindows,
            SelfTest,
            Shift,
        ]
    };

    /// The stage's definition.
    pub fn def(self) -> &'static Stage {
        &Stage::ALL[self as usize]
    }
}

impl Stage {
    /// Every stage, in [`StageId`] order.
    pub const ALL: [Stage; 12] = [
        Stage {
            entry: "convert",
            module: Module::Convert,
            phase: Phase::Convert,
            bindings: &[
                // Uploaded in arkworks' form, stored in the profile's (in place) or checked.
                b("bases", Access::ConvertedInPlace, Source::Slot(Slot::Bases)),
                PARAMS,
                // The call's status words (shader::contract), read back with the sums.
                b("status", Atomic, Source::Slot(Slot::Status)),
            ],
            on_first_use: false,
        },
        Stage {
            entry: "count_digits",
            module: Module::Sort,
            phase: Phase::Sort,
            bindings: &[
                // Only the identity bits after the bases (Params::identity_quads).
                b("bases", ReadQuads, Bases),
                // Uploaded in Montgomery form; count_digits writes each one's integer back
                // (zero where its base places nothing), which scatter_digits reads.
                b("scalars", ReadWrite, Source::Slot(Slot::Scalars)),
                // Bucket counts: scan level 0.
                b("counters", Atomic, Source::Slot(Slot::Scan)),
                PARAMS,
                // The pass's streamed chunk: its first point (in_base) and points (count_in).
                b("level", Uniform("LevelParams"), Level(Slot::LevelParams)),
            ],
            on_first_use: false,
        },
        Stage {
            entry: "scatter_digits",
            module: Module::Sort,
            phase: Phase::Sort,
            bindings: &[
                b("scalars", ReadWrite, Source::Slot(Slot::Scalars)),
                // Per-bucket cursors.
                b("counters", Atomic, Source::Slot(Slot::Counters)),
                // Bucket offsets: the prefix sum's levels (offsets.wgsl).
                b("offsets", Read, Source::Slot(Slot::Scan)),
                b("entries", ReadWrite, Source::Slot(Slot::Entries)),
                b("entry_buckets", ReadWrite, Source::Slot(Slot::EntryBuckets)),
                PARAMS,
            ],
            on_first_use: false,
        },
        Stage {
            entry: "scan_blocks",
            module: Module::Scan,
            phase: Phase::Sort,
            bindings: &[
                b("scan", ReadWrite, Source::Slot(Slot::Scan)),
                b("level", Uniform("LevelParams"), Level(Slot::LevelParams)),
            ],
            on_first_use: false,
        },
        Stage {
            entry: "accumulate_balanced",
            module: Module::Balanced,
            phase: Phase::Accumulate,
            bindings: &[
                b("bases", ReadQuads, Bases),
                b("offsets", Read, Source::Slot(Slot::Scan)),
                b("entries", Read, Source::Slot(Slot::Entries)),
                b("entry_buckets", Read, Source::Slot(Slot::EntryBuckets)),
                b("buckets", ReadWrite, Source::Slot(Slot::Buckets)),
                // Carry level 0's input.
                b("out_keys", ReadWrite, Source::Slot(Slot::ItemKeysA)),
                b("out_sums", ReadWrite, Source::Slot(Slot::ItemSumsA)),
                PARAMS,
            ],
            on_first_use: false,
        },
        Stage {
            entry: "carry_level",
            module: Module::Balanced,
            phase: Phase::Accumulate,
            bindings: &[
                b("buckets", ReadWrite, Source::Slot(Slot::Buckets)),
                // Items A and B in turn, by level; a lane keeps its head's sum in its first
                // input item once read (balanced.wgsl).
                b("in_keys", Read, Given),
                b("in_sums", ReadWrite, Given),
                b("out_keys", ReadWrite, Given),
                b("out_sums", ReadWrite, Given),
                PARAMS,
                b("level", Uniform("LevelParams"), Level(Slot::LevelParams)),
            ],
            on_first_use: false,
        },
        Stage {
            entry: "accumulate",
            module: Module::Accumulate,
            phase: Phase::Accumulate,
            bindings: &[
                b("bases", ReadQuads, Bases),
                b("chunk_offsets", Read, Source::Slot(Slot::ChunkOffsets)),
                b("entries", Read, Source::Slot(Slot::Entries)),
                b("chunk_sums", ReadWrite, Source::Slot(Slot::ChunkSums)),
                PARAMS,
            ],
            on_first_use: true,
        },
        Stage {
            entry: "merge",
            module: Module::Merge,
            phase: Phase::Accumulate,
            bindings: &[
                // Chunk sums and the merge buffer in turn, by level; the buckets last.
                b("merge_in", Read, Given),
                b("groups", Read, Source::Slot(Slot::MergeGroups)),
                b("merge_out", ReadWrite, Given),
                b("mparams", Uniform("MergeParams"), Level(Slot::MergeParams)),
            ],
            on_first_use: true,
        },
        Stage {
            entry: "reduce_level",
            module: Module::Reduce,
            phase: Phase::Reduce,
            bindings: &[
                // Level 0's items.
                b("buckets", Read, Source::Slot(Slot::Buckets)),
                // The items of the levels after it, read and written in place (a thread
                // writes only its first).
                b("partials", ReadWrite, Source::Slot(Slot::Partials)),
                PARAMS,
                // The prefix sum's levels (GPU bucket sort): empty buckets and windows.
                b("offsets", Read, Source::Slot(Slot::Scan)),
                b("level", Uniform("LevelParams"), Level(Slot::LevelParams)),
            ],
            on_first_use: false,
        },
        Stage {
            entry: "reduce_windows",
            module: Module::Reduce,
            phase: Phase::Reduce,
            bindings: &[
                b("partials", ReadWrite, Source::Slot(Slot::Partials)),
                b("window_sums", ReadWrite, Source::Slot(Slot::Sums)),
                PARAMS,
            ],
            on_first_use: false,
        },
        Stage {
            entry: "selftest",
            module: Module::SelfTest,
            phase: Phase::SelfTest,
            bindings: &[
                b("input", Read, Given),
                b("output", ReadWrite, Given),
                b("tparams", Uniform("SelfTestParams"), Given),
            ],
            on_first_use: false,
        },
        Stage {
            entry: "shift",
            module: Module::Shift,
            phase: Phase::Load,
            bindings: &[
                // The resident part's buffer: copy - 1 read, copy written.
                b("bases", ReadWrite, Given),
                b("sparams", Uniform("ShiftParams"), Given),
                // The load's status word: a base whose copy is not a point of the stored form.
                b("status", Atomic, Given),
            ],
            on_first_use: false,
        },
    ];

    /// Whether this stage reads the stored bases (then it binds every part a call reads,
    /// and is compiled once per part count: `pipelines/compile.rs`).
    pub fn reads_bases(&self) -> bool {
        self.bindings.iter().any(|b| b.source == Bases)
    }

    /// Every binding of this stage on `profile`'s shaders: its own, then one for each part
    /// of the stored bases after the first where it reads them.
    pub fn bindings_on(&self, profile: CurveProfile) -> Vec<Binding> {
        let mut out = self.bindings.to_vec();
        if self.reads_bases() {
            out.extend(part_bindings(profile));
        }
        out
    }

    /// The explicit bind-group layout entries of this stage (the shader's signature).
    pub fn layout_entries(&self, profile: CurveProfile) -> Vec<wgpu::BindGroupLayoutEntry> {
        self.bindings_on(profile)
            .iter()
            .map(|bind| wgpu::BindGroupLayoutEntry {
                binding: self.module.number(bind.name),
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: match bind.access.on(profile) {
                        Access::Uniform(_) => wgpu::BufferBindingType::Uniform,
                        Access::Read | Access::ReadQuads => {
                            wgpu::BufferBindingType::Storage { read_only: true }
                        }
                        Access::ReadWrite | Access::Atomic => {
                            wgpu::BufferBindingType::Storage { read_only: false }
                        }
                        Access::ConvertedInPlace => unreachable!("resolved by Access::on"),
                    },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect()
    }

    /// The highest binding number this stage uses on `profile`'s shaders (0 for none).
    pub fn highest_binding(&self, profile: CurveProfile) -> u32 {
        (self.bindings_on(profile).iter())
            .map(|b| self.module.number(b.name))
            .max()
            .unwrap_or(0)
    }

    /// Storage and uniform buffers this stage binds.
    pub fn buffer_counts(&self, profile: CurveProfile) -> (u32, u32) {
        let all = self.bindings_on(profile);
        let uniform = all
            .iter()
            .filter(|b| matches!(b.access.on(profile), Access::Uniform(_)))
            .count() as u32;
        (all.len() as u32 - uniform, uniform)
    }

    /// The bind-group entries of one pass of this stage on `profile`'s shaders, each
    /// binding's resource from `resource`.
    pub fn entries<'a>(
        &self,
        profile: CurveProfile,
        mut resource: impl FnMut(&Binding) -> wgpu::BindingResource<'a>,
    ) -> Vec<wgpu::BindGroupEntry<'a>> {
        self.bindings_on(profile)
            .iter()
            .map(|bind| wgpu::BindGroupEntry {
                binding: self.module.number(bind.name),
                resource: resource(bind),
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "stages_tests.rs"]
mod tests;
