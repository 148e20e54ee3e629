//! The system calls the testbed needs that no safe wrapper in the dependency tree offers:
//! `ioctl(TUNSETIFF)` (attach a file to a TUN device), `getrusage` (the emulator's CPU time)
//! and `ioctl(SIOCOUTQ)` (a TCP socket's unacknowledged bytes). Everything unsafe in the
//! crate is here.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Attaches `file` (an open `/dev/net/tun`) to the TUN device `name` without packet
/// information headers (IFF_NO_PI: a read is exactly one IP packet), creating it in the
/// calling thread's network namespace. Returns the name the kernel gave it.
pub(crate) fn tun_set_iff(file: &File, name: &str) -> io::Result<String> {
    // SAFETY: `ifreq` is plain old data (a name array and a union of integers and
    // pointers); all zeroes is a valid value of it.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= ifr.ifr_name.len() || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface name {name:?}: 1 to 15 bytes, no NUL"),
        ));
    }
    for (d, s) in ifr.ifr_name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    ifr.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: the descriptor is open for the duration of the call and TUNSETIFF reads and
    // writes exactly one `struct ifreq`, which `ifr` is, and keeps no pointer to it.
    let r = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut ifr) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let end = ifr.ifr_name.iter().position(|&c| c == 0).unwrap_or(0);
    Ok(ifr.ifr_name[..end]
        .iter()
        .map(|&c| c as u8 as char)
        .collect())
}

/// User plus system CPU time of the calling thread so far (the run loop is one thread).
pub(crate) fn thread_cpu_time() -> io::Result<Duration> {
    // SAFETY: `rusage` is plain old data; all zeroes is a valid value of it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one `struct rusage` to the pointer, which is valid for it.
    let r = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    Ok(tv(ru.ru_utime) + tv(ru.ru_stime))
}

/// Bytes a TCP socket has written and not yet had acknowledged (`SIOCOUTQ`, tcp(7)).
pub(crate) fn unacked_bytes(sock: &impl AsRawFd) -> io::Result<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: the descriptor is open for the duration of the call and SIOCOUTQ (TIOCOUTQ)
    // writes exactly one `int` to the pointer, which is valid for it.
    let r = unsafe { libc::ioctl(sock.as_raw_fd(), libc::TIOCOUTQ, &mut n) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(n).unwrap_or(0))
}
