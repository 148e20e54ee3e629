//! `braid testbed up|run|down`: a topology scenario of the simulator built from network
//! namespaces on this machine, its links emulated by [`crate::emu`], its flows real
//! endpoints (braid, the kernel's TCP and MPTCP), its results written as `braid sim run`
//! writes them.
//!
//! Layout, for a testbed named N:
//!
//! * every node of the scenario is a namespace `N-n{i}` (forwarding on, reverse-path
//!   filtering off: a router and an end host at once);
//! * every `[[link]]` *j* from X to Y is a namespace `N-l{j}` with two veth pairs: X's
//!   `l{j}` (172.16.j.1) ↔ its `left` (172.16.j.2), its `right` (172.17.j.1) ↔ Y's `l{j}`
//!   (172.17.j.2), and an emulator (`braid testbed emulate`) between `left` and `right`. A link with
//!   no delay and no impairment is a plain veth pair instead (X 172.16.j.1 ↔ Y 172.16.j.2;
//!   its rate is veth's, not enforced): on two cores an emulator per access link costs more
//!   than it models;
//! * a flow's path *i* runs from its sender's address on the first link of route *i* to its
//!   receiver's address on the last one, and every node and link namespace on the route gets
//!   a /32 route to each end (with the sender's source address at the ends, so that the
//!   kernel and MPTCP's path manager pick the route's interface).
//!
//! Everything the testbed makes has its name's prefix, so two testbeds never collide, and
//! `down` removes it all (the processes in its namespaces, then the namespaces), also after
//! a crash. `run` tears down when it ends, fails or is interrupted.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use braid_sim::scenario::{FlowKind, PathSpec, Scenario};
use braid_sim::topology::{self, Hop, Plan};

use crate::TestbedError;
use crate::plumb::ip;

/// Most `[[link]]`s a testbed may have (one /24 per side each).
pub const MAX_LINKS: usize = 256;
/// UDP (braid) or TCP port of flow *f*: this plus *f*.
pub const BASE_PORT: u16 = 20_000;
/// Settling time after the servers start, before the first client.
const SERVER_SETTLE: Duration = Duration::from_millis(300);

/// What a testbed run needs besides the scenario.
#[derive(Debug, Clone)]
pub struct BedOptions {
    /// The testbed's name: the prefix of everything it makes.
    pub name: String,
    /// The `braid` binary (the emulators and braid flows run it).
    pub braid: PathBuf,
    /// Where the run's files go (link configs, emulator statistics, endpoint outputs,
    /// `runs.csv`, `summary.json`).
    pub out: PathBuf,
    /// Seed of the emulators' random draws.
    pub seed: u64,
}

fn cmd_err(what: &str, e: std::io::Error) -> TestbedError {
    TestbedError::io(what.to_string(), e)
}

/// Whether this process can build a testbed: root, `ip netns`, /dev/net/tun. The reason
/// if not.
pub fn unavailable() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("the testbed needs root (network namespaces, TUN devices)".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".into());
    }
    match Command::new("ip").args(["netns", "list"]).output() {
        Ok(o) if o.status.success() => None,
        _ => Some("`ip netns` does not work here".into()),
    }
}

/// The namespaces of testbed `name` that exist now.
pub fn namespaces(name: &str) -> Vec<String> {
    let Ok(o) = Command::new("ip").args(["netns", "list"]).output() else {
        return Vec::new();
    };
    let prefix = format!("{name}-");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&prefix) && n[prefix.len()..].starts_with(['n', 'l']))
        .map(str::to_string)
        .collect()
}

/// Removes testbed `name`: stops every process in its namespaces, deletes them. Returns
/// how many namespaces it removed.
pub fn down(name: &str) -> usize {
    let nss = namespaces(name);
    for ns in &nss {
        kill_in(ns, "TERM");
    }
    if !nss.is_empty() {
        std::thread::sleep(Duration::from_millis(300));
    }
    for ns in &nss {
        kill_in(ns, "KILL");
        let _ = Command::new("ip").args(["netns", "del", ns]).status();
    }
    nss.len()
}

fn kill_in(ns: &str, sig: &str) {
    if let Ok(o) = Command::new("ip").args(["netns", "pids", ns]).output() {
        for pid in String::from_utf8_lossy(&o.stdout).split_whitespace() {
            let _ = Command::new("kill")
                .args([&format!("-{sig}"), pid])
                .status();
        }
    }
}

/// One `[[link]]` as built.
#[derive(Debug, Clone)]
struct LinkBed {
    name: String,
    from: usize,
    to: usize,
    emulated: bool,
}

/// A scenario laid out on namespaces.
#[derive(Debug)]
pub struct Layout {
    name: String,
    nodes: Vec<String>,
    links: Vec<LinkBed>,
    plan: Plan,
    notes: Vec<String>,
}

