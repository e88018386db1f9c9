//! How CLI commands print their answers: JSON (the default, for scripts)
//! or an aligned table for people (`--output table`).

use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Json,
    Table,
}

/// Print one answer on standard output.
pub fn emit(output: Output, value: &Value) {
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(value).expect("JSON values serialize")),
        Output::Table => print!("{}", table(value)),
    }
}

fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A list of objects as columns (union of their keys, in first-seen
/// order); an object holding one such list (e.g. `{"wallets": [...]}`) as
/// that list; any other object as key/value lines.
pub fn table(value: &Value) -> String {
    match value {
        Value::Array(rows) => columns(rows),
        Value::Object(m) if m.len() == 1 && m.values().all(Value::is_array) => columns(m.values().next().unwrap().as_array().unwrap()),
        Value::Object(m) => {
            let width = m.keys().map(String::len).max().unwrap_or(0);
            m.iter().map(|(k, v)| format!("{k:<width$}  {}\n", cell(v))).collect()
        }
        other => format!("{}\n", cell(other)),
    }
}

fn columns(rows: &[Value]) -> String {
    let mut keys: Vec<String> = Vec::new();
    for r in rows {
        for k in r.as_object().into_iter().flat_map(|m| m.keys()) {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    if keys.is_empty() {
        return rows.iter().map(|r| format!("{}\n", cell(r))).collect();
    }
    let cells: Vec<Vec<String>> = rows.iter().map(|r| keys.iter().map(|k| cell(r.get(k).unwrap_or(&Value::Null))).collect()).collect();
    let widths: Vec<usize> =
        keys.iter().enumerate().map(|(i, k)| cells.iter().map(|c| c[i].chars().count()).chain([k.len()]).max().unwrap_or(0)).collect();
    let line = |items: Vec<String>| -> String {
        let mut s: String = items.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}  ")).collect();
        s.truncate(s.trim_end().len());
        s + "\n"
    };
    let mut out = line(keys.iter().map(|k| k.to_uppercase()).collect());
    for c in cells {
        out += &line(c);
    }
    out
}
