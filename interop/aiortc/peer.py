#!/usr/bin/env python3
"""aiortc-peer: an SCTP-over-UDP (RFC 6951 framing) interop peer built on
aiortc's RTCSctpTransport, with a UDP socket standing in for DTLS.

See ../FORMAT.md for the message format and ../README.md for usage.

    peer.py server --listen 127.0.0.1:PORT [--echo|--discard|--verify]
    peer.py client --connect 127.0.0.1:PORT --bytes N --streams K [--unordered] [--verify]
"""

import argparse
import asyncio
import json
import logging
import re
import struct
import sys
import time
from typing import Optional

from aiortc.rtcsctptransport import (
    RTCSctpTransport,
    ShutdownAckChunk,
    ShutdownChunk,
    ShutdownCompleteChunk,
)

HDR_LEN = 20
FLAG_LAST = 0x01
FLAG_UNORD = 0x02
FMT_VERSION = 1
MAX_MSG_SIZE = 65536
PATTERN_MOD = 251
PPID_BINARY = 53
HDR = struct.Struct("!HBBLQHH")
BASE = bytes(i % PATTERN_MOD for i in range(PATTERN_MOD + MAX_MSG_SIZE))
# aiortc queues DATA chunks of at most ~1160 bytes; keep this many queued.
HIGH_WATER_CHUNKS = 1024


def pattern_start(stream: int, seq: int) -> int:
    return (13 * seq + 7 * stream) % PATTERN_MOD


def build_msg(size: int, stream: int, seq: int, flags: int, nstreams: int) -> bytes:
    s = pattern_start(stream, seq)
    return (
        HDR.pack(stream, flags, FMT_VERSION, size, seq, nstreams, 0)
        + BASE[s : s + size - HDR_LEN]
    )


class VerifyError(Exception):
    pass


class Verifier:
    def __init__(self) -> None:
        self.streams: dict[int, dict] = {}
        self.nstreams = -1
        self.error: Optional[str] = None
        self.done = asyncio.Event()

    def _fail(self, msg: str) -> None:
        if self.error is None:
            self.error = msg
            self.done.set()
        raise VerifyError(msg)

    def check(self, sid: int, m: bytes) -> None:
        if self.error is not None:
            raise VerifyError(self.error)
        if len(m) < HDR_LEN:
            self._fail(f"stream {sid}: short message ({len(m)} bytes)")
        stream, flags, version, length, seq, nst, reserved = HDR.unpack_from(m)
        if version != FMT_VERSION or reserved != 0 or flags & ~(FLAG_LAST | FLAG_UNORD):
            self._fail(f"stream {sid}: bad header {m[:HDR_LEN].hex()}")
        if stream != sid:
            self._fail(f"message for stream {stream} arrived on stream {sid}")
        if length != len(m):
            self._fail(f"stream {sid} seq {seq}: length field {length}, message {len(m)} bytes")
        if self.nstreams == -1:
            self.nstreams = nst
        elif self.nstreams != nst:
            self._fail(f"stream {sid} seq {seq}: nstreams {nst}, expected {self.nstreams}")
        if sid >= nst:
            self._fail(f"stream {sid} >= nstreams {nst}")
        s = pattern_start(stream, seq)
        want = BASE[s : s + len(m) - HDR_LEN]
        if want != m[HDR_LEN:]:
            for i, (a, b) in enumerate(zip(want, m[HDR_LEN:])):
                if a != b:
                    self._fail(f"stream {sid} seq {seq}: payload byte {i} is {b}, want {a}")
        st = self.streams.setdefault(sid, {"next": 0, "seen": set(), "count": 0, "last": -1})
        if not flags & FLAG_UNORD:
            if seq != st["next"]:
                self._fail(f"stream {sid}: ordered seq {seq}, expected {st['next']}")
            st["next"] += 1
        else:
            if seq in st["seen"]:
                self._fail(f"stream {sid}: duplicate seq {seq}")
            st["seen"].add(seq)
        if st["last"] >= 0 and seq > st["last"]:
            self._fail(f"stream {sid}: seq {seq} after LAST {st['last']}")
        st["count"] += 1
        if flags & FLAG_LAST:
            if st["last"] >= 0:
                self._fail(f"stream {sid}: second LAST")
            st["last"] = seq
        if self.complete():
            self.done.set()

    def complete(self) -> bool:
        if self.error is not None or self.nstreams < 0 or len(self.streams) != self.nstreams:
            return False
        return all(st["last"] >= 0 and st["count"] == st["last"] + 1 for st in self.streams.values())

    def result_error(self) -> Optional[str]:
        if self.error is not None:
            return self.error
        if self.complete():
            return None
        if self.nstreams < 0:
            return "incomplete: no message received"
        missing = []
        for i in range(self.nstreams):
            st = self.streams.get(i)
            if st is None:
                missing.append(f"stream {i}: nothing")
            elif st["last"] < 0:
                missing.append(f"stream {i}: no LAST after {st['count']} msgs")
            elif st["count"] != st["last"] + 1:
                missing.append(f"stream {i}: {st['count']} of {st['last'] + 1} msgs")
        return "incomplete: " + "; ".join(missing)


