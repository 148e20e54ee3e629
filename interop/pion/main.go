// pion-peer: an SCTP-over-UDP (RFC 6951 framing) interop peer built on
// github.com/pion/sctp. See ../FORMAT.md for the message format and ../README.md
// for usage.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pion/logging"
	"github.com/pion/sctp"
)

// pion always uses SCTP port 5000 on both ends when it initiates.
const pionSCTPPort = 5000

const (
	hdrLen       = 20
	flagLast     = 0x01
	flagUnord    = 0x02
	fmtVersion   = 1
	maxMsgSize   = 65536
	patternMod   = 251
	readBufSize  = 256 * 1024
	highWater    = 1 << 20
	lowWater     = 256 << 10
	ppidBinary   = sctp.PayloadTypeWebRTCBinary
	defaultSPort = 5001
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// base[j] = j mod 251, long enough for any message payload.
var base = func() []byte {
	b := make([]byte, patternMod+maxMsgSize)
	for i := range b {
		b[i] = byte(i % patternMod)
	}
	return b
}()

func patternStart(stream uint16, seq uint64) int {
	return int((13*(seq%patternMod) + 7*uint64(stream)) % patternMod)
}

func buildMsg(buf []byte, stream uint16, seq uint64, flags byte, nstreams uint16) []byte {
	n := len(buf)
	binary.BigEndian.PutUint16(buf[0:], stream)
	buf[2] = flags
	buf[3] = fmtVersion
	binary.BigEndian.PutUint32(buf[4:], uint32(n))
	binary.BigEndian.PutUint64(buf[8:], seq)
	binary.BigEndian.PutUint16(buf[16:], nstreams)
	binary.BigEndian.PutUint16(buf[18:], 0)
	s := patternStart(stream, seq)
	copy(buf[hdrLen:], base[s:s+n-hdrLen])
	return buf
}

// ---------------------------------------------------------------- verifier

type streamState struct {
	next    uint64 // ordered: next expected seq
	seen    []bool // unordered: seqs seen
	count   uint64
	lastSeq int64 // -1 until LAST seen
}

type verifier struct {
	mu       sync.Mutex
	streams  map[uint16]*streamState
	nstreams int
	bytes    uint64
	msgs     uint64
	err      error
	done     chan struct{}
	doneOnce sync.Once
}

func newVerifier() *verifier {
	return &verifier{streams: map[uint16]*streamState{}, nstreams: -1, done: make(chan struct{})}
}

func (v *verifier) fail(err error) error {
	if v.err == nil {
		v.err = err
		v.doneOnce.Do(func() { close(v.done) })
	}
	return err
}

func (v *verifier) check(sid uint16, m []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.err != nil {
		return v.err
	}
	v.bytes += uint64(len(m))
	v.msgs++
	if len(m) < hdrLen {
		return v.fail(fmt.Errorf("stream %d: short message (%d bytes)", sid, len(m)))
	}
	stream := binary.BigEndian.Uint16(m[0:])
	flags := m[2]
	length := binary.BigEndian.Uint32(m[4:])
	seq := binary.BigEndian.Uint64(m[8:])
	nst := int(binary.BigEndian.Uint16(m[16:]))
	if m[3] != fmtVersion || binary.BigEndian.Uint16(m[18:]) != 0 || flags&^(flagLast|flagUnord) != 0 {
		return v.fail(fmt.Errorf("stream %d: bad header % x", sid, m[:hdrLen]))
	}
	if stream != sid {
		return v.fail(fmt.Errorf("message for stream %d arrived on stream %d", stream, sid))
	}
	if int(length) != len(m) {
		return v.fail(fmt.Errorf("stream %d seq %d: length field %d, message %d bytes", sid, seq, length, len(m)))
	}
	if v.nstreams == -1 {
		v.nstreams = nst
	} else if v.nstreams != nst {
		return v.fail(fmt.Errorf("stream %d seq %d: nstreams %d, expected %d", sid, seq, nst, v.nstreams))
	}
	if int(sid) >= nst {
		return v.fail(fmt.Errorf("stream %d >= nstreams %d", sid, nst))
	}
	s := patternStart(stream, seq)
	want := base[s : s+len(m)-hdrLen]
	if string(want) != string(m[hdrLen:]) {
		for i := range want {
			if want[i] != m[hdrLen+i] {
				return v.fail(fmt.Errorf("stream %d seq %d: payload byte %d is %d, want %d", sid, seq, i, m[hdrLen+i], want[i]))
			}
		}
	}
	st := v.streams[sid]
	if st == nil {
		st = &streamState{lastSeq: -1}
		v.streams[sid] = st
	}
	if flags&flagUnord == 0 {
		if seq != st.next {
			return v.fail(fmt.Errorf("stream %d: ordered seq %d, expected %d", sid, seq, st.next))
		}
		st.next++
	} else {
		for uint64(len(st.seen)) <= seq {
			st.seen = append(st.seen, make([]bool, len(st.seen)+1024)...)
		}
		if st.seen[seq] {
			return v.fail(fmt.Errorf("stream %d: duplicate seq %d", sid, seq))
		}
		st.seen[seq] = true
	}
	if st.lastSeq >= 0 && int64(seq) > st.lastSeq {
		return v.fail(fmt.Errorf("stream %d: seq %d after LAST %d", sid, seq, st.lastSeq))
	}
	st.count++
	if flags&flagLast != 0 {
		if st.lastSeq >= 0 {
			return v.fail(fmt.Errorf("stream %d: second LAST", sid))
		}
		st.lastSeq = int64(seq)
	}
	if v.completeLocked() {
		v.doneOnce.Do(func() { close(v.done) })
	}
	return nil
}

func (v *verifier) completeLocked() bool {
	if v.err != nil || v.nstreams < 0 || len(v.streams) != v.nstreams {
		return false
	}
	for _, st := range v.streams {
		if st.lastSeq < 0 || st.count != uint64(st.lastSeq)+1 {
			return false
		}
	}
	return true
}

func (v *verifier) result() (bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.err != nil {
		return false, v.err
	}
	if !v.completeLocked() {
		missing := []string{}
		for i := 0; i < v.nstreams; i++ {
			st := v.streams[uint16(i)]
			switch {
			case st == nil:
				missing = append(missing, fmt.Sprintf("stream %d: nothing", i))
			case st.lastSeq < 0:
				missing = append(missing, fmt.Sprintf("stream %d: no LAST after %d msgs", i, st.count))
			case st.count != uint64(st.lastSeq)+1:
				missing = append(missing, fmt.Sprintf("stream %d: %d of %d msgs", i, st.count, st.lastSeq+1))
			}
		}
		if v.nstreams < 0 {
			missing = append(missing, "no message received")
		}
		return false, fmt.Errorf("incomplete: %s", strings.Join(missing, "; "))
	}
	return true, nil
}

// ---------------------------------------------------------------- net.Conn adapters

// serverConn locks an unconnected UDP socket onto the first peer that sends to it.
type serverConn struct {
	*net.UDPConn
	mu   sync.Mutex
	peer *net.UDPAddr
}

func (c *serverConn) Read(b []byte) (int, error) {
	for {
		n, addr, err := c.UDPConn.ReadFromUDP(b)
		if err != nil {
			return n, err
		}
		c.mu.Lock()
		if c.peer == nil {
			c.peer = addr
		}
		ok := c.peer.IP.Equal(addr.IP) && c.peer.Port == addr.Port
		c.mu.Unlock()
		if ok {
			return n, nil
		}
	}
}

func (c *serverConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	peer := c.peer
	c.mu.Unlock()
	if peer == nil {
		return 0, errors.New("no peer yet")
	}
	return c.UDPConn.WriteToUDP(b, peer)
}

func (c *serverConn) RemoteAddr() net.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.peer == nil {
		return nil
	}
	return c.peer
}

