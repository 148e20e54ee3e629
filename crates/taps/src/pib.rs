//! The Policy Information Base (NEAT, NEAT D3.1 §1 and §3.2): policy files that match a
//! Preconnection on its remote and properties and then prohibit, require, prefer or avoid
//! stacks, add remote candidates or override properties.
//!
//! A policy file is TOML; every policy is a `[[policy]]` table, applied in file order
//! (later ones override the properties earlier ones set):
//!
//! ```toml
//! [[policy]]
//! name = "no plain udp to example.org"
//! match = { remote = "*.example.org", port = 443, properties = { reliability = "require" } }
//! prohibit = ["udp"]           # these stacks are removed
//! require = ["braid", "tcp"]   # only these stacks stay (intersection over policies)
//! prefer = ["braid"]           # tried first
//! avoid = ["tcp"]              # tried last
//! add_remotes = ["192.0.2.7:443"]       # extra remote candidates
//! set = { multipath = "prefer" }       # selection properties overridden
//! attempt_delay_ms = 100       # Connection Attempt Delay for matching Preconnections
//! ```
//!
//! `match.remote` is `*`, an exact host name or IP address, or `*.suffix`; omitted match
//! fields match anything. Unknown keys, stack names, property names and preference levels
//! are errors with the file's line and column.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::endpoint::RemoteEndpoint;
use crate::properties::{Preference, TransportProperties};
use crate::stack::StackKind;

/// An invalid policy file, with where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}:{column}: {message}", path.display())]
pub struct PolicyError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line (0: the file could not be read).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    policy: Vec<RawPolicy>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatch {
    remote: Option<String>,
    port: Option<u16>,
    #[serde(default)]
    properties: BTreeMap<String, Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    name: Option<String>,
    #[serde(rename = "match", default)]
    matches: RawMatch,
    #[serde(default)]
    prohibit: Vec<Spanned<String>>,
    #[serde(default)]
    require: Vec<Spanned<String>>,
    #[serde(default)]
    prefer: Vec<Spanned<String>>,
    #[serde(default)]
    avoid: Vec<Spanned<String>>,
    #[serde(default)]
    add_remotes: Vec<Spanned<String>>,
    #[serde(default)]
    set: BTreeMap<String, Spanned<String>>,
    attempt_delay_ms: Option<u64>,
}

/// One validated policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Its name (or `policy N`).
    pub name: String,
    /// `match.remote`.
    pub remote: Option<String>,
    /// `match.port`.
    pub port: Option<u16>,
    /// `match.properties`: each must have exactly this preference.
    pub properties: Vec<(String, Preference)>,
    /// Stacks removed.
    pub prohibit: Vec<StackKind>,
    /// Stacks that alone may stay.
    pub require: Vec<StackKind>,
    /// Stacks tried first.
    pub prefer: Vec<StackKind>,
    /// Stacks tried last.
    pub avoid: Vec<StackKind>,
    /// Extra remotes: (host or IP, port).
    pub add_remotes: Vec<(String, u16)>,
    /// Properties overridden.
    pub set: Vec<(String, Preference)>,
    /// Connection Attempt Delay override.
    pub attempt_delay: Option<Duration>,
}

/// What the matching policies decided for one Preconnection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicyDecision {
    /// Names of the policies that matched, in order.
    pub applied: Vec<String>,
    /// Stacks removed, with the policy that removed them.
    pub prohibited: HashMap<StackKind, String>,
    /// If any policy required stacks: the stacks every such policy allows.
    pub allowed: Option<HashSet<StackKind>>,
    /// Ordering weight per stack (lower first).
    pub rank: HashMap<StackKind, i32>,
    /// Extra remotes.
    pub add_remotes: Vec<(String, u16)>,
    /// Connection Attempt Delay override.
    pub attempt_delay: Option<Duration>,
}

/// The policy information base: the policies of one file (or none).
///
/// ```
/// use braid_taps::{Pib, RemoteEndpoint, StackKind, TransportProperties};
/// let pib = Pib::parse("policy.toml", r#"
/// [[policy]]
/// name = "tcp only to the office"
/// match = { remote = "*.office.example" }
/// require = ["tcp"]
/// "#)?;
/// let r = RemoteEndpoint::new().with_host_name("git.office.example").with_port(22);
/// let (_, decision) = pib.apply(&[r], &TransportProperties::new());
/// assert_eq!(decision.allowed, Some([StackKind::Tcp].into_iter().collect()));
///
/// let e = Pib::parse("policy.toml", "[[policy]]\nprefer = [\"quic\"]\n").unwrap_err();
/// assert_eq!(e.to_string(), "policy.toml:2:11: unknown stack \"quic\" (known: braid, tcp, udp)");
/// # Ok::<(), braid_taps::PolicyError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pib {
    /// The policies, in file order.
    pub policies: Vec<Policy>,
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

