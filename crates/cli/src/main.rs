//! `braid`: the command-line tool of the braid transport.
//!
//! It exercises the wire codec (`demo`, `decode`), runs the simulator (`sim run`,
//! `sim plot`, `sim pcap`, `sim bench`, `reproduce`), measures throughput over real sockets
//! (`perf server`, `perf client`), moves bytes like netcat (`nc`) and runs the testbed's
//! link emulator (`testbed emulate`).

mod bind;
mod demo;
mod nc;
mod perf;
mod progress;
mod reproduce;
mod sim;
mod testbed;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// braid: a user-space multipath, multi-streaming SCTP-over-UDP transport.
#[derive(Parser)]
#[command(name = "braid", version, about)]
struct Cli {
    /// What the core and the drivers log on stderr: a level (`error`, `warn`, `info`,
    /// `debug`, `trace`) or a filter such as `braid_proto=debug,braid_net=info`. Default:
    /// the RUST_LOG environment variable, else `warn` (quinn-udp's socket warnings, which
    /// braid reports itself, such as an ICMP port unreachable, at `error`).
    #[arg(long, global = true, value_name = "FILTER")]
    log: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Encode one packet of every chunk type, decode it back, check it is byte-exact, and
    /// optionally write the packets to a pcap file for Wireshark.
    Demo {
        /// Write the packets to this pcap file (Ethernet/IPv4/UDP port 9899/SCTP).
        #[arg(long)]
        pcap: Option<PathBuf>,
        /// Also print each packet as hex.
        #[arg(long)]
        hex: bool,
    },
    /// Decode an SCTP packet given as hex (whitespace allowed) and print its chunks.
    Decode {
        /// The packet bytes in hex, starting at the SCTP common header.
        hex: String,
        /// Do not check the CRC32c.
        #[arg(long)]
        no_checksum: bool,
    },
    /// The network simulator: run scenario files and sweeps, plot results, capture a pcap,
    /// benchmark.
    Sim {
        #[command(subcommand)]
        command: sim::SimCommand,
    },
    /// Throughput test between two braid endpoints (iperf3 style), with every byte
    /// verified by the receiver. iperf3's forms work too: `braid perf -s` is `braid perf
    /// server`, `braid perf -c HOST ...` is `braid perf client -c HOST ...`.
    Perf {
        #[command(subcommand)]
        command: perf::PerfCommand,
    },
    /// Netcat over SCTP-over-UDP: stdin to the peer, the peer's messages to stdout.
    Nc(nc::NcArgs),
    /// Reproduce a paper's figures in the simulator and compare with the paper's numbers.
    Reproduce {
        #[command(subcommand)]
        command: reproduce::ReproduceCommand,
    },
    /// The real-kernel testbed: the link emulator (the simulator's link model on real
    /// packets between network namespaces).
    Testbed {
        #[command(subcommand)]
        command: testbed::TestbedCommand,
    },
    /// Shell completions on stdout, e.g. `braid completions bash >
    /// ~/.local/share/bash-completion/completions/braid`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// The man page (roff) on stdout (`braid man > braid.1 && man ./braid.1`), or with
    /// --dir one page per command and subcommand (braid.1, braid-perf.1, ...) into DIR.
    Man {
        /// Write every page into this directory instead.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

/// `braid completions SHELL`.
fn completions(shell: clap_complete::Shell, out: &mut dyn std::io::Write) {
    clap_complete::generate(shell, &mut Cli::command(), "braid", out);
}

/// `braid man`: the top page on `out`, or every page into `dir`.
fn man(dir: Option<&std::path::Path>, out: &mut dyn std::io::Write) -> Result<(), String> {
    match dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
            clap_mangen::generate_to(Cli::command(), d).map_err(|e| format!("{}: {e}", d.display()))
        }
        None => clap_mangen::Man::new(Cli::command())
            .render(out)
            .map_err(|e| format!("man page: {e}")),
    }
}

/// Installs the `tracing` subscriber that prints the core's and drivers' events on stderr.
fn init_log(filter: Option<&str>) -> Result<(), String> {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter = match filter {
        Some(f) => EnvFilter::try_new(f).map_err(|e| format!("--log {f:?}: {e}"))?,
        None => EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| EnvFilter::new("warn,quinn_udp=error")),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init()
        .map_err(|e| format!("logging: {e}"))
}

