//! The stage table's tests: stage ids name their stages, the modules agree on their
//! bindings, and every profile's every stage builds and binds what the table says.

use super::*;
use crate::gpu::pipelines::listing::wgsl_modules;
use crate::gpu::planning::capacity::workgroup_bytes;

#[test]
fn ids_name_their_stages_and_modules_agree_on_their_bindings() {
    let ids = [
        (StageId::Convert, "convert"),
        (StageId::CountDigits, "count_digits"),
        (StageId::ScatterDigits, "scatter_digits"),
        (StageId::ScanBlocks, "scan_blocks"),
        (StageId::AccumulateBalanced, "accumulate_balanced"),
        (StageId::CarryLevel, "carry_level"),
        (StageId::Accumulate, "accumulate"),
        (StageId::Merge, "merge"),
        (StageId::ReduceLevel, "reduce_level"),
        (StageId::ReduceWindows, "reduce_windows"),
        (StageId::SelfTest, "selftest"),
        (StageId::Shift, "shift"),
    ];
    assert_eq!(ids.len(), Stage::ALL.len());
    for (k, (id, entry)) in ids.into_iter().enumerate() {
        assert_eq!((id.def().entry, StageId::ALL[k]), (entry, id));
    }
    // One name, one type within a module: a binding shared by stages is declared once.
    for stage in &Stage::ALL {
        for bind in stage.bindings {
            let declared = stage.module.bindings();
            let d = declared.iter().find(|d| d.name == bind.name).unwrap();
            assert_eq!(d.access, bind.access, "{} in {:?}", bind.name, stage.module);
        }
    }
}

/// Every profile x module through naga (no GPU), binding one part of the stored bases and
/// the most: it parses and validates, and each entry point uses exactly the bindings its
/// table entry lists (and the parts after the first where it reads bases), at the numbers
/// the table gives.
#[test]
fn every_profile_and_stage_builds_and_binds_what_the_table_says() {
    let parts = [1, crate::gpu::shader::field::MAX_BASE_PARTS];
    let profiles = crate::gpu::shader::field::every_profile().into_iter();
    for a in profiles.flat_map(|a| parts.map(|k| a.with_base_parts(k))) {
        let mut most_shared = 0;
        for m in wgsl_modules(a) {
            let module = naga::front::wgsl::parse_str(&m.source)
                .unwrap_or_else(|e| panic!("{a:?} {}: {}", m.name, e.emit_to_string(&m.source)));
            // Validated with the profile's own capabilities: a portable module that
            // needs 64-bit integers fails here.
            let mut caps = naga::valid::Capabilities::all();
            if !a
                .arithmetic
                .features()
                .contains(wgpu::Features::SHADER_INT64)
            {
                caps -= naga::valid::Capabilities::SHADER_INT64;
            }
            let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
                .validate(&module)
                .unwrap_or_else(|e| panic!("{a:?} {}: {e:?}", m.name));
            for entry in &m.entry_points {
                let stage = Stage::ALL.iter().find(|s| s.entry == *entry).unwrap();
                let (index, _) = module
                    .entry_points
                    .iter()
                    .enumerate()
                    .find(|(_, e)| e.name == *entry)
                    .unwrap_or_else(|| panic!("{a:?}: no entry point {entry}"));
                let uses = info.get_entry_point(index);
                let mut used: Vec<(String, u32)> = module
                    .global_variables
                    .iter()
                    .filter(|(h, v)| v.binding.is_some() && !uses[*h].is_empty())
                    .map(|(_, v)| (v.name.clone().unwrap(), v.binding.unwrap().binding))
                    .collect();
                used.sort();
                let mut listed: Vec<(String, u32)> = stage
                    .bindings_on(a)
                    .iter()
                    .map(|b| (b.name.to_string(), stage.module.number(b.name)))
                    .collect();
                listed.sort();
                assert_eq!(used, listed, "{a:?} {entry}");
                // The workgroup arrays it uses, by naga's sizes: within what
                // capacity.rs checks against the adapter's limit.
                let shared: u32 = module
                    .global_variables
                    .iter()
                    .filter(|(h, v)| {
                        v.space == naga::AddressSpace::WorkGroup && !uses[*h].is_empty()
                    })
                    .map(|(_, v)| module.types[v.ty].inner.size(module.to_ctx()))
                    .sum();
                assert!(shared <= workgroup_bytes(a), "{a:?} {entry}: {shared}");
                most_shared = most_shared.max(shared);
            }
            // Each binding is declared with the least access its module's entry points
            // need: written or atomic ones read_write, the others read.
            for (h, v) in module.global_variables.iter() {
                if !matches!(v.space, naga::AddressSpace::Storage { .. }) {
                    continue;
                }
                let uses = (0..module.entry_points.len())
                    .fold(naga::valid::GlobalUse::empty(), |u, i| {
                        u | info.get_entry_point(i)[h]
                    });
                let writes =
                    uses.intersects(naga::valid::GlobalUse::WRITE | naga::valid::GlobalUse::ATOMIC);
                let naga::AddressSpace::Storage { access } = v.space else {
                    unreachable!()
                };
                let declared_writable = access.contains(naga::StorageAccess::STORE);
                let name = v.name.clone().unwrap_or_default();
                assert_eq!(declared_writable, writes, "{a:?} {}: {name}", m.name);
            }
        }
        // The figure the limit is checked with is the largest stage's, not a bound.
        assert_eq!(most_shared, workgroup_bytes(a), "{a:?}");
    }
}
