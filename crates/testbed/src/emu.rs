//! The link emulator: one bidirectional link between two network interfaces, applying the
//! simulator's own link model ([`braid_sim::link::Link`], configured by the same
//! [`LinkConfig`] a scenario's `[[path]]` becomes) to real packets on a real monotonic clock.
//!
//! # Packet I/O: TUN, not AF_PACKET
//!
//! The emulator sits in a "link" network namespace that routes between two veths
//! ([`crate::plumb::plumb_link_namespace`]): policy routing sends everything arriving on the
//! left veth into the TUN device `forward` and everything arriving on the right veth into
//! the TUN device `reverse`. The emulator reads a packet from a TUN, passes it through that
//! direction's `Link`, and writes it back into the same TUN when the model releases it; the
//! kernel receives it as if it had arrived on the TUN and routes it out by destination.
//!
//! Why TUN: a TUN device without `IFF_VNET_HDR` offers no offloads, so the kernel segments
//! GSO/TSO super-packets and completes partial checksums *before* user space sees them, and
//! each read is one wire-sized IP packet whose length is what the model serializes. With
//! AF_PACKET on a veth the emulator would see 64 KB TSO frames and CHECKSUM_PARTIAL packets,
//! and veth offloads cannot be turned off here (no ethtool binary). The cost is one
//! `read` and one `write` system call per packet and the kernel's routing in the link
//! namespace (TTL is decremented twice); bench/emu-fidelity.sh measures what that costs.
//!
//! # Timing
//!
//! One thread runs both directions. It waits in `ppoll` on the two TUNs with a timeout up to
//! the earliest model deadline of either direction (timer slack set to 1 ns, so the kernel
//! does not round the wake-up 50 µs later), optionally busy-waits the last
//! [`EmuConfig::spin`] before a deadline, and runs the model's events at their own times
//! (see [`crate::core::Shaper`]): a late wake-up delays a packet's write but never the
//! model's schedule. A packet enters the model at the time it is read. Model time is the
//! time since [`Emulator::run`] started, so a `[[path]]`'s `down`, `rate_changes`,
//! `spike_at`... count from there.
//!
//! Not modelled: packets larger than the MTU with DF set are dropped silently (the
//! simulator's `icmp` answers are not generated); a packet without DF larger than the MTU is
//! carried whole, as the model carries one (the kernel fragments it on the far side if the
//! veth's MTU needs it); `background` cross traffic is not generated.

use std::io;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use braid_proto::Instant;
use braid_sim::link::{LinkConfig, Packet};
use rustix::event::{PollFd, PollFlags, Timespec};
use serde::Serialize;

use crate::core::{LatenessHistogram, Shaper};
use crate::sys;
use crate::tun::Tun;

/// Longest sleep without a deadline: how often the stop flag is looked at.
const IDLE_WAIT: Duration = Duration::from_millis(20);

/// Packets read from one TUN before the loop looks at deadlines again.
const READ_BATCH: usize = 32;

/// One IP packet as read from a TUN.
#[derive(Debug)]
pub struct Frame(pub Vec<u8>);

impl Packet for Frame {
    fn wire_size(&self) -> usize {
        self.0.len()
    }

    /// IPv4 without DF: a router may fragment it (IPv6 routers never fragment).
    fn may_fragment(&self) -> bool {
        self.0.first().is_some_and(|b| b >> 4 == 4) && self.0.get(6).is_some_and(|b| b & 0x40 == 0)
    }
}

/// What an [`Emulator`] emulates.
#[derive(Debug, Clone)]
pub struct EmuConfig {
    /// Left to right (the simulator's forward link: `braid_sim::net::forward_config`).
    pub forward: LinkConfig,
    /// Right to left (`braid_sim::net::reverse_config`).
    pub reverse: LinkConfig,
    /// Seed of the random draws; the forward link uses stream 1 and the reverse stream 2,
    /// as the simulator's first path does.
    pub seed: u64,
    /// Busy-wait this long before a deadline instead of sleeping through it (zero: always
    /// sleep). Spinning trades CPU for release precision.
    pub spin: Duration,
    /// Stop after this long; `None`: only when the stop flag is set.
    pub duration: Option<Duration>,
}

