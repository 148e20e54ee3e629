//! Reading a scenario file: parse the TOML, expand the `[sweep]` table into points
//! ([`crate::sweep`]), deserialize each point into a [`Scenario`] and check what serde cannot.
//!
//! Every error names the file, the line and column, and the key: a syntax error where the
//! parser stopped; an unknown key, a bad unit or a negative rate at that key; an error in a
//! swept value at that value inside the `[sweep]` table; a bad sweep key at the key. The
//! parsed tree keeps byte spans (`toml_edit`), values copied from the sweep table keep theirs,
//! so the position of any deserialization error in any point is known.

use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::IntoDeserializer;
use toml_edit::{ImDocument, Item, TableLike, Value};

use braid_proto::ConfigError;
use braid_proto::config::PATH_MTU_RANGE;

use crate::run;
use crate::scenario::Scenario;
use crate::sweep::{self, Params, Step, Target};

/// A scenario file, expanded: one [`Scenario`] per sweep point.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// The file, as given (`<built-in>` names for embedded scenarios).
    pub file: PathBuf,
    /// The scenario's `name`.
    pub name: String,
    /// Seeds (runs) per point, from the file.
    pub seeds: u32,
    /// The sweep keys in file order (empty: no sweep, one point).
    pub sweep: Vec<String>,
    /// The points, in sweep order ([`crate::sweep`]).
    pub points: Vec<Point>,
    /// What the file leaves to a default the reader may not expect, one sentence each
    /// (a two-host scenario without `[[traffic]]`), for the command to print.
    pub notes: Vec<String>,
}

/// The note of a two-host scenario without `[[traffic]]`.
pub const DEFAULT_TRAFFIC_NOTE: &str = "no [[traffic]]: the sender runs the default source, \
     one saturated stream of 1452-byte ordered messages (kind = \"saturated\")";

/// One sweep point.
#[derive(Debug, Clone)]
pub struct Point {
    /// Position in sweep order, from 0.
    pub index: usize,
    /// The swept parameters' values at this point.
    pub params: Params,
    /// The scenario with those values filled in (its `sweep` table is empty).
    pub scenario: Scenario,
}

/// Why a scenario file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file cannot be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a valid scenario.
    #[error(transparent)]
    Invalid(#[from] Diagnostic),
}

/// An error at a position in a scenario file: `file:line:column: key: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Diagnostic {
    /// The file.
    pub file: String,
    /// Line, from 1.
    pub line: usize,
    /// Column in characters, from 1.
    pub column: usize,
    /// The key concerned (`path.A.delay`; `sweep "path.A.delay"` for a sweep entry), when
    /// there is one.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}: ", self.file, self.line, self.column)?;
        if let Some(k) = &self.key {
            write!(f, "{k}: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Reads and expands the scenario file at `path`.
pub fn load(path: &Path) -> Result<Experiment, LoadError> {
    let text = fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(load_str(&text, path)?)
}

/// Expands the scenario text `text`; `file` names it in messages.
pub fn load_str(text: &str, file: &Path) -> Result<Experiment, Diagnostic> {
    let src = Source {
        text,
        file: file.display().to_string(),
    };
    let doc = ImDocument::parse(text.to_string()).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        let message = e.message().trim_end().replace('\n', "; ");
        src.diag(at, syntax_key(text, at), message)
    })?;
    let mut root = doc.into_item();
    let dims = sweep_dimensions(&src, &root)?;
    if let Some(t) = root.as_table_like_mut() {
        t.remove("sweep");
    }

    let lens: Vec<usize> = dims.iter().map(|d| d.choices.len()).collect();
    let mut points = Vec::new();
    for (index, choice) in sweep::cartesian(&lens).into_iter().enumerate() {
        let mut tree = root.clone();
        let mut params = Vec::new();
        for (dim, &c) in dims.iter().zip(&choice) {
            let chosen = &dim.choices[c];
            for set in &chosen.sets {
                sweep::apply(&mut tree, &set.target, Item::Value(set.value.clone()))
                    .map_err(|m| src.diag(set.key_at, Some(set.label.clone()), m))?;
            }
            params.extend(
                dim.columns
                    .iter()
                    .cloned()
                    .zip(chosen.shown.iter().cloned()),
            );
        }
        let scenario = deserialize(&src, &root, &dims, &choice, tree.clone())?;
        if let Err(bad) = validate(&scenario) {
            // A default the file does not write: point at the table that leaves it unset.
            let at = (0..=bad.at.len())
                .rev()
                .find_map(|n| span_of(&tree, &bad.at[..n]))
                .map_or(0, |s| s.start);
            let mut message = bad.message;
            if let Some(first) = bad.first.as_ref().and_then(|s| span_of(&tree, s)) {
                let (line, _) = line_col(text, first.start);
                message.push_str(&format!(" (first on line {line})"));
            }
            return Err(match sweep_value_at(&dims, at) {
                Some(set) => src.diag(at, Some(set.label.clone()), message),
                None => src.diag(at, Some(bad.key), message),
            });
        }
        points.push(Point {
            index,
            params: Params(params),
            scenario,
        });
    }
    // Every point has the same name and seeds (neither can be swept).
    let (name, seeds) = points
        .first()
        .map(|p| (p.scenario.name.clone(), p.scenario.seeds))
        .unwrap_or_default();
    let notes = points
        .first()
        .filter(|p| p.scenario.traffic.is_empty() && !crate::topology::is_topology(&p.scenario))
        .map(|_| format!("{}: {DEFAULT_TRAFFIC_NOTE}", src.file))
        .into_iter()
        .collect();
    Ok(Experiment {
        file: file.to_path_buf(),
        name,
        seeds,
        notes,
        sweep: dims
            .iter()
            .flat_map(|d| d.columns.iter().cloned())
            .collect(),
        points,
    })
}