fn parse_pref(s: &str) -> Option<Preference> {
    Some(match s {
        "require" => Preference::Require,
        "prefer" => Preference::Prefer,
        "noPreference" => Preference::NoPreference,
        "avoid" => Preference::Avoid,
        "prohibit" => Preference::Prohibit,
        _ => return None,
    })
}

fn parse_remote(s: &str) -> Option<(String, u16)> {
    if let Ok(a) = s.parse::<std::net::SocketAddr>() {
        return Some((a.ip().to_string(), a.port()));
    }
    let (h, p) = s.rsplit_once(':')?;
    Some((h.to_string(), p.parse().ok()?))
}

impl Pib {
    /// No policy (the default when there is no file).
    pub fn empty() -> Self {
        Self::default()
    }

    /// Reads and validates a policy file.
    ///
    /// # Errors
    ///
    /// [`PolicyError`] with the file's line and column.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, PolicyError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| PolicyError {
            path: path.into(),
            line: 0,
            column: 0,
            message: e.to_string(),
        })?;
        Self::parse(path, &text)
    }

    /// Validates policy text; `path` is only for the error messages.
    ///
    /// # Errors
    ///
    /// [`PolicyError`] with the line and column.
    pub fn parse(path: impl AsRef<Path>, text: &str) -> Result<Self, PolicyError> {
        let path = path.as_ref();
        let err = |offset: usize, message: String| {
            let (line, column) = line_col(text, offset);
            PolicyError {
                path: path.into(),
                line,
                column,
                message,
            }
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let off = e.span().map_or(0, |s| s.start);
            err(off, e.message().to_string())
        })?;
        let stacks = |v: &[Spanned<String>]| -> Result<Vec<StackKind>, PolicyError> {
            v.iter()
                .map(|s| {
                    StackKind::from_name(s.get_ref()).ok_or_else(|| {
                        err(
                            s.span().start,
                            format!("unknown stack {:?} (known: braid, tcp, udp)", s.get_ref()),
                        )
                    })
                })
                .collect()
        };
        let props = |m: &BTreeMap<String, Spanned<String>>| {
            m.iter()
                .map(|(k, v)| {
                    if TransportProperties::new().get(k).is_none() {
                        return Err(err(
                            v.span().start,
                            format!(
                                "unknown property {k:?} (known: {})",
                                TransportProperties::SELECTION_NAMES.join(", ")
                            ),
                        ));
                    }
                    let p = parse_pref(v.get_ref()).ok_or_else(|| {
                        err(
                            v.span().start,
                            format!(
                                "unknown preference {:?} (require, prefer, noPreference, \
                                 avoid, prohibit)",
                                v.get_ref()
                            ),
                        )
                    })?;
                    Ok((k.clone(), p))
                })
                .collect::<Result<Vec<_>, PolicyError>>()
        };
        let mut policies = Vec::new();
        for (i, p) in raw.policy.iter().enumerate() {
            let add_remotes = p
                .add_remotes
                .iter()
                .map(|s| {
                    parse_remote(s.get_ref()).ok_or_else(|| {
                        err(
                            s.span().start,
                            format!("remote {:?} is not HOST:PORT", s.get_ref()),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            policies.push(Policy {
                name: p
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("policy {}", i + 1)),
                remote: p.matches.remote.clone(),
                port: p.matches.port,
                properties: props(&p.matches.properties)?,
                prohibit: stacks(&p.prohibit)?,
                require: stacks(&p.require)?,
                prefer: stacks(&p.prefer)?,
                avoid: stacks(&p.avoid)?,
                add_remotes,
                set: props(&p.set)?,
                attempt_delay: p.attempt_delay_ms.map(Duration::from_millis),
            });
        }
        Ok(Self { policies })
    }

    /// Applies every matching policy: returns the properties with the overrides and the
    /// decision on stacks and remotes.
    pub fn apply(
        &self,
        remotes: &[RemoteEndpoint],
        props: &TransportProperties,
    ) -> (TransportProperties, PolicyDecision) {
        let mut props = props.clone();
        let mut d = PolicyDecision::default();
        for p in &self.policies {
            if !p.matches(remotes, &props) {
                continue;
            }
            d.applied.push(p.name.clone());
            for (k, v) in &p.set {
                let _ = props.set(k, *v);
            }
            for s in &p.prohibit {
                d.prohibited.entry(*s).or_insert_with(|| p.name.clone());
            }
            if !p.require.is_empty() {
                let set: HashSet<_> = p.require.iter().copied().collect();
                d.allowed = Some(match d.allowed.take() {
                    Some(a) => a.intersection(&set).copied().collect(),
                    None => set,
                });
            }
            for s in &p.prefer {
                *d.rank.entry(*s).or_default() -= 1;
            }
            for s in &p.avoid {
                *d.rank.entry(*s).or_default() += 1;
            }
            d.add_remotes.extend(p.add_remotes.iter().cloned());
            if p.attempt_delay.is_some() {
                d.attempt_delay = p.attempt_delay;
            }
        }
        (props, d)
    }
}

fn glob(pattern: &str, value: &str) -> bool {
    let (p, v) = (pattern.to_ascii_lowercase(), value.to_ascii_lowercase());
    if p == "*" {
        return true;
    }
    match p.strip_prefix("*.") {
        Some(suffix) => v == suffix || v.ends_with(&format!(".{suffix}")),
        None => p == v,
    }
}

impl Policy {
    /// Whether the policy applies to a Preconnection with these remotes and properties.
    pub fn matches(&self, remotes: &[RemoteEndpoint], props: &TransportProperties) -> bool {
        let remote_ok = self.remote.as_ref().is_none_or(|pat| {
            remotes.iter().any(|r| {
                r.host_name.as_ref().is_some_and(|h| glob(pat, h))
                    || r.ip.is_some_and(|ip| glob(pat, &ip.to_string()))
            })
        });
        let port_ok = self
            .port
            .is_none_or(|port| remotes.iter().any(|r| r.port == Some(port)));
        let props_ok = self
            .properties
            .iter()
            .all(|(k, v)| props.get(k) == Some(*v));
        remote_ok && port_ok && props_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_carry_line_and_column() {
        let text = "[[policy]]\nname = \"x\"\nprohibit = [\"udp\", \"sctp\"]\n";
        let e = Pib::parse("p.toml", text).expect_err("unknown stack");
        assert_eq!((e.line, e.column), (3, 20), "{e}");
        assert!(
            e.to_string()
                .starts_with("p.toml:3:20: unknown stack \"sctp\""),
            "{e}"
        );

        let e = Pib::parse("p.toml", "[[policy]]\nprohibt = [\"udp\"]\n").expect_err("typo");
        assert_eq!(e.line, 2, "{e}");

        let text = "[[policy]]\nset = { multipath = \"sometimes\" }\n";
        let e = Pib::parse("p.toml", text).expect_err("bad level");
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("sometimes"), "{e}");

        let text = "[[policy]]\n\nmatch = { properties = { reliabilty = \"require\" } }\n";
        let e = Pib::parse("p.toml", text).expect_err("bad property");
        assert_eq!(e.line, 3, "{e}");
    }

    #[test]
    fn matching_and_decision() -> Result<(), PolicyError> {
        let text = r#"
[[policy]]
name = "a"
match = { remote = "*.example.org", properties = { reliability = "require" } }
prohibit = ["udp"]
prefer = ["tcp"]
set = { multipath = "prefer" }

[[policy]]
name = "b"
match = { port = 9 }
require = ["braid"]
"#;
        let pib = Pib::parse("p.toml", text)?;
        let r = RemoteEndpoint::new()
            .with_host_name("www.example.org")
            .with_port(443);
        let (props, d) = pib.apply(std::slice::from_ref(&r), &TransportProperties::new());
        assert_eq!(d.applied, vec!["a".to_string()]);
        assert_eq!(props.multipath, Preference::Prefer);
        assert!(d.prohibited.contains_key(&StackKind::Udp));
        assert_eq!(d.rank.get(&StackKind::Tcp), Some(&-1));
        assert!(d.allowed.is_none());
        let other = RemoteEndpoint::new()
            .with_host_name("example.com")
            .with_port(9);
        let (_, d) = pib.apply(&[other], &TransportProperties::new());
        assert_eq!(d.applied, vec!["b".to_string()]);
        assert_eq!(d.allowed, Some([StackKind::Braid].into_iter().collect()));
        Ok(())
    }
}
