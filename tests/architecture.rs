//! The structure rules of `src/`, checked from the source text (no build of
//! the crate, no server): the layers written in `docs/architecture.md` (a
//! top-level module imports only modules of lower layers, so no two import
//! each other in a loop), no `#[path]`, no source file over 800 lines.
//!
//! An import is a `crate::NAME` outside comments, string literals and
//! `#[cfg(test)]` items, in a file that is not a test file (`tests.rs`, or
//! under a `tests/` folder): tests may reach across layers to check that two
//! layers agree. Files over the size limit today are listed below with the
//! issue-41 step that splits them; a listed file that is no longer too long
//! fails the test too, so the list only shrinks.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 800;

/// Files allowed over `MAX_LINES`, each with the step that splits it (none today).
const LONG_FILES: &[(&str, &str)] = &[];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Path relative to `src/`, with `/` separators.
fn rel(p: &Path) -> String {
    let r = p.strip_prefix(src()).expect("file under src/");
    r.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The layers of `docs/architecture.md`'s ```layers block, top first.
fn layers() -> Vec<Vec<String>> {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md");
    let doc = fs::read_to_string(&doc_path).unwrap_or_else(|e| panic!("read {}: {e}", doc_path.display()));
    let start = doc
        .find("```layers\n")
        .expect("docs/architecture.md has a ```layers block");
    let body = &doc[start + "```layers\n".len()..];
    let end = body.find("```").expect("the ```layers block ends");
    body[..end]
        .lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The top-level modules: folders and `.rs` files directly in `src/`
/// (`lib.rs` and `main.rs` are the roots).
fn modules() -> BTreeSet<String> {
    fs::read_dir(src())
        .expect("read src/")
        .map(|e| e.expect("directory entry").path())
        .filter_map(|p| {
            let name = p.file_name()?.to_string_lossy().into_owned();
            if p.is_dir() {
                Some(name)
            } else {
                let stem = name.strip_suffix(".rs")?;
                (stem != "lib" && stem != "main").then(|| stem.to_owned())
            }
        })
        .collect()
}

/// Source text without comments, the contents of string and char literals,
/// and `#[cfg(test)]` items.
fn code_of(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'r' if matches!(b.get(i + 1), Some(b'#' | b'"')) && (i == 0 || !is_ident(b[i - 1])) => {
                // Raw string r"..." or r#"..."#.
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                let close: String = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let rest = &text[j + 1..];
                let end = rest.find(&close).map_or(b.len(), |k| j + 1 + k + close.len());
                out.push_str("\"\"");
                i = end;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
                let lit = if b.get(i + 1) == Some(&b'\\') {
                    // An escape: the closing quote comes after the escaped character.
                    text.get(i + 3..).and_then(|t| t.find('\'')).map(|k| k + 2)
                } else {
                    text[i + 1..]
                        .find('\'')
                        .filter(|&k| text[i + 1..i + 1 + k].chars().count() == 1)
                };
                match lit {
                    Some(k) => {
                        out.push_str("' '");
                        i += k + 2;
                    }
                    None => {
                        out.push('\'');
                        i += 1;
                    }
                }
            }
            _ => {
                let c = text[i..].chars().next().expect("char boundary");
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    strip_test_items(&out)
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// `code` without the items under `#[cfg(test)]` (a block, or an item that
/// ends with `;`).
fn strip_test_items(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let brace = after.find('{');
        let semi = after.find(';');
        let end = match (brace, semi) {
            (Some(b), Some(s)) if s < b => s + 1,
            (Some(b), _) => {
                let mut depth = 0;
                let mut end = after.len();
                for (k, c) in after[b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = b + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (None, Some(s)) => s + 1,
            (None, None) => after.len(),
        };
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The top-level modules `code` names through `crate::`.
fn imports(code: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = code.len() - rest.len() + at;
        rest = &rest[at + "crate::".len()..];
        if before > 0 && is_ident(code.as_bytes()[before - 1]) {
            continue; // e.g. `my_crate::`
        }
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::{c, d}}`: the first name of each top-level entry.
            let mut depth = 0;
            let mut entry_start = true;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => entry_start = true,
                    c if entry_start && (c.is_ascii_alphabetic() || c == '_') => {
                        let name: String = group[k..].chars().take_while(|&c| is_ident(c as u8)).collect();
                        if modules.contains(&name) {
                            found.insert(name);
                        }
                        entry_start = false;
                    }
                    c if c.is_whitespace() => {}
                    _ => entry_start = false,
                }
            }
        } else {
            let name: String = rest.chars().take_while(|&c| is_ident(c as u8)).collect();
            if modules.contains(&name) {
                found.insert(name);
            }
        }
    }
    found
}

fn is_test_file(rel: &str) -> bool {
    rel.ends_with("/tests.rs") || rel.split('/').any(|part| part == "tests")
}

/// Every `from -> to` import between top-level modules, with one file that
/// makes it.
fn import_graph() -> BTreeMap<(String, String), String> {
    let modules = modules();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut edges = BTreeMap::new();
    for f in files {
        let rel = rel(&f);
        let first = rel.split('/').next().expect("a path");
        let Some(me) = modules.get(first.strip_suffix(".rs").unwrap_or(first)) else {
            continue; // lib.rs, main.rs
        };
        if is_test_file(&rel) {
            continue;
        }
        let text = fs::read_to_string(&f).expect("read a source file");
        for other in imports(&code_of(&text), &modules) {
            if &other != me {
                edges
                    .entry((me.clone(), other))
                    .or_insert_with(|| format!("src/{rel}"));
            }
        }
    }
    edges
}

#[test]
fn imports_follow_the_layers_of_docs_architecture() {
    let layers = layers();
    let mut level = BTreeMap::new();
    for (i, layer) in layers.iter().enumerate() {
        for m in layer {
            assert!(
                level.insert(m.clone(), i).is_none(),
                "{m} is on two lines of the layers block"
            );
        }
    }
    let modules = modules();
    let missing: Vec<_> = modules.iter().filter(|m| !level.contains_key(*m)).collect();
    assert!(
        missing.is_empty(),
        "top-level modules missing from docs/architecture.md's layers: {missing:?}"
    );
    let stale: Vec<_> = level.keys().filter(|m| !modules.contains(*m)).collect();
    assert!(
        stale.is_empty(),
        "docs/architecture.md names modules that src/ does not have: {stale:?}"
    );
    let wrong: Vec<String> = import_graph()
        .into_iter()
        .filter(|((from, to), _)| level[to] <= level[from])
        .map(|((from, to), file)| format!("{from} -> {to} ({file})"))
        .collect();
    assert!(
        wrong.is_empty(),
        "imports against the layers of docs/architecture.md (a module may import only lower lines):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let edges = import_graph();
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().push(to);
    }
    // Depth-first search; a module met again while still on the path closes a loop.
    fn visit<'a>(
        m: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(at) = path.iter().position(|p| *p == m) {
            let mut cycle = path[at..].to_vec();
            cycle.push(m);
            return Some(cycle);
        }
        if !done.insert(m) {
            return None;
        }
        path.push(m);
        for n in next.get(m).into_iter().flatten() {
            if let Some(c) = visit(n, next, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for m in next.keys() {
        let found = visit(m, &next, &mut Vec::new(), &mut done);
        assert!(
            found.is_none(),
            "import cycle: {}",
            found.unwrap_or_default().join(" -> ")
        );
    }
}

#[test]
fn no_path_attributes_and_no_file_over_800_lines() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut long = Vec::new();
    let mut with_path = Vec::new();
    for f in &files {
        let text = fs::read_to_string(f).expect("read a source file");
        let rel = rel(f);
        if text.lines().count() > MAX_LINES {
            long.push(rel.clone());
        }
        if code_of(&text).contains("#[path") {
            with_path.push(rel);
        }
    }
    check_against_allowed("over 800 lines", &long, LONG_FILES);
    assert!(
        with_path.is_empty(),
        "files with #[path]: {with_path:?} (a module lives where its name says)"
    );
}

fn check_against_allowed(what: &str, found: &[String], allowed: &[(&str, &str)]) {
    let new: Vec<_> = found
        .iter()
        .filter(|f| !allowed.iter().any(|(a, _)| a == f))
        .collect();
    assert!(
        new.is_empty(),
        "files {what}: {new:?} (split them; see docs/architecture.md)"
    );
    let gone: Vec<_> = allowed
        .iter()
        .filter(|(a, _)| !found.iter().any(|f| f == a))
        .map(|(a, _)| a)
        .collect();
    assert!(
        gone.is_empty(),
        "no longer {what}, take them off the list in tests/architecture.rs: {gone:?}"
    );
}

#[test]
fn the_reader_finds_imports_in_code_only() {
    let modules: BTreeSet<String> = ["metrics", "backend", "router"].map(String::from).into();
    let code = code_of(
        "use crate::{metrics::{A, B}, router};\n// crate::backend\nlet s = \"crate::backend\";\n\
         let c = '\"'; #[cfg(test)] mod tests { use crate::backend::X; }\nfn f<'a>() {}",
    );
    assert_eq!(
        imports(&code, &modules),
        ["metrics", "router"].map(String::from).into()
    );
}
