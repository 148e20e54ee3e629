//! `braid`: the command-line tool.
fn main() {}
