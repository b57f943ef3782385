#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Hot-add vCPUs out of Linux's order when the guest asks, and check what
the device received for them (hotplug.sh, hotplug-test.sh).

Follows the guest's console log:
  "FREQHINT-HOTPLUG: add N"   device_add the free CPU slot of socket N; QEMU
                              must report it as cpu-index N with apic-id N
  "FREQHINT-HOTPLUG: busy N"  poll the device's x-stats until vCPU index N
                              holds a busy record (flags set, IDLE clear)
                              while the next index holds none, then add the
                              slot of socket N + 1 (the guest waits for it)
  "FREQHINT-HOTPLUG: remove N" (issue 27 bug 6) poll until index N holds a
                              busy record, device_del the CPU of socket N,
                              wait until QEMU dropped it, then poll until
                              the device holds the driver's "no hint"
                              (flags 0, seq > 0) for index N, within 5 s
                              (the guest waits 10 s; re-plugging the slot
                              aborts QEMU's TCG)

  hotplug-qmp.py --qmp SOCKET --log CONSOLE_LOG [--device ID] [--timeout S]
Exit status 0 only if every step happened and checked out.
"""
import argparse
import json
import re
import socket
import sys
import time

R_IDLE = 8


class Qmp:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile("rw")
        json.loads(self.f.readline())  # greeting
        self.cmd("qmp_capabilities")

    def cmd(self, name, args=None):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.f.write(json.dumps(msg) + "\n")
        self.f.flush()
        while True:
            line = self.f.readline()
            if not line:
                raise RuntimeError("QMP closed")
            r = json.loads(line)
            if "error" in r:
                raise RuntimeError("%s: %s" % (name, r["error"]))
            if "return" in r:
                return r["return"]


def wait_line(path, pattern, end):
    """The first console line matching pattern (a regex), or None at end."""
    rx = re.compile(pattern)
    while time.time() < end:
        try:
            with open(path, errors="replace") as log:
                for line in log:
                    m = rx.search(line)
                    if m:
                        return m
        except FileNotFoundError:
            pass
        time.sleep(0.2)
    return None


def add_socket(q, n):
    slots = q.cmd("query-hotpluggable-cpus")
    free = [c for c in slots if "qom-path" not in c and
            c["props"].get("socket-id") == n]
    if not free:
        raise RuntimeError("no free CPU slot with socket-id %d" % n)
    args = dict(free[0]["props"])
    args.update(driver=free[0]["type"], id="hotcpu%d" % n)
    q.cmd("device_add", args)
    print("device_add %s" % json.dumps(args))
    cpus = q.cmd("query-cpus-fast")
    mine = [c for c in cpus if c["qom-path"] == "/machine/peripheral/hotcpu%d" % n]
    if len(mine) != 1:
        raise RuntimeError("hot-added CPU not in query-cpus-fast: %s" % cpus)
    apic = q.cmd("qom-get", {"path": mine[0]["qom-path"], "property": "apic-id"})
    print("QEMU: hot-added CPU cpu-index %d apic-id %d" % (mine[0]["cpu-index"], apic))
    if mine[0]["cpu-index"] != n or apic != n:
        raise RuntimeError("wanted cpu-index and apic-id %d" % n)


def device_vcpus(q, dev):
    return q.cmd("qom-get", {"path": "/machine/peripheral/" + dev,
                             "property": "x-stats"})["vcpus"]


def wait_vcpu(q, dev, n, cond, seconds):
    """Poll x-stats until cond(record of index n) holds."""
    deadline = time.time() + seconds
    while True:
        v = device_vcpus(q, dev)
        if cond(v[n]):
            return True
        if time.time() > deadline:
            print("hotplug-qmp: index %d never held the record wanted: %s" %
                  (n, json.dumps(v)), file=sys.stderr)
            return False
        time.sleep(0.2)


def remove_socket(q, n):
    path = "/machine/peripheral/hotcpu%d" % n
    q.cmd("device_del", {"id": "hotcpu%d" % n})
    print("device_del hotcpu%d" % n)
    deadline = time.time() + 120
    while any(c["qom-path"] == path for c in q.cmd("query-cpus-fast")):
        if time.time() > deadline:
            raise RuntimeError("hotcpu%d not ejected by the guest" % n)
        time.sleep(0.2)
    print("QEMU: hotcpu%d gone" % n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qmp", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--device", default="fh")
    ap.add_argument("--timeout", type=float, default=600)
    a = ap.parse_args()
    end = time.time() + a.timeout

    m = wait_line(a.log, r"^FREQHINT-HOTPLUG: add (\d+)", end)
    if not m:
        print("hotplug-qmp: the guest never asked for a CPU", file=sys.stderr)
        return 1
    q = Qmp(a.qmp)
    add_socket(q, int(m.group(1)))

    m = wait_line(a.log, r"^FREQHINT-HOTPLUG: busy (\d+)", end)
    if not m:
        print("hotplug-qmp: the guest never loaded the CPU", file=sys.stderr)
        return 1
    n = int(m.group(1))
    deadline = time.time() + 60
    while True:
        v = device_vcpus(q, a.device)
        busy = v[n]["flags"] != 0 and not v[n]["flags"] & R_IDLE
        if busy and v[n + 1]["flags"] == 0:
            break
        if time.time() > deadline:
            print("hotplug-qmp: the device never held a busy record for "
                  "index %d alone: %s" % (n, json.dumps(v)), file=sys.stderr)
            return 1
        time.sleep(0.2)
    print("device: index %d busy (flags %#x), index %d no hint" %
          (n, v[n]["flags"], n + 1))
    add_socket(q, n + 1)

    m = wait_line(a.log, r"^FREQHINT-HOTPLUG: remove (\d+)", end)
    if not m:
        print("hotplug-qmp: the guest never asked for a removal", file=sys.stderr)
        return 1
    n = int(m.group(1))
    if not wait_vcpu(q, a.device, n,
                     lambda r: r["flags"] and not r["flags"] & R_IDLE, 60):
        return 1
    remove_socket(q, n)
    # The driver's own record (seq > 0), within 5 s of the eject: the
    # guest unloads the module (a device reset clears every record, seq 0)
    # only 10 s after the CPU went.
    if not wait_vcpu(q, a.device, n,
                     lambda r: r["flags"] == 0 and r["seq"] > 0, 5):
        return 1
    print("device: index %d no hint after the unplug: %s" %
          (n, json.dumps(device_vcpus(q, a.device)[n])))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as e:
        print("hotplug-qmp: %s" % e, file=sys.stderr)
        sys.exit(1)
