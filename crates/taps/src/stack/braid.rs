//! braid/UDP: the only module of braid-taps that calls braid-net (so that a change of
//! braid-net's API is adapted here alone).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use braid_net::{
    Association, CmtConfig, EndpointConfig, PathAssignment, SchedulerKind, SendOptions,
};
use bytes::Bytes;
use tokio::sync::mpsc;

use super::{Inbound, LinkConfig};
use crate::error::ConnectionError;
use crate::message::MessageContext;
use crate::properties::{ConnScheduler, MultipathPolicy, Preference};

/// PPID of braid-taps's end-of-stream marker (a one-byte message on the closed stream):
/// the substitute for an RFC 6525 stream reset, which braid does not implement. Application
/// messages carry PPID 0.
pub(crate) const END_OF_STREAM_PPID: u32 = 0x4272_6445; // "BrdE"

/// Streams asked for in each direction: the Connections a group can hold.
const GROUP_STREAMS: u16 = 256;

/// A braid association with the endpoint that owns it (a client's endpoint is its own; a
/// listener's is shared by every association it accepted).
#[derive(Debug)]
pub(crate) struct BraidLink {
    assoc: Association,
    _endpoint: Arc<braid_net::Endpoint>,
    remote: SocketAddr,
    streams: u16,
    immediate: bool,
}

fn endpoint_config(cfg: &LinkConfig, port: u16, listen: bool) -> EndpointConfig {
    let p = &cfg.props;
    let mut ec = EndpointConfig {
        port,
        listen,
        ..Default::default()
    };
    let a = &mut ec.association;
    a.outbound_streams = GROUP_STREAMS;
    // RFC 9622 §8.1.5: connScheduler names the RFC 8260 schedulers braid implements.
    a.stream_scheduler = match p.conn_scheduler {
        ConnScheduler::Fcfs => SchedulerKind::Fcfs,
        ConnScheduler::RoundRobin => SchedulerKind::RoundRobin,
        ConnScheduler::RoundRobinPacket => SchedulerKind::RoundRobinPacket,
        ConnScheduler::Priority => SchedulerKind::Priority,
        ConnScheduler::FairCapacity => SchedulerKind::FairCapacity,
        ConnScheduler::WeightedFairQueueing => SchedulerKind::Wfq,
    };
    // RFC 9622 §8.1.7: Handover is plain multi-homing failover; the others use CMT.
    let multipath = matches!(p.multipath, Preference::Require | Preference::Prefer);
    a.cmt = match (multipath, p.multipath_policy) {
        (true, MultipathPolicy::Interactive) => {
            a.path_assignment = PathAssignment::CwndRtt;
            Some(CmtConfig::default())
        }
        (true, MultipathPolicy::Aggregate) => Some(CmtConfig::default()),
        _ => None,
    };
    a.pr_sctp = true;
    ec
}

/// Opens an association from `locals` (the first one's port, 0: the OS chooses) to the
/// listener at `remotes` (the first is where the INIT goes; its UDP encapsulation port is
/// also its SCTP port). Several addresses make the association multi-homed.
pub(crate) async fn connect(
    locals: &[SocketAddr],
    remotes: &[SocketAddr],
    cfg: &LinkConfig,
) -> Result<BraidLink, String> {
    let (Some(&local), Some(&remote)) = (locals.first(), remotes.first()) else {
        return Err("no address".into());
    };
    // Our SCTP port: the same number as our UDP port is not known before binding; any
    // port works since the UDP 4-tuple already tells associations apart (RFC 6951 §5.1).
    let ec = endpoint_config(cfg, remote.port().max(1), false);
    if cfg.props.conn_capacity_profile == crate::properties::CapacityProfile::Scavenger {
        tracing::info!("connCapacityProfile Scavenger: braid has no LBE controller yet");
    }
    let ep = braid_net::Endpoint::bind(ec, locals).map_err(|e| format!("bind {local}: {e}"))?;
    let assoc = ep
        .connect(remotes, remote.port())
        .await
        .map_err(|e| e.to_string())?;
    BraidLink::new(assoc, Arc::new(ep), remote, cfg).await
}