// portConn rewrites the SCTP common header ports (pion hard-codes 5000/5000
// when it initiates) and fixes the CRC32c.
type portConn struct {
	net.Conn
	local, remote uint16 // ports on the wire
	wbuf          []byte
	wmu           sync.Mutex
}

func rewrite(p []byte, src, dst uint16) {
	if len(p) < 12 {
		return
	}
	binary.BigEndian.PutUint16(p[0:], src)
	binary.BigEndian.PutUint16(p[2:], dst)
	if binary.LittleEndian.Uint32(p[8:]) == 0 {
		return // zero checksum (RFC 9653): leave it
	}
	binary.LittleEndian.PutUint32(p[8:], 0)
	binary.LittleEndian.PutUint32(p[8:], crc32.Checksum(p, castagnoli))
}

func (c *portConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err == nil && n >= 12 {
		// Only rewrite packets that pass the CRC; let pion drop the rest.
		got := binary.LittleEndian.Uint32(b[8:])
		binary.LittleEndian.PutUint32(b[8:], 0)
		if crc32.Checksum(b[:n], castagnoli) == got {
			binary.LittleEndian.PutUint32(b[8:], got)
			rewrite(b[:n], pionSCTPPort, pionSCTPPort)
		} else {
			binary.LittleEndian.PutUint32(b[8:], got)
		}
	}
	return n, err
}

