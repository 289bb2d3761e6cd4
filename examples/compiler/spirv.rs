//! WGSL to SPIR-V as wgpu 30 hands it to a Vulkan driver: naga's front end and validator,
//! the pipeline's overridable constants substituted, then naga's SPIR-V writer with the
//! options wgpu-hal's Vulkan backend uses for the engine's modules (runtime checks off, as
//! `shader_module` in `src/gpu/pipelines/compile.rs` compiles them).

use naga::back::spv;

/// A descriptor binding one entry point's SPIR-V declares (set 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    /// Its number in set 0.
    pub number: u32,
    /// A uniform block (else a storage buffer).
    pub uniform: bool,
}

/// One entry point's SPIR-V and the bindings its pipeline layout needs.
pub struct EntrySpirv {
    pub words: Vec<u32>,
    pub bindings: Vec<Binding>,
}

/// Parses and validates `source`, substitutes `constants` and writes `entry`'s SPIR-V.
pub fn entry_spirv(
    source: &str,
    entry: &str,
    constants: &[(&str, f64)],
) -> Result<EntrySpirv, String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|e| format!("{e:?}"))?;
    let mut pipeline_constants = naga::back::PipelineConstants::default();
    for (name, value) in constants {
        pipeline_constants.insert(name.to_string(), *value);
    }
    let stage = naga::ShaderStage::Compute;
    let (module, info) = naga::back::pipeline_constants::process_overrides(
        &module,
        &info,
        Some((stage, entry)),
        &pipeline_constants,
    )
    .map_err(|e| format!("{e}"))?;
    let pipeline = spv::PipelineOptions {
        shader_stage: stage,
        entry_point: entry.to_string(),
    };
    let words = spv::write_vec(&module, &info, &wgpu_options(), Some(&pipeline))
        .map_err(|e| format!("{e}"))?;
    let mut bindings: Vec<Binding> = (module.global_variables.iter())
        .filter_map(|(_, var)| {
            let b = var.binding.as_ref()?;
            assert_eq!(b.group, 0, "the engine's modules bind group 0 only");
            Some(Binding {
                number: b.binding,
                uniform: matches!(var.space, naga::AddressSpace::Uniform),
            })
        })
        .collect();
    bindings.sort_by_key(|b| b.number);
    Ok(EntrySpirv { words, bindings })
}

/// The writer's options as wgpu-hal 30 sets them on a Vulkan 1.3 device
/// (`adapter.rs`, `naga_options`) with every runtime check off (`device.rs`,
/// `compile_stage`): SPIR-V 1.6, no bounds checks, no loop bounding, no division checks,
/// workgroup memory zeroed by the driver.
fn wgpu_options() -> spv::Options<'static> {
    let unchecked = naga::proc::BoundsCheckPolicy::Unchecked;
    spv::Options {
        lang_version: (1, 6),
        flags: spv::WriterFlags::LABEL_VARYINGS | spv::WriterFlags::FORCE_POINT_SIZE,
        capabilities: None,
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: unchecked,
            buffer: unchecked,
            image_load: unchecked,
            binding_array: unchecked,
        },
        zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::Native,
        force_loop_bounding: false,
        // wgpu maps every binding of the layout to itself (no binding arrays here).
        fake_missing_bindings: true,
        emit_int_div_checks: false,
        ..spv::Options::default()
    }
}
