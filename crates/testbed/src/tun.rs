//! A TUN device: each `read` is one IP packet the kernel routed into the device, each
//! `write` one IP packet the kernel receives from it as if it had arrived on it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;

use crate::sys;

/// An open, non-blocking TUN device (IFF_TUN | IFF_NO_PI). The device is not persistent:
/// it disappears, with its routes, when this value is dropped.
#[derive(Debug)]
pub struct Tun {
    file: File,
    name: String,
}

impl Tun {
    /// Creates the TUN device `name` in the calling thread's network namespace (see
    /// [`crate::plumb::in_namespace`] for another one) and opens it non-blocking.
    pub fn create(name: &str) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")?;
        let name = sys::tun_set_iff(&file, name)?;
        Ok(Self { file, name })
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one packet into `buf`; `Ok(None)` if none is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match (&self.file).read(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Hands one packet to the kernel, which routes it as if it had arrived on this device.
    pub fn send(&self, packet: &[u8]) -> io::Result<()> {
        (&self.file).write(packet).map(|_| ())
    }
}

impl AsFd for Tun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}
