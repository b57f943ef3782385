#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""A stand-in for freqhintd that checks what a guest's virtio_freqhint sends.

Listens on a UNIX socket for the device (QEMU connects as the client), does
the HELLO/WELCOME handshake of agent protocol version 2
(spec/include/freqhint/agent_protocol.h: a HELLO of another version fails
the run), sends one GRANTS frame (struct fh_grant per vCPU), a PING every
KEEPALIVE_S (as freqhintd does: the device closes a link silent for three
keepalive intervals, and on a loaded host a run can outlast 30 s), answers
PINGs, and records every HINTS frame.  Every record is validated with the
device's record rules (spec/include/linux/virtio_freqhint.h); any invalid
record fails the run.  When QEMU goes away (or --timeout passes) the
expectations are matched, in order, against the stream of records:

  V:min=N    a record for vCPU V with MIN_VALID and clamp_min N
  V:max=N    ... MAX_VALID and clamp_max N
  V:perf     ... PERF_VALID
  V:perf<=N  ... PERF_VALID and perf <= N
  V:noclamp  ... not IDLE, PERF_VALID, MIN_VALID and MAX_VALID clear
  V:idle     ... IDLE
  V:nohint   ... flags 0 ("no hint", e.g. the vCPU went offline)
  V:busy     ... flags non-zero and not IDLE
  reset      a frame carrying every vCPU (FULL, or one record per vCPU), all
             with flags 0 (device reset: the v1 device forwards the cleared
             records, not necessarily as a FULL frame)

--host-freq ON:V:MIN:MAX:STEP:F1,F2,...  sends a HOST_FREQ frame (if the
device offered FH_F_HOST_FREQ) when the expectation ON, one of those given,
is matched in order: one class, MIN..MAX kHz with that table and perf step,
for vCPU V only (the others: no class).  In order, so that a step of the
guest's story triggers it: "3:nohint" alone would match the first frames
already, where every vCPU has "no hint".  May be given more than once (each
frame replaces the classes of the one before: the host moved the vCPU);
ON "reset" sends it while the device is reset, e.g. while the guest is
frozen for suspend.  A device that connects again gets the last one sent
again after GRANTS, as freqhintd sends its state on every connection.

--cur-freq-every SECONDS  once a HOST_FREQ frame was sent, sends a CUR_FREQ
frame (if the device offered FH_F_CUR_FREQ, which the agent accepts only
with this option) every SECONDS: the class's vCPU alternately at the
table's first and second frequency, the others unknown (0), as a host
whose frequency changes all the time.