/// iperf3's way of choosing the role, `braid perf -s ...` and `braid perf -c HOST ...`,
/// turned into the subcommand form (`perf server ...`, `perf client -c HOST ...`); any
/// other command line is left as it is.
fn iperf_form(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    // The subcommand is the first word that is neither an option nor --log's value.
    let mut i = 1;
    while i < args.len() && args[i].to_str().is_some_and(|a| a.starts_with('-')) {
        i += if args[i] == "--log" { 2 } else { 1 };
    }
    if args.get(i).is_none_or(|a| a != "perf") {
        return args;
    }
    let rest = &args[i + 1..];
    if rest
        .first()
        .is_some_and(|a| ["server", "client", "help"].iter().any(|s| a == s))
    {
        return args;
    }
    if let Some(j) = rest.iter().position(|a| a == "-s" || a == "--server") {
        args.remove(i + 1 + j);
        args.insert(i + 1, "server".into());
    } else if rest.iter().any(|a| {
        a == "--client"
            || a.to_str()
                .is_some_and(|s| s.starts_with("-c") && !s.starts_with("--"))
    }) {
        args.insert(i + 1, "client".into());
    }
    args
}

fn main() -> ExitCode {
    let cli = Cli::parse_from(iperf_form(std::env::args_os().collect()));
    if let Err(e) = init_log(cli.log.as_deref()) {
        eprintln!("braid: {e}");
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        Command::Demo { pcap, hex } => demo::run(pcap.as_deref(), hex),
        Command::Decode { hex, no_checksum } => demo::decode(&hex, !no_checksum),
        Command::Sim { command } => sim::run(command),
        Command::Perf { command } => perf::run(command),
        Command::Nc(args) => nc::run(args),
        Command::Reproduce { command } => reproduce::run(command),
        Command::Testbed { command } => testbed::run(command),
        Command::Completions { shell } => {
            completions(shell, &mut std::io::stdout());
            Ok(())
        }
        Command::Man { dir } => man(dir.as_deref(), &mut std::io::stdout()).map_err(Into::into),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("braid: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{completions, iperf_form, man};

    #[test]
    fn completions_and_man_pages_come_from_the_clap_definitions() {
        let mut b = Vec::new();
        completions(clap_complete::Shell::Bash, &mut b);
        let b = String::from_utf8(b).unwrap();
        assert!(b.contains("braid__subcmd__perf__subcmd__client") && b.contains("--one-way-delay"));
        let mut m = Vec::new();
        man(None, &mut m).unwrap();
        let m = String::from_utf8(m).unwrap();
        assert!(m.starts_with(".ie") || m.contains(".TH braid"), "{m}");
        let dir = std::env::temp_dir().join(format!("braid-man-{}", std::process::id()));
        man(Some(&dir), &mut Vec::new()).unwrap();
        let perf = std::fs::read_to_string(dir.join("braid-perf-client.1")).unwrap();
        assert!(perf.contains("reverse"), "{perf}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn form(s: &str) -> String {
        let v = iperf_form(s.split(' ').map(Into::into).collect());
        let v: Vec<String> = v.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        v.join(" ")
    }

    #[test]
    fn iperf_command_lines_become_subcommands() {
        assert_eq!(form("braid perf -s"), "braid perf server");
        assert_eq!(form("braid perf -J -s -1"), "braid perf server -J -1");
        assert_eq!(
            form("braid perf -c localhost -t 5 -P 2 -R -J"),
            "braid perf client -c localhost -t 5 -P 2 -R -J"
        );
        assert_eq!(
            form("braid --log debug perf -c ::1"),
            "braid --log debug perf client -c ::1"
        );
        assert_eq!(form("braid perf -c::1"), "braid perf client -c::1");
        // Left alone: the subcommand forms, help, and other commands.
        for same in [
            "braid perf server --bind 127.0.0.1:9899",
            "braid perf client -c 127.0.0.1",
            "braid perf --help",
            "braid sim run -s x",
            "braid sim run perf -c",
        ] {
            assert_eq!(form(same), same);
        }
    }
}