/// The text of the file, for positions.
struct Source<'a> {
    text: &'a str,
    file: String,
}

impl Source<'_> {
    fn diag(&self, at: usize, key: Option<String>, message: impl Into<String>) -> Diagnostic {
        let (line, column) = line_col(self.text, at);
        Diagnostic {
            file: self.file.clone(),
            line,
            column,
            key,
            message: message.into(),
        }
    }
}

/// 1-based line and column (in characters) of byte offset `at`.
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// A syntax error has no tree to name its key from: take the key of the line (`delay = 10ms`)
/// under the last table header above it (`[[path]]`): `path.delay`.
fn syntax_key(text: &str, at: usize) -> Option<String> {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = &text[line_start..line_end];
    let header = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| {
            let l = l.split('#').next().unwrap_or(l);
            l.trim_matches(|c: char| c == '[' || c == ']' || c.is_whitespace())
                .to_string()
        });
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('#'));
    match (header, key) {
        (Some(h), Some(k)) => Some(format!("{h}.{k}")),
        (None, Some(k)) => Some(k),
        (Some(h), None) if line.trim_start().starts_with('[') => Some(h),
        (Some(_), None) | (None, None) => None,
    }
}

/// One value a sweep sets at a point.
struct Assign {
    /// The key as written (`path.A.delay`).
    key: String,
    /// Where the key is in the file.
    key_at: usize,
    /// How messages name it: `sweep "path.A.delay"`, `sweep variant "CMT" "association.cmt"`.
    label: String,
    /// What the key addresses.
    target: Target,
    /// The value, with its span in the file.
    value: Value,
    /// The value as the outputs show it.
    shown: toml::Value,
}

/// One choice of a [`Dimension`]: the values it sets and the cells it fills.
struct Choice {
    /// One value per column of the dimension.
    shown: Vec<toml::Value>,
    /// What it sets.
    sets: Vec<Assign>,
}

/// One factor of the sweep's cartesian product: a key with its list of values, keys zipped
/// together (`[[sweep.zip]]`), or the named variants (`[[sweep.variant]]`).
struct Dimension {
    /// The columns it fills in the outputs (a key, the zipped keys, or `variant`).
    columns: Vec<String>,
    /// Its choices, in file order.
    choices: Vec<Choice>,
}

impl Dimension {
    /// Every value any of its choices sets.
    fn assigns(&self) -> impl Iterator<Item = &Assign> {
        self.choices.iter().flat_map(|c| &c.sets)
    }
}

/// The column of the variant dimension in runs.csv, summary.csv and summary.json.
pub const VARIANT_COLUMN: &str = "variant";

/// Reads, checks and resolves the `[sweep]` table into dimensions, in file order. Nested
/// tables (`path.A.delay = [..]` written without quotes) are flattened into dotted keys;
/// `zip` and `variant` are the two keys with a meaning of their own.
fn sweep_dimensions(src: &Source<'_>, root: &Item) -> Result<Vec<Dimension>, Diagnostic> {
    let Some(sweep) = root.get("sweep") else {
        return Ok(Vec::new());
    };
    let sweep_at = sweep.span().map_or(0, |s| s.start);
    let Some(table) = sweep.as_table_like() else {
        return Err(src.diag(
            sweep_at,
            Some("sweep".into()),
            "`sweep` must be a table of key = [values]",
        ));
    };
    let mut dims: Vec<Dimension> = Vec::new();
    for (k, item) in table.iter() {
        let at = table
            .key(k)
            .and_then(|k| k.span())
            .or_else(|| item.span())
            .map_or(sweep_at, |s| s.start);
        let dim = match k {
            "zip" => {
                let groups = tables_of(item).ok_or_else(|| {
                    src.diag(
                        at,
                        Some("sweep.zip".into()),
                        "`zip` is a table (or [[sweep.zip]] tables) of keys whose lists \
                         are walked together",
                    )
                })?;
                let mut out = Vec::new();
                for g in groups {
                    out.push(zip_dimension(src, root, g, at)?);
                }
                out
            }
            "variant" => vec![variant_dimension(src, root, item, at)?],
            _ => {
                let mut flat = Vec::new();
                flatten_item(k, item, table.key(k).and_then(|k| k.span()), &mut flat);
                let mut out = Vec::new();
                for (key, key_span, item) in flat {
                    let key_at = key_span.or_else(|| item.span()).map_or(at, |s| s.start);
                    let choices = value_list(src, root, &key, key_at, item)?
                        .into_iter()
                        .map(|a| Choice {
                            shown: vec![a.shown.clone()],
                            sets: vec![a],
                        })
                        .collect();
                    out.push(Dimension {
                        columns: vec![key],
                        choices,
                    });
                }
                out
            }
        };
        for d in dim {
            check_overlap(src, &dims, &d)?;
            dims.push(d);
        }
    }
    Ok(dims)
}

