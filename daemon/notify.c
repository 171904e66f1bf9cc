#include "daemon/notify.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

void tr_notify(const char *state)
{
  const char *path = getenv("NOTIFY_SOCKET");
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  size_t n;
  socklen_t len;
  int fd;

  if (path == NULL || path[0] == '\0' || strlen(path) >= sizeof(sa.sun_path))
    return;
  n = strlen(path);
  memcpy(sa.sun_path, path, n);
  /* "@name" is an abstract socket: a leading NUL, no terminator. */
  if (sa.sun_path[0] == '@')
    sa.sun_path[0] = '\0';
  len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
  fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return;
  (void)sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
               len);
  close(fd);
}