func (c *portConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = append(c.wbuf[:0], b...)
	rewrite(c.wbuf, c.local, c.remote)
	return c.Conn.Write(c.wbuf)
}

// refusedConn hides ECONNREFUSED (an ICMP port unreachable reported on a
// connected UDP socket, e.g. when the peer is not listening yet): pion would
// otherwise tear the association down; SCTP's own retransmission handles it.
type refusedConn struct {
	net.Conn
}

func (c refusedConn) Read(b []byte) (int, error) {
	for {
		n, err := c.Conn.Read(b)
		if err != nil && errors.Is(err, syscall.ECONNREFUSED) {
			continue
		}
		return n, err
	}
}

func (c refusedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil && errors.Is(err, syscall.ECONNREFUSED) {
		return len(b), nil
	}
	return n, err
}

// ---------------------------------------------------------------- summary

type summary struct {
	Peer      string  `json:"peer"`
	Role      string  `json:"role"`
	OK        bool    `json:"ok"`
	Mode      string  `json:"mode"`
	BytesSent uint64  `json:"bytes_sent"`
	MsgsSent  uint64  `json:"msgs_sent"`
	BytesRecv uint64  `json:"bytes_recv"`
	MsgsRecv  uint64  `json:"msgs_recv"`
	Streams   int     `json:"streams"`
	Unordered bool    `json:"unordered"`
	ElapsedS  float64 `json:"elapsed_s"`
	Gbps      float64 `json:"gbit_per_s"`
	Error     string  `json:"error"`
}

func finish(s *summary, err error) {
	if err != nil {
		s.OK = false
		s.Error = err.Error()
	}
	out, _ := json.Marshal(s)
	fmt.Println(string(out))
	if !s.OK {
		os.Exit(1)
	}
	os.Exit(0)
}

func parseSize(s string) (uint64, error) {
	units := []struct {
		suf string
		mul uint64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}}
	for _, u := range units {
		if strings.HasSuffix(s, u.suf) {
			f, err := strconv.ParseFloat(strings.TrimSuffix(s, u.suf), 64)
			return uint64(f * float64(u.mul)), err
		}
	}
	return strconv.ParseUint(s, 10, 64)
}

func loggerFactory(debug bool) logging.LoggerFactory {
	lf := logging.NewDefaultLoggerFactory()
	lf.Writer = os.Stderr
	if debug {
		lf.DefaultLogLevel = logging.LogLevelDebug
	} else {
		lf.DefaultLogLevel = logging.LogLevelWarn
	}
	return lf
}

// waitWritable blocks while the stream has more than highWater bytes queued.
type flow struct {
	ch chan struct{}
}

func newFlow(s *sctp.Stream) *flow {
	f := &flow{ch: make(chan struct{}, 1)}
	s.SetBufferedAmountLowThreshold(lowWater)
	s.OnBufferedAmountLow(func() {
		select {
		case f.ch <- struct{}{}:
		default:
		}
	})
	return f
}

