/*
 * Readiness notification to systemd (Type=notify) without libsystemd:
 * one datagram to $NOTIFY_SOCKET. Does nothing when the variable is unset.
 */
#ifndef DAEMON_NOTIFY_H
#define DAEMON_NOTIFY_H

/* Sends state ("READY=1", "STOPPING=1"). Errors are ignored: systemd
 * notices a missing READY by its own timeout. */
void tr_notify(const char *state);

#endif