/// The tables of a `[sweep.zip]` table or `[[sweep.zip]]` array.
fn tables_of(item: &Item) -> Option<Vec<&dyn TableLike>> {
    match item {
        Item::ArrayOfTables(a) => Some(a.iter().map(|t| t as &dyn TableLike).collect()),
        Item::Table(t) => Some(vec![t as &dyn TableLike]),
        Item::Value(Value::InlineTable(t)) => Some(vec![t as &dyn TableLike]),
        _ => None,
    }
}

/// A sweep key's list of values, each resolved into an [`Assign`].
fn value_list(
    src: &Source<'_>,
    root: &Item,
    key: &str,
    key_at: usize,
    item: &Item,
) -> Result<Vec<Assign>, Diagnostic> {
    let label = format!("sweep {key:?}");
    let Some(array) = item.as_array() else {
        return Err(src.diag(
            key_at,
            Some(label),
            "a sweep entry is a list of values, e.g. [\"16KiB\", \"64KiB\"]",
        ));
    };
    if array.is_empty() {
        return Err(src.diag(key_at, Some(label), "the list of values is empty"));
    }
    let target = sweep::resolve(root, key).map_err(|m| src.diag(key_at, Some(label.clone()), m))?;
    let mut out = Vec::with_capacity(array.len());
    for v in array.iter() {
        out.push(assign(src, key, key_at, &label, &target, v)?);
    }
    Ok(out)
}

/// One value set by the sweep.
fn assign(
    src: &Source<'_>,
    key: &str,
    key_at: usize,
    label: &str,
    target: &Target,
    v: &Value,
) -> Result<Assign, Diagnostic> {
    let shown = toml::Value::deserialize(v.clone().into_deserializer()).map_err(|e| {
        let at = v.span().map_or(key_at, |s| s.start);
        src.diag(at, Some(label.to_string()), e.message().to_string())
    })?;
    Ok(Assign {
        key: key.to_string(),
        key_at,
        label: label.to_string(),
        target: target.clone(),
        value: v.clone(),
        shown,
    })
}

/// A `[[sweep.zip]]` group: its keys' lists, walked together element by element.
fn zip_dimension(
    src: &Source<'_>,
    root: &Item,
    group: &dyn TableLike,
    at: usize,
) -> Result<Dimension, Diagnostic> {
    let mut flat = Vec::new();
    flatten(group, "", &mut flat);
    if flat.is_empty() {
        return Err(src.diag(
            at,
            Some("sweep.zip".into()),
            "a zip group needs keys with lists of values",
        ));
    }
    let mut columns = Vec::new();
    let mut lists: Vec<Vec<Assign>> = Vec::new();
    for (key, key_span, item) in flat {
        let key_at = key_span.or_else(|| item.span()).map_or(at, |s| s.start);
        let values = value_list(src, root, &key, key_at, item)?;
        if let Some(first) = lists.first()
            && first.len() != values.len()
        {
            return Err(src.diag(
                key_at,
                Some(format!("sweep {key:?}")),
                format!(
                    "zipped lists must have the same length: {:?} has {}, this one {}",
                    columns[0],
                    first.len(),
                    values.len()
                ),
            ));
        }
        columns.push(key);
        lists.push(values);
    }
    let n = lists[0].len();
    let mut iters: Vec<_> = lists.into_iter().map(Vec::into_iter).collect();
    let choices = (0..n)
        .map(|_| {
            let sets: Vec<Assign> = iters.iter_mut().filter_map(Iterator::next).collect();
            Choice {
                shown: sets.iter().map(|a| a.shown.clone()).collect(),
                sets,
            }
        })
        .collect();
    Ok(Dimension { columns, choices })
}

