//! Loops the shaders mark `// unroll` are written out before the driver sees them.
//!
//! A loop over the words of a point or the limbs of an element indexes a private array with
//! its counter. Unless the driver unrolls the loop, that array lives in memory: local memory
//! on a GPU, and on lavapipe (whose NIR unrolls only short loops) a stack array per lane,
//! which made the bucket accumulation about 1.7 times slower at 2^16 (`docs/PERF.md`). So the
//! shaders mark such loops, and [`expand`] replaces each with one block per value of the
//! counter, the counter a `const`, so every index is a constant.
//!
//! A marked loop is exactly `for (var I = 0u; I < BOUND; I++) {` on the line after the
//! marker, BOUND a literal (`12u`) or a `u32` constant the module defines once (`const NAME:
//! u32 = 12u;`), its closing `}` alone on its line; its body has no `break` or `continue`
//! (not even of an inner loop) and no block comment, and does not assign I (a `const`: naga
//! refuses that). Marked loops may nest.

/// The module's source with every marked loop written out, or what is wrong with a marker.
pub fn expand(source: &str) -> Result<String, String> {
    let mut lines: Vec<String> = source.lines().map(str::to_owned).collect();
    while let Some(at) = lines.iter().position(|l| l.trim() == MARKER) {
        let (header, end) = (at + 1, loop_end(&lines, at + 1)?);
        let (var, bound) = parse_header(lines.get(header).map_or("", |l| l.as_str()))?;
        let count = constant(source, &bound)?;
        let body = &lines[header + 1..end];
        if lines[end].trim() != "}" {
            return Err(format!(
                "marked loop over {var} must end on a line of its own `}}`"
            ));
        }
        for l in body {
            let code = l.split("//").next().unwrap_or("");
            let words = code.split(|c: char| !is_ident(c));
            if words.clone().any(|w| w == "break" || w == "continue") || code.contains("/*") {
                return Err(format!("unrolled loop over {var} has `{}`", l.trim()));
            }
        }
        let indent = &lines[header][..lines[header].len() - lines[header].trim_start().len()];
        let mut out = Vec::with_capacity(body.len() * count as usize + 3 * count as usize);
        for k in 0..count {
            out.push(format!("{indent}{{"));
            out.push(format!("{indent}    const {var} = {k}u;"));
            out.extend(body.iter().cloned());
            out.push(format!("{indent}}}"));
        }
        lines.splice(at..=end, out);
    }
    Ok(lines.join("\n") + "\n")
}

/// The line that marks the next loop.
pub const MARKER: &str = "// unroll";

/// The index of the line that closes the loop opened on line `header`.
fn loop_end(lines: &[String], header: usize) -> Result<usize, String> {
    let mut depth = 0i64;
    for (i, line) in lines.iter().enumerate().skip(header) {
        let code = line.split("//").next().unwrap_or("");
        depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
        if depth == 0 && i > header {
            return Ok(i);
        }
        if depth == 0 {
            return Err(format!("marked loop opens no block: {line}"));
        }
    }
    Err(format!(
        "marked loop is not closed: {}",
        lines.get(header).map_or("", |l| l.as_str())
    ))
}

/// (counter, bound) of `for (var I = 0u; I < BOUND; I++) {`.
fn parse_header(line: &str) -> Result<(String, String), String> {
    let bad = || format!("`{MARKER}` must precede `for (var I = 0u; I < BOUND; I++) {{`: {line}");
    let rest = line
        .trim()
        .strip_prefix("for (var ")
        .and_then(|r| r.strip_suffix(") {"))
        .ok_or_else(bad)?;
    let parts: Vec<&str> = rest.split(';').map(str::trim).collect();
    let [init, cond, step] = parts[..] else {
        return Err(bad());
    };
    let var = init.strip_suffix(" = 0u").ok_or_else(bad)?;
    let bound = cond
        .strip_prefix(var)
        .and_then(|c| c.strip_prefix(" < "))
        .ok_or_else(bad)?;
    if step != format!("{var}++") || var.is_empty() || !var.chars().all(is_ident) {
        return Err(bad());
    }
    Ok((var.to_owned(), bound.to_owned()))
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The value of a literal (`12u`) or of `const NAME: u32 = 12u;` in the source.
fn constant(source: &str, bound: &str) -> Result<u32, String> {
    let literal = |s: &str| s.strip_suffix('u').and_then(|d| d.parse::<u32>().ok());
    if let Some(v) = literal(bound) {
        return Ok(v);
    }
    let decl = format!("const {bound}: u32 = ");
    let values: Vec<Option<u32>> = source
        .lines()
        .filter_map(|l| l.trim().strip_prefix(&decl))
        .map(|v| literal(v.trim_end_matches(';')))
        .collect();
    match values[..] {
        [Some(v)] => Ok(v),
        _ => Err(format!(
            "unrolled loop bound {bound} is not one u32 literal constant"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_out_nested_loops_with_constant_counters() {
        let src = "const N: u32 = 2u;\nfn f() {\n    // unroll\n    for (var i = 0u; i < N; i++) {\n        // unroll\n        for (var j = 0u; j < 3u; j++) {\n            a[i * 3u + j] = b[j];\n        }\n    }\n}\n";
        let out = expand(src).unwrap();
        assert!(!out.contains("for ("), "{out}");
        assert_eq!(out.matches("a[i * 3u + j] = b[j];").count(), 6);
        assert_eq!(out.matches("const i = 1u;").count(), 1);
        assert_eq!(out.matches("const j = 2u;").count(), 2);
        // Untouched text stays as it was.
        assert!(out.starts_with("const N: u32 = 2u;\nfn f() {\n"));
    }

    #[test]
    fn refuses_what_it_cannot_write_out() {
        for bad in [
            "// unroll\nfor (var i = 1u; i < 4u; i++) {\n}\n",
            "// unroll\nfor (var i = 0u; i <= 4u; i++) {\n}\n",
            "// unroll\nfor (var i = 0u; i < n; i++) {\n}\n",
            "// unroll\nlet x = 1u;\n",
            "// unroll\nfor (var i = 0u; i < 4u; i++) {\n    break;\n}\n",
            "// unroll\nfor (var i = 0u; i < 4u; i++) {\n    if (x) { continue; }\n}\n",
            "// unroll\nfor (var i = 0u; i < 4u; i++) {\n    a[i] = 0u; /* { */\n}\n",
            "// unroll\nfor (var i = 0u; i < 4u; i++) {\n    a[i] = 0u;\n} x = 1u;\n",
            "const N: u32 = 2u;\nconst N: u32 = 3u;\n// unroll\nfor (var i = 0u; i < N; i++) {\n}\n",
            "// unroll\nfor (var i = 0u; i < 4u; i++) {\n",
        ] {
            assert!(expand(bad).is_err(), "{bad}");
        }
    }
}
