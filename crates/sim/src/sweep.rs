//! Sweeps: the `[sweep]` table of a scenario file maps parameter keys to lists of values, and
//! the sweep points are the cartesian product of those lists. Two other kinds of factor of
//! the product ([`crate::load`] reads them): `[[sweep.zip]]` tables, whose keys' lists are
//! walked together element by element, and `[[sweep.variant]]` tables, named sets of values
//! whose names fill the `variant` column.
//!
//! A key addresses the scenario's TOML tree with dots: `association.send_buffer` is the key
//! `send_buffer` of the table `association`. Where the tree holds an array (`[[path]]`,
//! `[[traffic]]`), the next part of the key names an entry by its `name` field
//! (`path.A.delay`) or by its index (`traffic.0.streams`, `path.1.loss`); a name takes
//! precedence over an index. The last part may name a key that the file does not set (a
//! default), and missing top-level tables are created (`association.rto_min` works without an
//! `[association]` table). Names containing a dot cannot be addressed by name; use the index.
//!
//! Order: sweep keys keep the order in which the file lists them, and the *first* key varies
//! slowest (like nested loops with the first key outermost); values keep their order in the
//! list. Point indices in the output files follow this order.
//!
//! The tree is a [`toml_edit::Item`] (not a `toml::Value`) so that every value keeps the byte
//! span it came from: a value copied from the sweep table into a point still points at the
//! sweep entry, which is what error messages need ([`crate::load`]).

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use toml_edit::{Item, Table};

/// One step of a resolved sweep key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A key of a table.
    Key(String),
    /// An entry of an array (of tables).
    Index(usize),
}

/// Where a sweep key points in a scenario's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The path from the root to the value.
    pub steps: Vec<Step>,
    /// Keys (and tables) the file does not have and the sweep adds, innermost last.
    pub added: Vec<String>,
}

/// The keys a sweep may not set.
const RESERVED: [&str; 2] = ["sweep", "seeds"];

/// Resolves `key` against the (unswept) scenario tree `root`.
///
/// Errors say what is wrong in words (no such path name, index out of range, a value where a
/// table was expected); the caller adds the file position.
pub fn resolve(root: &Item, key: &str) -> Result<Target, String> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.trim().is_empty()) {
        return Err("a sweep key is a dotted path such as \"path.A.delay\"".into());
    }
    if let Some(first) = parts.first()
        && RESERVED.contains(first)
    {
        return Err(format!("`{first}` cannot be swept"));
    }
    let mut steps = Vec::with_capacity(parts.len());
    let mut added = Vec::new();
    // `None` once the key has left the tree that exists (inside a table the sweep creates).
    let mut cur: Option<&Item> = Some(root);
    let mut here = String::new();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let Some(item) = cur else {
            steps.push(Step::Key((*part).to_string()));
            added.push((*part).to_string());
            here = join(&here, part);
            continue;
        };
        if let Some(len) = array_len(item) {
            let by_name = (0..len).find(|&j| entry_name(item, j) == Some(*part));
            let idx = match by_name {
                Some(j) => j,
                None => match part.parse::<usize>() {
                    Ok(j) if j < len => j,
                    _ => {
                        let names: Vec<String> = (0..len)
                            .map(|j| match entry_name(item, j) {
                                Some(n) => format!("{n:?}"),
                                None => j.to_string(),
                            })
                            .collect();
                        return Err(format!(
                            "`{here}` has no entry named {part:?} (entries: {})",
                            if names.is_empty() {
                                "none".to_string()
                            } else {
                                names.join(", ")
                            }
                        ));
                    }
                },
            };
            if last && matches!(item, Item::ArrayOfTables(_)) {
                return Err(format!(
                    "`{key}` names a whole [[{here}]] entry; sweep one of its keys, e.g. `{key}.name`"
                ));
            }
            steps.push(Step::Index(idx));
            cur = item.get(idx);
            here = join(&here, part);
        } else if item.is_table_like() {
            match item.get(*part) {
                Some(child) if !child.is_none() => cur = Some(child),
                _ => {
                    if !last && !matches!(item, Item::Table(_)) {
                        return Err(format!(
                            "`{}` does not exist and cannot be created inside an inline table",
                            join(&here, part)
                        ));
                    }
                    added.push((*part).to_string());
                    cur = None;
                }
            }
            steps.push(Step::Key((*part).to_string()));
            here = join(&here, part);
        } else {
            return Err(format!(
                "`{here}` is a value, not a table, so `{key}` addresses nothing"
            ));
        }
    }
    Ok(Target { steps, added })
}