class UdpLink(asyncio.DatagramProtocol):
    """Stands in for RTCDtlsTransport: RTCSctpTransport only uses `state`,
    `_role`, `_register_data_receiver`, `_unregister_data_receiver` and
    `await _send_data(bytes)`, and gets packets via `await _handle_data(bytes)`."""

    def __init__(self, role: str, peer: Optional[tuple] = None) -> None:
        self.state = "connected"
        self._role = role
        self.peer = peer
        self.udp: Optional[asyncio.DatagramTransport] = None
        self.receiver = None
        self.queue: asyncio.Queue = asyncio.Queue()
        self.first = asyncio.get_event_loop().create_future()

    # DatagramProtocol
    def connection_made(self, transport) -> None:
        self.udp = transport

    def datagram_received(self, data: bytes, addr) -> None:
        if self.peer is None:
            self.peer = addr
        if addr[:2] != self.peer[:2]:
            return
        if not self.first.done():
            self.first.set_result(data)
        self.queue.put_nowait(data)

    def error_received(self, exc) -> None:
        print(f"udp error: {exc}", file=sys.stderr)

    # what RTCSctpTransport uses
    def _register_data_receiver(self, receiver) -> None:
        self.receiver = receiver

    def _unregister_data_receiver(self, receiver) -> None:
        if self.receiver is receiver:
            self.receiver = None

    async def _send_data(self, data: bytes) -> None:
        if self.udp is None or self.udp.is_closing() or self.peer is None:
            raise ConnectionError("UDP link closed")
        self.udp.sendto(data, self.peer)

    async def pump(self) -> None:
        """Feed inbound packets to the SCTP transport one at a time."""
        while True:
            data = await self.queue.get()
            if self.receiver is not None:
                try:
                    await self.receiver._handle_data(data)
                except Exception as e:  # e.g. its assert on an INIT bundled with other chunks
                    print(f"aiortc rejected a packet ({type(e).__name__}: {e}): {data[:32].hex()}",
                          file=sys.stderr, flush=True)


