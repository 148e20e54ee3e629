//! docs/reproductions/README.md's counts are the reports' own summary lines.

#![allow(missing_docs, clippy::unwrap_used)]

/// The four counts of a report's summary line: numbers held, departed; claims held,
/// departed (both of the reports' phrasings).
fn report_counts(report: &str) -> [u32; 4] {
    let line = report
        .lines()
        .find(|l| l.contains("hold") && l.contains("depart") && l.contains("claims"))
        .unwrap();
    let n: Vec<u32> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    match (line.contains("of the paper's"), n.as_slice()) {
        // "of the paper's 24 numbers, 16 hold and 8 depart; of its 18 claims, 18 hold and 0 depart"
        (true, [_, h, d, _, ch, cd]) => [*h, *d, *ch, *cd],
        // "7 of 25 paper numbers hold, 18 depart; 61 of 69 claims hold, 8 depart"
        (false, [h, _, d, ch, _, cd]) => [*h, *d, *ch, *cd],
        _ => panic!("unexpected summary line {line:?}"),
    }
}

#[test]
fn the_index_counts_are_the_reports_summary_lines() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reproductions");
    let index = std::fs::read_to_string(dir.join("README.md")).unwrap();
    for name in ["cmt-scheduling", "ls-sctp", "spurious"] {
        let report = std::fs::read_to_string(dir.join(name).join("report.md")).unwrap();
        let want = report_counts(&report);
        let row = index
            .lines()
            .find(|l| l.contains(&format!("]({name}/report.md)")))
            .unwrap_or_else(|| panic!("no index row for {name}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let pair =
            |c: &str| -> Vec<u32> { c.split('/').map(|x| x.trim().parse().unwrap()).collect() };
        let got = [pair(cells[3]), pair(cells[4])].concat();
        assert_eq!(got, want.to_vec(), "{name}: index {row:?}");
    }
}
