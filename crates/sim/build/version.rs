// The braid version in run ids, shared by build.rs (which computes it) and the crate's
// tests (which check it): kept free of dependencies, so both can include it.

/// The version string of a build: `pkg` alone without a commit; `pkg+g<commit>` from a
/// clean tree; `pkg+g<commit>.dirty.<digest>` from a tree whose tracked sources differ from
/// the commit, `digest` naming those differences (so each edited state has its own run ids).
pub(crate) fn build_version(pkg: &str, commit: Option<&str>, dirty_digest: Option<&str>) -> String {
    match (commit, dirty_digest) {
        (None, _) => pkg.to_string(),
        (Some(c), None) => format!("{pkg}+g{c}"),
        (Some(c), Some(d)) => format!("{pkg}+g{c}.dirty.{d}"),
    }
}

/// A 12-hex-digit digest of `bytes` (FNV-1a, 64 bits, then 48 of them): a name for a diff,
/// not a security measure.
pub(crate) fn digest12(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{:012x}", h >> 16)
}
