//! Layers point one way. Between crates Cargo keeps them (a crate cannot
//! name one above it: `docs/architecture.md` has the graph). Inside each
//! crate this test keeps them: no import circle between its top-level
//! modules, nor between the members (files and subfolders) of any one
//! folder. Every `crate::…` and `super::…` path counts, inline ones and
//! `use` groups too; comments, strings and char literals do not. A folder's
//! own `mod.rs` is the folder, not one of its members: children reaching
//! their parent's re-exports is how Rust modules are meant to be used.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common;

type Module = Vec<String>;

/// The `src` folder of every crate of the service: the binary's and each
/// one under `crates/`.
fn crate_sources() -> Vec<PathBuf> {
    let root = common::repo_root();
    let mut out = vec![root.join("host/src")];
    let mut crates: Vec<PathBuf> =
        std::fs::read_dir(root.join("crates")).unwrap().map(|e| e.unwrap().path().join("src")).filter(|p| p.is_dir()).collect();
    crates.sort();
    out.extend(crates);
    out
}

#[test]
fn no_crate_has_import_circles() {
    let sources = crate_sources();
    assert!(sources.len() > 5, "the crates were found: {sources:?}");
    let circles: Vec<String> =
        sources.iter().flat_map(|src| circles_in(src).into_iter().map(move |c| format!("{}: {c}", src.display()))).collect();
    assert!(circles.is_empty(), "import circles:\n{}", circles.join("\n"));
}

/// The crates are built without their tests (`test = false` in each
/// Cargo.toml, so each compiles once for the service and the suite): a
/// `#[cfg(test)]` module in it would never run. Unit tests live in
/// tests/units.
#[test]
fn no_unit_test_hides_in_the_library() {
    let mut hidden = vec![];
    let mut read = 0;
    for src in crate_sources() {
        let mut files = BTreeMap::new();
        collect(&src, &src, &mut files);
        read += files.len();
        hidden.extend(
            files
                .iter()
                .filter(|(_, text)| code_only(text).contains("#[cfg(test)]"))
                .map(|(module, _)| format!("{}: {}", src.display(), module.join("::"))),
        );
    }
    assert!(read > 150, "the crates' files were read");
    assert!(hidden.is_empty(), "tests that never run, in: {hidden:?}");
}

/// The check can fail: a crate with a known circle, made only of an inline
/// path and a `use` group, beside a comment and a string that name paths
/// which must not count.
#[test]
fn a_known_circle_is_found_and_comments_do_not_count() {
    let dir = tempfile::tempdir().unwrap();
    let write = |p: &str, text: &str| {
        let path = dir.path().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod a;\npub mod b;\npub mod c;\npub mod f;\n");
    write("a.rs", "use crate::{b::{self, B}, f};\npub struct A;\n");
    write("b.rs", "pub struct B;\nfn g() -> crate::a::A { crate::a::A }\n");
    // c names a only in a comment and a string: no circle c <-> a.
    write("c.rs", "// crate::a::A\n/* crate::a::A */\nconst S: &str = \"crate::a::A\";\nconst Q: char = '\"';\nuse crate::a;\n");
    write("f/mod.rs", "pub mod x;\npub mod y;\n");
    write("f/x.rs", "pub fn x() { super::y::y() }\n");
    write("f/y.rs", "pub fn y() { crate::f::x::x() }\n");
    let found = circles_in(dir.path());
    assert!(found.iter().any(|c| c == "a -> b -> a"), "{found:?}");
    assert!(found.iter().any(|c| c == "f::x -> f::y -> f::x"), "{found:?}");
    assert_eq!(found.len(), 2, "the comment and the string in c count for nothing: {found:?}");

    // Break both circles: nothing is found.
    write("b.rs", "pub struct B;\n");
    write("f/y.rs", "pub fn y() {}\n");
    assert_eq!(circles_in(dir.path()), Vec::<String>::new());
}

/// A status (an intent's, a facilitator settlement's, a registered swap's)
/// is written only in the store crate's `store/transition/`: nothing else,
/// in any crate, inserts those rows
/// or sets their `status`.
#[test]
fn a_status_is_written_only_in_the_transition_module() {
    let found: Vec<String> = crate_sources().iter().flat_map(|src| status_writes_in(src)).collect();
    assert!(found.is_empty(), "status writes outside store/transition:\n{}", found.join("\n"));
}

/// The check can fail: an update of an intent's status and an insert of a
/// swap elsewhere are found, an update of other columns is not.
#[test]
fn a_status_written_elsewhere_is_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("store/transition")).unwrap();
    std::fs::write(dir.path().join("store/transition/intents.rs"), "const A: &str = \"UPDATE intents SET status = $1 WHERE id = $2\";\n")
        .unwrap();
    std::fs::write(
        dir.path().join("ops.rs"),
        "const B: &str = \"UPDATE intents SET updated_at = $1, \\\n status = $2 WHERE id = $3\";\nconst C: &str = \"UPDATE intents SET payer = $1 WHERE id = $2\";\nconst D: &str = \"INSERT INTO swap_intents (id) VALUES ($1)\";\n",
    )
    .unwrap();
    let found = status_writes_in(dir.path());
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.iter().all(|f| f.contains("ops.rs")), "{found:?}");
}