func (f *flow) wait(ctx context.Context, s *sctp.Stream) error {
	for s.BufferedAmount() > highWater {
		select {
		case <-f.ch:
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// ---------------------------------------------------------------- server

func runServer(args []string) {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:5001", "UDP address to listen on")
	echo := fs.Bool("echo", false, "echo every message back on its stream")
	discard := fs.Bool("discard", false, "read and drop every message (default)")
	verify := fs.Bool("verify", false, "verify every message against FORMAT.md")
	sctpPort := fs.Int("sctp-port", defaultSPort, "local SCTP port (informational: pion answers on the port the INIT was sent to)")
	timeoutS := fs.Float64("timeout", 120, "seconds before giving up")
	debug := fs.Bool("debug", false, "pion debug logging on stderr")
	mtu := fs.Uint("mtu", 1228, "SCTP packet size limit (pion default 1228)")
	_ = fs.Parse(args)
	timeout := time.Duration(*timeoutS * float64(time.Second))
	_ = discard
	_ = sctpPort
	mode := "discard"
	if *echo {
		mode = "echo"
	}
	if *verify {
		mode = map[string]string{"discard": "verify", "echo": "echo+verify"}[mode]
	}
	sum := &summary{Peer: "pion", Role: "server", Mode: mode}

	laddr, err := net.ResolveUDPAddr("udp", *listen)
	if err != nil {
		finish(sum, err)
	}
	uc, err := net.ListenUDP("udp", laddr)
	if err != nil {
		finish(sum, err)
	}
	_ = uc.SetReadBuffer(8 << 20)
	_ = uc.SetWriteBuffer(8 << 20)
	fmt.Fprintf(os.Stderr, "pion-peer server listening on %s\n", uc.LocalAddr())
	conn := &serverConn{UDPConn: uc}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		<-ctx.Done()
		uc.Close()
	}()

	assoc, err := sctp.ServerWithOptions(
		sctp.WithNetConn(conn),
		sctp.WithLoggerFactory(loggerFactory(*debug)),
		sctp.WithName("pion-server"),
		sctp.WithMaxReceiveBufferSize(4<<20),
		sctp.WithMTU(uint32(*mtu)),
	)
	if err != nil {
		finish(sum, fmt.Errorf("association: %w", err))
	}
	start := time.Now()
	v := newVerifier()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	nAccepted := 0
	for {
		st, err := assoc.AcceptStream()
		if err != nil {
			break
		}
		nAccepted++
		wg.Add(1)
		go func(st *sctp.Stream) {
			defer wg.Done()
			buf := make([]byte, readBufSize)
			var fl *flow
			if *echo {
				fl = newFlow(st)
			}
			for {
				n, err := st.Read(buf)
				if err != nil {
					return
				}
				mu.Lock()
				sum.MsgsRecv++
				sum.BytesRecv += uint64(n)
				mu.Unlock()
				if *verify {
					if err := v.check(st.StreamIdentifier(), buf[:n]); err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
					}
				}
				if *echo {
					if err := fl.wait(ctx, st); err != nil {
						return
					}
					if _, err := st.WriteSCTP(buf[:n], ppidBinary); err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("echo write: %w", err)
						}
						mu.Unlock()
						return
					}
					mu.Lock()
					sum.MsgsSent++
					sum.BytesSent += uint64(n)
					mu.Unlock()
				}
			}
		}(st)
	}
	wg.Wait()
	sum.ElapsedS = time.Since(start).Seconds()
	if sum.ElapsedS > 0 {
		sum.Gbps = float64(sum.BytesRecv) * 8 / sum.ElapsedS / 1e9
	}
	if ctx.Err() != nil {
		finish(sum, fmt.Errorf("timeout after %s", timeout))
	}
	if firstErr != nil {
		finish(sum, firstErr)
	}
	sum.Streams = nAccepted
	if *verify {
		if _, err := v.result(); err != nil {
			finish(sum, err)
		}
		sum.Streams = v.nstreams
	}
	sum.OK = true
	finish(sum, nil)
}

// ---------------------------------------------------------------- client

