#include "common/net.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>

bool tr_addr_loopback(const char *addr)
{
  struct addrinfo hints = { .ai_flags = AI_NUMERICHOST };
  struct addrinfo *res = NULL;
  bool yes = false;

  if (getaddrinfo(addr, NULL, &hints, &res) != 0)
    return false;
  if (res->ai_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)res->ai_addr;

    yes = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  } else if (res->ai_family == AF_INET6) {
    const struct in6_addr *a =
        &((const struct sockaddr_in6 *)res->ai_addr)->sin6_addr;

    yes = IN6_IS_ADDR_LOOPBACK(a) ||
          (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
  }
  freeaddrinfo(res);
  return yes;
}

bool tr_listen_loopback(const char *listen)
{
  const char *colon = strrchr(listen, ':');
  size_t n = colon != NULL ? (size_t)(colon - listen) : strlen(listen);
  char host[256];

  if (n >= 2 && listen[0] == '[' && listen[n - 1] == ']') {
    listen++;
    n -= 2;
  }
  if (n >= sizeof(host))
    return false;
  memcpy(host, listen, n);
  host[n] = '\0';
  return strcmp(host, "localhost") == 0 || tr_addr_loopback(host);
}