class Peer(RTCSctpTransport):
    """RTCSctpTransport on raw streams (no DCEP), plus a graceful SHUTDOWN,
    which aiortc does not initiate by itself."""

    def __init__(self, link: UdpLink, port: int, on_message) -> None:
        super().__init__(link, port=port)  # type: ignore[arg-type]
        self.on_message = on_message
        self.established = asyncio.Event()
        self.closed = asyncio.Event()
        self.progress = asyncio.Event()

    async def _receive(self, stream_id: int, pp_id: int, data: bytes) -> None:
        await self.on_message(stream_id, pp_id, data)

    def _set_state(self, state) -> None:
        super()._set_state(state)
        if state == self.State.ESTABLISHED:
            self.established.set()
        elif state == self.State.CLOSED:
            self.closed.set()
        self.progress.set()

    async def _receive_sack_chunk(self, chunk) -> None:
        await super()._receive_sack_chunk(chunk)
        self.progress.set()

    async def _receive_chunk(self, chunk) -> None:
        if (
            isinstance(chunk, ShutdownAckChunk)
            and self._association_state == self.State.SHUTDOWN_SENT
        ):
            self._t2_cancel()
            await self._send_chunk(ShutdownCompleteChunk())
            self._set_state(self.State.CLOSED)
            return
        await super()._receive_chunk(chunk)

    def outstanding(self) -> int:
        return len(self._outbound_queue) + len(self._sent_queue)

    async def wait_progress(self, timeout: float = 0.05) -> None:
        self.progress.clear()
        try:
            await asyncio.wait_for(self.progress.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    async def shutdown(self) -> None:
        chunk = ShutdownChunk()
        chunk.cumulative_tsn = self._last_received_tsn
        self._set_state(self.State.SHUTDOWN_SENT)
        await self._send_chunk(chunk)
        self._t2_start(chunk)
        await self.closed.wait()


def summary(**kw) -> dict:
    s = {
        "peer": "aiortc",
        "role": "",
        "ok": False,
        "mode": "",
        "bytes_sent": 0,
        "msgs_sent": 0,
        "bytes_recv": 0,
        "msgs_recv": 0,
        "streams": 0,
        "unordered": False,
        "elapsed_s": 0.0,
        "gbit_per_s": 0.0,
        "error": "",
    }
    s.update(kw)
    return s


def finish(s: dict, error: Optional[str] = None) -> int:
    if error:
        s["ok"] = False
        s["error"] = error
    print(json.dumps(s), flush=True)
    return 0 if s["ok"] else 1


def parse_addr(a: str) -> tuple:
    host, _, port = a.rpartition(":")
    return host.strip("[]"), int(port)


def parse_size(s: str) -> int:
    m = re.fullmatch(r"([0-9.]+)\s*(GiB|MiB|KiB|GB|MB|KB|G|M|K|B)?", s)
    if not m:
        raise ValueError(f"bad size {s!r}")
    mul = {None: 1, "B": 1, "K": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MiB": 1 << 20,
           "G": 1 << 30, "GiB": 1 << 30, "KB": 10**3, "MB": 10**6, "GB": 10**9}[m.group(2)]
    return int(float(m.group(1)) * mul)


async def run_server(args) -> int:
    mode = "echo" if args.echo else "discard"
    if args.verify:
        mode = {"discard": "verify", "echo": "echo+verify"}[mode]
    s = summary(role="server", mode=mode)
    loop = asyncio.get_running_loop()
    link = UdpLink("server")
    await loop.create_datagram_endpoint(lambda: link, local_addr=parse_addr(args.listen))
    print(f"aiortc-peer server listening on {args.listen}", file=sys.stderr, flush=True)
    verifier = Verifier()
    streams: set[int] = set()
    state = {"error": None}

    async def on_message(sid: int, ppid: int, data: bytes) -> None:
        s["msgs_recv"] += 1
        s["bytes_recv"] += len(data)
        streams.add(sid)
        if args.verify:
            try:
                verifier.check(sid, data)
            except VerifyError:
                pass
        if args.echo:
            # Queued without back-pressure: blocking here would stall the
            # packet pump (and so the SACKs). Fine for tens of MiB.
            await peer._send(sid, PPID_BINARY, data, ordered=True)
            s["msgs_sent"] += 1
            s["bytes_sent"] += len(data)

    try:
        first = await asyncio.wait_for(link.first, args.timeout)
    except asyncio.TimeoutError:
        return finish(s, "timeout waiting for a peer")
    src_port, dst_port = struct.unpack_from("!HH", first)
    local_port = args.sctp_port
    if dst_port != local_port:
        print(f"warning: peer sent to SCTP port {dst_port}, not {local_port}: answering on {dst_port}",
              file=sys.stderr)
        local_port = dst_port
    peer = Peer(link, local_port, on_message)
    # Sends aiortc's own INIT too (it always does, RFC 8841 section 9.3).
    await peer.start(None, src_port)
    pump = asyncio.ensure_future(link.pump())
    try:
        await asyncio.wait_for(peer.established.wait(), args.timeout)
        start = time.monotonic()
        await asyncio.wait_for(peer.closed.wait(), args.timeout)
    except asyncio.TimeoutError:
        return finish(s, f"timeout (association state {peer._association_state.name})")
    finally:
        pump.cancel()
    s["elapsed_s"] = time.monotonic() - start
    if s["elapsed_s"] > 0:
        s["gbit_per_s"] = s["bytes_recv"] * 8 / s["elapsed_s"] / 1e9
    s["streams"] = len(streams)
    if args.verify:
        err = verifier.result_error()
        if err:
            return finish(s, err)
        s["streams"] = verifier.nstreams
    s["ok"] = True
    return finish(s)


async def run_client(args) -> int:
    s = summary(role="client", mode="echo+verify" if args.verify else "send",
                streams=args.streams, unordered=args.unordered)
    try:
        total = parse_size(args.bytes)
    except ValueError as e:
        return finish(s, str(e))
    if not HDR_LEN <= args.msg_size <= MAX_MSG_SIZE:
        return finish(s, f"--msg-size must be in {HDR_LEN}..{MAX_MSG_SIZE}")
    if not 1 <= args.streams <= 65535:
        return finish(s, "--streams must be in 1..65535")
    count = -(-total // args.msg_size)
    if count < args.streams:
        return finish(s, f"{count} messages for {args.streams} streams: every stream needs one")
    peer_port = args.peer_sctp_port or args.sctp_port

    loop = asyncio.get_running_loop()
    remote = parse_addr(args.connect)
    link = UdpLink("client", peer=None)
    await loop.create_datagram_endpoint(lambda: link, remote_addr=remote)
    link.peer = link.udp.get_extra_info("peername")
    verifier = Verifier()

    async def on_message(sid: int, ppid: int, data: bytes) -> None:
        s["msgs_recv"] += 1
        s["bytes_recv"] += len(data)
        if args.verify:
            try:
                verifier.check(sid, data)
            except VerifyError:
                pass

    peer = Peer(link, args.sctp_port, on_message)
    pump = asyncio.ensure_future(link.pump())
    deadline = time.monotonic() + args.timeout
    try:
        await peer.start(None, peer_port)
        await asyncio.wait_for(peer.established.wait(), args.timeout)
        start = time.monotonic()
        flags = FLAG_UNORD if args.unordered else 0
        for j in range(count):
            sid, seq = j % args.streams, j // args.streams
            size = args.msg_size
            if j == count - 1:
                size = max(HDR_LEN, total - (count - 1) * args.msg_size)
            f = flags | (FLAG_LAST if j + args.streams >= count else 0)
            while len(peer._outbound_queue) > HIGH_WATER_CHUNKS:
                if peer.closed.is_set():
                    return finish(s, "association closed while sending")
                if time.monotonic() > deadline:
                    return finish(s, "timeout while sending")
                await peer.wait_progress()
            await peer._send(sid, PPID_BINARY, build_msg(size, sid, seq, f, args.streams),
                             ordered=not args.unordered)
            s["msgs_sent"] += 1
            s["bytes_sent"] += size
        while peer.outstanding():
            if peer.closed.is_set():
                return finish(s, "association closed before everything was acknowledged")
            if time.monotonic() > deadline:
                return finish(s, f"timeout waiting for acks, {peer.outstanding()} chunks outstanding")
            await peer.wait_progress()
        if args.verify:
            try:
                await asyncio.wait_for(verifier.done.wait(), max(0.0, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                pass
            err = verifier.result_error()
            if err:
                return finish(s, f"echo verify: {err}")
        s["elapsed_s"] = time.monotonic() - start
        if s["elapsed_s"] > 0:
            s["gbit_per_s"] = s["bytes_sent"] * 8 / s["elapsed_s"] / 1e9
        await asyncio.wait_for(peer.shutdown(), max(1.0, deadline - time.monotonic()))
    except asyncio.TimeoutError:
        return finish(s, f"timeout (association state {peer._association_state.name})")
    finally:
        pump.cancel()
    s["ok"] = True
    return finish(s)


def main() -> int:
    ap = argparse.ArgumentParser(prog="aiortc-peer")
    sub = ap.add_subparsers(dest="cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--sctp-port", type=int, default=5001, help="local SCTP port on the wire")
    common.add_argument("--timeout", type=float, default=120.0, help="seconds before giving up")
    common.add_argument("--debug", action="store_true", help="aiortc debug logging on stderr")
    sv = sub.add_parser("server", parents=[common])
    sv.add_argument("--listen", default="127.0.0.1:5001")
    g = sv.add_mutually_exclusive_group()
    g.add_argument("--echo", action="store_true")
    g.add_argument("--discard", action="store_true")
    sv.add_argument("--verify", action="store_true")
    cl = sub.add_parser("client", parents=[common])
    cl.add_argument("--connect", default="127.0.0.1:5001")
    cl.add_argument("--bytes", default="10MiB")
    cl.add_argument("--msg-size", type=int, default=1200)
    cl.add_argument("--streams", type=int, default=1)
    cl.add_argument("--unordered", action="store_true")
    cl.add_argument("--verify", action="store_true", help="expect an echo and verify it")
    cl.add_argument("--peer-sctp-port", type=int, default=0,
                    help="remote SCTP port (default: --sctp-port)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING, stream=sys.stderr)
    return asyncio.run(run_server(args) if args.cmd == "server" else run_client(args))


if __name__ == "__main__":
    sys.exit(main())