func runClient(args []string) {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	connect := fs.String("connect", "127.0.0.1:5001", "UDP address of the peer")
	bytesS := fs.String("bytes", "10MiB", "total bytes to send (suffixes KiB MiB GiB)")
	msgSize := fs.Int("msg-size", 1200, "message size in bytes (20..65536)")
	nstreams := fs.Int("streams", 1, "number of streams (ids 0..K-1)")
	unordered := fs.Bool("unordered", false, "send unordered")
	verify := fs.Bool("verify", false, "expect the server to echo, and verify the echo")
	sctpPort := fs.Int("sctp-port", defaultSPort, "local SCTP port on the wire")
	peerPort := fs.Int("peer-sctp-port", 0, "remote SCTP port on the wire (default: --sctp-port)")
	timeoutS := fs.Float64("timeout", 120, "seconds before giving up")
	debug := fs.Bool("debug", false, "pion debug logging on stderr")
	mtu := fs.Uint("mtu", 1228, "SCTP packet size limit (pion default 1228)")
	_ = fs.Parse(args)
	timeout := time.Duration(*timeoutS * float64(time.Second))
	if *peerPort == 0 {
		*peerPort = *sctpPort
	}
	mode := "send"
	if *verify {
		mode = "echo+verify"
	}
	sum := &summary{Peer: "pion", Role: "client", Mode: mode, Streams: *nstreams, Unordered: *unordered}
	total, err := parseSize(*bytesS)
	if err != nil {
		finish(sum, fmt.Errorf("--bytes: %w", err))
	}
	if *msgSize < hdrLen || *msgSize > maxMsgSize {
		finish(sum, fmt.Errorf("--msg-size must be in %d..%d", hdrLen, maxMsgSize))
	}
	if *nstreams < 1 || *nstreams > 65535 {
		finish(sum, errors.New("--streams must be in 1..65535"))
	}
	count := (total + uint64(*msgSize) - 1) / uint64(*msgSize)
	if count < uint64(*nstreams) {
		finish(sum, fmt.Errorf("%d messages for %d streams: every stream needs one", count, *nstreams))
	}

	raddr, err := net.ResolveUDPAddr("udp", *connect)
	if err != nil {
		finish(sum, err)
	}
	uc, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		finish(sum, err)
	}
	_ = uc.SetReadBuffer(8 << 20)
	_ = uc.SetWriteBuffer(8 << 20)
	var conn net.Conn = refusedConn{uc}
	if *sctpPort != pionSCTPPort || *peerPort != pionSCTPPort {
		conn = &portConn{Conn: conn, local: uint16(*sctpPort), remote: uint16(*peerPort)}
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	assoc, err := sctp.ClientContext(ctx,
		sctp.WithNetConn(conn),
		sctp.WithLoggerFactory(loggerFactory(*debug)),
		sctp.WithName("pion-client"),
		sctp.WithMaxReceiveBufferSize(4<<20),
		sctp.WithMTU(uint32(*mtu)),
	)
	if err != nil {
		finish(sum, fmt.Errorf("association: %w", err))
	}
	go func() {
		<-ctx.Done()
		assoc.Abort("timeout")
		uc.Close()
	}()

	streams := make([]*sctp.Stream, *nstreams)
	flows := make([]*flow, *nstreams)
	for i := range streams {
		st, err := assoc.OpenStream(uint16(i), ppidBinary)
		if err != nil {
			finish(sum, fmt.Errorf("open stream %d: %w", i, err))
		}
		st.SetReliabilityParams(*unordered, sctp.ReliabilityTypeReliable, 0)
		streams[i] = st
		flows[i] = newFlow(st)
	}

	v := newVerifier()
	var recvMu sync.Mutex
	if *verify {
		for _, st := range streams {
			go func(st *sctp.Stream) {
				buf := make([]byte, readBufSize)
				for {
					n, err := st.Read(buf)
					if err != nil {
						return
					}
					recvMu.Lock()
					sum.MsgsRecv++
					sum.BytesRecv += uint64(n)
					recvMu.Unlock()
					if v.check(st.StreamIdentifier(), buf[:n]) != nil {
						return
					}
				}
			}(st)
		}
	}

	start := time.Now()
	msg := make([]byte, *msgSize)
	var flags byte
	if *unordered {
		flags = flagUnord
	}
	for j := uint64(0); j < count; j++ {
		sid := uint16(j % uint64(*nstreams))
		seq := j / uint64(*nstreams)
		size := uint64(*msgSize)
		if j == count-1 {
			size = total - (count-1)*uint64(*msgSize)
			if size < hdrLen {
				size = hdrLen
			}
		}
		f := flags
		if j+uint64(*nstreams) >= count {
			f |= flagLast
		}
		m := buildMsg(msg[:size], sid, seq, f, uint16(*nstreams))
		if err := flows[sid].wait(ctx, streams[sid]); err != nil {
			finish(sum, fmt.Errorf("send: %w", err))
		}
		if _, err := streams[sid].WriteSCTP(m, ppidBinary); err != nil {
			finish(sum, fmt.Errorf("write stream %d seq %d: %w", sid, seq, err))
		}
		sum.MsgsSent++
		sum.BytesSent += size
	}
	// Wait until everything is acknowledged.
	for assoc.BufferedAmount() > 0 {
		if ctx.Err() != nil {
			finish(sum, fmt.Errorf("timeout waiting for acks, %d bytes outstanding", assoc.BufferedAmount()))
		}
		time.Sleep(time.Millisecond)
	}
	sum.ElapsedS = time.Since(start).Seconds()
	if *verify {
		select {
		case <-v.done:
		case <-ctx.Done():
		}
		sum.ElapsedS = time.Since(start).Seconds()
		if _, err := v.result(); err != nil {
			finish(sum, fmt.Errorf("echo verify: %w", err))
		}
	}
	if sum.ElapsedS > 0 {
		sum.Gbps = float64(sum.BytesSent) * 8 / sum.ElapsedS / 1e9
	}
	if err := assoc.Shutdown(ctx); err != nil {
		finish(sum, fmt.Errorf("shutdown: %w", err))
	}
	sum.OK = true
	finish(sum, nil)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pion-peer server|client [flags]  (-h for flags)")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "server":
		runServer(os.Args[2:])
	case "client":
		runClient(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "usage: pion-peer server|client [flags]")
		os.Exit(2)
	}
}