impl BraidLink {
    async fn new(
        assoc: Association,
        endpoint: Arc<braid_net::Endpoint>,
        remote: SocketAddr,
        cfg: &LinkConfig,
    ) -> Result<Self, String> {
        let (out, inb) = assoc.open_streams();
        Ok(Self {
            assoc,
            _endpoint: endpoint,
            remote,
            streams: out.min(inb),
            immediate: cfg.immediate_sack(),
        })
    }

    pub(crate) fn remote(&self) -> SocketAddr {
        self.remote
    }

    /// Sets `stream`'s priority (lower goes first; RFC 9622's connPriority is lower-is-
    /// more-important too), saturating at u16. Best effort: a closed association ignores it.
    pub(crate) fn set_stream_priority(&self, stream: u16, priority: u32) {
        let p = u16::try_from(priority).unwrap_or(u16::MAX);
        if let Ok(s) = self.assoc.open_stream(stream) {
            let _ = s.set_priority(p);
        }
    }

    pub(crate) fn max_streams(&self) -> u16 {
        self.streams
    }

    pub(crate) async fn send(
        &self,
        stream: u16,
        data: Bytes,
        ctx: &MessageContext,
    ) -> Result<(), ConnectionError> {
        let opts = SendOptions {
            ppid: 0,
            unordered: !ctx.ordered,
            // RFC 9622 §9.1.3.1 msgLifetime → PR-SCTP timed reliability (RFC 3758 §4.1).
            lifetime: ctx.lifetime,
            immediate: self.immediate,
        };
        self.assoc
            .send(stream, data, opts)
            .await
            .map_err(|e| ConnectionError::Send(e.to_string()))
    }

    pub(crate) async fn send_end(&self, stream: u16) -> Result<(), ConnectionError> {
        let opts = SendOptions {
            ppid: END_OF_STREAM_PPID,
            ..Default::default()
        };
        self.assoc
            .send(stream, Bytes::from_static(&[0]), opts)
            .await
            .map_err(|e| ConnectionError::Send(e.to_string()))
    }

    pub(crate) async fn recv(&self) -> Option<Inbound> {
        // Closed, gracefully or not: the Connection reports it as closed either way.
        let m = self.assoc.recv().await.ok().flatten()?;
        Some(Inbound {
            stream: m.stream_id,
            end: m.ppid == END_OF_STREAM_PPID,
            ordered: !m.unordered,
            data: m.data,
        })
    }

    pub(crate) async fn close(&self) {
        let _ = self.assoc.shutdown().await;
    }

    pub(crate) fn abort(&self) {
        self.assoc.abort();
    }

    pub(crate) async fn paths(&self) -> Vec<(SocketAddr, SocketAddr)> {
        self.assoc
            .paths()
            .iter()
            .map(|p| (p.local, p.remote))
            .collect()
    }

    pub(crate) async fn srtt(&self) -> Option<Duration> {
        let paths = self.assoc.paths();
        paths
            .iter()
            .find(|p| p.primary)
            .or(paths.first())
            .and_then(|p| p.srtt)
    }
}

/// A braid endpoint listening on `locals` (one socket each, all on the first one's port,
/// which is also the SCTP port: a multi-homed server), handing each accepted association
/// to `tx`.
pub(crate) fn listen(
    locals: &[SocketAddr],
    cfg: &LinkConfig,
    tx: mpsc::Sender<BraidLink>,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), String> {
    let Some(&local) = locals.first() else {
        return Err("no address".into());
    };
    let ep = braid_net::Endpoint::bind(endpoint_config(cfg, local.port().max(1), true), locals)
        .map_err(|e| format!("braid bind {local}: {e}"))?;
    let bound = ep.local_addrs().first().copied().unwrap_or(local);
    let ep = Arc::new(ep);
    let cfg = cfg.clone();
    let task = tokio::spawn(async move {
        while let Ok(assoc) = ep.accept().await {
            // The peer's primary address, for the Connection's remote endpoint.
            let remote = assoc.paths().first().map(|p| p.remote);
            let Some(remote) = remote else { continue };
            match BraidLink::new(assoc, ep.clone(), remote, &cfg).await {
                Ok(l) => {
                    if tx.send(l).await.is_err() {
                        break;
                    }
                }
                Err(e) => tracing::debug!("braid accept: {e}"),
            }
        }
    });
    Ok((bound, task))
}