/// Writes of a status outside `store/transition/`, as `file: statement`.
fn status_writes_in(root: &Path) -> Vec<String> {
    const TABLES: [&str; 3] = ["intents", "x402_settlements", "swap_intents"];
    let mut files = vec![];
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    walk(root, &mut files);
    let mut out = vec![];
    for f in files {
        if f.strip_prefix(root).unwrap().starts_with("store/transition") {
            continue;
        }
        // Statements span lines joined with `\`: read the text as one line.
        let text = std::fs::read_to_string(&f).unwrap().replace("\\\n", " ");
        for table in TABLES {
            for (at, _) in text.match_indices(&format!("INSERT INTO {table} ")) {
                out.push(format!("{}: {}", f.display(), &text[at..(at + 60).min(text.len())]));
            }
            for (at, _) in text.match_indices(&format!("UPDATE {table} SET ")) {
                let rest = &text[at..];
                let set = &rest[..rest.find(" WHERE ").unwrap_or(rest.len())];
                let writes_status = set
                    .split(',')
                    .any(|a| a.trim_start().trim_start_matches(&format!("UPDATE {table} SET ")).trim_start().starts_with("status"));
                if writes_status {
                    out.push(format!("{}: {}", f.display(), set.chars().take(80).collect::<String>()));
                }
            }
        }
    }
    out
}

/// Every circle, as `m1 -> m2 -> … -> m1`, among the members of each folder.
fn circles_in(root: &Path) -> Vec<String> {
    let mut files = BTreeMap::new();
    collect(root, root, &mut files);
    let modules: BTreeSet<Module> = files.keys().cloned().collect();
    // Edges between members of one parent, keyed by that parent.
    let mut graphs: BTreeMap<Module, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (from, text) in &files {
        for path in paths(&code_only(text)) {
            let Some(to) = resolve(from, &path, &modules) else { continue };
            // The deepest common parent, and the member of it on each side.
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common < from.len() && common < to.len() {
                let parent = from[..common].to_vec();
                graphs.entry(parent).or_default().entry(from[common].clone()).or_default().insert(to[common].clone());
            }
        }
    }
    let mut out = vec![];
    for (parent, edges) in graphs {
        for cycle in cycles(&edges) {
            let name = |m: &String| parent.iter().chain(std::iter::once(m)).cloned().collect::<Vec<_>>().join("::");
            out.push(cycle.iter().map(name).collect::<Vec<_>>().join(" -> "));
        }
    }
    out
}

