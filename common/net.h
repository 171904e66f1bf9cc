/*
 * Addresses: which are loopback. The API trusts Host headers naming a
 * loopback address only while it listens on one (api/guard.c), and the
 * configuration needs a token for any other listen address
 * (common/config.c). Any thread.
 */
#ifndef TR_NET_H
#define TR_NET_H

#include <stdbool.h>

/* True when addr (numeric text, no brackets) is a loopback address:
 * 127.0.0.0/8, ::1, ::ffff:127.x. A name is never loopback here. */
bool tr_addr_loopback(const char *addr);

/* True when the host of "host:port" ("[v6]:port") is a loopback address
 * or the name "localhost"; a name that merely starts like one
 * (127.1.nip.io) is not. */
bool tr_listen_loopback(const char *listen);

#endif
