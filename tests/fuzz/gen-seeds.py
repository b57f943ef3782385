#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Write the seed corpora of the fuzz targets: corpus/<target>/<name>.

A handful of small, valid (and a few nearly valid) inputs per target, so
libFuzzer starts from the shapes the parsers accept.  Layouts follow
spec/include/freqhint/agent_protocol.h and linux/virtio_freqhint.h; all
integers little-endian.  Run it again after changing those headers:

    tests/fuzz/gen-seeds.py [OUTDIR]     (default: corpus/ next to this file)
"""
import os
import struct
import sys

HELLO, WELCOME, HINTS, GRANTS, PING, PONG, CLOSE, HOST_FREQ, VCPUS, CUR_FREQ = range(1, 11)
VERSION = 2         # FH_PROTO_VERSION
MAX_VCPUS = 1024    # FH_MAX_VCPUS
MIN_V, MAX_V, PERF_V, IDLE = 1, 2, 4, 8


def frame(msg_type, payload, length=None):
    return struct.pack('<IHH', len(payload) if length is None else length, msg_type, 0) + payload


def hello(n, name=b'vm-seed', features=3, tids=None):
    tids = tids if tids is not None else [1000 + i for i in range(n)]
    body = struct.pack('<HHIII', VERSION, n, features, 4242, 0) + bytes(range(16))
    body += name.ljust(64, b'\0')
    body += b''.join(struct.pack('<I', t) for t in tids)
    return frame(HELLO, body)


def record(vcpu, flags, lo=0, hi=0, perf=0, seq=1):
    return struct.pack('<HHHHHHI', vcpu, flags, lo, hi, perf, 0, seq)


def hints(records, full=False):
    body = struct.pack('<QHHI', 123456789, len(records), 1 if full else 0, 0)
    return frame(HINTS, body + b''.join(records))


def conn(num_vcpus, all_features):
    """The two bytes fuzz-protocol.c reads first: the connection's vCPU
    count (low 15 bits % MAX_VCPUS + 1) and its features (top bit: all)."""
    return struct.pack('<H', (num_vcpus - 1) | (0x8000 if all_features else 0))


def protocol_seeds():
    two = conn(2, True)
    yield 'session', two + hello(2) + hints(
        [record(0, MIN_V | MAX_V, 300, 600), record(1, 0)], full=True) + frame(
        PONG, struct.pack('<Q', 7))
    yield 'all-flags', two + hello(2) + hints([
        record(0, MIN_V | MAX_V | PERF_V, 0, 1024, 512, 2),
        record(1, MIN_V | MAX_V | IDLE, 100, 200, 0, 3),
        record(1, PERF_V, 0, 0, 1024, 4)])
    yield 'agent-frames', two + frame(WELCOME, struct.pack('<HHIII', VERSION, 0, 3, 10000, 0)) + frame(
        GRANTS, struct.pack('<HHHH', 0, 1024, 2, 0) + struct.pack('<HHHH', 0, 512, 100, 1024)) + frame(
        PING, struct.pack('<Q', 1)) + frame(CLOSE, struct.pack('<HHI', 2, 0, 0) + b'bad'.ljust(128, b'\0'))
    # PA-18: two classes (a table, a continuous range), vCPU 1 unknown
    table = [800000, 1600000, 3200000]
    cls0 = struct.pack('<IIHH', 800000, 3200000, 128, len(table)) + b''.join(
        struct.pack('<I', f) for f in table + [0] * (16 - len(table)))
    cls1 = struct.pack('<IIHH', 400000, 2000000, 51, 0) + bytes(64)
    yield 'host-freq', conn(2, False) + frame(HOST_FREQ, struct.pack('<HHI', 2, 2, 0) + cls0 + cls1 + bytes([1, 0xff]))
    # PD-20: HOST_FREQ, then each vCPU's current frequency in its class (or 0)
    yield 'cur-freq', conn(2, False) + frame(HOST_FREQ, struct.pack('<HHI', 2, 2, 0) + cls0 + cls1 + bytes([1, 0xff])) + frame(
        CUR_FREQ, struct.pack('<HHIII', 2, 0, 0, 1200000, 0))
    # PA-19: the vCPU table after an unplug
    yield 'vcpus', conn(2, False) + hello(2, features=15) + frame(VCPUS, struct.pack('<HHIII', 2, 0, 0, 1000, 0))
    yield 'one-vcpu-no-features', conn(1, False) + hello(1, b'', 0, [0]) + hints([record(0, MIN_V, 1024)])
    yield 'too-big', two + frame(HINTS, b'', length=0x7fffffff)
    yield 'truncated', two + hello(2)[:50]
    yield 'bad-reserved', two + struct.pack('<IHH', 8, PING, 1) + struct.pack('<Q', 0)
    # Issue 42 item 5: a VM of MAX_VCPUS: HELLO, a FULL HINTS (the largest
    # frame there is), GRANTS and VCPUS with an entry per vCPU
    big = conn(MAX_VCPUS, True)
    yield 'max-vcpus', big + hello(MAX_VCPUS, features=15) + hints(
        [record(i, MIN_V | MAX_V, i % 512, 512 + i % 512, 0, i + 1) for i in range(MAX_VCPUS)],
        full=True) + frame(GRANTS, struct.pack('<HHHH', 0, 1024, MAX_VCPUS, 0) + b''.join(
            struct.pack('<HH', 0, 1024) for _ in range(MAX_VCPUS))) + frame(
        VCPUS, struct.pack('<HHI', MAX_VCPUS, 0, 0) + b''.join(
            struct.pack('<I', 1000 + i) for i in range(MAX_VCPUS)))
    # one vCPU over: a HELLO the range refuses, a HINTS the header refuses
    yield 'over-max-vcpus', big + hello(MAX_VCPUS + 1) + frame(
        HINTS, b'', length=16 + 16 * (MAX_VCPUS + 1))


def parse_seeds():
    yield 'uclamp-max', b'max\n'
    yield 'uclamp-percent', b'33.33\n'
    yield 'uclamp-small', b'0.05'
    yield 'cpu-list', b'0-3,8,10-11\n'
    yield 'freq-list', b'3200000 2800000 2400000 800000 \n'
    yield 'status', (b'Name:\tCPU 0/KVM\nTgid:\t77\nPid:\t78\n'
                     b'Cpus_allowed_list:\t2\nvoluntary_ctxt_switches:\t10\n')
    yield 'cgroup-v2', b'0::/machine.slice/machine-qemu\\x2d1.scope/libvirt/vcpu0\n'
    yield 'cgroup-v1', b'12:memory:/x\n4:cpu,cpuacct:/machine/vm1\n0::/\n'
    yield 'stat', b'4242 (CPU 0/K)M) S 1 77 77 0 -1 4194560' + b' 0' * 29 + b' 5' + b' 0' * 13 + b'\n'
    yield 'u64', b'18446744073709551615\n'
    yield 'vcpu-thread', b'CPU 1023/KVM'


def merge_seeds():
    def u16(*v):
        return struct.pack('<%dH' % len(v), *v)

    def vcpu(flags, lo, hi, perf, levels, cpu):
        out = bytes([flags]) + u16(lo, hi, perf) + bytes([len(levels)])
        for mn, mx in levels:
            out += u16(mn, mx)
        return out + bytes([cpu])

    # sys max, sys min, op max, op min, perf_as_floor, headroom, n, vCPUs,
    # policy members, frequency table
    head = u16(1024, 1024, 1024, 0) + bytes([1, 70])
    table = bytes([1, 1, 0, 0, 3]) + u16(8000, 24000, 0, 8000, 16000)
    yield 'two-vcpus-one-cpu', head + bytes([1]) + vcpu(3, 300, 600, 0, [], 0) + vcpu(
        3, 500, 550, 0, [(0, 1024)], 0) + table
    yield 'chain-and-operator', u16(1024, 1024, 900, 200) + bytes([1, 70, 2]) + vcpu(
        7, 100, 700, 800, [(205, 1024), (614, 819)], 1) + vcpu(11, 900, 1024, 0, [], 1) + vcpu(
        0, 0, 0, 0, [(1024, 1024)], 2) + table
    yield 'sys-limits', u16(600, 300, 1024, 0) + bytes([0, 0, 0]) + vcpu(
        1, 1024, 0, 0, [(1024, 512), (800, 400), (0, 1024)], 3) + table


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), 'corpus')
    for target, seeds in (('protocol', protocol_seeds), ('parse', parse_seeds),
                          ('merge', merge_seeds)):
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds():
            with open(os.path.join(d, name), 'wb') as f:
                f.write(data)


if __name__ == '__main__':
    main()