impl EmuConfig {
    /// Both directions from a simulator `[[path]]` table, as the simulator builds them.
    pub fn from_path(path: &braid_sim::scenario::PathSpec, seed: u64) -> Self {
        Self {
            forward: braid_sim::net::forward_config(path),
            reverse: braid_sim::net::reverse_config(path),
            seed,
            spin: Duration::ZERO,
            duration: None,
        }
    }
}

/// One direction: the model and what the driver measured around it.
#[derive(Debug)]
struct Direction {
    shaper: Shaper<Frame>,
    lateness: LatenessHistogram,
    write_errors: u64,
    last_write_error: Option<String>,
}

/// The emulator of one bidirectional link.
#[derive(Debug)]
pub struct Emulator {
    dirs: [Direction; 2],
    spin: Duration,
    duration: Option<Duration>,
}

/// The real clock: the one place the emulator reads time.
#[expect(
    clippy::disallowed_methods,
    reason = "the emulator is where the wall clock becomes the link model's time input"
)]
fn clock() -> std::time::Instant {
    std::time::Instant::now()
}

impl Emulator {
    /// An emulator with fresh links; nothing runs until [`Emulator::run`].
    pub fn new(cfg: EmuConfig) -> Self {
        let dir = |link: LinkConfig, stream| Direction {
            shaper: Shaper::new(link, cfg.seed, stream),
            lateness: LatenessHistogram::default(),
            write_errors: 0,
            last_write_error: None,
        };
        Self {
            dirs: [dir(cfg.forward, 1), dir(cfg.reverse, 2)],
            spin: cfg.spin,
            duration: cfg.duration,
        }
    }

    /// Emulates until `stop` is set (or [`EmuConfig::duration`] has passed): packets read
    /// from `forward` go through the forward link and back into `forward`, those from
    /// `reverse` through the reverse link and back into `reverse`. Returns the statistics
    /// of the run; an error only if polling or reading a TUN fails (a failed write is
    /// counted, as a drop by the host would be).
    pub fn run(&mut self, forward: &Tun, reverse: &Tun, stop: &AtomicBool) -> io::Result<EmuStats> {
        // Wake-ups at the deadline asked for, not up to 50 µs (the default slack) after.
        let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1));
        let tuns = [forward, reverse];
        let epoch = clock();
        let now = || Instant::from_duration(epoch.elapsed());
        let cpu0 = sys::thread_cpu_time()?;
        let mut buf = vec![0u8; 65536];
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let t = now();
            if self.duration.is_some_and(|d| t.since_epoch() >= d) {
                break;
            }
            for (d, tun) in self.dirs.iter_mut().zip(tuns) {
                d.shaper.advance(t);
                d.flush(tun, &now);
            }
            let t = now();
            let next = self
                .dirs
                .iter()
                .filter_map(|d| d.shaper.next_deadline())
                .min();
            let wait = next
                .map_or(IDLE_WAIT, |n| n.saturating_duration_since(t))
                .min(IDLE_WAIT);
            let sleep = wait.saturating_sub(self.spin);
            let mut fds = [
                PollFd::new(forward, PollFlags::IN),
                PollFd::new(reverse, PollFlags::IN),
            ];
            let timeout = Timespec {
                tv_sec: sleep.as_secs() as _,
                tv_nsec: sleep.subsec_nanos() as _,
            };
            match rustix::event::poll(&mut fds, Some(&timeout)) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
            let readable = fds.map(|f| !f.revents().is_empty());
            for ((d, tun), ready) in self.dirs.iter_mut().zip(tuns).zip(readable) {
                if !ready {
                    continue;
                }
                for _ in 0..READ_BATCH {
                    let Some(n) = tun.recv(&mut buf)? else { break };
                    let t = now();
                    // The model must be at `t` before the packet enters it.
                    d.shaper.advance(t);
                    d.flush(tun, &now);
                    d.shaper.offer(t, Frame(buf[..n].to_vec()));
                }
            }
        }
        let elapsed = epoch.elapsed();
        let cpu = sys::thread_cpu_time()?.saturating_sub(cpu0);
        let [f, r] = &self.dirs;
        Ok(EmuStats {
            elapsed_s: elapsed.as_secs_f64(),
            cpu_s: cpu.as_secs_f64(),
            cpu_percent: 100.0 * cpu.as_secs_f64() / elapsed.as_secs_f64().max(1e-9),
            spin_us: self.spin.as_secs_f64() * 1e6,
            forward: f.stats(),
            reverse: r.stats(),
        })
    }
}

