//! How the stages that read stored bases load them: the names of a resident set's parts a
//! call binds after the first (`bases_1`, ...), and the generated `base_quad` and
//! `part_words` over them, which the stage table's `Module::declarations` appends to those
//! stages' modules.

use crate::gpu::shader::field::CurveProfile;

/// The names of parts 1.. of the stored bases a call binds (the stage table's `Source::Part`).
pub(crate) const PART_NAMES: [&str; crate::gpu::shader::field::MAX_BASE_PARTS as usize - 1] = [
    "bases_1", "bases_2", "bases_3", "bases_4", "bases_5", "bases_6", "bases_7",
];

/// `base_quad(part, q)`: 16-byte load q of the call's part `part` (0: `bases`), and
/// `part_words(part, first)`: the BASE_QUADS loads from `first` of one stored base, the
/// part chosen once for all of them (a switch per load cost lavapipe, which runs every
/// case of a switch its lanes might take, 30-50% of a 2^16 call: docs/perf-log/2026-12-06.md).
/// The Sort module declares `part_words` unused (it reads identity bits only).
pub(crate) fn base_reads(profile: CurveProfile) -> String {
    let names = &PART_NAMES[..profile.base_parts() as usize - 1];
    // `body(binding)` for the binding of part `part`: alone for one part, else in a
    // switch over the parts (part 0, `bases`, the default).
    let per_part = |body: &dyn Fn(&str) -> String| {
        if names.is_empty() {
            return body("bases");
        }
        let mut s = String::from("    switch part {\n");
        for (k, name) in names.iter().enumerate() {
            s += &format!("        case {}u: {{\n{}        }}\n", k + 1, body(name));
        }
        s + &format!("        default: {{\n{}        }}\n    }}\n", body("bases"))
    };
    let load = |name: &str| format!("        return {name}[q];\n");
    let read_all = |name: &str| {
        format!(
            "        // unroll\n\
             \x20       for (var k = 0u; k < BASE_QUADS; k++) {{\n\
             \x20           let q = quad_words({name}[first + k]);\n\
             \x20           w[4u * k] = q.x;\n\
             \x20           w[4u * k + 1u] = q.y;\n\
             \x20           w[4u * k + 2u] = q.z;\n\
             \x20           w[4u * k + 3u] = q.w;\n\
             \x20       }}\n"
        )
    };
    format!(
        "// Load q of the call's part `part` of the stored bases (0: `bases`).\n\
         fn base_quad(part: u32, q: u32) -> BaseQuad {{\n{}}}\n\
         // The stored words of one base: BASE_QUADS loads from `first` in part `part`.\n\
         fn part_words(part: u32, first: u32) -> BaseWords {{\n    var w: BaseWords;\n{}    \
         return w;\n}}\n",
        per_part(&load),
        per_part(&read_all)
    )
}