/// The `[[sweep.variant]]` tables: each a `name` and the values it sets.
fn variant_dimension(
    src: &Source<'_>,
    root: &Item,
    item: &Item,
    at: usize,
) -> Result<Dimension, Diagnostic> {
    let usage = "variants are [[sweep.variant]] tables, each with a `name` and the keys it \
                 sets, e.g. name = \"CMT-RR\" and \"association.cmt\" = true";
    let Item::ArrayOfTables(array) = item else {
        return Err(src.diag(at, Some("sweep.variant".into()), usage));
    };
    let mut choices: Vec<Choice> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for t in array.iter() {
        let t_at = t.span().map_or(at, |s| s.start);
        let name = match t.get("name") {
            Some(n) => {
                let n_at = n.span().map_or(t_at, |s| s.start);
                match n.as_str().map(str::trim) {
                    Some(s) if !s.is_empty() => {
                        if names.iter().any(|m| m == s) {
                            return Err(src.diag(
                                n_at,
                                Some("sweep.variant.name".into()),
                                format!("two variants are named {s:?}: names must be unique"),
                            ));
                        }
                        s.to_string()
                    }
                    _ => {
                        return Err(src.diag(
                            n_at,
                            Some("sweep.variant.name".into()),
                            "a variant's name is a non-empty string",
                        ));
                    }
                }
            }
            None => {
                return Err(src.diag(
                    t_at,
                    Some("sweep.variant".into()),
                    format!("a variant needs a `name`; {usage}"),
                ));
            }
        };
        let mut flat = Vec::new();
        for (k, item) in t.iter().filter(|(k, _)| *k != "name") {
            flatten_tables(k, item, t.key(k).and_then(|k| k.span()), &mut flat);
        }
        let mut sets: Vec<Assign> = Vec::with_capacity(flat.len());
        for (key, key_span, item) in flat {
            let key_at = key_span.or_else(|| item.span()).map_or(t_at, |s| s.start);
            let label = format!("sweep variant {name:?} {key:?}");
            let Some(v) = item.as_value() else {
                return Err(src.diag(key_at, Some(label), "expected a value"));
            };
            let target =
                sweep::resolve(root, &key).map_err(|m| src.diag(key_at, Some(label.clone()), m))?;
            if let Some(other) = sets.iter().find(|a| a.target.steps == target.steps) {
                return Err(src.diag(
                    key_at,
                    Some(label),
                    format!("addresses the same value as {:?}", other.key),
                ));
            }
            sets.push(assign(src, &key, key_at, &label, &target, v)?);
        }
        names.push(name.clone());
        choices.push(Choice {
            shown: vec![toml::Value::String(name)],
            sets,
        });
    }
    Ok(Dimension {
        columns: vec![VARIANT_COLUMN.to_string()],
        choices,
    })
}

/// Refuses a dimension that sets a value an earlier one sets.
fn check_overlap(src: &Source<'_>, dims: &[Dimension], d: &Dimension) -> Result<(), Diagnostic> {
    for a in d.assigns() {
        if let Some(other) = dims
            .iter()
            .flat_map(Dimension::assigns)
            .find(|o| o.target.steps == a.target.steps)
        {
            let message = if other.key == a.key {
                format!("{:?} is swept twice", a.key)
            } else {
                format!("addresses the same value as sweep key {:?}", other.key)
            };
            return Err(src.diag(a.key_at, Some(a.label.clone()), message));
        }
    }
    Ok(())
}

/// Like [`flatten`] for one entry `key` = `item` of a table.
fn flatten_item<'a>(
    key: &str,
    item: &'a Item,
    key_span: Option<Range<usize>>,
    out: &mut Vec<(String, Option<Range<usize>>, &'a Item)>,
) {
    match item.as_table_like() {
        Some(t) => flatten(t, key, out),
        None => out.push((key.to_string(), key_span, item)),
    }
}

/// Like [`flatten_item`], but an inline table is a value (a variant sets
/// `"path.A.gilbert" = { ... }` whole), only dotted keys and sub-tables are flattened.
fn flatten_tables<'a>(
    key: &str,
    item: &'a Item,
    key_span: Option<Range<usize>>,
    out: &mut Vec<(String, Option<Range<usize>>, &'a Item)>,
) {
    match item {
        Item::Table(t) => {
            for (k, i) in t.iter() {
                flatten_tables(
                    &format!("{key}.{k}"),
                    i,
                    t.key(k).and_then(|k| k.span()),
                    out,
                );
            }
        }
        _ => out.push((key.to_string(), key_span, item)),
    }
}

/// (dotted key, span of its last part, value) for every leaf of the sweep table.
fn flatten<'a>(
    table: &'a dyn TableLike,
    prefix: &str,
    out: &mut Vec<(String, Option<Range<usize>>, &'a Item)>,
) {
    for (k, item) in table.iter() {
        let key = if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        };
        match item.as_table_like() {
            Some(t) => flatten(t, &key, out),
            None => out.push((key, table.key(k).and_then(|k| k.span()), item)),
        }
    }
}

