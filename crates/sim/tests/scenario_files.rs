//! Every scenario file shipped in `scenarios/` loads, expands its sweep and passes the
//! simulator's validation at every point, so a documented command line cannot fail on a
//! typo or a key that was renamed.

#![allow(missing_docs, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            toml_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

#[test]
fn every_shipped_scenario_loads_and_validates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files = Vec::new();
    toml_files(&root, &mut files);
    assert!(files.len() >= 6, "found only {files:?}");
    for f in &files {
        let exp = braid_sim::load::load(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(!exp.points.is_empty(), "{}: no points", f.display());
        for p in &exp.points {
            braid_sim::run::validate(&p.scenario)
                .unwrap_or_else(|e| panic!("{} point {}: {e}", f.display(), p.index));
        }
    }
}