impl Layout {
    /// Lays out `s` (a topology scenario) for testbed `name`.
    pub fn new(s: &Scenario, name: &str) -> Result<Self, TestbedError> {
        let cfg = |m: String| TestbedError::Config(m);
        let plan = topology::plan(s).map_err(|e| cfg(e.to_string()))?;
        let mut notes = Vec::new();
        for (k, o) in plan.onoff.iter().enumerate() {
            let extra =
                (plan.flows.iter()).any(|f| f.onoff.is_some_and(|(j, d)| j == k && !d.is_zero()));
            if extra {
                notes.push(format!(
                    "cross {}: its on/off flows run without their extra round trip (the \
                     simulator's `rtt` range): they see the route's own",
                    o.name
                ));
            }
        }
        if let Some(src) = plan.packet_sources.iter().find(|p| p.packet_size <= 28) {
            return Err(cfg(format!(
                "cross {}: packet_size {} leaves no UDP payload (IPv4 and UDP take 28 bytes)",
                src.name, src.packet_size
            )));
        }
        if s.links.len() > MAX_LINKS {
            return Err(cfg(format!("at most {MAX_LINKS} links on the testbed")));
        }
        if plan.flows.len() > 1000 {
            return Err(cfg("at most 1000 flows on the testbed".into()));
        }
        let mut nodes: Vec<String> = Vec::new();
        let mut node = |n: &str| match nodes.iter().position(|m| m == n) {
            Some(i) => i,
            None => {
                nodes.push(n.to_string());
                nodes.len() - 1
            }
        };
        let links = s
            .links
            .iter()
            .map(|l| LinkBed {
                name: l.name.clone(),
                from: node(l.from.as_deref().unwrap_or_default()),
                to: node(l.to.as_deref().unwrap_or_default()),
                emulated: needs_emulator(l),
            })
            .collect();
        Ok(Self {
            name: name.to_string(),
            nodes,
            links,
            plan,
            notes,
        })
    }

    /// Where this testbed departs from the simulator's run of the same scenario.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    fn node_ns(&self, i: usize) -> String {
        format!("{}-n{i}", self.name)
    }

    fn link_ns(&self, j: usize) -> String {
        format!("{}-l{j}", self.name)
    }

    /// The address of node `n`'s interface on link `j`.
    fn addr(&self, n: usize, j: usize) -> Ipv4Addr {
        let l = &self.links[j];
        let j = j as u8;
        if n == l.from {
            Ipv4Addr::new(172, 16, j, 1)
        } else if l.emulated {
            Ipv4Addr::new(172, 17, j, 2)
        } else {
            Ipv4Addr::new(172, 16, j, 2)
        }
    }

    /// Where node `n` sends packets that cross link `j`: the link namespace's address on its
    /// side, or (a plain veth) the other node's.
    fn gateway(&self, n: usize, j: usize) -> Ipv4Addr {
        let l = &self.links[j];
        let other = if n == l.from { l.to } else { l.from };
        match (l.emulated, n == l.from) {
            (true, true) => Ipv4Addr::new(172, 16, j as u8, 2),
            (true, false) => Ipv4Addr::new(172, 17, j as u8, 1),
            (false, _) => self.addr(other, j),
        }
    }

    /// The node a hop leaves from and the node it reaches.
    fn ends(&self, h: Hop) -> (usize, usize) {
        let l = &self.links[h.link];
        if h.reverse {
            (l.to, l.from)
        } else {
            (l.from, l.to)
        }
    }

    /// Flow `f`'s path `i`: (sender address, receiver address).
    fn path_addrs(&self, f: usize, i: usize) -> (Ipv4Addr, Ipv4Addr) {
        self.route_addrs(&self.plan.flows[f].routes[i])
    }

    /// The first node's address on a route's first link and the last node's on its last.
    fn route_addrs(&self, r: &[Hop]) -> (Ipv4Addr, Ipv4Addr) {
        let (first, last) = (r[0], r[r.len() - 1]);
        let s = self.ends(first).0;
        let d = self.ends(last).1;
        (self.addr(s, first.link), self.addr(d, last.link))
    }

    /// The `ip` commands (namespace, arguments) that route `dst` along `hops`, whose first
    /// node's address on the first link is `src`.
    fn routes_to(&self, hops: &[Hop], dst: Ipv4Addr, src: Ipv4Addr) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        for (k, &h) in hops.iter().enumerate() {
            let (n, m) = self.ends(h);
            let gw = self.gateway(n, h.link);
            if gw != dst {
                let mut args: Vec<String> = ["route", "replace", &format!("{dst}/32"), "via"]
                    .map(str::to_string)
                    .to_vec();
                args.push(gw.to_string());
                if k == 0 {
                    args.extend(["src".to_string(), src.to_string()]);
                }
                out.push((self.node_ns(n), args));
            }
            if self.links[h.link].emulated {
                let far = self.addr(m, h.link);
                if far != dst {
                    out.push((
                        self.link_ns(h.link),
                        vec![
                            "route".into(),
                            "replace".into(),
                            format!("{dst}/32"),
                            "via".into(),
                            far.to_string(),
                        ],
                    ));
                }
            }
        }
        out
    }
}

/// The kernel's name of a controller: Linux runs its own CUBIC whichever flavour braid's
/// scenario names.
fn kernel_cc(cc: braid_proto::CongestionControl) -> String {
    if cc.is_cubic() {
        "cubic".to_string()
    } else {
        cc.to_string()
    }
}

/// A seed for one cross-traffic process: the run's seed, a stream per kind, an index.
fn draw_seed(seed: u64, stream: u64, i: usize) -> u64 {
    seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (stream << 32) ^ i as u64
}

/// Whether a link needs an emulator: anything but an instant (no delay), fast (1 Gbit/s or
/// more) link without impairments, which a plain veth pair stands in for.
fn needs_emulator(l: &PathSpec) -> bool {
    let plain = l.delay.0.is_zero()
        && l.rate.0 >= 1e9
        && l.loss == 0.0
        && l.reverse_loss == 0.0
        && l.gilbert.is_none()
        && l.hiccup.is_none()
        && l.reorder_rate.is_none()
        && l.spikes.is_none()
        && l.delay_spikes.is_none()
        && l.spike_at.is_empty()
        && l.failures.is_empty()
        && l.down.is_empty()
        && l.rate_changes.is_empty();
    !plain
}