/// Each `.rs` file under `dir` by its module path (`lib.rs` is the root,
/// `x/mod.rs` is `x`); `main.rs` is another crate and is left out.
fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<Module, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(root, &path, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") || path == root.join("main.rs") {
            continue;
        }
        let rel = path.strip_prefix(root).unwrap().with_extension("");
        let mut module: Module = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
            module.pop();
        }
        out.insert(module, std::fs::read_to_string(&path).unwrap());
    }
}

/// The text with comments, string literals and char literals blanked out.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            loop {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
                if i >= c.len() {
                    break;
                }
            }
        } else if c[i] == 'r' && matches!(c.get(i + 1), Some('"' | '#')) && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_')) {
            // Raw string: r"…", r#"…"#, …
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            while j < c.len() && !(c[j] == '"' && (0..hashes).all(|h| c.get(j + 1 + h) == Some(&'#'))) {
                j += 1;
            }
            i = j + 1 + hashes;
            out.push_str("\"\"");
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c[i] == '\'' && (c.get(i + 2) == Some(&'\'') || c.get(i + 1) == Some(&'\\')) {
            // A char literal ('x', '\n', '\u{..}'); a lifetime has no closing quote.
            i += 1;
            while i < c.len() && c[i] != '\'' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Every path that starts at `crate` or `super`, `use` groups expanded.
fn paths(code: &str) -> Vec<Vec<String>> {
    let toks = tokens(code);
    let mut out = vec![];
    for i in 0..toks.len() {
        let starts = matches!(toks[i].as_str(), "crate" | "super") && (i == 0 || toks[i - 1] != "::");
        if starts {
            expand(&toks, i, vec![], &mut out);
        }
    }
    out
}

fn tokens(code: &str) -> Vec<String> {
    let mut out = vec![];
    let c: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < c.len() {
        if c[i].is_alphanumeric() || c[i] == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(c[start..i].iter().collect());
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else {
            if !c[i].is_whitespace() {
                out.push(c[i].to_string());
            }
            i += 1;
        }
    }
    out
}

/// Read one path from `toks[i]` on: `a::b::{c, d::e}` gives `a::b::c` and
/// `a::b::d::e`. Returns the index after it.
fn expand(toks: &[String], mut i: usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    loop {
        let t = &toks[i];
        if t == "{" {
            i += 1;
            loop {
                match toks.get(i).map(String::as_str) {
                    Some("}") => return i + 1,
                    Some(",") => i += 1,
                    Some(_) => i = expand(toks, i, prefix.clone(), out),
                    None => return i,
                }
            }
        }
        if t == "self" && !prefix.is_empty() {
            out.push(prefix);
            return i + 1;
        }
        if !(t.chars().all(|ch| ch.is_alphanumeric() || ch == '_')) {
            out.push(prefix);
            return i;
        }
        prefix.push(t.clone());
        if toks.get(i + 1).map(String::as_str) == Some("::") {
            i += 2;
        } else {
            out.push(prefix);
            return i + 1;
        }
    }
}

/// The module a path names, as the longest known module prefix of it.
fn resolve(from: &Module, path: &[String], modules: &BTreeSet<Module>) -> Option<Module> {
    let mut abs: Module = vec![];
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => rest = &path[1..],
        Some("super") => {
            abs = from.clone();
            while rest.first().map(String::as_str) == Some("super") {
                abs.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    abs.extend(rest.iter().cloned());
    (0..=abs.len()).rev().map(|n| abs[..n].to_vec()).find(|m| modules.contains(m))
}

/// Elementary cycles, each once, from its smallest member.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut out = vec![];
    for start in edges.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        while let Some((node, path)) = stack.pop() {
            for next in edges.get(&node).into_iter().flatten() {
                if next == start {
                    let mut cycle = path.clone();
                    cycle.push(start.clone());
                    out.push(cycle);
                } else if next > start && !path.contains(next) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    out
}
