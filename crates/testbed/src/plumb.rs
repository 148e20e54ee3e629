//! The plumbing of a link namespace: two TUN devices and the policy routing that sends
//! each side's traffic through the emulator (see [`crate::emu`] for why TUN).
//!
//! ```text
//!  left host ns          link ns                                        right host ns
//!  [veth] ──────── [left_if] ─(rule iif left_if → table F: dev fwd)─► fwd TUN ─► emulator
//!                                       emulator ─► fwd TUN ─(main table)─► [right_if] ── [veth]
//!                  (and mirrored: right_if → table R → rev TUN → emulator → rev TUN → left_if)
//! ```
//!
//! The namespaces, veths, addresses and host routes are the caller's (the testbed
//! orchestration, or bench/emu-fidelity.sh): the hosts route to each other via the link
//! namespace's veth addresses, and the link namespace has a connected route to each side.
//! [`plumb_link_namespace`] adds, inside the link namespace only: the TUNs (up, MTU 65535 so
//! that the kernel never fragments before the model, a long transmit queue so a burst waits
//! for the emulator instead of being dropped by the TUN), forwarding on, reverse-path
//! filtering off (a packet written into a TUN carries a source that routes via a veth),
//! ICMP redirects off, and for IPv4 and IPv6 a table per direction holding a default route
//! into its TUN above a blackhole route (if the emulator dies, its side's traffic is
//! dropped rather than forwarded unshaped) and a rule `iif <veth> lookup <table>`.
//! [`LinkPlumbing`]'s drop removes the rules and tables; the TUNs go with their file
//! descriptors. Sysctls are left as set (the namespace is the testbed's).

use std::fs;
use std::io;
use std::path::Path;
use std::process::Command;

use crate::TestbedError;
use crate::tun::Tun;

/// Names and numbers [`plumb_link_namespace`] uses inside the link namespace.
#[derive(Debug, Clone)]
pub struct PlumbOptions {
    /// The TUN carrying left-to-right packets.
    pub forward_tun: String,
    /// The TUN carrying right-to-left packets.
    pub reverse_tun: String,
    /// Routing table of packets arriving on the left interface.
    pub forward_table: u32,
    /// Routing table of packets arriving on the right interface.
    pub reverse_table: u32,
    /// Preference of the two `iif` rules (before the main table's 32766).
    pub rule_pref: u32,
    /// Transmit queue of each TUN, packets: what a burst (a 64 KB TSO super-packet is 45
    /// packets) may hold while the emulator catches up, outside the model.
    pub txqueuelen: u32,
}

impl Default for PlumbOptions {
    fn default() -> Self {
        Self {
            forward_tun: "emu-fwd".into(),
            reverse_tun: "emu-rev".into(),
            forward_table: 7301,
            reverse_table: 7302,
            rule_pref: 7300,
            txqueuelen: 10_000,
        }
    }
}

/// The plumbing of one link namespace, undone on drop (rules and tables removed, TUNs
/// closed, which deletes them).
#[derive(Debug)]
pub struct LinkPlumbing {
    ns: String,
    forward: Tun,
    reverse: Tun,
    /// `ip` argument lists that undo what was done, run in reverse order.
    undo: Vec<Vec<String>>,
}

impl LinkPlumbing {
    /// The TUN whose packets go left to right: read, emulate, write back into it.
    pub fn forward(&self) -> &Tun {
        &self.forward
    }

    /// The TUN whose packets go right to left.
    pub fn reverse(&self) -> &Tun {
        &self.reverse
    }

    /// The link namespace.
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    /// Undoes the plumbing now (the same as dropping it).
    pub fn teardown(self) {}
}

impl Drop for LinkPlumbing {
    fn drop(&mut self) {
        // Best effort: the namespace may already be gone.
        for args in self.undo.drain(..).rev() {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let _ = ip(Some(&self.ns), &args);
        }
    }
}