/// A testbed that is up; dropping it tears it down (unless kept).
#[derive(Debug)]
pub struct Bed {
    layout: Layout,
    emulators: Vec<(String, Child)>,
    keep: bool,
}

impl Drop for Bed {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        for (_, c) in &mut self.emulators {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
        }
        for (_, c) in &mut self.emulators {
            let _ = c.wait();
        }
        down(&self.layout.name);
    }
}

fn run_ip(ns: &str, args: &[&str]) -> Result<(), TestbedError> {
    ip(Some(ns), args)
}

/// Builds testbed `layout` from scenario `s`: namespaces, veths, addresses, routes, one
/// emulator per emulated link (its config, statistics and output in `opts.out`).
pub fn up(
    s: &Scenario,
    raw: &toml::Value,
    layout: Layout,
    opts: &BedOptions,
) -> Result<Bed, TestbedError> {
    if !namespaces(&layout.name).is_empty() {
        return Err(TestbedError::Config(format!(
            "testbed {:?} is up already: `braid testbed down --name {}` first",
            layout.name, layout.name
        )));
    }
    std::fs::create_dir_all(&opts.out).map_err(|e| cmd_err("creating the output directory", e))?;
    let mut bed = Bed {
        layout,
        emulators: Vec::new(),
        keep: false,
    };
    let l = &bed.layout;
    let sysctl = |ns: &str, key: &str, v: &str| -> Result<(), TestbedError> {
        let st = Command::new("ip")
            .args(["netns", "exec", ns, "sysctl", "-qw", &format!("{key}={v}")])
            .status()
            .map_err(|e| cmd_err("sysctl", e))?;
        if st.success() {
            Ok(())
        } else {
            Err(TestbedError::Config(format!("sysctl {key} in {ns} failed")))
        }
    };
    for i in 0..l.nodes.len() {
        let ns = l.node_ns(i);
        ip(None, &["netns", "add", &ns])?;
        run_ip(&ns, &["link", "set", "dev", "lo", "up"])?;
        sysctl(&ns, "net.ipv4.ip_forward", "1")?;
        sysctl(&ns, "net.ipv4.conf.all.rp_filter", "0")?;
        sysctl(&ns, "net.ipv4.conf.default.rp_filter", "0")?;
        // MPTCP: accept the peer's announced addresses and open subflows to them.
        let _ = run_ip(
            &ns,
            &[
                "mptcp",
                "limits",
                "set",
                "subflow",
                "8",
                "add_addr_accepted",
                "8",
            ],
        );
    }
    for (j, lk) in l.links.iter().enumerate() {
        let (x, y) = (l.node_ns(lk.from), l.node_ns(lk.to));
        let ifname = format!("l{j}");
        let cidr = |a: Ipv4Addr| format!("{a}/24");
        // A veth pair from namespace `a` to `b`, each end addressed and up.
        let veth = |a: &str, ia: &str, xa: Ipv4Addr, b: &str, ib: &str, xb: Ipv4Addr| {
            run_ip(
                a,
                &[
                    "link", "add", ia, "type", "veth", "peer", "name", ib, "netns", b,
                ],
            )?;
            for (ns, dev, x) in [(a, ia, xa), (b, ib, xb)] {
                run_ip(ns, &["addr", "add", &cidr(x), "dev", dev])?;
                run_ip(ns, &["link", "set", "dev", dev, "up"])?;
            }
            Ok::<(), TestbedError>(())
        };
        let (ax, ay) = (l.addr(lk.from, j), l.addr(lk.to, j));
        if lk.emulated {
            let ln = l.link_ns(j);
            ip(None, &["netns", "add", &ln])?;
            run_ip(&ln, &["link", "set", "dev", "lo", "up"])?;
            veth(&x, &ifname, ax, &ln, "left", l.gateway(lk.from, j))?;
            veth(&y, &ifname, ay, &ln, "right", l.gateway(lk.to, j))?;
        } else {
            veth(&x, &ifname, ax, &y, &ifname, ay)?;
        }
    }
    // Routes along every flow's paths, both ways.
    for f in 0..l.plan.flows.len() {
        for (i, r) in l.plan.flows[f].routes.iter().enumerate() {
            let (src, dst) = l.path_addrs(f, i);
            let back: Vec<Hop> = r.iter().rev().map(|h| h.back()).collect();
            for (ns, args) in l
                .routes_to(r, dst, src)
                .into_iter()
                .chain(l.routes_to(&back, src, dst))
            {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                run_ip(&ns, &args)?;
            }
        }
    }
    // Unresponsive sources: forward only.
    for src in &l.plan.packet_sources {
        let (a, d) = l.route_addrs(&src.route);
        for (ns, args) in l.routes_to(&src.route, d, a) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run_ip(&ns, &args)?;
        }
    }
    // The emulators, each told its link by the scenario's own table.
    let links = raw.get("link").and_then(toml::Value::as_array);
    for (j, lk) in l.links.iter().enumerate() {
        if !lk.emulated {
            continue;
        }
        let table = links.and_then(|a| a.get(j)).cloned().ok_or_else(|| {
            TestbedError::Config(format!("link {}: its table is missing", lk.name))
        })?;
        let cfg = opts.out.join(format!("link-{}.toml", lk.name));
        let text = toml::to_string(&table).map_err(|e| TestbedError::Config(e.to_string()))?;
        std::fs::write(&cfg, text).map_err(|e| cmd_err("writing a link config", e))?;
        let ready = opts.out.join(format!("link-{}.ready", lk.name));
        let _ = std::fs::remove_file(&ready);
        let log = std::fs::File::create(opts.out.join(format!("link-{}.log", lk.name)))
            .map_err(|e| cmd_err("creating an emulator log", e))?;
        let child = Command::new(&opts.braid)
            .args([
                "testbed",
                "emulate",
                "--link-ns",
                &l.link_ns(j),
                "--left",
                "left",
                "--right",
                "right",
            ])
            .arg("--config")
            .arg(&cfg)
            .args(["--seed", &(opts.seed + j as u64).to_string()])
            .arg("--stats")
            .arg(opts.out.join(format!("link-{}.json", lk.name)))
            .arg("--ready")
            .arg(&ready)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| cmd_err("starting an emulator", e))?;
        bed.emulators.push((lk.name.clone(), child));
        let deadline = clock() + Duration::from_secs(10);
        while !ready.exists() {
            if clock() > deadline {
                return Err(TestbedError::Config(format!(
                    "the emulator of link {} did not start (see {})",
                    lk.name,
                    opts.out.join(format!("link-{}.log", lk.name)).display()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = s;
    Ok(bed)
}

impl Bed {
    /// Leaves the testbed up when dropped (`braid testbed up`).
    pub fn keep(mut self) {
        self.keep = true;
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
}

/// One flow's endpoint processes.
struct Running {
    server: Child,
    client: Option<Child>,
    start: Duration,
}

/// Runs the scenario's flows on `bed` for its duration (the measurement window after its
/// warm-up, as in the simulator), stops the emulators, and returns the metrics by the
/// simulator's names.
pub fn run_flows(
    bed: &mut Bed,
    s: &Scenario,
    raw: &toml::Value,
    opts: &BedOptions,
    stop: &Arc<AtomicBool>,
) -> Result<BTreeMap<String, f64>, TestbedError> {
    let l = &bed.layout;
    let tables = raw.get("flow").and_then(toml::Value::as_array);
    let start_at = topology::start_times(s, &l.plan, opts.seed);
    let duration = s.duration.0;
    let warmup = s.warmup.0;
    let mut running = Vec::new();
    let secs = |d: Duration| format!("{:.9}s", d.as_secs_f64());
    // Cross traffic counts its window from its receiver's start, as the simulator does from
    // the run's: the senders start a settling time after the receivers.
    let window_from = SERVER_SETTLE + warmup;
    let window_for = duration.saturating_sub(warmup);
    for (f, fp) in l.plan.flows.iter().enumerate() {
        let port = BASE_PORT + f as u16;
        let (sn, dn) = {
            let r = &fp.routes[0];
            (l.ends(r[0]).0, l.ends(r[r.len() - 1]).1)
        };
        let paths: Vec<(Ipv4Addr, Ipv4Addr)> =
            (0..fp.routes.len()).map(|i| l.path_addrs(f, i)).collect();
        let out = |role: &str| {
            std::fs::File::create(opts.out.join(format!("flow-{}-{role}.json", fp.name)))
                .map_err(|e| cmd_err("creating a flow output", e))
        };
        let errf = |role: &str| {
            std::fs::File::create(opts.out.join(format!("flow-{}-{role}.log", fp.name)))
                .map_err(|e| cmd_err("creating a flow log", e))
        };
        // The simulator's start times for the same seed.
        let start = start_at[f];
        let send_for = fp
            .duration
            .unwrap_or(duration.saturating_sub(start))
            .min(duration.saturating_sub(start));
        let omit = warmup.saturating_sub(start);
        let table = tables.and_then(|t| t.get(f));
        let kind = s.flows.get(f).map(|spec| spec.kind);
        let (server, client) = match (fp.onoff, kind) {
            (Some((k, _)), _) => {
                // A Pareto on/off flow of the kernel's TCP.
                let o = &l.plan.onoff[k];
                let cc = kernel_cc(fp.scenario.association.cc.unwrap_or_default());
                let mut sv = Command::new("ip");
                sv.args(["netns", "exec", &l.node_ns(dn)])
                    .arg(&opts.braid)
                    .args(["testbed", "stream", "receive"]);
                sv.args(["--bind", &SocketAddr::from((paths[0].1, port)).to_string()]);
                sv.args(["--window-from", &secs(window_from)]);
                sv.args(["--window-for", &secs(window_for)]);
                let mut cl = Command::new("ip");
                cl.args(["netns", "exec", &l.node_ns(sn)])
                    .arg(&opts.braid)
                    .args(["testbed", "stream", "onoff"]);
                cl.args(["--bind", &SocketAddr::from((paths[0].0, 0)).to_string()]);
                cl.args([
                    "--connect",
                    &SocketAddr::from((paths[0].1, port)).to_string(),
                ]);
                cl.args(["--cc", &cc, "--time", &secs(send_for)]);
                cl.args(["--size-mean", &o.size_mean.to_string()]);
                cl.args(["--size-shape", &o.size_shape.to_string()]);
                cl.args(["--gap-mean", &secs(o.gap_mean)]);
                cl.args(["--gap-shape", &o.gap_shape.to_string()]);
                cl.args(["--seed", &draw_seed(opts.seed, 1, f).to_string()]);
                (sv, cl)
            }
            (None, None) => {
                return Err(TestbedError::Config(format!(
                    "flow {}: not in the scenario's [[flow]]s",
                    fp.name
                )));
            }
            (None, Some(FlowKind::Braid)) => {
                let (server_flags, client_flags) = perf_flags(&fp.name, table)?;
                let a = braid_sim::run::association_config(&fp.scenario);
                let mut sv = Command::new("ip");
                sv.args(["netns", "exec", &l.node_ns(dn)])
                    .arg(&opts.braid)
                    .args(["perf", "server"]);
                for (_, d) in &paths {
                    sv.args(["--bind", &SocketAddr::from((*d, port)).to_string()]);
                }
                let mut cl = Command::new("ip");
                cl.args(["netns", "exec", &l.node_ns(sn)])
                    .arg(&opts.braid)
                    .args(["perf", "client"]);
                for (src, d) in &paths {
                    cl.args(["--bind", &SocketAddr::from((*src, port)).to_string()]);
                    cl.args(["--connect", &SocketAddr::from((*d, port)).to_string()]);
                }
                match s.flows[f].bytes {
                    Some(b) => cl.args(["--bytes", &b.0.to_string()]),
                    None => cl.args(["--time", &secs(send_for)]),
                };
                cl.args(["--json", "--cc", &a.cc.to_string()]);
                cl.args(["--cmt", if a.cmt.is_some() { "on" } else { "off" }]);
                sv.args(&server_flags);
                cl.args(&client_flags);
                if !omit.is_zero() {
                    cl.args(["--omit", &secs(omit)]);
                }
                (sv, cl)
            }
            (None, Some(kind @ (FlowKind::Tcp | FlowKind::Mptcp))) => {
                let spec = &s.flows[f];
                let mptcp = kind == FlowKind::Mptcp;
                if mptcp {
                    // The receiver announces its other addresses (RFC 8684 ADD_ADDR).
                    for (k, (_, d)) in paths.iter().enumerate().skip(1) {
                        let dev = format!("l{}", fp.routes[k][fp.routes[k].len() - 1].link);
                        run_ip(
                            &l.node_ns(dn),
                            &[
                                "mptcp",
                                "endpoint",
                                "add",
                                &d.to_string(),
                                "dev",
                                &dev,
                                "signal",
                            ],
                        )?;
                    }
                }
                let buffer = kernel_flags(&fp.name, table)?;
                let kernel_cc = spec
                    .kernel_cc
                    .clone()
                    .unwrap_or_else(|| kernel_cc(fp.scenario.association.cc.unwrap_or_default()));
                let mut sv = Command::new("ip");
                sv.args(["netns", "exec", &l.node_ns(dn)])
                    .arg(&opts.braid)
                    .args(["testbed", "stream", "receive"]);
                // An MPTCP receiver listens on every address: a join to an announced one
                // needs a listener there (RFC 8684 §3.2).
                let at = if mptcp {
                    Ipv4Addr::UNSPECIFIED
                } else {
                    paths[0].1
                };
                sv.args(["--bind", &SocketAddr::from((at, port)).to_string()]);
                sv.args(["--omit", &secs(omit)]);
                let mut cl = Command::new("ip");
                cl.args(["netns", "exec", &l.node_ns(sn)])
                    .arg(&opts.braid)
                    .args(["testbed", "stream", "send"]);
                cl.args(["--bind", &SocketAddr::from((paths[0].0, 0)).to_string()]);
                cl.args([
                    "--connect",
                    &SocketAddr::from((paths[0].1, port)).to_string(),
                ]);
                cl.args(["--time", &secs(send_for), "--cc", &kernel_cc]);
                if mptcp {
                    sv.arg("--mptcp");
                    cl.arg("--mptcp");
                }
                if let Some(b) = buffer {
                    sv.args(["--buffer", &b]);
                    cl.args(["--buffer", &b]);
                }
                (sv, cl)
            }
        };
        let mut server = server;
        let server = server
            .stdout(out("server")?)
            .stderr(errf("server")?)
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| cmd_err("starting a flow's receiver", e))?;
        let mut client = client;
        client
            .stdout(out("client")?)
            .stderr(errf("client")?)
            .stdin(Stdio::null());
        running.push((
            Running {
                server,
                client: None,
                start,
            },
            client,
        ));
    }
    // Unresponsive sources: a sink at the route's end, a blaster from the start.
    for (i, src) in l.plan.packet_sources.iter().enumerate() {
        let port = BASE_PORT + (l.plan.flows.len() + i) as u16;
        let (a, d) = l.route_addrs(&src.route);
        let (sn, dn) = (
            l.ends(src.route[0]).0,
            l.ends(src.route[src.route.len() - 1]).1,
        );
        let file = |role: &str, ext: &str| {
            std::fs::File::create(opts.out.join(format!("cross-{}-{role}.{ext}", src.name)))
                .map_err(|e| cmd_err("creating a cross-traffic output", e))
        };
        let mut sv = Command::new("ip");
        sv.args(["netns", "exec", &l.node_ns(dn)])
            .arg(&opts.braid)
            .args(["testbed", "stream", "sink"]);
        sv.args(["--bind", &SocketAddr::from((d, port)).to_string()]);
        // It stops by itself shortly after the source, before the run stops the receivers.
        let listen = SERVER_SETTLE + duration + Duration::from_millis(300);
        sv.args(["--time", &secs(listen)]);
        sv.args(["--window-from", &secs(window_from)]);
        sv.args(["--window-for", &secs(window_for)]);
        let server = sv
            .stdout(file("sink", "json")?)
            .stderr(file("sink", "log")?)
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| cmd_err("starting a cross-traffic sink", e))?;
        let mut cl = Command::new("ip");
        cl.args(["netns", "exec", &l.node_ns(sn)])
            .arg(&opts.braid)
            .args(["testbed", "stream", "blast"]);
        cl.args(["--bind", &SocketAddr::from((a, 0)).to_string()]);
        cl.args(["--connect", &SocketAddr::from((d, port)).to_string()]);
        cl.args(["--rate-bps", &src.rate_bps.to_string()]);
        cl.args(["--size", &src.packet_size.to_string()]);
        cl.args(["--time", &secs(duration)]);
        cl.args(["--seed", &draw_seed(opts.seed, 2, i).to_string()]);
        if src.poisson {
            cl.arg("--poisson");
        }
        cl.stdout(file("source", "json")?)
            .stderr(file("source", "log")?)
            .stdin(Stdio::null());
        running.push((
            Running {
                server,
                client: None,
                start: Duration::ZERO,
            },
            cl,
        ));
    }
    std::thread::sleep(SERVER_SETTLE);
    let t0 = clock();
    let end = t0 + duration + Duration::from_secs(15);
    loop {
        let now = t0.elapsed();
        let mut all_done = true;
        for (r, cmd) in &mut running {
            match &mut r.client {
                None if now >= r.start => {
                    r.client = Some(
                        cmd.spawn()
                            .map_err(|e| cmd_err("starting a flow's sender", e))?,
                    );
                    all_done = false;
                }
                None => all_done = false,
                Some(c) => {
                    if c.try_wait().ok().flatten().is_none() {
                        all_done = false;
                    }
                }
            }
        }
        if all_done || stop.load(Ordering::Relaxed) || clock() > end {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let interrupted = stop.load(Ordering::Relaxed);
    // The time the flows ran: the links' busy time is taken over it.
    let flows_secs = t0.elapsed().as_secs_f64();
    // Receivers of kernel streams end with their stream; braid servers run until stopped.
    std::thread::sleep(Duration::from_millis(500));
    for (r, _) in &mut running {
        if let Some(c) = &mut r.client {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new("kill")
            .args(["-INT", &r.server.id().to_string()])
            .status();
    }
    std::thread::sleep(Duration::from_millis(300));
    for (r, _) in &mut running {
        let _ = r.server.kill();
        let _ = r.server.wait();
    }
    for (_, c) in &mut bed.emulators {
        let _ = Command::new("kill")
            .args(["-TERM", &c.id().to_string()])
            .status();
    }
    for (_, c) in &mut bed.emulators {
        let _ = c.wait();
    }
    bed.emulators.clear();
    if interrupted {
        return Err(TestbedError::Config("interrupted".into()));
    }
    metrics(bed, s, opts, flows_secs)
}

/// The keys of a flow's `[flow.association]` table as written.
fn association_keys(table: Option<&toml::Value>) -> Vec<(String, toml::Value)> {
    table
        .and_then(|t| t.get("association"))
        .and_then(toml::Value::as_table)
        .map(|t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn as_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// The `braid perf` flags (server, client) of a braid flow's settings; a setting `braid perf`
/// has no flag for is an error, never silently dropped.
fn perf_flags(
    flow: &str,
    table: Option<&toml::Value>,
) -> Result<(Vec<String>, Vec<String>), TestbedError> {
    let (mut server, mut client) = (Vec::new(), Vec::new());
    let get = |k: &str| table.and_then(|t| t.get(k));
    if let Some(v) = get("streams") {
        client.extend(["--streams".to_string(), as_text(v)]);
    }
    if let Some(v) = get("message_size") {
        client.extend(["--msg-size".to_string(), as_text(v)]);
    }
    for (k, v) in association_keys(table) {
        let both = |flag: &str, server: &mut Vec<String>, client: &mut Vec<String>, v: String| {
            server.extend([flag.to_string(), v.clone()]);
            client.extend([flag.to_string(), v]);
        };
        match k.as_str() {
            // Read by the caller from the resolved settings.
            "cc" | "cmt" => {}
            "buffer" => both("--buffer", &mut server, &mut client, as_text(&v)),
            "stream_scheduler" => client.extend(["--scheduler".into(), as_text(&v)]),
            "send_run" => client.extend(["--send-run".into(), as_text(&v)]),
            "loss_detection" => both("--loss", &mut server, &mut client, as_text(&v)),
            "spurious_detection" => {
                both(
                    "--spurious-detection",
                    &mut server,
                    &mut client,
                    as_text(&v),
                );
            }
            "idata" => {
                let on = if v.as_bool() == Some(true) {
                    "on"
                } else {
                    "off"
                };
                both("--idata", &mut server, &mut client, on.into());
            }
            "pacing" if v.as_bool() == Some(true) => {
                server.push("--pacing".into());
                client.push("--pacing".into());
            }
            "plpmtud" if v.as_bool() == Some(true) => client.push("--plpmtud".into()),
            "load_sharing" => {
                let on = if as_text(&v) == "ls" { "on" } else { "off" };
                both("--load-sharing", &mut server, &mut client, on.into());
            }
            other => {
                return Err(TestbedError::Config(format!(
                    "flow {flow}: association.{other} has no `braid perf` flag: the testbed \
                     cannot run it as the simulator would"
                )));
            }
        }
    }
    Ok((server, client))
}

/// A kernel flow's settings: its buffer, if set; any other setting is an error.
fn kernel_flags(flow: &str, table: Option<&toml::Value>) -> Result<Option<String>, TestbedError> {
    let mut buffer = None;
    for (k, v) in association_keys(table) {
        match k.as_str() {
            "buffer" => buffer = Some(as_text(&v)),
            "cc" => {}
            other => {
                return Err(TestbedError::Config(format!(
                    "flow {flow}: association.{other} does not apply to the kernel's TCP or \
                     MPTCP (only buffer and cc do)"
                )));
            }
        }
    }
    Ok(buffer)
}

/// Reads a JSON file, `None` if missing or not JSON.
fn json(path: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(path).ok()?;
    // A whole (pretty-printed) document, or the last line that is one.
    serde_json::from_str(&text).ok().or_else(|| {
        serde_json::from_str(
            text.lines()
                .rev()
                .find(|l| l.trim_start().starts_with('{'))?,
        )
        .ok()
    })
}

/// The run's metrics, by the simulator's names: per flow the goodput after the warm-up,
/// Jain's index, per emulated link its utilisation, drops and loss.
fn metrics(
    bed: &Bed,
    s: &Scenario,
    opts: &BedOptions,
    flows_secs: f64,
) -> Result<BTreeMap<String, f64>, TestbedError> {
    let l = &bed.layout;
    let mut m = BTreeMap::new();
    let mut goodputs = Vec::new();
    let window_s = s.duration.0.saturating_sub(s.warmup.0).as_secs_f64();
    let mut cross: BTreeMap<&str, f64> = BTreeMap::new();
    for (f, fp) in l.plan.flows.iter().enumerate() {
        let file = |role: &str| opts.out.join(format!("flow-{}-{role}.json", fp.name));
        let Some(kind) = s.flows.get(f).map(|spec| spec.kind) else {
            // A Pareto on/off flow: its window's bytes go to its cross traffic's goodput.
            let Some((k, _)) = fp.onoff else { continue };
            let bytes = json(&file("server"))
                .and_then(|v| v.get("window_bytes").and_then(serde_json::Value::as_f64))
                .ok_or_else(|| {
                    TestbedError::Config(format!(
                        "cross flow {}: no result (see {})",
                        fp.name,
                        file("server").display()
                    ))
                })?;
            *cross.entry(l.plan.onoff[k].name.as_str()).or_default() += bytes;
            continue;
        };
        let g = match kind {
            FlowKind::Braid => json(&file("client")).and_then(|v| {
                v.get("omit_goodput_mbps")
                    .and_then(serde_json::Value::as_f64)
                    .or_else(|| {
                        v.get("send_time_goodput_mbps")
                            .and_then(serde_json::Value::as_f64)
                    })
            }),
            FlowKind::Tcp | FlowKind::Mptcp => json(&file("server")).and_then(|v| {
                v.get("omit_goodput_mbps")
                    .and_then(serde_json::Value::as_f64)
                    .or_else(|| v.get("goodput_mbps").and_then(serde_json::Value::as_f64))
            }),
        };
        let g = g.ok_or_else(|| {
            TestbedError::Config(format!(
                "flow {}: no result (see {} and the .log files next to it)",
                fp.name,
                file(if kind == FlowKind::Braid {
                    "client"
                } else {
                    "server"
                })
                .display()
            ))
        })?;
        m.insert(format!("flow_{}_goodput_mbps", fp.name), g);
        if f == 0 {
            m.insert("goodput_mbps".into(), g);
        }
        goodputs.push(g);
    }
    let shares: Vec<f64> = l.plan.fairness.iter().map(|&f| goodputs[f]).collect();
    m.insert("jain_fairness".into(), topology::jain(&shares));
    for (name, bytes) in cross {
        m.insert(
            format!("cross_{name}_goodput_mbps"),
            bytes * 8.0 / window_s.max(1e-9) / 1e6,
        );
    }
    // What the unresponsive sources got through in the window (the testbed's only: the
    // simulator does not count them).
    for src in &l.plan.packet_sources {
        let p = opts.out.join(format!("cross-{}-sink.json", src.name));
        let v = json(&p)
            .and_then(|v| v.get("window_mbps").and_then(serde_json::Value::as_f64))
            .ok_or_else(|| {
                TestbedError::Config(format!(
                    "cross {}: no result (see {})",
                    src.name,
                    p.display()
                ))
            })?;
        m.insert(format!("cross_{}_delivered_mbps", src.name), v);
    }
    for lk in &l.links {
        if !lk.emulated {
            continue;
        }
        let Some(v) = json(&opts.out.join(format!("link-{}.json", lk.name))) else {
            continue;
        };
        let fwd = &v["forward"];
        let num = |k: &str| {
            fwd.get(k)
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(f64::NAN)
        };
        let p = format!("bottleneck_{}_", lk.name);
        // Busy time over the time the flows ran (from the first sender's start to the last
        // one's exit: slow start and braid's closing drain included, unlike the simulator's
        // window after the warm-up).
        m.insert(
            format!("{p}utilisation"),
            num("busy_s") / flows_secs.max(1e-9),
        );
        let drops: f64 = ["queue", "loss", "mtu", "failure"]
            .iter()
            .map(|k| {
                fwd["drops"]
                    .get(k)
                    .and_then(serde_json::Value::as_f64)
                    .unwrap_or(0.0)
            })
            .sum();
        m.insert(format!("{p}drops"), drops);
        m.insert(format!("{p}loss"), drops / num("offered_packets").max(1.0));
        m.insert(format!("{p}queue_mean"), num("queue_mean_packets"));
        m.insert(format!("{p}queue_max"), num("queue_max_packets"));
        m.insert(
            format!("{p}emulator_cpu_percent"),
            v["cpu_percent"].as_f64().unwrap_or(f64::NAN),
        );
    }
    Ok(m)
}

/// Writes `runs.csv` and `summary.json` in `braid sim run`'s shapes (one point, one seed).
pub fn write_results(
    s: &Scenario,
    file: &Path,
    seed: u64,
    m: &BTreeMap<String, f64>,
    out: &Path,
) -> Result<(), TestbedError> {
    let mut csv = String::from("point,seed");
    for k in m.keys() {
        let _ = write!(csv, ",{k}");
    }
    let _ = write!(csv, "\n0,{seed}");
    for v in m.values() {
        let _ = write!(csv, ",{v}");
    }
    csv.push('\n');
    std::fs::write(out.join("runs.csv"), csv).map_err(|e| cmd_err("writing runs.csv", e))?;
    let metrics: serde_json::Map<String, serde_json::Value> = m
        .iter()
        .map(|(k, v)| {
            let v = if v.is_finite() { serde_json::json!(v) } else { serde_json::Value::Null };
            (
                k.clone(),
                serde_json::json!({"mean": v, "ci95": null, "n": 1, "std": null, "min": v, "max": v}),
            )
        })
        .collect();
    let summary = serde_json::json!({
        "scenario": s.name,
        "file": file.display().to_string(),
        "testbed": true,
        "seeds": 1,
        "sweep": [],
        "points": [{"index": 0, "params": {}, "runs": 1, "failed": 0, "metrics": metrics}],
    });
    let text =
        serde_json::to_string_pretty(&summary).map_err(|e| TestbedError::Config(e.to_string()))?;
    std::fs::write(out.join("summary.json"), text).map_err(|e| cmd_err("writing summary.json", e))
}

/// The real clock.
#[expect(
    clippy::disallowed_methods,
    reason = "a testbed run lives on the real clock"
)]
fn clock() -> Instant {
    Instant::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_HOPS: &str = r#"
name = "t"
duration = "5s"

[[link]]
name = "acc"
from = "S"
to = "R"
rate = "1Gbit/s"
delay = "0ms"

[[link]]
name = "bn"
from = "R"
to = "D"
rate = "10Mbit/s"
delay = "5ms"

[[flow]]
name = "f"
from = "S"
to = "D"
association = { buffer = "64KiB", stream_scheduler = "fixed" }
"#;

    fn layout(text: &str) -> (Scenario, toml::Value, Layout) {
        let s: Scenario = toml::from_str(text).unwrap();
        let raw: toml::Value = toml::from_str(text).unwrap();
        let l = Layout::new(&s, "tb").unwrap();
        (s, raw, l)
    }

    #[test]
    fn a_plain_access_link_and_an_emulated_bottleneck_are_routed_both_ways() {
        let (_, _, l) = layout(TWO_HOPS);
        assert!(!l.links[0].emulated && l.links[1].emulated);
        // S on the veth to R, D behind the emulated bottleneck's right side.
        let (src, dst) = l.path_addrs(0, 0);
        assert_eq!(
            (src.to_string(), dst.to_string()),
            ("172.16.0.1".into(), "172.17.1.2".into())
        );
        let r = &l.plan.flows[0].routes[0];
        let fwd = l.routes_to(r, dst, src);
        let show: Vec<String> = fwd
            .iter()
            .map(|(ns, a)| format!("{ns}: {}", a.join(" ")))
            .collect();
        assert_eq!(
            show,
            [
                // S reaches D over the plain veth to R, with S's own address as source.
                "tb-n0: route replace 172.17.1.2/32 via 172.16.0.2 src 172.16.0.1",
                // R hands it to the link namespace, which routes it to D.
                "tb-n1: route replace 172.17.1.2/32 via 172.16.1.2",
            ]
        );
        let back: Vec<Hop> = r.iter().rev().map(|h| h.back()).collect();
        let rev: Vec<String> = l
            .routes_to(&back, src, dst)
            .iter()
            .map(|(ns, a)| format!("{ns}: {}", a.join(" ")))
            .collect();
        assert_eq!(
            rev,
            [
                "tb-n2: route replace 172.16.0.1/32 via 172.17.1.1 src 172.17.1.2",
                "tb-l1: route replace 172.16.0.1/32 via 172.16.1.1",
            ]
        );
    }

    #[test]
    fn settings_become_perf_flags_or_are_refused() {
        let (_, raw, _) = layout(TWO_HOPS);
        let t = raw.get("flow").and_then(|f| f.get(0));
        let (server, client) = perf_flags("f", t).unwrap();
        assert_eq!(server, ["--buffer", "64KiB"]);
        assert_eq!(client, ["--buffer", "64KiB", "--scheduler", "fixed"]);
        let bad = TWO_HOPS.replace("stream_scheduler = \"fixed\"", "nr_sack = false");
        let (_, raw, _) = layout(&bad);
        let e = perf_flags("f", raw.get("flow").and_then(|f| f.get(0))).unwrap_err();
        assert!(
            e.to_string()
                .contains("association.nr_sack has no `braid perf` flag"),
            "{e}"
        );
        let e = kernel_flags("f", raw.get("flow").and_then(|f| f.get(0))).unwrap_err();
        assert!(
            e.to_string().contains("association.nr_sack does not apply"),
            "{e}"
        );
    }

    #[test]
    fn cross_traffic_runs_along_its_route_and_on_off_flows_are_noted() {
        let text = format!(
            "{TWO_HOPS}\n[[cross]]\nname = \"c\"\nkind = \"poisson\"\nfrom = \"S\"\nto = \"D\"\n\
             rate = \"1Mbit/s\"\n\n[[cross]]\nname = \"web\"\nkind = \"pareto-onoff\"\n\
             from = \"S\"\nto = \"D\"\nflows = 2\n"
        );
        let (_, _, l) = layout(&text);
        assert_eq!(l.plan.packet_sources.len(), 1);
        let (a, d) = l.route_addrs(&l.plan.packet_sources[0].route);
        // The same ends as the flow between the same nodes.
        assert_eq!((a, d), l.path_addrs(0, 0));
        // The on/off flows follow the [[flow]]s, and the testbed says what it leaves out.
        assert_eq!(l.plan.flows.len(), 3);
        assert_eq!(l.plan.flows[1].name, "web#0");
        assert_eq!(l.notes().len(), 1);
        assert!(l.notes()[0].contains("extra round trip"), "{:?}", l.notes());
    }
}