/// Deserializes one point; on error, finds where in the file the cause is.
fn deserialize(
    src: &Source<'_>,
    base: &Item,
    dims: &[Dimension],
    choice: &[usize],
    tree: Item,
) -> Result<Scenario, Diagnostic> {
    let table = match tree {
        Item::Table(t) => t,
        _ => toml_edit::Table::new(),
    };
    let doc = toml_edit::DocumentMut::from(table);
    Scenario::deserialize(toml_edit::de::Deserializer::from(doc)).map_err(|e| {
        let message = e.message().trim_end().to_string();
        let at = e.span().map(|s| s.start);
        // 1. The error is in a value copied from the sweep table.
        if let Some(at) = at
            && let Some(set) = sweep_value_at(dims, at)
        {
            return src.diag(at, Some(set.label.clone()), message);
        }
        let chosen: Vec<&Assign> = dims
            .iter()
            .zip(choice)
            .flat_map(|(d, &c)| &d.choices[c].sets)
            .collect();
        // 2. A swept value quoted in a message without a position of its own (inside a
        //    `[[traffic]]` entry serde buffers the table and loses the values' positions).
        for set in &chosen {
            if let toml::Value::String(s) = &set.shown
                && message.contains(&format!("{s:?}"))
                && !at.is_some_and(|at| base_value_at(base, at))
            {
                let at = set.value.span().map_or(set.key_at, |s| s.start);
                return src.diag(at, Some(set.label.clone()), message);
            }
        }
        // 3. An unknown key that only the sweep adds (it has no position of its own).
        if let Some(field) = unknown_field(&message) {
            for set in &chosen {
                if set.target.added.iter().any(|a| a == field) {
                    let shown = sweep::display_value(&set.shown);
                    return src.diag(
                        set.key_at,
                        Some(set.label.clone()),
                        format!("{message} (the sweep sets it to {shown})"),
                    );
                }
            }
        }
        // 4. Somewhere in the file itself; inside a `[[traffic]]` entry the position is the
        //    entry's header, so look there for the value the message quotes.
        let at = at.unwrap_or(0);
        let at = quoted_value_in_table_at(base, at, &message).unwrap_or(at);
        src.diag(at, key_at(Some(base), at), message)
    })
}

/// If `at` is the header of a table, the position of the one value in that table that
/// `message` quotes the way serde does (`"4XB"`, ``integer `5` ``, ...).
fn quoted_value_in_table_at(base: &Item, at: usize, message: &str) -> Option<usize> {
    fn tables<'a>(item: &'a Item, out: &mut Vec<&'a toml_edit::Table>) {
        match item {
            Item::Table(t) => {
                out.push(t);
                t.iter().for_each(|(_, i)| tables(i, out));
            }
            Item::ArrayOfTables(a) => a.iter().for_each(|t| {
                out.push(t);
                t.iter().for_each(|(_, i)| tables(i, out));
            }),
            Item::Value(_) | Item::None => {}
        }
    }
    let mut all = Vec::new();
    tables(base, &mut all);
    let table = all
        .into_iter()
        .find(|t| t.span().is_some_and(|s| contains(&s, at)))?;
    let quoted = |v: &Value| match v {
        Value::String(s) => message.contains(&format!("{:?}", s.value())),
        Value::Integer(i) => message.contains(&format!("integer `{}`", i.value())),
        Value::Float(f) => message.contains(&format!("floating point `{}`", f.value())),
        Value::Boolean(b) => message.contains(&format!("boolean `{}`", b.value())),
        _ => false,
    };
    let mut found = table
        .iter()
        .filter_map(|(_, item)| item.as_value())
        .filter(|v| quoted(v))
        .filter_map(Value::span);
    match (found.next(), found.next()) {
        (Some(span), None) => Some(span.start),
        _ => None,
    }
}

/// Whether byte `at` is inside a value (not a table header) of the file.
fn base_value_at(base: &Item, at: usize) -> bool {
    fn in_item(item: &Item, at: usize) -> bool {
        match item {
            Item::Value(v) => v.span().is_some_and(|s| contains(&s, at)),
            Item::Table(t) => t.iter().any(|(_, i)| in_item(i, at)),
            Item::ArrayOfTables(a) => a.iter().any(|t| t.iter().any(|(_, i)| in_item(i, at))),
            Item::None => false,
        }
    }
    in_item(base, at)
}

/// The field named by serde's "unknown field `x`, expected ..." message.
fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split('`').next()
}

/// The value set by the sweep that spans byte `at`.
fn sweep_value_at(dims: &[Dimension], at: usize) -> Option<&Assign> {
    dims.iter()
        .flat_map(Dimension::assigns)
        .find(|a| a.value.span().is_some_and(|s| contains(&s, at)))
}

fn contains(span: &Range<usize>, at: usize) -> bool {
    span.start <= at && (at < span.end || span.is_empty() && at == span.start)
}

/// The dotted key (entries of `[[path]]` by name, others by index) whose key or value spans
/// byte `at`, innermost first.
fn key_at(root: Option<&Item>, at: usize) -> Option<String> {
    let t = root?.as_table_like()?;
    find_in_table(t, at, "")
}