Exit status 0 only if the handshake happened, no record was invalid and all
expectations matched in order.  A summary goes to stdout.
"""
import argparse
import os
import select
import socket
import struct
import sys
import time

HDR = struct.Struct('<IHH')
PING = struct.Struct('<Q')
KEEPALIVE_S = 3.0
HELLO = struct.Struct('<HHIII16s64s')
WELCOME = struct.Struct('<HHIII')
HINTS = struct.Struct('<QHHI')
RECORD = struct.Struct('<HHHHHHI')
GRANTS = struct.Struct('<HHHH')
GRANT = struct.Struct('<HH')      # struct fh_grant {floor, ceiling}

PROTO_VERSION = 2

MSG_HELLO, MSG_WELCOME, MSG_HINTS, MSG_GRANTS = 1, 2, 3, 4
MSG_PING, MSG_PONG, MSG_CLOSE = 5, 6, 7
MSG_HOST_FREQ = 8
MSG_CUR_FREQ = 10
F_HOST_FREQ = 0x4
F_CUR_FREQ = 0x20
F_ALL = 0x7
HOST_FREQ = struct.Struct('<HHI')
CUR_FREQ = struct.Struct('<HHI')
FREQ_CLASS = struct.Struct('<IIHH16I')
NO_FREQ_CLASS = 0xff
HINTS_F_FULL = 1
R_MIN, R_MAX, R_PERF, R_IDLE, R_ALL = 1, 2, 4, 8, 0xf
SCALE = 1024


def frame(msg_type, payload):
    return HDR.pack(len(payload), msg_type, 0) + payload


def record_errors(rec, num_vcpus, perf_ok):
    vcpu, flags, lo, hi, perf, reserved, _seq = rec
    errs = []
    if vcpu >= num_vcpus:
        errs.append('vcpu out of range')
    if flags & ~R_ALL:
        errs.append('unknown flags')
    if reserved:
        errs.append('reserved non-zero')
    for bit, name, val in ((R_MIN, 'min', lo), (R_MAX, 'max', hi),
                           (R_PERF, 'perf', perf)):
        if flags & bit and val > SCALE:
            errs.append(name + ' above scale')
        if not flags & bit and val:
            errs.append(name + ' set without VALID')
    if flags & R_MIN and flags & R_MAX and lo > hi:
        errs.append('min > max')
    if flags & R_PERF and not perf_ok:
        errs.append('perf without F_PERF')
    return errs


def matches(exp, frame_flags, recs, num_vcpus):
    if exp == 'reset':
        whole = (frame_flags & HINTS_F_FULL or
                 len(set(r[0] for r in recs)) == num_vcpus)
        return bool(whole) and all(r[1] == 0 for r in recs)
    vcpu, what = exp.split(':', 1)
    for r in recs:
        if r[0] != int(vcpu):
            continue
        flags, lo, hi, perf = r[1], r[2], r[3], r[4]
        if what.startswith('min=') and flags & R_MIN and lo == int(what[4:]):
            return True
        if what.startswith('max=') and flags & R_MAX and hi == int(what[4:]):
            return True
        if what == 'perf' and flags & R_PERF:
            return True
        if (what.startswith('perf<=') and flags & R_PERF and
                perf <= int(what[6:])):
            return True
        if (what == 'noclamp' and flags & R_PERF and
                not flags & (R_MIN | R_MAX | R_IDLE)):
            return True
        if what == 'idle' and flags & R_IDLE:
            return True
        if what == 'nohint' and flags == 0:
            return True
        if what == 'busy' and flags and not flags & R_IDLE:
            return True
    return False


class Conn:
    def __init__(self, sock, args, state):
        self.sock, self.args, self.state = sock, args, state
        self.buf = b''
        self.num_vcpus = None
        self.features = 0
        self.last_ping = time.monotonic()
        self.last_cur_freq = 0.0
        self.cur_freq_sent = 0

    def keepalive(self, now):
        if self.num_vcpus is not None and now - self.last_ping >= KEEPALIVE_S:
            self.last_ping = now
            self.send(MSG_PING, PING.pack(int(now * 1000)))
        hf = self.state['host_freq_last']
        every = self.args.cur_freq_every
        if (every and hf and self.features & F_CUR_FREQ and
                now - self.last_cur_freq >= every):
            self.last_cur_freq = now
            khz = hf['freqs'][self.cur_freq_sent % 2]
            self.cur_freq_sent += 1
            self.state['cur_freq_frames'] += 1
            self.send(MSG_CUR_FREQ, CUR_FREQ.pack(self.num_vcpus, 0, 0) +
                      b''.join(struct.pack('<I', khz if i == hf['vcpu'] else 0)
                               for i in range(self.num_vcpus)))

    def send(self, msg_type, payload):
        self.sock.sendall(frame(msg_type, payload))

    def send_host_freq(self, hf):
        if not self.features & F_HOST_FREQ:
            self.state['errors'].append('the device did not offer HOST_FREQ')
            return
        freqs = hf['freqs'] + [0] * (16 - len(hf['freqs']))
        cls = FREQ_CLASS.pack(hf['min'], hf['max'], hf['step'],
                              len(hf['freqs']), *freqs)
        which = bytes(0 if i == hf['vcpu'] else NO_FREQ_CLASS
                      for i in range(self.num_vcpus))
        self.send(MSG_HOST_FREQ,
                  HOST_FREQ.pack(1, self.num_vcpus, 0) + cls + which)
        print('HOST_FREQ sent: vCPU %d %d..%d kHz %s' %
              (hf['vcpu'], hf['min'], hf['max'], hf['freqs']))

    def handle(self, msg_type, payload):
        st = self.state
        if self.num_vcpus is None:
            if msg_type != MSG_HELLO or len(payload) < HELLO.size:
                st['errors'].append('first frame is not a HELLO')
                return False
            version, n, features, pid, _r, _uuid, name = HELLO.unpack_from(payload)
            if len(payload) != HELLO.size + 4 * n:
                st['errors'].append('HELLO length %d for %d vCPUs' % (len(payload), n))
                return False
            print('HELLO version %d vcpus %d features %#x pid %d name %s' %
                  (version, n, features, pid, name.split(b'\0')[0].decode()))
            if version != PROTO_VERSION:
                st['errors'].append('HELLO version %d, not %d' %
                                    (version, PROTO_VERSION))
                return False
            accept = F_ALL | (F_CUR_FREQ if self.args.cur_freq_every else 0)
            self.num_vcpus, self.features = n, features & accept
            st['hellos'] += 1
            self.send(MSG_WELCOME, WELCOME.pack(PROTO_VERSION, 0,
                                                self.features, 10000, 0))
            grants = b''.join(
                GRANT.pack(0, self.args.grant_ceiling.get(i, SCALE))
                for i in range(n))
            self.send(MSG_GRANTS, GRANTS.pack(0, self.args.ceiling, n, 0) + grants)
            if st['host_freq_last']:
                self.send_host_freq(st['host_freq_last'])
            return True
        if msg_type == MSG_HINTS:
            _ts, nrec, fflags, _r = HINTS.unpack_from(payload)
            if len(payload) != HINTS.size + RECORD.size * nrec:
                st['errors'].append('HINTS length mismatch')
                return False
            recs = [RECORD.unpack_from(payload, HINTS.size + i * RECORD.size)
                    for i in range(nrec)]
            for r in recs:
                errs = record_errors(r, self.num_vcpus, self.features & 1)
                if errs:
                    st['errors'].append('record %r: %s' % (r, ', '.join(errs)))
            st['frames'] += 1
            st['records'] += nrec
            n = self.num_vcpus
            exp = st['expect']
            while (st['matched'] < len(exp) and
                   matches(exp[st['matched']], fflags, recs, n)):
                print('matched %s' % exp[st['matched']])
                for hf in self.args.host_freq:
                    if exp[st['matched']] == hf['on'] and not hf['sent']:
                        self.send_host_freq(hf)
                        hf['sent'] = True
                        st['host_freq_last'] = hf
                st['matched'] += 1
            return True
        if msg_type == MSG_PING:
            self.send(MSG_PONG, payload)
            return True
        if msg_type == MSG_PONG:
            return True
        if msg_type == MSG_CLOSE:
            return False
        st['errors'].append('unexpected message type %d' % msg_type)
        return False

    def readable(self):
        data = self.sock.recv(65536)
        if not data:
            return False
        self.buf += data
        while len(self.buf) >= HDR.size:
            length, msg_type, _r = HDR.unpack_from(self.buf)
            if len(self.buf) < HDR.size + length:
                break
            payload = self.buf[HDR.size:HDR.size + length]
            self.buf = self.buf[HDR.size + length:]
            if not self.handle(msg_type, payload):
                return False
        return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--socket', required=True)
    ap.add_argument('--ceiling', type=int, default=SCALE,
                    help='operator ceiling sent in GRANTS')
    ap.add_argument('--grant-ceiling', action='append', default=[],
                    metavar='V:N', help='granted ceiling of vCPU V')
    ap.add_argument('--timeout', type=float, default=600)
    ap.add_argument('--host-freq', metavar='ON:V:MIN:MAX:STEP:F1,F2,...',
                    action='append', default=[],
                    help='send a HOST_FREQ class for vCPU V when the '
                    'expectation ON is matched in order (repeatable)')
    ap.add_argument('--cur-freq-every', type=float, metavar='SECONDS',
                    help='after a HOST_FREQ, a CUR_FREQ every SECONDS')
    ap.add_argument('--ready', help='file created once listening')
    ap.add_argument('expect', nargs='*')
    args = ap.parse_args()
    args.grant_ceiling = {int(v): int(n) for v, n in
                          (g.split(':') for g in args.grant_ceiling)}

    specs, args.host_freq = args.host_freq, []
    for spec in specs:
        # ON is an expectation: "reset", or V:what (two fields).
        f = spec.split(':')
        if f[0] == 'reset':
            f = ['reset', None] + f[1:]
        hf = {'on': f[0] if f[1] is None else f[0] + ':' + f[1],
              'vcpu': int(f[2]), 'min': int(f[3]), 'max': int(f[4]),
              'step': int(f[5]),
              'freqs': [int(x) for x in f[6].split(',') if x],
              'sent': False}
        if hf['on'] not in args.expect:
            ap.error('--host-freq: %s is not one of the expectations' %
                     hf['on'])
        if args.cur_freq_every and len(hf['freqs']) < 2:
            ap.error('--cur-freq-every needs two frequencies in each class')
        args.host_freq.append(hf)
    state = {'errors': [], 'hellos': 0, 'frames': 0, 'records': 0,
             'expect': args.expect, 'matched': 0, 'host_freq_last': None,
             'cur_freq_frames': 0}
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(args.socket)
    lsock.listen(4)
    if args.ready:
        open(args.ready, 'w').close()
    deadline = time.monotonic() + args.timeout
    conns = {}
    seen_conn = False
    while time.monotonic() < deadline:
        # Done when a connection came and went and nothing is connected.
        if seen_conn and not conns:
            break
        fds = [lsock] + list(conns)
        r, _w, _x = select.select(fds, [], [],
                                  min(1.0, args.cur_freq_every or 1.0))
        for s in r:
            if s is lsock:
                c, _a = lsock.accept()
                conns[c] = Conn(c, args, state)
                seen_conn = True
                continue
            try:
                alive = conns[s].readable()
            except OSError:
                alive = False
            if not alive:
                s.close()
                del conns[s]
        for s in list(conns):
            try:
                conns[s].keepalive(time.monotonic())
            except OSError:
                s.close()
                del conns[s]
        # QEMU reconnects after a reset only if it was closed; keep waiting
        # a little for a new connection before calling it done.
        if seen_conn and not conns:
            r, _w, _x = select.select([lsock], [], [], 3.0)
            if r:
                c, _a = lsock.accept()
                conns[c] = Conn(c, args, state)
    os.unlink(args.socket)

    print('%d connection(s), %d HINTS frames, %d records, %d CUR_FREQ sent' %
          (state['hellos'], state['frames'], state['records'],
           state['cur_freq_frames']))
    ok = True
    if not state['hellos']:
        print('FAIL: no device connected')
        ok = False
    for e in state['errors']:
        print('FAIL: ' + e)
        ok = False
    if state['matched'] < len(args.expect):
        print('FAIL: expectation not met: %s (matched %s)' %
              (args.expect[state['matched']], args.expect[:state['matched']]))
        ok = False
    print('fake-agent: ' + ('PASS' if ok else 'FAIL'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
