/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libvirt's event loop hooks (virEventRegisterImpl) implemented on the
 * GLib main context, so that libvirt's sockets, keepalives and domain
 * events are dispatched by the agent's one main loop -- no second loop,
 * no thread.
 */
#pragma once

/*
 * Register the GLib implementation with libvirt.  Idempotent; must run
 * before the first virConnectOpen*() of the process (libvirt allows one
 * implementation per process, for its whole life).
 */
void fh_libvirt_event_register (void);