fn find_in_table(t: &dyn TableLike, at: usize, prefix: &str) -> Option<String> {
    for (k, item) in t.iter() {
        let path = if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        };
        if let Some(found) = find_in_item(item, at, &path) {
            return Some(found);
        }
        let key_span = t.key(k).and_then(|k| k.span());
        if key_span.is_some_and(|s| contains(&s, at))
            || item.span().is_some_and(|s| contains(&s, at))
        {
            return Some(path);
        }
    }
    None
}

fn find_in_item(item: &Item, at: usize, path: &str) -> Option<String> {
    match item {
        Item::Table(t) => find_in_table(t, at, path),
        Item::ArrayOfTables(a) => a.iter().enumerate().find_map(|(i, t)| {
            let p = format!("{path}.{}", label(t.get("name").and_then(Item::as_str), i));
            find_in_table(t, at, &p).or_else(|| t.span().filter(|s| contains(s, at)).map(|_| p))
        }),
        Item::Value(v) => find_in_value(v, at, path),
        Item::None => None,
    }
}

fn find_in_value(v: &Value, at: usize, path: &str) -> Option<String> {
    match v {
        Value::InlineTable(t) => find_in_table(t, at, path),
        Value::Array(a) => a.iter().enumerate().find_map(|(i, v)| {
            let name = v
                .as_inline_table()
                .and_then(|t| t.get("name"))
                .and_then(Value::as_str);
            let p = format!("{path}.{}", label(name, i));
            find_in_value(v, at, &p).or_else(|| v.span().filter(|s| contains(s, at)).map(|_| p))
        }),
        _ => None,
    }
}

fn label(name: Option<&str>, index: usize) -> String {
    match name {
        Some(n) => n.to_string(),
        None => index.to_string(),
    }
}

/// The span of the item at `steps` in `tree`.
fn span_of(tree: &Item, steps: &[Step]) -> Option<Range<usize>> {
    let mut cur = tree;
    for s in steps {
        cur = match s {
            Step::Key(k) => cur.get(k.as_str())?,
            Step::Index(i) => cur.get(*i)?,
        };
    }
    cur.span()
}

/// A rule serde cannot check.
struct Invalid {
    /// Where (steps into the point's tree).
    at: Vec<Step>,
    /// The key, for the message.
    key: String,
    /// What is wrong.
    message: String,
    /// The earlier definition, for duplicates.
    first: Option<Vec<Step>>,
}

fn key(k: &str) -> Step {
    Step::Key(k.to_string())
}