/// The value `key` addresses in `root` (as [`resolve`] reads keys: `path.A.delay`,
/// `traffic.0.streams`), None if the tree does not have it.
pub fn get<'a>(root: &'a Item, key: &str) -> Option<&'a Item> {
    let target = resolve(root, key).ok()?;
    if !target.added.is_empty() {
        return None;
    }
    target.steps.iter().try_fold(root, |item, step| match step {
        Step::Key(k) => item.get(k.as_str()),
        Step::Index(i) => item.get(*i),
    })
}

/// Sets the value at `target` (from [`resolve`] on the same tree) to `value`.
pub fn apply(root: &mut Item, target: &Target, value: Item) -> Result<(), String> {
    let mut cur = root;
    for step in &target.steps {
        cur = match step {
            Step::Key(k) => {
                if cur.is_none() {
                    // A table the sweep creates.
                    *cur = Item::Table(Table::new());
                }
                cur.get_mut(k.as_str())
                    .ok_or_else(|| format!("cannot set `{k}`: not inside a table"))?
            }
            Step::Index(i) => cur
                .get_mut(*i)
                .ok_or_else(|| format!("no entry {i} in the array"))?,
        };
    }
    *cur = value;
    Ok(())
}

/// The cartesian product of `lens[k]` choices per key, first key slowest. No keys: one
/// empty point. A zero length: no points.
pub fn cartesian(lens: &[usize]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = vec![Vec::new()];
    for &len in lens {
        let mut next = Vec::with_capacity(out.len() * len);
        for prefix in &out {
            for v in 0..len {
                let mut p = prefix.clone();
                p.push(v);
                next.push(p);
            }
        }
        out = next;
    }
    out
}

fn join(prefix: &str, part: &str) -> String {
    if prefix.is_empty() {
        part.to_string()
    } else {
        format!("{prefix}.{part}")
    }
}

/// Length of an array of tables or an array value.
fn array_len(item: &Item) -> Option<usize> {
    match item {
        Item::ArrayOfTables(a) => Some(a.len()),
        Item::Value(v) => v.as_array().map(|a| a.len()),
        _ => None,
    }
}

/// The `name` of entry `j` of an array, if it is a table with a string `name`.
fn entry_name(item: &Item, j: usize) -> Option<&str> {
    item.get(j)?.get("name")?.as_str()
}

/// The swept parameters of one point, in sweep-key order: key → value as written in the file.
/// In JSON an object (in that order); strings stay strings ("16KiB"), numbers stay numbers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params(pub Vec<(String, toml::Value)>);

impl Params {
    /// The value of `key`, if swept.
    pub fn get(&self, key: &str) -> Option<&toml::Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// `key=value, key=value` for messages.
    pub fn describe(&self) -> String {
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={}", display_value(v)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A swept value as text: strings without quotes ("16KiB"), anything else in TOML syntax.
pub fn display_value(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Serialize for Params {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Params;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of swept parameters")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, toml::Value>()? {
                    out.push((k, v));
                }
                Ok(Params(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn product_order() {
        assert_eq!(cartesian(&[]), vec![Vec::<usize>::new()]);
        assert_eq!(
            cartesian(&[2, 3]),
            vec![
                vec![0, 0],
                vec![0, 1],
                vec![0, 2],
                vec![1, 0],
                vec![1, 1],
                vec![1, 2]
            ]
        );
        assert!(cartesian(&[2, 0]).is_empty());
    }

    #[test]
    fn get_reads_keys_as_sweeps_address_them() {
        let doc: toml_edit::DocumentMut =
            "[[path]]\nname = \"A\"\ndelay = \"5ms\"\n[[traffic]]\nstreams = 2\n"
                .parse()
                .unwrap();
        let root = doc.as_item();
        let v = |k| {
            get(root, k)
                .and_then(|i| i.as_value())
                .map(|v| v.to_string())
        };
        assert_eq!(v("path.A.delay").as_deref().map(str::trim), Some("\"5ms\""));
        assert_eq!(v("traffic.0.streams").as_deref().map(str::trim), Some("2"));
        assert_eq!(v("traffic.0.unordered"), None);
        assert_eq!(v("path.B.delay"), None);
    }
}
