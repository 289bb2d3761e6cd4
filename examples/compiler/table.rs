//! The report as markdown: a table a run, a row a pipeline, the families side by side,
//! under a line naming each family's device and driver and a key of the columns.

use super::worker::Row;

/// What each family's columns hold (RADV's statistics; `Row` documents each).
const KEY: &str = "VGPRs: vector registers a lane (of 256); spilled V/S: VGPRs and SGPRs \
    spilled to scratch; instructions: ACO's count; waves: subgroups a SIMD keeps in flight; \
    scratch B: private memory a subgroup; mul32: v_mul_lo/hi_u32 and v_mad_u64_u32 in the \
    assembly; compile s: the slowest family's pipeline build. `--json` has every figure.";

/// The report as one markdown table: a row a pipeline, the families side by side.
pub fn print_table(rows: &[Row], families: &[String]) {
    for f in families {
        if let Some(r) = rows.iter().find(|r| &r.family == f && r.error.is_none()) {
            println!("{f}: {} ({})", r.device, r.driver);
        }
    }
    println!("{KEY}\n");
    let mut head = String::from("| curve group | profile | pipeline |");
    let mut rule = String::from("|---|---|---|");
    for f in families {
        head += &format!(" {f} VGPRs | spilled V/S | instructions | waves | scratch B | mul32 |");
        rule += "---|---|---|---|---|---|";
    }
    println!("{head} compile s |\n{rule}---|");
    let mut order: Vec<&str> = Vec::new();
    for r in rows {
        if !order.contains(&r.row.as_str()) {
            order.push(&r.row);
        }
    }
    for key in order {
        let words: Vec<&str> = key.splitn(3, ' ').collect();
        let mut line = format!("| {} | {} | {} |", words[0], words[1], words[2]);
        let mut compile = 0.0f64;
        for f in families {
            match rows.iter().find(|r| r.row == key && &r.family == f) {
                Some(Row { error: Some(e), .. }) => line += &format!(" {e} | | | | | |"),
                Some(r) => {
                    compile = compile.max(r.compile_s);
                    line += &format!(
                        " {} | {} / {} | {} | {} | {} | {} |",
                        r.vgprs,
                        r.spilled_vgprs,
                        r.spilled_sgprs,
                        r.instructions,
                        r.waves,
                        r.scratch_bytes,
                        r.mul32
                    );
                }
                None => line += " | | | | | |",
            }
        }
        println!("{line} {compile:.1} |");
    }
}