/// Sets up the link namespace `ns`, whose interfaces `left_if` and `right_if` lead to the
/// left and right hosts, so that every packet arriving on `left_if` is read from
/// [`LinkPlumbing::forward`] and every packet arriving on `right_if` from
/// [`LinkPlumbing::reverse`], and a packet written back into either TUN is routed by its
/// destination. Needs root (CAP_NET_ADMIN) and `ip(8)`; the namespace must exist as
/// `/run/netns/<ns>` (`ip netns add`). The calling thread's namespace is not changed.
pub fn plumb_link_namespace(
    ns: &str,
    left_if: &str,
    right_if: &str,
    opts: &PlumbOptions,
) -> Result<LinkPlumbing, TestbedError> {
    for name in [left_if, right_if] {
        ip(Some(ns), &["link", "show", "dev", name])?;
    }
    let (fwd, rev) = in_namespace(ns, || {
        Ok((
            Tun::create(&opts.forward_tun)?,
            Tun::create(&opts.reverse_tun)?,
        ))
    })
    .map_err(|e| TestbedError::io(format!("creating the TUN devices in {ns}"), e))?;
    let mut p = LinkPlumbing {
        ns: ns.to_owned(),
        forward: fwd,
        reverse: rev,
        undo: Vec::new(),
    };
    let qlen = opts.txqueuelen.to_string();
    for tun in [p.forward.name().to_owned(), p.reverse.name().to_owned()] {
        ip(
            Some(ns),
            &[
                "link",
                "set",
                "dev",
                &tun,
                "up",
                "mtu",
                "65535",
                "txqueuelen",
                &qlen,
            ],
        )?;
    }
    let mut sysctls = vec![
        ("net/ipv4/ip_forward".to_owned(), "1"),
        ("net/ipv4/conf/all/send_redirects".to_owned(), "0"),
        ("net/ipv4/conf/all/rp_filter".to_owned(), "0"),
        ("net/ipv4/conf/default/rp_filter".to_owned(), "0"),
        ("net/ipv6/conf/all/forwarding".to_owned(), "1"),
    ];
    for dev in [left_if, right_if, p.forward.name(), p.reverse.name()] {
        sysctls.push((format!("net/ipv4/conf/{dev}/rp_filter"), "0"));
    }
    in_namespace(ns, || {
        for (key, value) in &sysctls {
            fs::write(Path::new("/proc/sys").join(key), value)
                .map_err(|e| io::Error::new(e.kind(), format!("{key}: {e}")))?;
        }
        Ok(())
    })
    .map_err(|e| TestbedError::io(format!("sysctls in {ns}"), e))?;
    let sides = [
        (left_if, p.forward.name().to_owned(), opts.forward_table),
        (right_if, p.reverse.name().to_owned(), opts.reverse_table),
    ];
    for (iif, tun, table) in sides {
        let table = table.to_string();
        for family in ["-4", "-6"] {
            let flush = vec![
                family.into(),
                "route".into(),
                "flush".into(),
                "table".into(),
                table.clone(),
            ];
            p.undo.push(flush);
            ip(
                Some(ns),
                &[
                    family,
                    "route",
                    "add",
                    "blackhole",
                    "default",
                    "metric",
                    "1000",
                    "table",
                    &table,
                ],
            )?;
            ip(
                Some(ns),
                &[
                    family, "route", "add", "default", "dev", &tun, "metric", "1", "table", &table,
                ],
            )?;
        }
        for family in ["-4", "-6"] {
            let pref = opts.rule_pref.to_string();
            let rule = |verb: &str| -> Vec<String> {
                [
                    family, "rule", verb, "pref", &pref, "iif", iif, "lookup", &table,
                ]
                .map(str::to_owned)
                .to_vec()
            };
            let add = rule("add");
            let args: Vec<&str> = add.iter().map(String::as_str).collect();
            ip(Some(ns), &args)?;
            p.undo.push(rule("del"));
        }
    }
    Ok(p)
}

/// Runs `f` on a new thread that has entered the network namespace `ns`
/// (`/run/netns/<ns>`): sockets and devices it creates live there. The calling thread's
/// namespace is not changed.
pub fn in_namespace<T: Send>(ns: &str, f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
    let file = fs::File::open(Path::new("/run/netns").join(ns))?;
    std::thread::scope(|s| {
        s.spawn(move || {
            rustix::thread::move_into_link_name_space(
                std::os::fd::AsFd::as_fd(&file),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )?;
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("namespace thread panicked")))
    })
}

/// Runs `ip [-n ns] args...`, with its stderr in the error if it fails.
pub fn ip(ns: Option<&str>, args: &[&str]) -> Result<(), TestbedError> {
    let mut cmd = Command::new("ip");
    if let Some(ns) = ns {
        cmd.args(["-n", ns]);
    }
    cmd.args(args);
    let shown = format!(
        "ip {}{}",
        ns.map_or(String::new(), |n| format!("-n {n} ")),
        args.join(" ")
    );
    let out = cmd
        .output()
        .map_err(|e| TestbedError::io(shown.clone(), e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(TestbedError::Command {
            cmd: shown,
            detail: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}
