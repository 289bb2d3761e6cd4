//! No import circles: between the crate's top-level modules, and between the files of each
//! folder under `src/`. And every parallel iterator of the crate on its host pool. Edges are the `use` declarations (and inline `crate::`/`super::`
//! paths) outside `#[cfg(test)]` modules; doc comments and comments do not count. CPU only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The code of a file without comments and without its `#[cfg(test)]` module (nothing of a
/// `*_tests.rs` file, a test module kept beside its file by `#[path]`).
fn code(path: &Path) -> String {
    if path.to_string_lossy().ends_with("_tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(path).unwrap();
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => &text,
    };
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names `prefix` (as `prefix::name` or `prefix::{a, b}`) reaches in `code`.
fn reached(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().last();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let names = match rest.strip_prefix('{') {
            Some(group) => &group[..group.find('}').unwrap()],
            None => rest,
        };
        let names = match rest.starts_with('{') {
            true => names.split(',').collect::<Vec<_>>(),
            false => vec![names],
        };
        for name in names {
            let name: String = name
                .trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.insert(name);
        }
    }
    out
}

/// A cycle of `edges`, if there is one.
fn cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == n) {
            let mut c = path[at..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if !done.insert(n.to_string()) {
            return None;
        }
        path.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|n| visit(n, edges, &mut Vec::new(), &mut done))
}

/// The module (file or folder) of `dir` that `path` belongs to; `None` for `mod.rs`,
/// `lib.rs` and `tests.rs`.
fn module_of(dir: &Path, path: &Path) -> Option<String> {
    let first = path.strip_prefix(dir).unwrap().components().next()?;
    let name = first
        .as_os_str()
        .to_str()?
        .trim_end_matches(".rs")
        .to_string();
    (!["mod", "lib", "tests"].contains(&name.as_str())).then_some(name)
}

/// The import edges between the modules of `dir` (`prefix`: how a file there names them,
/// `crate` at the top, `super` or the full path inside a folder).
fn edges(dir: &Path, prefixes: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| module_of(dir, &e.unwrap().path()))
        .collect();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(dir) {
        let Some(me) = module_of(dir, &file) else {
            continue;
        };
        let code = code(&file);
        for prefix in prefixes {
            for name in reached(&code, prefix) {
                if modules.contains(&name) && name != me {
                    out.entry(me.clone()).or_default().insert(name);
                }
            }
        }
    }
    out
}

#[test]
fn no_module_imports_itself_through_others() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let top = edges(&src, &["crate::"]);
    assert!(
        top.contains_key("engine"),
        "the graph found no imports: {top:?}"
    );
    assert_eq!(cycle(&top), None, "top-level modules: {top:?}");
    let folders = folders(&src);
    assert!(folders.len() >= 10, "{folders:?}");
    for folder in folders {
        let dir = src.join(&folder);
        let path = format!("crate::{}::", folder.replace('/', "::"));
        let e = edges(&dir, &["super::", &path]);
        assert_eq!(cycle(&e), None, "src/{folder}: {e:?}");
    }
}

/// Every folder under `dir` that holds Rust files (each module folder has its `mod.rs`), as
/// paths relative to it.
fn folders(dir: &Path) -> BTreeSet<String> {
    rust_files(dir)
        .iter()
        .filter_map(|f| f.parent()?.strip_prefix(dir).ok())
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.to_string_lossy().into_owned())
        .collect()
}

/// Inside `src/` an item is named by its module's path, never by a re-export at the crate's
/// root (`crate::MsmConfig`), which would hide the import from the graph above.
#[test]
fn no_root_re_export_is_used_inside_the_crate() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for f in rust_files(&src) {
        let code = code(&f);
        let mut rest = code.as_str();
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            if rest.starts_with(|c: char| c.is_ascii_uppercase() || c == '{') {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
                found.push(format!("{}: crate::{name}", f.display()));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut e: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        e.entry(a.into()).or_default().insert(b.into());
    }
    let c = cycle(&e).expect("a -> b -> c -> a");
    assert_eq!(c.first(), c.last());
    assert_eq!(c.len(), 4);
    e.get_mut("c").unwrap().remove("a");
    assert_eq!(cycle(&e), None);
    let code = "use super::{a, b::X};\nlet y = super::c::f(x, e);\nuse other::super::d;";
    let r = reached(code, "super::");
    let want: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
    assert_eq!(r, want);
}

/// What starts parallel work on rayon's current pool: a parallel iterator's source, rayon's
/// own joins and scopes, and the arkworks calls that are parallel inside.
const PARALLEL: [&str; 10] = [
    ".par_iter(",
    ".par_iter_mut(",
    ".into_par_iter(",
    ".par_chunks(",
    ".par_chunks_mut(",
    "rayon::join(",
    "rayon::scope(",
    "rayon::in_place_scope(",
    "::msm(",
    "normalize_batch(",
];

/// Every parallel iterator of the crate runs on its host pool (`src/host_pool.rs`: work done
/// while a call holds room in a memory budget must never need a thread of the caller's pool,
/// which may be waiting for that room): each one in `src/` (tests aside) lies in a function
/// that calls `host_pool::install` before it, or is handed to the packers, which do.
#[test]
fn every_parallel_iterator_runs_on_the_host_pool() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut outside = Vec::new();
    for path in rust_files(&src) {
        let name = path.file_name().unwrap().to_string_lossy();
        if name == "host_pool.rs" || name == "tests.rs" {
            continue;
        }
        let code = code(&path);
        for pattern in PARALLEL {
            for (at, _) in code.match_indices(pattern) {
                let line_start = code[..at].rfind('\n').map_or(0, |i| i + 1);
                let line_end = code[at..].find('\n').map_or(code.len(), |i| at + i);
                let line = &code[line_start..line_end];
                if line.contains("pack_affine(") || line.contains("pack_identity_bits(") {
                    continue;
                }
                let function = code[..at].rfind("fn ").unwrap_or(0);
                if !code[function..at].contains("host_pool::install(") {
                    let n = code[..at].matches('\n').count() + 1;
                    let file = path.strip_prefix(&src).unwrap_or(&path).display();
                    outside.push(format!("src/{file}:{n}: {}", line.trim()));
                }
            }
        }
    }
    assert!(
        outside.is_empty(),
        "parallel work outside host_pool::install:\n{}",
        outside.join("\n")
    );
}

/// A `*_tests.rs` file (which the graph above skips) is a test module only: its file names
/// it under `#[cfg(test)]`.
#[test]
fn test_files_are_compiled_for_tests_only() {
    let files = rust_files(Path::new("src"));
    for f in files
        .iter()
        .filter(|f| f.to_string_lossy().ends_with("_tests.rs"))
    {
        let name = f.file_name().unwrap().to_string_lossy();
        let line = format!("#[cfg(test)]\n#[path = \"{name}\"]\nmod tests;");
        let includer = files
            .iter()
            .filter(|g| g.parent() == f.parent())
            .any(|g| std::fs::read_to_string(g).unwrap().contains(&line));
        assert!(includer, "{f:?} is not included as a #[cfg(test)] module");
    }
}
