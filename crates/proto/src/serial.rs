//! Serial number arithmetic (RFC 1982) for TSNs (32 bits) and SSNs (16 bits),
//! as RFC 9260 §1.6 requires for every comparison of them.

/// `a < b` in 32-bit serial arithmetic.
#[inline]
pub(crate) fn tsn_lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `a <= b` in 32-bit serial arithmetic.
#[inline]
pub(crate) fn tsn_le(a: u32, b: u32) -> bool {
    a == b || tsn_lt(a, b)
}

/// `a > b` in 32-bit serial arithmetic.
#[inline]
pub(crate) fn tsn_gt(a: u32, b: u32) -> bool {
    tsn_lt(b, a)
}

/// `a >= b` in 32-bit serial arithmetic.
#[inline]
pub(crate) fn tsn_ge(a: u32, b: u32) -> bool {
    tsn_le(b, a)
}

/// `a < b` in 16-bit serial arithmetic.
#[inline]
pub(crate) fn ssn_lt(a: u16, b: u16) -> bool {
    (a.wrapping_sub(b) as i16) < 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_wrap_around() {
        assert!(tsn_lt(u32::MAX, 0));
        assert!(tsn_gt(0, u32::MAX));
        assert!(tsn_le(5, 5) && tsn_ge(5, 5));
        assert!(tsn_lt(0x7fff_fff0, 0x8000_0010));
        assert!(ssn_lt(u16::MAX, 1));
        assert!(!ssn_lt(1, u16::MAX));
    }
}