/// Checks what the types cannot express: unique path names, probabilities in [0, 1], a
/// warm-up shorter than the run, a pcap of an existing path...
fn validate(s: &Scenario) -> Result<(), Invalid> {
    let bad = |at: Vec<Step>, key: String, message: String| {
        Err(Invalid {
            at,
            key,
            message,
            first: None,
        })
    };
    if crate::topology::is_topology(s) {
        // A topology's errors name the link or flow they are about.
        let checked = crate::topology::plan(s).and_then(|p| run::validate_topology(s, &p));
        if let Err(e) = checked {
            let first = if s.flows.is_empty() { "link" } else { "flow" };
            let message = e.to_string();
            let message = message.strip_prefix("scenario: ").unwrap_or(&message);
            return bad(vec![key(first)], first.into(), message.to_string());
        }
    }
    if s.seeds == 0 {
        return bad(
            vec![key("seeds")],
            "seeds".into(),
            "must be at least 1".into(),
        );
    }
    if s.duration.0.is_zero() {
        return bad(
            vec![key("duration")],
            "duration".into(),
            "must be positive".into(),
        );
    }
    if s.warmup >= s.duration {
        return bad(
            vec![key("warmup")],
            "warmup".into(),
            format!(
                "the warm-up ({:?}) must be shorter than the duration ({:?})",
                s.warmup.0, s.duration.0
            ),
        );
    }
    if crate::topology::is_topology(s) {
        return Ok(());
    }
    if s.paths.is_empty() {
        return bad(
            vec![key("path")],
            "path".into(),
            "at least one [[path]] is needed".into(),
        );
    }
    for (i, p) in s.paths.iter().enumerate() {
        let at = |k: &str| vec![key("path"), Step::Index(i), key(k)];
        let name = |k: &str| format!("path.{}.{k}", p.name);
        if let Some(j) = s.paths[..i].iter().position(|q| q.name == p.name) {
            return Err(Invalid {
                at: at("name"),
                key: format!("path.{i}.name"),
                message: format!("two paths are named {:?}: names must be unique", p.name),
                first: Some(vec![key("path"), Step::Index(j), key("name")]),
            });
        }
        for (k, v) in [("loss", p.loss), ("reverse_loss", p.reverse_loss)] {
            if !(0.0..=1.0).contains(&v) {
                return bad(at(k), name(k), format!("a probability in [0, 1], not {v}"));
            }
        }
        if let Some(g) = &p.gilbert {
            for (k, v) in [
                ("p_good_bad", g.p_good_bad),
                ("p_bad_good", g.p_bad_good),
                ("loss_good", g.loss_good),
                ("loss_bad", g.loss_bad),
            ] {
                if !(0.0..=1.0).contains(&v) {
                    let mut steps = at("gilbert");
                    steps.push(key(k));
                    return bad(
                        steps,
                        format!("path.{}.gilbert.{k}", p.name),
                        format!("a probability in [0, 1], not {v}"),
                    );
                }
            }
        }
        if let Some(h) = &p.hiccup
            && !(0.0..=1.0).contains(&h.rate)
        {
            let mut steps = at("hiccup");
            steps.push(key("rate"));
            return bad(
                steps,
                format!("path.{}.hiccup.rate", p.name),
                format!("a probability in [0, 1], not {}", h.rate),
            );
        }
        if let Some(r) = p.reorder_rate {
            if p.hiccup.is_some() {
                return bad(
                    at("reorder_rate"),
                    name("reorder_rate"),
                    "`reorder_rate` is `hiccup` with a displacement that always fast-retransmits: \
                     give one of them"
                        .into(),
                );
            }
            if !(0.0..=1.0).contains(&r) {
                return bad(
                    at("reorder_rate"),
                    name("reorder_rate"),
                    format!("a probability in [0, 1], not {r}"),
                );
            }
        }
        if p.delay_spikes.is_some() && p.spikes.is_some() {
            return bad(
                at("delay_spikes"),
                name("delay_spikes"),
                "`delay_spikes` is `spikes` by another name: give one of them".into(),
            );
        }
        let ranges = match (&p.spikes, &p.delay_spikes) {
            (Some(sp), _) => Some(("spikes", "interval", sp.interval, sp.length)),
            (None, Some(sp)) => Some(("delay_spikes", "every", sp.every, sp.length)),
            (None, None) => None,
        };
        if let Some((table, gap, between, length)) = ranges {
            for (k, [lo, hi]) in [(gap, between), ("length", length)] {
                if lo > hi {
                    let mut steps = at(table);
                    steps.push(key(k));
                    return bad(
                        steps,
                        format!("path.{}.{table}.{k}", p.name),
                        format!("[min, max] with min <= max, not [{:?}, {:?}]", lo.0, hi.0),
                    );
                }
            }
            if (between[1].0 + length[1].0).is_zero() {
                return bad(
                    at(table),
                    name(table),
                    "the spikes' gaps and lengths cannot all be zero".into(),
                );
            }
        }
        for (j, [from, to]) in p.spike_at.iter().enumerate() {
            if from >= to {
                let mut steps = at("spike_at");
                steps.push(Step::Index(j));
                return bad(
                    steps,
                    format!("path.{}.spike_at.{j}", p.name),
                    "the spike must start before it ends".into(),
                );
            }
        }
        if p.queue == 0 {
            return bad(
                at("queue"),
                name("queue"),
                "must be at least 1 packet".into(),
            );
        }
        for (j, [from, to]) in p.down.iter().enumerate() {
            if from >= to {
                let mut steps = at("down");
                steps.push(Step::Index(j));
                return bad(
                    steps,
                    format!("path.{}.down.{j}", p.name),
                    "the failure must start before it ends".into(),
                );
            }
        }
        for (j, f) in p.failures.iter().enumerate() {
            if f.from >= f.to {
                let mut steps = at("failures");
                steps.push(Step::Index(j));
                return bad(
                    steps,
                    format!("path.{}.failures.{j}", p.name),
                    "`from` must be before `to`".into(),
                );
            }
        }
    }
    if let Some(p) = s.paths.iter().position(|p| p.mtu > *PATH_MTU_RANGE.end()) {
        return bad(
            vec![key("path"), Step::Index(p), key("mtu")],
            format!("path.{}.mtu", s.paths[p].name),
            format!(
                "{} exceeds {}, the largest IP packet",
                s.paths[p].mtu,
                PATH_MTU_RANGE.end()
            ),
        );
    }
    if s.association.delayed_ack.is_some() && s.association.sack_delay.is_some() {
        return bad(
            vec![key("association"), key("delayed_ack")],
            "association.delayed_ack".into(),
            "`delayed_ack` is `sack_delay` by another name: give one of them".into(),
        );
    }
    if let Err(e) = run::association_config(s).validate() {
        let (at, key) = config_error_at(s, &e);
        let message = match e {
            ConfigError::PathMtu(mtu) => run::first_path_mtu_error(s, mtu),
            e => e.to_string(),
        };
        return bad(at, key, message);
    }
    validate_traffic(s)?;
    for (j, n) in s.association.stream_paths.iter().flatten().enumerate() {
        if !s.paths.iter().any(|p| &p.name == n) {
            return bad(
                vec![key("association"), key("stream_paths"), Step::Index(j)],
                "association.stream_paths".into(),
                format!(
                    "stream {j}: no path named {n:?} (paths: {})",
                    s.paths
                        .iter()
                        .map(|p| format!("{:?}", p.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
    }
    if let Some(pc) = &s.pcap
        && !s.paths.iter().any(|p| p.name == pc.path)
    {
        return bad(
            vec![key("pcap"), key("path")],
            "pcap.path".into(),
            format!(
                "no path named {:?} (paths: {})",
                pc.path,
                s.paths
                    .iter()
                    .map(|p| format!("{:?}", p.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    Ok(())
}

/// Checks every `[[traffic]]` source's fields where they are written (the run would refuse
/// them only when it starts, once per run).
fn validate_traffic(s: &Scenario) -> Result<(), Invalid> {
    use crate::scenario::TrafficSpec;
    let max_msg = run::association_config(s).max_message_size;
    let timestamps = run::sends_timestamps(s.association.spurious_detection.unwrap_or_default());
    let mut streams_total = 0usize;
    for (i, t) in s.traffic.iter().enumerate() {
        let bad = |k: &str, message: String| {
            Err(Invalid {
                at: vec![key("traffic"), Step::Index(i), key(k)],
                key: format!("traffic.{i}.{k}"),
                message,
                first: None,
            })
        };
        let (streams, message_size, timestamp_size) = match t {
            TrafficSpec::Saturated {
                streams,
                message_size,
                timestamp_message_size,
                ..
            } => (*streams, *message_size, *timestamp_message_size),
            TrafficSpec::Transfer {
                bytes,
                streams,
                message_size,
                timestamp_message_size,
            } => {
                if bytes.0 == 0 {
                    return bad("bytes", "a transfer of 0 bytes".into());
                }
                (*streams, *message_size, *timestamp_message_size)
            }
            TrafficSpec::OnOff {
                on,
                streams,
                message_size,
                ..
            } => {
                if on.0.is_zero() {
                    return bad("on", "an on/off source needs an on time above 0".into());
                }
                (*streams, *message_size, None)
            }
        };
        if streams == 0 {
            return bad("streams", "must be at least 1".into());
        }
        if message_size == 0 {
            return bad("message_size", "must be at least 1 byte".into());
        }
        if timestamp_size == Some(0) {
            return bad("timestamp_message_size", "must be at least 1 byte".into());
        }
        let (k, size) = match timestamp_size {
            Some(t) if timestamps => ("timestamp_message_size", t),
            _ => ("message_size", message_size),
        };
        if size > max_msg {
            return bad(
                k,
                format!(
                    "{size} bytes exceed the largest message the association takes \
                     ({max_msg}: max_message_size, or the smaller buffer)"
                ),
            );
        }
        streams_total += usize::from(streams);
        let inbound = run::association_config(s).max_inbound_streams;
        if streams_total > usize::from(inbound) {
            return bad(
                "streams",
                format!(
                    "the sources' {streams_total} streams exceed the receiver's {inbound} inbound streams"
                ),
            );
        }
    }
    Ok(())
}

/// The key of the file a refused association setting comes from: the one the rule names if
/// the file sets it (an unset one has the core's default), else the `[association]` table.
fn config_error_at(s: &Scenario, e: &ConfigError) -> (Vec<Step>, String) {
    let a = &s.association;
    let assoc = |k: &str| (vec![key("association"), key(k)], format!("association.{k}"));
    match e {
        ConfigError::PathMtu(_) => (
            vec![key("path"), Step::Index(0), key("mtu")],
            format!(
                "path.{}.mtu",
                s.paths.first().map_or("?", |p| p.name.as_str())
            ),
        ),
        ConfigError::RtoOrder { .. } => assoc(
            [
                ("rto_initial", a.rto_initial),
                ("rto_min", a.rto_min),
                ("rto_max", a.rto_max),
            ]
            .into_iter()
            .find(|(_, v)| v.is_some())
            .map_or("rto_initial", |(k, _)| k),
        ),
        ConfigError::SackDelay(_) if a.delayed_ack.is_some() => assoc("delayed_ack"),
        ConfigError::SackDelay(_) => assoc("sack_delay"),
        ConfigError::MessageTooLarge { buffer, .. } => {
            if a.max_message_size.is_some() {
                assoc("max_message_size")
            } else if (*buffer == "send_buffer" && a.send_buffer.is_some())
                || (*buffer == "recv_buffer" && a.recv_buffer.is_some())
            {
                assoc(buffer)
            } else {
                assoc("buffer")
            }
        }
        ConfigError::Zero { key: k } if *k == "outbound_streams" => assoc("streams"),
        ConfigError::Zero { key: k } => assoc(k),
        _ => (vec![key("association")], "association".into()),
    }
}