impl Direction {
    /// Writes every packet the model released, measuring how late each write starts.
    fn flush(&mut self, tun: &Tun, now: &impl Fn() -> Instant) {
        while let Some((release, p)) = self.shaper.pop_released() {
            let t = now();
            self.lateness.record(t.saturating_duration_since(release));
            if let Err(e) = tun.send(&p.0) {
                self.write_errors += 1;
                self.last_write_error = Some(e.to_string());
            }
        }
    }

    fn stats(&self) -> DirectionStats {
        let s = self.shaper.stats();
        let seen: u64 = self.shaper.queue_seen().iter().sum();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        DirectionStats {
            offered_packets: s.offered,
            offered_bytes: self.shaper.offered_bytes(),
            delivered_packets: s.delivered,
            delivered_bytes: s.delivered_bytes,
            drops: Drops {
                queue: s.drops_queue,
                loss: s.drops_loss,
                mtu: s.drops_mtu,
                failure: s.drops_failure,
            },
            write_errors: self.write_errors,
            last_write_error: self.last_write_error.clone(),
            displaced: s.displaced,
            spiked: s.spiked,
            queue_max_packets: s.max_queue,
            queue_mean_packets: if seen == 0 {
                0.0
            } else {
                s.queue_seen_sum as f64 / seen as f64
            },
            busy_s: s.busy.as_secs_f64(),
            lateness_us: Lateness {
                count: self.lateness.count(),
                mean: us(self.lateness.mean()),
                p50: us(self.lateness.quantile(0.5)),
                p99: us(self.lateness.quantile(0.99)),
                max: us(self.lateness.max()),
            },
        }
    }
}

/// Statistics of one [`Emulator::run`], printed as JSON.
#[derive(Debug, Clone, Serialize)]
pub struct EmuStats {
    /// Wall time of the run, seconds.
    pub elapsed_s: f64,
    /// CPU time (user + system) of the emulator's thread, seconds.
    pub cpu_s: f64,
    /// `cpu_s` as a share of `elapsed_s` (100: one core busy all along).
    pub cpu_percent: f64,
    /// The busy-wait before each deadline, µs.
    pub spin_us: f64,
    /// Left to right.
    pub forward: DirectionStats,
    /// Right to left.
    pub reverse: DirectionStats,
}

/// Statistics of one direction.
#[derive(Debug, Clone, Serialize)]
pub struct DirectionStats {
    /// Packets read from the TUN and offered to the model.
    pub offered_packets: u64,
    /// Their bytes (IP packets).
    pub offered_bytes: u64,
    /// Packets the model delivered (and the emulator wrote).
    pub delivered_packets: u64,
    /// Their bytes.
    pub delivered_bytes: u64,
    /// The model's drops by reason.
    pub drops: Drops,
    /// Delivered packets the kernel refused to take back.
    pub write_errors: u64,
    /// The last such refusal.
    pub last_write_error: Option<String>,
    /// Packets a hiccup displaced.
    pub displaced: u64,
    /// Packets a delay spike held.
    pub spiked: u64,
    /// Most packets waiting in the model's queue at once.
    pub queue_max_packets: usize,
    /// Mean number of packets waiting that an offered packet found.
    pub queue_mean_packets: f64,
    /// Time the model's transmitter was busy, seconds.
    pub busy_s: f64,
    /// How late packets were written after the model released them, µs.
    pub lateness_us: Lateness,
}

/// Drops by reason.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Drops {
    /// Drop-tail (queue full in packets or bytes).
    pub queue: u64,
    /// Random loss (Bernoulli or Gilbert–Elliott).
    pub loss: u64,
    /// Larger than the MTU, with DF.
    pub mtu: u64,
    /// In a failure window.
    pub failure: u64,
}

/// Release lateness: write time minus the model's release time, µs (quantiles to 1 µs).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Lateness {
    /// Packets measured.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Maximum.
    pub max: f64,
}
