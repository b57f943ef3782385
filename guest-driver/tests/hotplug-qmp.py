#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Hot-add a vCPU out of order when the guest asks for it.

Waits for the line "FREQHINT-HOTPLUG: add" in the guest's console log, then
over QMP adds the not-yet-plugged CPU with the HIGHEST index, so the guest
numbers it (next free Linux CPU number) differently from QEMU's index.

  hotplug-qmp.py --qmp SOCKET --log CONSOLE_LOG [--timeout S]
"""
import argparse
import json
import socket
import sys
import time


def qmp(f, cmd, args=None):
    msg = {"execute": cmd}
    if args:
        msg["arguments"] = args
    f.write(json.dumps(msg) + "\n")
    f.flush()
    while True:
        line = f.readline()
        if not line:
            raise RuntimeError("QMP closed")
        r = json.loads(line)
        if "return" in r or "error" in r:
            return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qmp", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--timeout", type=float, default=600)
    a = ap.parse_args()
    end = time.time() + a.timeout

    while True:
        try:
            with open(a.log, errors="replace") as log:
                if "FREQHINT-HOTPLUG: add" in log.read():
                    break
        except FileNotFoundError:
            pass
        if time.time() > end:
            print("hotplug-qmp: the guest never asked", file=sys.stderr)
            return 1
        time.sleep(0.2)

    s = socket.socket(socket.AF_UNIX)
    s.connect(a.qmp)
    f = s.makefile("rw")
    json.loads(f.readline())  # greeting
    qmp(f, "qmp_capabilities")
    cpus = qmp(f, "query-hotpluggable-cpus")["return"]
    free = [c for c in cpus if "qom-path" not in c]
    if not free:
        print("hotplug-qmp: no free CPU slot", file=sys.stderr)
        return 1
    key = lambda c: tuple(c["props"].get(k, 0) for k in
                          ("socket-id", "die-id", "core-id", "thread-id"))
    slot = max(free, key=key)
    args = dict(slot["props"])
    args["driver"] = slot["type"]
    args["id"] = "hotcpu"
    r = qmp(f, "device_add", args)
    print("hotplug-qmp: device_add %s -> %s" % (json.dumps(args), json.dumps(r)))
    return 0 if "return" in r else 1


if __name__ == "__main__":
    sys.exit(main())
